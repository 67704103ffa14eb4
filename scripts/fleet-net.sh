# The fleet test's lab network (sourced by scripts/test-fleet.sh, which sets WORK and die):
# a bridge in this namespace (the controller's) with an address in a private 10.213.N.0/24 that no
# interface or route here uses, and per workstation a network namespace joined to it by a veth
# pair, with its own address, hostname and sshd. Everything is named after this shell's PID, so
# two runs side by side do not meet, and lab_net_cleanup removes exactly what was made.
#
# Namespaces share the filesystem. Each sshd therefore runs in a mount namespace of its own in
# which the controller's folders (records, mirror, origin, ssh keys) and the other workstations'
# folders are empty tmpfs mounts: a workstation can reach only its own folder, and only over the
# network can anything reach it.

LAB_ID=$$
LAB_NS=()        # network namespaces made here
LAB_SSHD=()      # sshd PIDs started here
LAB_BRIDGE=''
LAB_NET=''       # the /24's first three octets, e.g. 10.213.7
SSHD=/usr/sbin/sshd

# Fails unless this machine can host the lab: root, ip, unshare, ssh, sshd (Debian's
# openssh-server is installed with apt-get when missing; it starts no service where none runs).
lab_net_require() {
  local why='there is no local fallback: without SSH this would not be the fleet test'
  [ "$(id -u)" = 0 ] || die "the fleet test makes network namespaces and runs sshd: run it as root ($why)"
  command -v ip >/dev/null || die "ip not found: apt-get install iproute2 ($why)"
  command -v unshare >/dev/null || die "unshare not found: apt-get install util-linux ($why)"
  if [ ! -x "$SSHD" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    command -v apt-get >/dev/null || die "$SSHD not found and no apt-get: install openssh-server ($why)"
    echo "openssh-server is missing: installing Debian's with apt-get (its sshd runs only inside the test's namespaces)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server \
      openssh-client >/dev/null 2>&1 ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends openssh-server openssh-client >/dev/null; } ||
      die "apt-get could not install openssh-server ($why)"
  fi
  # sshd's privilege separation folder, which the package's service would make at start.
  mkdir -p /run/sshd
}

# Picks a 10.213.N.0/24 no address or route of this namespace touches (from the PID on, so two
# runs side by side pick different ones) and makes the bridge with N.1 on it.
lab_net_bridge() {
  local i n
  for i in $(seq 0 253); do
    n=$(((LAB_ID + i) % 254 + 1))
    if ! ip -4 addr show | grep -q "inet 10\.213\.$n\." && ! ip -4 route show | grep -q "^10\.213\.$n\."; then
      LAB_NET=10.213.$n
      break
    fi
  done
  [ -n "$LAB_NET" ] || die "every 10.213.N.0/24 is in use here; the lab needs one of its own"
  LAB_BRIDGE=spfleet$LAB_ID
  ip link add "$LAB_BRIDGE" type bridge ||
    die "ip link add $LAB_BRIDGE type bridge failed: this machine does not allow the lab network (CAP_NET_ADMIN); there is no local fallback"
  ip addr add "$LAB_NET.1/24" dev "$LAB_BRIDGE"
  ip link set "$LAB_BRIDGE" up
}

# Makes host $1's network namespace at address $2 on the bridge.
lab_net_host() {
  local ns=stackpin-fleet-$LAB_ID-$1 veth=spf$LAB_ID-$1
  ip netns add "$ns" ||
    die "ip netns add $ns failed: this machine does not allow network namespaces; there is no local fallback"
  LAB_NS+=("$ns")
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$LAB_BRIDGE" up
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

# The controller's key pair and an empty known_hosts, under $WORK/ssh.
lab_net_controller_key() {
  mkdir -p "$WORK/ssh"
  chmod 700 "$WORK/ssh"
  ssh-keygen -q -t ed25519 -N '' -C 'stackpin fleet controller' -f "$WORK/ssh/controller_ed25519"
  : >"$WORK/ssh/known_hosts"
}

# Starts host $1's sshd on address $2 inside its namespace, with a host key made now (recorded in
# the controller's known_hosts), the controller's key authorized, and hostname $1 (its UTS name
# and, bind-mounted, its /etc/hostname). Every other folder of $WORK/hosts, and the controller's,
# is hidden from it. Waits until it listens.
lab_net_sshd() {
  local name=$1 addr=$2 h=$WORK/hosts/$1 ns=stackpin-fleet-$LAB_ID-$1 other
  local hide=("$WORK/records" "$WORK/mirror" "$WORK/origin" "$WORK/ssh")
  for other in "$WORK"/hosts/*; do [ "$other" = "$h" ] || hide+=("$other"); done
  mkdir -p "$h/ssh" "$h/etc"
  ssh-keygen -q -t ed25519 -N '' -C "$name host key" -f "$h/ssh/host_ed25519_key"
  cp "$WORK/ssh/controller_ed25519.pub" "$h/ssh/authorized_keys"
  echo "$name" >"$h/etc/hostname"
  cat >"$h/ssh/sshd_config" <<EOF
ListenAddress $addr:22
HostKey $h/ssh/host_ed25519_key
AuthorizedKeysFile $h/ssh/authorized_keys
PidFile none
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
  "$SSHD" -t -f "$h/ssh/sshd_config" || die "sshd refuses $h/ssh/sshd_config"
  echo "$addr $(cut -d ' ' -f 1-2 "$h/ssh/host_ed25519_key.pub")" >>"$WORK/ssh/known_hosts"
  # `ip netns exec` gives the command its own mount namespace (mounts there stay there).
  ip netns exec "$ns" unshare --uts sh -ec '
    hostname "$1"; mount --bind "$2" /etc/hostname; sshd=$3; config=$4; shift 4
    for d in "$@"; do mount -t tmpfs -o size=1m,mode=0700 fleet-hidden "$d"; done
    exec "$sshd" -D -e -f "$config"' sh "$name" "$h/etc/hostname" "$SSHD" "$h/ssh/sshd_config" \
    "${hide[@]}" 2>"$h/ssh/sshd.log" &
  LAB_SSHD+=($!)
  for _ in $(seq 1 100); do
    ip netns exec "$ns" ss -Hltn "src $addr:22" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  die "sshd of $name did not listen on $addr:22; see $h/ssh/sshd.log"
}

# ssh to host $1 at $2 with the controller's key and known_hosts only; the rest are the command.
lab_net_ssh() {
  local addr=$2
  shift 2
  ssh -i "$WORK/ssh/controller_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$WORK/ssh/known_hosts" \
    -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "root@$addr" "$@"
}

# Stops every sshd and every process left in the namespaces made here (all started by this run),
# deletes the namespaces (their veth pairs go with them) and the bridge.
lab_net_cleanup() {
  local pid ns
  for pid in "${LAB_SSHD[@]}"; do kill "$pid" 2>/dev/null || true; done
  for ns in "${LAB_NS[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  done
  for pid in "${LAB_SSHD[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${LAB_NS[@]}"; do
    ip netns delete "$ns" 2>/dev/null || echo "warning: could not delete network namespace $ns" >&2
  done
  if [ -n "$LAB_BRIDGE" ]; then
    ip link delete "$LAB_BRIDGE" 2>/dev/null || echo "warning: could not delete bridge $LAB_BRIDGE" >&2
  fi
}
