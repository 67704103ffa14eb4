//! `exit_codes:` on a layer: which installer exit codes mean success and which mean "succeeded,
//! reboot required". Installers disagree: Windows Installer packages use 3010/1641, NVIDIA's
//! display-driver setup exits 1 when a reboot is needed (Chocolatey's nvidia-display-driver
//! package lists 1 as a success code for that reason). The schema and its validation live here;
//! what a code means for the chain is `install::exit_codes`.

use serde::{Deserialize, Serialize};

use super::Problem;

/// The exit codes a layer's installer may end with, declared in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitCodes {
    /// Codes that mean the step succeeded (default `[0]`).
    #[serde(default = "default_success")]
    pub success: Vec<i32>,
    /// Codes that mean the step succeeded and the change takes effect after a reboot.
    #[serde(default)]
    pub reboot: Vec<i32>,
}

fn default_success() -> Vec<i32> {
    vec![0]
}

/// Problems with one layer's `exit_codes` (`field` is e.g. `driver.exit_codes`).
pub fn validate(field: &str, codes: &ExitCodes, out: &mut Vec<Problem>) {
    if codes.success.is_empty() {
        out.push(Problem::error(
            format!("{field}.success"),
            "no exit code means success, so every run would fail; list at least one (usually `[0]`)"
                .to_string(),
        ));
    }
    for code in &codes.reboot {
        if codes.success.contains(code) {
            out.push(Problem::error(
                format!("{field}.reboot"),
                format!(
                    "exit code {code} is listed both as success and as reboot; keep it in one list"
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(codes: &ExitCodes) -> Vec<Problem> {
        let mut out = Vec::new();
        validate("driver.exit_codes", codes, &mut out);
        out
    }

    #[test]
    fn a_code_in_both_lists_is_an_error() {
        let codes = ExitCodes {
            success: vec![0, 1],
            reboot: vec![1, 3010],
        };
        let found = problems(&codes);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].field, "driver.exit_codes.reboot");
        assert!(found[0].message.contains("exit code 1"));
    }

    #[test]
    fn an_empty_success_list_is_an_error() {
        let codes = ExitCodes {
            success: vec![],
            reboot: vec![3010],
        };
        assert_eq!(problems(&codes)[0].field, "driver.exit_codes.success");
    }

    #[test]
    fn success_defaults_to_zero_when_only_reboot_is_given() {
        let codes: ExitCodes =
            serde_saphyr::from_str("reboot: [1, 3010]\n").expect("exit codes parse");
        assert_eq!(codes.success, vec![0]);
        assert_eq!(codes.reboot, vec![1, 3010]);
        assert!(problems(&codes).is_empty());
    }
}
