//! The CLI end to end: one integration-test binary, one module per area.

mod archive;
mod budget;
mod check;
mod common;
mod data;
mod diagnose;
mod doctor;
mod fakes;
mod fakes_windows;
mod host;
mod inference;
mod install;
mod measure;
mod pin;
mod prove;
mod server;
mod status;
mod vram;
mod windows;
mod windows_data;
mod windows_install;
mod windows_prove;
mod windows_sampler;
