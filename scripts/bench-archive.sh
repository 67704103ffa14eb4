#!/usr/bin/env bash
# bench-archive.sh — stackpin's archive against the careful manual way, side by side, on
# generated 1 GiB files: audit vs `openssl dgst -sha256` / `sha256sum`, fetch over loopback vs
# `curl -o F && openssl dgst -sha256 F && sync F`, and stackpin's peak RSS.
#
# Usage: scripts/bench-archive.sh [SIZE_MIB] (default 1024). Needs a release build
# (`cargo build --release`), python3, curl, openssl, sha256sum, /usr/bin/time.
# Everything it generates lives under a mktemp folder in /tmp and is deleted at the end.
set -euo pipefail

SIZE_MIB=${1:-1024}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${STACKPIN_BIN:-$ROOT/target/release/stackpin}
[ -x "$BIN" ] || { echo "no release build at $BIN; run: cargo build --release" >&2; exit 2; }
for tool in python3 curl openssl sha256sum /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/stackpin-bench.XXXXXX)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  chmod -R u+w "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "generating 4 files of $SIZE_MIB MiB in $WORK ..." >&2
mkdir -p "$WORK/www"
for i in 1 2 3 4; do
  openssl enc -aes-128-ctr -pass pass:"stackpin$i" -nosalt -pbkdf2 </dev/zero 2>/dev/null \
    | head -c $((SIZE_MIB * 1024 * 1024)) >"$WORK/www/file$i.run" || true # SIGPIPE from head
  [ "$(stat -c %s "$WORK/www/file$i.run")" -eq $((SIZE_MIB * 1024 * 1024)) ] || { echo "generating file$i failed" >&2; exit 3; }
done

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$WORK/www" && exec python3 -m http.server "$PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
SERVER_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

# A manifest whose driver, toolkit and library installers are files 1-3 (4 via a second stack).
manifest() { # name f1 f2 f3
  cat <<YAML
schema: 1
name: $1
os: linux
driver:
  version: "595.71.05"
  installer: {url: "http://127.0.0.1:$PORT/$2"}
  run: ["sh", "{installer}"]
toolkit:
  version: "12.4.1"
  installer: {url: "http://127.0.0.1:$PORT/$3"}
  root: /usr/local/cuda-12.4
  run: ["sh", "{installer}", "--silent", "--toolkit", "--toolkitpath={root}"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  installers:
$(for f in "${@:4}"; do echo "    - {url: \"http://127.0.0.1:$PORT/$f\"}"; done)
  run: ["sh", "{installer}"]
example:
  run: ["python3", "{examples}/classify.py", "--batch-size", "{batch}"]
YAML
}
# One-file stack: only the driver is big; toolkit and library are tiny.
head -c 1024 /dev/urandom >"$WORK/www/tiny-a.run"
head -c 1024 /dev/urandom >"$WORK/www/tiny-b.tar.gz"
manifest one file1.run tiny-a.run tiny-b.tar.gz >"$WORK/one.yaml"
manifest four file1.run file2.run file3.run file4.run >"$WORK/four.yaml"

# seconds of wall time of a command, output discarded
secs() {
  local s e
  s=$(date +%s.%N)
  "$@" >/dev/null 2>"$WORK/last.err" || { echo "failed: $*" >&2; cat "$WORK/last.err" >&2; exit 3; }
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}

echo "fetch: 1 file" >&2
T_FETCH1=$(secs "$BIN" fetch "$WORK/one.yaml" --archive "$WORK/a1" --quiet)
echo "manual: curl + openssl + sync, 1 file" >&2
manual() { curl -sf -o "$WORK/m/$1" "http://127.0.0.1:$PORT/$1" && openssl dgst -sha256 "$WORK/m/$1" && sync "$WORK/m/$1"; }
mkdir -p "$WORK/m"
T_MAN1=$(secs manual file1.run)
rm -f "$WORK/m/"*

echo "fetch: 4 files --jobs 4" >&2
T_FETCH4=$(secs "$BIN" fetch "$WORK/four.yaml" --archive "$WORK/a4" --jobs 4 --quiet)
echo "manual: 4 pipelines in parallel" >&2
manual4() { for i in 1 2 3 4; do manual "file$i.run" & done; wait; }
T_MAN4=$(secs manual4)
rm -f "$WORK/m/"*

# Page cache is warm for everything below (the files were just written and read): this
# measures hashing, not the disk.
echo "audit: 1 file" >&2
T_AUDIT1=$(secs "$BIN" audit "$WORK/one.yaml" --archive "$WORK/a1" --quiet)
T_OSSL1=$(secs openssl dgst -sha256 "$WORK/www/file1.run")
T_SUM1=$(secs sha256sum "$WORK/www/file1.run")
echo "audit: 4 files" >&2
T_AUDIT4=$(secs "$BIN" audit "$WORK/four.yaml" --archive "$WORK/a4" --quiet)
ossl4() { for i in 1 2 3 4; do openssl dgst -sha256 "$WORK/www/file$i.run"; done; }
T_OSSL4=$(secs ossl4)

echo "peak RSS" >&2
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
RSS_FETCH=$(rm -rf "$WORK/a5"; rss "$BIN" fetch "$WORK/four.yaml" --archive "$WORK/a5" --jobs 4 --quiet)
RSS_AUDIT=$(rss "$BIN" audit "$WORK/four.yaml" --archive "$WORK/a5" --quiet)

ratio() { echo "scale=2; $1 / $2" | bc -l; }
mib_s() { echo "scale=0; $1 * $SIZE_MIB / $2" | bc -l; }
printf '\n%s MiB files, %s cores, %s\n\n' "$SIZE_MIB" "$(nproc)" "$(uname -sr)"
printf '| measurement | stackpin s | reference s | speed-up (ref/stackpin) | target |\n|---|---|---|---|---|\n'
printf '| audit 1 file vs openssl dgst | %.2f | %.2f | %s× | ≥ 0.9× |\n' "$T_AUDIT1" "$T_OSSL1" "$(ratio "$T_OSSL1" "$T_AUDIT1")"
printf '| audit 1 file vs sha256sum | %.2f | %.2f | %s× | — |\n' "$T_AUDIT1" "$T_SUM1" "$(ratio "$T_SUM1" "$T_AUDIT1")"
printf '| audit 4 files vs openssl in sequence | %.2f | %.2f | %s× | ≥ 1.6× |\n' "$T_AUDIT4" "$T_OSSL4" "$(ratio "$T_OSSL4" "$T_AUDIT4")"
printf '| fetch 1 file vs curl+openssl+sync | %.2f | %.2f | %s× | ≥ 1.2× |\n' "$T_FETCH1" "$T_MAN1" "$(ratio "$T_MAN1" "$T_FETCH1")"
printf '| fetch 4 files (--jobs 4) vs 4 pipelines | %.2f | %.2f | %s× | ≥ 1.0× |\n' "$T_FETCH4" "$T_MAN4" "$(ratio "$T_MAN4" "$T_FETCH4")"
printf '| peak RSS fetch --jobs 4 / audit | %s / %s MiB | | | ≤ 64 MiB |\n' "$((RSS_FETCH / 1024))" "$((RSS_AUDIT / 1024))"
printf '\naudit throughput 1 file: %s MiB/s (openssl %s MiB/s)\n' "$(mib_s 1 "$T_AUDIT1")" "$(mib_s 1 "$T_OSSL1")"
