//! The model's stack record, `FILE.stack.yaml` written beside a trained model: the training stack
//! it came from (driver, toolkit, library, GPU) and the model's sha256, so a deployment machine
//! can be matched to it and the file checked to be the one that was trained.
//!
//! The versions come from the proven-stack record when the stack was proven (what the host
//! really had), else from the manifest's pins, and the record says which. Reading the proven
//! record is `record`'s job and hashing is `archive`'s; this module assembles and writes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::archive::hash_file;
use crate::fsutil::{self, YamlError};
use crate::manifest::Manifest;
use crate::record::ProvenStack;

/// The model stack record's schema version.
pub const MODEL_STACK_SCHEMA: u32 = 1;

/// Where a model stack record could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    #[error("cannot read the model {} to hash it: {source}; check the --model path", path.display())]
    Model {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a model stack record stackpin can read: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("cannot encode the model stack record as YAML: {message}")]
    Encode { message: String },
}

/// Where the versions in a model stack record come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    /// The proven-stack record: what `prove` found on the host.
    #[serde(alias = "proven-stack")]
    ProvenStack,
    /// The manifest's pins: the stack was never proven, so nothing was seen on a host.
    Manifest,
}

/// The trained model file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFile {
    /// The file's name (the record sits beside it).
    pub file: String,
    pub sha256: String,
    pub size: u64,
}

/// The training library as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryPin {
    pub name: String,
    pub version: String,
    /// The CUDA line the build was made for.
    pub cuda: Option<String>,
    pub cudnn: Option<String>,
}

/// The GPU the stack was proven on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPin {
    pub name: String,
    pub vram_mib: u64,
    pub compute_capability: Option<String>,
}

/// `FILE.stack.yaml`: a model and the training stack it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelStack {
    /// [`MODEL_STACK_SCHEMA`].
    pub record: u32,
    pub model: ModelFile,
    /// The manifest's `name`.
    pub stack: String,
    pub os: String,
    /// Where `driver`, `toolkit` and `library` come from.
    pub versions_from: VersionSource,
    /// When the stack was proven, for `versions_from: proven-stack`.
    pub proven_at: Option<String>,
    pub driver: String,
    pub toolkit: String,
    pub library: LibraryPin,
    /// None when the stack was never proven: the manifest names no GPU.
    pub gpu: Option<GpuPin>,
    pub exported_at: String,
}

/// The default record path: `FILE.stack.yaml` beside the model (`det.onnx` → `det.onnx.stack.yaml`).
pub fn default_path(model: &Path) -> PathBuf {
    let mut name = model.file_name().unwrap_or_default().to_os_string();
    name.push(".stack.yaml");
    model.with_file_name(name)
}

/// Hashes the model (streamed) and assembles its record from the proven stack when given, else
/// from the manifest's pins.
pub fn export(
    m: &Manifest,
    proven: Option<&ProvenStack>,
    model: &Path,
) -> Result<ModelStack, DeploymentError> {
    let (sha256, size) = hash_file(model, None).map_err(|source| DeploymentError::Model {
        path: model.to_path_buf(),
        source,
    })?;
    let model = ModelFile {
        file: model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256,
        size,
    };
    let exported_at = crate::record::now_rfc3339();
    Ok(match proven {
        Some(r) => {
            let gpu = r
                .gpus
                .iter()
                .find(|g| g.index == r.example.gpu_index)
                .or(r.gpus.first());
            ModelStack {
                record: MODEL_STACK_SCHEMA,
                model,
                stack: r.stack.clone(),
                os: r.host.os.clone(),
                versions_from: VersionSource::ProvenStack,
                proven_at: Some(r.proven_at.clone()),
                driver: gpu.map_or_else(|| m.driver.version.to_string(), |g| g.driver.clone()),
                toolkit: r.toolkit.version.clone(),
                library: LibraryPin {
                    name: r.library.name.clone(),
                    version: r.library.version.clone(),
                    cuda: r.library.cuda_build.clone(),
                    cudnn: r.library.cudnn.clone(),
                },
                gpu: gpu.map(|g| GpuPin {
                    name: g.name.clone(),
                    vram_mib: g.vram_mib,
                    compute_capability: g.compute_capability.clone(),
                }),
                exported_at,
            }
        }
        None => ModelStack {
            record: MODEL_STACK_SCHEMA,
            model,
            stack: m.name.clone(),
            os: m.os.to_string(),
            versions_from: VersionSource::Manifest,
            proven_at: None,
            driver: m.driver.version.to_string(),
            toolkit: m.toolkit.version.to_string(),
            library: LibraryPin {
                name: m.library.name.clone(),
                version: m.library.version.to_string(),
                cuda: Some(m.library.cuda.to_string()),
                cudnn: None,
            },
            gpu: None,
            exported_at,
        },
    })
}

impl ModelStack {
    /// Writes the record atomically: a reader sees no record or a whole one.
    pub fn write(&self, path: &Path) -> Result<(), DeploymentError> {
        Ok(fsutil::write_yaml(path, "", self)?)
    }

    /// Reads a record written by [`write`](Self::write).
    pub fn read(path: &Path) -> Result<ModelStack, DeploymentError> {
        Ok(fsutil::read_yaml(path)?)
    }
}

/// The shared YAML helper's errors, in the model stack record's words.
impl From<YamlError> for DeploymentError {
    fn from(e: YamlError) -> Self {
        match e {
            YamlError::Read { path, source } => DeploymentError::Read { path, source },
            YamlError::Parse { path, source } => DeploymentError::Parse {
                path,
                message: source.to_string(),
            },
            YamlError::Encode { reason, .. } => DeploymentError::Encode { message: reason },
            YamlError::Write { path, source } => DeploymentError::Write { path, source },
        }
    }
}

// The row of README's exit-code table each error belongs to; `?` carries it to the CLI.
use crate::exit::{Exit, ExitStatus};

impl ExitStatus for DeploymentError {
    fn exit(&self) -> Exit {
        match self {
            DeploymentError::Write { .. } => Exit::External,
            // The model or the record the user named could not be read.
            _ => Exit::Input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/torch-2.5.1-cu124-linux.yaml"),
        )
        .expect("shipped manifest");
        crate::manifest::parse(&text, Path::new("torch.yaml")).expect("parses")
    }

    #[test]
    fn default_path_sits_beside_the_model_with_the_suffix_appended() {
        assert_eq!(
            default_path(Path::new("out/det.onnx")),
            PathBuf::from("out/det.onnx.stack.yaml")
        );
    }

    #[test]
    fn without_a_proven_record_the_pins_are_used_and_said_to_be() {
        let dir = tempfile::tempdir().expect("temp");
        let model = dir.path().join("det.onnx");
        std::fs::write(&model, b"abc").expect("model");
        let r = export(&manifest(), None, &model).expect("export");
        assert_eq!(r.versions_from, VersionSource::Manifest);
        assert_eq!(r.driver, "595.71.05");
        assert_eq!(r.library.cuda.as_deref(), Some("12.4"));
        assert_eq!(r.gpu, None);
        // sha256("abc"), the FIPS 180-2 test vector.
        assert_eq!(
            r.model.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let path = default_path(&model);
        r.write(&path).expect("write");
        assert_eq!(ModelStack::read(&path).expect("read"), r);
    }

    #[test]
    fn a_missing_model_names_the_path() {
        let err = export(&manifest(), None, Path::new("/nonexistent/m.pt")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/m.pt"), "{err}");
    }
}
