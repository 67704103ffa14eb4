//! What NVIDIA's driver runfile wrote about its failure. In silent mode nvidia-installer ends
//! with "ERROR: Installation has failed.  Please see the file '/var/log/nvidia-installer.log'
//! for details."; the cause is the log's first `ERROR:` line ("The Nouveau kernel driver is
//! currently in use…"). Reads only the file the step's own output names, and only its start.

use std::io::Read;
use std::path::PathBuf;

/// How much of the log is read: the first `ERROR:` comes early, the log can be long.
const READ_CAP: u64 = 1 << 20;

/// The log file a failed runfile names in its last lines, if it names one.
pub fn named_log(tail: &[String]) -> Option<PathBuf> {
    tail.iter().rev().find_map(|line| {
        let start = line.find("see the file '")? + "see the file '".len();
        let end = line[start..].find('\'')?;
        Some(PathBuf::from(&line[start..start + end]))
    })
}

/// The first `ERROR:` line of the log the failed runfile names, with its path.
pub fn first_error(tail: &[String]) -> Option<(PathBuf, String)> {
    let path = named_log(tail)?;
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(READ_CAP)
        .read_to_string(&mut text)
        .ok()?;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ERROR:"))?;
    Some((path, line.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_error_line_of_the_named_log_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("nvidia-installer.log");
        std::fs::write(
            &log,
            "nvidia-installer log file\n-> Installing NVIDIA driver version 595.71.05.\n\
             ERROR: The Nouveau kernel driver is currently in use by your system.\n\
             ERROR: Installation has failed.\n",
        )
        .expect("log");
        let tail = vec![format!(
            "ERROR: Installation has failed.  Please see the file '{}' for details.",
            log.display()
        )];
        let (path, line) = first_error(&tail).expect("found");
        assert_eq!(path, log);
        assert_eq!(
            line,
            "ERROR: The Nouveau kernel driver is currently in use by your system."
        );
        assert_eq!(first_error(&["exit 1".to_string()]), None);
    }
}
