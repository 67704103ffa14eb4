//! The CLI end to end: one integration-test binary, one module per area.

mod archive;
mod budget;
mod check;
mod common;
mod data;
mod diagnose;
mod doctor;
mod fakes;
/// The Windows flavour's old home: `crate::fakes_windows::{WinHost, fake_program}` still works.
#[cfg(windows)]
#[allow(unused_imports)]
use fakes as fakes_windows;
mod first_hour;
mod hints;
mod host;
mod hostile;
mod inference;
mod install;
mod json_contract;
#[cfg(unix)]
mod library_layer;
mod linux_prep;
mod measure;
mod messages;
mod outdated_index;
mod pin;
mod prerequisites;
mod prove;
mod published;
mod readiness;
mod report;
mod server;
mod status;
mod terminal;
#[cfg(unix)]
mod toolkit_wheels;
mod trust;
mod vram;
mod windows;
mod windows_data;
mod windows_install;
mod windows_prove;
mod windows_sampler;
