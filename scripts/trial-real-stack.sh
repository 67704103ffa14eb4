#!/usr/bin/env bash
# A trial of one library with its real wheels, end to end, as far as a machine without a GPU goes:
#
#   bash scripts/trial-real-stack.sh torch==2.5.1
#   bash scripts/trial-real-stack.sh tensorflow==2.17.0
#   bash scripts/trial-real-stack.sh onnxruntime-gpu==1.20.2
#
# NOT part of CI and never run by `cargo test`: it downloads the library's real wheels from the
# package index through pip (several GB for torch and TensorFlow) into $TRIAL_DIR (default
# /tmp/trials/<library>-<version>, outside the repository). Steps, each timed:
#
#   1. pin      `stackpin pin` for this host's Python; the driver and toolkit installers are
#               replaced by stubs on a loopback server (the trial is about the library layer; the
#               CUDA runfile alone is 4 GB), the toolkit root and venv moved into the trial folder
#   2. fetch    the real wheels through pip, hashed into the lock
#   3. audit    every archived file re-hashed against the lock
#   4. install  offline, inside a network namespace with no network at all (`unshare -n`, needs
#               root): fresh venv, `pip install --no-index --require-hashes` from the archive. The
#               driver and toolkit layers are a fake GPU host (fake nvidia-smi reporting the
#               pinned driver, a fake toolkit folder), so their proofs hold and only the library
#               installs. The library proof then says what the real library sees on this machine.
#   5. example  the bundled example with `--device cpu`, offline, with the venv's Python
#   6. prove    `stackpin prove` on the fake GPU host: on a machine without a GPU the real
#               library sees none, and prove says so in the library's own words (exit 1)
#
# It prints one line of figures at the end (files, size, seconds per step). STACKPIN points at the
# binary (default: target/release/stackpin, built if missing); PYTHON at the interpreter
# (default python3); TRIAL_REPO at the checkout whose scripts/ hold the examples (default: this
# script's). TRIAL_INDEX=default drops the manifest's `index_url` so pip's default index
# serves the wheels (for a machine that reaches only the package registry: there torch 2.5.1's
# Linux wheel is the CUDA 12.4 build, with its CUDA libraries as `nvidia-*` wheels). Set KEEP=1 to keep the trial folder (default: the wheels and venv are
# removed at the end, the log and figures are kept).
set -euo pipefail

spec=${1:?usage: trial-real-stack.sh LIBRARY==VERSION (e.g. torch==2.5.1)}
library=${spec%%==*}
version=${spec##*==}
repo=${TRIAL_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
stackpin=${STACKPIN:-$repo/target/release/stackpin}
python=${PYTHON:-python3}
work=${TRIAL_DIR:-/tmp/trials/$library-$version}

if [ ! -x "$stackpin" ]; then
  (cd "$repo" && cargo build --release)
fi
if ! unshare -n true 2>/dev/null; then
  echo "trial: \`unshare -n\` is not available (it needs root); the offline install step needs it" >&2
  exit 2
fi

rm -rf "$work"
mkdir -p "$work/stubs" "$work/fake/bin"
cd "$work"
log=$work/trial.log
: > "$log"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
step() { echo "── $*" | tee -a "$log"; }

pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# 1. pin
step "pin $spec for Python $pyver"
t0=$(now)
"$stackpin" pin --library "$spec" --os linux --python "$pyver" -o pinned.yaml --force >> "$log" 2>&1
t_pin=$(secs "$t0" "$(now)")
driver=$(sed -n 's/^  version: "\(.*\)".*/\1/p' pinned.yaml | head -1)
toolkit=$(sed -n '/^toolkit:/,/^library:/s/^  version: "\(.*\)".*/\1/p' pinned.yaml | head -1)
driver_file=$(sed -n '/^driver:/,/^toolkit:/s|^    url: .*/||p' pinned.yaml | head -1)
toolkit_file=$(sed -n '/^toolkit:/,/^library:/s|^    url: .*/||p' pinned.yaml | head -1)
line=$(echo "$toolkit" | cut -d. -f1-2)
cuda_major=$(echo "$toolkit" | cut -d. -f1)

# Stub installers on loopback, and the fake GPU host: an L4 with the pinned driver, the toolkit.
printf '#!/bin/sh\nexit 0\n' > "stubs/$driver_file"
printf '#!/bin/sh\nexit 0\n' > "stubs/$toolkit_file"
"$python" -m http.server 0 --bind 127.0.0.1 --directory stubs > stubs.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
port=
for _ in $(seq 50); do
  port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' stubs.log | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "trial: the stub server did not start" >&2; exit 3; }
root=$work/fake/cuda-$line
mkdir -p "$root/bin" "$root/lib64"
printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$toolkit" > "$root/version.json"
cat > fake/bin/nvidia-smi <<EOF
#!/bin/sh
# Fake nvidia-smi: one NVIDIA L4 on driver $driver, nothing running.
for a in "\$@"; do [ "\$a" = "-lms" ] && exec sleep 3600; done
case "\$1" in
  --query-gpu=memory.used*) echo "0"; exit 0 ;;
  --query-gpu=*) echo "0, NVIDIA L4, GPU-00000000-fake-4c1e-8f3a-000000000000, $driver, 23034, 8.9"; exit 0 ;;
  --query-compute-apps=*) exit 0 ;;
esac
echo "| NVIDIA-SMI $driver             Driver Version: $driver     CUDA Version: $cuda_major.9     |"
EOF
chmod +x fake/bin/nvidia-smi
sed -e "s|https://[^ ]*/$driver_file|http://127.0.0.1:$port/$driver_file|" \
    -e "s|^    sha256: [0-9a-f]\{64\}   # published.*|    sha256: null   # a stub stands in for the published installer|" \
    -e "s|https://[^ ]*/$toolkit_file|http://127.0.0.1:$port/$toolkit_file|" \
    -e "s|^  root: .*|  root: \"$root\"|" \
    -e "s|^  venv: .*|  venv: \"$work/venv\"|" \
    -e "s|^name: .*|name: trial|" pinned.yaml > stack.yaml
if [ "${TRIAL_INDEX:-}" = default ]; then
  sed -i '/^    index_url: /d' stack.yaml
  echo "note: index_url removed (TRIAL_INDEX=default): pip's default index serves the wheels" | tee -a "$log"
fi
export STACKPIN_ARCHIVE=$work/installers PATH="$work/fake/bin:$PATH"

# 2. fetch
step "fetch (real wheels through pip)"
t0=$(now)
"$stackpin" fetch stack.yaml >> "$log" 2>&1
t_fetch=$(secs "$t0" "$(now)")
files=$(find installers/trial/library -type f -name '*.whl' | wc -l)
bytes=$(find installers/trial/library -type f -name '*.whl' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
gb=$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e9 }')

# 3. audit
step "audit"
t0=$(now)
"$stackpin" audit stack.yaml >> "$log" 2>&1
t_audit=$(secs "$t0" "$(now)")

# 4. install, offline
step "install offline (unshare -n)"
t0=$(now)
set +e
STACKPIN_SKIP_ADMIN_CHECK=1 unshare -n "$stackpin" install stack.yaml --yes >> "$log" 2>&1
install_rc=$?
set -e
t_install=$(secs "$t0" "$(now)")
library_line=$(grep -E '^ *(✓|✗|!)? *library' "$log" | tail -1 | sed 's/^ *//')

# 5. the example on CPU, offline
script=$(sed -n 's|.*{examples}/\([a-z_]*\.py\).*|\1|p' stack.yaml | head -1)
step "example $script --device cpu (offline)"
case "$script" in
  infer_ort.py) args=(--device cpu --iterations 50 --save-model "$work/model.onnx") ;;
  *) args=(--device cpu --batch-size 16 --steps 5 --image-size 64 --samples 128) ;;
esac
t0=$(now)
set +e
unshare -n "$work/venv/bin/python" "$repo/scripts/$script" "${args[@]}" >> "$log" 2>&1
example_rc=$?
set -e
t_example=$(secs "$t0" "$(now)")
result=$(grep -o 'STACKPIN_RESULT .*' "$log" | tail -1 | cut -c1-160)

# 6. prove on the fake GPU host
step "prove on the fake GPU host"
t0=$(now)
set +e
"$stackpin" prove stack.yaml >> "$log" 2>&1
prove_rc=$?
set -e
t_prove=$(secs "$t0" "$(now)")
verdict=$(grep -E 'sees|proven:|error:' "$log" | tail -1 | cut -c1-200)

if [ "${KEEP:-0}" != 1 ]; then
  rm -rf "$work/installers/trial/library" "$work/venv"
fi
echo
echo "trial $spec (Python $pyver, CUDA $toolkit, log $log)"
echo "  pin ${t_pin}s | fetch $files files, $gb GB in ${t_fetch}s | audit ${t_audit}s | install offline ${t_install}s (exit $install_rc) | example on CPU ${t_example}s (exit $example_rc) | prove ${t_prove}s (exit $prove_rc)"
echo "  library proof: $library_line"
echo "  example: $result"
echo "  prove: $verdict"
echo "| $spec | $files | $gb GB | ${t_fetch} s | ${t_audit} s | ${t_install} s | ${t_example} s (exit $example_rc) | exit $prove_rc |"
