//! The rules of a toolkit's two sources that need no release data: a runfile toolkit names its
//! installer and command; a wheel toolkit (`source: wheels`) pins every component wheel exactly
//! (name, version, file, sha256), carries `nvidia-cuda-nvcc`, and keeps every component on the
//! toolkit's CUDA line. Whether the components are exactly one release's is `check`'s question
//! (it has the release data).

use super::validate::{Problem, is_sha256, unsafe_file_name};
use super::{Manifest, ToolkitSource, ToolkitWheel};
use crate::os::Os;

/// The component that carries the compiler driver: a wheel toolkit without it has no `nvcc`.
pub const NVCC_COMPONENT: &str = "nvidia-cuda-nvcc";

/// Problems of `toolkit.source` and what it needs.
pub fn check_toolkit_source(m: &Manifest, out: &mut Vec<Problem>) {
    let t = &m.toolkit;
    match t.source {
        ToolkitSource::Runfile => {
            if t.installer.is_none() {
                out.push(Problem::error(
                    "toolkit.installer",
                    "a runfile toolkit needs `installer: {url: …}` (or `source: wheels` with `components:`)",
                ));
            }
            if t.run.is_empty() {
                out.push(Problem::error(
                    "toolkit.run",
                    "a runfile toolkit needs `run:`, the installer's command",
                ));
            }
            if !t.components.is_empty() || t.index_url.is_some() {
                out.push(Problem::error(
                    "toolkit.components",
                    "`components:` and `index_url:` belong to `source: wheels`; add `source: wheels` or remove them",
                ));
            }
        }
        ToolkitSource::Wheels => check_wheels(m, out),
    }
}

fn check_wheels(m: &Manifest, out: &mut Vec<Problem>) {
    let t = &m.toolkit;
    if t.installer.is_some() || !t.run.is_empty() {
        out.push(Problem::error(
            "toolkit.installer",
            "a wheel toolkit is unpacked by stackpin: remove `installer:` and `run:` (or use `source: runfile`)",
        ));
    }
    if t.components.is_empty() {
        out.push(Problem::error(
            "toolkit.components",
            "a wheel toolkit lists its component wheels, each pinned (`stackpin pin --toolkit-source wheels` writes them)",
        ));
        return;
    }
    for (i, c) in t.components.iter().enumerate() {
        check_component(&format!("toolkit.components[{i}]"), c, m.os, out);
        if t.components[..i].iter().any(|o| o.name == c.name) {
            out.push(Problem::error(
                format!("toolkit.components[{i}].name"),
                format!("`{}` is listed twice; pin each component once", c.name),
            ));
        }
    }
    if !t.components.iter().any(|c| c.name == NVCC_COMPONENT) {
        out.push(Problem::error(
            "toolkit.components",
            format!(
                "no `{NVCC_COMPONENT}`: without it the toolkit has no nvcc; add the release's `{NVCC_COMPONENT}`"
            ),
        ));
    }
    if let Some(message) = mixed_lines(&t.version, &t.components) {
        out.push(Problem::error("toolkit.components", message));
    }
}

fn check_component(field: &str, c: &ToolkitWheel, os: Os, out: &mut Vec<Problem>) {
    if !is_sha256(&c.sha256) {
        out.push(Problem::error(
            format!("{field}.sha256"),
            format!(
                "`{}` is not a SHA-256: a component wheel is pinned by its published sha256 (64 hexadecimal characters)",
                c.sha256
            ),
        ));
    }
    if let Some(why) = unsafe_file_name(&c.file) {
        out.push(Problem::error(
            format!("{field}.file"),
            format!("the file name `{}` is unsafe: {why}", c.file),
        ));
        return;
    }
    let stem = format!("{}-{}-", c.name.replace('-', "_"), c.version);
    if !c.file.ends_with(".whl") || !c.file.to_ascii_lowercase().starts_with(&stem) {
        out.push(Problem::error(
            format!("{field}.file"),
            format!(
                "`{}` is not the wheel of {} (expected `{stem}…whl`)",
                c.file,
                c.requirement()
            ),
        ));
    }
    let for_os = match os {
        Os::Linux => c.file.contains("linux"),
        Os::Windows => c.file.contains("win_amd64"),
    };
    if !for_os {
        out.push(Problem::error(
            format!("{field}.file"),
            format!("`{}` is not a wheel for {os} x86_64", c.file),
        ));
    }
}

/// The words for components that are not all on the toolkit's CUDA line (`13.0`), naming each
/// version: `nvidia-cuda-nvcc 13.0.88 with nvidia-nvvm 13.5.37`. `None` when they all are.
pub fn mixed_lines(
    toolkit: &crate::version::Version,
    components: &[ToolkitWheel],
) -> Option<String> {
    let line = toolkit.major_minor();
    let off: Vec<&ToolkitWheel> = components
        .iter()
        .filter(|c| c.version.major_minor() != line)
        .collect();
    if off.is_empty() {
        return None;
    }
    let on: Vec<String> = components
        .iter()
        .filter(|c| c.version.major_minor() == line)
        .map(|c| format!("{} {}", c.name, c.version))
        .collect();
    let off_words: Vec<String> = off
        .iter()
        .map(|c| format!("{} {}", c.name, c.version))
        .collect();
    Some(format!(
        "the components are not all of one release: {} with {}; NVIDIA's tools refuse such a mix at the first compile (`ptxas fatal: Unsupported .version …`); pin every component to CUDA {toolkit}'s own versions (`stackpin pin --toolkit-source wheels`)",
        if on.is_empty() {
            format!("CUDA {toolkit}")
        } else {
            on.join(", ")
        },
        off_words.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Version;

    fn wheel(name: &str, version: &str) -> ToolkitWheel {
        ToolkitWheel {
            name: name.into(),
            version: Version::parse(version).expect("version"),
            file: format!(
                "{}-{version}-py3-none-manylinux2014_x86_64.whl",
                name.replace('-', "_")
            ),
            sha256: "a".repeat(64),
        }
    }

    #[test]
    fn components_off_the_toolkits_line_are_named_with_their_versions() {
        let toolkit = Version::parse("13.0.2").expect("version");
        let set = [
            wheel("nvidia-cuda-nvcc", "13.0.88"),
            wheel("nvidia-nvvm", "13.5.37"),
            wheel("nvidia-cuda-crt", "13.5.37"),
        ];
        let message = mixed_lines(&toolkit, &set).expect("a mix");
        assert!(
            message.contains(
                "nvidia-cuda-nvcc 13.0.88 with nvidia-nvvm 13.5.37, nvidia-cuda-crt 13.5.37"
            ),
            "{message}"
        );
        assert_eq!(mixed_lines(&toolkit, &set[..1]), None);
    }

    #[test]
    fn a_component_file_must_be_its_own_wheel_for_the_os() {
        let mut out = Vec::new();
        let mut c = wheel("nvidia-nvvm", "13.0.88");
        check_component("c", &c, Os::Linux, &mut out);
        assert!(out.is_empty(), "{out:?}");
        check_component("c", &c, Os::Windows, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        out.clear();
        c.file = "nvidia_nvvm-13.5.37-py3-none-manylinux2014_x86_64.whl".into();
        c.sha256 = "nope".into();
        check_component("c", &c, Os::Linux, &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
    }
}
