#!/usr/bin/env bash
# A lab of two workstations on this machine, each its own network host reached over SSH, provisioned
# through the Ansible playbook in scripts/ansible/ from a lab mirror on that network, the way a
# real lab works:
#
#   1. ansible-core is installed into a virtual environment (target/ansible-venv) through pip;
#      Debian's openssh-server through apt-get when /usr/sbin/sshd is missing (root only);
#   2. stackpin is built (cargo build: the debug binary `cargo test` already built, so CI pays nothing);
#   3. an "origin" server on 127.0.0.1 serves fake installers (small sh scripts written here);
#      `stackpin fetch` archives them into the mirror's archive, then the origin is stopped, so
#      every workstation can only get its files from the mirror;
#   4. the lab network: a bridge in this (the controller's) namespace with an address in a
#      private 10.213.N.0/24 no interface here uses yet, and per workstation a network namespace
#      joined to it by a veth pair, with its own address, its own hostname (UTS namespace and a
#      private /etc/hostname) and its own sshd (host key and authorized key generated here);
#   5. `python3 -m http.server` serves that archive folder as the lab mirror on the bridge's
#      address only, with a release data set packed by `stackpin data pack` beside the stacks;
#   6. two fake workstations (ws1, ws2), each with its own archive and fake-host folders: a fake
#      nvidia-smi first on PATH driven by a state file, a CUDA prefix, a fake torch on PYTHONPATH
#      (modelled on tests/cli/fakes.rs), and a "reboot" that flips the fake driver's state file
#      (stackpin_fake_reboot_cmd). Namespaces share the filesystem, so each workstation's sshd
#      runs in its own mount namespace in which the controller's folders (records, mirror, keys)
#      and the other workstations' folders are empty tmpfs, and ansible-playbook runs in one in
#      which every workstation's folder is: a record reaches the controller through Ansible's
#      fetch over SSH or not at all;
#   7. the playbook runs over SSH (key auth, known host keys checked): up → reboot → up again →
#      doctor → each host's records fetched to records/<host>/<stack>/;
#   8. each record is checked on the controller (written on that host: its hostname), the mirror's
#      log must show each workstation's own address, and `stackpin report --records` renders the
#      lab page (lab.html, lab.json) from what came back; the PLAY RECAP ends the output and must
#      say unreachable=0 failed=0 for every host.
#
# There is no local fallback: without root, `ip netns` or sshd the script fails and says why.
# Everything it made (namespaces, the bridge, sshd and the servers) is removed on exit, failed or
# not. STACKPIN_FLEET_BROKEN=1 adds a third host, ws3, whose CUDA installer fails: it must be the
# one failed host in the recap, failed with stackpin's own error text, and `failed` on the lab
# page, while ws1 and ws2 still pass.
# `--prepare-only` installs sshd and ansible-core and stops there (CI runs it beside the build).
# Environment: STACKPIN_FLEET_WORK=DIR puts the lab in DIR (default target/fleet-lab, laid anew each
# run and kept afterwards, so the records and the page can be read); STACKPIN_FLEET_VENV=DIR moves
# the venv. Needs root, iproute2, util-linux (unshare), python3 with venv, and pip's index the
# first time.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

VENV=${STACKPIN_FLEET_VENV:-$REPO/target/ansible-venv}
# ansible-core 2.19 is the last line that runs on Python 3.11; newer Pythons get the same line.
ANSIBLE_SPEC='ansible-core>=2.16,<2.20'
WORK=${STACKPIN_FLEET_WORK:-$REPO/target/fleet-lab}
STACK=fleet-torch-stack
DRIVER=595.71.05
DATA_DATE=2099-12-31
PIDS=()

STARTED=$(date +%s)
# Each step's header says when it began, in seconds since the start.
say() { printf '\n== [%3ss] %s\n' "$(($(date +%s) - STARTED))" "$*"; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}
# shellcheck source=scripts/fleet-net.sh
. "$REPO/scripts/fleet-net.sh"
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  lab_net_cleanup
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts `python3 -m http.server` on address $3 (default 127.0.0.1) with a free port serving $1.
serve() {
  local dir=$1 log=$2 bind=${3:-127.0.0.1} port=''
  python3 -u -m http.server 0 --bind "$bind" --directory "$dir" >"$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || die "python3 -m http.server for $dir did not start; see $log"
  SERVED_PORT=$port
  SERVED_PID=$!
}

say "root, ip netns and sshd (the workstations are reached over SSH)"
lab_net_require
echo "$($SSHD -V 2>&1 | head -n 1)"

say "ansible-core in $VENV"
if [ ! -x "$VENV/bin/ansible-playbook" ]; then
  python3 -m venv "$VENV" || die "python3 -m venv failed; install python3-venv"
  "$VENV/bin/pip" install --quiet "$ANSIBLE_SPEC" || die "pip could not install $ANSIBLE_SPEC"
fi
# Read whole: `| head -n 1` would close the pipe on ansible, which then dies of BrokenPipeError.
version=$("$VENV/bin/ansible-playbook" --version)
echo "${version%%$'\n'*}"
# `--prepare-only`: what comes over the network (sshd, ansible-core) and nothing else, so that CI
# can fetch it while it compiles.
if [ "${1:-}" = --prepare-only ]; then
  say "prepared (sshd and ansible-core); the lab itself was not started"
  exit 0
fi

say "cargo build"
cargo build --quiet
BIN=$REPO/target/debug/stackpin
[ -x "$BIN" ] || die "$BIN was not built"

say "the lab in $WORK"
# Only a folder this script made (it leaves a marker) is ever cleared.
if [ -n "$(ls -A "$WORK" 2>/dev/null)" ] && [ ! -f "$WORK/.stackpin-fleet-lab" ]; then
  die "$WORK is not empty and was not made by this script; pick another STACKPIN_FLEET_WORK"
fi
rm -rf "$WORK"
mkdir -p "$WORK" && touch "$WORK/.stackpin-fleet-lab"
mkdir -p "$WORK/origin" "$WORK/mirror" "$WORK/hosts" "$WORK/records"

# Fake installers, one file for every host (the mirror serves one copy, checked by one lock), so
# they find their host through STACKPIN_FAKE_HOST, which the inventory sets per host.
cat >"$WORK/origin/NVIDIA-Linux-x86_64-$DRIVER.run" <<EOF
#!/bin/sh
# Fake driver installer: the new driver is on disk, the running module stays the old one until
# the reboot (nvidia-smi: "Driver/library version mismatch").
echo driver >> "\$STACKPIN_FAKE_HOST/order.log"
printf 'mode=mismatch\\ndriver=$DRIVER\\ncuda=12.8\\n' > "\$STACKPIN_FAKE_HOST/nvidia/state"
EOF
cat >"$WORK/origin/cuda_12.4.1_550.54.15_linux.run" <<'EOF'
#!/bin/sh
# Fake CUDA runfile: writes the toolkit folder --toolkitpath names.
echo toolkit >> "$STACKPIN_FAKE_HOST/order.log"
[ -e "$STACKPIN_FAKE_HOST/fail-toolkit" ] && { echo 'Installation failed. See log at /var/log/cuda-installer.log for details.' >&2; exit 1; }
for a in "$@"; do case "$a" in --toolkitpath=*) dir="${a#--toolkitpath=}" ;; esac; done
[ -n "$dir" ] || { echo 'no --toolkitpath' >&2; exit 1; }
mkdir -p "$dir/bin"
printf '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}' > "$dir/version.json"
# Its nvcc: the toolkit's proof compiles a kernel (`nvcc -arch=sm_XY -c k.cu -o k.o`).
cat > "$dir/bin/nvcc" <<'NVCC'
#!/bin/sh
out=; prev=
for a in "$@"; do
  case "$a" in --version) echo 'Cuda compilation tools, release 12.4, V12.4.131'; exit 0;; esac
  [ "$prev" = -o ] && out="$a"; prev="$a"
done
[ -n "$out" ] && echo fake-object > "$out"
exit 0
NVCC
chmod +x "$dir/bin/nvcc"
EOF
cat >"$WORK/origin/install-torch.sh" <<'EOF'
#!/bin/sh
# Fake library installer: a `torch` package on the host's PYTHONPATH.
echo library >> "$STACKPIN_FAKE_HOST/order.log"
mkdir -p "$STACKPIN_FAKE_HOST/python/torch"
cat > "$STACKPIN_FAKE_HOST/python/torch/__init__.py" <<'PY'
import types
__version__ = '2.5.1+cu124'
version = types.SimpleNamespace(cuda='12.4')
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 90100))
cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
    get_arch_list=lambda: ['sm_80', 'sm_86', 'sm_89', 'sm_90'],
    get_device_capability=lambda i=0: (8, 9), get_device_name=lambda i=0: 'NVIDIA L4')
PY
EOF

# The manifest, rendered per host by the role: each host has its own toolkit root and example.
cat >"$WORK/lab-stack.yaml.j2" <<EOF
schema: 1
name: $STACK
os: linux
driver:
  version: "$DRIVER"
  installer:
    url: http://127.0.0.1:@ORIGIN@/NVIDIA-Linux-x86_64-$DRIVER.run
  run: ["sh", "{installer}", "--silent", "--dkms"]
toolkit:
  version: "12.4.1"
  installer:
    url: http://127.0.0.1:@ORIGIN@/cuda_12.4.1_550.54.15_linux.run
  root: "{{ fake_host }}/cuda/cuda-12.4"
  run: ["sh", "{installer}", "--silent", "--toolkit", "--toolkitpath={root}"]
library:
  name: torch
  version: "2.5.1"
  cuda: "12.4"
  python: python3
  installers:
    - url: http://127.0.0.1:@ORIGIN@/install-torch.sh
  run: ["sh", "{installer}"]
example:
  run: ["sh", "{{ fake_host }}/example.sh", "{batch}"]
  timeout: 60s
vram:
  line: 0.8
  batches: [16, 32, 64, 96, 128]
EOF

say "origin server and the mirror's fetch"
serve "$WORK/origin" "$WORK/origin.log"
ORIGIN_PID=$SERVED_PID
sed -i "s/@ORIGIN@/$SERVED_PORT/" "$WORK/lab-stack.yaml.j2"
sed "s#{{ fake_host }}#$WORK/hosts/mirror#" "$WORK/lab-stack.yaml.j2" >"$WORK/lab-stack.yaml"
STACKPIN_RETRY_BASE_MS=0 "$BIN" fetch "$WORK/lab-stack.yaml" --archive "$WORK/mirror" --quiet
"$BIN" audit --all --archive "$WORK/mirror" --quiet
# A release data set on the mirror (a copy of data/ read later): the role installs it on every
# host before `up`.
mkdir -p "$WORK/lab-data"
cp data/*.yaml "$WORK/lab-data/"
sed -i "s/^read_on: .*/read_on: \"$DATA_DATE\"/" "$WORK/lab-data/drivers.yaml"
DATA_SHA=$("$BIN" data pack "$WORK/lab-data" -o "$WORK/mirror/stackpin-data.json" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["sha256"])')
# From here on the origin is gone: the workstations get every file from the mirror or nowhere.
kill "$ORIGIN_PID"

say "the lab network"
lab_net_bridge
echo "bridge $LAB_BRIDGE: the controller at $LAB_NET.1/24"
# The mirror listens on the lab network only: a workstation's 127.0.0.1 is its own loopback.
serve "$WORK/mirror" "$WORK/mirror.log" "$LAB_NET.1"
MIRROR="http://$LAB_NET.1:$SERVED_PORT"
echo "lab mirror: $MIRROR serves $WORK/mirror"

# A fake workstation (see tests/cli/fakes.rs): $1 its name, $2 its example's peak in MiB.
# A workstation ready for NVIDIA's runfiles, as stackpin reads one under STACKPIN_HOST_ROOT:
# kernel headers, the kernel's own gcc, make and dkms, nouveau blacklisted, no X, room on disk.
# (The machine this runs on may be a container without any of it; a lab's workstation is not.)
ready_root() {
  local r=$1 kernel=6.8.0-50-generic
  mkdir -p "$r/proc/sys/kernel" "$r/etc/modprobe.d" "$r/lib/modules/$kernel/build" "$r/tmp" \
    "$r/usr/bin" "$r/usr/sbin"
  echo "$kernel" >"$r/proc/sys/kernel/osrelease"
  echo "Linux version $kernel (buildd@lab) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld 2.42) #50-Ubuntu SMP" >"$r/proc/version"
  echo "video 77824 0 - Live 0x0000000000000000" >"$r/proc/modules"
  printf 'blacklist nouveau\noptions nouveau modeset=0\n' >"$r/etc/modprobe.d/blacklist-nouveau.conf"
  : >"$r/lib/modules/$kernel/build/Makefile"
  printf '#!/bin/sh\necho "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0"\n' >"$r/usr/bin/gcc"
  printf '#!/bin/sh\nexit 0\n' >"$r/usr/bin/make"
  printf '#!/bin/sh\nexit 0\n' >"$r/usr/sbin/dkms"
  cat >"$r/usr/bin/df" <<'DF'
#!/bin/sh
echo "Filesystem     1024-blocks      Used Available Capacity Mounted on"
echo "/dev/fake        209715200         0 104857600       1% /"
DF
  chmod +x "$r/usr/bin/gcc" "$r/usr/bin/make" "$r/usr/sbin/dkms" "$r/usr/bin/df"
}

fake_host() {
  local h=$WORK/hosts/$1 peak=$2
  mkdir -p "$h/bin" "$h/nvidia" "$h/cuda" "$h/python" "$h/stackpin"
  ready_root "$h/root"
  printf 'mode=no-driver\ndriver=\ncuda=\n' >"$h/nvidia/state"
  echo "0, NVIDIA L4, GPU-00000000-fake-4c1e-8f3a-$1, @DRIVER@, 23034, 8.9" >"$h/nvidia/gpus.csv"
  echo "0" >"$h/nvidia/memory.csv"
  : >"$h/nvidia/apps.csv"
  cat >"$h/bin/nvidia-smi" <<EOF
#!/bin/sh
# Fake nvidia-smi: answers from $h/nvidia/state (mode=ok|no-driver|mismatch, driver=, cuda=).
d='$h/nvidia'
mode=ok; driver=; cuda=
. "\$d/state"
case "\$mode" in
  no-driver) echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."; exit 9 ;;
  mismatch) echo "Failed to initialize NVML: Driver/library version mismatch"; echo "NVML library version: \$driver"; exit 18 ;;
esac
loop=0; for a in "\$@"; do [ "\$a" = "-lms" ] && loop=1; done
emit() { while :; do cat "\$1" 2>/dev/null; [ "\$loop" = 1 ] || break; sleep 0.05; done; }
case "\$1" in
  --query-gpu=memory.used*) emit "\$d/memory.csv"; exit 0 ;;
  --query-gpu=*) sed "s/@DRIVER@/\$driver/" "\$d/gpus.csv"; exit 0 ;;
  --query-compute-apps=*) emit "\$d/apps.csv"; exit 0 ;;
esac
printf '| NVIDIA-SMI %s             Driver Version: %s     CUDA Version: %s     |\n' "\$driver" "\$driver" "\$cuda"
EOF
  chmod +x "$h/bin/nvidia-smi"
  # The example: its own process holds $peak MiB for a moment, then it reports STACKPIN_RESULT.
  cat >"$h/example.sh" <<EOF
#!/bin/sh
nv='$h/nvidia'
printf '%s\n' "\$\$, $peak" > "\$nv/apps.csv"; echo $peak > "\$nv/memory.csv"; sleep 0.6
echo 'STACKPIN_RESULT {"batch": '"\$1"', "peak_reserved_mib": $((peak - 260)), "context_mib": 260, "samples_per_s": 800}'
: > "\$nv/apps.csv"; echo 0 > "\$nv/memory.csv"
EOF
  # The "reboot": the new driver's module is the running one now.
  cat >"$h/reboot.sh" <<EOF
#!/bin/sh
sed -i 's/^mode=.*/mode=ok/' '$h/nvidia/state'
EOF
  chmod +x "$h/reboot.sh"
}
fake_host ws1 2560
fake_host ws2 3200
BROKEN=${STACKPIN_FLEET_BROKEN:-}
if [ -n "$BROKEN" ]; then
  fake_host ws3 2560
  touch "$WORK/hosts/ws3/fail-toolkit"
fi
HOSTS=(ws1 ws2)
[ -z "$BROKEN" ] || HOSTS+=(ws3)

say "the workstations: a network namespace and an sshd each"
lab_net_controller_key
declare -A ADDR
n=11
for host in "${HOSTS[@]}"; do
  ADDR[$host]=$LAB_NET.$n
  n=$((n + 1))
  lab_net_host "$host" "${ADDR[$host]}"
done
# Every host folder exists before the first sshd starts: each hides all the others.
for host in "${HOSTS[@]}"; do lab_net_sshd "$host" "${ADDR[$host]}"; done
for host in "${HOSTS[@]}"; do
  # Over SSH with the key and the known host key: the name it answers is its own, and it cannot
  # see the controller's records folder.
  seen=$(lab_net_ssh "$host" "${ADDR[$host]}" 'cat /etc/hostname; ls -A '"'$WORK/records'"' | wc -l') ||
    die "ssh root@${ADDR[$host]} ($host) failed; see $WORK/hosts/$host/ssh/sshd.log"
  [ "$seen" = "$host"$'\n'0 ] || die "$host over SSH answered '$seen', expected its name and an empty records folder"
  echo "$host: sshd on ${ADDR[$host]}:22 in namespace stackpin-fleet-$LAB_ID-$host, answers as $host"
done
# The binary the role copies to each workstation, without its symbol table (47 → 33 MB over SSH).
SHIPPED=$WORK/stackpin
strip -o "$SHIPPED" "$BIN" 2>/dev/null || cp "$BIN" "$SHIPPED"
# The workstations' python: the system's, as on a real host, not the controller's venv.
HOST_PYTHON=/usr/bin/python3
[ -x "$HOST_PYTHON" ] || HOST_PYTHON=$(command -v python3)

inventory_host() {
  local h=$WORK/hosts/$1
  cat <<EOF
        $1:
          ansible_host: ${ADDR[$1]}
          ansible_remote_tmp: $h/ansible-tmp
          fake_host: $h
          stackpin_dir: $h/stackpin
          stackpin_fake_reboot_cmd: $h/reboot.sh
          stackpin_environment:
            PATH: "$h/bin:$PATH"
            PYTHONPATH: $h/python
            PYTHONDONTWRITEBYTECODE: "1"
            STACKPIN_CUDA_PREFIX: $h/cuda
            STACKPIN_FAKE_HOST: $h
            STACKPIN_HOST_ROOT: $h/root
            STACKPIN_LOCK_DIR: $h/lock
            STACKPIN_SKIP_ADMIN_CHECK: "1"
EOF
}
{
  cat <<EOF
all:
  children:
    workstations:
      vars:
        ansible_connection: ssh
        ansible_user: root
        ansible_ssh_private_key_file: $WORK/ssh/controller_ed25519
        ansible_ssh_common_args: >-
          -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes
          -o UserKnownHostsFile=$WORK/ssh/known_hosts -o GlobalKnownHostsFile=/dev/null
        ansible_python_interpreter: $HOST_PYTHON
        stackpin_become: false
        stackpin_binaries: {linux: $SHIPPED}
        stackpin_manifest: $WORK/lab-stack.yaml.j2
        stackpin_manifest_is_template: true
        stackpin_mirror: $MIRROR
        stackpin_data_sha256: $DATA_SHA
        stackpin_lock: $WORK/mirror/$STACK/stack.lock
        stackpin_records_dir: $WORK/records
      hosts:
EOF
  for host in "${HOSTS[@]}"; do inventory_host "$host"; done
} >"$WORK/inventory.yml"

say "ansible-playbook site.yml over SSH"
mkdir -p "$WORK/ansible/tmp"
# The controller runs in a mount namespace of its own in which the workstations' folders are an
# empty tmpfs: what reaches records/ came through Ansible's fetch over SSH.
set +e
# Ansible's default ssh_args less -C: compressing a 47 MB debug binary costs more CPU than the
# lab network saves.
ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_PIPELINING=True \
  ANSIBLE_SSH_ARGS='-o ControlMaster=auto -o ControlPersist=60s' \
  ANSIBLE_HOME="$WORK/ansible" ANSIBLE_LOCAL_TEMP="$WORK/ansible/tmp" \
  ANSIBLE_SSH_CONTROL_PATH_DIR="$WORK/ansible/cp" ANSIBLE_INVENTORY_UNPARSED_WARNING=False \
  unshare --mount --propagation private sh -ec \
  'mount -t tmpfs -o size=1m,mode=0700 fleet-hidden "$1"; shift; exec "$@"' sh "$WORK/hosts" \
  "$VENV/bin/ansible-playbook" -i "$WORK/inventory.yml" scripts/ansible/site.yml |
  tee "$WORK/playbook.log"
PLAY_RC=${PIPESTATUS[0]}
set -e

say "checks"
RECAP=$(sed -n '/^PLAY RECAP/,$p' "$WORK/playbook.log")
[ -n "$RECAP" ] || die "no PLAY RECAP in $WORK/playbook.log"
problems=0
for host in ws1 ws2; do
  line=$(printf '%s\n' "$RECAP" | grep -E "^$host[[:space:]]" || true)
  if ! printf '%s' "$line" | grep -q 'unreachable=0' || ! printf '%s' "$line" | grep -q 'failed=0'; then
    echo "FAIL $host: ${line:-not in the PLAY RECAP}"
    problems=$((problems + 1))
    continue
  fi
  record=$WORK/records/$host/$STACK/proven-stack.yaml
  if [ ! -s "$record" ]; then
    echo "FAIL $host: no record at $record"
    problems=$((problems + 1))
    continue
  fi
  if ! grep -q "^stack: $STACK\$" "$record" || ! grep -q "driver: $DRIVER\$\|driver: '$DRIVER'\$\|driver: \"$DRIVER\"\$" "$record"; then
    echo "FAIL $host: $record is not a record of $STACK with driver $DRIVER"
    problems=$((problems + 1))
    continue
  fi
  grep -q "^  hostname: $host\$" "$record" || {
    echo "FAIL $host: $record was not proven on $host (its hostname: $(sed -n 's/^  hostname: //p' "$record"))"
    problems=$((problems + 1))
    continue
  }
  served=$(grep -c "^${ADDR[$host]} .*\"GET /$STACK/" "$WORK/mirror.log" || true)
  [ "$served" -ge 3 ] || {
    echo "FAIL $host: the mirror served ${ADDR[$host]} $served installers, expected 3 over the lab network"
    problems=$((problems + 1))
    continue
  }
  order=$(tr '\n' ' ' <"$WORK/hosts/$host/order.log")
  [ "$order" = "driver toolkit library " ] || {
    echo "FAIL $host: installers ran as '$order', expected driver → toolkit → library once each"
    problems=$((problems + 1))
    continue
  }
  data=$(lab_net_ssh "$host" "${ADDR[$host]}" "STACKPIN_DATA_DIR='$WORK/hosts/$host/stackpin/data'" \
    "'$WORK/hosts/$host/stackpin/bin/stackpin'" data show --json)
  printf '%s' "$data" | grep -q "\"read_on\": \"$DATA_DATE\"" || {
    echo "FAIL $host: the mirror's release data set ($DATA_DATE) is not installed: $data"
    problems=$((problems + 1))
    continue
  }
  echo "ok   $host: over SSH at ${ADDR[$host]}; $served installers from the mirror; record $record; release data of $DATA_DATE"
done
# Every request the mirror saw came from a workstation's address on the lab network.
strangers=$(grep '"GET \|"HEAD ' "$WORK/mirror.log" | cut -d ' ' -f 1 | sort -u |
  grep -v -x -F "$(printf '%s\n' "${ADDR[@]}")" || true)
[ -z "$strangers" ] || {
  echo "FAIL the mirror was asked by $(echo "$strangers" | tr '\n' ' ')— not a workstation of the lab network"
  problems=$((problems + 1))
}
if [ -n "$BROKEN" ]; then
  line=$(printf '%s\n' "$RECAP" | grep -E "^ws3[[:space:]]" || true)
  if printf '%s' "$line" | grep -q 'failed=1' &&
    grep -q 'stackpin up failed on ws3 (exit 3)' "$WORK/playbook.log" &&
    grep -q 'the toolkit layer failed' "$WORK/playbook.log" &&
    grep -q 'Installation failed' "$WORK/playbook.log"; then
    echo "ok   ws3: failed with stackpin's error (the toolkit layer failed, installer's last lines)"
    # ansible-playbook exits 2 when a host failed; that failure was the one asked for.
    [ "$PLAY_RC" -ne 2 ] || PLAY_RC=0
  else
    echo "FAIL ws3: expected failed=1 with stackpin's toolkit error; recap: ${line:-none}"
    problems=$((problems + 1))
  fi
fi
[ "$PLAY_RC" -eq 0 ] || {
  echo "FAIL ansible-playbook exited $PLAY_RC"
  problems=$((problems + 1))
}

say "the lab page from the records that came back"
(cd "$WORK/records" && find . -type f | sort)
report_rc=0
"$BIN" report --records "$WORK/records" -o "$WORK/lab.html" --json >"$WORK/lab.json" || report_rc=$?
if [ "$report_rc" -ne 0 ]; then
  echo "FAIL stackpin report --records $WORK/records exited $report_rc"
  problems=$((problems + 1))
else
  # Each host's cell: ws1 and ws2 proven, ws3 (when broken) failed and first in the matrix.
  want="ws1=proven ws2=proven"
  [ -z "$BROKEN" ] || want="ws3=failed $want"
  cells=$(python3 -c '
import json, sys
lab = json.load(open(sys.argv[1]))
print(" ".join(f"{row['"'host'"']}={cell['"'state'"']}" for row in lab["matrix"]
               for cell in row["cells"] if cell["stack"] == sys.argv[2]))' "$WORK/lab.json" "$STACK")
  if [ "$cells" = "$want" ]; then
    echo "ok   lab page $WORK/lab.html ($(wc -c <"$WORK/lab.html") bytes): $cells"
  else
    echo "FAIL the lab page's matrix says '$cells', expected '$want' (see $WORK/lab.json)"
    problems=$((problems + 1))
  fi
fi

if [ "$problems" -ne 0 ]; then
  echo "$problems check(s) failed; the lab stays in $WORK for a look" >&2
  printf '\n%s\n' "$RECAP"
  exit 1
fi
printf '\n%s\n' "$RECAP"
echo "fleet over SSH: ${#HOSTS[@]} workstations in network namespaces, lab page from their records, in $(($(date +%s) - STARTED)) s"
