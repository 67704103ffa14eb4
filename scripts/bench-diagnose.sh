#!/usr/bin/env bash
# Measures `stackpin diagnose` on a large log: wall time and peak RSS (GNU time's "Maximum
# resident set size"), for a release build. The log is written once under target/ (1 GiB by
# default: a progress line repeated, a cuDNN error in the middle, a CUDA out-of-memory at the end).
#
#   bash scripts/bench-diagnose.sh            # 1024 MiB
#   SIZE_MIB=200 bash scripts/bench-diagnose.sh
#
# The target (issue 33): a 1 GB log in under 30 s with RSS under 256 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${SIZE_MIB:-1024}"
bin="${STACKPIN:-target/release/stackpin}"
[ -x "$bin" ] || cargo build --release --quiet
log="target/bench-diagnose-${size_mib}MiB.log"
if [ ! -s "$log" ]; then
  python3 - "$log" "$size_mib" <<'PY'
import sys
path, mib = sys.argv[1], int(sys.argv[2])
line = b"epoch 3 step 12345 loss 0.4321 |\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x91\xe2\x96\x91| 38 it/s\n"
block = line * (1024 * 1024 // len(line))
with open(path, "wb") as f:
    for i in range(mib):
        f.write(block)
        if i == mib // 2:
            f.write(b"UserWarning: cuDNN version 8.9 is older than the one torch was built with\n")
    f.write(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
PY
fi
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null 2>&1 || true; }
echo "log: $log ($(du -h "$log" | cut -f1))"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f 'wall %e s, peak RSS %M KiB' "$bin" diagnose --host none --json "$log" \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print("layer:", d["layer"], "line:", d.get("line"))'
else
  start=$(date +%s.%N)
  "$bin" diagnose --host none --json "$log" >/dev/null
  echo "wall $(echo "$(date +%s.%N) - $start" | bc) s (no /usr/bin/time for RSS)"
fi
