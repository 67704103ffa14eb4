//! Loader failures, judged by which library failed to load and where it lives.
//!
//! The loader's wording differs by OS and caller (`cannot open shared object file`, `error while
//! loading shared libraries`, `undefined symbol`, `Could not load library X`, `Could not locate
//! X`, Windows error 126/127, `DLL load failed`), but the mechanism is one: a named library file
//! is missing or is the wrong one. The layer follows from the file: the driver's `libcuda` /
//! `nvml` and its video libraries (`libnvcuvid`, `libnvidia-encode`, which a container gets only
//! with the `video` capability) → driver; a CUDA library inside a pip `nvidia/*/lib` folder in site-packages → the
//! training library's wheels; a CUDA library in `/usr/local/cuda*` or `CUDA\vX.Y\bin`, or with
//! no path → the toolkit; the library's own binaries (`torch\lib`, `onnxruntime`) → the library.
//! An entry point the driver's DLL lacks is a driver older than the program; Windows' start-up
//! dialog for a CUDA runtime DLL shares the cause with the program's own package.
//! A CUDA library whose name carries another CUDA major than the toolkit the log shows (ONNX
//! Runtime asking for `libcublasLt.so.11` beside `nvcc` 12.1) is a library built for the other
//! CUDA.
//!
//! The judgement is a table, [`LOAD_RULES`]: a failing line's facts ([`Load`]: who ships the
//! file, where it lives, an undefined symbol, the CUDA majors) choose the first row that holds,
//! and the row's rule names the line with the file's words filled in.

use super::rule::Rule;
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{self, Driver, Library, Toolkit};
use crate::diagnose::matcher::Segment;

/// Words that say the loader failed on this line.
const LOAD_FAILED: &[&str] = &[
    "cannot open shared object file",
    "error while loading shared libraries",
    "undefined symbol",
    "could not load library",
    "could not load dynamic library",
    "could not locate",
    "failed to load library",
    // cuda-python's and numba's own wording for a library dlopen refused: NVIDIA/cudf#10308,
    // NVIDIA/cuda-python#17 (libcuda.so under WSL, outside dlopen's path).
    "failed to dlopen",
    // nvidia-container-cli: "initialization error: load library failed: libnvidia-ml.so.1".
    "load library failed",
    // ffmpeg's and DALI's wording for the driver's video libraries: "Cannot load
    // libnvcuvid.so.1" (NVIDIA/nvidia-docker#531, flox/flox#3597), "Failed to load libnvcuvid.so,
    // needed by the VideoReader operator" (NVIDIA/DALI#2362, #1588), `dlopen "libnvcuvid.so"
    // failed!` (NVIDIA/DALI#2091). A file must still be named and owned to be judged.
    "cannot load lib",
    "failed to load lib",
    "dlopen \"lib",
    "dlopen lib",
    "error code 126",
    "error code 127",
    "winerror 126",
    "winerror 127",
    "dll load failed",
    "error loading",
    "unable to load",
    "library not loaded",
    "couldn't open",
    "could not open",
    "dlerror",
    " dso",
    // Windows programs naming the DLL they did not find: sp-hash/TeamBlackMiner#329 ("nvcuda.dll
    // not found"), faroit/CountNet#5 (TensorFlow's "Could not find 'nvcuda.dll'").
    ".dll not found",
    ".dll was not found",
    // Windows' older loader dialog, the Windows 7/8 wording of "The code execution cannot
    // proceed because X.dll was not found": "The program can't start because X.dll is missing
    // from your computer" (xmrMiner/xmrMiner-Win64#8, microsoft/CNTK#37, yajiedesign/mxnet#5).
    "is missing from your computer",
    "tensorflow requires that this dll be installed",
    // Python's ctypes on Windows (3.8+): "Could not find module 'X.dll' (or one of its
    // dependencies)" (pytorch/pytorch#39734, spyder-ide/spyder#13322).
    "could not find module",
    // Windows' own dialog for a symbol a DLL lacks: "The procedure entry point X could not be
    // located in the dynamic link library Y.dll" (NVIDIA/Stable-Diffusion-WebUI-TensorRT#143,
    // gpufit/Gpufit#104); read like an undefined symbol.
    "could not be located in the dynamic link library",
    // glibc's symbol-version refusal: "X.so: symbol S version libcublasLt.so.11 not defined in
    // file libcublasLt.so.11 with link time reference" (PaddlePaddle/PaddleSeg#3215,
    // hpcaitech/ColossalAI#4059): X was linked against another build of the library it names;
    // read like an undefined symbol.
    "with link time reference",
    // PaddlePaddle's dynamic loader names the library it could not open in parentheses, with
    // or without the OS's own error after it: "The third-party dynamic library (cudnn64_7.dll)
    // that Paddle depends on is not configured correctly. (error code is 126)"
    // (PaddlePaddle/Paddle#34566, lazydog28/mc_auto_boss#110).
    "that paddle depends on is not configured correctly",
    // TensorRT's (trtexec's) own wording: "Unable to open library: A due to B", B the dlerror
    // of the file that failed (breadth pass brL: DDTRobot/tita_rl#2, NVIDIA/TensorRT#2908).
    "unable to open library",
];

/// Words of Windows' start-up dialog ("python.exe - System Error", "The code execution cannot
/// proceed because X.dll was not found", "The program can't start because X.dll is missing"):
/// the loader refused a DLL an executable links at start, before any of its code ran. For a CUDA
/// runtime DLL that executable's package is the first place that DLL is looked for, so the
/// program's own package shares the cause with the toolkit (janhq/jan#6960: the app's backend
/// downloaded again; graphdeco-inria/gaussian-splatting#1136: the prebuilt viewer ships without
/// cudart64_12.dll; xmrMiner/xmrMiner-Win64#8: the DLL beside the exe, or the CUDA 8 toolkit).
const STARTUP_DIALOG: &[&str] = &[
    "code execution cannot proceed",
    "can't start because",
    "system error",
];

/// Who ships a library file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Driver,
    Cuda,
    Cudnn,
    /// TensorRT (`libnvinfer`, `libnvonnxparser`, `nvinfer_plugin`): installed beside the toolkit
    /// (a tar, deb or pip `tensorrt` wheel) and found through the loader path like it.
    TensorRt,
    OwnBinary,
}

/// Where the file the loader named lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// `site-packages/nvidia/<lib>/lib`: the pip CUDA wheels a library depends on.
    PipCudaWheel,
    /// The training library's own folder in site-packages (`torch/lib`).
    LibraryFolder,
    /// A CUDA toolkit folder.
    ToolkitFolder,
}

/// One library file named on a failing line.
#[derive(Debug)]
struct Named {
    /// The file name, lowercased (`libcublaslt.so.11`, `cudnn_ops_infer64_8.dll`).
    file: String,
    /// The whole token, lowercased, with `\` turned into `/`.
    path: String,
}

pub(super) fn find(text: &str, segments: &[Segment<'_>]) -> Vec<Finding> {
    let toolkit_seen = toolkit_version_in(text);
    // Windows out of commit ("The paging file is too small", WinError 1455) names the DLL it
    // was loading, on its line or the next "Error loading" one; that DLL is not broken, and
    // the memory family reads the failure.
    let out_of_commit = segments
        .iter()
        .any(|seg| seg.lower.contains("winerror 1455"));
    // torch's import preloading the CUDA libraries of its pip dependencies (torch/__init__.py's
    // `_load_global_deps`, `_preload_cuda_deps`): a bare CUDA library name that fails there is
    // one of the torch wheel's nvidia-* wheels, not a system toolkit.
    let torch_preload = segments.iter().any(|seg| {
        seg.lower.contains("_preload_cuda_deps") || seg.lower.contains("_load_global_deps")
    });
    // NVIDIA's CUDA wheels of two majors in the environment: the wheels family names the cause
    // of a CUDA library's failure to load.
    let mixed_wheels = super::wheels::two_majors(segments).is_some();
    segments
        .iter()
        .filter(|seg| {
            !(seg.lower.contains("winerror 1455")
                || (out_of_commit && seg.lower.contains("error loading")))
        })
        .filter(|seg| LOAD_FAILED.iter().any(|w| seg.lower.contains(w)))
        .filter_map(|seg| judge(seg, toolkit_seen, torch_preload, mixed_wheels))
        .chain(segments.iter().filter_map(driver_entry_point_missing))
        .chain(segments.iter().filter_map(glibc_too_old))
        .chain(
            segments
                .iter()
                .filter_map(super::symbols::driver_api_function_not_found),
        )
        .collect()
}

/// The C library older than a binary needs: "version `GLIBC_2.29' not found (required by X)".
/// X, the binary that needs the newer glibc, names the layer by where it lives: a wheel in
/// site-packages was built on a newer OS than this one (the fix is another build or a newer OS,
/// never a GPU component); the toolkit's or the driver's own binaries are theirs. Anything else
/// (a program of the user's) stays unknown.
fn glibc_too_old(seg: &Segment<'_>) -> Option<Finding> {
    let lower = &seg.lower;
    let version_at = lower.find("glibc_2.")?;
    let rest = &lower[version_at..];
    if !rest.contains("not found") {
        return None;
    }
    let wanted: String = rest["glibc_".len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let required_by = &rest[rest.find("required by")? + "required by".len()..];
    let path = required_by
        .trim_start()
        .split(|c: char| c.is_whitespace() || matches!(c, ')' | '\'' | '"' | '`'))
        .next()?
        .replace('\\', "/");
    let file = path.rsplit('/').next()?.to_string();
    let in_packages = path.contains("site-packages/") || path.contains("dist-packages/");
    let (id, layer, cause, fix) = if in_packages {
        let who = library_of(&file).unwrap_or("a package");
        (
            "lib-wheel-glibc-too-new",
            Library,
            format!("{file}, from {who} in site-packages, needs glibc {wanted}, newer than this system's C library: the wheel was built on a newer OS than the one it runs on."),
            "Install a build of the package made for this system's glibc (`ldd --version` shows it): an older release whose wheels target it, a manylinux wheel for an older glibc, or a build from source here; or run it on a newer OS or in a container of one. Do not replace the system's glibc.".to_string(),
        )
    } else if owner(&file) == Some(Owner::Driver) || file.starts_with("nvidia-smi") {
        (
            "drv-glibc-too-new",
            Driver,
            format!("{file}, of the NVIDIA driver, needs glibc {wanted}, newer than the C library where it runs (often a container of an older OS given the host's driver libraries)."),
            "Run it where the C library is at least as new as the driver's needs: a container image of a newer OS, or the driver release built for this OS (`stackpin pin --library NAME==VERSION --os linux --driver VERSION`).".to_string(),
        )
    } else if place(&path) == Some(Place::ToolkitFolder) {
        (
            "tk-glibc-too-new",
            Toolkit,
            format!("{file}, of the CUDA toolkit, needs glibc {wanted}, newer than this system's C library: the toolkit release is for a newer OS."),
            "Install the CUDA toolkit build for this OS release (the toolkit's supported distributions name it), or run on a newer OS.".to_string(),
        )
    } else {
        return None;
    };
    Some(at(seg, id, layer, None, cause, fix, Mechanism::Plain, true))
}

/// An entry point the NVIDIA driver's own DLL lacks: Windows' dialog ("The procedure entry point
/// cuDevicePrimaryCtxReset_v2 could not be located in the dynamic link library nvcuda.dll",
/// trexminer/T-Rex#118) or .NET's EntryPointNotFoundException ("Unable to find an entry point
/// named 'nvmlInitWithFlags' in DLL 'nvml'", nicehash/NiceHashQuickMiner#124, #192, #244). The
/// DLL is there and loads; the function the program was built against is newer than the driver
/// (or than the last driver branch for an old card), so the fix is a newer driver, not a
/// reinstall of the same one. A CUDA library's missing entry point stays the loader's reading.
fn driver_entry_point_missing(seg: &Segment<'_>) -> Option<Finding> {
    let lower = &seg.lower;
    let (symbol, dll) =
        if let Some(at) = lower.find("could not be located in the dynamic link library") {
            let before = &lower[..at];
            let symbol = before
                .rsplit_once("entry point ")
                .map(|(_, s)| s.trim().to_string())?;
            let after = &lower[at + "could not be located in the dynamic link library".len()..];
            let dll = library_files(after).into_iter().next()?.file;
            (symbol, dll)
        } else {
            // .NET: "... entry point name[d] 'X' in DLL 'nvml'" / "the entry point \"X\" in the
            // \"nvml\" DLL"; the DLL is named without its extension.
            let at = lower.find("entry point")?;
            let rest = &lower[at..];
            let quoted: Vec<&str> = rest.split(['\'', '"']).skip(1).step_by(2).take(2).collect();
            let [symbol, dll] = quoted[..] else {
                return None;
            };
            if !rest.contains(" dll") {
                return None;
            }
            (symbol.to_string(), format!("{dll}.dll"))
        };
    if owner(&dll) != Some(Owner::Driver) || symbol.is_empty() {
        return None;
    }
    let shown = seg
        .text
        .to_lowercase()
        .find(&symbol)
        .and_then(|at| seg.text.get(at..at + symbol.len()))
        .unwrap_or(&symbol)
        .to_string();
    Some(at(
        seg,
        "drv-loader-entry-point-missing",
        Driver,
        None,
        format!(
            "{dll}, the NVIDIA driver's own library, loads but has no {shown}: the program was built against a newer driver interface than the installed driver provides (an old driver, or the last driver branch of a card too old for that CUDA)."
        ),
        "Install a newer NVIDIA driver (at least the one the program's CUDA release needs; the release notes of the program or of CUDA name it), reboot and run again; reinstalling the same driver does not add the function. If the newest driver for this card still lacks it, the card is past the program's support: use a build of the program for an older CUDA, or another GPU.",
        Mechanism::Plain,
        true,
    ))
}

/// What a failing line says about the library it names: the facts [`LOAD_RULES`] read, and the
/// words their texts are filled with.
struct Load {
    /// Who ships the missing file (`None`: no owner known, only an undefined CUDA symbol may
    /// still name one).
    owner: Option<Owner>,
    place: Option<Place>,
    /// The loader found the file but not a symbol in it.
    undefined: bool,
    /// Who provides the undefined symbol the line names, when a CUDA library does.
    symbol_owner: Option<Owner>,
    /// torch's import preloading its CUDA wheels (see [`find`]).
    torch_preload: bool,
    /// NVIDIA's CUDA wheels of two majors in the environment ([`super::wheels`]).
    mixed_wheels: bool,
    /// A Windows DLL.
    windows: bool,
    /// Windows' start-up dialog (see [`STARTUP_DIALOG`]).
    startup_dialog: bool,
    /// TensorFlow's start-up probe, "Could not load dynamic library".
    tensorflow_probe: bool,
    /// The CUDA major the file's name carries and the toolkit's the log shows, when they differ.
    other_cuda: Option<(u32, u32)>,
    /// `{file}`, `{version}`, `{who}`, `{symbol}` in the rows' texts.
    file: String,
    wanted: Option<u32>,
    who: &'static str,
    symbol: String,
}

/// One row of the loader's table: when its facts hold, the rule names the line (`None`: the
/// line names nothing, and the rows after it are not read). The rule's `cause` and `fix` may
/// hold `{file}`, `{version}` (" (CUDA 12)" or nothing), `{who}`, `{wanted}`, `{toolkit}`,
/// `{symbol}`, `{fails}` and `{redist}`, filled from the line.
struct LoadRule {
    when: fn(&Load) -> bool,
    says: Option<Rule>,
}

/// A row of the loader's table: a rule with no patterns of its own (the facts choose it).
const fn says(
    id: &'static str,
    layer: FailureLayer,
    second: Option<FailureLayer>,
    cause: &'static str,
    fix: &'static str,
    mechanism: Mechanism,
    decisive: bool,
) -> Option<Rule> {
    Some(Rule {
        id,
        patterns: &[],
        layer,
        second,
        cause,
        fix,
        mechanism,
        decisive,
        judge: None,
    })
}

const REINSTALL_OWN_WHEELS: &str = "Reinstall the library's wheels as one set (same version and +cuXYZ build for every package: torch, torchvision, torchaudio) in a clean venv; a nightly may ship without a DLL, so pin a release.{redist}";

/// The loader's table, read in order: the first row whose facts hold names the line.
const LOAD_RULES: &[LoadRule] = &[
    // The mixed wheels name the cause of a CUDA library's failure ([`super::wheels`]).
    LoadRule {
        when: |l| {
            l.mixed_wheels
                && (matches!(l.owner, Some(Owner::Cuda | Owner::Cudnn))
                    || (l.undefined && l.symbol_owner.is_some()))
        },
        says: None,
    },
    // An undefined symbol that belongs to a CUDA library (`cudnnCreate`, `cublasLt…`) names
    // the library that is missing or of another version, whatever binary asked for it.
    LoadRule {
        when: |l| {
            l.undefined
                && matches!(l.owner, Some(Owner::OwnBinary) | None)
                && l.symbol_owner == Some(Owner::Cudnn)
        },
        says: says(
            "tk-loader-symbol-from-cuda-library",
            Toolkit,
            Some(Library),
            "{file} needs {symbol} from cuDNN, which is not loaded or is another version than the one it was built with.",
            "Install the cuDNN version the training library was built with (its release notes name it), make that copy the one on the loader path (`ldconfig -p | grep -i cudnn`; LD_LIBRARY_PATH or PATH), and remove other copies.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| {
            l.undefined
                && matches!(l.owner, Some(Owner::OwnBinary) | None)
                && l.symbol_owner == Some(Owner::Cuda)
        },
        says: says(
            "tk-loader-symbol-from-cuda-library",
            Toolkit,
            Some(Library),
            "{file} needs {symbol} from a CUDA library, which is not loaded or is another version than the one it was built with.",
            "Install the a CUDA library version the training library was built with (its release notes name it), make that copy the one on the loader path (`ldconfig -p | grep -i cu`; LD_LIBRARY_PATH or PATH), and remove other copies.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| l.owner == Some(Owner::Driver) && is_video_library(&l.file),
        says: says(
            "drv-loader-video-library",
            Driver,
            None,
            "{file} is one of the NVIDIA driver's video libraries (NVDEC decode or NVENC encode) and cannot be loaded: the installed driver packages leave it out or are too old, or this container was started without the driver's video capability.",
            super::video::VIDEO_LIBRARY_FIX,
            Mechanism::DriverVideo,
            false,
        ),
    },
    LoadRule {
        when: |l| l.owner == Some(Owner::Driver),
        says: says(
            "drv-loader-driver-library",
            Driver,
            None,
            "{file} belongs to the NVIDIA driver and cannot be loaded: the driver is not installed, half removed, or not mounted into this container.",
            "Check the driver first: `nvidia-smi` must list the GPU. On the host reinstall the pinned driver (`stackpin repair MANIFEST`) and reboot; in a container start it with the NVIDIA runtime (`--gpus all`).",
            Mechanism::DriverAccess,
            false,
        ),
    },
    LoadRule {
        when: |l| is_cuda(l) && l.place == Some(Place::PipCudaWheel),
        says: says(
            "lib-loader-pip-cuda-wheel",
            Library,
            Some(Toolkit),
            "{file} from the pip CUDA wheels in site-packages (nvidia/…/lib) {fails} — another CUDA on the loader path (a system toolkit, or a second nvidia-* wheel) is loaded in its place.",
            "Let the library use the CUDA wheels it was installed with: take the system CUDA folders off LD_LIBRARY_PATH (or PATH), and uninstall the stray nvidia-* wheel that does not match the library's build (`pip list | grep nvidia`, e.g. `pip uninstall nvidia-cublas-cu11`); or reinstall the library's pinned +cuXYZ wheels in a clean venv.",
            Mechanism::Plain,
            true,
        ),
    },
    // A symbol missing between the package's own binaries: another install's copy of one of
    // them (an old source build's libc10.so in /usr/local/lib, a ~/.local or LD_LIBRARY_PATH
    // copy) is loaded first, and a reinstall leaves it there.
    LoadRule {
        when: |l| l.owner == Some(Owner::OwnBinary) && l.undefined,
        says: says(
            "lib-loader-own-binary",
            Library,
            None,
            "{file}, shipped inside the training library's own package, does not match the binaries beside it — the library's wheel is broken, incomplete or mixed with another build.",
            "Look for another copy of the library's own binaries that loads first (`ldd` on the file above, `grep -E 'c10|torch'`; an earlier install's libc10/libtorch in /usr/local/lib, on LD_LIBRARY_PATH or under ~/.local) and remove it or take it off the path, then reinstall the library's wheels as one set (same version and +cuXYZ build for every package: torch, torchvision, torchaudio) in a clean venv; a nightly may ship without a DLL, so pin a release.{redist}",
            Mechanism::Plain,
            false,
        ),
    },
    // With a CUDA library in its folder the place is new evidence; its own binary alone is what
    // the catalogue already reads.
    LoadRule {
        when: |l| l.owner == Some(Owner::OwnBinary),
        says: says(
            "lib-loader-own-binary",
            Library,
            None,
            OWN_BINARY_NOT_LOADED,
            REINSTALL_OWN_WHEELS,
            Mechanism::Plain,
            false,
        ),
    },
    LoadRule {
        when: |l| l.place == Some(Place::LibraryFolder) && !l.undefined,
        says: says(
            "lib-loader-own-binary",
            Library,
            Some(Toolkit),
            OWN_BINARY_NOT_LOADED,
            REINSTALL_OWN_WHEELS,
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| is_cuda(l) && l.place.is_none() && l.torch_preload && !l.undefined,
        says: says(
            "lib-loader-torch-preload",
            Library,
            Some(Toolkit),
            "torch's import preloads the CUDA libraries of its pip dependencies (the nvidia-* wheels: cuBLAS, cuDNN, the CUDA runtime…) and {file} is not where it looks: the wheels were not installed with torch, or a build tool (bazel, pants, poetry, --no-deps) put them in another folder than torch's site-packages.",
            "Install torch together with its CUDA wheels in one environment: `pip install --force-reinstall torch==VERSION` from the CUDA wheel index (without --no-deps), then `pip list | grep nvidia` must list the nvidia-* wheels of torch's CUDA major; a build tool that installs each package in its own folder must put them beside torch (or add their lib folders to LD_LIBRARY_PATH). A torch release that bundles its CUDA libraries avoids the preload.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| l.owner == Some(Owner::Cuda) && l.undefined,
        says: says(
            "tk-loader-two-cuda-versions",
            Toolkit,
            Some(Library),
            "{file} is found, but not the build the caller needs (undefined symbol): two CUDA versions are mixed on the loader path.",
            "Keep one CUDA on the loader path: point LD_LIBRARY_PATH (PATH on Windows) at the toolkit the library was built for only, remove other CUDA folders from it, and run `ldconfig -p | grep cublas` to see which copy loads.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| is_cuda(l) && l.other_cuda.is_some(),
        says: says(
            "lib-loader-built-for-other-cuda",
            Library,
            Some(Toolkit),
            "{who} was built for CUDA {wanted} (it asks for {file}) but this machine's toolkit is CUDA {toolkit}.",
            "Install the build of {who} made for CUDA {toolkit} (for ONNX Runtime, the onnxruntime-gpu package for CUDA {toolkit}; for torch, the +cu{toolkit}X wheels), or add the CUDA {wanted} libraries it was built for beside the toolkit and on the loader path.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: |l| l.owner == Some(Owner::Cudnn) && l.windows,
        says: says(
            "tk-loader-cudnn-dll",
            Toolkit,
            Some(Library),
            "Windows cannot load {file} or one of the DLLs it needs: cuDNN is missing, incomplete (a single DLL copied by hand), or its own dependency is absent (cuDNN 8 needs zlibwapi.dll).",
            "If the library ships its own cuDNN (torch wheels do, in torch\\lib), reinstall that wheel. Otherwise install the complete cuDNN archive for the toolkit's CUDA version: copy all of its bin, include and lib files into the toolkit folder (CUDA\\vX.Y), add zlibwapi.dll for cuDNN 8, and make sure that bin folder is on PATH.",
            Mechanism::Plain,
            true,
        ),
    },
    // TensorFlow warns on every start that it could not load TensorRT ("Could not load dynamic
    // library 'libnvinfer.so.7'"): harmless, so only another loader wording counts.
    LoadRule {
        when: |l| l.owner == Some(Owner::TensorRt) && l.tensorflow_probe,
        says: None,
    },
    LoadRule {
        when: |l| l.owner == Some(Owner::TensorRt),
        says: says(
            "tk-loader-tensorrt-missing",
            Toolkit,
            Some(Library),
            "{file} belongs to TensorRT, which is not installed or whose lib folder is not on the loader path.",
            "Install the TensorRT release made for this CUDA (its tar or deb package, or the `tensorrt` pip wheel) and put its lib folder on the loader path (LD_LIBRARY_PATH or a file in /etc/ld.so.conf.d/ plus `ldconfig`; PATH on Windows). The Python bindings and the libraries must be the same TensorRT version.",
            Mechanism::Plain,
            false,
        ),
    },
    // Windows' start-up dialog for an executable: the program's own package shares the cause
    // (see STARTUP_DIALOG), and the dialog is evidence the catalogue's wording-only entries
    // cannot see.
    LoadRule {
        when: |l| l.owner == Some(Owner::Cuda) && l.windows && l.startup_dialog,
        says: says(
            "tk-loader-cuda-dll-at-program-start",
            Toolkit,
            Some(Library),
            "Windows could not start the program because {file}{version}, a CUDA runtime DLL it links, is neither in the program's own folder nor on PATH: the program's package leaves it out (or a download of it is incomplete), or the CUDA release it was built with is not installed.",
            "First reinstall or re-download the program's GPU package (many ship {file} beside the .exe; a launcher's backend folder can be deleted so it is fetched again); if the program expects the toolkit, install the CUDA{version} release it was built with and put its bin folder on PATH (a newer CUDA major's DLLs have other names). Do not download single DLLs from DLL sites.",
            Mechanism::Plain,
            true,
        ),
    },
    LoadRule {
        when: is_cuda,
        says: says(
            "tk-loader-cuda-library-missing",
            Toolkit,
            None,
            "The CUDA library {file}{version} is not on the loader path: that toolkit (or cuDNN) is not installed, or its lib folder is not registered.",
            "Install the CUDA{version} libraries the library was built for (the manifest's toolkit pin, plus cuDNN if it is named) and register their folder: `ldconfig` (a file in /etc/ld.so.conf.d/) or LD_LIBRARY_PATH on Linux, PATH on Windows; `stackpin doctor MANIFEST` shows what the host has.",
            Mechanism::Plain,
            false,
        ),
    },
];

const OWN_BINARY_NOT_LOADED: &str = "{file}, shipped inside the training library's own package, or one of its dependencies cannot be loaded — the library's wheel is broken, incomplete or mixed with another build.";

/// A CUDA library or cuDNN.
fn is_cuda(l: &Load) -> bool {
    matches!(l.owner, Some(Owner::Cuda | Owner::Cudnn))
}

impl Load {
    /// The facts of a line on which the loader failed; `None` when it names no library file.
    fn read(
        seg: &Segment<'_>,
        toolkit_seen: Option<u32>,
        torch_preload: bool,
        mixed_wheels: bool,
    ) -> Option<Load> {
        let lower = &seg.lower;
        let mut named = library_files(lower);
        if named.is_empty() {
            // "Unable to load cuDNN DSO", "ConvolutionalBackwardFilter_V2 cudnn DSO dlerror": the
            // library is named by its stem only.
            let stem = [
                "cudnn", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvrtc", "nccl",
            ]
            .into_iter()
            .find(|s| lower.contains(s))?;
            named.push(Named {
                file: format!("lib{stem}"),
                path: stem.to_string(),
            });
        }
        // "Failed to load library A with error: B: cannot open…": A asked for B, B is missing.
        // TensorRT writes "Unable to open library: A due to B" the same way.
        let split_at = lower.find("with error").or_else(|| {
            lower
                .contains("unable to open library")
                .then(|| lower.find(" due to "))
                .flatten()
        });
        let (requester, missing) = match split_at {
            Some(split) => (
                named.iter().find(|n| !lower[split..].contains(&n.path)),
                named.iter().find(|n| lower[split..].contains(&n.path))?,
            ),
            None => (None, named.first()?),
        };
        // The search path a loader prints after the error (TensorFlow's "; LD_LIBRARY_PATH: …")
        // says where it looked, not where the library lives: a site-packages folder there
        // (OpenCV's `cv2/../../lib64`) is no library folder.
        let before_search_path = lower
            .find("ld_library_path")
            .map_or(lower.as_str(), |at| &lower[..at]);
        let place = place(&missing.path).or_else(|| place(before_search_path));
        let undefined = lower.contains("undefined symbol")
            || lower.contains("could not be located in the dynamic link library")
            || lower.contains("with link time reference");
        let owner = owner(&missing.file)
            .or_else(|| (place == Some(Place::LibraryFolder)).then_some(Owner::OwnBinary));
        let (symbol_owner, symbol) =
            symbol_owner(lower).map_or((None, String::new()), |(o, s)| (Some(o), s));
        let wanted = cuda_major_of(&missing.file);
        Some(Load {
            owner,
            place,
            undefined,
            symbol_owner,
            torch_preload,
            mixed_wheels,
            windows: missing.file.ends_with(".dll"),
            startup_dialog: STARTUP_DIALOG.iter().any(|w| lower.contains(w)),
            tensorflow_probe: lower.contains("could not load dynamic library"),
            other_cuda: wanted.zip(toolkit_seen).filter(|(w, t)| w != t),
            file: missing.file.clone(),
            wanted,
            who: requester
                .map(|r| r.file.as_str())
                .and_then(library_of)
                .unwrap_or("the training library"),
            symbol,
        })
    }

    /// `text` with this line's words in its placeholders (see [`LoadRule`]).
    fn fill(&self, text: &str) -> String {
        let (wanted, toolkit) = self.other_cuda.unwrap_or_default();
        let version = self
            .wanted
            .map_or(String::new(), |w| format!(" (CUDA {w})"));
        let fails = if self.undefined {
            "finds a symbol missing"
        } else {
            "cannot be loaded"
        };
        let redist = if self.windows {
            " On Windows also install the latest Microsoft Visual C++ Redistributable (x64)."
        } else {
            ""
        };
        text.replace("{file}", &self.file)
            .replace("{version}", &version)
            .replace("{who}", self.who)
            .replace("{wanted}", &wanted.to_string())
            .replace("{toolkit}", &toolkit.to_string())
            .replace("{symbol}", &self.symbol)
            .replace("{fails}", fails)
            .replace("{redist}", redist)
    }
}

fn judge(
    seg: &Segment<'_>,
    toolkit_seen: Option<u32>,
    torch_preload: bool,
    mixed_wheels: bool,
) -> Option<Finding> {
    if let Some(found) = super::symbols::by_symbol_kind(seg) {
        return Some(found);
    }
    let load = Load::read(seg, toolkit_seen, torch_preload, mixed_wheels)?;
    let rule = LOAD_RULES
        .iter()
        .find(|row| (row.when)(&load))?
        .says
        .as_ref()?;
    let mut found = rule.finding(seg);
    found.cause = load.fill(&found.cause);
    found.fix = load.fill(&found.fix);
    Some(found)
}

/// Who provides the undefined symbol named on the line (`undefined symbol: cudnnCreate`).
fn symbol_owner(lower: &str) -> Option<(Owner, String)> {
    let at = lower.find("undefined symbol")? + "undefined symbol".len();
    let symbol = lower[at..]
        .trim_start_matches([':', ' '])
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()?
        .to_string();
    if symbol.starts_with("cudnn") {
        return Some((Owner::Cudnn, symbol));
    }
    const CUDA: &[&str] = &[
        "cublas", "cufft", "curand", "cusolver", "cusparse", "nvrtc", "nccl",
    ];
    CUDA.iter()
        .any(|c| symbol.starts_with(c))
        .then_some((Owner::Cuda, symbol))
}

/// Every token on the line that names a shared library (`.so`, `.so.N`, `.dll`, `.dylib`).
fn library_files(lower: &str) -> Vec<Named> {
    lower
        .split(|c: char| {
            c.is_whitespace() || matches!(c, '\'' | '"' | ',' | '(' | ')' | '`' | '[' | ']')
        })
        .filter_map(|token| {
            let token = token.trim_end_matches([':', '.', ';', '!']);
            let path = token.replace('\\', "/");
            // A user's quote may cut the line before the name ("...curand64_70.dll is missing",
            // microsoft/CNTK#37): the ellipsis is no part of the file.
            let file = path
                .rsplit('/')
                .next()?
                .trim_start_matches([':', '.', '…'])
                .to_string();
            let is_lib = file.ends_with(".dll")
                || file.ends_with(".dylib")
                || file.ends_with(".so")
                || file.contains(".so.");
            (is_lib && file.len() > 3).then_some(Named { file, path })
        })
        .collect()
}

fn owner(file: &str) -> Option<Owner> {
    let name = file.strip_prefix("lib").unwrap_or(file);
    if name.starts_with("cuda.so")
        || name.starts_with("cuda.dylib")
        || file == "nvcuda.dll"
        || name.starts_with("nvidia-ml")
        || file == "nvml.dll"
        || name.starts_with("nvidia-")
        || is_video_library(file)
    {
        return Some(Owner::Driver);
    }
    if name.starts_with("cudnn") {
        return Some(Owner::Cudnn);
    }
    if ["nvinfer", "nvonnxparser", "nvparsers"]
        .iter()
        .any(|t| name.starts_with(t))
    {
        return Some(Owner::TensorRt);
    }
    const CUDA: &[&str] = &[
        "cudart",
        "cublas",
        "cufft",
        "curand",
        "cusolver",
        "cusparse",
        "nvrtc",
        "nvjitlink",
        "nvtoolsext",
        "nvtx",
        "cupti",
        "npp",
        "nccl",
        "nvjpeg",
        "cufile",
    ];
    if CUDA.iter().any(|c| name.starts_with(c)) {
        return Some(Owner::Cuda);
    }
    library_of(file).map(|_| Owner::OwnBinary)
}

/// The driver's video libraries: NVDEC's `libnvcuvid` (`nvcuvid.dll`) and NVENC's
/// `libnvidia-encode` (`nvEncodeAPI64.dll`). They ship with the driver, not the toolkit (the
/// Video Codec SDK's copies are link stubs: NVIDIA/VideoProcessingFramework#61), and a container
/// gets them only with the `video` driver capability (NVIDIA/DALI#2362).
fn is_video_library(file: &str) -> bool {
    let name = file.strip_prefix("lib").unwrap_or(file);
    name.starts_with("nvcuvid")
        || name.starts_with("nvidia-encode")
        || name.starts_with("nvencodeapi")
}

/// The training library a binary belongs to, by its file name.
fn library_of(file: &str) -> Option<&'static str> {
    let name = file.strip_prefix("lib").unwrap_or(file);
    const OWN: &[(&str, &str)] = &[
        ("onnxruntime", "ONNX Runtime"),
        ("torch", "torch"),
        ("c10", "torch"),
        ("caffe2", "torch"),
        ("aten", "torch"),
        ("shm", "torch"),
        ("_pywrap_tensorflow", "TensorFlow"),
        ("tensorflow", "TensorFlow"),
        ("xla_extension", "JAX"),
        ("triton", "Triton"),
    ];
    OWN.iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, lib)| *lib)
}

fn place(path: &str) -> Option<Place> {
    let path = path.replace('\\', "/");
    let in_packages = path.contains("site-packages/") || path.contains("dist-packages/");
    if in_packages && (path.contains("packages/nvidia/") || path.contains("/../../nvidia/")) {
        return Some(Place::PipCudaWheel);
    }
    if in_packages
        && ["torch/lib", "onnxruntime/capi", "tensorflow/", "jaxlib/"]
            .iter()
            .any(|p| path.contains(p))
    {
        return Some(Place::LibraryFolder);
    }
    // torch's own extension module, beside torch/lib: `torch/_C.cpython-36m-x86_64-linux-gnu.so`.
    if in_packages && (path.contains("torch/_c.so") || path.contains("torch/_c.cpython-")) {
        return Some(Place::LibraryFolder);
    }
    if path.contains("/usr/local/cuda") || path.contains("/cuda/v") || path.contains("/opt/cuda") {
        return Some(Place::ToolkitFolder);
    }
    None
}

/// The CUDA major a library file's name is tied to: cudart, cuBLAS(Lt) and NVRTC carry it in
/// their soname (`libcublasLt.so.11`) or DLL name (`cudart64_110.dll`, `cublas64_12.dll`).
/// Other libraries (cuFFT, cuRAND, cuDNN) number themselves.
fn cuda_major_of(file: &str) -> Option<u32> {
    let name = file.strip_prefix("lib").unwrap_or(file);
    let tied = ["cudart", "cublaslt", "cublas", "nvrtc"];
    let rest = tied.iter().find_map(|t| name.strip_prefix(t))?;
    let digits: String = if let Some(so) = rest.strip_prefix(".so.") {
        so.chars().take_while(char::is_ascii_digit).collect()
    } else if let Some(dll) = rest.strip_prefix("64_") {
        dll.chars()
            .take_while(char::is_ascii_digit)
            .take(2)
            .collect()
    } else {
        return None;
    };
    digits.parse().ok().filter(|m| (9..=20).contains(m))
}

/// The CUDA toolkit major the log shows: nvcc's `release X.Y`, or a versioned toolkit folder.
fn toolkit_version_in(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    for marker in [
        "cuda compilation tools, release ",
        "/usr/local/cuda-",
        "/cuda/v",
        "\\cuda\\v",
    ] {
        if let Some(at) = lower.find(marker) {
            let digits: String = lower[at + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(major) = digits.parse() {
                return Some(major);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::matcher;

    // The variants of each rule are data: tests/fixtures/diagnose/variants/loader.yaml.

    fn one(text: &str) -> Finding {
        let segments: Vec<_> = matcher::segments(text).collect();
        find(text, &segments)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no loader finding: {text}"))
    }

    #[test]
    fn a_wheel_needing_a_newer_glibc_is_the_library_build_not_the_gpu_stack() {
        for (log, who) in [
            // KumaTea/pytorch-aarch64#16 (Ubuntu 18.04 has glibc 2.27).
            (
                "ImportError: /lib/aarch64-linux-gnu/libc.so.6: version `GLIBC_2.28' not found (required by /www/miniconda3/envs/vits/lib/python3.7/site-packages/torch/lib/libtorch_python.so)",
                "torch",
            ),
            // pyg-team/pyg-lib#548.
            (
                "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.33' not found (required by /home/ee615/anaconda3/envs/qcnet/lib/python3.10/site-packages/libpyg.so)",
                "a package",
            ),
            // pyg-team/pytorch_geometric#8217 (wheels built on Ubuntu 20.04).
            (
                "OSError: /lib64/libm.so.6: version `GLIBC_2.29' not found (required by /xxxxxx/.conda/envs/jupyter/envs/pyg240/lib/python3.11/site-packages/torch_sparse/_metis_cuda.so)",
                "a package",
            ),
            // nanoporetech/taiyaki#25.
            (
                "E   ImportError: /lib64/libc.so.6: version `GLIBC_2.14' not found (required by /home/weir/software/taiyaki/venv/lib/python3.6/site-packages/torch/_C.cpython-36m-x86_64-linux-gnu.so)",
                "a package",
            ),
        ] {
            let f = one(log);
            assert_eq!(
                (f.id, f.layer),
                ("lib-wheel-glibc-too-new", Library),
                "{log}"
            );
            assert!(f.cause.contains(who), "{}", f.cause);
            assert!(f.decisive);
            let d = crate::diagnose::diagnose(log).expect("a diagnosis");
            assert_eq!(d.layer, Library, "{log}: {}", d.id);
        }
        // A binary outside any package (pytorch/pytorch#129555's libtorch, by a relative path)
        // says nothing about who built it for which OS.
        let segments: Vec<_> = matcher::segments(
            "./libtorch_cpu.so: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.28' not found (required by ./libtorch_cpu.so)",
        )
        .collect();
        assert!(segments.iter().all(|seg| glibc_too_old(seg).is_none()));
    }

    #[test]
    fn two_cuda_versions_on_the_loader_path_show_as_an_undefined_symbol() {
        let log = "/usr/local/cuda-11.8/lib64/libcublas.so.11: undefined symbol: cublasLtHSHMatmulAlgoInit, version libcublasLt.so.11";
        let f = one(log);
        assert_eq!((f.id, f.layer), ("tk-loader-two-cuda-versions", Toolkit));
        assert!(f.fix.contains("LD_LIBRARY_PATH"), "{}", f.fix);
    }

    #[test]
    fn libraries_outside_the_stack_are_not_judged() {
        let text =
            "ImportError: libGL.so.1: cannot open shared object file: No such file or directory";
        let segments: Vec<_> = matcher::segments(text).collect();
        assert!(find(text, &segments).is_empty());
    }

    #[test]
    fn the_container_runtime_failing_to_load_nvml_is_the_driver() {
        let log =
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1";
        let segments: Vec<_> = matcher::segments(log).collect();
        let f = find(log, &segments).into_iter().next().expect("a finding");
        assert_eq!((f.id, f.layer), ("drv-loader-driver-library", Driver));
    }
}
