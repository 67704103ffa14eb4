//! A name the installed release of a package does not have: the code (the repository, or a
//! package it imports) was written for releases of a dependency on one side of a change, and the
//! environment holds one from the other side. NumPy 1.24 removing its builtin aliases
//! (`np.float`, `np.int`, `np.bool`), NumPy 2's new ABI, torch 2.0 removing `torch._six`,
//! Pillow 10 removing `ANTIALIAS` and `textsize`, protobuf 4 refusing old generated code,
//! huggingface_hub 0.26 removing `cached_download`, setuptools and Python 3.12 removing
//! `pkg_resources` and `distutils`, mmcv 2 moving its training API to mmengine,
//! pytorch-lightning moving `rank_zero_only` and dropping `gpus`, scikit-image and SciPy removing
//! old functions, OpenCV's contrib modules missing from the plain wheel, and fastai's rewritten
//! majors (0.7, 1.x, 2.x) each lacking the others' modules.
//!
//! The layer is the library layer's pins whatever the driver and toolkit are, and the fix names
//! the package and the release. Each row reads the name *as the package's own message prints
//! it* (the module path in quotes, NumPy's own "was a deprecated alias" sentence), so a user's
//! own module with the same attribute, a misspelt name and a warning that only announces the
//! change stay unknown. Rows are cited in `tests/fixtures/diagnose/variants/releases.yaml`.
//! torchvision's moved modules (`functional_tensor`) and basicsr's losses are `messages`' rules;
//! a name missing from any installed package's module is `messages`' broad
//! `lib-installed-package-name-missing`, which these rows outrank on the same line.

use super::rule::line_matches;
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::Library;
use crate::diagnose::matcher::Segment;

/// One package change: the names its message prints, the release that changed them, the cure.
struct Removal {
    id: &'static str,
    /// The package as pip names it.
    package: &'static str,
    /// The message's words, lowercase, in the catalogue's `*` syntax.
    patterns: &'static [&'static str],
    /// What a line must also pass (a name that must end where it ends).
    judge: Option<fn(&str) -> bool>,
    /// What changed, in which release.
    change: &'static str,
    /// Pin below (or at least) that release, or the repository's fix.
    cure: &'static str,
}

const TABLE: &[Removal] = &[
    // NumPy deprecated the builtin aliases in 1.20 and removed them in 1.24; its AttributeError
    // says "`np.int` was a deprecated alias for the builtin `int`" (the 1.20-1.23 warning says
    // "is a deprecated alias" and is left alone). np.bool came back in 2.0.
    Removal {
        id: "lib-release-numpy-alias-removed",
        package: "numpy",
        patterns: &[
            "module 'numpy' has no attribute 'float'",
            "module 'numpy' has no attribute 'int'",
            "module 'numpy' has no attribute 'bool'",
            "module 'numpy' has no attribute 'object'",
            "module 'numpy' has no attribute 'complex'",
            "module 'numpy' has no attribute 'str'",
            "module 'numpy' has no attribute 'long'",
            "module 'numpy' has no attribute 'unicode'",
            "was a deprecated alias for the builtin",
        ],
        judge: None,
        change: "NumPy 1.24 removed the aliases of Python's builtin types (np.float, np.int, np.bool, np.object, np.complex, np.str, np.long, np.unicode), deprecated since 1.20; the code, or a package it imports (imgaug 0.4's np.bool, an older release of the failing package), still uses them",
        cure: "Pin `numpy<1.24` (e.g. `pip install \"numpy==1.23.5\"`) for code written before it, or upgrade the package that uses the alias to its release that no longer does (imgaug has none: patch np.bool to bool, or pin numpy), or replace the alias in the repository's own code with the builtin (float, int, bool, object) or np.float64 / np.int64 / np.bool_.",
    },
    // NumPy 2 changed the C ABI: an extension module built against NumPy 1.x refuses to load.
    Removal {
        id: "lib-release-numpy2-abi",
        package: "numpy",
        patterns: &["a module that was compiled using numpy 1.x cannot be run in"],
        judge: None,
        change: "NumPy 2.0 changed its C ABI: an extension module compiled against NumPy 1.x (a wheel of the failing package built before NumPy 2) cannot be imported with NumPy 2 installed",
        cure: "Pin `numpy<2` (`pip install \"numpy<2\"`, e.g. 1.26.4) until every compiled package in the environment has a NumPy 2 build, or upgrade the package the traceback names to its release built against NumPy 2.",
    },
    // torch._six was PyTorch's Python 2 compatibility module: container_abcs left it in 1.9,
    // the module itself in 2.0 (pytorch/pytorch#94709).
    Removal {
        id: "lib-release-torch-six-removed",
        package: "torch",
        patterns: &[
            "no module named 'torch._six'",
            "from 'torch._six'",
            "torch._six import*cannot import name '",
            "module 'torch' has no attribute '_six'",
        ],
        judge: Some(torch_six_at_line_end),
        change: "PyTorch 2.0 removed torch._six, its Python 2 compatibility module (container_abcs and int_classes had left it in 1.9), and the code was written for an older PyTorch",
        cure: "Patch the import in the repository's (or the package's) code: `from torch._six import inf` becomes `from torch import inf`, string_classes becomes str, int_classes int, container_abcs `collections.abc`; or upgrade the package to its release for PyTorch 2 (apex, timm and most repositories have one), or install the PyTorch 1.x the project names together with its torchvision.",
    },
    // Pillow 10.0 removed the constants and the font-size methods deprecated in 9.x.
    Removal {
        id: "lib-release-pillow10-removed",
        package: "Pillow",
        patterns: &[
            "module 'pil.image' has no attribute 'antialias'",
            "module 'pil.image' has no attribute 'linear'",
            "module 'pil.image' has no attribute 'cubic'",
            "'imagedraw' object has no attribute 'textsize'",
            "'freetypefont' object has no attribute 'getsize'",
        ],
        judge: None,
        change: "Pillow 10.0 removed Image.ANTIALIAS, Image.LINEAR and Image.CUBIC and the font-size methods (ImageDraw.textsize, FreeTypeFont.getsize), deprecated through 9.x",
        cure: "Pin `Pillow<10` (`pip install \"Pillow==9.5.0\"`) for code written before it, or take the package's or repository's fix: Image.LANCZOS (or Image.Resampling.LANCZOS) for ANTIALIAS, BILINEAR / BICUBIC for LINEAR / CUBIC, `draw.textbbox((0, 0), text, font=font)` or `font.getbbox(text)` for textsize / getsize.",
    },
    // protobuf 4 (4.21) refuses _pb2.py files generated by protoc before 3.19.
    Removal {
        id: "lib-release-protobuf4-old-generated-code",
        package: "protobuf",
        patterns: &[
            "descriptors cannot not be created directly",
            "descriptors cannot be created directly",
        ],
        judge: None,
        change: "protobuf 4 (4.21, May 2022) no longer accepts _pb2.py files generated by protoc older than 3.19, and a package in the environment (TensorBoard, TensorFlow, ONNX tooling, the repository's own protos) ships such files",
        cure: "Pin `protobuf<=3.20.3` (`pip install \"protobuf==3.20.*\"`), or upgrade the package whose _pb2.py the traceback names to its release generated for protobuf 4 (TensorBoard, TensorFlow); PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python works too, slowly.",
    },
    // fastai was rewritten twice, and each major has modules the others lack: 0.7's
    // conv_learner, column_data and structured are gone in 1.0, 1.0's core in 2.0, and 2.0's
    // `all` modules (fastai.vision.all, the tutorials' first import) are not in 1.x. A course,
    // notebook or package written for one major, run with another installed
    // (fastai/fastai#1344, #3293, #2762, #3535, autogluon/autogluon#809). The closing quote keeps
    // the modules every major has out ("No module named 'fastai.vision'" under 1.0.52 is a broken
    // install, fastai/fastai#2147), and so does a bare 'fastai' (not installed at all).
    Removal {
        id: "lib-release-fastai-major-modules",
        package: "fastai",
        patterns: &[
            "no module named 'fastai.core'",
            "no module named 'fastai.conv_learner'",
            "no module named 'fastai.column_data'",
            "no module named 'fastai.structured'",
            "no module named 'fastai.vision.all'",
            "no module named 'fastai.tabular.all'",
        ],
        judge: None,
        change: "fastai's majors were rewritten (0.7 to 1.0 in 2018, 1.x to 2.0 in August 2020) and each has modules the others lack: 0.7's fastai.conv_learner, fastai.column_data and fastai.structured are gone in 1.0, 1.x's fastai.core in 2.0, and 2.0's fastai.vision.all / fastai.tabular.all are not in 1.x; the code (a course, a notebook, a package) was written for another major than the installed one",
        cure: "Check `python -c \"import fastai; print(fastai.__version__)\"` and install the major the code was written for: the current fastai (`pip install -U fastai`, 2.x) for `from fastai.vision.all import *` and today's tutorials, `pip install \"fastai<2\"` (1.0.61) for code importing fastai.core or fastai.basic_train, fastai 0.7 (the old course's own environment) for conv_learner, column_data and structured; or port the code to the installed major.",
    },
    // huggingface_hub 0.26 removed cached_download; diffusers before 0.27 imports it.
    Removal {
        id: "lib-release-hf-hub-cached-download-removed",
        package: "huggingface_hub",
        patterns: &["cannot import name 'cached_download' from 'huggingface_hub'"],
        judge: None,
        change: "huggingface_hub 0.26 removed cached_download (replaced by hf_hub_download), and the code or a package it imports (diffusers before 0.27, older model repositories) still imports it",
        cure: "Pin `huggingface_hub<0.26` (`pip install \"huggingface_hub==0.25.2\"`), or upgrade the package that imports cached_download (`pip install -U diffusers`), or change the repository's import to hf_hub_download.",
    },
    // The other way round: a package newer than the installed huggingface_hub.
    Removal {
        id: "lib-release-hf-hub-too-old",
        package: "huggingface_hub",
        patterns: &[
            "cannot import name 'split_torch_state_dict_into_shards' from 'huggingface_hub'",
        ],
        judge: None,
        change: "split_torch_state_dict_into_shards was added in huggingface_hub 0.23, and a newer transformers, accelerate, diffusers or peft imports it while the environment holds an older huggingface_hub",
        cure: "Upgrade huggingface_hub (`pip install -U \"huggingface_hub>=0.23\"`), or pin the package that imports it (accelerate, transformers) to the release the project names.",
    },
    // setuptools 82 removed pkg_resources; Python 3.12 venvs no longer bring setuptools at all.
    Removal {
        id: "lib-release-setuptools-pkg-resources-removed",
        package: "setuptools",
        patterns: &["no module named 'pkg_resources'"],
        judge: None,
        change: "pkg_resources belongs to setuptools, which removed it in 82.0 (deprecated since 67.5), and Python 3.12's environments no longer install setuptools by default",
        cure: "Pin `setuptools<82` (`pip install \"setuptools<82\"`, or install setuptools if it is missing), or upgrade the package that imports pkg_resources to its release using importlib.metadata / importlib.resources.",
    },
    // Python 3.12 removed distutils (PEP 632); setuptools brings a copy.
    Removal {
        id: "lib-release-python312-distutils-removed",
        package: "setuptools",
        patterns: &["no module named 'distutils'"],
        judge: None,
        change: "Python 3.12 removed distutils from the standard library (PEP 632), and the code or a package it builds (an old numpy's setup, an old setuptools) still imports it",
        cure: "Install setuptools into the same environment (`pip install setuptools`; it provides distutils), or upgrade the package being built to a release with Python 3.12 wheels (numpy 1.26 and later), or run the project on the Python release it names (3.11). On Debian and Ubuntu's own Python before 3.12, the python3-distutils package.",
    },
    // setuptools 59.6 deprecated distutils.version, which torch.utils.tensorboard before 1.11 used.
    Removal {
        id: "lib-release-setuptools-distutils-version",
        package: "setuptools",
        patterns: &["module 'distutils' has no attribute 'version'"],
        judge: None,
        change: "setuptools 59.6 stopped importing distutils.version, which torch.utils.tensorboard in PyTorch before 1.11 uses (LooseVersion)",
        cure: "Pin `setuptools==59.5.0` (`pip install setuptools==59.5.0`), or upgrade PyTorch to 1.11 or later, whose tensorboard module no longer uses distutils.",
    },
    // mmcv 2.0 removed its training components (runner, parallel, engine, fileio, Config) to
    // mmengine; OpenMMLab 1.x repositories still import them.
    Removal {
        id: "lib-release-mmcv2-moved-to-mmengine",
        package: "mmcv",
        patterns: &[
            "no module named 'mmcv.runner'",
            "no module named 'mmcv.parallel'",
            "no module named 'mmcv.engine'",
            "no module named 'mmcv.fileio'",
            "module 'mmcv' has no attribute 'runner'",
            "module 'mmcv' has no attribute 'config'",
            "module 'mmcv' has no attribute 'dictaction'",
            "cannot import name 'config' from 'mmcv'",
            "cannot import name 'dictaction' from 'mmcv'",
        ],
        judge: None,
        change: "mmcv 2.0 removed its training components (mmcv.runner, mmcv.parallel, mmcv.engine, mmcv.fileio, Config, DictAction) to mmengine, and the code was written for OpenMMLab 1.x (mmcv-full 1.x)",
        cure: "Install the mmcv 1.x the repository names (`pip install -U openmim && mim install \"mmcv-full<2.0\"`, e.g. 1.7.1, built for the installed torch and CUDA) after `pip uninstall -y mmcv mmcv-full`, or port the imports to mmengine (`from mmengine.config import Config`, `from mmengine.runner import load_checkpoint`) with the repository's OpenMMLab 2.x release.",
    },
    // pytorch-lightning moved the rank-zero helpers to utilities.rank_zero (1.6) and removed the
    // old module's names (1.8); 1.7 moved core.lightning to core.module; 2.0 removed `gpus`.
    Removal {
        id: "lib-release-lightning-api-moved",
        package: "pytorch-lightning",
        patterns: &[
            "from 'pytorch_lightning.utilities.distributed'",
            "no module named 'pytorch_lightning.utilities.distributed'",
            "no module named 'pytorch_lightning.core.lightning'",
            "trainer.__init__() got an unexpected keyword argument 'gpus'",
        ],
        judge: None,
        change: "pytorch-lightning moved rank_zero_only and its neighbours from utilities.distributed to utilities.rank_zero (1.6, the old names gone in 1.8), LightningModule from core.lightning to core.module (1.7), and removed the Trainer's `gpus` argument in 2.0, and the code was written for an older release",
        cure: "Pin the pytorch-lightning the project names (`pip install \"pytorch-lightning<1.8\"` for utilities.distributed, `<2.0` for `gpus`), or patch the repository: `from pytorch_lightning.utilities.rank_zero import rank_zero_only`, `accelerator=\"gpu\", devices=N` for `gpus=N`.",
    },
    // scikit-image renamed compare_ssim / compare_psnr into skimage.metrics (0.16) and removed
    // the old names in 0.18.
    Removal {
        id: "lib-release-skimage-compare-removed",
        package: "scikit-image",
        patterns: &[
            "cannot import name 'compare_*' from 'skimage.measure'",
            "module 'skimage.measure' has no attribute 'compare_",
        ],
        judge: None,
        change: "scikit-image 0.18 removed skimage.measure.compare_ssim, compare_psnr and compare_mse (renamed skimage.metrics.structural_similarity, peak_signal_noise_ratio and mean_squared_error in 0.16)",
        cure: "Pin `scikit-image<0.18` (`pip install scikit-image==0.17.2`) for code written before it, or change the import to `from skimage.metrics import structural_similarity, peak_signal_noise_ratio`.",
    },
    // SciPy removed scipy.misc's image functions (imread, imsave in 1.2; imresize in 1.3) and
    // the window functions' scipy.signal names (1.13).
    Removal {
        id: "lib-release-scipy-removed",
        package: "scipy",
        patterns: &[
            "cannot import name 'imresize'",
            "cannot import name 'imread' from 'scipy.misc'",
            "cannot import name 'imsave' from 'scipy.misc'",
            "module 'scipy.misc' has no attribute 'imresize'",
            "module 'scipy.misc' has no attribute 'imread'",
            "module 'scipy.misc' has no attribute 'imsave'",
            "module 'scipy.signal' has no attribute 'kaiser'",
            "module 'scipy.signal' has no attribute 'gaussian'",
            "module 'scipy.signal' has no attribute 'hann'",
            "module 'scipy.signal' has no attribute 'hanning'",
            "module 'scipy.signal' has no attribute 'hamming'",
            "module 'scipy.signal' has no attribute 'blackman'",
            "cannot import name 'gaussian' from 'scipy.signal'",
        ],
        judge: None,
        change: "SciPy removed scipy.misc's image functions (imread and imsave in 1.2, imresize in 1.3) and the window functions' names directly under scipy.signal (1.13: use scipy.signal.windows), and the code was written for an older SciPy",
        cure: "Pin the SciPy the project names (`pip install \"scipy<1.3\"` for scipy.misc.imresize, with a Python and numpy it supports; `\"scipy<1.13\"` for scipy.signal's windows), or patch the code: imageio.imread / imwrite, `numpy.array(Image.fromarray(a).resize(...))` for imresize, `scipy.signal.windows.kaiser` (or get_window).",
    },
    // ximgproc and the other contrib modules are only in opencv-contrib-python; two OpenCV wheels
    // installed together overwrite each other's cv2.
    Removal {
        id: "lib-release-opencv-contrib-missing",
        package: "opencv-contrib-python",
        patterns: &["module 'cv2*' has no attribute 'ximgproc'"],
        judge: None,
        change: "cv2.ximgproc (like the other opencv_contrib modules) exists only in the opencv-contrib-python wheels: the installed cv2 is opencv-python or opencv-python-headless, or several OpenCV wheels are installed and the plain one's cv2 overwrote the contrib one's",
        cure: "Uninstall every OpenCV wheel (`pip uninstall -y opencv-python opencv-python-headless opencv-contrib-python opencv-contrib-python-headless`) and install only the contrib one (`pip install opencv-contrib-python`, or its -headless), at the version the project names.",
    },
];

/// `No module named 'torch._six` at the end of a line (an issue title cut before the quote); a
/// longer name (`torch._sixes`) is another module.
fn torch_six_at_line_end(lower: &str) -> bool {
    lower.trim_end().ends_with("no module named 'torch._six")
}

/// Each row's finding at the first line it matches, in the table's order.
pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    TABLE
        .iter()
        .filter_map(|row| {
            let seg = segments
                .iter()
                .find(|seg| line_matches(row.patterns, row.judge, &seg.lower))?;
            Some(at(
                seg,
                row.id,
                Library,
                None,
                format!(
                    "{}. The installed {} release and the code disagree on the name: the library layer's pins, not the driver or the CUDA toolkit.",
                    row.change, row.package
                ),
                format!(
                    "{} Check the installed release with `pip show {}` and pin the library layer (the manifest's library pins) to the range the project was written for. The driver and the CUDA toolkit are not involved.",
                    row.cure, row.package
                ),
                Mechanism::Plain,
                false,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::TABLE;

    #[test]
    fn patterns_are_lowercase_and_ids_unique() {
        let mut ids: Vec<&str> = TABLE.iter().map(|r| r.id).collect();
        for row in TABLE {
            for p in row.patterns {
                assert_eq!(*p, p.to_lowercase(), "{}: {p}", row.id);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), TABLE.len());
    }
}
