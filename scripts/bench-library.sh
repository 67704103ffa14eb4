#!/usr/bin/env bash
# bench-library.sh — the library layer of a real torch 2.5.1 stack (torch + torchvision and their
# ~25 wheels, ~2.9 GB), stackpin against the manual way, side by side:
#   fetch            `stackpin fetch`           vs `pip download` of the same set alone
#   audit            `stackpin audit`           vs an `openssl dgst -sha256` loop and `sha256sum`
#   offline install  `stackpin install` with the installer `pin` writes by default (uv, from the
#                    data set's pin)  vs `python3 -m venv` + `pip install --no-index
#                    --require-hashes` alone, on the same archived wheels; and `installer: pip`
# Times are wall seconds; the peak RSS is /usr/bin/time's, i.e. of the largest single process
# in the install's tree (uv, or the Python of the import check), not the sum. Run it on an idle
# machine: the figures are only as good as the quiet around them (the script prints `uptime`).
#
# NOT part of CI: it downloads ~2.9 GB twice from the package index (pip's default index through
# pip's own client) and needs ~15 GB of disk. Usage: scripts/bench-library.sh [RUNS] (default 1).
# Needs a release build (`cargo build --release`), python3 with pip and venv, openssl, sha256sum.
# The driver and toolkit layers are stand-ins served from loopback with `verify: ["true"]`, so
# `install` runs the library layer only; the library's proof is an import (no GPU needed).
set -euo pipefail

RUNS=${1:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${STACKPIN_BIN:-$ROOT/target/release/stackpin}
[ -x "$BIN" ] || { echo "no release build at $BIN; run: cargo build --release" >&2; exit 2; }
for tool in python3 openssl sha256sum /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
# The caller's pip configuration must not change what the reference runs do either.
for v in $(env | grep -oE '^(PIP|UV|PYTHON)[A-Z_]*' || true); do unset "$v"; done
export PIP_CONFIG_FILE=/dev/null

WORK=${BENCH_WORK:-$(mktemp -d /tmp/stackpin-bench-library.XXXXXX)}
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  [ -n "${BENCH_KEEP:-}" ] && return
  chmod -R u+w "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
PY=$(command -v python3)
PYV=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# Stand-in driver and toolkit installers on loopback.
mkdir -p "$WORK/www"
printf '#!/bin/sh\nexit 0\n' >"$WORK/www/NVIDIA-Linux-x86_64-595.71.05.run"
printf '#!/bin/sh\nexit 0\n' >"$WORK/www/cuda_12.4.1_550.54.15_linux.run"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$WORK/www" && exec "$PY" -m http.server "$PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
SERVER_PID=$!
sleep 1

manifest() { # $1 = installer (uv | pip), $2 = file
  cat >"$2" <<EOF
schema: 1
name: bench-torch
os: linux
driver:
  version: "595.71.05"
  installer:
    url: http://127.0.0.1:$PORT/NVIDIA-Linux-x86_64-595.71.05.run
  run: ["sh", "{installer}"]
  verify: ["true"]
toolkit:
  version: "12.4.1"
  installer:
    url: http://127.0.0.1:$PORT/cuda_12.4.1_550.54.15_linux.run
  root: $WORK/cuda-12.4
  run: ["sh", "{installer}", "--toolkit"]
  verify: ["true"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  python: $PY
  python_version: "$PYV"
  venv: $WORK/venv-$1
  installer: $1
  pip:
    requirements: ["torch==2.5.1", "torchvision==0.20.1"]
  verify: ["{python}", "-c", "import torch, torchvision"]
example:
  run: ["{python}", "-c", "import torch", "{batch}"]
EOF
}

secs() { # wall seconds of a command, its output to $WORK/last.log
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$WORK/last.log" 2>&1 || { echo "failed: $*" >&2; tail -20 "$WORK/last.log" >&2; return 1; }
  t1=$(date +%s.%N)
  $PY -c "print(f'{$t1 - $t0:.2f}')"
}
peak() { # peak RSS (MiB) of a command
  /usr/bin/time -f '%M' -o "$WORK/rss" "$@" >/dev/null 2>&1 || true
  $PY -c "print(round(int(open('$WORK/rss').read().split()[-1]) / 1024))"
}
ratio() { $PY -c "print(f'{$1 / $2:.2f}')"; }

export STACKPIN_ARCHIVE=$WORK/installers STACKPIN_SKIP_ADMIN_CHECK=1
# The default manifest's installer: whatever `pin` writes for this library when not told
# otherwise (uv, taken from the release data's pin). Its wheels come from pip's default index
# here (torch 2.5.1 there is the CUDA 12.4 build), as the PyTorch index may not be reachable.
"$BIN" pin --library torch==2.5.1 --os linux --python "$PYV" --toolkit 12.4 -o "$WORK/pinned.yaml" >/dev/null
DEFAULT_INSTALLER=$(sed -n 's/^  installer: \([a-z][a-z]*\).*/\1/p' "$WORK/pinned.yaml" | head -1)
[ "$DEFAULT_INSTALLER" = uv ] || { echo "pin wrote installer: '$DEFAULT_INSTALLER', expected uv" >&2; exit 2; }
manifest "$DEFAULT_INSTALLER" "$WORK/uv.yaml"
manifest pip "$WORK/pip.yaml"

echo "== fetch (network-bound; ~2.9 GB)" >&2
T_FETCH=$(secs "$BIN" --quiet fetch "$WORK/uv.yaml")
LIB=$WORK/installers/bench-torch/library
SIZE=$(du -sb "$LIB" | cut -f1)
NWHEELS=$(ls "$LIB" | wc -l)
T_PIPDL=$(secs "$PY" -m pip download --isolated --only-binary=:all: -d "$WORK/pipdl" torch==2.5.1 torchvision==0.20.1)

echo "== audit (page cache warmed first; best of 3 each, so no side pays for a cold read)" >&2
cat "$LIB"/* > /dev/null
best() { # the smallest of three timings of the same command
  local a b c
  a=$(secs "$@"); b=$(secs "$@"); c=$(secs "$@")
  printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | head -1
}
T_AUDIT=$(best "$BIN" --quiet audit "$WORK/uv.yaml")
T_OPENSSL=$(best sh -c "for f in '$LIB'/*; do openssl dgst -sha256 \"\$f\"; done")
T_SHA256SUM=$(best sh -c "sha256sum '$LIB'/*")

echo "== offline install, $RUNS run(s) each" >&2
# Both manifests name the same stack (they differ in installer and venv only): one archive.
REQ=$WORK/installers/bench-torch/requirements.stackpin.txt
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/venv-uv" "$WORK/venv-pip" "$WORK/venv-ref" "$WORK/installers"/*/state.yaml
  T_UV[$run]=$(secs "$BIN" --quiet install --yes "$WORK/uv.yaml")
  rm -rf "$WORK/venv-uv" "$WORK/installers"/*/state.yaml
  T_PIP[$run]=$(secs "$BIN" --quiet install --yes "$WORK/pip.yaml")
  rm -rf "$WORK/venv-pip" "$WORK/installers"/*/state.yaml
  T_REF[$run]=$(secs sh -c "'$PY' -m venv '$WORK/venv-ref' && '$WORK/venv-ref/bin/python' -m pip install --isolated --no-index --find-links '$LIB' --require-hashes -r '$REQ'")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
M_UV=$(median "${T_UV[@]}"); M_PIP=$(median "${T_PIP[@]}"); M_REF=$(median "${T_REF[@]}")
rm -rf "$WORK/venv-ref" "$WORK/installers"/*/state.yaml
RSS_UV=$(peak "$BIN" --quiet install --yes "$WORK/uv.yaml")

cat <<EOF
library layer of torch 2.5.1 + torchvision 0.20.1: $NWHEELS wheels, $((SIZE / 1000000)) MB, $(nproc) cores
| measurement | stackpin | reference | ratio | target |
|---|---|---|---|---|
| fetch vs \`pip download\` alone | ${T_FETCH} s | ${T_PIPDL} s | $(ratio "$T_PIPDL" "$T_FETCH")× | network-bound |
| audit vs \`openssl dgst -sha256\` loop | ${T_AUDIT} s | ${T_OPENSSL} s | $(ratio "$T_OPENSSL" "$T_AUDIT")× | ≥ 1.8× |
| audit vs \`sha256sum\` | ${T_AUDIT} s | ${T_SHA256SUM} s | $(ratio "$T_SHA256SUM" "$T_AUDIT")× | — |
| install, default manifest (installer: $DEFAULT_INSTALLER, median of $RUNS) vs venv + pip alone | ${M_UV} s | ${M_REF} s | $(ratio "$M_UV" "$M_REF") of it | ≤ 0.6 |
| install, installer: pip (median of $RUNS) vs venv + pip alone | ${M_PIP} s | ${M_REF} s | $(ratio "$M_PIP" "$M_REF") of it | — |
| peak RSS, largest process of stackpin install (uv) | ${RSS_UV} MiB | | | |
EOF
echo "load while measuring: $(uptime)"
