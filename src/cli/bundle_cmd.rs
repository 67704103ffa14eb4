//! `stackpin bundle MANIFEST -o FILE.zip` and `stackpin unbundle FILE.zip`: one zip for an
//! offline rebuild, and its careful unpacking; the zip work lives in `archive::bundle`.

use std::path::PathBuf;

use serde::Serialize;

use super::term::{Bars, size_text};
use super::{CmdResult, Exit, GlobalArgs, print_json};
use crate::archive::{self};
use crate::manifest;

pub const EXAMPLES: &str = "\
Examples:
  stackpin bundle manifests/torch-2.5.1-cu124-linux.yaml -o torch-stack.zip
  stackpin unbundle torch-stack.zip --archive /srv/installers

Exit 0 on success, 1 when a file is corrupt or an entry is unsafe, 2 on unusable input,
3 when writing fails.";

#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    /// The manifest whose archived stack to pack.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// The zip to write.
    #[arg(long, short, value_name = "FILE.zip")]
    pub output: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct UnbundleArgs {
    /// The zip written by `stackpin bundle`.
    #[arg(value_name = "FILE.zip")]
    pub bundle: PathBuf,
}

pub fn run_bundle(args: &BundleArgs, global: &GlobalArgs) -> CmdResult {
    let m = manifest::read(&args.manifest)?;
    if same_file(&args.output, &args.manifest) {
        return Err(archive::ArchiveError::BundleOntoInput {
            path: args.output.clone(),
            why: "it is the manifest the bundle is made from".into(),
        }
        .into());
    }
    let stack = global.archive().stack(&m.name);
    let bars = Bars::new(global);
    let summary = archive::bundle(&stack, &args.output, &bars)?;
    bars.clear();
    if global.json {
        print_json(&summary)?;
    } else if !global.quiet {
        println!(
            "wrote {} ({} entries, {} of installers); next, on the offline machine: {}",
            summary.path.display(),
            summary.entries,
            size_text(summary.bytes),
            super::hints::command(&["stackpin", "unbundle", &summary.path.display().to_string()])
        );
    }
    Ok(Exit::Ok)
}

/// True when both paths name one existing file (a link or `./` spelling included).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

#[derive(Serialize)]
struct JsonUnbundle<'a> {
    ok: bool,
    stack: String,
    files: &'a [archive::FileAudit],
}

pub fn run_unbundle(args: &UnbundleArgs, global: &GlobalArgs) -> CmdResult {
    let bars = Bars::new(global);
    let (stack, report) = archive::unbundle(&args.bundle, &global.archive(), &bars)?;
    bars.clear();
    if global.json {
        print_json(&JsonUnbundle {
            ok: true,
            stack: stack.root().display().to_string(),
            files: &report.files,
        })?;
    } else if !global.quiet {
        println!(
            "unpacked {} into {} and audited it: {} files ok",
            args.bundle.display(),
            stack.root().display(),
            report.files.len()
        );
    }
    Ok(Exit::Ok)
}
