//! What NVIDIA's Windows installers take, from the sources that run them every day: the CUDA
//! toolkit's sub-package lists per CUDA line with `-n` (never reboot by itself), the display
//! driver's silent flags with `-noeula`, its exit codes, and which driver package fits which
//! card family. `pin` writes these into a manifest and `check` holds a manifest to them; this
//! module reads no files and runs nothing.
//!
//! Sources (read for this module; cited again in docs/windows.md):
//! - CUDA 12.x sub-packages: pytorch/pytorch `.ci/pytorch/windows/internal/cuda_install.bat`
//!   (the `ARGS` of its cuda124 … cuda129 sections).
//! - CUDA 13.x: `nvcc_13.0`, `crt_13.0`, `nvvm_13.0`, `cudart_13.0` as separate sub-packages
//!   (public installs of cuda_13.0.2 with exactly these; NVIDIA's 13.x redistrib manifests list
//!   `cuda_crt` apart from `cuda_nvcc`). No source names `thrust_13.0`, so it is not listed
//!   before 13.2.
//! - CUDA 13.2 and later: `thrust_13.x` and `nvptxcompiler_13.x` as well, as the sub-package
//!   table of NVIDIA's CUDA Installation Guide for Microsoft Windows lists them from 13.2 on.
//! - `-s` silent, `-n` no automatic reboot: NVIDIA's CUDA Installation Guide for Microsoft
//!   Windows, "Install the CUDA Software", silent installation.
//! - Driver flags `-s -noreboot -noeula` and the data-center package URLs: NVIDIA/cuda-python
//!   `ci/tools/install_gpu_driver.ps1` (`/s /noeula /noreboot`; `tesla/<v>/<v>-data-center-…`
//!   for A100, H100, L4, T4, V100, RTX A6000, RTX 6000 Ada; `Windows/<v>/<v>-desktop-…` for
//!   GeForce and RTX PRO cards).

pub mod long_paths;

use crate::manifest::{ExitCodes, Manifest, Problem};
use crate::version::Version;

/// The CUDA installer's "do not reboot after install, even if a reboot is required" flag.
pub const TOOLKIT_NO_REBOOT: &str = "-n";

/// Sub-packages for a training workstation on CUDA 12.x (PyTorch's Windows CI list): compiler,
/// runtime, the math libraries with their headers, nvJitLink, NVTX; never `Display.Driver`.
/// The list is its head followed by [`CUDA_LIBRARIES`].
const CUDA_12_HEAD: &[&str] = &[
    "cuda_profiler_api",
    "thrust",
    "nvcc",
    "cuobjdump",
    "nvprune",
    "nvprof",
    "cupti",
    "cublas",
    "cublas_dev",
    "cudart",
];

/// CUDA 13.x: the compiler is split into `nvcc`, `crt` and `nvvm`; no `thrust` and no `nvprof`
/// (removed), the libraries keep their 12.x names ([`CUDA_LIBRARIES`] follows this head).
const CUDA_13_HEAD: &[&str] = &[
    "nvcc",
    "crt",
    "nvvm",
    "cudart",
    "cuda_profiler_api",
    "cuobjdump",
    "nvprune",
    "cupti",
    "cublas",
    "cublas_dev",
];

/// The libraries both lines list last, under the same names and in the same order.
const CUDA_LIBRARIES: &[&str] = &[
    "cufft",
    "cufft_dev",
    "curand",
    "curand_dev",
    "cusolver",
    "cusolver_dev",
    "cusparse",
    "cusparse_dev",
    "npp",
    "npp_dev",
    "nvrtc",
    "nvrtc_dev",
    "nvml_dev",
    "nvjitlink",
    "nvtx",
];

/// What NVIDIA's Windows guide lists from CUDA 13.2 on, besides the 13.x head: the Thrust
/// headers (CCCL) and the PTX compiler library.
const CUDA_13_2_EXTRA: &[&str] = &["nvptxcompiler", "thrust"];

/// The sub-packages to install for a CUDA line (`12.4` → `nvcc_12.4 …`); 11.x and older get the
/// 12.x names, which they share except `nvjitlink` (new in 12.0), left out there.
pub fn toolkit_subpackages(line: &str) -> Vec<String> {
    let mut parts = line.split('.').map(|n| n.parse::<u32>().ok());
    let major = parts.next().flatten().unwrap_or(12);
    let minor = parts.next().flatten().unwrap_or(0);
    let head = if major >= 13 {
        CUDA_13_HEAD
    } else {
        CUDA_12_HEAD
    };
    let extra = if (major, minor) >= (13, 2) {
        CUDA_13_2_EXTRA
    } else {
        &[]
    };
    head.iter()
        .chain(extra)
        .chain(CUDA_LIBRARIES)
        .filter(|n| major >= 12 || **n != "nvjitlink")
        .map(|n| format!("{n}_{line}"))
        .collect()
}

/// The toolkit step: silent, no reboot of its own, the listed sub-packages only.
pub fn toolkit_run(line: &str) -> Vec<String> {
    ["{installer}", "-s", TOOLKIT_NO_REBOOT]
        .into_iter()
        .map(String::from)
        .chain(toolkit_subpackages(line))
        .collect()
}

/// The driver step: silent, no reboot of its own (stackpin reboots), EULA accepted.
pub const DRIVER_ARGS: [&str; 4] = ["{installer}", "-s", "-noreboot", "-noeula"];

/// [`DRIVER_ARGS`] as an argv.
pub fn driver_run() -> Vec<String> {
    DRIVER_ARGS.into_iter().map(String::from).collect()
}

/// The driver step's exit codes: NVIDIA's setup exits 1 when a reboot is needed.
pub fn driver_exit_codes() -> ExitCodes {
    ExitCodes {
        success: vec![0],
        reboot: vec![1, 3010],
    }
}

/// Which Windows driver package a card takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFamily {
    /// GeForce and RTX PRO Blackwell cards: the "desktop" package.
    GeForce,
    /// Quadro and RTX workstation cards (RTX A4000, RTX 4000 Ada): the RTX/Quadro package.
    RtxWorkstation,
    /// Tesla-class cards (A100, H100, L4, T4, V100) and the RTX A6000 / RTX 6000 Ada, which
    /// NVIDIA's own CI drives with the data-center package.
    DataCenter,
}

/// Data-center model names: a whole word of the GPU name, after `NVIDIA`.
const DATA_CENTER_MODELS: &[&str] = &[
    "A2", "A10", "A16", "A30", "A40", "A100", "A800", "H100", "H200", "H800", "H20", "GH200",
    "B100", "B200", "GB200", "L4", "L20", "L40", "L40S", "T4", "V100", "P100", "P40", "P4",
];

/// The family from the name `nvidia-smi` reports (`NVIDIA H100 80GB HBM3`, `NVIDIA RTX A6000`).
pub fn card_family(gpu_name: &str) -> CardFamily {
    let upper = gpu_name.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    if has("GEFORCE") || has("TITAN") {
        return CardFamily::GeForce;
    }
    if has("TESLA")
        || words
            .iter()
            .any(|w| DATA_CENTER_MODELS.contains(w) || is_a_series_data_center(w))
    {
        return CardFamily::DataCenter;
    }
    // NVIDIA/cuda-python CI installs the data-center package on these two workstation cards.
    let joined = words.join(" ");
    if joined.contains("RTX A6000") || joined.contains("RTX 6000 ADA") {
        return CardFamily::DataCenter;
    }
    if has("PRO") && has("RTX") {
        return CardFamily::GeForce;
    }
    if has("QUADRO") || has("RTX") && words.iter().any(|w| is_workstation_model(w)) {
        return CardFamily::RtxWorkstation;
    }
    CardFamily::GeForce
}

/// The `A\d+G?` family of data-center cards (A2, A10, A10G, A16, A30, A40, A100, A800): an
/// `A` and at most three digits; four digits (A4000, A6000) are workstation cards.
fn is_a_series_data_center(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('A') else {
        return false;
    };
    let digits = rest.strip_suffix('G').unwrap_or(rest);
    (1..=3).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
}

/// `A4000`, `A5500`, `4000` (RTX 4000 Ada), `2000`: workstation model numbers.
fn is_workstation_model(word: &str) -> bool {
    let digits = word.strip_prefix('A').unwrap_or(word);
    digits.len() == 4 && digits.ends_with("000") || digits.len() == 4 && digits.ends_with("500")
}

/// NVIDIA's download URL for a Windows driver version and card family: the release data's URL
/// pattern of the family's channel (data/drivers.yaml).
pub fn driver_url(version: &Version, family: CardFamily) -> String {
    use crate::compat::DriverChannel;
    let channel = match family {
        CardFamily::GeForce => DriverChannel::Desktop,
        CardFamily::RtxWorkstation => DriverChannel::Workstation,
        CardFamily::DataCenter => DriverChannel::DataCenter,
    };
    // Only the bundled channel has no file, and no family maps to it.
    crate::compat::driver_url_in(version, crate::os::Os::Windows, channel).unwrap_or_default()
}

/// The data-center driver for Windows Server 2022 and 2025: the file NVIDIA's own CI installs on
/// its Windows Server GPU runners (NVIDIA/cuda-python `install_gpu_driver.ps1`, 581.15:
/// `tesla/<v>/<v>-data-center-tesla-desktop-winserver-2022-2025-dch-international.exe`).
pub fn server_driver_url(version: &Version) -> String {
    let v = version.to_string();
    format!(
        "https://us.download.nvidia.com/tesla/{v}/{v}-data-center-tesla-desktop-winserver-2022-2025-dch-international.exe"
    )
}

/// The driver URL `pin` writes: per card family when the GPU's name is known, else GeForce's;
/// a data-center card on Windows Server gets the server file.
pub fn driver_url_for(version: &Version, gpu_name: Option<&str>, server: bool) -> String {
    match gpu_name.map_or(CardFamily::GeForce, card_family) {
        CardFamily::DataCenter if server => server_driver_url(version),
        family => driver_url(version, family),
    }
}

/// `check`'s Windows installer rules: the toolkit step needs `-n`, or the CUDA installer may
/// reboot the machine by itself in the middle of the chain.
pub fn check_rules(m: &Manifest) -> Vec<Problem> {
    if m.os != crate::os::Os::Windows {
        return Vec::new();
    }
    let mut out = Vec::new();
    if m.toolkit.source == crate::manifest::ToolkitSource::Runfile
        && !m.toolkit.run.iter().any(|a| a == TOOLKIT_NO_REBOOT)
    {
        out.push(Problem::error(
            "toolkit.run",
            "the CUDA installer needs `-n` next to `-s`: without it a silent install may reboot the machine by itself in the middle of the chain (NVIDIA's CUDA Installation Guide for Windows)",
        ));
    }
    if !m
        .driver
        .run
        .iter()
        .any(|a| a.eq_ignore_ascii_case("-noeula"))
    {
        out.push(Problem::warning(
            "driver.run",
            "NVIDIA's own CI passes `-noeula` to the driver's silent setup (`-s -noreboot -noeula`)",
        ));
    }
    out.extend(long_paths::check_rule(m));
    out
}

/// The Windows policy "Do not include drivers with Windows Updates": Windows Update offers no
/// driver with its quality (monthly) updates.
pub const WINDOWS_POLICY: [&str; 10] = [
    "reg",
    "add",
    r"HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate",
    "/v",
    "ExcludeWUDriversInQualityUpdate",
    "/t",
    "REG_DWORD",
    "/d",
    "1",
    "/f",
];

/// The policy "Specify search order for device driver source locations" set to "Do not search
/// Windows Update": when a device is set up again (after a feature update, a new slot, a driver
/// removal), Windows uses the drivers in its store instead of fetching one. The policy key, not
/// the preference key under `CurrentVersion\DriverSearching`: Windows reads the policy first and
/// the Settings app may rewrite the preference (Microsoft's ADMX_DeviceSetup policy CSP,
/// `DriverSearchPlaces_SearchOrderConfiguration`).
pub const WINDOWS_DRIVER_SEARCH: [&str; 10] = [
    "reg",
    "add",
    r"HKLM\SOFTWARE\Policies\Microsoft\Windows\DriverSearching",
    "/v",
    "SearchOrderConfig",
    "/t",
    "REG_DWORD",
    "/d",
    "0",
    "/f",
];

/// The registry value that lifts MAX_PATH (260 characters) for programs that opt in, as
/// Python and pip do.
pub const LONG_PATHS_QUERY: [&str; 4] = [
    "query",
    r"HKLM\SYSTEM\CurrentControlSet\Control\FileSystem",
    "/v",
    "LongPathsEnabled",
];

/// `reg query … /v LongPathsEnabled` output → whether it is 1; `None` when the value is absent
/// or unreadable.
pub fn parse_long_paths_enabled(reg_output: &str) -> Option<bool> {
    let line = reg_output
        .lines()
        .find(|l| l.trim_start().starts_with("LongPathsEnabled"))?;
    let value = line.split_whitespace().last()?;
    let number = value.strip_prefix("0x").unwrap_or(value);
    u32::from_str_radix(number, 16).ok().map(|v| v == 1)
}

/// Whether pip can write the library's files: long paths enabled, or a venv root within the
/// limit the pinned wheels' deepest paths set ([`long_paths`]); for wheels stackpin has not
/// measured, within the audited figure ([`long_paths::AUDITED_DEEPEST_FOLDER`]). `None` when nothing stands in the way;
/// otherwise what to do, with the measured lengths.
pub fn long_path_problem(enabled: Option<bool>, m: &Manifest) -> Option<String> {
    let venv = m.library.venv.as_deref()?;
    m.library.pip.as_ref()?;
    if enabled == Some(true) {
        return None;
    }
    let limit = long_paths::venv_root_limit(m)?;
    let (why, max_root) = (long_paths::too_long(venv, &limit)?, limit.max_root);
    Some(format!(
        "{why}. LongPathsEnabled is not set on this machine: set \
         HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem\\LongPathsEnabled to 1 \
         (`reg add HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem /v LongPathsEnabled /t REG_DWORD /d 1 /f`), \
         or give `library.venv` a root of at most {max_root} characters such as C:\\stackpin\\<stack>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::version::v;

    #[test]
    fn cuda_13_lists_crt_and_nvvm_apart_from_nvcc_and_no_thrust() {
        let list = toolkit_subpackages("13.0");
        for name in [
            "nvcc_13.0",
            "crt_13.0",
            "nvvm_13.0",
            "cudart_13.0",
            "nvjitlink_13.0",
        ] {
            assert!(list.contains(&name.to_string()), "{name} in {list:?}");
        }
        assert!(!list.iter().any(|p| p.starts_with("thrust")), "{list:?}");
        assert!(!list.iter().any(|p| p.starts_with("Display")), "{list:?}");
    }

    #[test]
    fn cuda_13_2_and_later_add_thrust_and_the_ptx_compiler_as_nvidias_guide_lists() {
        for line in ["13.2", "13.4", "14.0"] {
            let list = toolkit_subpackages(line);
            for name in ["thrust", "nvptxcompiler", "nvcc", "crt", "nvvm"] {
                let package = format!("{name}_{line}");
                assert!(list.contains(&package), "{package} in {list:?}");
            }
        }
        let list = toolkit_subpackages("13.1");
        assert!(!list.iter().any(|p| p.starts_with("thrust")), "{list:?}");
        assert!(!list.iter().any(|p| p.starts_with("nvptx")), "{list:?}");
    }

    #[test]
    fn cuda_12_is_pytorchs_list_with_nvjitlink() {
        let list = toolkit_subpackages("12.4");
        assert_eq!(list.len(), CUDA_12_HEAD.len() + CUDA_LIBRARIES.len());
        for name in [
            "nvcc_12.4",
            "thrust_12.4",
            "nvjitlink_12.4",
            "cublas_dev_12.4",
        ] {
            assert!(list.contains(&name.to_string()), "{name} in {list:?}");
        }
        assert!(!list.iter().any(|p| p.starts_with("crt_")), "{list:?}");
        assert!(
            !toolkit_subpackages("11.8")
                .iter()
                .any(|p| p.starts_with("nvjitlink"))
        );
    }

    #[test]
    fn the_toolkit_step_is_silent_and_never_reboots_by_itself() {
        let run = toolkit_run("12.4");
        assert_eq!(&run[..3], ["{installer}", "-s", "-n"]);
    }

    #[test]
    fn the_driver_step_accepts_the_eula_and_reads_1_as_reboot() {
        assert_eq!(driver_run(), ["{installer}", "-s", "-noreboot", "-noeula"]);
        assert!(driver_exit_codes().reboot.contains(&1));
    }

    #[test]
    fn card_names_map_to_their_driver_package() {
        use CardFamily::*;
        let cases = [
            ("NVIDIA GeForce RTX 4090", GeForce),
            ("NVIDIA GeForce RTX 3060 Laptop GPU", GeForce),
            ("NVIDIA TITAN RTX", GeForce),
            ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", GeForce),
            ("NVIDIA H100 80GB HBM3", DataCenter),
            ("NVIDIA A100-SXM4-40GB", DataCenter),
            ("NVIDIA L4", DataCenter),
            ("NVIDIA A10G", DataCenter),
            ("NVIDIA A10", DataCenter),
            ("NVIDIA A100 80GB PCIe", DataCenter),
            ("Tesla T4", DataCenter),
            ("Tesla V100-PCIE-16GB", DataCenter),
            ("NVIDIA RTX A6000", DataCenter),
            ("NVIDIA RTX 6000 Ada Generation", DataCenter),
            ("NVIDIA RTX A4000", RtxWorkstation),
            ("NVIDIA RTX 4000 Ada Generation", RtxWorkstation),
            ("Quadro RTX 5000", RtxWorkstation),
            ("NVIDIA GeForce GTX 1080 Ti", GeForce),
        ];
        for (name, family) in cases {
            assert_eq!(card_family(name), family, "{name}");
        }
    }

    /// The shipped torch 2.14.0 cu130 Windows stack with its venv at `venv`.
    fn torch_cu130_at(venv: &str) -> Manifest {
        let text = include_str!("../manifests/torch-2.14.0-cu130-windows.yaml");
        let mut m = crate::manifest::parse(text, std::path::Path::new("torch-cu130.yaml"))
            .expect("the shipped manifest parses");
        m.library.venv = Some(venv.to_string());
        m
    }

    #[test]
    fn a_long_venv_without_long_paths_is_stopped_with_the_measured_lengths() {
        let long = r"C:\Users\someone.with.a.long.name\AppData\Local\stackpin\venvs\torch-2.14.0-cu130-windows-for-the-vision-team";
        assert!(long.len() > 67);
        let m = torch_cu130_at(long);
        let why = long_path_problem(Some(false), &m).expect("stopped");
        assert!(why.contains("LongPathsEnabled"), "{why}");
        assert!(
            why.contains(&format!("is {} characters", long.len())),
            "{why}"
        );
        assert!(why.contains("torch==2.14.0+cu130"), "{why}");
        assert!(why.contains("not measured"), "{why}");
        assert!(why.contains("at most 67"), "{why}");
        assert!(
            long_path_problem(None, &m).is_some(),
            "unknown is not enabled"
        );
        assert_eq!(long_path_problem(Some(true), &m), None);
        let short = torch_cu130_at(r"C:\stackpin\torch-2.14.0-cu130-windows");
        assert_eq!(
            long_path_problem(Some(false), &short),
            None,
            "a short root needs no long paths"
        );
    }

    #[test]
    fn unmeasured_cu130_wheels_hold_a_70_character_root_to_the_audited_limit() {
        // No cu130 build has a row in data/wheel-paths.yaml: the audit's 179 characters apply.
        let root = format!(r"C:\stackpin\{}", "v".repeat(70 - 12));
        assert_eq!(root.chars().count(), 70);
        let mut m = torch_cu130_at(&root);
        if let Some(pip) = m.library.pip.as_mut() {
            pip.requirements = vec!["torch==2.15.0".into(), "torchvision==0.30.0".into()];
        }
        let limit = long_paths::venv_root_limit(&m).expect("a limit");
        assert_eq!(limit.max_root, 67, "{limit:?}");
        let why = long_path_problem(Some(false), &m).expect("refused without long paths");
        assert!(why.contains("is 70 characters"), "{why}");
        assert!(why.contains("179 characters"), "{why}");
        assert!(why.contains("at most 67"), "{why}");
        assert_eq!(long_path_problem(Some(true), &m), None);
        let warned = check_rules(&m);
        assert!(
            warned
                .iter()
                .any(|p| p.field == "library.venv" && p.message.contains("LongPathsEnabled")),
            "{warned:?}"
        );
        let short = format!(r"C:\stackpin\{}", "v".repeat(67 - 12));
        let mut ok = torch_cu130_at(&short);
        ok.library.pip = m.library.pip.clone();
        assert_eq!(long_path_problem(Some(false), &ok), None);
        assert!(!check_rules(&ok).iter().any(|p| p.field == "library.venv"));
    }

    #[test]
    fn check_warns_about_a_root_past_the_pinned_wheels_limit() {
        let root = format!(r"C:\{}", "v".repeat(110));
        let problems = check_rules(&torch_cu130_at(&root));
        let warning = problems
            .iter()
            .find(|p| p.field == "library.venv")
            .unwrap_or_else(|| panic!("warned: {problems:?}"));
        let text = &warning.message;
        assert!(text.contains("LongPathsEnabled"), "{text}");
        assert!(text.contains("113 characters"), "the root's length: {text}");
        assert!(
            check_rules(&torch_cu130_at(r"C:\stackpin\torch-2.14.0-cu130-windows"))
                .iter()
                .all(|p| p.field != "library.venv")
        );
    }

    #[test]
    fn reg_query_output_says_whether_long_paths_are_on() {
        let on = "\r\nHKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\FileSystem\r\n    LongPathsEnabled    REG_DWORD    0x1\r\n\r\n";
        assert_eq!(parse_long_paths_enabled(on), Some(true));
        assert_eq!(
            parse_long_paths_enabled(&on.replace("0x1", "0x0")),
            Some(false)
        );
        assert_eq!(
            parse_long_paths_enabled(
                "ERROR: The system was unable to find the specified registry key or value."
            ),
            None
        );
    }

    #[test]
    fn data_center_urls_follow_nvidias_tesla_path() {
        let url = driver_url_for(&v("581.15"), Some("NVIDIA H100 80GB HBM3"), false);
        assert_eq!(
            url,
            "https://us.download.nvidia.com/tesla/581.15/581.15-data-center-tesla-desktop-win10-win11-64bit-dch-international.exe"
        );
        assert!(
            driver_url_for(&v("581.15"), None, false).contains("/Windows/581.15/581.15-desktop-")
        );
        assert!(
            driver_url_for(&v("581.15"), Some("NVIDIA RTX A4000"), false)
                .contains("Quadro_Certified")
        );
    }
}
