//! Semantic rules that need no release data: names, URLs, checksums, file names, placeholders,
//! the toolkit step not installing a driver, versioned toolkit folders, OS sanity. Every problem
//! is collected, none stops the others. Release-note rules are in `check`; the rules of
//! `toolkit.source` are `toolkit_wheels`'s (check runs both).

use serde::Serialize;

use super::placeholder::{Command, Placeholder, placeholders};
use super::{Installer, Layer, Manifest, Role, file_name_from_url};
use crate::os::Os;

/// How bad a problem is: errors fail `check` (exit 1); warnings are shown and allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding about a manifest, tied to the field it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub severity: Severity,
    /// Dotted field path with list indices: `toolkit.run[3]`.
    pub field: String,
    /// What is wrong and what to do, in one sentence or two.
    pub message: String,
    /// 1-based line of the field in the manifest, where it could be placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Problem {
    pub fn error(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            field: field.into(),
            message: message.into(),
            line: None,
        }
    }

    pub fn warning(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            field: field.into(),
            message: message.into(),
            line: None,
        }
    }
}

/// Runs every rule that needs no release data and returns all problems found.
pub fn validate(m: &Manifest) -> Vec<Problem> {
    let mut out = Vec::new();
    check_name(m, &mut out);
    check_installer("driver.installer", &m.driver.installer, m.os, &mut out);
    if let Some(installer) = &m.toolkit.installer {
        check_installer("toolkit.installer", installer, m.os, &mut out);
    }
    for (i, inst) in m.library.installers.iter().enumerate() {
        check_installer(&format!("library.installers[{i}]"), inst, m.os, &mut out);
    }
    check_argv(
        "driver.run",
        &m.driver.run,
        Command::LayerRun,
        true,
        &mut out,
    );
    if m.toolkit.source == super::ToolkitSource::Runfile {
        check_argv(
            "toolkit.run",
            &m.toolkit.run,
            Command::LayerRun,
            true,
            &mut out,
        );
    }
    check_verify("driver.verify", m.driver.verify.as_deref(), &mut out);
    check_verify("toolkit.verify", m.toolkit.verify.as_deref(), &mut out);
    check_verify("library.verify", m.library.verify.as_deref(), &mut out);
    check_toolkit_step(m, &mut out);
    for layer in Layer::ORDER {
        if let Some(codes) = m.exit_codes(layer) {
            super::exit_codes::validate(&format!("{layer}.exit_codes"), codes, &mut out);
        }
    }
    check_toolkit_root(m, &mut out);
    check_library(m, &mut out);
    check_example(m, &mut out);
    check_mirror(m, &mut out);
    let mut prerequisites = Vec::new();
    super::prerequisites::check_prerequisites(m, &mut prerequisites);
    out.extend(
        prerequisites
            .into_iter()
            .map(|(field, message)| Problem::error(field, message)),
    );
    out
}

fn check_name(m: &Manifest, out: &mut Vec<Problem>) {
    let ok = !m.name.is_empty()
        && m.name != "."
        && m.name != ".."
        && m.name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if !ok {
        out.push(Problem::error(
            "name",
            format!(
                "`{}` cannot name the stack's archive folder; use lowercase letters, digits, `.`, `_` and `-` only (e.g. torch-2.5.1-cu124-linux)",
                super::shown_value(&m.name)
            ),
        ));
    }
}

fn check_installer(field: &str, inst: &Installer, os: Os, out: &mut Vec<Problem>) {
    check_url(
        &format!("{field}.url"),
        &inst.url,
        inst.sha256.is_some(),
        out,
    );
    if let Some(sha) = &inst.sha256
        && !is_sha256(sha)
    {
        out.push(Problem::error(
            format!("{field}.sha256"),
            format!(
                "`{sha}` is not a SHA-256: expected 64 hexadecimal characters; remove the line to let the lock record it at the first fetch"
            ),
        ));
    }
    match file_name_from_url(&inst.url) {
        None => out.push(Problem::error(
            format!("{field}.url"),
            "the URL names no file (it ends with `/`); point it at the installer file itself",
        )),
        Some(name) => {
            if let Some(why) = unsafe_file_name(&name) {
                out.push(Problem::error(
                    format!("{field}.url"),
                    format!("the file name `{name}` taken from the URL is unsafe: {why}"),
                ));
            }
            check_os_extension(field, &name, os, out);
        }
    }
}

/// Lowercase or uppercase hex, exactly 64 characters.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check_url(field: &str, url: &str, pinned: bool, out: &mut Vec<Problem>) {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        if url.len() <= "https://".len() {
            out.push(Problem::error(field, "the URL has no host"));
        }
    } else if lower.starts_with("http://") {
        // Loopback http never leaves the machine (a local test server or a file proxy on the
        // workstation itself), and the lock still records and checks its hash.
        if !pinned && !is_loopback_http(&lower) {
            out.push(Problem::error(
                field,
                format!(
                    "`{url}` is plain http and its sha256 is not pinned, so nothing could prove the download is intact; use https, or pin `sha256:` for this file"
                ),
            ));
        }
    } else {
        out.push(Problem::error(
            field,
            format!("`{url}` is not an https URL"),
        ));
    }
}

/// True for `http://127.0.0.1…`, `http://localhost…` and `http://[::1]…`.
pub fn is_loopback_http(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// Why a file name cannot be stored in the archive, if it cannot.
pub fn unsafe_file_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("it points at a folder, not a file (`.` or `..`)")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.bytes().any(|b| b < 0x20 || b == 0x7f) {
        Some("it contains control characters")
    } else if name.chars().any(|c| "<>:\"|?*".contains(c)) {
        Some("it contains a character Windows forbids in file names (<>:\"|?*)")
    } else if name.ends_with(".partial") || name.ends_with(".lock") {
        Some("its extension is one stackpin reserves for its own files")
    } else {
        None
    }
}

fn check_os_extension(field: &str, name: &str, os: Os, out: &mut Vec<Problem>) {
    let lower = name.to_ascii_lowercase();
    match os {
        Os::Windows if lower.ends_with(".run") => out.push(Problem::error(
            format!("{field}.url"),
            format!("`{name}` is a Linux `.run` installer but the manifest says `os: windows`; use the Windows `.exe` or set `os: linux`"),
        )),
        Os::Linux if lower.ends_with(".exe") || lower.ends_with(".msi") => out.push(Problem::error(
            format!("{field}.url"),
            format!("`{name}` is a Windows installer but the manifest says `os: linux`; use the Linux `.run` or set `os: windows`"),
        )),
        _ => {}
    }
}

fn check_argv(
    field: &str,
    argv: &[String],
    command: Command,
    needs_installer: bool,
    out: &mut Vec<Problem>,
) {
    if argv.is_empty() || argv[0].trim().is_empty() {
        out.push(Problem::error(
            field,
            "the command is empty; give the program and its arguments as a list, e.g. [\"sh\", \"{installer}\", \"--silent\"]",
        ));
        return;
    }
    for (i, arg) in argv.iter().enumerate() {
        for name in placeholders(arg) {
            if !command.allows(name) {
                out.push(Problem::error(
                    format!("{field}[{i}]"),
                    format!(
                        "unknown placeholder `{{{name}}}`; here you can use {}",
                        command
                            .allowed()
                            .iter()
                            .map(|p| p.token())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    if needs_installer
        && !argv
            .iter()
            .any(|a| a.contains(&Placeholder::Installer.token()))
    {
        out.push(Problem::error(
            field,
            "the command never names `{installer}`, so it would not run the archived, verified file; add it where the installer goes",
        ));
    }
}

fn check_verify(field: &str, argv: Option<&[String]>, out: &mut Vec<Problem>) {
    if let Some(argv) = argv {
        check_argv(field, argv, Command::Verify, false, out);
    }
}

/// The toolkit step must never install a display driver: the driver layer owns it.
fn check_toolkit_step(m: &Manifest, out: &mut Vec<Problem>) {
    if m.toolkit.source == super::ToolkitSource::Wheels {
        return;
    }
    let run = &m.toolkit.run;
    let allowed = m.toolkit.allow_bundled_driver;
    let mut flag = |field: String, message: String| {
        if allowed {
            out.push(Problem::warning(
                field,
                format!("{message} (allowed by `toolkit.allow_bundled_driver: true`)"),
            ));
        } else {
            out.push(Problem::error(field, message));
        }
    };
    match m.os {
        Os::Linux => {
            if let Some(i) = run
                .iter()
                .position(|a| a == "--driver" || a.starts_with("--driver="))
            {
                flag(
                    format!("toolkit.run[{i}]"),
                    "`--driver` makes the CUDA runfile install its bundled driver over the pinned one; remove it (the driver layer installs the driver)".into(),
                );
            }
            if !run.iter().any(|a| a == "--toolkit") {
                flag(
                    "toolkit.run".into(),
                    "the CUDA runfile needs `--toolkit` to install the toolkit alone; without it a silent install also installs the bundled driver".into(),
                );
            }
        }
        Os::Windows => {
            if let Some(i) = run
                .iter()
                .position(|a| a.eq_ignore_ascii_case("Display.Driver"))
            {
                flag(
                    format!("toolkit.run[{i}]"),
                    "`Display.Driver` installs the toolkit's bundled display driver over the pinned one; remove it (the driver layer installs the driver)".into(),
                );
            }
            let subpackages = run
                .iter()
                .skip(1)
                .filter(|a| is_windows_subpackage(a))
                .count();
            if subpackages == 0 {
                flag(
                    "toolkit.run".into(),
                    "a bare `-s` installs every sub-package including the display driver; list the sub-packages to install, e.g. `nvcc_12.4 cudart_12.4 cublas_12.4 cublas_dev_12.4`".into(),
                );
            }
        }
    }
}

/// `nvcc_12.4`, `cudart_13.0`: a word followed by `_X.Y`, not a flag or a path.
fn is_windows_subpackage(arg: &str) -> bool {
    !arg.starts_with('-')
        && !arg.starts_with('/')
        && !arg.contains('{')
        && !arg.contains('\\')
        && arg.rsplit_once('_').is_some_and(|(name, ver)| {
            !name.is_empty()
                && ver.contains('.')
                && ver
                    .split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn check_toolkit_root(m: &Manifest, out: &mut Vec<Problem>) {
    let line = m.toolkit.version.major_minor();
    let root = m.toolkit.root.trim_end_matches(['/', '\\']);
    let last = root.rsplit(['/', '\\']).next().unwrap_or(root);
    let (expected, example) = match m.os {
        Os::Linux => (format!("cuda-{line}"), format!("/usr/local/cuda-{line}")),
        Os::Windows => (
            format!("v{line}"),
            format!(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v{line}"),
        ),
    };
    if !last.eq_ignore_ascii_case(&expected) {
        out.push(Problem::error(
            "toolkit.root",
            format!(
                "`{}` is not the versioned folder of CUDA {line}: toolkits live side by side, each in a folder named `{expected}` (e.g. `{example}`)",
                m.toolkit.root
            ),
        ));
    }
    let absolute = match m.os {
        Os::Linux => root.starts_with('/'),
        Os::Windows => root.len() > 2 && root.as_bytes()[1] == b':' || root.starts_with(r"\\"),
    };
    if !absolute {
        out.push(Problem::error(
            "toolkit.root",
            format!(
                "`{}` is not an absolute path; write the full folder, e.g. `{example}`",
                m.toolkit.root
            ),
        ));
    }
}

fn check_library(m: &Manifest, out: &mut Vec<Problem>) {
    let lib = &m.library;
    if lib.cuda.major_minor() != m.toolkit.version.major_minor() {
        out.push(Problem::error(
            "library.cuda",
            format!(
                "the library build is for CUDA {} but the toolkit is {}; install the toolkit line the library's release notes name ({}), do not mix lines",
                lib.cuda,
                m.toolkit.version,
                lib.cuda.major_minor()
            ),
        ));
    }
    match (&lib.pip, lib.installers.is_empty()) {
        (Some(_), false) => out.push(Problem::error(
            "library",
            "give either `pip:` (pip libraries) or `installers:` with `run:` (other libraries), not both",
        )),
        (None, true) => out.push(Problem::error(
            "library",
            "nothing installs the library: add `pip: {requirements: [...]}` or `installers:` with `run:`",
        )),
        _ => {}
    }
    if let Some(pip) = &lib.pip {
        if pip.requirements.is_empty() {
            out.push(Problem::error(
                "library.pip.requirements",
                format!(
                    "no requirements; add at least `{}=={}`",
                    lib.name, lib.version
                ),
            ));
        }
        for (i, req) in pip.requirements.iter().enumerate() {
            if req.trim().is_empty() || req.trim_start().starts_with('-') {
                out.push(Problem::error(
                    format!("library.pip.requirements[{i}]"),
                    format!("`{req}` is not a requirement; write `package==version` (options go in the manifest's fields, not here)"),
                ));
            }
        }
        if let Some(url) = &pip.index_url {
            check_url("library.pip.index_url", url, false, out);
        }
        for (i, url) in pip.extra_index_urls.iter().enumerate() {
            check_url(
                &format!("library.pip.extra_index_urls[{i}]"),
                url,
                false,
                out,
            );
            if pip.index_url.as_deref() == Some(url.as_str()) {
                out.push(Problem::warning(
                    format!("library.pip.extra_index_urls[{i}]"),
                    "the same URL as index_url; remove it",
                ));
            }
        }
        if lib.venv.is_none() {
            out.push(Problem::error(
                "library.venv",
                format!(
                    "pip libraries go into their own virtual environment (current distributions refuse system-wide pip, PEP 668); add e.g. `venv: {}`",
                    match m.os {
                        Os::Linux => format!("/opt/stackpin/{}", m.name),
                        Os::Windows => format!(r"C:\stackpin\{}", m.name),
                    }
                ),
            ));
        }
        if lib.run.is_some() {
            out.push(Problem::warning(
                "library.run",
                "ignored for pip libraries: stackpin installs them offline from the archive with pip",
            ));
        }
    } else if !lib.installers.is_empty() {
        if lib.installer != crate::manifest::LibraryInstaller::Pip {
            out.push(Problem::error(
                "library.installer",
                "`installer` chooses what installs pip wheels; a library with `installers:` is installed by its `run:` command: remove it",
            ));
        }
        match &lib.run {
            Some(run) => check_argv("library.run", run, Command::LibraryRun, true, out),
            None => out.push(Problem::error(
                "library.run",
                "library installers need a `run:` command that installs `{installer}`",
            )),
        }
    }
}

fn check_example(m: &Manifest, out: &mut Vec<Problem>) {
    check_argv("example.run", &m.example.run, Command::Example, false, out);
    if m.example.batch == 0 {
        out.push(Problem::error(
            "example.batch",
            "the batch must be at least 1; the guide proves a stack at 64",
        ));
    }
    if !m
        .example
        .run
        .iter()
        .any(|a| a.contains(&Placeholder::Batch.token()))
    {
        out.push(Problem::warning(
            "example.run",
            "the example never receives `{batch}`, so `prove --batch` and `--fit` cannot change its batch size",
        ));
    }
    let line = m.vram.line;
    if !(line > 0.0 && line <= 1.0) {
        out.push(Problem::error(
            "vram.line",
            format!("{line} is not a share of VRAM; use a number above 0 and at most 1 (0.8 keeps peaks under 80%)"),
        ));
    }
    if let Some(i) = m.vram.batches.iter().position(|b| *b == 0) {
        out.push(Problem::error(
            format!("vram.batches[{i}]"),
            "batch sizes must be at least 1",
        ));
    }
    match (m.role, m.example.cycle_time_ms) {
        (Role::Inference, None) => out.push(Problem::warning(
            "example.cycle_time_ms",
            "an inference stack should state the line's cycle time so `prove` can check p99 latency against it",
        )),
        (_, Some(ms)) if ms.is_nan() || ms <= 0.0 => out.push(Problem::error(
            "example.cycle_time_ms",
            "the cycle time must be a positive number of milliseconds",
        )),
        _ => {}
    }
}

fn check_mirror(m: &Manifest, out: &mut Vec<Problem>) {
    if let Some(mirror) = &m.mirror {
        let lower = mirror.to_ascii_lowercase();
        // A lab mirror is often plain http on the LAN; every file from it is checked against
        // the lock, so http is acceptable here.
        if !(lower.starts_with("https://") || lower.starts_with("http://")) {
            out.push(Problem::error(
                "mirror",
                format!("`{mirror}` is not an http(s) URL of a static server that serves the archive folder"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_subpackages_are_recognised() {
        assert!(is_windows_subpackage("nvcc_12.4"));
        assert!(is_windows_subpackage("cublas_dev_12.4"));
        assert!(!is_windows_subpackage("-s"));
        assert!(!is_windows_subpackage("{installer}"));
        assert!(!is_windows_subpackage("Display.Driver"));
    }

    #[test]
    fn unsafe_names_are_refused() {
        assert!(unsafe_file_name("..").is_some());
        assert!(unsafe_file_name("a\\b.exe").is_some());
        assert!(unsafe_file_name("").is_some());
        assert!(unsafe_file_name("x.partial").is_some());
        assert!(unsafe_file_name("cuda_12.4.1_550.54.15_linux.run").is_none());
    }

    #[test]
    fn unpinned_http_is_allowed_only_for_loopback_hosts() {
        assert!(is_loopback_http("http://127.0.0.1:8080/x.run"));
        assert!(is_loopback_http("http://localhost/x.run"));
        assert!(is_loopback_http("http://[::1]:80/x.run"));
        assert!(!is_loopback_http("http://127.0.0.1.evil.test/x.run"));
        assert!(!is_loopback_http("http://localhost.evil.test/x.run"));
        assert!(!is_loopback_http("https://127.0.0.1/x.run"));
        let mut out = Vec::new();
        check_url("f", "http://127.0.0.1:9/x.run", false, &mut out);
        assert!(out.is_empty(), "{out:?}");
        check_url("f", "http://lab.test/x.run", false, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn sha256_shape() {
        assert!(is_sha256(&"a".repeat(64)));
        assert!(!is_sha256(&"a".repeat(63)));
        assert!(!is_sha256(&"g".repeat(64)));
    }
}
