//! The CLI end to end: one integration-test binary, one module per area.

mod archive;
mod budget;
mod check;
mod common;
mod diagnose;
mod fakes;
mod fakes_windows;
mod host;
mod install;
mod pin;
mod server;
mod vram;
mod windows;
mod windows_install;
mod windows_sampler;
