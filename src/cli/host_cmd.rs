//! `stackpin host`: prints what this machine has — OS, admin rights, GPUs and driver state,
//! toolkits on disk and, with `--python`, the training library — as a compact table or JSON.

use std::path::PathBuf;
use std::time::Duration;

use super::{CliError, CmdResult, Exit, GlobalArgs, print_json};
use crate::compat;
use crate::host::{
    self, DriverState, HostReport, LibraryProbe, ProbeOptions, RealSystem, ToolkitInfo,
};

pub const EXAMPLES: &str = "\
Examples:
  stackpin host
  stackpin host --gpu 1 --json
  stackpin host --python /opt/stackpin/torch-2.5.1-cu124-linux/bin/python --library torch
  stackpin host --python /opt/stackpin/onnxruntime-gpu-1.20.2-cu129-linux/bin/python --library onnxruntime-gpu

Exit 0 whatever the host has (no GPU included), 2 when --gpu names no GPU or --python cannot run.
STACKPIN_NVIDIA_SMI_TIMEOUT (seconds, default 30) bounds each nvidia-smi call;
STACKPIN_CUDA_PREFIX moves /usr/local where toolkits are looked for.";

const SMI_TIMEOUT_VAR: &str = "STACKPIN_NVIDIA_SMI_TIMEOUT";

#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// The GPU to report on, by nvidia-smi index (default: the first CUDA_VISIBLE_DEVICES allows).
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// An interpreter to probe the training library with (e.g. the stack's venv python).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// The library to probe through --python (any name data/libraries.yaml describes).
    #[arg(long, default_value = "torch", requires = "python", value_parser = library_names())]
    pub library: String,
}

/// The libraries `--library` accepts: every described library under each of its names.
fn library_names() -> clap::builder::PossibleValuesParser {
    let values = compat::libraries().all().iter().map(|l| {
        clap::builder::PossibleValue::new(l.name.as_str()).aliases(
            l.distributions
                .iter()
                .filter(|d| **d != l.name)
                .map(String::as_str),
        )
    });
    clap::builder::PossibleValuesParser::new(values)
}

pub fn run(args: &HostArgs, global: &GlobalArgs) -> CmdResult {
    let mut options = ProbeOptions {
        gpu: args.gpu,
        python: args.python.clone(),
        library: args.library.clone(),
        ..ProbeOptions::default()
    };
    if let Ok(text) = std::env::var(SMI_TIMEOUT_VAR) {
        let secs: f64 = text.trim().parse().map_err(|_| {
            CliError::Usage(format!(
                "{SMI_TIMEOUT_VAR}=`{text}` is not a number of seconds; write it like 30 or 0.5"
            ))
        })?;
        options.smi_timeout = Duration::from_secs_f64(secs.max(0.0));
    }
    // Everything `host` probes is named by the flags (`--python`, `--gpu`): a failure is input.
    let report = host::probe(&RealSystem, &options).map_err(CliError::unusable)?;
    if global.json {
        print_json(&report)?;
    } else {
        print_human(&report);
    }
    Ok(Exit::Ok)
}

fn print_human(report: &HostReport) {
    let os = &report.os;
    let mut os_line = os.name.clone().unwrap_or_else(|| os.family.to_string());
    if let Some(kernel) = &os.kernel {
        os_line.push_str(&format!(" (kernel {kernel})"));
    }
    if os.wsl {
        os_line.push_str(", WSL");
    }
    println!("{:<10}{os_line}", "os");
    let admin = match (os.admin, os.family) {
        (Some(true), _) => "yes".to_string(),
        (Some(false), crate::os::Os::Windows) => {
            "no (`stackpin install` needs an elevated prompt)".to_string()
        }
        (Some(false), _) => "no (`stackpin install` needs root)".to_string(),
        (None, _) => "unknown".to_string(),
    };
    println!("{:<10}{admin}", "admin");
    print_driver(report);
    print_gpus(report);
    print_toolkits(&report.toolkits);
    if let Some(library) = &report.library {
        print_library(library);
    }
}

fn print_driver(report: &HostReport) {
    let driver = &report.driver;
    let smi = driver
        .nvidia_smi
        .as_ref()
        .map(|p| format!(" (via {})", p.display()))
        .unwrap_or_default();
    match &driver.state {
        DriverState::Ok => {
            let version = driver
                .gpus
                .first()
                .map_or("ok", |g| g.driver_version.as_str());
            println!("{:<10}{version}{smi}", "driver");
            match &driver.cuda_supported {
                Some(cuda) => println!(
                    "{:<10}driver supports up to CUDA {cuda} (the newest toolkit it can run, \
                     not an installed toolkit)",
                    ""
                ),
                None => println!(
                    "{:<10}driver does not report the newest CUDA it supports",
                    ""
                ),
            }
        }
        other => {
            println!("{:<10}{}{smi}", "driver", other.label());
            if let DriverState::NoDriver { message } = other {
                println!("{:<10}nvidia-smi: {message}", "");
            }
            if let Some(fix) = other.fix() {
                println!("{:<10}fix: {fix}", "");
            }
        }
    }
}

fn print_gpus(report: &HostReport) {
    let gpus = &report.driver.gpus;
    if gpus.is_empty() {
        println!(
            "{:<10}none: no NVIDIA GPU is usable on this machine{}",
            "gpus",
            if report.driver.state == DriverState::Ok {
                ""
            } else {
                " (see driver above)"
            }
        );
        return;
    }
    println!(
        "{:<10}{} found, using {}",
        "gpus",
        gpus.len(),
        selection(report)
    );
    let width = gpus.iter().map(|g| g.name.len()).max().unwrap_or(0);
    for gpu in gpus {
        let mark = if report.selected_gpu.index == Some(gpu.index) {
            '*'
        } else {
            ' '
        };
        let vram = gpu.memory_total_mib.map_or("? MiB".to_string(), |m| {
            format!("{m} MiB ({:.1} GiB)", m as f64 / 1024.0)
        });
        let cap = gpu.compute_cap.as_deref().unwrap_or("?");
        println!(
            "  {mark} {:>2}  {:<width$}  {vram:<20}  compute {cap:<5}  driver {}",
            gpu.index, gpu.name, gpu.driver_version
        );
    }
}

fn selection(report: &HostReport) -> String {
    let choice = &report.selected_gpu;
    match choice.index {
        Some(i) => format!("GPU {i} ({})", choice.reason),
        None => format!("none ({})", choice.reason),
    }
}

fn print_toolkits(toolkits: &[ToolkitInfo]) {
    if toolkits.is_empty() {
        println!("{:<10}none found", "toolkits");
        return;
    }
    println!("{:<10}{} found (* = default)", "toolkits", toolkits.len());
    let width = toolkits
        .iter()
        .map(|t| t.root.display().to_string().len())
        .max()
        .unwrap_or(0);
    for tk in toolkits {
        let mark = if tk.default { '*' } else { ' ' };
        let mut version = tk
            .version
            .as_ref()
            .map_or("unknown".to_string(), |v| v.to_string());
        if tk.version.is_some() && !tk.exact_update_known {
            version.push_str(" (exact update unknown)");
        }
        let source = match tk.source {
            host::toolkits::VersionSource::VersionJson => "version.json",
            host::toolkits::VersionSource::VersionTxt => "version.txt",
            host::toolkits::VersionSource::Nvcc => "nvcc --version",
            host::toolkits::VersionSource::Unknown => "no version file, no nvcc",
        };
        let build = tk
            .build
            .as_ref()
            .map(|b| format!(", build {b}"))
            .unwrap_or_default();
        println!(
            "  {mark} {:<width$}  {version}  from {source}{build}",
            tk.root.display().to_string()
        );
    }
}

fn print_library(probe: &LibraryProbe) {
    match probe {
        LibraryProbe::Found(info) => {
            let cuda = info
                .cuda
                .as_deref()
                .map_or("a CPU-only build".to_string(), |c| {
                    format!("built for CUDA {c}")
                });
            println!(
                "{:<10}{} {} ({}), {cuda}, cuDNN {}",
                "library",
                info.library,
                info.version,
                info.version_text,
                info.cudnn.as_deref().unwrap_or("none")
            );
            if info.cuda_available {
                let device = match (&info.device_name, &info.device_capability) {
                    (Some(n), Some(c)) => format!(", device 0: {n}, compute {c}"),
                    _ => String::new(),
                };
                println!("{:<10}sees {} GPU(s){device}", "", info.device_count);
            } else {
                let words = compat::libraries()
                    .describe(&info.library)
                    .map_or("sees no GPU".to_string(), |d| d.no_gpu_words());
                println!("{:<10}{words}", "");
            }
            if !info.arch_list.is_empty() {
                println!("{:<10}compiled for {}", "", info.arch_list.join(" "));
            }
            if !info.providers.is_empty() {
                println!(
                    "{:<10}providers {}{}",
                    "",
                    info.providers.join(" "),
                    info.device
                        .as_deref()
                        .map(|d| format!(", device {d}"))
                        .unwrap_or_default()
                );
            }
        }
        LibraryProbe::ImportFailed { library, error, .. } => {
            println!("{:<10}{library} cannot be imported: {error}", "library");
        }
    }
}
