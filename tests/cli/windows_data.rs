//! `stackpin data` on Windows (under Wine in CI): the data folder defaults to
//! `%LOCALAPPDATA%\stackpin`, a set packed and installed from a file in folders with spaces is
//! used by `pin`, and `data reset` removes it again.
#![cfg(windows)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Outcome, run, stackpin};
use crate::data::{copy_data_to, with_driver};

const NEW_WINDOWS_DRIVER: &str = "581.99";
const NEW_DATE: &str = "2026-12-20";

/// `stackpin ARGS` with no STACKPIN_DATA_DIR and `local` as `%LOCALAPPDATA%`.
fn with_local_app_data(local: &Path, args: &[&str]) -> Outcome {
    let mut cmd: Command = stackpin();
    cmd.args(args)
        .env_remove("STACKPIN_DATA_DIR")
        .env("LOCALAPPDATA", local);
    run(&mut cmd)
}

#[test]
fn data_update_from_a_file_installs_under_localappdata_and_pin_uses_it() {
    let root = tempfile::tempdir().expect("temp dir");
    let local = root.path().join("App Data").join("Local");
    std::fs::create_dir_all(&local).expect("LOCALAPPDATA");
    let tables = root.path().join("new data");
    copy_data_to(
        &tables,
        with_driver(NEW_DATE, "windows", NEW_WINDOWS_DRIVER),
    );
    let file = root.path().join("lab sets").join("stackpin data.json");
    let (tables, file_arg) = (tables.display().to_string(), file.display().to_string());
    let packed = with_local_app_data(&local, &["data", "pack", &tables, "-o", &file_arg]);
    assert_eq!(packed.code, 0, "{packed:?}");

    let update = with_local_app_data(&local, &["data", "update", "--from", &file_arg]);
    assert_eq!(update.code, 0, "{update:?}");
    let installed = local.join("stackpin").join("release-data.json");
    assert!(
        installed.is_file(),
        "the set lands in %LOCALAPPDATA%\\stackpin"
    );

    let show = with_local_app_data(&local, &["data", "show", "--json"]);
    let doc: Value = serde_json::from_str(&show.stdout).expect("show JSON");
    assert_eq!(doc["data"]["source"], "updated", "{doc:#}");
    assert_eq!(doc["data"]["read_on"], NEW_DATE);
    assert_eq!(doc["dir"], local.join("stackpin").display().to_string());
    assert_eq!(doc["file"], installed.display().to_string());

    let pin = with_local_app_data(
        &local,
        &["pin", "--library", "torch==2.5.1", "--os", "windows"],
    );
    assert_eq!(pin.code, 0, "{pin:?}");
    assert!(
        pin.stdout
            .contains(&format!("version: \"{NEW_WINDOWS_DRIVER}\"")),
        "{}",
        pin.stdout
    );

    let reset = with_local_app_data(&local, &["data", "reset"]);
    assert_eq!(reset.code, 0, "{reset:?}");
    assert!(!installed.exists());
    let show = with_local_app_data(&local, &["data", "show", "--json"]);
    let doc: Value = serde_json::from_str(&show.stdout).expect("show JSON");
    assert_eq!(doc["data"]["source"], "built_in");
}
