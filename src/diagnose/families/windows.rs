//! Native Windows failures that are neither a loader line with a library's name nor a CUDA code:
//! pip refusing a path longer than Windows' MAX_PATH or a file it may not write or another process
//! holds (read by Windows' error number, whatever language the OS words it in), the MSVC build tools, their Windows SDK or
//! the runtime a wheel or an extension build needs, nvcc failing to set up Visual Studio's environment, a package
//! name that no longer installs anything (`tensorflow-gpu`), and what torch's Windows builds lack
//! or do differently (no NCCL, no libuv, workers started by spawn), and Windows' illegal-instruction
//! status (0xC000001D) from a build for CPU instructions the processor lacks, and a Scripts\*.exe
//! launcher naming a Python that was moved (a portable bundle's pip.exe). Each is read from
//! the line the tool itself prints; the threads behind every rule are cited in
//! `tests/fixtures/diagnose/variants/windows.yaml`.

use super::rule::{Rule, find_each};
use super::{Finding, Mechanism};
use crate::diagnose::FailureLayer::{Hardware, Library, Toolkit};
use crate::diagnose::matcher::Segment;

pub(super) const RULES: &[Rule] = &[
    // pip on Windows failing to write a file whose full path passes MAX_PATH (260): its own
    // HINT line, WinError 206, or a bare Errno 2 on a long `C:\…` path. The Microsoft Store
    // Python's package folder and pip's temp build folder make the path long; the package is
    // fine. Decisive: the same log often carries later, secondary build errors.
    Rule {
        id: "lib-win-long-path",
        patterns: &[
            "does not have windows long path support enabled",
            "[winerror 206] the filename or extension is too long",
        ],
        judge: Some(long_path_not_found),
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "pip could not write one of the package's files because its full path is longer than Windows allows (260 characters) and long path support is off: the Python's package folder (the Microsoft Store Python's is long) or pip's temporary build folder plus the package's own deep file names pass the limit. The package and the GPU stack are fine.",
        fix: "Enable long paths (as administrator: set HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem LongPathsEnabled to 1, or the group policy \"Enable Win32 long paths\"), open a new shell and install again; or use a Python installed in a short folder (the python.org installer, or a venv such as C:\\venvs\\dl) instead of the Microsoft Store one; for a package built from source set TEMP and TMP to a short folder (C:\\t) before `pip install`.",
        decisive: true,
    },
    // A wheel's or extension's C/C++ build on Windows with no MSVC to run: setuptools' own
    // message, distutils' older "Unable to find vcvarsall.bat" (it looks for the compiler's
    // environment script and finds no Visual Studio with C++), torch.utils.cpp_extension's
    // warning that it cannot run `cl` (WinError 2: not on PATH), and CMake's NMake generator
    // failing to run `nmake -?` (a plain shell, not the Visual Studio developer prompt:
    // NVlabs/instant-ngp#66, answered "run VsDevCmd.bat before cmake", and #1111). The warning
    // alone is not decisive: a later compiler error names more.
    Rule {
        id: "tk-win-msvc-build-tools-missing",
        patterns: &[
            "microsoft visual c++ 14.0 or greater is required",
            "microsoft visual c++ 14.0 is required",
            "error checking compiler version for cl: [winerror 2]",
            "'nmake' '-?'",
            "unable to find vcvarsall.bat",
        ],
        judge: None,
        layer: Toolkit,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The package builds C++ (or CUDA) code on Windows and finds no MSVC compiler (cl.exe): Visual Studio's C++ build tools are not installed, or the shell is not one where cl.exe is on PATH. The Visual C++ Redistributable alone does not compile anything.",
        fix: "Install Visual Studio or its Build Tools with the \"Desktop development with C++\" workload (MSVC and a Windows SDK), then build from the \"x64 Native Tools Command Prompt\" (or run vcvars64.bat first) so cl.exe is on PATH; for CUDA code pick a Visual Studio release the CUDA toolkit supports. A prebuilt wheel for this Python, if the project ships one, avoids the build.",
        decisive: false,
    },
    // MSVC's own crtdefs.h (or another VC header) including the Universal CRT's corecrt.h and
    // not finding it: cl.exe is there, the Windows 10/11 SDK that carries the UCRT headers is
    // not (a Visual Studio or Build Tools install without the SDK component, a VS 2015 without
    // Update 3's SDK), or the shell's INCLUDE lacks it. The same line, whether nvcc or a plain
    // C++ build runs cl.exe. corecrt.h itself failing on another header (vcruntime.h) is the
    // MSVC include path, not this.
    Rule {
        id: "tk-win-windows-sdk-missing",
        patterns: &["c1083*corecrt.h"],
        judge: None,
        layer: Toolkit,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The C++ compiler (MSVC's cl.exe, run directly or by nvcc) cannot open corecrt.h, the Universal CRT header every MSVC C/C++ build includes: the Windows SDK that carries it is not installed with this Visual Studio (or Build Tools), or the shell's INCLUDE does not name it.",
        fix: "In the Visual Studio Installer modify this Visual Studio (or Build Tools) and add a Windows 10 or 11 SDK (the \"Desktop development with C++\" workload includes one; for VS 2015 install Update 3 with its Windows 10 SDK), then build again from the \"x64 Native Tools Command Prompt\" so INCLUDE names the SDK's ucrt folder.",
        decisive: true,
    },
    // nvcc on Windows runs the vcvars64.bat of the Visual Studio its cl.exe belongs to and
    // stops when that fails (a 32-bit HostX86 cl.exe found first, a VS install without its C++
    // workload, a release the toolkit does not support) or when the file is missing. Decisive
    // over nvcc's generic `nvcc fatal` reading, whose fix is about flags.
    Rule {
        id: "tk-win-nvcc-vcvars-failed",
        patterns: &[
            "could not set up the environment for microsoft visual studio",
            "microsoft visual studio configuration file 'vcvars64.bat' could not be found",
        ],
        judge: None,
        layer: Toolkit,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "nvcc could not set up Visual Studio's build environment: it runs the vcvars64.bat of the Visual Studio its cl.exe belongs to, and that failed or is missing (a 32-bit HostX86 cl.exe found first on PATH, a Visual Studio without its C++ workload or broken by an update, or a release this CUDA toolkit does not support).",
        fix: "Build from the \"x64 Native Tools Command Prompt\" of one Visual Studio so its HostX64\\x64 cl.exe is first on PATH (or pass -ccbin with that folder); repair or modify the install so \"Desktop development with C++\" is complete and vcvars64.bat exists under VC\\Auxiliary\\Build; if it still fails, use a Visual Studio release the toolkit's installation guide lists for this CUDA version.",
        decisive: true,
    },
    // TensorFlow 1.x on Windows importing its native module: "No module named
    // '_pywrap_tensorflow'" (1.0-1.1) or "'_pywrap_tensorflow_internal'" (1.2 on) is the .pyd
    // failing to load, and the threads' cure was the CUDA and cuDNN DLLs that build names
    // (tensorflow/tensorflow#7529: CUDA and cuDNN on PATH; #10111: cuDNN 5.1, not 6.0; #44877:
    // the cuDNN library). A CPU build missing MSVCP140.dll, or a 32-bit Python, gives the same
    // line, so the library's own install is second. Linux's GLIBC line naming the .so is not this.
    Rule {
        id: "tk-win-tensorflow-native-module-missing",
        patterns: &["no module named '_pywrap_tensorflow"],
        judge: None,
        layer: Toolkit,
        second: Some(Library),
        mechanism: Mechanism::Plain,
        cause: "TensorFlow's native module (_pywrap_tensorflow) could not be loaded on Windows: Python reports it as missing when the .pyd is there but a DLL it needs is not found. For a GPU build that is almost always the CUDA or cuDNN release this TensorFlow was built against (cudart64_XX.dll, cudnn64_X.dll) missing from PATH or installed at another version; for a CPU build, the Visual C++ runtime (MSVCP140.dll) or a 32-bit Python.",
        fix: "Install exactly the CUDA and cuDNN releases TensorFlow's tested-build table lists for this TensorFlow version (e.g. 1.3: CUDA 8 from its base installer plus cuDNN 6; 1.0-1.2: cuDNN 5.1) and put their bin folders on PATH, then open a new shell; for a CPU build install the Microsoft Visual C++ Redistributable and use a 64-bit Python.",
        decisive: true,
    },
    // The `tensorflow-gpu` name on the package index has, since December 2022, been an empty
    // package whose setup.py raises this on purpose; `tensorflow` itself carries the GPU build.
    Rule {
        id: "lib-tensorflow-gpu-package-removed",
        patterns: &[
            "the \"tensorflow-gpu\" package has been removed",
            "tensorflow-gpu has been removed. please install tensorflow instead",
        ],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The requirement names `tensorflow-gpu`, a package name TensorFlow retired (December 2022): every new release of it is an empty package whose install raises this error. `tensorflow` has carried the GPU support since 2.1.",
        fix: "Replace tensorflow-gpu with tensorflow in the requirements (on Linux or WSL2 `pip install \"tensorflow[and-cuda]\"` brings the CUDA libraries); on native Windows GPU support ended with 2.10, so pin `tensorflow<2.11` there (with CUDA 11.2 and cuDNN 8.1) or run TensorFlow under WSL2.",
        decisive: true,
    },
    // The Microsoft Visual C++ runtime a library's DLLs link against, missing or older than the
    // release was built with: torch's own import-time warning, or a library DLL whose start-up
    // code fails (WinError 1114, DLL initialization routine failed) when loaded from the
    // library's folder. Round 36 added onnx's own extension module: onnx 1.16.2 and 1.17's
    // Windows wheels need a newer runtime than many machines have (onnx/onnx#6267, the
    // maintainers: at least the MSVC 2015 runtime; the users: onnx 1.16.1 works), worded
    // "DLL load failed while importing onnx_cpp2py_export" (onnxsim/onnxsim#346,
    // tonykipkemboi/ollama_pdf_rag#21, spacewalk01/yolov11-tensorrt#2).
    Rule {
        id: "lib-win-msvc-runtime",
        patterns: &[
            "microsoft visual c++ redistributable is not installed, this may lead to the dll load failure",
            "dll load failed while importing onnx_cpp2py_export",
            "winerror 1114*error loading*torch\\lib\\",
            "winerror 1114*error loading*torch/lib/",
            "winerror 1114*error loading*\\c10.dll",
        ],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The library's own DLLs (torch\\lib's c10.dll and the rest, onnx's onnx_cpp2py_export) need the Microsoft Visual C++ runtime (vcruntime140, msvcp140), and the one Windows finds is missing or older than the release was built with, so a DLL's start-up code fails (WinError 1114) or torch warns that it is not installed.",
        fix: "Install the latest Microsoft Visual C++ Redistributable for Visual Studio 2015-2022 (x64), reboot, and import again; if a newer release still fails, pin the previous release of the library (e.g. torch 2.8 instead of 2.9; onnx 1.16.1 instead of 1.16.2 or 1.17) until the runtime is updated. Do not copy DLLs by hand.",
        decisive: true,
    },
    // torch's Windows (and macOS) builds carry no NCCL: a script or launcher that asks for the
    // nccl backend (DDP, torchrun, Lightning's default on GPUs) fails at init_process_group,
    // even on one GPU.
    Rule {
        id: "lib-win-torch-no-nccl",
        patterns: &["distributed package doesn't have nccl built in"],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The script asks torch.distributed for the NCCL backend, and torch's Windows (and macOS) builds have no NCCL: init_process_group(\"nccl\") fails however the GPU, driver and CUDA are.",
        fix: "On native Windows use the gloo backend (init_process_group(backend=\"gloo\"), or the project's option for it; Lightning: a strategy with process_group_backend=\"gloo\"), or run on one GPU without torchrun/DDP; for NCCL's multi-GPU speed run the project under WSL2 or Linux.",
        decisive: true,
    },
    // torch 2.4+ defaults its TCPStore (torchrun's rendezvous) to libuv, which its Windows
    // wheels are built without.
    Rule {
        id: "lib-win-torch-no-libuv",
        patterns: &["use_libuv was requested but pytorch was build without libuv support"],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "torch.distributed's TCPStore (torchrun's rendezvous, init_process_group with env:// or tcp://) defaults to libuv since torch 2.4, and torch's Windows wheels are built without it.",
        fix: "Turn libuv off for the store: set the environment variable USE_LIBUV=0 before torchrun or the script (PowerShell: $env:USE_LIBUV=\"0\"), or add ?use_libuv=0 to a tcp:// init_method; on one GPU run the script without torchrun; multi-GPU training is better run under WSL2 or Linux (Windows torch has no NCCL).",
        decisive: true,
    },
    // Windows starts DataLoader workers (and any multiprocessing child) by spawning a new
    // interpreter that re-imports the main script; without an `if __name__ == "__main__":`
    // guard the child starts workers again and Python stops it with this message.
    Rule {
        id: "lib-win-spawn-without-main-guard",
        patterns: &["an attempt has been made to start a new process before the"],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "On Windows, DataLoader workers (num_workers > 0) and other multiprocessing children start by spawning a new Python that re-imports the main script; the script builds its loaders and trains at module level, with no `if __name__ == \"__main__\":` guard, so each child tries to start workers again and Python stops it.",
        fix: "Put the training code of the main script under `if __name__ == \"__main__\":` (call main() there), keeping the dataset and collate functions at module level so the workers can import them; or set num_workers=0 in the DataLoader (slower, no worker processes). In a notebook, define the dataset in an importable .py file.",
        decisive: true,
    },
    // torch 2.0-2.3 refused torch.compile on Windows outright (torch/_dynamo/eval_frame.py's
    // check_if_dynamo_supported, pytorch/pytorch#94940); the model runs without it.
    Rule {
        id: "lib-win-torch-compile-unsupported",
        patterns: &["windows not yet supported for torch.compile"],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The code calls torch.compile, and this torch release does not support it on Windows (2.0 to 2.3 raise this on purpose); the GPU stack is fine and the model runs without compiling.",
        fix: "Run without torch.compile: the project's switch for it (e.g. --compile=False), or remove the torch.compile(...) call, at some speed cost; or run the project under WSL2 or Linux, where the compiler works; newer torch releases bring Windows support step by step (CPU first), so upgrading is an option only where their notes say the GPU path works.",
        decisive: true,
    },
    // nvcc refusing a host compiler whose target it does not know: on Windows a 32-bit cl.exe
    // (HostX86\x86) or MinGW's gcc from `make`; elsewhere a clang the release does not support.
    // Decisive over nvcc's generic reading, whose fix is about flags.
    Rule {
        id: "tk-nvcc-host-compiler-target",
        patterns: &[
            "nvcc fatal   : host compiler targets unsupported os",
            "nvcc fatal : host compiler targets unsupported os",
        ],
        judge: None,
        layer: Toolkit,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "nvcc does not accept the host compiler it was given: on Windows it must be the 64-bit MSVC cl.exe (a 32-bit HostX86\\x86 cl.exe, or MinGW's gcc when the project is built with make, targets an OS nvcc does not support); on Linux a clang this CUDA release does not support.",
        fix: "On Windows build with the 64-bit MSVC: from the \"x64 Native Tools Command Prompt\", with CMake's Visual Studio generator for x64 (-A x64) or Ninja from that prompt, not MinGW make; on Linux point nvcc at a gcc the toolkit supports (-ccbin g++-N, CMAKE_CUDA_HOST_COMPILER).",
        decisive: true,
    },
    // The MSVC standard library's own version check of nvcc (yvals_core.h): a Visual Studio
    // update brought an STL that needs a newer CUDA than the toolkit in use.
    Rule {
        id: "tk-win-msvc-stl-needs-newer-cuda",
        patterns: &["stl1002: unexpected compiler version, expected cuda"],
        judge: None,
        layer: Toolkit,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "Visual Studio's C++ standard library (yvals_core.h) checks the CUDA compiler and needs a newer CUDA than the toolkit in use: a Visual Studio update (2022 17.10+ needs CUDA 12.4) moved past this toolkit.",
        fix: "Install the CUDA toolkit release the error names or newer and build with it; or build with an older MSVC toolset that this CUDA supports (Visual Studio Installer: the matching MSVC v14.x build tools, selected with -vcvars_ver or CMake's -T version=14.x). Defining _ALLOW_COMPILER_AND_STL_VERSION_MISMATCH only hides the check.",
        decisive: true,
    },
    // pip on Windows unable to replace or write a package's file: the file is open in a running
    // Python (a DLL in use cannot be replaced), or the environment lives in a folder the user may
    // not write (Program Files, the Microsoft Store Python's WindowsApps, an application's own
    // Python); antivirus scanning the new files is the third. Read by the Windows error number
    // (5: access denied, 32: file in use), never by its text: the text after the number is the
    // OS's, in the system's language ("拒绝访问。": OpenEthan/SMSBoom#19, "存取被拒。":
    // wulutuolaman-username/import-xiaoer#7, "Accesso negato":
    // Data-Centric-AI-Community/fg-data-profiling#907, "액세스가 거부되었습니다": pypa/pip#9152,
    // "另一个程序正在使用此文件": TauricResearch/TradingAgents#151); pip before 21 says "an
    // EnvironmentError" (pypa/pip#9152), and a Chinese input method may type the brackets
    // full-width ("【WinError 5】", import-xiaoer#7). A bare PermissionError [WinError 5] is a
    // program's own file access, not pip's install, and stays unread.
    Rule {
        id: "lib-win-pip-file-locked",
        patterns: &[
            "could not install packages due to an *[winerror 5]",
            "could not install packages due to an *[winerror 32]",
            "could not install packages due to an *【winerror 5】",
            "could not install packages due to an *【winerror 32】",
        ],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "pip could not write or replace one of the package's files: another process has it open (a Python, Jupyter kernel or IDE still running from this environment holds torch's DLLs; antivirus scanning the new files), or the environment is in a folder this user may not write (Program Files, the Microsoft Store Python's WindowsApps, an application's bundled Python).",
        fix: "Close every Python, notebook kernel and IDE using this environment (Task Manager: python.exe) and install again; delete any half-removed `~orch`-style folders pip left in site-packages; install into a venv in a folder you own (python -m venv C:\\venvs\\dl) rather than Program Files or the Store Python, or add --user (for an application's own Python under Program Files, such as Blender's, run that application or the shell as administrator once); if it persists, exclude the venv from real-time antivirus scanning while installing.",
        decisive: true,
    },
    // A console script's .exe on Windows (pip.exe, pip3.exe, any entry point pip writes into
    // Scripts\) is a launcher stub with the absolute path of the Python that installed it
    // written inside. When that Python is no longer there the stub stops before pip runs: a
    // portable bundle built on CI and unzipped elsewhere (ComfyUI portable's pip.exe names the
    // build machine's `D:\a\ComfyUI\python_embeded\python.exe`: Comfy-Org/ComfyUI#6998 and
    // #3263, both cured by `python_embeded\python.exe -m pip`), a venv moved or copied, a Python
    // uninstalled. The package asked for and the GPU stack are not involved.
    Rule {
        id: "lib-win-script-launcher-python-moved",
        patterns: &["fatal error in launcher: unable to create process using"],
        judge: None,
        layer: Library,
        second: None,
        mechanism: Mechanism::Plain,
        cause: "The pip.exe (or other Scripts\\*.exe) that was run is a launcher stub holding the path of the Python it was installed with, and that Python is not at that path any more: a portable bundle (ComfyUI portable, a web UI's bundled Python) built on another machine and unzipped here, a venv moved or copied, or a Python uninstalled. pip itself never started; the package and the GPU stack are not involved.",
        fix: "Run pip through the interpreter itself instead of the .exe: `<that python> -m pip install ...` (ComfyUI portable: from its folder, `python_embeded\\python.exe -m pip install ...`; a web UI's venv: `venv\\Scripts\\python.exe -m pip install ...`). To repair the stubs, `<that python> -m pip install --force-reinstall pip` rewrites them with this Python's path; a moved venv is best recreated where it now lives.",
        decisive: true,
    },
    // Windows' NTSTATUS for an illegal instruction (0xC000001D) as a process exit code, an
    // exception code or a DLL load error code, in hex or as the signed (-1073741795) or unsigned
    // (3221225501) decimal IDEs and launchers print: a binary built for CPU instructions this
    // CPU lacks (AVX, AVX2) ran them. TensorFlow's wheels since 1.6 need AVX
    // (tensorflow/tensorflow#19584: "fail to load with ... ImportError: DLL load failed"), dlib
    // builds need AVX (takuya-takeuchi/FaceRecognitionDotNet#101), an app picked a backend its
    // CPU cannot run (janhq/jan#6065). The GPU stack is not involved; CUDA's own "an illegal
    // instruction was encountered" is a GPU kernel's and stays with the code table.
    Rule {
        id: "lib-win-cpu-instruction-missing",
        patterns: &[
            "0xc000001d",
            "-1073741795",
            "3221225501",
            "status_illegal_instruction",
            "exception code: c000001d",
        ],
        judge: None,
        layer: Library,
        second: Some(Hardware),
        mechanism: Mechanism::Plain,
        cause: "The process (or a DLL it loaded) stopped with Windows' illegal-instruction status (0xC000001D = -1073741795 = 3221225501): the binary was built for CPU instructions this processor does not have, usually AVX or AVX2 (TensorFlow's wheels since 1.6, dlib, llama.cpp backends built for AVX2), or an emulator or VM hides them. The GPU, its driver and CUDA are not involved.",
        fix: "Check the CPU's instruction sets (CPU-Z, or `python -c \"import cpuinfo; print(cpuinfo.get_cpu_info()['flags'])\"` after `pip install py-cpuinfo`); install a build of the library made without them (an older release from before it required AVX, a community no-AVX wheel, the app's no-AVX or failsafe backend) or build it from source on this machine; in a VM or under emulation expose the host's AVX to the guest. A CPU with AVX2 runs the stock builds.",
        decisive: true,
    },
];

/// pip's Errno 2 while installing, on a Windows drive path long enough to pass MAX_PATH with
/// the folder it is written into (older pip prints no HINT line).
fn long_path_not_found(lower: &str) -> bool {
    const MARK: &str = "no such file or directory: '";
    if !lower.contains("could not install packages due to an") {
        return false;
    }
    let Some(at) = lower.find(MARK) else {
        return false;
    };
    let path = &lower[at + MARK.len()..];
    let path = path
        .split('\'')
        .next()
        .unwrap_or(path)
        .replace("\\\\", "\\");
    let drive = path.as_bytes();
    let on_drive = drive.len() > 3
        && drive[0].is_ascii_alphabetic()
        && drive[1] == b':'
        && (drive[2] == b'\\' || drive[2] == b'/');
    on_drive && path.len() >= 200
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    find_each(RULES, segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_missing_path_is_no_long_path() {
        assert!(!long_path_not_found(
            "error: could not install packages due to an oserror: [errno 2] no such file or directory: 'c:\\\\users\\\\me\\\\req.txt'"
        ));
        let long = format!(
            "error: could not install packages due to an oserror: [errno 2] no such file or directory: 'c:\\\\users\\\\me\\\\{}.py'",
            "a".repeat(220)
        );
        assert!(long_path_not_found(&long));
    }
}
