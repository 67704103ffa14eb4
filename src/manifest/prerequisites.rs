//! `driver.prerequisites`: the distribution packages the driver's kernel module is built with
//! (the headers for a kernel, the compiler, make, DKMS), named for one distribution so that
//! `fetch` can archive them with their dependencies and `install` can install them offline
//! before the driver. This file holds the field and its rules; the package client is the
//! archive's business.

use serde::{Deserialize, Serialize};

use super::Manifest;
use crate::os::Os;

/// The driver's build prerequisites for one distribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prerequisites {
    /// The target's `ID-VERSION_ID` from `/etc/os-release` (`debian-12`, `ubuntu-24.04`).
    pub distribution: String,
    /// The kernel the driver is built for (`6.1.0-28-amd64`): adds `linux-headers-<kernel>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Packages as apt names them (`gcc`, `make`, `dkms`), optionally `name=version`.
    #[serde(default)]
    pub packages: Vec<String>,
    /// apt source lines (`deb URL SUITE COMPONENT…`) the packages come from; when absent,
    /// `fetch` uses its own host's apt sources, which must be the same distribution's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The Debian architecture (`amd64`, the default).
    #[serde(default = "default_architecture")]
    pub architecture: String,
}

fn default_architecture() -> String {
    "amd64".into()
}

impl Prerequisites {
    /// Every package asked for: `packages`, then `linux-headers-<kernel>` when a kernel is named.
    pub fn requested(&self) -> Vec<String> {
        let mut all = self.packages.clone();
        if let Some(kernel) = &self.kernel {
            let headers = format!("linux-headers-{kernel}");
            if !all.contains(&headers) {
                all.push(headers);
            }
        }
        all
    }

    /// The package names asked for, without any `=version`.
    pub fn requested_names(&self) -> Vec<String> {
        self.requested()
            .iter()
            .map(|p| p.split('=').next().unwrap_or(p).to_string())
            .collect()
    }
}

/// A Debian package name (policy 5.6.1): lowercase letters, digits, `+`, `-`, `.`, two or more
/// characters, starting with a letter or digit (so never an option to apt-get).
pub fn is_package_name(name: &str) -> bool {
    name.len() >= 2
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b))
}

/// A Debian version (policy 5.6.12): `[epoch:]upstream[-revision]`, starting with a digit.
pub fn is_package_version(version: &str) -> bool {
    version.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+-~:".contains(&b))
}

/// Errors of `driver.prerequisites` as (field, message); `validate` collects them with the others.
pub fn check_prerequisites(m: &Manifest, out: &mut Vec<(String, String)>) {
    let Some(p) = &m.driver.prerequisites else {
        return;
    };
    let field = "driver.prerequisites";
    if m.os != Os::Linux {
        out.push(error(
            field,
            "prerequisites are distribution packages for the Linux driver's kernel module; remove them from a Windows stack",
        ));
    }
    if !is_distribution(&p.distribution) {
        out.push(error(
            format!("{field}.distribution"),
            format!(
                "`{}` is not a distribution; write the target's ID-VERSION_ID from /etc/os-release, e.g. debian-12 or ubuntu-24.04",
                p.distribution
            ),
        ));
    }
    if let Some(kernel) = &p.kernel
        && !is_package_name(&format!("linux-headers-{kernel}"))
    {
        out.push(error(
            format!("{field}.kernel"),
            format!("`{kernel}` is not a kernel release; write it as `uname -r` prints it on the target, e.g. 6.1.0-28-amd64"),
        ));
    }
    if p.requested().is_empty() {
        out.push(error(
            format!("{field}.packages"),
            "no package is named; list the build tools (e.g. [gcc, make, dkms]) and give `kernel:` for its headers",
        ));
    }
    for (i, package) in p.packages.iter().enumerate() {
        let (name, version) = match package.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (package.as_str(), None),
        };
        if !is_package_name(name) || version.is_some_and(|v| !is_package_version(v)) {
            out.push(error(
                format!("{field}.packages[{i}]"),
                format!("`{package}` is not a package as apt names it; write `name` or `name=version` (lowercase letters, digits, + - .)"),
            ));
        }
    }
    for (i, line) in p.sources.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() != Some(&"deb") || words.len() < 3 || line.contains(['\n', '\r']) {
            out.push(error(
                format!("{field}.sources[{i}]"),
                format!("`{line}` is not an apt source line; write `deb URL SUITE COMPONENT…` (options in [ ] after deb)"),
            ));
        }
    }
    if !is_package_name(&p.architecture) {
        out.push(error(
            format!("{field}.architecture"),
            format!(
                "`{}` is not a Debian architecture (amd64, arm64)",
                p.architecture
            ),
        ));
    }
}

fn error(field: impl Into<String>, message: impl Into<String>) -> (String, String) {
    (field.into(), message.into())
}

/// `debian-12`, `ubuntu-24.04`: an os-release ID, a dash, a VERSION_ID.
fn is_distribution(text: &str) -> bool {
    let Some((id, version)) = text.rsplit_once('-') else {
        return false;
    };
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        && !version.is_empty()
        && version.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_adds_its_headers_once() {
        let p = Prerequisites {
            distribution: "debian-12".into(),
            kernel: Some("6.1.0-28-amd64".into()),
            packages: vec!["gcc".into(), "make=4.3-4.1".into()],
            sources: vec![],
            architecture: "amd64".into(),
        };
        assert_eq!(
            p.requested(),
            ["gcc", "make=4.3-4.1", "linux-headers-6.1.0-28-amd64"]
        );
        assert_eq!(
            p.requested_names(),
            ["gcc", "make", "linux-headers-6.1.0-28-amd64"]
        );
    }

    #[test]
    fn names_versions_and_distributions_are_checked() {
        assert!(is_package_name("linux-headers-6.1.0-28-amd64"));
        assert!(is_package_name("g++"));
        assert!(!is_package_name("-o"));
        assert!(!is_package_name("Gcc"));
        assert!(is_package_version("4:12.2.0-3"));
        assert!(!is_package_version("latest"));
        assert!(is_distribution("debian-12"));
        assert!(is_distribution("ubuntu-24.04"));
        assert!(!is_distribution("bookworm"));
        assert!(!is_distribution("Debian 12"));
    }
}
