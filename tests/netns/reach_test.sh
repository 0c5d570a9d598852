#!/usr/bin/env bash
# ctest netns_hosts_reach: the test hosts of the fixture netns_hosts
# (hosts.sh up 4 --nets 2, prefix $ROCL_NETNS_PREFIX) reach each other over
# both nets, resolve each other's names, and reach nothing else; nothing of
# them shows in the root namespace.
#   reach_test.sh REACH   (REACH: the reach program, reach.c)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/hosts.sh
me=reach_test
[ $# -eq 1 ] || {
  echo "usage: $0 REACH" >&2
  exit 2
}
reach=$1
prefix=${ROCL_NETNS_PREFIX:-rocl}

fail() {
  echo "$me: FAILED: $*" >&2
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "$me: skipped: network namespaces need root" >&2
  exit 77
fi
[ -x "$reach" ] || fail "no reach program at $reach (build the netns_reach target)"
for i in 1 2 3 4; do
  ip netns list 2>/dev/null | grep -E "^$prefix-h$i( |$)" >/dev/null ||
    fail "host $prefix-h$i is missing: the fixture runs 'hosts.sh up 4 --nets 2' first"
done

# The listeners this test starts in h2 go when it ends, whatever happens.
work=$(mktemp -d)
listeners=()
cleanup() {
  local pid
  for pid in "${listeners[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Starts `reach listen ADDR PORT 3` in h2; returns once it listens.
listen_in_h2() {
  local addr=$1 port=$2 out=$work/listen-$1
  : >"$out"
  "$hosts" exec h2 -- "$reach" listen "$addr" "$port" 3 >"$out" 2>&1 &
  listeners+=($!)
  for _ in $(seq 1 50); do
    if grep -q '^listening' "$out"; then return 0; fi
    kill -0 "${listeners[-1]}" 2>/dev/null || fail "reach listen $addr $port ended: $(cat "$out")"
    sleep 0.1
  done
  fail "reach listen $addr $port did not listen within 5 s"
}

# h1, h3 and h4 each connect to h2 on net $1 (by address and by name), and
# the listener ends content after its 3 connections.
across_net() {
  local net=$1 addr port name pid
  addr=$("$hosts" addr h2 "$net")
  port=$((7000 + net))
  listen_in_h2 "$addr" "$port"
  pid=${listeners[-1]}
  name=h2
  if [ "$net" -eq 2 ]; then name=h2-net2; fi
  "$hosts" exec h1 -- "$reach" connect "$addr" "$port" "from h1 over net $net" ||
    fail "h1 does not reach h2 ($addr) over net $net"
  "$hosts" exec h3 -- "$reach" connect "$name" "$port" "from h3 over net $net" ||
    fail "h3 does not reach h2 by the name $name over net $net"
  "$hosts" exec h4 -- "$reach" connect "$addr" "$port" "from h4 over net $net" ||
    fail "h4 does not reach h2 ($addr) over net $net"
  wait "$pid" || fail "reach listen in h2 failed on net $net: $(cat "$work/listen-$addr")"
  echo "$me: net $net: h1, h3, h4 reached h2 at $addr"
}

across_net 1
across_net 2

# No route out: an address outside the test networks fails at once.
"$hosts" exec h1 -- "$reach" unreachable 192.0.2.1 80 ||
  fail "h1 reaches (or waits for) 192.0.2.1: a route leads out of the test networks"
for i in 1 2 3 4; do
  routes=$(ip -n "$prefix-h$i" route show default)
  [ -z "$routes" ] || fail "$prefix-h$i has a default route: $routes"
done

# Nothing in the root namespace: no veth, no device named after the prefix.
leaked=$(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
  grep -E "^($prefix|veth)" || true)
[ -z "$leaked" ] || fail "devices in the root namespace: $leaked"

# Names resolve inside a host (/etc/netns/P-hI/hosts over /etc/hosts).
for i in 1 2 3 4; do
  got=$("$hosts" exec h1 -- getent hosts "h$i" | awk '{ print $1 }')
  [ "$got" = "10.201.0.$i" ] || fail "in h1, h$i resolves to '$got', not 10.201.0.$i"
  got=$("$hosts" exec h3 -- getent hosts "h$i-net2" | awk '{ print $1 }')
  [ "$got" = "10.202.0.$i" ] || fail "in h3, h$i-net2 resolves to '$got', not 10.202.0.$i"
done
echo "$me: no route out, nothing in the root namespace, h1..h4 resolve: passed"
