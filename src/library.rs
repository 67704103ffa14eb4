//! The libraries stackpin knows how to talk to, as data (`data/libraries.yaml`): each library's
//! distributions, import module, the expressions its probe evaluates, its bundled example and
//! its one-tensor baseline. This module owns the table's shape and its lookups; the table in use
//! is loaded with the other release tables and handed out by `compat::libraries()` (compat
//! depends on this module, never the reverse).
//!
//! Every place that used to branch on `"torch"` or `"tensorflow"` asks the table instead: the
//! probe picks its Python function by [`LibraryDescription::probe`], `pin` writes
//! [`LibraryDescription::example_run`], the texts quote [`Asks`]. Adding a library is a row in the
//! data and one probe function (see docs/release-data.md, "Adding a library"). This module
//! reads nothing and runs nothing.

use serde::{Deserialize, Serialize};

use crate::manifest::Role;
use crate::version::Version;

/// `data/libraries.yaml`.
#[derive(Debug, Deserialize)]
pub struct LibraryTable {
    pub read_on: String,
    pub libraries: Vec<LibraryDescription>,
}

/// One library: how to find it, ask it and prove it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryDescription {
    /// The distribution a manifest's `library.name` and `pin --library` use.
    pub name: String,
    /// What users call it (`ONNX Runtime`).
    pub title: String,
    /// Every name that means this library in a manifest.
    pub distributions: Vec<String>,
    /// The import name (`onnxruntime` for `onnxruntime-gpu`).
    pub module: String,
    /// Selects `probe_<probe>()` and `baseline_<probe>()` in the probe script.
    pub probe: String,
    pub role: Role,
    /// How the build's CUDA must match the manifest's `library.cuda`.
    pub cuda_match: CudaMatch,
    pub asks: Asks,
    pub example: ExampleSpec,
    /// What the one-tensor baseline holds on the GPU, in words.
    pub baseline: String,
}

/// How strictly a build's CUDA must match the pinned line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaMatch {
    /// The same `major.minor` (torch's `cu124` wheels are built for 12.4).
    Line,
    /// The same major (one build runs on every line of its CUDA major).
    Major,
}

impl CudaMatch {
    /// Whether a build for `built` runs as pinned for `pinned`.
    pub fn accepts(self, built: &Version, pinned: &Version) -> bool {
        match self {
            CudaMatch::Line => built.major_minor() == pinned.major_minor(),
            CudaMatch::Major => built.major() == pinned.major(),
        }
    }
}

/// The Python expressions the probe evaluates, quoted in texts so a user can ask by hand.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Asks {
    pub version: String,
    pub cuda: String,
    pub gpus: String,
    pub carries: String,
}

/// The bundled example `prove` runs for a pinned stack.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleSpec {
    /// A script in `scripts/`, bundled into the binary.
    pub script: String,
    /// Its arguments after the script; `{batch}` is the manifest's placeholder.
    pub args: Vec<String>,
}

/// The probe function used for a library without a row: it imports the distribution's module
/// and reports its version only.
pub const GENERIC_PROBE: &str = "module";

impl LibraryDescription {
    /// The manifest's `example.run` for this library.
    pub fn example_run(&self) -> Vec<String> {
        let mut run = vec![
            "{python}".to_string(),
            format!("{{examples}}/{}", self.example.script),
        ];
        run.extend(self.example.args.iter().cloned());
        run
    }

    /// True for a deployment runtime (an inference stack's library).
    pub fn is_inference(&self) -> bool {
        self.role == Role::Inference
    }

    /// "sees no GPU" with the question that was asked, for host, plan and failure texts.
    pub fn no_gpu_words(&self) -> String {
        format!("sees no GPU (`{}` found none)", self.asks.gpus)
    }
}

impl LibraryTable {
    /// Every library stackpin has a description for, in the data's order.
    pub fn all(&self) -> &[LibraryDescription] {
        &self.libraries
    }

    /// The canonical names (`torch`, `tensorflow`, `onnxruntime-gpu`), for `--help` and errors.
    pub fn names(&self) -> Vec<&str> {
        self.libraries.iter().map(|l| l.name.as_str()).collect()
    }

    /// The description whose distributions include `name` (`-`, `_` and case do not matter, as
    /// on the package index).
    pub fn describe(&self, name: &str) -> Option<&LibraryDescription> {
        let wanted = normalize(name);
        self.libraries
            .iter()
            .find(|l| l.distributions.iter().any(|d| normalize(d) == wanted))
    }

    /// The probe target for a manifest's library name: its description's, or the generic probe
    /// of the module the distribution most likely installs (`my-lib` → `my_lib`).
    pub fn probe_target(&self, name: &str) -> ProbeTarget {
        match self.describe(name) {
            Some(d) => ProbeTarget {
                probe: d.probe.clone(),
                module: d.module.clone(),
                distribution: d.name.clone(),
            },
            None => ProbeTarget {
                probe: GENERIC_PROBE.to_string(),
                module: name.replace('-', "_"),
                distribution: name.to_string(),
            },
        }
    }

    /// The plan's line about the library's CUDA build, in the library's own terms.
    pub fn cuda_build_words(&self, name: &str, pinned: &Version) -> String {
        match self.describe(name) {
            Some(d) if d.cuda_match == CudaMatch::Major => format!(
                "{name} built for CUDA {major}.x (`{}`): one build runs on every CUDA {major} line, {pinned} pinned; it must not be newer than the driver's CUDA",
                d.asks.cuda,
                major = pinned.major()
            ),
            Some(d) => format!(
                "{name} built for CUDA {pinned} (`{}`): the runtime the library bundles or loads; it must not be newer than the driver's CUDA",
                d.asks.cuda
            ),
            None => format!(
                "{name} built for CUDA {pinned}: the runtime the library bundles or loads; it must not be newer than the driver's CUDA"
            ),
        }
    }
}

/// What the probe script is told: which function, which module, which distribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    pub probe: String,
    pub module: String,
    pub distribution: String,
}

/// PEP 503 normalisation: runs of `-`, `_`, `.` are one `-`, lowercase.
fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(name: &str) -> Option<&'static LibraryDescription> {
        crate::compat::libraries().describe(name)
    }

    fn probe_target(name: &str) -> ProbeTarget {
        crate::compat::libraries().probe_target(name)
    }

    fn all() -> &'static [LibraryDescription] {
        crate::compat::libraries().all()
    }

    fn names() -> Vec<&'static str> {
        crate::compat::libraries().names()
    }

    #[test]
    fn onnxruntime_gpu_imports_as_onnxruntime() {
        let t = probe_target("onnxruntime-gpu");
        assert_eq!(t.module, "onnxruntime");
        assert_eq!(t.probe, "onnxruntime");
        assert_eq!(
            describe("onnxruntime").map(|d| d.name.as_str()),
            Some("onnxruntime-gpu")
        );
    }

    #[test]
    fn names_match_across_dash_underscore_and_case() {
        assert_eq!(
            describe("TensorFlow_GPU").map(|d| d.name.as_str()),
            Some("tensorflow")
        );
        assert!(describe("six").is_none());
    }

    #[test]
    fn an_undescribed_library_gets_the_generic_probe_of_its_module() {
        let t = probe_target("my-lib");
        assert_eq!(t.probe, GENERIC_PROBE);
        assert_eq!(t.module, "my_lib");
        assert_eq!(t.distribution, "my-lib");
    }

    #[test]
    fn every_description_names_a_bundled_example_and_a_probe_function_that_exist() {
        let script = crate::host::library_probe::PROBE_SCRIPT;
        for lib in all() {
            assert!(
                crate::examples::bundled(&lib.example.script).is_some(),
                "{}: no bundled {}",
                lib.name,
                lib.example.script
            );
            for kind in ["probe", "baseline"] {
                let def = format!("def {kind}_{}(", lib.probe);
                assert!(script.contains(&def), "{}: no `{def}`", lib.name);
            }
            assert!(lib.distributions.contains(&lib.name), "{}", lib.name);
        }
    }

    #[test]
    fn every_described_library_has_release_data_and_the_reverse() {
        let described: Vec<&str> = names();
        assert_eq!(described, crate::compat::KNOWN_LIBRARIES);
        assert!(describe("onnxruntime-gpu").is_some_and(|d| d.is_inference()));
        assert!(describe("torch").is_some_and(|d| !d.is_inference()));
    }

    #[test]
    fn onnxruntime_accepts_any_line_of_its_cuda_major_and_torch_only_its_own() {
        let v = |s: &str| Version::parse(s).expect("version");
        let ort = describe("onnxruntime-gpu").expect("ort").cuda_match;
        assert!(ort.accepts(&v("12.6"), &v("12.4")));
        assert!(!ort.accepts(&v("13.0"), &v("12.4")));
        let torch = describe("torch").expect("torch").cuda_match;
        assert!(torch.accepts(&v("12.4"), &v("12.4.1")));
        assert!(!torch.accepts(&v("12.6"), &v("12.4")));
    }

    fn shipped_manifests() -> Vec<(String, crate::manifest::Manifest)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("manifests/") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let m = crate::manifest::read(&path).expect("a shipped manifest parses");
                out.push((path.display().to_string(), m));
            }
        }
        assert!(out.len() >= 8, "every shipped manifest is read");
        out
    }

    #[test]
    fn every_shipped_manifests_pip_requirements_name_versions_the_data_knows() {
        use crate::compat::{LibraryLookup, library_release};
        for (file, m) in shipped_manifests() {
            let Some(pip) = &m.library.pip else { continue };
            let LibraryLookup::Known(release) =
                library_release(&m.library.name, &m.library.version, m.os)
            else {
                panic!(
                    "{file}: {} {} is not in the data",
                    m.library.name, m.library.version
                );
            };
            assert!(
                release
                    .versions
                    .iter()
                    .any(|v| v.same_release(&m.library.version)),
                "{file}: {} {} is not a version the data knows ({:?})",
                m.library.name,
                m.library.version,
                release.versions
            );
            // The library, its companions and extras exactly as the data pins them, so no
            // requirement names a version the release data does not vouch for.
            let expected = release.requirements(&m.library.version);
            for req in &pip.requirements {
                assert!(
                    expected.contains(req),
                    "{file}: `{req}` is not what the data pins for {} {} ({expected:?})",
                    m.library.name,
                    m.library.version
                );
            }
        }
    }

    #[test]
    fn the_shipped_inference_manifest_is_on_the_cuda_line_pin_chooses() {
        for (file, m) in shipped_manifests() {
            if !describe(&m.library.name).is_some_and(|d| d.is_inference()) {
                continue;
            }
            let pinned = crate::pin::pin(&crate::pin::PinRequest {
                library: m.library.name.clone(),
                version: m.library.version.clone(),
                os: m.os,
                toolkit: None,
                driver: None,
                python: m.library.python_version.clone(),
                host_python: None,
                gpus: vec![],
                gpu_name: None,
                windows_server: false,
                unknown_release: false,
                with: vec![],
                installer: crate::manifest::LibraryInstaller::Uv,
                toolkit_source: crate::manifest::ToolkitSource::Runfile,
            })
            .expect("pins");
            assert_eq!(
                pinned.manifest.toolkit.version, m.toolkit.version,
                "{file}: pin chooses another toolkit"
            );
            assert_eq!(pinned.manifest.library.cuda, m.library.cuda, "{file}");
            assert_eq!(pinned.manifest.name, m.name, "{file}");
        }
    }

    #[test]
    fn the_no_gpu_words_quote_each_librarys_own_question() {
        let tf = describe("tensorflow").expect("tensorflow");
        assert!(tf.no_gpu_words().contains("list_physical_devices"));
        assert!(!tf.no_gpu_words().contains("torch"));
    }
}
