//! The CLI end to end: one integration-test binary, one module per area.

mod budget;
mod check;
mod common;
mod diagnose;
mod fakes;
mod host;
mod pin;
mod vram;
