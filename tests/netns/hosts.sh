#!/usr/bin/env bash
# Test hosts: several simulated hosts on this machine as network namespaces,
# for multi-host tests (docs/testing.md, "Test hosts (network namespaces)").
#
#   P-h1 .. P-hN   the hosts: eth0 10.201.0.I/24 (net 1), eth1 10.202.0.I/24
#                  (net 2, with --nets 2), lo up, no default route
#   P-net1, P-net2 one namespace per network, holding the bridge br0 that the
#                  hosts' veth peers (h1 .. hN) are ports of
#
# With --delay D the hosts are two sites: the first ceil(N/2) on br0, the
# rest on a second bridge br1 of each net, joined by a delay line
# (delayline.c) that runs in P-netK: its TAP devices dla (in br0) and dlb
# (in br1) pass every frame D ms late, both ways.
#
# Nothing is created in, or attached to, the machine's own namespace. Needs
# root and a working `ip netns`; exits 77 (skipped, for ctest) without them.
set -euo pipefail

readonly SKIP=77
readonly MAX_HOSTS=64
readonly DELAY_MAX_MS=10000
me=$(basename "$0")

usage() {
  cat <<EOF
usage: $me up N [--nets 1|2] [--prefix P] [--rate RATE]
             [--delay MS [--delayline PATH]]
       $me down [--prefix P]
       $me exec HOST [--prefix P] -- CMD [ARG...]
       $me addr HOST [NET] [--prefix P]
       $me list [--prefix P]

Simulated hosts as network namespaces P-h1 .. P-hN (N from 1 to $MAX_HOSTS), each
with eth0 10.201.0.I/24 on net 1 and, with --nets 2, eth1 10.202.0.I/24 on
net 2. Each net is a bridge br0 in its own namespace P-net1 / P-net2. There
is no default route: nothing leaves the test networks. Inside a host the
names hJ (net 1) and hJ-net2 (net 2) resolve (/etc/netns/P-hI/hosts).

  up      tears down what is left with prefix P, then creates the hosts
  down    kills every process in P's namespaces, deletes them and
          /etc/netns/P-*; never fails when nothing is there
  exec    runs CMD in host HOST (h3 or 3), via ip netns exec
  addr    prints HOST's address on net 1 (or on NET=2)
  list    prints the hosts that exist, one a line

  --prefix P   namespace prefix (letters, digits, _; default
               \$ROCL_NETNS_PREFIX, else rocl)
  --nets 1|2   one network (default) or two
  --rate RATE  a tbf qdisc at RATE (e.g. 1gbit, 100mbit, 500kbit) on each
               host's eth devices (what it sends) and on its bridge ports
               (what it receives). Bandwidth only: this kernel has no
               netem qdisc, so no loss; for delay see --delay.
  --delay MS   two sites, the first ceil(N/2) hosts and the rest, on a
               bridge of their own in each net (br0, br1), joined by a delay
               line in P-netK that passes every frame MS milliseconds late
               each way (0 < MS <= $DELAY_MAX_MS, fractions allowed): within a
               site direct, across a round trip takes 2*MS more. The same
               addresses and subnet, broadcasts included.
  --delayline PATH
               the delay line program (default \$ROCL_DELAYLINE): a build's
               tests/netns/delayline, target netns_delayline

Needs root and ip netns; exits $SKIP when either is missing.
EOF
}

die() {
  echo "$me: $*" >&2
  exit 1
}

bad_usage() {
  echo "$me: $* (see $me --help)" >&2
  exit 2
}

skip() {
  echo "$me: skipped: $*" >&2
  exit "$SKIP"
}

# Root and a working `ip netns`, else exit 77.
check_environment() {
  [ "$(id -u)" -eq 0 ] || skip "network namespaces need root (running as uid $(id -u))"
  command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is not installed"
  ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
}

check_prefix() {
  [[ $prefix =~ ^[A-Za-z0-9_]{1,32}$ ]] ||
    bad_usage "bad prefix '$prefix': 1 to 32 letters, digits or _ (no '-')"
}

# Namespaces that belong to prefix $1: $1-hI and $1-netK.
owned_namespaces() {
  local name
  ip netns list 2>/dev/null | while read -r name _; do
    if [[ $name =~ ^$1-(h|net)[0-9]+$ ]]; then echo "$name"; fi
  done
}

# Kills every process in $1's namespaces, deletes them and /etc/netns/$1-*.
teardown() {
  local p=$1 ns round dir
  local -a spaces pids
  mapfile -t spaces < <(owned_namespaces "$p")
  # Processes may fork while being killed: rounds until none is left.
  for round in $(seq 1 20); do
    pids=()
    for ns in "${spaces[@]}"; do
      mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$ns" 2>/dev/null)
    done
    if [ "${#pids[@]}" -eq 0 ]; then break; fi
    if [ "$round" -eq 20 ]; then
      echo "$me: warning: processes left in $p's namespaces: ${pids[*]}" >&2
      break
    fi
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.1
  done
  for ns in "${spaces[@]}"; do
    ip netns delete "$ns" 2>/dev/null || true
  done
  for dir in /etc/netns/"$p"-h* /etc/netns/"$p"-net*; do
    if [ -e "$dir" ] && [[ $(basename "$dir") =~ ^$p-(h|net)[0-9]+$ ]]; then
      rm -rf -- "$dir"
    fi
  done
  rm -f -- "$(log_dir)/$p"-net[0-9]*.delayline.log
  rmdir -- "$(log_dir)" 2>/dev/null || true
}

# Where the delay lines' output goes: /run/rocl-netns (or /tmp/rocl-netns
# without /run), one P-netK.delayline.log per delay line.
log_dir() {
  if [ -d /run ] && [ -w /run ]; then echo /run/rocl-netns; else echo /tmp/rocl-netns; fi
}

# Starts the delay line of net $1 in P-net$1 and waits (5 s at most) for it
# to say it is ready, then puts its TAP devices in the sites' bridges.
start_delay_line() {
  local net=$prefix-net$1 log pid tries rc
  log=$(log_dir)/$net.delayline.log
  mkdir -p "$(log_dir)"
  : >"$log"
  # Its own output only, so that no caller waits for the pipes it holds.
  ip netns exec "$net" "$delayline" --a dla --b dlb --delay-ms "$delay" </dev/null >"$log" 2>&1 &
  pid=$!
  for ((tries = 0; tries < 50; tries++)); do
    if grep -q '^delayline: ready$' "$log"; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0
      wait "$pid" || rc=$?
      die "the delay line of $net ($delayline) ended, status $rc: $(tr '\n' ' ' <"$log")"
    fi
    sleep 0.1
  done
  disown "$pid" # down kills it; no "Killed" from this shell
  grep -q '^delayline: ready$' "$log" ||
    die "the delay line of $net ($delayline) did not say 'delayline: ready' within 5 s: $(tr '\n' ' ' <"$log")"
  ip -n "$net" link set dla master br0
  ip -n "$net" link set dlb master br1
  ip -n "$net" link set dla up
  ip -n "$net" link set dlb up
}

# Runs a step of `up` whose failure means the kernel or the container lacks
# something (namespaces, veth, bridge): exits 77 (`up` then undoes itself).
need() {
  local err
  err=$("$@" 2>&1) || skip "'$*' failed: $err"
}

# RATE (e.g. 1gbit) in bits per second, or empty when it is no such rate.
rate_bits() {
  local n unit
  [[ $1 =~ ^([0-9]{1,6})(bit|kbit|mbit|gbit|tbit)$ ]] || return 0
  n=$((10#${BASH_REMATCH[1]}))
  unit=${BASH_REMATCH[2]}
  case $unit in
  bit) echo "$n" ;;
  kbit) echo $((n * 1000)) ;;
  mbit) echo $((n * 1000000)) ;;
  gbit) echo $((n * 1000000000)) ;;
  tbit) echo $((n * 1000000000000)) ;;
  esac
}

# tbf at $rate on device $2 of namespace $1. The bucket holds 4 ms of
# traffic, at least 16 KiB (tbf cuts larger GSO packets into segments that
# fit); the queue holds up to 50 ms.
add_rate_limit() {
  local bytes_per_s=$((rate_bps / 8)) burst
  burst=$((bytes_per_s / 250))
  if [ "$burst" -lt 16384 ]; then burst=16384; fi
  tc -n "$1" qdisc replace dev "$2" root tbf rate "$rate" burst "$burst" latency 50ms ||
    die "cannot put a tbf qdisc ($rate) on $2 in $1"
}

# Waits until every device of the hosts is up with a carrier (veth: both
# ends up), up to 5 s.
wait_links() {
  local i k tries dev
  for ((tries = 0; tries < 50; tries++)); do
    local all=1
    for ((i = 1; i <= count; i++)); do
      for ((k = 1; k <= nets; k++)); do
        dev=eth$((k - 1))
        ip -n "$prefix-h$i" link show dev "$dev" 2>/dev/null | grep LOWER_UP >/dev/null || all=0
      done
    done
    if [ "$all" -eq 1 ]; then return 0; fi
    sleep 0.1
  done
  die "the hosts' links did not come up within 5 s"
}

cmd_up() {
  [ "${#args[@]}" -eq 1 ] || bad_usage "up takes one N, the number of hosts"
  count=${args[0]}
  if ! [[ $count =~ ^[0-9]{1,3}$ ]] || ((10#$count < 1 || 10#$count > MAX_HOSTS)); then
    bad_usage "N must be a number from 1 to $MAX_HOSTS, not '$count'"
  fi
  count=$((10#$count))
  [[ $nets == 1 || $nets == 2 ]] || bad_usage "--nets must be 1 or 2, not '$nets'"
  rate_bps=""
  if [ -n "$rate" ]; then
    rate_bps=$(rate_bits "$rate")
    if [ -z "$rate_bps" ] || [ "$rate_bps" -le 0 ]; then
      bad_usage "--rate must be a number with bit, kbit, mbit, gbit or tbit (e.g. 1gbit), not '$rate'"
    fi
  fi
  if [ -n "$delay" ]; then
    if ! [[ $delay =~ ^[0-9]{1,5}(\.[0-9]{1,6})?$ ]] ||
      ! awk -v d="$delay" -v max="$DELAY_MAX_MS" 'BEGIN { exit !(d > 0 && d <= max) }'; then
      bad_usage "--delay must be a number of milliseconds above 0 and up to $DELAY_MAX_MS (e.g. 20 or 2.5), not '$delay'"
    fi
    delayline=${delayline:-${ROCL_DELAYLINE:-}}
    [ -n "$delayline" ] ||
      die "--delay needs the delay line program: build the target netns_delayline (ninja -C BUILD netns_delayline) and give BUILD/tests/netns/delayline with --delayline PATH or ROCL_DELAYLINE"
    if [ ! -x "$delayline" ] || [ -d "$delayline" ]; then
      die "no delay line program at '$delayline': build the target netns_delayline (ninja -C BUILD netns_delayline), it is BUILD/tests/netns/delayline"
    fi
  elif [ -n "$delayline" ]; then
    bad_usage "--delayline goes with --delay"
  fi
  check_environment

  teardown "$prefix"
  # Failed or interrupted half-way: nothing is left behind.
  up_done=0
  trap 'if [ "$up_done" -eq 0 ]; then teardown "$prefix"; fi' EXIT
  trap 'exit 1' INT TERM HUP

  # With a delay, hosts up to site_a are site A (br0), the others site B (br1).
  local i k net host dev file bridge site_a=$(((count + 1) / 2))
  for ((k = 1; k <= nets; k++)); do
    net=$prefix-net$k
    need ip netns add "$net"
    ip -n "$net" link set lo up
    need ip -n "$net" link add br0 type bridge
    ip -n "$net" link set br0 up
    if [ -n "$delay" ]; then
      need ip -n "$net" link add br1 type bridge
      ip -n "$net" link set br1 up
    fi
  done
  for ((i = 1; i <= count; i++)); do
    host=$prefix-h$i
    bridge=br0
    if [ -n "$delay" ] && [ "$i" -gt "$site_a" ]; then bridge=br1; fi
    need ip netns add "$host"
    ip -n "$host" link set lo up
    for ((k = 1; k <= nets; k++)); do
      net=$prefix-net$k
      dev=eth$((k - 1))
      # Both ends made inside their namespaces: no name in the root one.
      need ip link add "$dev" netns "$host" type veth peer name "h$i" netns "$net"
      ip -n "$net" link set "h$i" master "$bridge"
      ip -n "$net" link set "h$i" up
      ip -n "$host" addr add "10.20$k.0.$i/24" brd + dev "$dev"
      ip -n "$host" link set "$dev" up
      if [ -n "$rate" ]; then
        add_rate_limit "$host" "$dev"
        add_rate_limit "$net" "h$i"
      fi
    done
  done

  # Names: hJ on net 1, hJ-net2 on net 2; ip netns exec bind-mounts
  # /etc/netns/NS/hosts over /etc/hosts.
  for ((i = 1; i <= count; i++)); do
    mkdir -p "/etc/netns/$prefix-h$i"
    file=/etc/netns/$prefix-h$i/hosts
    {
      echo "127.0.0.1 localhost"
      for ((k = 1; k <= count; k++)); do echo "10.201.0.$k h$k"; done
      if [ "$nets" -eq 2 ]; then
        for ((k = 1; k <= count; k++)); do echo "10.202.0.$k h$k-net2"; done
      fi
    } >"$file"
  done

  if [ -n "$delay" ]; then
    for ((k = 1; k <= nets; k++)); do start_delay_line "$k"; done
  fi

  wait_links
  up_done=1
  local sites="" a=h1 b=h$count
  if [ "$site_a" -gt 1 ]; then a=h1..h$site_a; fi
  if [ "$count" -gt $((site_a + 1)) ]; then b=h$((site_a + 1))..h$count; fi
  if [ -n "$delay" ] && [ "$count" -gt "$site_a" ]; then
    sites=", sites $a and $b $delay ms apart"
  elif [ -n "$delay" ]; then
    sites=", h1 in site A, site B ($delay ms away) empty"
  fi
  echo "$me: $count host(s) $prefix-h1..$prefix-h$count on $nets net(s)${rate:+, $rate each}$sites"
}

cmd_down() {
  [ "${#args[@]}" -eq 0 ] || bad_usage "down takes no other argument"
  # Nothing to do without root or ip: nothing of ours can be there.
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
    check_environment
  fi
  teardown "$prefix"
}

# HOST (h3 or 3) as a host number, checked against the existing hosts.
host_number() {
  local h=$1
  [[ $h =~ ^h?([0-9]+)$ ]] || bad_usage "bad host '$h': h1, h2, ... or 1, 2, ..."
  local n=$((10#${BASH_REMATCH[1]}))
  ip netns list 2>/dev/null | grep -E "^$prefix-h$n( |$)" >/dev/null ||
    die "no host h$n with prefix $prefix (see '$me list --prefix $prefix')"
  echo "$n"
}

cmd_exec() {
  [ "${#args[@]}" -eq 1 ] || bad_usage "exec takes one HOST before --"
  [ "${#command[@]}" -gt 0 ] || bad_usage "exec needs -- CMD"
  check_environment
  local n
  n=$(host_number "${args[0]}")
  exec ip netns exec "$prefix-h$n" "${command[@]}"
}

cmd_addr() {
  if [ "${#args[@]}" -lt 1 ] || [ "${#args[@]}" -gt 2 ]; then bad_usage "addr takes HOST [NET]"; fi
  local net=${args[1]:-1} n
  [[ $net == 1 || $net == 2 ]] || bad_usage "NET must be 1 or 2, not '$net'"
  check_environment
  n=$(host_number "${args[0]}")
  ip netns list 2>/dev/null | grep -E "^$prefix-net$net( |$)" >/dev/null ||
    die "there is no net $net with prefix $prefix"
  echo "10.20$net.0.$n"
}

cmd_list() {
  [ "${#args[@]}" -eq 0 ] || bad_usage "list takes no other argument"
  check_environment
  owned_namespaces "$prefix" | sed -n "s/^$prefix-h\([0-9]*\)$/\1/p" | sort -n |
    sed 's/^/h/'
}

# --- arguments ---------------------------------------------------------------

[ $# -ge 1 ] || bad_usage "missing subcommand: up, down, exec, addr or list"
sub=$1
shift
case $sub in
up | down | exec | addr | list) ;;
-h | --help | help)
  usage
  exit 0
  ;;
-*) bad_usage "unknown option '$sub' before the subcommand" ;;
*) bad_usage "unknown subcommand '$sub': up, down, exec, addr or list" ;;
esac

prefix=${ROCL_NETNS_PREFIX:-rocl}
nets=1
rate=""
delay=""
delayline=""
count=0
rate_bps=""
up_done=1
args=()
command=()
while [ $# -gt 0 ]; do
  case $1 in
  --prefix | --nets | --rate | --delay | --delayline)
    [ $# -ge 2 ] || bad_usage "$1 needs a value"
    case $1 in
    --prefix) prefix=$2 ;;
    --nets) nets=$2 ;;
    --rate) rate=$2 ;;
    --delay) delay=$2 ;;
    --delayline) delayline=$2 ;;
    esac
    shift 2
    ;;
  --prefix=*) prefix=${1#*=} && shift ;;
  --nets=*) nets=${1#*=} && shift ;;
  --rate=*) rate=${1#*=} && shift ;;
  --delay=*) delay=${1#*=} && shift ;;
  --delayline=*) delayline=${1#*=} && shift ;;
  --)
    shift
    command=("$@")
    break
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  -*) bad_usage "unknown option '$1'" ;;
  *)
    args+=("$1")
    shift
    ;;
  esac
done
check_prefix
if [ "$sub" != up ]; then
  if [ "$nets" != 1 ] || [ -n "$rate" ] || [ -n "$delay" ] || [ -n "$delayline" ]; then
    bad_usage "--nets, --rate, --delay and --delayline are options of up"
  fi
fi
if [ "$sub" != exec ] && [ "${#command[@]}" -gt 0 ]; then
  bad_usage "only exec takes -- CMD"
fi

"cmd_$sub"
