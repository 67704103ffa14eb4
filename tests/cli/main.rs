//! The CLI end to end: one integration-test binary, one module per command.

mod diagnose;
