#!/usr/bin/env python3
"""stackpin's classification example for PyTorch stacks.

Trains a ResNet-18-style CNN on synthetic images (nothing is downloaded) for a few steps and
reports peak GPU memory. If it completes, the driver, the CUDA toolkit and torch work together.

The last line it prints is the machine-readable report that `stackpin prove` reads:

    STACKPIN_RESULT {"batch": 64, "steps": 30, "peak_reserved_mib": ..., ...}

Measurement rules (see stackpin's vram-measurement notes):
  * cudnn.benchmark stays off: its autotuning allocates large one-off workspaces that would
    inflate the peak without ever being needed again.
  * one warm-up step runs first, then the peak counters are reset, so the reported peak is that
    of a steady training step, not of start-up.
  * errors, CUDA out-of-memory included, are not caught: the traceback reaches stderr unchanged,
    because stackpin's diagnosis reads it, and the exit status is non-zero.

Written for Python 3.8+ and torch 1.11+ (mem_get_info), the oldest stacks stackpin ships manifests for.
"""

import argparse
import json
import math
import platform
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MIB = 1024 * 1024
RESULT_PREFIX = "STACKPIN_RESULT"


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut, as in ResNet-18/34."""

    def __init__(self, in_ch, out_ch, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 layout (stem, four stages of two blocks, global pool), written out here so the
    example needs torch only, not torchvision."""

    def __init__(self, classes):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages = []
        in_ch = 64
        for out_ch, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            stages.append(BasicBlock(in_ch, out_ch, stride))
            stages.append(BasicBlock(out_ch, out_ch, 1))
            in_ch = out_ch
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(512, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def synthetic_dataset(samples, classes, image_size, seed):
    """Images that can be learned: each class is a coarse random pattern plus noise.

    Kept as uint8 on the host, like decoded JPEGs, and moved per batch, like a DataLoader."""
    gen = torch.Generator().manual_seed(seed)
    prototypes = torch.randint(0, 256, (classes, 3, 8, 8), generator=gen).float()
    prototypes = F.interpolate(prototypes, size=(image_size, image_size), mode="nearest")
    labels = torch.randint(0, classes, (samples,), generator=gen)
    images = torch.empty(samples, 3, image_size, image_size, dtype=torch.uint8)
    # In chunks: a float copy of the whole set would cost 4x its size in host memory.
    for start in range(0, samples, 64):
        end = min(samples, start + 64)
        noise = torch.randn(end - start, 3, image_size, image_size, generator=gen) * 40.0
        images[start:end] = (prototypes[labels[start:end]] + noise).clamp(0, 255).to(torch.uint8)
    return images, labels


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--steps", type=int, default=30, help="measured training steps (default 30)")
    parser.add_argument("--image-size", type=int, default=224, help="square image side (default 224)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes (default 10)")
    parser.add_argument("--samples", type=int, default=512, help="synthetic dataset size (default 512)")
    parser.add_argument(
        "--device",
        choices=["cuda", "cpu"],
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="cuda (default when available) or cpu",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("batch_size", "steps", "image_size", "classes", "samples"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.image_size < 32:
        parser.error("--image-size must be at least 32 (five stride-2 stages)")
    return args


def versions():
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "python": platform.python_version(),
    }


def require_cuda():
    if torch.cuda.is_available():
        return
    sys.stderr.write(
        "classify.py: --device cuda, but torch.cuda.is_available() is False "
        "(torch %s, built for CUDA %s). Check the driver with nvidia-smi, or run with --device cpu.\n"
        % (torch.__version__, torch.version.cuda)
    )
    sys.exit(3)


def train_step(model, optimizer, images, labels, device):
    # uint8 -> normalised float on the device, as a real input pipeline does.
    x = images.to(device, non_blocking=True).float().div_(255.0).sub_(0.5).div_(0.25)
    y = labels.to(device, non_blocking=True)
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def main(argv=None):
    args = parse_args(argv)
    cuda = args.device == "cuda"
    if cuda:
        require_cuda()
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    images, labels = synthetic_dataset(args.samples, args.classes, args.image_size, args.seed)
    dataset_mib = images.numel() * images.element_size() / MIB
    model = ResNet18(args.classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    where = torch.cuda.get_device_name(device) if cuda else platform.processor() or "cpu"
    print(
        "classify.py: ResNet-18 style, batch %d, %d steps, %dx%d images, %d classes, on %s (%s)"
        % (args.batch_size, args.steps, args.image_size, args.image_size, args.classes, args.device, where),
        flush=True,
    )

    def batch(step):
        idx = torch.arange(step * args.batch_size, (step + 1) * args.batch_size) % args.samples
        return images[idx], labels[idx]

    # Warm-up: allocator pools, lazily loaded kernels and cuDNN handles come to life here.
    first_loss = float(train_step(model, optimizer, *batch(0), device))
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)

    every = max(1, args.steps // 10)
    started = time.perf_counter()
    loss = first_loss
    for step in range(1, args.steps + 1):
        loss_t = train_step(model, optimizer, *batch(step), device)
        if step % every == 0 or step == args.steps:
            loss = float(loss_t)  # synchronises; only on progress steps
            line = "step %d/%d loss %.4f" % (step, args.steps, loss)
            if cuda:
                line += " reserved %.0f MiB" % (torch.cuda.max_memory_reserved(device) / MIB)
            print(line, flush=True)
    if cuda:
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - started
    if not math.isfinite(loss):
        sys.stderr.write("classify.py: the loss is %r: the stack computes garbage\n" % loss)
        return 4

    result = {
        "batch": args.batch_size,
        "steps": args.steps,
        "image_size": args.image_size,
        "dataset_mib": round(dataset_mib, 2),
        "peak_reserved_mib": None,
        "peak_allocated_mib": None,
        "context_mib": None,
        "samples_per_s": round(args.batch_size * args.steps / elapsed, 2),
        "loss_first": round(first_loss, 4),
        "loss_last": round(loss, 4),
        # Where the steps really ran (`cuda:0`, `cpu`): stackpin proves the stack only on a GPU.
        "device": ("cuda:%d" % torch.cuda.current_device()) if cuda else "cpu",
        "device_name": where,
        "versions": versions(),
    }
    if cuda:
        reserved_now = torch.cuda.memory_reserved(device)
        free, total = torch.cuda.mem_get_info(device)
        result["peak_reserved_mib"] = round(torch.cuda.max_memory_reserved(device) / MIB, 1)
        result["peak_allocated_mib"] = round(torch.cuda.max_memory_allocated(device) / MIB, 1)
        # Device-wide used minus our pool: the CUDA context (and anything else on the card, so
        # this is an upper bound when other processes share the GPU).
        result["context_mib"] = round(max(0, (total - free) - reserved_now) / MIB, 1)
        result["total_mib"] = round(total / MIB, 1)
    print("%s %s" % (RESULT_PREFIX, json.dumps(result, sort_keys=True)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
