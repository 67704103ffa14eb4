# stackpin library probe, compiled into the binary and run with the stack's Python:
#   python -c SCRIPT probe PROBE MODULE DISTRIBUTION    prints one JSON line about the library
#   python -c SCRIPT baseline PROBE MODULE HOLD_S       one tensor on the GPU, held HOLD_S seconds
# PROBE picks probe_<PROBE>() / baseline_<PROBE>() below (data/libraries.yaml names it).
# The probe never raises: an import failure is reported as {"ok": false, "error": ...}.
# The baseline prints `STACKPIN_BASELINE {"gpu": bool, "device": ...}` so stackpin can refuse a
# baseline that ran on the CPU (TensorFlow and ONNX Runtime fall back silently).
import importlib
import json
import sys
import time

BASELINE_PREFIX = "STACKPIN_BASELINE"
CUDA_PROVIDER = "CUDAExecutionProvider"


def probe_torch(module):
    torch = importlib.import_module(module)
    info = {"version": torch.__version__, "cuda": torch.version.cuda}
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception as exc:  # cuDNN missing or broken is a finding, not a crash
        info["cudnn_error"] = repr(exc)
    available = bool(torch.cuda.is_available())
    info["cuda_available"] = available
    info["device_count"] = torch.cuda.device_count() if available else 0
    info["arch_list"] = list(torch.cuda.get_arch_list()) if available else []
    if available:
        major, minor = torch.cuda.get_device_capability(0)
        info["device_capability"] = "%d.%d" % (major, minor)
        info["device_name"] = torch.cuda.get_device_name(0)
    return info


def baseline_torch(module):
    torch = importlib.import_module(module)
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    return {"gpu": x.device.type == "cuda", "device": str(x.device)}


def probe_tensorflow(module):
    tf = importlib.import_module(module)
    build = dict(tf.sysconfig.get_build_info())
    gpus = tf.config.list_physical_devices("GPU")
    info = {
        "version": tf.__version__,
        "cuda": build.get("cuda_version"),
        "cudnn": build.get("cudnn_version"),
        "cuda_available": len(gpus) > 0,
        "device_count": len(gpus),
        "arch_list": list(build.get("cuda_compute_capabilities") or []),
    }
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        cap = details.get("compute_capability")
        if cap:
            info["device_capability"] = "%d.%d" % tuple(cap)
        info["device_name"] = details.get("device_name")
    return info


def baseline_tensorflow(module):
    tf = importlib.import_module(module)
    # Without a GPU, tf.device('/GPU:0') places the tensor on the CPU and says nothing.
    with tf.device("/GPU:0"):
        x = tf.zeros([1])
    x.numpy()
    return {"gpu": "GPU" in x.device.upper(), "device": x.device}


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A protobuf field: an int is a varint, bytes/str a length-delimited value."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def one_node_model():
    """An ONNX model `y = x + x` over one float, encoded by hand so the probe needs no `onnx`
    package: ModelProto{ir_version 7, opset 13, graph{Add node, inputs, outputs}}."""
    dim = _field(1, _field(1, 1))  # TensorShapeProto.dim { dim_value: 1 }
    tensor_type = _field(1, _field(1, 1) + _field(2, dim))  # TypeProto.tensor_type {FLOAT, [1]}

    def value(name):
        return _field(1, name) + _field(2, tensor_type)  # ValueInfoProto

    node = _field(1, "x") + _field(1, "x") + _field(2, "y") + _field(4, "Add")
    graph = _field(1, node) + _field(2, "stackpin") + _field(11, value("x")) + _field(12, value("y"))
    opset = _field(1, "") + _field(2, 13)
    return _field(1, 7) + _field(2, "stackpin") + _field(7, graph) + _field(8, opset)


def _onnxruntime_cuda_build(ort):
    """The CUDA the wheel was built with: `capi.build_and_package_info.cuda_version` (1.21+),
    else the CUDA major the CUDA provider library links (1.20.2's wheel records no version:
    `libonnxruntime_providers_cuda.so` needs `libcudart.so.12`). The needed-library names sit in
    the ELF's dynamic string table near the start of the file, so the first MiB is read."""
    for name in ("build_and_package_info", "onnxruntime_validation"):
        try:
            info = importlib.import_module(ort.__name__ + ".capi." + name)
        except Exception:
            continue
        cuda = getattr(info, "cuda_version", None)
        if cuda:
            return str(cuda)
    import glob
    import os
    import re

    capi = os.path.join(os.path.dirname(ort.__file__), "capi")
    for path in sorted(glob.glob(os.path.join(capi, "*onnxruntime_providers_cuda*"))):
        try:
            with open(path, "rb") as f:
                head = f.read(1 << 20)
        except OSError:
            continue
        found = re.search(rb"libcudart\.so\.(\d+)|cudart64_(\d+)\.dll", head)
        if found:
            return (found.group(1) or found.group(2)).decode()
    return None


def _onnxruntime_cuda_session(ort):
    """A one-node session asked for the CUDA provider only. ONNX Runtime falls back to the CPU
    (a warning on stderr) when the provider cannot load or finds no GPU; get_providers() tells."""
    session = ort.InferenceSession(one_node_model(), providers=[CUDA_PROVIDER])
    return session, list(session.get_providers())


def probe_onnxruntime(module):
    ort = importlib.import_module(module)
    providers = list(ort.get_available_providers())
    info = {
        "version": ort.__version__,
        "cuda": _onnxruntime_cuda_build(ort),
        "providers": providers,
        "device": ort.get_device(),
        "cuda_available": False,
        "device_count": 0,
    }
    if CUDA_PROVIDER in providers:
        try:
            _, used = _onnxruntime_cuda_session(ort)
            info["session_providers"] = used
            info["cuda_available"] = CUDA_PROVIDER in used
            # The CUDA provider runs on one device (device_id 0 unless told otherwise).
            info["device_count"] = 1 if info["cuda_available"] else 0
        except Exception as exc:  # a session that cannot be created is a finding
            info["session_error"] = "%s: %s" % (type(exc).__name__, exc)
    return info


def baseline_onnxruntime(module):
    ort = importlib.import_module(module)
    import numpy

    session, used = _onnxruntime_cuda_session(ort)
    session.run(None, {"x": numpy.zeros([1], dtype=numpy.float32)})
    return {"gpu": used[:1] == [CUDA_PROVIDER], "device": ",".join(used)}


def probe_module(module, distribution):
    mod = importlib.import_module(module)
    version = getattr(mod, "__version__", None)
    if version is None:
        from importlib import metadata

        version = metadata.version(distribution)
    return {"version": str(version), "cuda": None, "cuda_available": False}


def run_probe(kind, module, distribution):
    result = {"library": distribution, "python": sys.version.split()[0]}
    try:
        if kind == "module":
            result.update(probe_module(module, distribution))
        else:
            result.update(globals()["probe_" + kind](module))
        result["ok"] = True
    except BaseException as exc:
        result["ok"] = False
        result["error"] = "%s: %s" % (type(exc).__name__, exc)
    for key in ("cudnn", "cuda"):
        if result.get(key) is not None:
            result[key] = str(result[key])
    print(json.dumps(result))


def run_baseline(kind, module, hold_s):
    result = globals()["baseline_" + kind](module)
    print(BASELINE_PREFIX + " " + json.dumps(result), flush=True)
    time.sleep(hold_s)


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "probe":
        run_probe(args[1], args[2], args[3])
    elif len(args) == 4 and args[0] == "baseline":
        run_baseline(args[1], args[2], float(args[3]))
    else:
        sys.exit("usage: probe PROBE MODULE DISTRIBUTION | baseline PROBE MODULE HOLD_S")


main()
