//! The GPU's video and JPEG engines: NVDEC (decode, through the driver's `libnvcuvid`), NVENC
//! (encode, through the driver's `libnvidia-encode`) and the nvJPEG hardware decoder, as ffmpeg,
//! DALI, PyNvVideoCodec/VPF, OpenCV's cudacodec, torchcodec and the CUDA samples report them.
//!
//! These engines are neither CUDA nor the toolkit: their user-space libraries ship with the
//! driver (a container gets them only with the `video` driver capability; the loader family reads
//! a missing `libnvcuvid`/`libnvidia-encode` by its file), the codecs they take are fixed in the
//! silicon (a GTX 970 has no HEVC decoder, an A100 no AV1 one, a T4 no JPEG engine, a P106 or an
//! MX350 no NVENC), and the number of encode sessions on a GeForce card is capped by the driver.
//! So a failure is placed by which engine refused and how: the card lacking the engine or the
//! codec (hardware), the driver's NVENC interface older than the program's (driver), the encode
//! session cap (driver, the card class second), an ffmpeg built without NVIDIA's codecs
//! (library). Phrasings whose threads end in different layers stay out: ffmpeg's bare "No NVENC
//! capable devices found" (a card without NVENC, the session cap, a container without the video
//! capability) and "Codec h264_cuvid is not supported" (jellyfin/jellyfin-ffmpeg#558, unresolved,
//! on a card whose NVDEC has H.264).

use super::rule::{Rule, find_each};
use super::{Finding, Mechanism};
use crate::diagnose::FailureLayer::{Driver, Hardware, Library};
use crate::diagnose::matcher::Segment;

/// The fix for a missing driver video library, here and in the loader family (which reads the
/// file when the message names it). Outside a container; inside one the context's fix says how
/// to give the container the video capability.
pub(super) const VIDEO_LIBRARY_FIX: &str = "libnvcuvid (NVDEC) and libnvidia-encode (NVENC) are part of the NVIDIA driver, in its version: check `ldconfig -p | grep -E 'nvcuvid|nvidia-encode'` and `nvidia-smi`. Install the driver's video packages of the running driver's version (Ubuntu: libnvidia-decode-XXX and libnvidia-encode-XXX; headless, compute-only or container-toolkit-only installs leave them out) or update the driver if the program names a newer minimum. In a container they come from the host only with the video driver capability: start it with NVIDIA_DRIVER_CAPABILITIES=compute,utility,video (or all), or `--gpus 'all,\"capabilities=compute,utility,video\"'`. Do not copy the Video Codec SDK's libnvcuvid.so into the loader path: those are link stubs.";

pub(super) const RULES: &[Rule] = &[
    // A program saying the driver's NVENC/NVDEC library did not load without naming the file:
    // VPF's and NvPipe's "LoadNvEncApi : NVENC library file is not found. Please ensure NV driver
    // is installed" (NVIDIA/VideoProcessingFramework#467, in Docker, answered by its docs on the
    // video capability, #468; NVIDIA/NvPipe#44, in a CUDA runtime image) and ffmpeg's "Failed
    // loading nvcuvid." after the loader's line (NVIDIA/nvidia-docker#531).
    Rule {
        id: "drv-video-driver-library-missing",
        patterns: &["nvenc library file is not found", "failed loading nvcuvid"],
        layer: Driver,
        second: None,
        cause: "The NVIDIA driver's video library (libnvidia-encode for NVENC, libnvcuvid for NVDEC) was not found: the driver packages installed leave it out or are too old, or this container was started without the driver's video capability.",
        fix: VIDEO_LIBRARY_FIX,
        mechanism: Mechanism::DriverVideo,
        decisive: false,
        judge: None,
    },
    // The card has no NVENC at all, or not the features asked for: NV_ENC_ERR_UNSUPPORTED_DEVICE
    // (2) from OpenEncodeSessionEx on a P106-100 (HandBrake/HandBrake#1998, "This card doesn't
    // have NVENC enabled"), an MX350 (#2943) or a GeForce 850M (#2204, closed as not
    // supported); ffmpeg's AV1 encoder on a T4/V100/A100 (googlecolab/colabtools#3634) or an RTX
    // 3080 (LizardByte/Sunshine#1849), which have no AV1 NVENC. The driver second: a container
    // without the video capability can refuse the session too.
    Rule {
        id: "hw-video-no-nvenc-on-card",
        patterns: &[
            "openencodesessionex failed: unsupported device",
            "provided device doesn't support required nvenc features",
        ],
        layer: Hardware,
        second: Some(Driver),
        cause: "The GPU has no NVENC encoder, or its NVENC lacks what was asked (AV1 encoding needs an RTX 40-series / Ada or newer card; mining cards such as the P106 and low-end laptop parts such as the MX350 have no NVENC at all): NVENC refused to open a session on this device.",
        fix: "Check the card in NVIDIA's Video Encode and Decode GPU Support Matrix: if it lacks NVENC (or the codec), encode on the CPU (libx264/libx265/libsvtav1) or with another GPU's encoder, or pick a codec the card's NVENC has (H.264/HEVC instead of AV1). No driver or library reinstall adds an encoder. In a container, also start it with the video driver capability (NVIDIA_DRIVER_CAPABILITIES=compute,utility,video).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // NVENC opens no more sessions: NV_ENC_ERR_OUT_OF_MEMORY (10) on the third session of a
    // GeForce (NVIDIA/NvPipe#41: "a limit on the maximum number of concurrent encode sessions
    // (e.g., 2 on GeForce)"; NVIDIA/VideoProcessingFramework#501, the fourth encoder; #172, "3
    // sessions limitation is system-wise"), which newer drivers report as
    // NV_ENC_ERR_INCOMPATIBLE_CLIENT_KEY (21) (obsproject/obs-studio#11259; keylase/nvidia-patch#987
    // on 580.97). The cap is the driver's for the card class (3, then 5 from 530, more later: keylase/nvidia-patch#628, #811), so
    // the driver first, the card second; error 10 was also a driver bug once
    // (NVIDIA/open-gpu-kernel-modules#415, fixed in 515.105.01).
    Rule {
        id: "drv-video-nvenc-session-limit",
        patterns: &[
            "openencodesessionex failed: out of memory",
            "openencodesessionex failed: incompatible client key",
            "nvencopenencodesessionex(&encodesessionexparams, &hencoder) returned error 10",
        ],
        layer: Driver,
        second: Some(Hardware),
        cause: "NVENC refused another encode session: GeForce and other consumer cards are capped at a few concurrent NVENC sessions per system (the driver sets the cap: 3 on older drivers, 5 from 530, more on recent ones), which newer drivers report as \"incompatible client key\" and older ones as out of memory (error 10); the sessions already open (other processes, other users' jobs, earlier encoders not closed) count against it.",
        fix: "Count the sessions open now (`nvidia-smi --query-gpu=encoder.stats.sessionCount --format=csv`) and close or reuse encoders (one encoder per stream, destroyed when done) so the total stays under the cap; update to a driver with a higher cap (530+ allows 5 on GeForce, recent releases more). Data-centre and professional cards (Tesla, RTX A-series, L4) have no such cap. If a single session fails on a driver before 515.105.01, update the driver (a fixed NVENC bug).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The program (ffmpeg, HandBrake, VPF) was built against a newer NVENC interface than the
    // installed driver offers: "Driver does not support the required nvenc API version.
    // Required: 12.2 Found: 12.1" (HandBrake/HandBrake#6506: "you must use newer drivers";
    // GyanD/codexffmpeg#161, cured by driver 531.61; #181) and VPF's "Current Driver Version does
    // not support this NvEncodeAPI version" (NVIDIA/VideoProcessingFramework#101). The library
    // second: a build can pin headers newer than it needs (papi-ux/polaris#650, cured by rolling
    // its FFmpeg archive back).
    Rule {
        id: "drv-video-nvenc-api-newer-than-driver",
        patterns: &[
            "driver does not support the required nvenc api version",
            "driver does not support required nvenc api version",
            "current driver version does not support this nvencodeapi version",
        ],
        layer: Driver,
        second: Some(Library),
        cause: "The encoder was built against a newer NVENC API (the Video Codec SDK / nv-codec-headers version in the message's \"Required\") than the installed driver provides (\"Found\"): NVENC's interface lives in the driver, and each SDK release needs a minimum driver.",
        fix: "Update the NVIDIA driver to at least the version the message names as the minimum for nvenc (SDK 12.1 needs 530/531.61, 12.2 needs 550.54/551.76, 13.0 needs 570); where the driver cannot move (a pinned cluster driver, a card no newer driver supports), use a build of the program made with the older nv-codec-headers the driver offers (an older ffmpeg/HandBrake release, or the build's previous pin).",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // The card's NVDEC has no decoder for this codec, profile or chroma format: DALI's "Decoder
    // hardware does not support this video codec and/or chroma format" (NVIDIA/DALI#1042: no
    // YUV 4:2:2 in NVDEC; the MX150 has no NVDEC), OpenCV cudacodec's "Video source is not
    // supported by hardware video decoder" (opencv/opencv_contrib#3488, AV1 on a GTX 1080;
    // dapicard/opencv-parallelize-example#5), and cuvidCreateDecoder answering
    // CUDA_ERROR_NO_DEVICE for a codec the card lacks (mpv-player/mpv#3496: "the GTX 970 does
    // not have a HEVC hardware decoder at all"; gpac/gpac#898). Decisive: the CUDA error name
    // alone reads as a driver without a device, but from the decoder-creating call it is the
    // decode engine.
    Rule {
        id: NO_CODEC_IN_NVDEC,
        patterns: &[
            "decoder hardware does not support this video codec",
            "video source is not supported by hardware video decoder",
            "cuvidcreatedecoder*cuda_error_no_device",
            "failed to create cuvid decoder cuda_error_no_device",
        ],
        layer: Hardware,
        second: Some(Library),
        cause: "The GPU's hardware video decoder (NVDEC) has no decoder for this stream's codec, profile or chroma format (HEVC needs Maxwell GM206 / Pascal or newer, AV1 an RTX 30-series or newer and not the A100, VP9 and 10-bit need newer parts; most NVDECs decode 4:2:0 only, 4:4:4 and 4:2:2 only on some newer generations): NVDEC refused to create the decoder, so nothing is wrong with the driver or CUDA.",
        fix: "Check the card and the stream (`ffprobe` shows codec, profile and pix_fmt) against NVIDIA's Video Encode and Decode GPU Support Matrix. For streams the card cannot decode, decode on the CPU (drop -hwaccel/-c:v *_cuvid, or the library's CPU decoder) and upload frames to the GPU, or re-encode the source to a codec and chroma format the card has (H.264/HEVC 4:2:0, `-pix_fmt yuv420p`); a newer card adds codecs, no reinstall does.",
        mechanism: Mechanism::Plain,
        decisive: true,
        judge: None,
    },
    // The nvJPEG hardware backend asked for on a card without the JPEG engine (only A100, A30,
    // H100 and later data-centre parts have it): NVJPEG_STATUS_ARCH_MISMATCH from
    // nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE) on a T4 (NVIDIA/CUDALibrarySamples#153), and the
    // samples' "Hardware Decoder not supported. Falling back to default backend" on a T4
    // (CVCUDA/CV-CUDA#46, #86). The driver second: an H100 printed the same in a container
    // without the video capability (NVIDIA/CUDALibrarySamples#132).
    Rule {
        id: "hw-video-no-jpeg-engine",
        patterns: &[
            "hardware decoder not supported. falling back to default backend",
            "nvjpeg_backend_hardware*nvjpeg_status_arch_mismatch",
        ],
        layer: Hardware,
        second: Some(Driver),
        cause: "The nvJPEG hardware JPEG decoder was asked for, but this GPU has no JPEG engine (only the A100, A30, H100 and newer data-centre parts do; a T4, V100 or GeForce has none) or, in a container, the driver's video capability was not given, so nvJPEG decodes with CUDA (the default backend) or refuses the hardware backend.",
        fix: "On a card without the JPEG engine nothing is broken: decoding runs on CUDA (NVJPEG_BACKEND_DEFAULT / GPU_HYBRID); create the handle with the default backend when nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE) returns NVJPEG_STATUS_ARCH_MISMATCH. On an A100/A30/H100 in a container, start it with the video capability (`--gpus '\"capabilities=compute,utility,video\"'`, or NVIDIA_DRIVER_CAPABILITIES=compute,utility,video); on an A100 or A30 split into MIG instances, each instance needs a JPEG engine assigned.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
    // An ffmpeg built without NVIDIA's codecs or CUDA filters: "unknown encoder 'hevc_nvenc'"
    // (markus-perl/ffmpeg-build-script#196: "the NVIDIA encoders are only compiled in when a CUDA
    // installation is found at build time"), "avcodec_find_decoder_by_name h264_cuvid failed"
    // (chinahbcq/ffmpeg_hw_decode#2: build with --enable-cuvid), "No such filter: 'scale_npp'"
    // (mdhiggins/sickbeard_mp4_automator#1666, Ubuntu's ffmpeg 4.2) and "no such filter
    // scale_cuda" (jrottenberg/ffmpeg#394; bytedeco/javacpp-presets#1362: --enable-cuda-nvcc,
    // --enable-libnpp).
    Rule {
        id: "lib-video-ffmpeg-without-nvidia-codecs",
        patterns: &[
            "unknown encoder '*_nvenc'",
            "unknown decoder '*_cuvid'",
            "avcodec_find_decoder_by_name *_cuvid failed",
            "avcodec_find_encoder_by_name *_nvenc failed",
            "no such filter: 'scale_cuda'",
            "no such filter: 'scale_npp'",
            "no such filter scale_cuda",
            "no such filter scale_npp",
        ],
        layer: Library,
        second: None,
        cause: "This ffmpeg (or the libavcodec/libavfilter a program links) was built without NVIDIA's codecs or CUDA filters: NVENC/NVDEC (cuvid) need nv-codec-headers at build time, scale_cuda needs --enable-cuda-nvcc or --enable-cuda-llvm and scale_npp --enable-libnpp, and many distribution and pip builds leave them out. The driver and the card are not asked at all.",
        fix: "`ffmpeg -hide_banner -encoders | grep nvenc`, `-decoders | grep cuvid` and `-filters | grep cuda` show what this build has. Use an ffmpeg built with them (a build configured with --enable-ffnvcodec --enable-nvenc --enable-cuvid --enable-nvdec --enable-cuda-nvcc --enable-libnpp --enable-nonfree, e.g. from nv-codec-headers and the CUDA toolkit, or a distribution's NVIDIA-enabled package), and make sure that ffmpeg (not the system one) is the one on PATH or linked.",
        mechanism: Mechanism::Plain,
        decisive: false,
        judge: None,
    },
];

/// Each rule's finding at the first line it matches; ffmpeg's cuvid wrapper breaks its
/// "cuvidCreateDecoder(...) failed ->" line before the CUDA error (mpv-player/mpv#3496), so
/// that pair is also read across two lines.
pub(super) fn find(segments: &[Segment<'_>]) -> Vec<Finding> {
    let mut found = find_each(RULES, segments);
    if !found.iter().any(|f| f.id == NO_CODEC_IN_NVDEC)
        && let Some(seg) = segments.windows(2).find_map(|pair| {
            (pair[0].lower.contains("cuvidcreatedecoder")
                && pair[1].lower.contains("cuda_error_no_device"))
            .then_some(&pair[0])
        })
        && let Some(rule) = RULES.iter().find(|r| r.id == NO_CODEC_IN_NVDEC)
    {
        found.push(rule.finding(seg));
    }
    found
}

const NO_CODEC_IN_NVDEC: &str = "hw-video-codec-not-in-nvdec";
