#!/usr/bin/env python3
"""stackpin's inference example for ONNX Runtime GPU stacks.

Builds a small convolutional classifier in memory with the `onnx` package (no model file to
download), runs it with the CUDA execution provider (or the CPU one with `--device cpu`) many
times on synthetic input, and reports per-request latency percentiles:

    STACKPIN_RESULT {"batch": 1, "iterations": 200, "p50_ms": ..., "p99_ms": ..., ...}

`--save-model FILE` also writes the model to FILE (a real .onnx for `stackpin record export`).

Warm-up requests (cuDNN algorithm search, arena growth) run first and are not counted. GPU
memory is measured from outside by stackpin; ONNX Runtime has no public peak counter. On
`--device cuda` the run fails (non-zero exit) when the CUDA execution provider is not the one in
use, since a silent fallback to the CPU would "prove" nothing about the GPU stack.

The CUDA libraries of the venv's `nvidia-*` wheels (cuDNN, and cuBLAS/cuRAND/cuFFT/cudart where
installed) are loaded before ONNX Runtime looks for them, so the script runs outside `stackpin
prove` as it does inside it (where the toolkit's lib64 is on the loader path).
"""

import argparse
import ctypes
import glob
import json
import math
import os
import platform
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RESULT_PREFIX = "STACKPIN_RESULT"


def wheel_libraries():
    """The shared libraries of the venv's `nvidia-*` wheels (nvidia/<part>/lib/*.so*), cuDNN's
    and cuBLAS's included."""
    found = []
    for site in sys.path:
        found.extend(sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "lib*.so*"))))
    return found


def preload_cuda_libraries():
    """Puts the wheels' CUDA libraries where ONNX Runtime's loader finds them: it opens them by
    soname, and a library already loaded with RTLD_GLOBAL under that soname is used as is.
    1.21+ has `onnxruntime.preload_dlls()` for the CUDA and cuDNN wheels; the loop covers the
    rest (cuBLAS) and older releases. Returns the libraries loaded."""
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        try:
            ort.preload_dlls()
        except Exception as exc:  # a missing wheel is reported by the session, not here
            print(f"infer_ort.py: preload_dlls: {exc}", file=sys.stderr)
    if os.name != "posix":
        return []
    pending = wheel_libraries()
    loaded = []
    # A library whose dependency is not loaded yet fails; another pass picks it up.
    for _ in range(4):
        failed = []
        for lib in pending:
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                loaded.append(lib)
            except OSError:
                failed.append(lib)
        if not failed or len(failed) == len(pending):
            break
        pending = failed
    return loaded


def percentile(sorted_values, share):
    """Nearest-rank percentile, as infer.py computes it."""
    rank = max(1, math.ceil(share * len(sorted_values)))
    return sorted_values[rank - 1]


def build_model(image_size, classes, rng):
    """conv(3->32, s2) relu conv(32->64, s2) relu global-average-pool flatten gemm(64->classes)."""
    def weight(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name)

    inits = [
        weight("w1", (32, 3, 3, 3)),
        weight("w2", (64, 32, 3, 3)),
        weight("w3", (classes, 64)),
        weight("b3", (classes,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "stackpin_infer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, image_size, image_size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", classes])],
        inits,
    )
    # Opset 17 and IR 8: old enough for every ONNX Runtime release in stackpin's table.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=1, help="inputs per request (default 1)")
    parser.add_argument("--iterations", type=int, default=200, help="timed requests (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests first (default 20)")
    parser.add_argument("--image-size", type=int, default=224, help="square image side (default 224)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes (default 10)")
    parser.add_argument(
        "--device", choices=["cuda", "cpu"], default="cuda",
        help="cuda (the CUDA execution provider, required) or cpu (default cuda)",
    )
    parser.add_argument(
        "--save-model", metavar="FILE",
        help="also write the model to FILE (.onnx), e.g. for `stackpin record export`",
    )
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.device == "cuda":
        preload_cuda_libraries()
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    model = build_model(args.image_size, args.classes, rng)
    if args.save_model:
        with open(args.save_model, "wb") as f:
            f.write(model)
        print(f"infer_ort.py: wrote the model ({len(model)} bytes) to {args.save_model}")
    provider = "CUDAExecutionProvider" if args.device == "cuda" else "CPUExecutionProvider"
    session = ort.InferenceSession(model, providers=[provider])
    used = session.get_providers()
    if args.device == "cuda" and (not used or used[0] != "CUDAExecutionProvider"):
        print(
            f"infer_ort.py: ONNX Runtime is not using the CUDA execution provider (providers: {used}); "
            "check that the CUDA and cuDNN libraries of this onnxruntime-gpu build can be loaded",
            file=sys.stderr,
        )
        return 1
    x = rng.standard_normal((args.batch_size, 3, args.image_size, args.image_size)).astype(np.float32)
    print(
        f"infer_ort.py: small CNN, batch {args.batch_size}, {args.image_size}x{args.image_size}, "
        f"{args.iterations} requests after {args.warmup} warm-up, onnxruntime {ort.__version__} "
        f"on {used[0] if used else args.device}"
    )
    for _ in range(args.warmup):
        session.run(None, {"x": x})
    times = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        session.run(None, {"x": x})  # returns host arrays: the request is complete
        times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    result = {
        "batch": args.batch_size,
        "iterations": args.iterations,
        "p50_ms": round(percentile(times, 0.50), 3),
        "p99_ms": round(percentile(times, 0.99), 3),
        "samples_per_s": round(args.batch_size * len(times) / (sum(times) / 1000.0), 1),
        "device": args.device,
        "versions": {
            "onnxruntime": ort.__version__,
            "onnx": onnx.__version__,
            "python": platform.python_version(),
        },
    }
    print(f"{RESULT_PREFIX} {json.dumps(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
