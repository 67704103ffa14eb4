#!/usr/bin/env python3
"""stackpin's classification example for TensorFlow stacks.

Trains a ResNet-18-style CNN (Keras layers) on synthetic images (nothing is downloaded) for a few
steps and reports peak GPU memory. If it completes, the driver, the CUDA toolkit, cuDNN and
TensorFlow work together.

The last line it prints is the machine-readable report that `stackpin prove` reads:

    STACKPIN_RESULT {"batch": 64, "steps": 30, "peak_allocated_mib": ..., ...}

Measurement rules (see stackpin's vram-measurement notes):
  * memory growth is on: by default TensorFlow maps nearly the whole card at start-up, and any
    peak read from outside would then be the card's size, not the model's need.
  * one warm-up step (which also traces the tf.function) runs first, then the peak is reset where
    this TensorFlow can (tf.config.experimental.reset_memory_stats).
  * TensorFlow reports the memory its allocator hands out, not the pool it holds, so the peak goes
    to peak_allocated_mib; peak_reserved_mib and context_mib stay null and stackpin's outside view
    (nvidia-smi) is the authority for what the card must hold.
  * errors, out-of-memory included, are not caught: the traceback reaches stderr unchanged and the
    exit status is non-zero.

Written for Python 3.8+ and TensorFlow 2.5+ (get_memory_info), Keras 2 or Keras 3.
"""

import argparse
import json
import math
import os
import platform
import sys
import time

# Must be set before TensorFlow initialises the GPU; the API call below does the same for
# TensorFlow builds that ignore the variable.
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np  # noqa: E402  (TensorFlow depends on numpy)
import tensorflow as tf  # noqa: E402

MIB = 1024 * 1024
RESULT_PREFIX = "STACKPIN_RESULT"
layers = tf.keras.layers


def basic_block(x, out_ch, stride):
    """Two 3x3 convolutions with a shortcut, as in ResNet-18/34."""
    shortcut = x
    y = layers.Conv2D(out_ch, 3, strides=stride, padding="same", use_bias=False)(x)
    y = layers.BatchNormalization()(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(out_ch, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    if stride != 1 or x.shape[-1] != out_ch:
        shortcut = layers.Conv2D(out_ch, 1, strides=stride, use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def resnet18(image_size, classes):
    """ResNet-18 layout: stem, four stages of two blocks, global pool, dense head."""
    inputs = tf.keras.Input(shape=(image_size, image_size, 3))
    x = layers.Conv2D(64, 7, strides=2, padding="same", use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for out_ch, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = basic_block(x, out_ch, stride)
        x = basic_block(x, out_ch, 1)
    x = layers.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inputs, layers.Dense(classes)(x), name="resnet18_style")


def synthetic_dataset(samples, classes, image_size, seed):
    """Images that can be learned: each class is a coarse random pattern plus noise (uint8, NHWC)."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(classes, 8, 8, 3)).astype(np.float32)
    reps = -(-image_size // 8)  # ceil: nearest-neighbour upsampling, then crop
    prototypes = prototypes.repeat(reps, axis=1).repeat(reps, axis=2)[:, :image_size, :image_size, :]
    labels = rng.integers(0, classes, size=samples).astype(np.int32)
    images = np.empty((samples, image_size, image_size, 3), dtype=np.uint8)
    # In chunks: a float copy of the whole set would cost 4x its size in host memory.
    for start in range(0, samples, 64):
        end = min(samples, start + 64)
        noise = rng.normal(0.0, 40.0, size=(end - start, image_size, image_size, 3))
        images[start:end] = np.clip(prototypes[labels[start:end]] + noise, 0, 255).astype(np.uint8)
    return images, labels


def parse_args(argv, have_gpu):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--steps", type=int, default=30, help="measured training steps (default 30)")
    parser.add_argument("--image-size", type=int, default=224, help="square image side (default 224)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes (default 10)")
    parser.add_argument("--samples", type=int, default=512, help="synthetic dataset size (default 512)")
    parser.add_argument(
        "--device",
        choices=["cuda", "cpu"],
        default="cuda" if have_gpu else "cpu",
        help="cuda (default when a GPU is visible) or cpu",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("batch_size", "steps", "image_size", "classes", "samples"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.image_size < 32:
        parser.error("--image-size must be at least 32 (five stride-2 stages)")
    return args


def choose_device(args, gpus):
    """Configures visibility and memory growth; must run before any op touches a device."""
    if args.device == "cpu":
        tf.config.set_visible_devices([], "GPU")
        return "/CPU:0"
    if not gpus:
        sys.stderr.write(
            "classify_tf.py: --device cuda, but TensorFlow %s sees no GPU (built for CUDA %s). "
            "Check the driver with nvidia-smi and the CUDA/cuDNN libraries on the library path, "
            "or run with --device cpu.\n" % (tf.__version__, build_info().get("cuda_version"))
        )
        sys.exit(3)
    # One card: CUDA_VISIBLE_DEVICES chooses which; the others must not get a context.
    tf.config.set_visible_devices(gpus[0], "GPU")
    tf.config.experimental.set_memory_growth(gpus[0], True)
    return "/GPU:0"


def build_info():
    try:
        return dict(tf.sysconfig.get_build_info())
    except AttributeError:  # TensorFlow before 2.3
        return {}


def versions():
    info = build_info()
    return {
        "tensorflow": tf.__version__,
        "keras": getattr(tf.keras, "__version__", None),
        "cuda": info.get("cuda_version"),
        "cudnn": info.get("cudnn_version"),
        "python": platform.python_version(),
    }


def main(argv=None):
    gpus = tf.config.list_physical_devices("GPU")
    args = parse_args(argv, bool(gpus))
    device = choose_device(args, gpus)
    cuda = args.device == "cuda"
    tf.random.set_seed(args.seed)

    images, labels = synthetic_dataset(args.samples, args.classes, args.image_size, args.seed)
    dataset_mib = images.nbytes / MIB
    where = args.device
    if cuda:
        details = tf.config.experimental.get_device_details(gpus[0]) if hasattr(
            tf.config.experimental, "get_device_details"
        ) else {}
        where = details.get("device_name", gpus[0].name)
    print(
        "classify_tf.py: ResNet-18 style, batch %d, %d steps, %dx%d images, %d classes, on %s (%s)"
        % (args.batch_size, args.steps, args.image_size, args.image_size, args.classes, args.device, where),
        flush=True,
    )

    with tf.device(device):
        model = resnet18(args.image_size, args.classes)
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def train_step(x_u8, y):
            # uint8 -> normalised float on the device, as a real input pipeline does.
            x = (tf.cast(x_u8, tf.float32) / 255.0 - 0.5) / 0.25
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def batch(step):
            idx = np.arange(step * args.batch_size, (step + 1) * args.batch_size) % args.samples
            return tf.constant(images[idx]), tf.constant(labels[idx])

        # Warm-up: traces the function, loads kernels, grows the allocator pool.
        first_loss = float(train_step(*batch(0)))
        peak_includes_warmup = True
        if cuda and hasattr(tf.config.experimental, "reset_memory_stats"):
            tf.config.experimental.reset_memory_stats("GPU:0")
            peak_includes_warmup = False

        every = max(1, args.steps // 10)
        started = time.perf_counter()
        loss = first_loss
        for step in range(1, args.steps + 1):
            loss_t = train_step(*batch(step))
            if step % every == 0 or step == args.steps:
                loss = float(loss_t)  # synchronises; only on progress steps
                line = "step %d/%d loss %.4f" % (step, args.steps, loss)
                if cuda:
                    peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
                    line += " peak %.0f MiB" % (peak / MIB)
                print(line, flush=True)
        elapsed = time.perf_counter() - started

    if not math.isfinite(loss):
        sys.stderr.write("classify_tf.py: the loss is %r: the stack computes garbage\n" % loss)
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
        # The device the steps were placed on (`/GPU:0`, `/CPU:0`): stackpin proves only on a GPU.
        "device": device,
        "device_name": where,
        "versions": versions(),
    }
    if cuda:
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
        result["peak_allocated_mib"] = round(peak / MIB, 1)
        result["peak_includes_warmup"] = peak_includes_warmup
    print("%s %s" % (RESULT_PREFIX, json.dumps(result, sort_keys=True)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
