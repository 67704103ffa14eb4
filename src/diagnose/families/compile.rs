//! Compile errors of CUDA source, placed by *where* the error is and *what* is undefined.
//!
//! nvcc and NVRTC say `error: identifier "X" is undefined` for any name they cannot see, so the
//! sentence alone names no layer: in the user's own code it is the user's bug (`unknown` is then
//! right). Three places do name one:
//! - the error is inside the toolkit's own headers (`/usr/local/cuda/include/…`, `cuda_bf16.hpp`,
//!   `texture_indirect_functions.h`): the headers and the compiler come from different CUDA
//!   releases (two toolkits mixed on PATH and the include path) — the toolkit;
//! - the undefined name is a CUDA intrinsic (`__half22float2`, `__hdiv`, `__shfl_sync`,
//!   `__nv_…`): the CUDA release or the target architecture the build asks for does not provide
//!   it (fp16 arithmetic needs sm_53 or newer) — the toolkit, the library's build second;
//! - torch's and nvFuser's `CUDA NVRTC compile error` on a kernel they generated
//!   (`__tmp_kernel_…`, `default_program`): the library's code generation — the library, NVRTC's
//!   toolkit second.
//!
//! nvcc's own stages dying (`nvcc error : 'cicc' died due to signal 11`, `'ptxas'`,
//! `'cudafe++'`) are the toolkit too: the compiler crashed (a bug of that release), or, with
//! signal 9, the machine ran out of host memory under too many parallel jobs. The generic
//! "segmentation fault" entry (the library's mixed wheels) must not answer for them.
//!
//! nvcc refusing its host compiler (no supported Visual Studio, a clang version out of range),
//! an error inside libstdc++'s own headers (a CUDA older than the host gcc), and MSBuild's
//! MSB3721 around a failing nvcc when nothing else in the log says why are the toolkit too.
//!
//! A library's CUDA source that uses thrust without including what it uses (`error: namespace
//! "thrust" has no member "device"`, `"remove_if"`, `"sort_by_key"`) compiled under CUDA 12's
//! thrust (CCCL), which no longer pulls those headers in transitively: the library's source is
//! older than the toolkit (MinkowskiEngine's known CUDA 12 break) — the library, the toolkit
//! second.
//!
//! An undefined name of any other kind in a project's own file stays unknown.

use super::rule::{Rule, first_rule};
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Library, Toolkit};
use crate::diagnose::matcher::Segment;

/// File names of the toolkit's own headers (the part after the last `/` or `\`).
const TOOLKIT_HEADERS: &[&str] = &[
    "cuda.h",
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda_fp16.h",
    "cuda_fp16.hpp",
    "cuda_bf16.h",
    "cuda_bf16.hpp",
    "cuda_fp8.h",
    "cuda_fp8.hpp",
    "texture_indirect_functions.h",
    "surface_indirect_functions.h",
    "texture_fetch_functions.h",
    "device_functions.h",
    "math_functions.h",
    "common_functions.h",
    "sm_20_intrinsics.h",
    "sm_30_intrinsics.h",
    "sm_32_intrinsics.h",
    "sm_60_atomic_functions.h",
    "host_defines.h",
    "driver_types.h",
    "vector_types.h",
];

/// Prefixes of CUDA intrinsics a release or an architecture may lack (lowercased).
const INTRINSICS: &[&str] = &[
    "__half",
    "__float2half",
    "__float22half",
    "__low2half",
    "__high2half",
    "__ushort_as_half",
    "__short_as_half",
    "__hdiv",
    "__hadd",
    "__hsub",
    "__hmul",
    "__hfma",
    "__hneg",
    "__heq",
    "__hlt",
    "__hgt",
    "__hisnan",
    "__bfloat16",
    "__float2bfloat16",
    "__shfl",
    "__nv_",
    "__ldg",
    "__reduce_",
    "__match_",
    "__syncwarp",
    "__activemask",
];

/// `error: identifier "X" is undefined` → (the file before `(line)`, X), both lowercased.
fn undefined_identifier(lower: &str) -> Option<(&str, &str)> {
    let at = lower.find("error: identifier \"")?;
    let rest = &lower[at + "error: identifier \"".len()..];
    let end = rest.find("\" is undefined")?;
    let name = rest[..end].trim();
    let before = lower[..at].trim_end().trim_end_matches(':').trim_end();
    let file = before
        .rfind('(')
        .map_or(before, |paren| &before[..paren])
        .rsplit(' ')
        .next()
        .unwrap_or("");
    Some((file, name))
}

fn is_toolkit_header(file: &str) -> bool {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let in_toolkit =
        (file.contains("/cuda/include/") || file.contains("/cuda-") || file.contains("\\cuda\\v"))
            && file.contains("include");
    TOOLKIT_HEADERS.contains(&name)
        || (in_toolkit && name.ends_with(".h"))
        || (in_toolkit && name.ends_with(".hpp"))
}

const HEADER_CAUSE: &str = "The error is inside the CUDA toolkit's own headers: the compiler \
(nvcc or NVRTC) and the headers it reads come from different CUDA releases — an older nvcc first \
on PATH with a newer toolkit's include folder, or a library pointing NVRTC at another toolkit's \
headers.";
const HEADER_FIX: &str = "Use one toolkit whole: `which nvcc` and `nvcc --version` must be the \
release whose include folder the build reads (CUDA_HOME / CUDA_PATH, /usr/local/cuda pointing \
at the same release, no second toolkit's bin first on PATH); for NVRTC, the headers of the \
CUDA the library was built for. Then rebuild from a clean build folder.";
const INTRINSIC_CAUSE: &str = "nvcc does not know a CUDA intrinsic the source calls: the CUDA \
release is older than the code needs, or the build compiles for an architecture that lacks it \
(the half-precision arithmetic intrinsics need sm_53 or newer).";
const INTRINSIC_FIX: &str = "Check what the project needs against `nvcc --version` and the \
architectures the build passes (`-arch` / `-gencode`, TORCH_CUDA_ARCH_LIST, \
CMAKE_CUDA_ARCHITECTURES): build for your GPU's compute capability (not an old default), or \
install the CUDA release the project asks for, and rebuild.";
const GENERATED_CAUSE: &str = "NVRTC could not compile a kernel the library generated at run \
time (torch's fuser or nvFuser): the library's code generation produced invalid code.";
const GENERATED_FIX: &str = "Update the library to a release with the code-generation fix, or \
turn the fusion off for this model (torch.jit / nvFuser off, e.g. \
`torch._C._jit_set_nvfuser_enabled(False)` or PYTORCH_JIT_USE_NNC_NOT_NVFUSER=1) and report \
the generated kernel to the library.";

const STAGE_CAUSE: &str = "One of nvcc's own stages (cicc, ptxas, cudafe++) crashed while \
compiling: a bug of this CUDA release on this source, or, with signal 9 (killed), the machine ran \
out of host memory with too many compile jobs at once.";
const STAGE_FIX: &str = "Signal 9: build with fewer parallel jobs (`MAX_JOBS=2`, `make -j2`, \
`cmake --build . -j 2`) or more RAM/swap. Signal 11: build with another CUDA release (newer, or \
the one the project tests with), or lower the optimisation of the file that crashes; the driver \
and the GPU are not involved.";

/// `nvcc error : 'STAGE' died due to signal N`: one of nvcc's own programs crashed.
fn nvcc_stage_died(lower: &str) -> bool {
    lower.contains("nvcc error")
        && lower.contains("died due to signal")
        && [
            "'cicc'",
            "'ptxas'",
            "'cudafe++'",
            "'cudafe'",
            "'nvlink'",
            "'fatbinary'",
        ]
        .iter()
        .any(|stage| lower.contains(stage))
}

const NO_MSVC_CAUSE: &str = "nvcc on Windows found no Visual Studio of the versions this CUDA \
release supports (the message names them): the one installed is older or newer than that range, \
or its C++ tools are not installed.";
const NO_MSVC_FIX: &str = "Install a Visual Studio (or its Build Tools) of a version the message \
names, with \"Desktop development with C++\", and build from its x64 Native Tools prompt; or \
install the CUDA release that supports the Visual Studio you have. `-allow-unsupported-compiler` \
only hides the check.";

const STDLIB_CAUSE: &str = "nvcc's front end cannot parse the host compiler's own C++ standard \
library headers (an error inside /usr/include/c++/N/): this CUDA release is older than the gcc \
it runs with (Ubuntu 22.04's packaged CUDA 11.5 with gcc 11 is the common pair).";
const STDLIB_FIX: &str = "Install a CUDA release that supports this gcc (11.6 or newer for \
gcc 11, from NVIDIA's repository rather than the distribution's nvidia-cuda-toolkit) and put its \
nvcc first on PATH, or build with an older host compiler the toolkit supports (`-ccbin g++-10`, \
CUDAHOSTCXX=g++-10, or CMAKE_CUDA_HOST_COMPILER); then rebuild from a clean build folder.";

/// An error nvcc reports inside libstdc++'s own headers (`/usr/include/c++/11/bits/
/// std_function.h: error: parameter packs not expanded`): the toolkit's front end and the host
/// compiler's headers are of incompatible releases. NVIDIA/nccl#650, NVIDIA/VisRTX#71,
/// JiyaSu/CapelliniSpTRSV#2, WebODM/OpenSplat#61, brucefan1983/GPUMD#738 (CUDA 11.5 with gcc 11);
/// NVIDIA/nccl#102 (CUDA 8 with gcc 6's <tuple>).
fn host_stdlib_rejected(lower: &str) -> bool {
    lower.contains("parameter packs not expanded") && lower.contains("/c++/")
}

const HOST_CLANG_CAUSE: &str = "nvcc refuses the host compiler's version (clang, Apple clang, \
or gcc on macOS): the compiler is newer (or older) than the range this CUDA release accepts.";
const HOST_CLANG_FIX: &str = "Point nvcc at a host compiler this CUDA release supports (`-ccbin` \
to that clang or gcc, CUDAHOSTCXX, or CMAKE_CUDA_HOST_COMPILER; on macOS select an older Xcode's \
command-line tools with `xcode-select`), or install the CUDA release that supports this \
compiler. `-allow-unsupported-compiler` only hides the check.";

/// nvcc's refusal of a clang host compiler by version, in its two wordings: host_config.h's
/// `-- unsupported clang version!` (NVIDIA/cccl#7, STEllAR-GROUP/octotiger#384) and nvcc's own
/// `The version ('N') of the host compiler ('clang') is not supported` (cholla-hydro/cholla#12,
/// BVLC/caffe#2776, espressomd/espresso#2645). Not the generic `nvcc fatal` rule (flags).
fn host_compiler_version_refused(lower: &str) -> bool {
    lower.contains("unsupported clang version")
        || (lower.contains("of the host compiler (") && lower.contains("is not supported"))
        || lower.contains("is no longer supported as a host compiler")
}

const MSBUILD_CAUSE: &str = "Visual Studio's CUDA build step (MSBuild's CUDA targets) ran nvcc \
and nvcc failed: the reason is the first `error` line nvcc printed above this one (a host \
compiler nvcc refuses, an architecture the toolkit lacks, an error in the code being compiled).";
const MSBUILD_FIX: &str = "Find nvcc's own first error above MSB3721 (build with detailed \
output, or run the quoted nvcc command in the x64 Native Tools prompt of the same Visual Studio) \
and run `stackpin diagnose` on it. Common causes: a cl.exe on PATH other than -ccbin's (build \
from the x64 prompt), a -gencode/CUDA architecture the toolkit no longer supports (set the \
project's CUDA C/C++ > Device > Code Generation to your GPU's, e.g. compute_86,sm_86), the \
project's CUDA build customisation of another toolkit version than the one installed.";

/// MSBuild's wrapper line around a failing nvcc (`error MSB3721: The command "…nvcc.exe …"
/// exited with code 1`): it never says why, the lines above do. NVlabs/tiny-cuda-nn#26,
/// NVIDIA/cuda-samples#163 (a cl.exe mismatch behind it), senlinuc/caffe_ocr#62 (compute_20),
/// happynear/caffe-windows#172. Not the broad "toolkit missing" rule: nvcc was found and ran.
fn msbuild_nvcc_exited(lower: &str) -> bool {
    lower.contains("msb3721") && lower.contains("nvcc")
}

/// Causes that, named anywhere in the log, outrank the rules after them (and the undefined
/// identifiers below): the first rule in this order that matches a line answers.
pub(super) const RANKED: &[Rule] = &[
    Rule {
        id: "tk-compile-cuda-home-path-list",
        patterns: &[],
        judge: Some(nvcc_path_is_a_path_list),
        layer: Toolkit,
        second: None,
        cause: PATH_LIST_CAUSE,
        fix: PATH_LIST_FIX,
        mechanism: Mechanism::Plain,
        decisive: true,
    },
    Rule {
        id: "tk-compile-host-compiler-refused",
        patterns: &[],
        judge: Some(host_compiler_version_refused),
        layer: Toolkit,
        second: None,
        cause: HOST_CLANG_CAUSE,
        fix: HOST_CLANG_FIX,
        mechanism: Mechanism::Plain,
        decisive: true,
    },
    Rule {
        id: "tk-compile-host-stdlib-rejected",
        patterns: &[],
        judge: Some(host_stdlib_rejected),
        layer: Toolkit,
        second: None,
        cause: STDLIB_CAUSE,
        fix: STDLIB_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    // nvcc's own refusal to start without a supported Visual Studio: CERN/TIGRE#414 (VS 2015
    // under CUDA 11.8), CERN/TIGRE#86 (VS 2010 under CUDA 6.0), vlfeat/matconvnet#417. Not the
    // generic `nvcc fatal` rule, whose fix is about the build's flags.
    Rule {
        id: "tk-compile-no-supported-msvc",
        patterns: &["cannot find a supported version of microsoft visual studio"],
        judge: None,
        layer: Toolkit,
        second: None,
        cause: NO_MSVC_CAUSE,
        fix: NO_MSVC_FIX,
        mechanism: Mechanism::Plain,
        decisive: true,
    },
    Rule {
        id: "tk-compile-nvcc-stage-crashed",
        patterns: &[],
        judge: Some(nvcc_stage_died),
        layer: Toolkit,
        second: None,
        cause: STAGE_CAUSE,
        fix: STAGE_FIX,
        mechanism: Mechanism::Plain,
        decisive: true,
    },
    // MinkowskiEngine under CUDA 12: NVIDIA/MinkowskiEngine#594, #601, #638,
    // facebookresearch/ConvNeXt-V2#20 (the includes that fix it).
    Rule {
        id: "lib-compile-thrust-member-missing",
        patterns: &[],
        judge: Some(thrust_member_missing),
        layer: Library,
        second: Some(Toolkit),
        cause: THRUST_CAUSE,
        fix: THRUST_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
    Rule {
        id: "lib-compile-generated-kernel",
        patterns: &["cuda nvrtc compile error"],
        judge: Some(generated_kernel_identifier),
        layer: Library,
        second: Some(Toolkit),
        cause: GENERATED_CAUSE,
        fix: GENERATED_FIX,
        mechanism: Mechanism::Plain,
        decisive: false,
    },
];

const THRUST_CAUSE: &str = "The library's CUDA source uses thrust algorithms or execution \
policies (thrust::device, remove_if, sort_by_key, unique) without including their headers: older \
CUDA releases' thrust pulled them in through other headers, CUDA 12's thrust (CCCL) does not, so \
the library's source is older than this toolkit.";
const THRUST_FIX: &str = "Use a release or fork of the library that supports this CUDA (for \
MinkowskiEngine, the CUDA 12 patches: add `#include <thrust/execution_policy.h>` to \
src/3rdparty/concurrent_unordered_map.cuh and `#include <thrust/remove.h>`, `<thrust/unique.h>`, \
`<thrust/sort.h>` where the error names the file), or build it with the CUDA 11 toolkit its setup \
was written for (CUDA_HOME and nvcc of that release, a torch for the same CUDA); then rebuild \
from a clean build folder.";

/// nvcc's `namespace "thrust" has no member "X"`: a library written against an older thrust.
fn thrust_member_missing(lower: &str) -> bool {
    lower.contains("namespace \"thrust\" has no member")
}

/// An undefined identifier inside a kernel torch or nvFuser generated (`__tmp_kernel_…`,
/// NVRTC's `default_program`).
fn generated_kernel_identifier(lower: &str) -> bool {
    lower.contains("error: identifier \"")
        && (lower.contains("__tmp_kernel") || lower.contains("default_program("))
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found = Vec::new();
    // Only alone: when nvcc's own error is in the log, the rule that reads it names the cause
    // (and an error in the user's own code stays unknown).
    let other_error = segments.iter().any(|seg| {
        (seg.lower.contains("error") || seg.lower.contains("fatal"))
            && !seg.lower.contains("msb3721")
    });
    if let Some(seg) = segments
        .iter()
        .find(|seg| !other_error && msbuild_nvcc_exited(&seg.lower))
    {
        found.push(at(
            seg,
            "tk-compile-msbuild-nvcc-failed",
            Toolkit,
            Some(Library),
            MSBUILD_CAUSE,
            MSBUILD_FIX,
            Mechanism::Plain,
            false,
        ));
    }
    if let Some(cause) = first_rule(RANKED, segments) {
        found.push(cause);
        return found;
    }
    for seg in segments {
        let Some((file, name)) = undefined_identifier(&seg.lower) else {
            continue;
        };
        if is_toolkit_header(file) {
            found.push(at(
                seg,
                "tk-compile-toolkit-header",
                Toolkit,
                Some(Library),
                HEADER_CAUSE,
                HEADER_FIX,
                Mechanism::Plain,
                false,
            ));
            return found;
        }
        if INTRINSICS.iter().any(|p| name.starts_with(p)) {
            found.push(at(
                seg,
                "tk-compile-cuda-intrinsic",
                Toolkit,
                Some(Library),
                INTRINSIC_CAUSE,
                INTRINSIC_FIX,
                Mechanism::Plain,
                false,
            ));
            return found;
        }
    }
    found
}

// The variants of each rule are tests/fixtures/diagnose/variants/compile.yaml, checked by
// families::variants.

const PATH_LIST_CAUSE: &str = "The nvcc the build runs is CUDA_HOME joined with bin/nvcc, and \
     CUDA_HOME holds a PATH-style list (a colon before or after the folder, or several folders: \
     `export CUDA_HOME=$CUDA_HOME:/usr/local/cuda`), so the path names no file.";
const PATH_LIST_FIX: &str = "Set CUDA_HOME to the one toolkit folder, with no colon and no \
     other folder (`export CUDA_HOME=/usr/local/cuda-X.Y` in ~/.bashrc, not \
     `$CUDA_HOME:/usr/local/cuda`), check `echo $CUDA_HOME` and `$CUDA_HOME/bin/nvcc --version`, \
     then clean the build folder and rebuild.";

/// An nvcc path glued to a colon-separated list (`:/usr/local/cuda/bin/nvcc`,
/// `/usr/local/cuda-10.1:/bin/nvcc`): CUDA_HOME was written like PATH
/// (chengdazhi/Deformable-Convolution-V2-PyTorch#86, rusty1s/pytorch_cluster#55,
/// open-mmlab/mmdetection#944). A Windows drive letter's colon (`C:\…\nvcc.exe`) is no list.
fn nvcc_path_is_a_path_list(lower: &str) -> bool {
    lower
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ','))
        .filter_map(|token| {
            let token = token.trim_end_matches(':');
            token.find("/nvcc").map(|at| &token[..at])
        })
        .any(|folder| {
            folder.contains('/')
                && folder.match_indices(':').any(|(at, _)| {
                    !(at == 1 && folder.starts_with(|c: char| c.is_ascii_alphabetic()))
                })
        })
}
