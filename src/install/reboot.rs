//! `install --reboot`: register a one-shot resume of the same command, then reboot. On Linux a
//! systemd unit that disables and deletes itself after it ran; on Windows a `RunOnce` entry,
//! which Windows deletes before running it. The texts are pure functions (tested); registering
//! and rebooting are child processes run by the CLI as root/Administrator.

use std::path::{Path, PathBuf};

use crate::compat::Os;

/// Name of the systemd unit and the RunOnce value.
pub const RESUME_NAME: &str = "stackpin-resume";

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

/// The command lines that register the resume and reboot, in order.
pub fn register_and_reboot(os: Os, argv: &[String], workdir: &Path) -> Vec<Vec<String>> {
    match os {
        Os::Linux => vec![
            vec!["systemctl".into(), "daemon-reload".into()],
            vec![
                "systemctl".into(),
                "enable".into(),
                format!("{RESUME_NAME}.service"),
            ],
            vec!["systemctl".into(), "reboot".into()],
        ],
        Os::Windows => {
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
                vec!["shutdown".into(), "/r".into(), "/t".into(), "5".into()],
            ]
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn windows_registers_run_once_then_reboots() {
        let argv = vec![
            r"C:\Tools\stackpin.exe".to_string(),
            "install".to_string(),
            r"C:\stacks\t.yaml".to_string(),
        ];
        let steps = register_and_reboot(Os::Windows, &argv, Path::new(r"C:\stacks"));
        assert_eq!(steps.len(), 2);
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
