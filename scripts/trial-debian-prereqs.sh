#!/usr/bin/env bash
# The driver's build prerequisites for real (issue 34): a throwaway Debian 12 root made with
# debootstrap, a stack whose driver.prerequisites are Debian's own packages (the kernel headers,
# gcc, make, dkms), fetched with apt into the archive, audited, then installed into that root
# with the network cut (`unshare -n`), and shown installed with the root's own dpkg-query.
#
# Run by hand as root on a Debian 12 machine (debootstrap and dpkg --root need root); not part
# of `cargo test`. The mirror is read from this machine's apt sources at run time.
# Figures go to stdout (packages, MB, seconds); README and docs/archive-and-trust.md record them.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work="$repo/target/trial-debian-prereqs"
root="$work/root"
archive="$work/archive"
www="$work/www"
bin="$repo/target/debug/stackpin"

[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap and dpkg --root need it)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
(cd "$repo" && CARGO_PROFILE_DEV_DEBUG=0 cargo build -q)

# The mirror of this machine's own bookworm source: deb822 (.sources) or one-line (.list).
mirror=$(
  { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/{u=$2} /^Suites:.*bookworm( |$)/{print u; exit}'; } ||
  true
)
[ -n "$mirror" ] || mirror=$(grep -hE '^deb +(\[[^]]*\] +)?[a-z]+://[^ ]+ +bookworm +' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
  sed -E 's/^deb +(\[[^]]*\] +)?//' | awk '{print $1; exit}')
[ -n "$mirror" ] || { echo "no bookworm source in /etc/apt/sources.list(.d)" >&2; exit 2; }
echo "mirror (from this machine's apt sources): $mirror"

# (a) the throwaway root: debootstrap once into base/ (kept between runs: it takes minutes),
# then a fresh copy for each run.
base="$repo/target/trial-debian-base"
if [ ! -e "$base/.complete" ]; then
  rm -rf "$base"
  t0=$(date +%s)
  debootstrap --variant=minbase bookworm "$base" "$mirror" >"$repo/target/trial-debootstrap.log" 2>&1
  touch "$base/.complete"
  echo "debootstrap minbase bookworm: $(( $(date +%s) - t0 ))s, $(du -sm "$base" | cut -f1) MB"
fi
rm -rf "$work"
mkdir -p "$work" "$www"
cp -a "$base" "$root"

# A stack whose layers are tiny local files: the trial is about the prerequisites. The driver's
# "runfile" writes where the chain stands, so the order is visible.
cat >"$www/driver.run" <<'EOF'
#!/bin/sh
echo "driver step ran; gcc in the root: $(ls "$STACKPIN_HOST_ROOT"/usr/bin/gcc 2>/dev/null || echo none)" >>"$STACKPIN_HOST_ROOT/stackpin-trial-order.log"
exit 0
EOF
printf '#!/bin/sh\nexit 0\n' >"$www/cuda.run"
printf '#!/bin/sh\nexit 0\n' >"$www/lib.sh"
port=$((20000 + RANDOM % 20000))
python3 -m http.server -b 127.0.0.1 -d "$www" "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 1
url="http://127.0.0.1:$port"
cat >"$work/stack.yaml" <<EOF
schema: 1
name: debian-prereqs-trial
os: linux
driver:
  version: "595.71.05"
  installer:
    url: $url/driver.run
  run: ["sh", "{installer}", "--silent", "--dkms"]
  prerequisites:
    distribution: debian-12
    packages: [linux-headers-amd64, gcc, make, dkms]
toolkit:
  version: "12.4.1"
  installer:
    url: $url/cuda.run
  root: $work/cuda-12.4
  run: ["sh", "{installer}", "--silent", "--toolkit", "--toolkitpath={root}"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  installers:
    - url: $url/lib.sh
  run: ["sh", "{installer}"]
example:
  run: ["{python}", "{examples}/classify.py", "--batch-size", "{batch}"]
EOF

export STACKPIN_ARCHIVE="$archive"
# (b) fetch: apt resolves the closure against an empty package state and downloads it.
t0=$(date +%s)
"$bin" fetch "$work/stack.yaml"
fetch_s=$(( $(date +%s) - t0 ))
debs=$(ls "$archive/debian-prereqs-trial/driver/"*.deb | wc -l)
mb=$(stat -c %s "$archive/debian-prereqs-trial/driver/"*.deb | awk '{s += $1} END {printf "%.1f", s / 1e6}')
echo "fetch: $debs packages, $mb MB, ${fetch_s}s"

# (c) audit: every .deb re-hashed against the lock.
"$bin" audit "$work/stack.yaml"

# (d) install into the throwaway root with no network at all.
export STACKPIN_HOST_ROOT="$root" STACKPIN_SKIP_ADMIN_CHECK=1
"$bin" plan "$work/stack.yaml" || true
t0=$(date +%s)
set +e
unshare -n -- "$bin" install --yes "$work/stack.yaml"
code=$?
set -e
install_s=$(( $(date +%s) - t0 ))
echo "install (offline, unshare -n): exit $code, ${install_s}s"
cat "$root/stackpin-trial-order.log"

# (e) installed, as the root's own dpkg sees it.
chroot "$root" dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' gcc make dkms 'linux-headers-*' | grep -v '^linux-headers-amd64 *$'
chroot "$root" gcc --version | head -1
chroot "$root" make --version | head -1
echo "FIGURES: $debs packages, $mb MB; fetch ${fetch_s}s; offline install ${install_s}s"
