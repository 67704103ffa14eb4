#!/usr/bin/env bash
# gpu-proof.sh — prove stackpin on a real machine that already has an NVIDIA GPU and PyTorch
# (no network needed). It pins a manifest to what the host has, runs `plan`, `prove` at batch 64,
# `prove --fit 16,32,64`, then one run at the predicted largest safe batch, and prints predicted
# vs measured peak GPU memory for each batch. Everything lands in one folder ($OUT_DIR).
#
#   bash scripts/gpu-proof.sh                 # python3 with torch on PATH
#   PYTHON=/opt/venv/bin/python OUT_DIR=/tmp/proof bash scripts/gpu-proof.sh
#   STACKPIN=/opt/stackpin bash scripts/gpu-proof.sh   # a release binary carried here alone
#
# It needs only the release binary and this script (no source tree, no cargo, no network): the
# binary is $STACKPIN, else `stackpin` beside this script or on PATH, else target/release.
# In a container whose nvidia-smi lists no processes, prove falls back to the card's memory.used
# over its idle baseline, beside the example's own report that it ran on cuda: the record says so.
# Finishes in a few minutes on any current GPU (the example runs 20 steps per batch).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

PY=${PYTHON:-python3}
OUT=${OUT_DIR:-$PWD/gpu-proof-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export STACKPIN_ARCHIVE="$OUT/archive"
log() { printf '\n== %s\n' "$*" | tee -a "$OUT/summary.txt"; }

BIN=${STACKPIN:-}
for candidate in "$HERE/stackpin" "$HERE/../stackpin" "$(command -v stackpin || true)" "$HERE/../target/release/stackpin"; do
  if [[ -z "$BIN" && -n "$candidate" && -x "$candidate" ]]; then BIN=$candidate; fi
done
if [[ -z "$BIN" ]]; then
  if command -v cargo >/dev/null && [[ -f "$HERE/../Cargo.toml" ]]; then
    log "building stackpin"
    (cd "$HERE/.." && cargo build --release --quiet)
    BIN="$HERE/../target/release/stackpin"
  else
    echo "gpu-proof.sh: no stackpin binary: set STACKPIN=/path/to/stackpin, or put it beside this script" >&2
    exit 2
  fi
fi
echo "stackpin: $BIN ($("$BIN" --version))"

log "host"
"$BIN" host --python "$PY" | tee "$OUT/host.txt"
"$BIN" host --python "$PY" --json > "$OUT/host.json"

log "pinning a manifest to this host"
"$PY" - "$OUT/host.json" "$OUT/stack.yaml" "$PY" <<'PYEOF'
import json, os, sys
host = json.load(open(sys.argv[1]))
out, python = sys.argv[2], sys.argv[3]
gpus = host["driver"].get("gpus") or []
if not gpus:
    sys.exit("no NVIDIA GPU answered nvidia-smi; nothing to prove")
driver = gpus[0]["driver_version"]
lib = (host.get("library") or {})
if lib.get("state") != "found":
    sys.exit("PyTorch does not import with %s: %s" % (python, lib.get("error")))
torch_version = lib["version"]
cuda = lib.get("cuda")
if not cuda:
    sys.exit("this PyTorch is a CPU build (torch.version.cuda is None)")
major_minor = ".".join(cuda.split(".")[:2])
# The toolkit's own versioned folder (cuda-13.0), never the /usr/local/cuda link: check insists.
toolkit = next((t for t in host.get("toolkits", [])
                if t.get("version") and ".".join(str(t["version"]).split(".")[:2]) == major_minor
                and os.path.basename(str(t["root"]).rstrip("/")) == "cuda-" + major_minor), None)
nvcc = next((os.path.join(str(t["root"]), "bin", "nvcc") for t in host.get("toolkits", [])
             if t.get("version") and ".".join(str(t["version"]).split(".")[:2]) == major_minor), None)
q = json.dumps
lines = [
    "# Pinned by scripts/gpu-proof.sh to what this host already has; installers are never run.",
    "schema: 1", "name: gpu-proof", "os: linux",
    "driver:", "  version: %s" % q(driver),
    "  installer:", "    url: http://127.0.0.1:9/NVIDIA-Linux-x86_64-%s.run" % driver,
    "  run: [\"sh\", \"{installer}\"]",
    "toolkit:",
]
if toolkit:
    lines += ["  version: %s" % q(str(toolkit["version"])), "  root: %s" % q(toolkit["root"])]
else:
    # PyTorch wheels bundle their CUDA runtime: without a versioned toolkit folder, prove the
    # toolkit by the nvcc that is there (an unversioned folder), else by the CUDA build.
    lines += ["  version: %s" % q(major_minor), "  root: %s" % q("/usr/local/cuda-" + major_minor)]
    if nvcc and os.access(nvcc, os.X_OK):
        lines += ["  verify: [%s, \"--version\"]" % q(nvcc)]
    else:
        lines += ["  verify: [%s, \"-c\", \"import torch, sys; sys.exit(0 if torch.version.cuda else 1)\"]" % q(python)]
lines += [
    "  installer:", "    url: http://127.0.0.1:9/cuda_%s_linux.run" % major_minor,
    "  run: [\"sh\", \"{installer}\", \"--silent\", \"--toolkit\"]",
    "library:", "  name: torch", "  version: %s" % q(torch_version.split("+")[0]), "  cuda: %s" % q(major_minor),
    "  python: %s" % q(python),
    "  installers:", "    - url: http://127.0.0.1:9/already-installed.sh", "  run: [\"sh\", \"{installer}\"]",
    "example:",
    "  run: [\"{python}\", \"{examples}/classify.py\", \"--batch-size\", \"{batch}\", \"--steps\", \"20\"]",
    "  batch: 64", "  timeout: 5m",
    "vram:", "  line: 0.8", "  batches: [16, 32, 48, 64, 96, 128, 192, 256, 384, 512]",
]
open(out, "w").write("\n".join(lines) + "\n")
print("driver %s, CUDA %s (%s), torch %s" % (driver, major_minor, "toolkit " + toolkit["root"] if toolkit else "no versioned toolkit folder: verified by " + (nvcc or "torch"), torch_version))
PYEOF
"$BIN" check "$OUT/stack.yaml" | tee -a "$OUT/summary.txt" || true

log "plan"
"$BIN" plan "$OUT/stack.yaml" | tee "$OUT/plan.txt"

log "prove at batch 64"
"$BIN" prove "$OUT/stack.yaml" | tee "$OUT/prove-64.txt"
"$BIN" prove "$OUT/stack.yaml" --json > "$OUT/prove-64.json"

log "prove --fit 16,32,64"
"$BIN" prove "$OUT/stack.yaml" --fit 16,32,64 --json > "$OUT/prove-fit.json"
"$BIN" prove "$OUT/stack.yaml" --fit 16,32,64 | tee "$OUT/prove-fit.txt" >/dev/null

SAFE=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("largest_safe_batch") or "")' "$OUT/prove-64.json")
if [[ -n "$SAFE" && "$SAFE" != 64 ]]; then
  log "one run at the predicted largest safe batch ($SAFE)"
  "$BIN" prove "$OUT/stack.yaml" --batch "$SAFE" --json > "$OUT/prove-$SAFE.json"
fi
cp "$STACKPIN_ARCHIVE"/gpu-proof/proven-stack.svg "$OUT/" 2>/dev/null || true

log "predicted vs measured peak GPU memory"
"$PY" - "$OUT" <<'PYEOF' | tee -a "$OUT/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
one = json.load(open(os.path.join(out, "prove-64.json")))
fit = json.load(open(os.path.join(out, "prove-fit.json")))
pred_one = {p["batch"]: p["peak_mib"] for p in one["predictions"]}
pred_fit = {p["batch"]: p["peak_mib"] for p in fit["predictions"]}
measured = {one["example"]["batch"]: one["peak"]["mib"]}
for b, mib in (fit.get("fit") or {}).get("points", []):
    measured[b] = mib
for path in glob.glob(os.path.join(out, "prove-*.json")):
    r = json.load(open(path))
    if r is not one and r is not fit:
        measured.setdefault(r["example"]["batch"], r["peak"]["mib"])
print("GPU %s, %s MiB" % (one["gpus"][0]["name"], one["gpus"][0]["vram_mib"]))
print("%6s %14s %14s %12s %8s" % ("batch", "one-point MiB", "fit MiB", "measured MiB", "error"))
for b in sorted(set(pred_one) | set(measured)):
    m = measured.get(b)
    p1, pf = pred_one.get(b), pred_fit.get(b)
    err = "%+.1f%%" % (100.0 * (pf - m) / m) if (m and pf) else ""
    fmt = lambda v: "%.0f" % v if v is not None else "-"
    print("%6d %14s %14s %12s %8s" % (b, fmt(p1), fmt(pf), fmt(m), err))
PYEOF
echo
echo "results: $OUT"
