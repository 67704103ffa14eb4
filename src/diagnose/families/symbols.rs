//! Undefined symbols placed by what the symbol belongs to, whatever binary asked for it: a C++
//! symbol of torch (`_ZN3c10…`) means a compiled extension was built against another torch; a
//! CUDA driver API function (`cuMemcpyHtoD_v2`) means the loaded libcuda lacks it; the runtime's
//! registration hooks (`__cudaRegisterFatBinaryEnd`) mean an nvcc newer than the runtime.
//! Symbols of the CUDA libraries themselves (`cudnnCreate`, `cublasLt…`) are judged with the
//! file that failed, in [`super::loader`].

use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Driver, Library, Toolkit};
use crate::diagnose::matcher::Segment;

/// What kind of symbol an `undefined symbol: S` names, when that alone places the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SymbolKind {
    /// A C++ symbol of torch (`_ZN3c10…`, `_ZN2at…`): the binary was built against another
    /// torch.
    Torch,
    /// A CUDA driver API function (`cuMemcpyHtoD_v2`): the loaded libcuda lacks it.
    DriverApi,
    /// The CUDA runtime's registration hooks (`__cudaRegisterFatBinaryEnd`): the binary was
    /// compiled by a newer nvcc than the runtime it runs with.
    RuntimeHook,
}

fn symbol_kind(symbol: &str) -> Option<SymbolKind> {
    const TORCH: &[&str] = &[
        "_zn3c10",
        "_znk3c10",
        "_zn2at",
        "_znk2at",
        "_zn5torch",
        "_znk5torch",
        "_zn6caffe2",
    ];
    const DRIVER_API: &[&str] = &[
        "cumem",
        "cuctx",
        "cuinit",
        "cudevice",
        "culaunch",
        "cumodule",
        "custream",
        "cuevent",
        "cugetprocaddress",
        "cudriverget",
        "cufunc",
        "cugraph",
        "culink",
        "cupointer",
    ];
    if TORCH.iter().any(|t| symbol.starts_with(t)) {
        Some(SymbolKind::Torch)
    } else if symbol.starts_with("__cuda") {
        Some(SymbolKind::RuntimeHook)
    } else if DRIVER_API.iter().any(|d| symbol.starts_with(d)) {
        Some(SymbolKind::DriverApi)
    } else {
        None
    }
}

/// CUDA Python's own wording when the libcuda it opened has no entry point it asks for:
/// `RuntimeError: Function "cuInit" not found` (cuda/_cuda/ccuda.pyx). The same failure as an
/// undefined driver API symbol, named without the loader's words: a stub libcuda (a conda env's
/// or the toolkit's stubs folder) found before the driver's, WSL's libcuda off the loader path,
/// or a driver older than the bindings. NVIDIA/cudf#12862, rapidsai-community/notebooks-contrib#356.
/// A runtime API name (`cudaMalloc`) or a function of the user's is no driver entry point.
pub(super) fn driver_api_function_not_found(seg: &Segment<'_>) -> Option<Finding> {
    const OPENING: &str = "function \"";
    let start = seg.lower.find(OPENING)? + OPENING.len();
    let (symbol, rest) = seg.lower[start..].split_once('"')?;
    if !rest.trim_start().starts_with("not found")
        || symbol_kind(symbol) != Some(SymbolKind::DriverApi)
    {
        return None;
    }
    let shown = seg.text.get(start..start + symbol.len()).unwrap_or(symbol);
    Some(driver_api_missing(seg, shown))
}

fn driver_api_missing(seg: &Segment<'_>, shown: &str) -> Finding {
    at(
        seg,
        "drv-loader-driver-api-symbol",
        Driver,
        None,
        format!(
            "The CUDA driver library (libcuda) that loads has no {shown}: the driver is older than the program needs, or a stub libcuda is loaded instead of the driver's."
        ),
        "Install a driver at least as new as the CUDA the program was built with (the manifest pins one), and take any toolkit or conda stubs folder off LD_LIBRARY_PATH; under WSL2 the driver's libcuda is in /usr/lib/wsl/lib, which must come first on LD_LIBRARY_PATH. `nvidia-smi` shows the driver that runs.",
        Mechanism::DriverAccess,
        true,
    )
}

/// An undefined symbol whose kind places the failure whatever binary asked for it.
pub(super) fn by_symbol_kind(seg: &Segment<'_>) -> Option<Finding> {
    let at_word = seg.lower.find("undefined symbol")? + "undefined symbol".len();
    let symbol = seg.lower[at_word..]
        .trim_start_matches([':', ' '])
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()?;
    let shown = seg.text.get(at_word..).map_or(symbol, |t| {
        t.trim_start_matches([':', ' '])
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or(symbol)
    });
    let finding = match symbol_kind(symbol)? {
        SymbolKind::Torch => at(
            seg,
            "lib-loader-built-for-other-torch",
            Library,
            Some(Toolkit),
            format!(
                "A compiled extension asks torch for {shown}, which the installed torch does not have: it was built against another torch version or CUDA build."
            ),
            "Rebuild the extension against the installed torch (clean its build folder, then reinstall it, e.g. `pip install --no-build-isolation .`), or install the torch version and +cuXYZ build it was made for.",
            Mechanism::Plain,
            true,
        ),
        SymbolKind::DriverApi => driver_api_missing(seg, shown),
        SymbolKind::RuntimeHook => at(
            seg,
            "tk-loader-runtime-hook-symbol",
            Toolkit,
            Some(Library),
            format!(
                "A CUDA binary needs {shown} from the CUDA runtime: it was compiled by a newer nvcc than the runtime (libcudart) it runs with."
            ),
            "Build with the same toolkit whose runtime the program loads (for a torch extension, the CUDA torch was built with: torch.version.cuda), and keep one toolkit first on PATH and LD_LIBRARY_PATH.",
            Mechanism::Plain,
            true,
        ),
    };
    Some(finding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::matcher;

    // The variants of each kind are data: tests/fixtures/diagnose/variants/symbols.yaml.

    fn one(text: &str) -> Option<Finding> {
        matcher::segments(text).find_map(|seg| by_symbol_kind(&seg))
    }

    #[test]
    fn other_undefined_symbols_are_left_to_the_loader() {
        assert_eq!(one("undefined symbol: cublasLtGetStatusString"), None);
        assert_eq!(
            one("undefined symbol: _ZNSt15__exception_ptr13exception_ptr9_M_addrefEv"),
            None
        );
        assert_eq!(one("no symbol here"), None);
    }
}
