#!/usr/bin/env bash
# Cross-builds stackpin and its tests for x86_64-pc-windows-gnu and runs the whole test suite
# under Wine. Exits non-zero when any test fails or anything cannot be built.
#
# Route (measured in the project's Windows CI spike): Debian's rustc-web/cargo-web with rust-web-src and
# `-Zbuild-std` (no prebuilt Windows std exists for that compiler), mingw-w64 as linker and C
# compiler (ring's C code), Wine 8 as the test runner. Run from anywhere, as root on a fresh
# Debian bookworm machine; extra arguments go to `cargo test` (e.g. a test name filter), except
# `--prepare-only`, which installs and prepares everything and builds nothing.
#
# What it does not prove: a real NVIDIA driver install on real Windows. Wine does not reproduce
# sharing violations, ACLs or the real cmd.exe faithfully, so no test relies on those.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-pc-windows-gnu
wine=/usr/lib/wine/wine64
wineserver=/usr/lib/wine/wineserver

# 1. Toolchain. `apt-get update` first: rustc-web lives in bookworm-security and moves.
need=()
[ -x /usr/bin/cargo ] && /usr/bin/cargo --version 2>/dev/null | grep -q . || need+=(cargo-web)
[ -x /usr/bin/rustc ] || need+=(rustc-web)
[ -e /usr/lib/rustlib/src/rust/library ] || need+=(rust-web-src)
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
[ -x "$wine" ] || need+=(wine64)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-windows: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends rustc-web cargo-web rust-web-src \
    gcc-mingw-w64-x86-64 wine64 >/dev/null
fi

# 2. Debian's rustc/cargo, not rustup's proxies that may come first on PATH: the std source in
#    rust-web-src must match the compiler exactly.
export PATH="/usr/bin:/bin:$PATH"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
unset RUSTUP_TOOLCHAIN CARGO_BUILD_TARGET
export RUSTC_BOOTSTRAP=1 # -Zbuild-std on a stable compiler
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine"
# Its own target folder: the native build uses another compiler and must not be invalidated.
# Outside the checkout on purpose: the cross build (std from source included) takes many minutes
# cold on 2 cores, and CI clones afresh each run; a cache under $HOME makes every later run on the
# same machine incremental (std and the dependencies are reused).
export CARGO_TARGET_DIR="${STACKPIN_WINDOWS_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stackpin/windows-target}"
# Cargo decides that stackpin's own crates are fresh by file times, not by checkout path: a
# checkout whose files are older than the cache's last build would run stale binaries. Touching
# the crate roots makes this checkout's sources the newest, so its crates always rebuild.
# (Not when only preparing: CI prepares beside the native build, which must not see new times.)
[ "${1:-}" = --prepare-only ] || touch src/lib.rs src/main.rs tests/cli/main.rs
unset RUST_BACKTRACE RUST_LIB_BACKTRACE
# No debug info: linking the test executables with mingw is the slow part of a cold build, and
# a failure under Wine is read from the test's own message, not a debugger.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0

# 3. A quiet, headless Wine prefix (no Mono/Gecko prompts, no display).
export WINEPREFIX="${WINEPREFIX:-/tmp/stackpin-wine}"
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY
if [ ! -e "$WINEPREFIX/system.reg" ]; then
  echo "test-windows: creating the Wine prefix $WINEPREFIX" >&2
  "$wine" wineboot -u >/dev/null 2>&1 || true
  "$wineserver" -w
fi

# 4. Rust's std (>= 1.78) imports ProcessPrng from bcryptprimitives.dll, which Wine < 9 lacks
#    (rust-lang/rust#121337): every test exe would exit 53 with no output. A stand-in that
#    forwards to RtlGenRandom goes into the prefix's system32, where child processes find it too.
#    Real Windows 10+ ships the DLL; this only touches the test prefix.
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -e "$sys32/bcryptprimitives.dll" ]; then
  shim="$(mktemp -d)"
  cat >"$shim/bcryptprimitives.c" <<'CSRC'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk; len -= chunk;
    }
    return TRUE;
}
CSRC
  x86_64-w64-mingw32-gcc -O2 -s -shared -o "$sys32/bcryptprimitives.dll" \
    "$shim/bcryptprimitives.c" -ladvapi32
  rm -rf "$shim"
fi

# 5. The Windows fake programs the tests run (tests/windows-fakes/*.c): a fake installer .exe
#    run by argv (exit code from its first argument, 3010 = reboot required) and a fake
#    nvidia-smi.exe. Tests find them through STACKPIN_WINDOWS_FAKES and fail when it is missing.
fakes="$CARGO_TARGET_DIR/windows-fakes"
mkdir -p "$fakes"
for src in tests/windows-fakes/*.c; do
  exe="$fakes/$(basename "$src" .c).exe"
  if [ ! -e "$exe" ] || [ "$src" -nt "$exe" ]; then
    x86_64-w64-mingw32-gcc -O2 -s -Wall -o "$exe" "$src"
  fi
done
export STACKPIN_WINDOWS_FAKES="$fakes"
# `--prepare-only`: the toolchain, Wine's prefix and the fakes, without building stackpin (CI
# runs it beside the native build: it is mostly downloads).
if [ "${1:-}" = --prepare-only ]; then
  echo "test-windows: prepared (toolchain, Wine prefix, fakes); nothing was built or run" >&2
  exit 0
fi

# 6. Build std from source and run every test target under Wine. One cargo invocation: a
#    separate doctest run would rebuild every crate with another std set.
started=$SECONDS
status=0
/usr/bin/cargo test --no-fail-fast -Zbuild-std=std,panic_abort --target "$target" "$@" || status=$?
"$wineserver" -k 2>/dev/null || true
echo "test-windows: cargo test under Wine finished with status $status in $((SECONDS - started))s" >&2
exit $status
