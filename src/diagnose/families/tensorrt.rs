//! TensorRT on the way from a trained model to an engine (breadth pass brL): the plugin
//! registry, the card generations a TensorRT release has kernels for, the `tensorrt` Python
//! package, the API a program was written against, torch2trt's converters, INT8 on a card
//! without fast INT8, and the linker missing TensorRT's own libraries.
//!
//! The neighbours stay where they are: a serialized engine from another TensorRT or GPU and the
//! ONNX parser rejecting a model are `runtimes`' (`lib-tensorrt-engine-stale`,
//! `lib-tensorrt-model-import`), the builder finding no tactic is `messages`'
//! (`mem-tensorrt-no-tactic`), a libnvinfer that will not load is the loader's
//! (`tk-loader-tensorrt-missing`). What is placed here names its mechanism on its own line:
//!
//! - TensorRT looked a plugin up by name and found no creator: the library that registers it
//!   (libnvinfer_plugin through initLibNvInferPlugins, a project's own plugin .so, mmdeploy's
//!   ops) was not loaded into the process, or the ONNX op is one this TensorRT has no layer for,
//!   so the parser fell back to a plugin of that name (the library either way).
//! - "Unsupported SM": this TensorRT release has no kernels for the card's compute capability.
//!   Which side is out of date depends on the card: TensorRT 10 dropped cards before Turing
//!   (SM 7.5), older releases lack the newer cards. The SM the message names decides the order
//!   (before 7.5: the card first, the library second; otherwise, or when no SM is named, the
//!   library first, the card second), so neither reading is said alone.
//! - The `tensorrt` Python package (or its bindings / libs wheel) absent from this interpreter.
//! - The program calling a TensorRT API this release does not have (TensorRT 8 dropped
//!   `build_cuda_engine`, 10 the bindings API: `getNbBindings`, `get_binding_dtype`).
//! - torch2trt reaching a layer it has no converter for (`'Tensor' object has no attribute
//!   '_trt'`).
//! - The builder told to use INT8 on a card without fast INT8 (`platformHasFastInt8`).
//! - ONNX's shape inference contradicting the shapes an exported model declares (onnx-simplifier
//!   and the ONNX checker on the way to TensorRT): the exported file, not the GPU stack.
//! - `ld: cannot find -lnvinfer` (or -lnvinfer_plugin, -lnvonnxparser, -lnvparsers): TensorRT's
//!   lib folder is not on the linker's path, placed like the loader places TensorRT (beside the
//!   toolkit, the library second).

use super::rule::{Rule, find_each};
use super::{Finding, Mechanism, at};
use crate::diagnose::FailureLayer::{Hardware, Library, Toolkit};
use crate::diagnose::matcher::Segment;

pub(super) const RULES: &[Rule] = &[
    // The plugin registry lookup failing, in its three wordings: the registry's own
    // ("getPluginCreator could not find plugin X version 1"), the ONNX parser's fallback
    // importer ("Plugin not found, are the plugin name, version, and namespace correct?") and
    // the engine reader's ("Cannot deserialize plugin since corresponding IPluginCreator not
    // found in Plugin Registry"). onnx/onnx-tensorrt#800 (Round: no TensorRT layer yet),
    // antgroup/ditto-talkinghead#45 (GridSample3D), spacewalk01/tensorrt-yolov9#4 and
    // Dominic23331/rtmpose_tensorrt#1 (EfficientNMS_TRT / mmdeploy's TRTBatchedNMS in a C++
    // program that never loaded the plugin library), DanaHan/Yolov5-in-Deepstream-5.0#5 (the
    // project's libmyplugins.so, preloaded under a misspelt LD_PRELOAD), onnx/onnx-tensorrt#553
    // (NonZero on TensorRT 7). The verbose "Registered plugin creator - ::X version 1" lines are
    // the registry filling, no failure.
    Rule {
        id: "lib-tensorrt-plugin-not-registered",
        patterns: &[
            "getplugincreator could not find plugin",
            "plugin not found, are the plugin name, version, and namespace correct",
            "corresponding iplugincreator not found in plugin registry",
        ],
        layer: Library,
        second: None,
        cause: "TensorRT looked up a plugin by name and no library had registered it: the plugin library was not loaded into this process (TensorRT's own libnvinfer_plugin without initLibNvInferPlugins, a project's plugin .so, mmdeploy's TensorRT ops), or the model uses an ONNX op this TensorRT has no layer for, so the parser looked for a plugin of that name.",
        fix: "Load the library that registers the plugin before parsing or deserializing: call initLibNvInferPlugins(&logger, \"\") (Python: trt.init_libnvinfer_plugins(logger, \"\")) for TensorRT's own plugins (EfficientNMS_TRT, BatchedNMS_TRT), load a project's plugin library first (ctypes.CDLL / dlopen, LD_PRELOAD spelt exactly, trtexec --staticPlugins or --plugins=libX.so; for mmdeploy its libmmdeploy_tensorrt_ops.so), and build the engine and run it with the same plugin build. If the name is a plain ONNX op (Round, NonZero, GridSample), this TensorRT has no layer for it: upgrade TensorRT, export the model without that op (another opset, onnx-simplifier), or write the plugin.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The `tensorrt` Python package missing from the interpreter that runs the code: installed
    // system-wide (the deb's python3-libnvinfer) or for another Python, or only the meta-package
    // without its bindings wheel. NVIDIA-AI-IOT/torch2trt#152 (TensorRT not installed for that
    // Python), yuvraj108c/ComfyUI-Upscaler-Tensorrt#52 (pip install tensorrt into ComfyUI's
    // embedded Python), NVIDIA/TensorRT#3838 (tensorrt_bindings: install the cu12 libs and
    // bindings wheels of the same version), NVIDIA-AI-IOT/torch2trt#414 (the deb's module not
    // on a conda Python), Qengineering/Jetson-Nano-Ubuntu-20-image#75 (Python 2.7).
    Rule {
        id: "lib-tensorrt-python-missing",
        patterns: &[],
        layer: Library,
        second: None,
        cause: "This Python has no `tensorrt` package (or only part of it: the bindings or libs wheel): TensorRT's Python module was installed for another interpreter (the system Python through the deb or tar, another conda environment, not an app's embedded Python) or not at all.",
        fix: "Install TensorRT's Python package into the interpreter that runs the code (`python -m pip install tensorrt` with that interpreter, the tensorrt-cu11/-cu12 wheel matching its CUDA; a tar install's python/tensorrt-*.whl for its Python version), and keep the tensorrt, tensorrt-cuXX-libs and tensorrt-cuXX-bindings wheels at one version. On Jetson, TensorRT's Python module comes with JetPack for its system Python only: use that Python (or a venv with --system-site-packages).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(tensorrt_module_missing),
    },
    // The program calling a TensorRT API the installed release does not have: Python's
    // "module 'tensorrt' has no attribute 'Logger'" (NVIDIA-AI-IOT/torch2trt#24, TensorRT 4
    // under code for 5), a TensorRT class without a method ('tensorrt_bindings.tensorrt.
    // ICudaEngine' object has no attribute 'get_binding_dtype': TensorRT 10 removed it,
    // triton-inference-server/tutorials#96), C++'s "'class nvinfer1::IBuilder' has no member
    // named 'buildSerializedNetwork'" (bychen7/Face-Restoration-TensorRT#5, TensorRT 7.2 under
    // code for 8) or "'class nvinfer1::ICudaEngine' has no member named 'getNbBindings'"
    // (triple-mu/YOLOv8-TensorRT#265, TensorRT 10 under code for 8), and TensorRT 3's Python
    // without the ONNX parser (NVIDIA/pix2pixHD#40: "cannot import name onnxparser", fixed by
    // TensorRT 4).
    Rule {
        id: "lib-tensorrt-api-version",
        patterns: &[
            "module 'tensorrt' has no attribute",
            "cannot import name onnxparser",
        ],
        layer: Library,
        second: None,
        cause: "The program calls a TensorRT API that the installed TensorRT release does not have: it was written for an older or newer release (TensorRT 8 removed build_cuda_engine and the implicit-batch calls, TensorRT 10 the bindings API such as getNbBindings and get_binding_dtype; releases before 8 lack buildSerializedNetwork). If even basic names (Logger, __version__) are missing, the `tensorrt` module imported is not a complete TensorRT (a folder named tensorrt on the path, the meta-package without its bindings).",
        fix: "Check which TensorRT the program imports (`python -c \"import tensorrt; print(tensorrt.__version__, tensorrt.__file__)\"`, or the NvInferVersion.h the build includes) and use the release the program names (a requirements pin, its README), or a version of the program (a branch or tag) written for the installed TensorRT; port the calls per TensorRT's migration guide (build_serialized_network for build_cuda_engine, the tensor-name API for bindings). With two TensorRT installations, make the headers, libraries and Python wheel one version.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: Some(tensorrt_api_missing),
    },
    // torch2trt running the model with TensorRT tensors and reaching an op it has no converter
    // for: the op returns a plain torch Tensor and the next converter reads its `_trt`.
    // NVIDIA-AI-IOT/torch2trt#48 (AdaptiveMaxPool2d, max: "not supported by torch2trt"), #15
    // (Upsample, LeakyReLU missing from CONVERTERS), #150 (after "Encountered known unsupported
    // method" warnings), #817, lantudou/mask2former_trt#2.
    Rule {
        id: "lib-torch2trt-no-converter",
        patterns: &["object has no attribute '_trt'"],
        layer: Library,
        second: None,
        cause: "torch2trt reached an operation it has no converter for (its warnings name it: \"Encountered known unsupported method …\"); that op returned a plain torch tensor without a TensorRT counterpart, so the next converter found no `_trt`.",
        fix: "Find the op from torch2trt's \"unsupported method\" warnings (or its converter list) and write a converter for it (@tensorrt_converter), rewrite that part of the model with supported ops, or upgrade torch2trt (newer releases add converters); or convert another way: torch.onnx.export then trtexec, or Torch-TensorRT, which runs unsupported ops in torch.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // INT8 asked of a card without fast INT8: the builder's platformHasFastInt8() is false on
    // cards before compute capability 6.1 and on the Jetson Nano and TX2.
    // wang-xinyu/tensorrtx#1611 ("Your platform support int8: false" and the assertion),
    // PaddlePaddle/Paddle#22516 (a Tesla K80: "Int8 support requested on hardware without
    // native Int8 support"), enazoe/yolo-tensorrt#131 ("Platform doesn't support this
    // prectsion.", yolov4 in INT8). The program's precision setting second.
    Rule {
        id: "hw-tensorrt-no-fast-int8",
        patterns: &[
            "platformhasfastint8()' failed",
            "your platform support int8: false",
            "int8 support requested on hardware without native int8 support",
            "platform doesn't support this prec",
        ],
        layer: Hardware,
        second: Some(Library),
        cause: "TensorRT was asked to build an INT8 engine on a GPU without fast INT8 (TensorRT's platformHasFastInt8 is false: cards before compute capability 6.1, such as Maxwell and Kepler, and the Jetson Nano and TX2).",
        fix: "Build in FP16 (where the card has fast FP16, e.g. the Jetson Nano and TX2) or FP32 instead: drop --int8 / the INT8 flag from the build, or run the INT8 engine on a card of compute capability 6.1 or newer (7.5+ for INT8 tensor cores). No driver, CUDA or TensorRT version adds INT8 to the card.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // ONNX's shape inference finding a shape other than the one the model declares, while
    // onnx-simplifier or the ONNX checker reads an exported model: the graph's annotations are
    // stale or wrong (initializers listed as graph inputs, an old exporter's value_info).
    // onnxsim/onnxsim#261 (removing the initializers from graph.input fixed it), #63, #114 (a
    // YOLOv3 export whose Slice shapes were wrong), snap-research/EfficientFormer#70. ONNX
    // Runtime's own "[ShapeInferenceError] axis must be in [-rank, rank-1]" on a node is another
    // check, left alone.
    Rule {
        id: "lib-onnx-shape-inference-conflict",
        patterns: &["inferred shape and existing shape differ"],
        layer: Library,
        second: None,
        cause: "ONNX's shape inference computed a shape for a node other than the one the exported model declares: the file's shape annotations are stale or wrong (initializers also listed as graph inputs, value_info from an older exporter or an edited graph), so onnx-simplifier or the ONNX checker stops. The model file, not the GPU stack.",
        fix: "Fix the exported ONNX file: re-export with a current torch and opset and keep_initializers_as_inputs=False (or drop the initializers from graph.input and clear graph.value_info with the onnx package), export with the static input shape the engine will use, then simplify again with an up-to-date onnx-simplifier (`pip install -U onnxsim`; `onnxsim --skip-shape-inference` or onnxslim when it still stops). TensorRT can also parse the unsimplified model.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The linker missing TensorRT's libraries (a build against TensorRT, not a program
    // loading it): a tar TensorRT whose lib folder is on LD_LIBRARY_PATH but not on the linker's
    // path, or a CMakeLists pointing elsewhere. iwatake2222/play_with_tensorrt#42 (symlinked the
    // tar's libnvinfer.so into /usr/lib), NVIDIA/retinanet-examples#142 (copied the libraries),
    // NVIDIA-AI-IOT/CUDA-PointPillars#47 (the TensorRT path in CMakeLists),
    // wang-xinyu/tensorrtx#243, NVIDIA/TensorRT#2017.
    Rule {
        id: "tk-linker-tensorrt-library",
        patterns: &[
            "cannot find -lnvinfer",
            "cannot find -lnvonnxparser",
            "cannot find -lnvparsers",
            "cannot find -lnvcaffe_parser",
        ],
        layer: Toolkit,
        second: Some(Library),
        cause: "The linker cannot find TensorRT's libraries (libnvinfer, libnvinfer_plugin, libnvonnxparser): TensorRT is installed from a tar or zip whose lib folder is not on the linker's search path (it reads -L, LIBRARY_PATH and the build's TensorRT path, not LD_LIBRARY_PATH), the build points at another TensorRT folder, or only the runtime package (no libnvinfer.so development link) is installed.",
        fix: "Point the build at TensorRT's lib folder: the project's TensorRT path option (TensorRT_ROOT / TRT_LIB_DIR / the CMakeLists' link_directories), or -L/path/to/TensorRT-X/lib (LIBRARY_PATH for the linker, LD_LIBRARY_PATH for running); with the deb packages install the development ones (libnvinfer-dev, libnvinfer-plugin-dev, libnvonnxparsers-dev). Use the TensorRT release the project names, the same one at build and run time.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
];

/// Python's "No module named X" for TensorRT's own package or its bindings / libs wheel (quoted
/// or not, as Python 2 wrote it): `tensorrt`, `tensorrt.…`, `tensorrt_bindings`,
/// `tensorrt_libs`. Other packages with TensorRT in the name (tensorrt_llm, torch_tensorrt) are
/// their own installs, not this.
fn tensorrt_module_missing(lower: &str) -> bool {
    lower.match_indices("no module named ").any(|(at, w)| {
        let name: String = lower[at + w.len()..]
            .trim_start_matches(['\'', '"', '`'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        let name = name.trim_end_matches('.');
        name == "tensorrt"
            || name.starts_with("tensorrt.")
            || name == "tensorrt_bindings"
            || name == "tensorrt_libs"
    })
}

/// A TensorRT class without the member the program uses: Python's "'tensorrt.….X' object has
/// no attribute" (the class's module is tensorrt or tensorrt_bindings) or C++'s "'class
/// nvinfer1::X' has no member named" (any quote style).
fn tensorrt_api_missing(lower: &str) -> bool {
    let python = lower.contains("object has no attribute")
        && (lower.contains("'tensorrt.") || lower.contains("'tensorrt_bindings."));
    let cpp = lower.contains("class nvinfer1::") && lower.contains("has no member named");
    python || cpp
}

/// "Unsupported SM" from TensorRT (its cask kernel table: caskUtils.cpp's trtSmToCask, the
/// builder's internal error) and "target gpu sm N is not supported by this TensorRT release",
/// placed by the compute capability the message names.
fn unsupported_sm(seg: &Segment<'_>) -> Option<Finding> {
    let lower = seg.lower.as_str();
    let sm = if let Some(at) = lower.find("unsupported sm") {
        sm_after(&lower[at + "unsupported sm".len()..])
    } else if lower.contains("is not supported by this tensorrt release") {
        let at = lower.find("sm ")?;
        sm_after(&lower[at + "sm".len()..])
    } else {
        return None;
    };
    // Not nvcc's or another compiler's wording: TensorRT's "Unsupported SM" stands alone, with a
    // code after it (0x601), a full stop, or its cask context.
    if lower.contains("unsupported sm")
        && sm.is_none()
        && !(lower.contains("unsupported sm.")
            || lower.contains("trtsmtocask")
            || lower.contains("caskutils"))
    {
        return None;
    }
    let card_older_than_release = sm.is_some_and(|(major, minor)| (major, minor) < (7, 5));
    let (id, layer, second, cause) = if card_older_than_release {
        (
            "hw-tensorrt-sm-dropped",
            Hardware,
            Library,
            "This TensorRT release has no kernels for the GPU's compute capability, which is older than the release supports (TensorRT 10 dropped cards before Turing, SM 7.5: Pascal GTX 10-series, Maxwell, and from 10.5 Volta).",
        )
    } else {
        (
            "lib-tensorrt-older-than-gpu",
            Library,
            Hardware,
            "This TensorRT release has no kernels for the GPU's compute capability: the release predates the card (TensorRT 7 has none for Ampere RTX 30-series / A-series cards, 8.4 none for Ada RTX 40-series, 8.x none for Blackwell), or, for an old card, the release no longer supports it.",
        )
    };
    Some(at(
        seg,
        id,
        layer,
        Some(second),
        cause,
        "Use a TensorRT release whose support matrix lists this GPU's compute capability (`nvidia-smi --query-gpu=compute_cap --format=csv`): for a card newer than the release, upgrade TensorRT (with the CUDA and cuDNN that release names); for a card older than it (SM below 7.5 under TensorRT 10), install the last release that supports the card (8.6 for Pascal and Maxwell) or run on a newer GPU. Then rebuild the engine on this card.",
        Mechanism::Plain,
        false,
    ))
}

/// The compute capability after TensorRT's "Unsupported SM": a hex code (`: 0x601` is 6.1,
/// `0x809` 8.9) or two digits (`sm 61`).
fn sm_after(rest: &str) -> Option<(u32, u32)> {
    let rest = rest.trim_start_matches([':', ' ']);
    if let Some(hex) = rest.strip_prefix("0x") {
        let digits: String = hex.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        let code = u32::from_str_radix(&digits, 16).ok()?;
        return (code >= 0x100).then_some((code >> 8, code & 0xff));
    }
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    match digits.len() {
        2 | 3 => {
            let value: u32 = digits.parse().ok()?;
            Some((value / 10, value % 10))
        }
        _ => None,
    }
}

pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found = find_each(RULES, segments);
    if let Some(f) = segments.iter().find_map(unsupported_sm) {
        found.push(f);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::sm_after;

    #[test]
    fn the_sm_code_reads_hex_and_digits() {
        assert_eq!(sm_after(": 0x601)"), Some((6, 1)));
        assert_eq!(sm_after(": 0x809, assertion"), Some((8, 9)));
        assert_eq!(sm_after(" 61 is not"), Some((6, 1)));
        assert_eq!(sm_after(" 120 is not"), Some((12, 0)));
        assert_eq!(sm_after(".)"), None);
        assert_eq!(sm_after(": 0x"), None);
    }
}

// The variants of each rule are tests/fixtures/diagnose/variants/tensorrt.yaml, checked by
// families::variants.
