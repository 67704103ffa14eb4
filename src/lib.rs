//! stackpin pins, archives, installs and proves a deep-learning training stack:
//! GPU driver → CUDA toolkit → training library, in that order, each verified on the host.
//!
//! Data flows one way: [`manifest`] → [`compat`] checks → plan → archive → install → prove → record.
//! The CLI layer ([`cli`]) is the only place that prints, draws progress bars or picks exit codes.

pub mod archive;
pub mod budget;
pub mod check;
pub mod cli;
pub mod compat;
pub mod dataset;
pub mod deployment;
pub mod diagnose;
pub mod doctor;
pub mod examples;
pub mod exec;
pub mod exit;
pub mod fsutil;
pub mod host;
pub mod install;
pub mod layers;
pub mod library;
pub mod manifest;
pub mod os;
pub mod outdated;
pub mod pin;
pub mod prove;
pub mod record;
pub mod report;
pub mod size;
pub mod status;
pub mod up;
pub mod version;
pub mod vram;
pub mod windows_installers;
