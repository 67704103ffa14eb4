//! `stackpin pin --library torch==2.5.1 --os linux`: turns flags and, when pinning for the OS
//! stackpin runs on, what this host has (its Python, its GPUs) into a pin request.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use super::{CliError, CmdResult, Exit, Failure, GlobalArgs, print_json};
use crate::compat;
use crate::host::{self, RealSystem, System};
use crate::manifest::LibraryInstaller;
use crate::os::Os;
use crate::pin::{self, PinRequest, TargetGpu};
use crate::version::Version;

pub const EXAMPLES: &str = "\
Examples:
  stackpin pin --library torch==2.5.1 --os linux
  stackpin pin --library torch==2.5.1 --os windows --python 3.11 -o torch-win.yaml
  stackpin pin --library tensorflow==2.17.0 --os linux --driver 570.133.20
  stackpin pin --library torch==2.9.1 --os linux --gpu-arch 6.1 --gpu-arch 8.9
  stackpin pin --library torch==2.5.9 --os linux --unknown-release --with torchvision==0.20.9
  stackpin pin --library onnxruntime-gpu==1.20.2 --os linux --toolkit 12.4
  stackpin pin --library torch==2.14.0 --os linux --toolkit-source wheels

Pinning for the OS stackpin runs on takes python_version from the manifest's interpreter on this
host (python3 / python) and the target GPUs from nvidia-smi; --python and --gpu-arch override.
Exit 1 when no stack fits the host's Python or the GPUs (the reason names the card); exit 2 for
a release stackpin's data does not list, unless --unknown-release (companions then need --with).
check's warnings about the pinned manifest are printed as `warning:` lines.";

/// `--os`: `Os` derives no clap trait, so its names are offered here (the same help and errors
/// `value_enum` gave).
fn os_parser() -> impl clap::builder::TypedValueParser<Value = Os> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Os::ALL.map(Os::name)).try_map(|s| s.parse::<Os>())
}

#[derive(Debug, clap::Args)]
pub struct PinArgs {
    #[arg(long, value_name = "NAME==VERSION", help = library_help())]
    pub library: String,
    /// The operating system of the workstation.
    #[arg(long, value_parser = os_parser())]
    pub os: Os,
    /// The CUDA line or release to pin (default: the newest stable line the library supports).
    #[arg(long, value_name = "X.Y[.Z]")]
    pub toolkit: Option<Version>,
    /// The driver to pin (default: the newest stackpin knows that meets the toolkit's minimum,
    /// drives the target GPUs and has a download of its own).
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<Version>,
    /// The Python version wheels are fetched for (default: this host's interpreter when pinning
    /// for this OS).
    #[arg(long, value_name = "X.Y")]
    pub python: Option<Version>,
    /// A GPU's compute capability the stack must run on (repeatable; default: the GPUs nvidia-smi
    /// lists when pinning for this OS).
    #[arg(long = "gpu-arch", value_name = "X.Y")]
    pub gpu_arch: Vec<String>,
    /// The GPU's name as nvidia-smi reports it (`NVIDIA RTX A6000`): on Windows it picks the
    /// driver package of the card's family (GeForce, RTX workstation, data center).
    #[arg(long, value_name = "NAME")]
    pub gpu_name: Option<String>,
    /// Windows: the target runs Windows Server (2022, 2025): a data-center card gets NVIDIA's
    /// `winserver-2022-2025` driver file instead of the Windows 10/11 one.
    #[arg(long)]
    pub windows_server: bool,
    /// Write the manifest here instead of stdout (refuses to overwrite; use --force).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Pin a release of a known line that stackpin's data does not list (you vouch for it);
    /// companions such as torchvision must then be given with --with.
    #[arg(long)]
    pub unknown_release: bool,
    /// A pip requirement pinned beside the library (repeatable), e.g. torchvision==0.20.1; one
    /// named like the data's companion replaces it.
    #[arg(long = "with", value_name = "NAME==VERSION")]
    pub with: Vec<String>,
    /// What installs the library's wheels: uv (the default; its wheel is pinned in the release
    /// data) or pip. Overwriting a manifest with --force keeps its choice unless this is given.
    #[arg(long, value_enum, value_name = "PROGRAM")]
    pub installer: Option<InstallerArg>,
    /// Where the CUDA toolkit comes from: NVIDIA's runfile/installer (the default) or NVIDIA's
    /// own component wheels, every one pinned to the release (no root, side by side).
    #[arg(long, value_enum, value_name = "SOURCE", default_value = "runfile")]
    pub toolkit_source: ToolkitSourceArg,
}

/// `--library`'s help: every library data/libraries.yaml describes.
fn library_help() -> String {
    format!(
        "The library release, `NAME==VERSION` ({})",
        crate::compat::libraries().names().join(", ")
    )
}

#[derive(Serialize)]
struct JsonPin<'a> {
    name: &'a str,
    file: Option<String>,
    notes: &'a [String],
    /// `stackpin check`'s warnings about the pinned manifest.
    warnings: &'a [String],
    manifest: &'a crate::manifest::Manifest,
    /// The release data set the pins came from.
    data: crate::dataset::DataRef,
}

pub fn run(args: &PinArgs, global: &GlobalArgs) -> CmdResult {
    let (library, version) = args.library.split_once("==").ok_or_else(|| {
        Failure::from(CliError::Usage(format!(
            "--library `{}`: write it as NAME==VERSION, e.g. torch==2.5.1",
            args.library
        )))
    })?;
    let version = Version::parse(version)
        .with_context(|| format!("--library `{}`", args.library))
        .map_err(CliError::unusable)?;
    let for_this_host = args.os == Os::current();
    let system = RealSystem;
    let mut host_notes = Vec::new();
    let gpus = target_gpus(&args.gpu_arch, for_this_host, &system, &mut host_notes)?;
    let host_python = if for_this_host && args.python.is_none() {
        let interpreter = match args.os {
            Os::Linux => "python3",
            Os::Windows => "python",
        };
        match host::interpreter::version(&system, interpreter) {
            Ok(v) => Some((interpreter.to_string(), v)),
            Err(e) => {
                host_notes.push(format!("this host's Python is unknown ({e})"));
                None
            }
        }
    } else {
        None
    };
    let request = PinRequest {
        library: library.trim().to_ascii_lowercase(),
        version,
        os: args.os,
        toolkit: args.toolkit.clone(),
        driver: args.driver.clone(),
        python: args.python.clone(),
        host_python,
        gpus,
        gpu_name: args.gpu_name.clone(),
        windows_server: args.windows_server,
        unknown_release: args.unknown_release,
        with: args.with.clone(),
        installer: installer_for(args),
        toolkit_source: match args.toolkit_source {
            ToolkitSourceArg::Runfile => crate::manifest::ToolkitSource::Runfile,
            ToolkitSourceArg::Wheels => crate::manifest::ToolkitSource::Wheels,
        },
    };
    let mut pinned = pin::pin(&request)?;
    host_notes.append(&mut pinned.notes);
    pinned.notes = host_notes;
    // What `stackpin check` would warn about the written manifest, said now rather than later.
    let warnings: Vec<String> = crate::check::check(&pinned.manifest, Some(&pinned.yaml))
        .problems
        .into_iter()
        .filter(|p| p.severity == crate::manifest::Severity::Warning)
        .map(|p| format!("{}: {}", p.field, p.message))
        .collect();
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
            warnings: &warnings,
            manifest: &pinned.manifest,
            data: crate::dataset::data_ref(&crate::compat::READER),
        })?;
    } else if !global.quiet {
        let mut err = std::io::stderr().lock();
        for note in &pinned.notes {
            let _ = writeln!(err, "note: {note}");
        }
        for warning in &warnings {
            anstream::eprintln!("{} {warning}", super::term::warning_label());
        }
        if let Some(path) = &args.output {
            let _ = writeln!(
                err,
                "wrote {} ({}); next: {}",
                path.display(),
                pinned.manifest.name,
                super::hints::command(&["stackpin", "check", &path.display().to_string()])
            );
        }
    }
    Ok(Exit::Ok)
}

/// `--installer`, else the choice of the manifest `--force` overwrites, else uv.
fn installer_for(args: &PinArgs) -> LibraryInstaller {
    match args.installer {
        Some(InstallerArg::Pip) => LibraryInstaller::Pip,
        Some(InstallerArg::Uv) => LibraryInstaller::Uv,
        None => args
            .output
            .as_deref()
            .filter(|path| args.force && path.exists())
            .and_then(|path| crate::manifest::read(path).ok())
            .map_or(LibraryInstaller::Uv, |m| m.library.installer),
    }
}

/// `--toolkit-source`'s values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ToolkitSourceArg {
    Runfile,
    Wheels,
}

/// `--installer`'s values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum InstallerArg {
    Pip,
    Uv,
}

/// Writes through a temporary file in the same folder and renames, so a crash never leaves a
/// half-written manifest under the final name.
fn write_new(path: &std::path::Path, text: &str, force: bool) -> Result<(), Failure> {
    if path.exists() && !force {
        return Err(Failure::from(CliError::Usage(format!(
            "{} already exists; pass --force to overwrite it",
            path.display()
        ))));
    }
    crate::fsutil::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
        .map_err(|e| CliError::broke(e).into())
}

/// `--gpu-arch` values, or, when pinning for this host, every GPU nvidia-smi lists.
fn target_gpus(
    asked: &[String],
    for_this_host: bool,
    system: &dyn System,
    notes: &mut Vec<String>,
) -> Result<Vec<TargetGpu>, Failure> {
    if !asked.is_empty() {
        return asked
            .iter()
            .map(|a| match compat::compute_capability(a) {
                Some(compute) => Ok(TargetGpu {
                    label: format!("--gpu-arch {compute}"),
                    compute,
                }),
                None => Err(Failure::from(CliError::Usage(format!(
                    "--gpu-arch `{a}`: write a compute capability as X.Y, e.g. 8.6 (nvidia-smi --query-gpu=compute_cap --format=csv)"
                )))),
            })
            .collect();
    }
    if !for_this_host {
        return Ok(vec![]);
    }
    let wsl = host::os_info::probe(system).wsl;
    let probe = host::nvidia_smi::probe(system, wsl, host::smi_timeout(system));
    let gpus: Vec<TargetGpu> = probe
        .gpus
        .iter()
        .filter_map(|g| {
            Some(TargetGpu {
                compute: compat::compute_capability(g.compute_cap.as_deref()?)?,
                label: format!("GPU {} {}", g.index, g.name),
            })
        })
        .collect();
    if gpus.is_empty() {
        notes.push(
            "nvidia-smi reports no GPU with a compute capability on this host: pinned without GPU-generation rules; give --gpu-arch X.Y for the target card".to_string(),
        );
    }
    Ok(gpus)
}
