#!/usr/bin/env bash
# Measures `stackpin check` of one shipped manifest, process start included, as a user runs it.
# Target (issue 2): under 20 ms per check. Prints min / median / max over RUNS runs.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-50}
MANIFEST=${1:-manifests/torch-2.5.1-cu124-linux.yaml}
cargo build --release --quiet
BIN=target/release/stackpin
"$BIN" check "$MANIFEST" >/dev/null # warm the page cache

times=()
for _ in $(seq "$RUNS"); do
  start=$(date +%s%N)
  "$BIN" check "$MANIFEST" >/dev/null
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
min=${sorted[0]}; max=${sorted[-1]}; median=${sorted[$(( RUNS / 2 ))]}
printf 'stackpin check %s, %d runs (process start included)\n' "$MANIFEST" "$RUNS"
printf '  min %d.%03d ms   median %d.%03d ms   max %d.%03d ms\n' \
  $((min / 1000)) $((min % 1000)) $((median / 1000)) $((median % 1000)) $((max / 1000)) $((max % 1000))
if (( median < 20000 )); then echo "  target < 20 ms: met"; else echo "  target < 20 ms: MISSED"; exit 1; fi
