# stackpin library probe: run as `python -c SCRIPT torch|tensorflow`; prints one JSON line.
# Never raises: an import failure is reported as {"ok": false, "error": ...}.
import json
import sys


def probe_torch():
    import torch

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


def probe_tensorflow():
    import tensorflow as tf

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


def probe_module(name):
    import importlib

    module = importlib.import_module(name.replace("-", "_"))
    version = getattr(module, "__version__", None)
    if version is None:
        from importlib import metadata

        version = metadata.version(name)
    return {"version": str(version), "cuda": None, "cuda_available": False}


def main():
    library = sys.argv[1] if len(sys.argv) > 1 else "torch"
    probes = {"torch": probe_torch, "tensorflow": probe_tensorflow}
    result = {"library": library, "python": sys.version.split()[0]}
    try:
        probe = probes.get(library, lambda: probe_module(library))
        result.update(probe())
        result["ok"] = True
    except BaseException as exc:
        result["ok"] = False
        result["error"] = "%s: %s" % (type(exc).__name__, exc)
    for key in ("cudnn", "cuda"):
        if result.get(key) is not None:
            result[key] = str(result[key])
    print(json.dumps(result))


main()
