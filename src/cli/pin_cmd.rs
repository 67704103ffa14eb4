//! `stackpin pin --library torch==2.5.1 --os linux`

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, anyhow};
use serde::Serialize;

use super::{CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::compat::Os;
use crate::pin::{self, PinRequest};
use crate::version::Version;

pub const EXAMPLES: &str = "\
Examples:
  stackpin pin --library torch==2.5.1 --os linux
  stackpin pin --library torch==2.5.1 --os windows --python 3.11 -o torch-win.yaml
  stackpin pin --library tensorflow==2.17.0 --os linux --driver 570.133.20
  stackpin pin --library onnxruntime-gpu==1.20.2 --os linux --toolkit 12.4";

#[derive(Debug, clap::Args)]
pub struct PinArgs {
    #[arg(long, value_name = "NAME==VERSION", help = library_help())]
    pub library: String,
    /// The operating system of the workstation.
    #[arg(long, value_enum)]
    pub os: Os,
    /// The CUDA line or release to pin (default: the newest stable line the library supports).
    #[arg(long, value_name = "X.Y[.Z]")]
    pub toolkit: Option<Version>,
    /// The driver to pin (default: the newest stackpin knows that meets the toolkit's minimum).
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<Version>,
    /// The Python version wheels are fetched for.
    #[arg(long, value_name = "X.Y")]
    pub python: Option<Version>,
    /// Write the manifest here instead of stdout (refuses to overwrite; use --force).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
}

/// `--library`'s help: every library data/libraries.yaml describes.
fn library_help() -> String {
    format!(
        "The library release, `NAME==VERSION` ({})",
        crate::library::names().join(", ")
    )
}

#[derive(Serialize)]
struct JsonPin<'a> {
    name: &'a str,
    file: Option<String>,
    notes: &'a [String],
    manifest: &'a crate::manifest::Manifest,
}

pub fn run(args: &PinArgs, global: &GlobalArgs) -> CmdResult {
    let (library, version) = args.library.split_once("==").ok_or_else(|| {
        Failure::input(anyhow!(
            "--library `{}`: write it as NAME==VERSION, e.g. torch==2.5.1",
            args.library
        ))
    })?;
    let version = Version::parse(version)
        .with_context(|| format!("--library `{}`", args.library))
        .map_err(Failure::input)?;
    let request = PinRequest {
        library: library.trim().to_ascii_lowercase(),
        version,
        os: args.os,
        toolkit: args.toolkit.clone(),
        driver: args.driver.clone(),
        python: args.python.clone(),
    };
    let pinned = pin::pin(&request).map_err(Failure::input)?;
    if let Some(path) = &args.output {
        write_new(path, &pinned.yaml, args.force)?;
    } else if !global.json {
        print!("{}", pinned.yaml);
    }
    if global.json {
        print_json(&JsonPin {
            name: &pinned.manifest.name,
            file: args.output.as_ref().map(|p| p.display().to_string()),
            notes: &pinned.notes,
            manifest: &pinned.manifest,
        })?;
    } else if !global.quiet {
        let mut err = std::io::stderr().lock();
        for note in &pinned.notes {
            let _ = writeln!(err, "note: {note}");
        }
        if let Some(path) = &args.output {
            let _ = writeln!(
                err,
                "wrote {} ({}); next: stackpin check {}",
                path.display(),
                pinned.manifest.name,
                path.display()
            );
        }
    }
    Ok(Exit::Ok)
}

/// Writes through a temporary file in the same folder and renames, so a crash never leaves a
/// half-written manifest under the final name.
fn write_new(path: &std::path::Path, text: &str, force: bool) -> Result<(), Failure> {
    if path.exists() && !force {
        return Err(Failure::input(anyhow!(
            "{} already exists; pass --force to overwrite it",
            path.display()
        )));
    }
    crate::fsutil::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
        .map_err(Failure::external)
}
