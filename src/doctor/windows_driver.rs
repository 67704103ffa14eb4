//! Who supplied the NVIDIA driver Windows is running, and when: `Win32_VideoController` read
//! through a PowerShell child. A driver whose provider is Microsoft (or whose version is not the
//! one stackpin installed) after a feature update is that update's signature.
//!
//! This module only asks and parses; deciding whether the driver drifted is `doctor`'s job.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::System;

/// How long PowerShell may take: its first start on a cold machine is slow.
const POWERSHELL_TIMEOUT: Duration = Duration::from_secs(60);

/// The query, as documented in the issue: one object per video controller, as JSON. The
/// DriverDate is formatted in PowerShell because 5.1 and 7 serialise `DateTime` differently
/// (`/Date(ms)/` against ISO 8601); both raw forms are still parsed for safety.
pub const QUERY: &str = "Get-CimInstance Win32_VideoController | \
     Select-Object Name,DriverVersion,DriverProviderName,DriverDate | ConvertTo-Json";

/// One video controller's driver, as Windows reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowsDriver {
    /// The adapter's name (`NVIDIA GeForce RTX 4070`), when reported.
    pub adapter: Option<String>,
    /// Windows' own version string (`32.0.15.6636`).
    pub windows_version: String,
    /// NVIDIA's version derived from it (`566.36`), when it has NVIDIA's shape.
    pub nvidia_version: Option<String>,
    /// `NVIDIA`, `Microsoft`, …
    pub provider: Option<String>,
    /// The driver's date, `YYYY-MM-DD`.
    pub date: Option<String>,
}

impl WindowsDriver {
    /// True when Microsoft, not NVIDIA, supplied the driver: what a feature update leaves.
    pub fn from_microsoft(&self) -> bool {
        self.provider
            .as_deref()
            .is_some_and(|p| p.to_ascii_lowercase().contains("microsoft"))
    }

    /// One line for the report: `566.36 (32.0.15.6636), provider Microsoft, dated 2024-12-02`.
    pub fn describe(&self) -> String {
        let version = match &self.nvidia_version {
            Some(v) => format!("{v} ({})", self.windows_version),
            None => self.windows_version.clone(),
        };
        format!(
            "{version}, provider {}, dated {}",
            self.provider.as_deref().unwrap_or("unknown"),
            self.date.as_deref().unwrap_or("unknown")
        )
    }
}

/// The raw object `ConvertTo-Json` prints.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawController {
    name: Option<String>,
    driver_version: Option<String>,
    driver_provider_name: Option<String>,
    driver_date: Option<serde_json::Value>,
}

/// NVIDIA's driver version from Windows' four-part one: the last five digits of the third and
/// fourth parts together, split 3 + 2 (`32.0.15.6636` → `566.36`, `31.0.15.5186` → `551.86`).
pub fn nvidia_version(windows_version: &str) -> Option<String> {
    let parts: Vec<&str> = windows_version.trim().split('.').collect();
    let [_, _, third, fourth] = parts.as_slice() else {
        return None;
    };
    if !third
        .chars()
        .chain(fourth.chars())
        .all(|c| c.is_ascii_digit())
        || third.is_empty()
        || fourth.is_empty()
        || fourth.len() > 4
    {
        return None;
    }
    // The fourth part is printed without leading zeros (`15.0636` shows as `15.636`).
    let digits = format!("{third}{fourth:0>4}");
    let last5 = digits.get(digits.len().checked_sub(5)?..)?;
    Some(format!("{}.{}", &last5[..3], &last5[3..]))
}

/// Parses `ConvertTo-Json`'s output: one object, or an array of them for several adapters.
/// Only NVIDIA adapters are kept when names are reported (the integrated GPU is not ours).
pub fn parse(json: &str) -> Result<Vec<WindowsDriver>, String> {
    let value: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        serde_json::Value::Null => Vec::new(),
        one => vec![one],
    };
    let mut out = Vec::new();
    for item in items {
        let raw: RawController =
            serde_json::from_value(item).map_err(|e| format!("unexpected object: {e}"))?;
        let Some(windows_version) = raw.driver_version else {
            continue;
        };
        let provider = raw.driver_provider_name.filter(|p| !p.trim().is_empty());
        let nvidia = raw
            .name
            .as_deref()
            .is_some_and(|n| n.to_ascii_lowercase().contains("nvidia"))
            || provider
                .as_deref()
                .is_some_and(|p| p.eq_ignore_ascii_case("nvidia"));
        if raw.name.is_some() && !nvidia && !is_basic_display(raw.name.as_deref()) {
            continue;
        }
        // Microsoft's fallback adapter carries Windows' own version (10.0.x), not NVIDIA's.
        let basic = is_basic_display(raw.name.as_deref());
        out.push(WindowsDriver {
            nvidia_version: (!basic).then(|| nvidia_version(&windows_version)).flatten(),
            adapter: raw.name,
            windows_version,
            provider,
            date: raw.driver_date.as_ref().and_then(parse_date),
        });
    }
    Ok(out)
}

/// After a feature update the NVIDIA card can show up as Microsoft's fallback adapter.
fn is_basic_display(name: Option<&str>) -> bool {
    name.is_some_and(|n| n.to_ascii_lowercase().contains("basic display"))
}

/// `"/Date(1733097600000)/"` (PowerShell 5.1), `"2024-12-02T00:00:00+00:00"` (7), or
/// `"2024-12-02"` → `2024-12-02`.
fn parse_date(value: &serde_json::Value) -> Option<String> {
    let text = value.as_str()?;
    if let Some(ms) = text
        .trim_start_matches('\\')
        .strip_prefix("/Date(")
        .and_then(|rest| rest.split(')').next())
    {
        // An offset may follow the milliseconds (`/Date(1733097600000+0100)/`).
        let digits: String = ms
            .chars()
            .enumerate()
            .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && *c == '-'))
            .map(|(_, c)| c)
            .collect();
        let ts = jiff::Timestamp::from_millisecond(digits.parse().ok()?).ok()?;
        return Some(ts.strftime("%Y-%m-%d").to_string());
    }
    let date = text.get(..10)?;
    let shaped = date.chars().enumerate().all(|(i, c)| match i {
        4 | 7 => c == '-',
        _ => c.is_ascii_digit(),
    });
    shaped.then(|| date.to_string())
}

/// Asks Windows through a PowerShell child; `Err` says why there is no answer.
pub fn query(system: &dyn System) -> Result<Vec<WindowsDriver>, String> {
    let program = system
        .which("powershell")
        .or_else(|| system.which("pwsh"))
        .ok_or("PowerShell was not found on PATH")?;
    let args: Vec<String> = ["-NoProfile", "-NonInteractive", "-Command", QUERY]
        .map(String::from)
        .to_vec();
    let out = system
        .run(Path::new(&program), &args, POWERSHELL_TIMEOUT)
        .map_err(|e| format!("PowerShell: {e}"))?;
    if !out.success() {
        return Err(format!(
            "PowerShell exited with {:?}: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    // Wine's powershell.exe is a stub that prints nothing and exits 0: no answer, not bad JSON.
    if out.stdout.trim().is_empty() {
        return Err("PowerShell printed nothing for the Win32_VideoController query".to_string());
    }
    parse(&out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_versions_convert_to_nvidia_versions() {
        assert_eq!(nvidia_version("32.0.15.6636").as_deref(), Some("566.36"));
        assert_eq!(nvidia_version("31.0.15.5186").as_deref(), Some("551.86"));
        assert_eq!(nvidia_version("32.0.15.7283").as_deref(), Some("572.83"));
        assert_eq!(nvidia_version("27.21.14.5671").as_deref(), Some("456.71"));
        // A fourth part printed without its leading zero.
        assert_eq!(nvidia_version("31.0.15.636").as_deref(), Some("506.36"));
        assert_eq!(nvidia_version("10.0.22621"), None);
        assert_eq!(nvidia_version("a.b.c.d"), None);
    }

    /// What Windows PowerShell 5.1 prints for a laptop with Intel graphics and an RTX card,
    /// after a feature update replaced NVIDIA's package with the one Windows Update carries.
    const TWO_ADAPTERS_PS51: &str = r#"[
    {
        "Name":  "Intel(R) UHD Graphics 770",
        "DriverVersion":  "31.0.101.4502",
        "DriverProviderName":  "Intel Corporation",
        "DriverDate":  "\/Date(1686268800000)\/"
    },
    {
        "Name":  "NVIDIA GeForce RTX 4070",
        "DriverVersion":  "31.0.15.5186",
        "DriverProviderName":  "Microsoft",
        "DriverDate":  "\/Date(1710460800000)\/"
    }
]"#;

    #[test]
    fn a_microsoft_supplied_driver_is_recognised_and_other_adapters_ignored() {
        let drivers = parse(TWO_ADAPTERS_PS51).expect("parses");
        assert_eq!(drivers.len(), 1, "{drivers:?}");
        let d = &drivers[0];
        assert_eq!(d.nvidia_version.as_deref(), Some("551.86"));
        assert_eq!(d.date.as_deref(), Some("2024-03-15"));
        assert!(d.from_microsoft());
        assert_eq!(
            d.describe(),
            "551.86 (31.0.15.5186), provider Microsoft, dated 2024-03-15"
        );
    }

    #[test]
    fn a_single_adapter_from_powershell_7_is_one_object_with_iso_dates() {
        let json = r#"{
  "Name": "NVIDIA RTX A4000",
  "DriverVersion": "32.0.15.6636",
  "DriverProviderName": "NVIDIA",
  "DriverDate": "2024-12-02T00:00:00+00:00"
}"#;
        let drivers = parse(json).expect("parses");
        assert_eq!(drivers.len(), 1);
        assert_eq!(drivers[0].nvidia_version.as_deref(), Some("566.36"));
        assert_eq!(drivers[0].date.as_deref(), Some("2024-12-02"));
        assert!(!drivers[0].from_microsoft());
    }

    #[test]
    fn the_basic_display_adapter_is_kept_because_it_is_the_card_without_its_driver() {
        let json = r#"{"Name": "Microsoft Basic Display Adapter", "DriverVersion": "10.0.22621.3672",
            "DriverProviderName": "Microsoft", "DriverDate": "\/Date(1151280000000)\/"}"#;
        let drivers = parse(json).expect("parses");
        assert_eq!(drivers.len(), 1);
        assert_eq!(drivers[0].nvidia_version, None);
        assert!(drivers[0].from_microsoft());
    }

    #[test]
    fn garbage_is_an_error_not_an_empty_answer() {
        assert!(parse("Get-CimInstance : Access denied").is_err());
    }

    #[test]
    fn a_powershell_that_prints_nothing_is_no_answer() {
        let mut sys = crate::host::system::FakeSystem::new(crate::compat::Os::Windows);
        sys.on_path
            .insert("powershell".into(), "C:/windows/powershell.exe".into());
        sys.answer(
            "C:/windows/powershell.exe",
            &["-NoProfile", "-NonInteractive", "-Command", QUERY],
            0,
            "\r\n",
        );
        let why = query(&sys).expect_err("no answer");
        assert!(why.contains("printed nothing"), "{why}");
    }

    #[test]
    fn a_missing_powershell_is_no_answer_naming_it() {
        let sys = crate::host::system::FakeSystem::new(crate::compat::Os::Windows);
        let why = query(&sys).expect_err("no PowerShell");
        assert!(why.contains("PowerShell was not found"), "{why}");
    }

    #[test]
    fn query_runs_powershell_with_the_documented_command() {
        let mut sys = crate::host::system::FakeSystem::new(crate::compat::Os::Windows);
        sys.on_path.insert(
            "powershell".into(),
            "C:/Windows/System32/WindowsPowerShell/v1.0/powershell.exe".into(),
        );
        sys.answer(
            "C:/Windows/System32/WindowsPowerShell/v1.0/powershell.exe",
            &["-NoProfile", "-NonInteractive", "-Command", QUERY],
            0,
            TWO_ADAPTERS_PS51,
        );
        let drivers = query(&sys).expect("answers");
        assert_eq!(drivers[0].nvidia_version.as_deref(), Some("551.86"));
    }
}
