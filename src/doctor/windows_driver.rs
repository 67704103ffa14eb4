//! Which display driver Windows runs, who published it and how it got there, read through
//! PowerShell children: `Win32_PnPSignedDriver` (display class: provider, INF, version, date)
//! for the driver in use, and the Windows Update history (`Microsoft.Update.Session`) for an
//! "NVIDIA - Display - <version>" install. `Win32_VideoController` has no provider property,
//! and a driver Windows Update installs is published by NVIDIA too, so the provider says
//! nothing about a feature update; the history does. Only Microsoft's Basic Display Adapter
//! means "no NVIDIA driver at all".
//!
//! This module only asks and parses; deciding whether the driver drifted is `doctor`'s job.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::System;

/// How long PowerShell may take: its first start on a cold machine is slow.
const POWERSHELL_TIMEOUT: Duration = Duration::from_secs(60);

/// The driver in use for each display-class device, as JSON. `DriverDate` is formatted in
/// PowerShell because 5.1 and 7 serialise `DateTime` differently; both raw forms
/// (`/Date(ms)/`, ISO 8601) are still parsed.
pub const QUERY: &str = "Get-CimInstance Win32_PnPSignedDriver -Filter \"DeviceClass='DISPLAY'\" | \
     Select-Object DeviceName,DriverVersion,DriverProviderName,InfName,\
     @{n='DriverDate';e={if ($_.DriverDate) { $_.DriverDate.ToString('yyyy-MM-dd') }}} | ConvertTo-Json";

/// Windows Update's history of NVIDIA display-driver installs that succeeded (ResultCode 2),
/// as JSON: `Title` (`NVIDIA - Display - 32.0.15.6636`) and `Date`.
pub const UPDATE_HISTORY_QUERY: &str = "$s = New-Object -ComObject Microsoft.Update.Session; \
     $h = $s.CreateUpdateSearcher(); $n = $h.GetTotalHistoryCount(); \
     if ($n -gt 0) { $h.QueryHistory(0, $n) | Where-Object { $_.Title -like 'NVIDIA*Display*' -and $_.ResultCode -eq 2 } | \
     Select-Object Title,@{n='Date';e={$_.Date.ToString('yyyy-MM-dd')}} | ConvertTo-Json }";

/// One display device's driver, as Windows reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowsDriver {
    /// The device's name (`NVIDIA GeForce RTX 4070`), when reported.
    pub adapter: Option<String>,
    /// Windows' own version string (`32.0.15.6636`).
    pub windows_version: String,
    /// NVIDIA's version derived from it (`566.36`), when it has NVIDIA's shape.
    pub nvidia_version: Option<String>,
    /// The driver package's publisher: `NVIDIA` for NVIDIA's and Windows Update's packages alike.
    pub provider: Option<String>,
    /// The INF Windows installed it from (`oem42.inf`).
    pub inf: Option<String>,
    /// The driver's date, `YYYY-MM-DD`.
    pub date: Option<String>,
    /// The Windows Update install of this very version, when the history has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_update: Option<UpdateInstall>,
}

/// One "NVIDIA - Display - <version>" entry of the Windows Update history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateInstall {
    pub title: String,
    /// Windows' four-part version from the title (`32.0.15.6636`).
    pub windows_version: String,
    /// `YYYY-MM-DD`.
    pub date: Option<String>,
}

impl WindowsDriver {
    /// True when the device runs Microsoft's Basic Display Adapter: the card has no NVIDIA
    /// driver at all (what a feature update that removed it leaves).
    pub fn is_basic_display(&self) -> bool {
        is_basic_display(self.adapter.as_deref())
    }

    /// How this driver got there, in words; `proven_at` (the record's date, ISO 8601) dates a
    /// Windows Update install as after or before the proof.
    pub fn origin(&self, proven_at: Option<&str>) -> String {
        if self.is_basic_display() {
            return "no NVIDIA driver: Windows runs Microsoft's Basic Display Adapter (a feature update removed the driver)".to_string();
        }
        match &self.windows_update {
            Some(update) => {
                let when = update.date.as_deref().unwrap_or("an unknown date");
                let after = match (update.date.as_deref(), proven_at.and_then(|p| p.get(..10))) {
                    (Some(date), Some(proven)) if date >= proven => {
                        format!(", after the stack was proven on {proven}")
                    }
                    (Some(_), Some(proven)) => format!(", before the stack was proven on {proven}"),
                    _ => String::new(),
                };
                format!(
                    "installed by Windows Update (\"{}\") on {when}{after}: the signature of a feature or driver update",
                    update.title
                )
            }
            None => format!(
                "published by {}, not in the Windows Update history",
                self.provider.as_deref().unwrap_or("an unknown provider")
            ),
        }
    }

    /// One line for the report: `566.36 (32.0.15.6636), provider NVIDIA, oem42.inf, dated 2024-12-02`.
    pub fn describe(&self) -> String {
        let version = match &self.nvidia_version {
            Some(v) => format!("{v} ({})", self.windows_version),
            None => self.windows_version.clone(),
        };
        format!(
            "{version}, provider {}, {}, dated {}",
            self.provider.as_deref().unwrap_or("unknown"),
            self.inf.as_deref().unwrap_or("INF unknown"),
            self.date.as_deref().unwrap_or("unknown")
        )
    }
}

/// The raw object `ConvertTo-Json` prints.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawDriver {
    device_name: Option<String>,
    driver_version: Option<String>,
    driver_provider_name: Option<String>,
    inf_name: Option<String>,
    driver_date: Option<serde_json::Value>,
}

/// The raw history entry `ConvertTo-Json` prints.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawUpdate {
    title: Option<String>,
    date: Option<serde_json::Value>,
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

/// `ConvertTo-Json` prints one object, or an array of them, or nothing.
fn json_items(json: &str) -> Result<Vec<serde_json::Value>, String> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("not JSON: {e}"))?;
    Ok(match value {
        serde_json::Value::Array(items) => items,
        serde_json::Value::Null => Vec::new(),
        one => vec![one],
    })
}

/// Parses the Windows Update history: the NVIDIA display-driver installs, newest first as
/// Windows lists them.
pub fn parse_updates(json: &str) -> Result<Vec<UpdateInstall>, String> {
    let mut out = Vec::new();
    for item in json_items(json)? {
        let raw: RawUpdate =
            serde_json::from_value(item).map_err(|e| format!("unexpected object: {e}"))?;
        let Some(title) = raw.title else { continue };
        // `NVIDIA - Display - 32.0.15.6636`: the version is the title's last word.
        let Some(version) = title
            .rsplit([' ', '-'])
            .find(|w| !w.is_empty())
            .filter(|w| w.split('.').count() == 4)
        else {
            continue;
        };
        out.push(UpdateInstall {
            windows_version: version.to_string(),
            date: raw.date.as_ref().and_then(parse_date),
            title,
        });
    }
    Ok(out)
}

/// Parses the display-class drivers. Only NVIDIA devices (and the Basic Display Adapter, the
/// card without its driver) are kept when names are reported; the integrated GPU is not ours.
pub fn parse(json: &str) -> Result<Vec<WindowsDriver>, String> {
    let mut out = Vec::new();
    for item in json_items(json)? {
        let raw: RawDriver =
            serde_json::from_value(item).map_err(|e| format!("unexpected object: {e}"))?;
        let Some(windows_version) = raw.driver_version else {
            continue;
        };
        let provider = raw.driver_provider_name.filter(|p| !p.trim().is_empty());
        let nvidia = raw
            .device_name
            .as_deref()
            .is_some_and(|n| n.to_ascii_lowercase().contains("nvidia"))
            || provider
                .as_deref()
                .is_some_and(|p| p.eq_ignore_ascii_case("nvidia"));
        let name = raw.device_name.as_deref();
        if name.is_some() && !nvidia && !is_basic_display(name) {
            continue;
        }
        // Microsoft's fallback adapter carries Windows' own version (10.0.x), not NVIDIA's.
        let basic = is_basic_display(name);
        out.push(WindowsDriver {
            nvidia_version: (!basic).then(|| nvidia_version(&windows_version)).flatten(),
            adapter: raw.device_name,
            windows_version,
            provider,
            inf: raw.inf_name.filter(|i| !i.trim().is_empty()),
            date: raw.driver_date.as_ref().and_then(parse_date),
            windows_update: None,
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

/// Asks Windows through PowerShell children; `Err` says why there is no answer. The Windows
/// Update history is a second, optional question: without it no install is attributed to it.
pub fn query(system: &dyn System) -> Result<Vec<WindowsDriver>, String> {
    let program = system
        .which("powershell")
        .or_else(|| system.which("pwsh"))
        .ok_or("PowerShell was not found on PATH")?;
    let out = powershell(system, &program, QUERY)?;
    // Wine's powershell.exe is a stub that prints nothing and exits 0: no answer, not bad JSON.
    if out.trim().is_empty() {
        return Err("PowerShell printed nothing for the Win32_PnPSignedDriver query".to_string());
    }
    let mut drivers = parse(&out)?;
    let updates = powershell(system, &program, UPDATE_HISTORY_QUERY)
        .and_then(|json| parse_updates(&json))
        .unwrap_or_default();
    attribute_updates(&mut drivers, &updates);
    Ok(drivers)
}

/// Marks each driver whose version a Windows Update install brought (the newest such entry).
pub fn attribute_updates(drivers: &mut [WindowsDriver], updates: &[UpdateInstall]) {
    for d in drivers.iter_mut() {
        d.windows_update = updates
            .iter()
            .filter(|u| u.windows_version == d.windows_version)
            .max_by(|a, b| a.date.cmp(&b.date))
            .cloned();
    }
}

fn powershell(system: &dyn System, program: &Path, command: &str) -> Result<String, String> {
    let args: Vec<String> = ["-NoProfile", "-NonInteractive", "-Command", command]
        .map(String::from)
        .to_vec();
    let out = system
        .run(program, &args, POWERSHELL_TIMEOUT)
        .map_err(|e| format!("PowerShell: {e}"))?;
    if !out.success() {
        return Err(format!(
            "PowerShell exited with {:?}: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    Ok(out.stdout)
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

    /// What Windows PowerShell 5.1 prints for a laptop with Intel graphics and an RTX card
    /// whose driver Windows Update replaced: the package is published by NVIDIA all the same.
    const TWO_ADAPTERS_PS51: &str = r#"[
    {
        "DeviceName":  "Intel(R) UHD Graphics 770",
        "DriverVersion":  "31.0.101.4502",
        "DriverProviderName":  "Intel Corporation",
        "InfName":  "oem12.inf",
        "DriverDate":  "\/Date(1686268800000)\/"
    },
    {
        "DeviceName":  "NVIDIA GeForce RTX 4070",
        "DriverVersion":  "31.0.15.5186",
        "DriverProviderName":  "NVIDIA",
        "InfName":  "oem42.inf",
        "DriverDate":  "2024-03-15"
    }
]"#;

    /// The Windows Update history's NVIDIA entries (PowerShell 5.1, one install).
    const HISTORY: &str = r#"[
    {"Title": "NVIDIA - Display - 31.0.15.5186", "Date": "2024-06-20"},
    {"Title": "NVIDIA - Display - 31.0.15.3699", "Date": "2023-09-01"}
]"#;

    #[test]
    fn a_windows_update_install_is_told_by_the_history_not_by_the_provider() {
        let mut drivers = parse(TWO_ADAPTERS_PS51).expect("parses");
        assert_eq!(drivers.len(), 1, "{drivers:?}");
        assert_eq!(drivers[0].provider.as_deref(), Some("NVIDIA"));
        assert_eq!(drivers[0].inf.as_deref(), Some("oem42.inf"));
        assert_eq!(
            drivers[0].describe(),
            "551.86 (31.0.15.5186), provider NVIDIA, oem42.inf, dated 2024-03-15"
        );
        assert!(
            drivers[0]
                .origin(None)
                .contains("not in the Windows Update history")
        );

        let updates = parse_updates(HISTORY).expect("history parses");
        attribute_updates(&mut drivers, &updates);
        let origin = drivers[0].origin(Some("2024-05-01T10:00:00Z"));
        assert!(
            origin.contains("installed by Windows Update (\"NVIDIA - Display - 31.0.15.5186\") on 2024-06-20, after the stack was proven on 2024-05-01"),
            "{origin}"
        );
    }

    #[test]
    fn an_update_before_the_proof_is_dated_as_such() {
        let mut drivers = parse(TWO_ADAPTERS_PS51).expect("parses");
        attribute_updates(&mut drivers, &parse_updates(HISTORY).expect("history"));
        let origin = drivers[0].origin(Some("2024-07-01T00:00:00Z"));
        assert!(origin.contains("before the stack was proven"), "{origin}");
    }

    #[test]
    fn a_single_device_from_powershell_7_is_one_object_with_iso_dates() {
        let json = r#"{
  "DeviceName": "NVIDIA RTX A4000",
  "DriverVersion": "32.0.15.6636",
  "DriverProviderName": "NVIDIA",
  "InfName": "oem7.inf",
  "DriverDate": "2024-12-02T00:00:00+00:00"
}"#;
        let drivers = parse(json).expect("parses");
        assert_eq!(drivers.len(), 1);
        assert_eq!(drivers[0].nvidia_version.as_deref(), Some("566.36"));
        assert_eq!(drivers[0].date.as_deref(), Some("2024-12-02"));
        assert!(!drivers[0].is_basic_display());
    }

    #[test]
    fn the_basic_display_adapter_is_the_card_without_its_driver() {
        let json = r#"{"DeviceName": "Microsoft Basic Display Adapter", "DriverVersion": "10.0.22621.3672",
            "DriverProviderName": "Microsoft", "InfName": "display.inf", "DriverDate": "\/Date(1151280000000)\/"}"#;
        let drivers = parse(json).expect("parses");
        assert_eq!(drivers.len(), 1);
        assert_eq!(drivers[0].nvidia_version, None);
        assert!(drivers[0].is_basic_display());
        assert!(drivers[0].origin(None).starts_with("no NVIDIA driver"));
    }

    #[test]
    fn history_titles_without_a_version_are_skipped() {
        let updates = parse_updates(
            r#"[{"Title": "NVIDIA - Display", "Date": "2024-01-01"},
                {"Title": "NVIDIA - Display - 32.0.15.6636", "Date": "\/Date(1733097600000)\/"}]"#,
        )
        .expect("parses");
        assert_eq!(updates.len(), 1);
        assert_eq!(updates[0].windows_version, "32.0.15.6636");
        assert_eq!(updates[0].date.as_deref(), Some("2024-12-02"));
        assert!(parse_updates("").expect("empty history").is_empty());
    }

    #[test]
    fn garbage_is_an_error_not_an_empty_answer() {
        assert!(parse("Get-CimInstance : Access denied").is_err());
    }

    #[test]
    fn a_powershell_that_prints_nothing_is_no_answer() {
        let mut sys = crate::host::system::FakeSystem::new(crate::os::Os::Windows);
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
        let sys = crate::host::system::FakeSystem::new(crate::os::Os::Windows);
        let why = query(&sys).expect_err("no PowerShell");
        assert!(why.contains("PowerShell was not found"), "{why}");
    }

    #[test]
    fn query_asks_for_the_display_drivers_then_the_update_history() {
        let mut sys = crate::host::system::FakeSystem::new(crate::os::Os::Windows);
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
        sys.answer(
            "C:/Windows/System32/WindowsPowerShell/v1.0/powershell.exe",
            &[
                "-NoProfile",
                "-NonInteractive",
                "-Command",
                UPDATE_HISTORY_QUERY,
            ],
            0,
            HISTORY,
        );
        let drivers = query(&sys).expect("answers");
        assert_eq!(drivers[0].nvidia_version.as_deref(), Some("551.86"));
        assert_eq!(
            drivers[0]
                .windows_update
                .as_ref()
                .and_then(|u| u.date.as_deref()),
            Some("2024-06-20")
        );
    }
}
