//! The CLI end to end: one integration-test binary, one module per area.

mod archive;
mod server;
