//! How long a Windows venv root may be before pip's writes pass Windows' path limits without
//! `LongPathsEnabled`, derived from the deepest paths inside the pinned wheels
//! (`data/wheel-paths.yaml`, measured from the wheels' own listings) instead of a guess.
//! `check` warns past the limit; `install` refuses past it unless the target has long paths.
//! Reads no registry itself: the caller hands in what `reg query` said.

use crate::compat::{self, WheelPaths};
use crate::manifest::{Manifest, Problem};

/// MAX_PATH (260) less the terminating NUL: the longest file path a program that does not opt
/// in to long paths can open.
pub const MAX_FILE_PATH: usize = 259;

/// CreateDirectory's limit, MAX_PATH less 12 (room for an 8.3 name), less the NUL.
pub const MAX_FOLDER_PATH: usize = 247;

/// What stands between the venv root and a wheel's own paths.
pub const SITE_PACKAGES: &str = r"\Lib\site-packages\";

/// Python writes a `.pyc` first as `<pyc>.<id>` (importlib's `_write_atomic`): a dot and a
/// decimal object id of up to 20 digits on 64-bit Windows.
pub const PYC_TEMP_SUFFIX: usize = 21;

/// The venv root limit for a manifest's pinned wheels, and the wheel that sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VenvRootLimit {
    /// The longest root, in characters.
    pub max_root: usize,
    /// `torch==2.14.0+cu130`.
    pub wheel: String,
    /// The deepest path pip writes below site-packages for that wheel, and what it is.
    pub deepest: usize,
    pub what: String,
}

/// The limit one wheel sets: the file limit over its deepest file or pyc, the folder limit
/// over its deepest folder, whichever is tighter.
pub fn limit_for(row: &WheelPaths) -> VenvRootLimit {
    let pyc = row.deepest_pyc + PYC_TEMP_SUFFIX;
    let (file, what) = if pyc > row.deepest_file {
        (
            pyc,
            format!(
                "a compiled .pyc of {} characters, {pyc} while Python writes it",
                row.deepest_pyc
            ),
        )
    } else {
        (row.deepest_file, format!("`{}`", row.path))
    };
    let by_file = MAX_FILE_PATH.saturating_sub(SITE_PACKAGES.len() + file);
    let by_folder = MAX_FOLDER_PATH.saturating_sub(SITE_PACKAGES.len() + row.deepest_folder);
    let local = row
        .local
        .as_deref()
        .map(|l| format!("+{l}"))
        .unwrap_or_default();
    let wheel = format!("{}=={}{local}", row.distribution, row.version);
    if by_folder < by_file {
        VenvRootLimit {
            max_root: by_folder,
            wheel,
            deepest: row.deepest_folder,
            what: "its deepest folder (Windows' folder limit is 248)".to_string(),
        }
    } else {
        VenvRootLimit {
            max_root: by_file,
            wheel,
            deepest: file,
            what,
        }
    }
}

/// The deepest path below site-packages that issue 35's audit found in torch's cu130 wheels
/// from PyTorch's own index: 179 characters below the venv root, `Lib\site-packages\` included.
/// That index is not reachable from the machine that measures `data/wheel-paths.yaml`, so every
/// build stackpin has not measured is held to it.
pub const AUDITED_DEEPEST_FOLDER: usize = 179 - (SITE_PACKAGES.len() - 1);

/// The distributions PyTorch's index builds once per CUDA line (`torch==2.14.0+cu130`).
const BUILT_PER_CUDA_LINE: [&str; 3] = ["torch", "torchvision", "torchaudio"];

/// The limit a requirement without a measured row gets: the audited figure, at the folder limit.
fn unmeasured(name: &str, version: &str, local: Option<&str>) -> VenvRootLimit {
    let local = local.map(|l| format!("+{l}")).unwrap_or_default();
    VenvRootLimit {
        max_root: MAX_FOLDER_PATH.saturating_sub(SITE_PACKAGES.len() + AUDITED_DEEPEST_FOLDER),
        wheel: format!("{name}=={version}{local}"),
        deepest: AUDITED_DEEPEST_FOLDER,
        what: "not measured for this build; torch's cu130 wheels reach 179 characters below the \
               venv root in issue 35's audit, against Windows' folder limit of 248"
            .to_string(),
    }
}

/// The tightest limit over the manifest's `name==version` requirements: a measured row's, or
/// for a build the data has not measured, the audited figure ([`AUDITED_DEEPEST_FOLDER`]).
/// `None` for a library without pip or without pinned requirements.
pub fn venv_root_limit(m: &Manifest) -> Option<VenvRootLimit> {
    let pip = m.library.pip.as_ref()?;
    let local = pip.index_url.as_deref().and_then(index_local_version);
    pip.requirements
        .iter()
        .filter_map(|r| {
            let (name, version) = r.split_once("==")?;
            let version = version.trim();
            let (version, own_local) = match version.split_once('+') {
                Some((v, l)) => (v, Some(l)),
                None => (version, local),
            };
            let name = name.trim();
            // PyPI's build does not stand for a CUDA build of the distributions built per CUDA
            // line: their trees differ (issue 35's audit measured torch cu130's deeper).
            let row = compat::wheel_paths(name, version, own_local).filter(|row| {
                row.local.is_some() || own_local.is_none() || !BUILT_PER_CUDA_LINE.contains(&name)
            });
            Some(match row {
                Some(row) => limit_for(row),
                None => unmeasured(name, version, own_local),
            })
        })
        .min_by_key(|l| l.max_root)
}

/// `https://download.pytorch.org/whl/cu130` → `cu130`: the local version the index's builds carry.
fn index_local_version(url: &str) -> Option<&str> {
    let last = url.trim_end_matches('/').rsplit('/').next()?;
    let digits = last
        .strip_prefix("cu")
        .or_else(|| last.strip_prefix("rocm"))?;
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.')).then_some(last)
}

/// Why `root` is too long for the pinned wheels without long paths, with the measured figures;
/// `None` when it fits.
pub fn too_long(root: &str, limit: &VenvRootLimit) -> Option<String> {
    let length = root.chars().count();
    if length <= limit.max_root {
        return None;
    }
    Some(format!(
        "the venv root `{root}` is {length} characters; {}'s deepest path below site-packages is \
         {} characters ({}), so pip would write {} characters past the root, {} in all, beyond \
         Windows' MAX_PATH (260) without LongPathsEnabled: a root of at most {} characters fits",
        limit.wheel,
        limit.deepest,
        limit.what,
        SITE_PACKAGES.len() + limit.deepest,
        length + SITE_PACKAGES.len() + limit.deepest,
        limit.max_root
    ))
}

/// `check`'s rule: a Windows venv root past the limit needs LongPathsEnabled on the target.
pub fn check_rule(m: &Manifest) -> Option<Problem> {
    if m.os != crate::os::Os::Windows {
        return None;
    }
    let root = m.library.venv.as_deref()?;
    m.library.pip.as_ref()?;
    let why = too_long(root, &venv_root_limit(m)?)?;
    Some(Problem::warning(
        "library.venv",
        format!(
            "{why}; the target needs LongPathsEnabled=1 \
             (HKLM\\SYSTEM\\CurrentControlSet\\Control\\FileSystem), or a shorter root such as \
             C:\\stackpin\\<stack>"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torch_pypi() -> &'static WheelPaths {
        compat::wheel_paths("torch", "2.14.0", None).expect("measured")
    }

    #[test]
    fn torch_pypis_limit_follows_from_its_measured_deepest_paths() {
        assert!(
            compat::wheel_paths("torch", "2.14.0", Some("cu130")).is_none_or(|r| r.local.is_none()),
            "the cu130 build was never measured: it has no row of its own"
        );
        let row = torch_pypi();
        assert!(row.path.starts_with("torch-2.14.0.dist-info/"));
        assert_eq!(row.path.len(), row.deepest_file, "the row's own path");
        let limit = limit_for(row);
        // 259 - 19 - (116 + 21) = 103 by the pyc; the folder limit 247 - 19 - 109 = 119.
        assert_eq!(limit.max_root, 103, "{limit:?}");
        assert_eq!(limit.wheel, "torch==2.14.0");
        assert_eq!(limit.deepest, 137);
    }

    #[test]
    fn a_root_past_the_limit_is_told_the_measured_lengths() {
        let limit = limit_for(torch_pypi());
        let root = format!(r"C:\Users\{}\venv", "a".repeat(100));
        let why = too_long(&root, &limit).expect("too long");
        assert!(why.contains("is 114 characters"), "{why}");
        assert!(why.contains("137 characters"), "{why}");
        assert!(why.contains("at most 103"), "{why}");
        assert_eq!(
            too_long(r"C:\stackpin\torch-2.14.0-cu130-windows", &limit),
            None
        );
    }

    #[test]
    fn the_index_names_the_build() {
        assert_eq!(
            index_local_version("https://download.pytorch.org/whl/cu130/"),
            Some("cu130")
        );
        assert_eq!(index_local_version("https://example.org/simple"), None);
    }
}
