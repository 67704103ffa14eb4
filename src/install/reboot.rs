//! `install --reboot`: register a one-shot resume of the same command, then reboot. On Linux a
//! systemd unit that disables and deletes itself after it ran. On Windows a scheduled task that
//! starts at boot (`ONSTART`) as SYSTEM with highest privileges and runs `stackpin resume FILE`
//! (the resume's argv sits in FILE, beside `state.yaml`: no command-line length limit, no
//! quoting); the resumed stackpin deletes the task ([`delete_task`]) before the chain goes on, so
//! a chain that needs a second reboot registers a task that survives it. HKLM `RunOnce` only on explicit request: it runs only when
//! an administrator logs on interactively, holds up Explorer while it runs, silently drops
//! commands over 260 characters and may start without elevation. The texts are pure functions
//! (tested); registering and rebooting are child processes run by the CLI.

use std::path::{Path, PathBuf};

use crate::os::Os;

/// Name of the systemd unit, the scheduled task and the RunOnce value.
pub const RESUME_NAME: &str = "stackpin-resume";

/// The file beside `state.yaml` that holds the resume's argv (JSON array of strings).
pub const ARGV_FILE: &str = "resume-argv.json";

/// How the Windows resume is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WindowsResume {
    /// A one-shot scheduled task at boot, as SYSTEM, that removes itself (unattended).
    #[default]
    Task,
    /// HKLM RunOnce: runs at the next interactive administrator logon.
    RunOnce,
}

/// The command the resume runs after the reboot: the one the user ran (`install` or `up`, with
/// its manifest, `--gpu` and the rest), as `exe`, plus `--yes` (nobody is there to answer) and the
/// archive as an absolute `--archive` unless the command named one. The working directory is kept
/// by the unit or task, so relative paths in `ran` resolve as they did.
pub fn resume_argv(exe: &str, ran: &[String], archive: &Path) -> Vec<String> {
    let mut argv = vec![exe.to_string()];
    argv.extend(ran.iter().cloned());
    let has = |long: &str, short: Option<&str>| {
        ran.iter().any(|a| {
            a == long || short.is_some_and(|s| a == s) || a.starts_with(&format!("{long}="))
        })
    };
    if !has("--yes", Some("-y")) {
        argv.push("--yes".into());
    }
    if !has("--archive", None) {
        let archive = std::path::absolute(archive).unwrap_or_else(|_| archive.to_path_buf());
        argv.push("--archive".into());
        argv.push(archive.display().to_string());
    }
    argv
}

/// Why the resume's argv file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("cannot read the resume file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the resume file {} is not a JSON list of arguments", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the resume file {} holds no command", path.display())]
    Empty { path: PathBuf },
}

/// Where the argv file goes: beside the stack's `state.yaml`.
pub fn argv_path(state_path: &Path) -> PathBuf {
    state_path
        .parent()
        .map_or_else(|| PathBuf::from(ARGV_FILE), |dir| dir.join(ARGV_FILE))
}

/// The argv file's text: a JSON array, so any argument survives whole.
pub fn argv_file_text(argv: &[String]) -> String {
    let mut text = serde_json::to_string_pretty(argv).unwrap_or_else(|_| "[]".to_string());
    text.push('\n');
    text
}

/// Reads an argv file back.
pub fn read_argv_file(path: &Path) -> Result<Vec<String>, ResumeError> {
    let text = crate::fsutil::read_text(path).map_err(|source| ResumeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let argv: Vec<String> = serde_json::from_str(&text).map_err(|source| ResumeError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    if argv.is_empty() {
        return Err(ResumeError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(argv)
}

/// How long after boot the resume task starts: Task Scheduler's `BootTrigger` `Delay` (an
/// XML duration; `schtasks /Create /SC ONSTART /DELAY 0002:00` writes the same element).
pub const BOOT_DELAY: &str = "PT2M";

/// The Task Scheduler XML of the resume: boot trigger, SYSTEM (S-1-5-18) with highest
/// privileges, no time limit, not stopped on battery; one action, `exe resume argv_file`. No
/// second action deletes the task: Task Scheduler runs actions in order, so it would delete the
/// task the resumed chain had just registered for its next reboot (`stackpin resume` deletes
/// this one first, with [`delete_task`]). The trigger waits [`BOOT_DELAY`] after boot, so the
/// chain starts once the services Windows brings up at boot (Windows Update among them) have
/// settled, not in their first minute.
pub fn task_xml(exe: &Path, argv_file: &Path, workdir: &Path) -> String {
    let esc = |p: &Path| xml_escape(&p.display().to_string());
    format!(
        r#"<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>Written by stackpin install --reboot: resumes the install chain once after the reboot; the resumed stackpin deletes this task.</Description>
  </RegistrationInfo>
  <Triggers>
    <BootTrigger>
      <Enabled>true</Enabled>
      <Delay>{BOOT_DELAY}</Delay>
    </BootTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <UserId>S-1-5-18</UserId>
      <RunLevel>HighestAvailable</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <StartWhenAvailable>true</StartWhenAvailable>
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>
    <Enabled>true</Enabled>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>"{exe}"</Command>
      <Arguments>resume "{file}"</Arguments>
      <WorkingDirectory>{workdir}</WorkingDirectory>
    </Exec>
  </Actions>
</Task>
"#,
        exe = esc(exe),
        file = esc(argv_file),
        workdir = esc(workdir),
    )
}

/// The command that deletes the boot task, run by `stackpin resume` before the chain goes on.
pub fn delete_task() -> Vec<String> {
    ["schtasks", "/Delete", "/TN", RESUME_NAME, "/F"]
        .map(String::from)
        .to_vec()
}

/// Task Scheduler reads its XML as UTF-16 (what it exports): little-endian with a BOM.
pub fn utf16_file(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where the task XML is written before `schtasks /Create /XML` reads it.
pub fn task_xml_path(state_path: &Path) -> PathBuf {
    argv_path(state_path).with_file_name(format!("{RESUME_NAME}.xml"))
}

/// Where the Linux unit is written.
pub fn unit_path() -> PathBuf {
    // Spelled out, not joined: a Linux path keeps its `/` even in a build for Windows.
    PathBuf::from(format!("/etc/systemd/system/{RESUME_NAME}.service"))
}

/// The systemd unit that runs `argv` once after the next boot, then removes itself.
pub fn systemd_unit(argv: &[String], workdir: &Path) -> String {
    let command = argv
        .iter()
        .map(|a| systemd_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let unit = unit_path();
    format!(
        "# Written by stackpin install --reboot: resumes the install chain once, then removes itself.\n\
         [Unit]\n\
         Description=stackpin: resume the install chain after the driver reboot\n\
         After=network-online.target\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         WorkingDirectory={workdir}\n\
         ExecStart={command}\n\
         ExecStartPost=/bin/systemctl disable {RESUME_NAME}.service\n\
         ExecStartPost=/bin/rm -f {unit}\n\
         StandardOutput=journal+console\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        workdir = workdir.display(),
        unit = unit.display(),
    )
}

/// systemd splits ExecStart like a shell without expansion; double quotes keep spaces together.
fn systemd_quote(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '"', '\\', '\'', '%', '$', ';']) {
        arg.to_string()
    } else {
        format!(
            "\"{}\"",
            arg.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('%', "%%")
                .replace('$', "$$")
        )
    }
}

/// The command lines that register the resume and reboot, in order. On Windows `task_xml` is
/// the file written by [`task_xml`] (ignored for RunOnce); `argv` is used by RunOnce only.
pub fn register_and_reboot(
    os: Os,
    how: WindowsResume,
    argv: &[String],
    workdir: &Path,
    task_xml: &Path,
) -> Vec<Vec<String>> {
    let reboot = vec![
        "shutdown".to_string(),
        "/r".to_string(),
        "/t".to_string(),
        "5".to_string(),
    ];
    match (os, how) {
        (Os::Linux, _) => vec![
            vec!["systemctl".into(), "daemon-reload".into()],
            vec![
                "systemctl".into(),
                "enable".into(),
                format!("{RESUME_NAME}.service"),
            ],
            vec!["systemctl".into(), "reboot".into()],
        ],
        (Os::Windows, WindowsResume::Task) => vec![
            vec![
                "schtasks".into(),
                "/Create".into(),
                "/TN".into(),
                RESUME_NAME.into(),
                "/XML".into(),
                task_xml.display().to_string(),
                "/F".into(),
            ],
            reboot,
        ],
        (Os::Windows, WindowsResume::RunOnce) => {
            let command = format!(
                "cmd /c cd /d \"{}\" && {}",
                workdir.display(),
                argv.iter()
                    .map(|a| if a.contains(' ') {
                        format!("\"{a}\"")
                    } else {
                        a.clone()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            vec![
                vec![
                    "reg".into(),
                    "add".into(),
                    r"HKLM\Software\Microsoft\Windows\CurrentVersion\RunOnce".into(),
                    "/v".into(),
                    RESUME_NAME.into(),
                    "/t".into(),
                    "REG_SZ".into(),
                    "/d".into(),
                    command,
                    "/f".into(),
                ],
                reboot,
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_resume_runs_what_was_run_with_yes_and_the_archive() {
        let ran: Vec<String> = ["up", "torch.yaml", "--reboot", "--gpu", "1"]
            .map(String::from)
            .to_vec();
        let archive = Path::new("/srv/lab/installers");
        let argv = resume_argv("/usr/local/bin/stackpin", &ran, archive);
        // Absolute as the OS spells it (`Z:\\srv\\lab\\installers` under Wine).
        let absolute = std::path::absolute(archive).expect("absolute");
        let mut want: Vec<String> = [
            "/usr/local/bin/stackpin",
            "up",
            "torch.yaml",
            "--reboot",
            "--gpu",
            "1",
            "--yes",
            "--archive",
        ]
        .map(String::from)
        .to_vec();
        want.push(absolute.display().to_string());
        assert_eq!(argv, want);
        let given: Vec<String> = ["install", "t.yaml", "-y", "--archive=/a"]
            .map(String::from)
            .to_vec();
        let argv = resume_argv("stackpin", &given, Path::new("/ignored"));
        assert_eq!(argv[1..], given[..], "nothing added twice");
    }

    use super::*;

    #[test]
    fn the_unit_runs_the_same_command_once_and_removes_itself() {
        let argv = vec![
            "/usr/local/bin/stackpin".to_string(),
            "install".to_string(),
            "/srv/my stacks/torch.yaml".to_string(),
            "--yes".to_string(),
        ];
        let unit = systemd_unit(&argv, Path::new("/srv"));
        assert!(unit.contains(
            "ExecStart=/usr/local/bin/stackpin install \"/srv/my stacks/torch.yaml\" --yes"
        ));
        assert!(unit.contains("Type=oneshot"));
        assert!(unit.contains("ExecStartPost=/bin/systemctl disable stackpin-resume.service"));
        assert!(
            unit.contains("ExecStartPost=/bin/rm -f /etc/systemd/system/stackpin-resume.service")
        );
        assert!(unit.contains("WantedBy=multi-user.target"));
    }

    #[test]
    fn windows_registers_a_boot_task_from_its_xml_then_reboots() {
        let steps = register_and_reboot(
            Os::Windows,
            WindowsResume::Task,
            &[],
            Path::new(r"C:\stacks"),
            Path::new(r"C:\archive\t\stackpin-resume.xml"),
        );
        assert_eq!(
            steps[0],
            [
                "schtasks",
                "/Create",
                "/TN",
                "stackpin-resume",
                "/XML",
                r"C:\archive\t\stackpin-resume.xml",
                "/F"
            ]
        );
        assert_eq!(steps[1][0], "shutdown");
        assert_eq!(steps.len(), 2);
    }

    #[test]
    fn the_task_starts_at_boot_as_system_elevated_and_runs_the_argv_file_only() {
        let xml = task_xml(
            Path::new(r"C:\Tools & more\stackpin.exe"),
            Path::new(r"C:\Users\A Very Long User Name\stackpin\installers\t\resume-argv.json"),
            Path::new(r"C:\stacks"),
        );
        assert!(xml.contains("<BootTrigger>"), "{xml}");
        assert!(
            xml.contains("<Delay>PT2M</Delay>"),
            "the boot trigger waits two minutes: {xml}"
        );
        assert!(xml.contains("<UserId>S-1-5-18</UserId>"), "SYSTEM: {xml}");
        assert!(
            xml.contains("<RunLevel>HighestAvailable</RunLevel>"),
            "{xml}"
        );
        assert!(
            xml.contains("<ExecutionTimeLimit>PT0S</ExecutionTimeLimit>"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<Command>"C:\Tools &amp; more\stackpin.exe"</Command>"#),
            "escaped: {xml}"
        );
        assert!(
            xml.contains(r#"<Arguments>resume "C:\Users\A Very Long User Name\stackpin\installers\t\resume-argv.json"</Arguments>"#),
            "{xml}"
        );
        assert_eq!(
            xml.matches("<Exec>").count(),
            1,
            "no second action deletes the task after the resume registered the next one: {xml}"
        );
        assert_eq!(
            delete_task(),
            ["schtasks", "/Delete", "/TN", "stackpin-resume", "/F"]
        );
        let bytes = utf16_file(&xml);
        assert_eq!(&bytes[..4], &[0xFF, 0xFE, b'<', 0], "UTF-16LE with a BOM");
    }

    #[test]
    fn the_argv_file_sits_beside_state_yaml_and_keeps_every_argument_whole() {
        let state = Path::new("/archive/torch-2.5.1/state.yaml");
        let path = argv_path(state);
        assert_eq!(path, Path::new("/archive/torch-2.5.1/resume-argv.json"));
        let argv: Vec<String> = [
            r"C:\Program Files\stackpin\stackpin.exe",
            "install",
            r#"C:\my "quoted" stacks\t.yaml"#,
            "--yes",
        ]
        .map(String::from)
        .to_vec();
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(ARGV_FILE);
        std::fs::write(&file, argv_file_text(&argv)).expect("write");
        assert_eq!(read_argv_file(&file).expect("read back"), argv);
        std::fs::write(&file, "[]").expect("write");
        assert!(matches!(
            read_argv_file(&file),
            Err(ResumeError::Empty { .. })
        ));
    }

    #[test]
    fn run_once_is_still_there_when_asked_for() {
        let argv = vec![
            r"C:\Tools\stackpin.exe".to_string(),
            "install".to_string(),
            r"C:\stacks\t.yaml".to_string(),
        ];
        let steps = register_and_reboot(
            Os::Windows,
            WindowsResume::RunOnce,
            &argv,
            Path::new(r"C:\stacks"),
            Path::new("unused.xml"),
        );
        assert!(
            steps[0]
                .iter()
                .any(|a| a.ends_with(r"CurrentVersion\RunOnce"))
        );
        assert!(
            steps[0]
                .iter()
                .any(|a| a.contains(r"C:\Tools\stackpin.exe install"))
        );
        assert_eq!(steps[1][0], "shutdown");
    }

    #[test]
    fn percent_and_dollar_are_escaped_for_systemd() {
        assert_eq!(systemd_quote("a%b"), "\"a%%b\"");
        assert_eq!(systemd_quote("$HOME"), "\"$$HOME\"");
        assert_eq!(systemd_quote("plain"), "plain");
    }
}
