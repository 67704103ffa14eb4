#!/usr/bin/env python3
"""stackpin's inference example for PyTorch stacks.

Runs the ResNet-18-style model from classify.py (same folder) forward only, many times, on
synthetic input, and reports latency percentiles and the GPU memory the process needed:

    STACKPIN_RESULT {"batch": 1, "iterations": 200, "p50_ms": ..., "p99_ms": ..., ...}

Each iteration is timed on its own and synchronised, so p50/p99 are per-request latencies.
Warm-up iterations (kernel loading, allocator growth) are run first and not counted; the peak
memory counters are reset after them. Errors, out-of-memory included, are not caught: the
traceback reaches stderr unchanged and the exit status is non-zero.
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from classify import MIB, RESULT_PREFIX, ResNet18, require_cuda, versions  # noqa: E402


def percentile(sorted_values, share):
    """Nearest-rank percentile of an ascending list: the smallest value with at least `share`
    of the samples at or below it (so p99 of 100 samples is the 99th, not an interpolation)."""
    rank = max(1, math.ceil(share * len(sorted_values)))
    return sorted_values[rank - 1]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=1, help="inputs per request (default 1)")
    parser.add_argument("--iterations", type=int, default=200, help="timed requests (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests first (default 20)")
    parser.add_argument("--image-size", type=int, default=224, help="square image side (default 224)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes (default 10)")
    parser.add_argument(
        "--device",
        choices=["cuda", "cpu"],
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="cuda (default when available) or cpu",
    )
    args = parser.parse_args(argv)
    for name in ("batch_size", "iterations", "image_size", "classes"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.warmup < 0:
        parser.error("--warmup must be 0 or more")
    if args.image_size < 32:
        parser.error("--image-size must be at least 32 (five stride-2 stages)")
    return args


def main(argv=None):
    args = parse_args(argv)
    cuda = args.device == "cuda"
    if cuda:
        require_cuda()
    # Off for the same reason as in training: autotuning workspaces would inflate the peak.
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = ResNet18(args.classes).to(device).eval()
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    print(
        "infer.py: ResNet-18 style, batch %d, %d iterations after %d warm-up, on %s"
        % (args.batch_size, args.iterations, args.warmup, args.device),
        flush=True,
    )

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    times_ms = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            model(x)
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        every = max(1, args.iterations // 10)
        for i in range(1, args.iterations + 1):
            started = time.perf_counter()
            model(x)
            sync()
            times_ms.append((time.perf_counter() - started) * 1000.0)
            if i % every == 0 or i == args.iterations:
                print("iteration %d/%d last %.2f ms" % (i, args.iterations, times_ms[-1]), flush=True)

    ordered = sorted(times_ms)
    result = {
        "batch": args.batch_size,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "p50_ms": round(percentile(ordered, 0.50), 3),
        "p99_ms": round(percentile(ordered, 0.99), 3),
        "mean_ms": round(sum(ordered) / len(ordered), 3),
        "samples_per_s": round(args.batch_size * len(ordered) / (sum(ordered) / 1000.0), 2),
        "peak_reserved_mib": None,
        "peak_allocated_mib": None,
        "context_mib": None,
        "device": ("cuda:%d" % torch.cuda.current_device()) if args.device == "cuda" else "cpu",
        "versions": versions(),
    }
    if cuda:
        reserved_now = torch.cuda.memory_reserved(device)
        free, total = torch.cuda.mem_get_info(device)
        result["peak_reserved_mib"] = round(torch.cuda.max_memory_reserved(device) / MIB, 1)
        result["peak_allocated_mib"] = round(torch.cuda.max_memory_allocated(device) / MIB, 1)
        result["context_mib"] = round(max(0, (total - free) - reserved_now) / MIB, 1)
    print("%s %s" % (RESULT_PREFIX, json.dumps(result, sort_keys=True)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
