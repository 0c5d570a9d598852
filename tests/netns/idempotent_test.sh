#!/usr/bin/env bash
# ctest netns_hosts_idempotent: hosts.sh up twice then down twice, with a
# prefix of its own (${ROCL_NETNS_PREFIX}i, beside the fixture's hosts):
# the second up replaces what the first left (processes included), the
# second down finds nothing and succeeds, and nothing of the prefix remains.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/hosts.sh
me=idempotent_test
prefix=${ROCL_NETNS_PREFIX:-rocl}i
export ROCL_NETNS_PREFIX=$prefix

fail() {
  echo "$me: FAILED: $*" >&2
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "$me: skipped: network namespaces need root" >&2
  exit 77
fi

# Whatever happens, nothing of this prefix stays.
sleeper=""
cleanup() {
  if [ -n "$sleeper" ]; then kill -KILL "$sleeper" 2>/dev/null || true; fi
  "$hosts" down >/dev/null 2>&1 || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

namespaces() { ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^$prefix-" || true; }
expect_namespaces() {
  local got
  got=$(namespaces | sort | tr '\n' ' ')
  [ "$got" = "$1" ] || fail "after $2: namespaces '$got', expected '$1'"
}

# First up: 3 hosts on 2 nets, a process left running in h2 (as a killed
# run would leave it).
"$hosts" up 3 --nets 2
expect_namespaces "$prefix-h1 $prefix-h2 $prefix-h3 $prefix-net1 $prefix-net2 " "the first up"
"$hosts" exec h2 -- sleep 600 &
sleeper=$!
disown "$sleeper" # no "Killed" when the second up kills it
for _ in $(seq 1 50); do
  if [ -n "$(ip netns pids "$prefix-h2")" ]; then break; fi
  sleep 0.1
done
[ -n "$(ip netns pids "$prefix-h2")" ] || fail "no process started in $prefix-h2"

# Second up over it: 2 hosts on one net with a rate; the old ones, their
# process and their names are gone.
"$hosts" up 2 --rate 100mbit
expect_namespaces "$prefix-h1 $prefix-h2 $prefix-net1 " "the second up"
for _ in $(seq 1 50); do
  if ! kill -0 "$sleeper" 2>/dev/null; then break; fi
  sleep 0.1
done
if kill -0 "$sleeper" 2>/dev/null; then fail "the second up left the process of the first in h2"; fi
sleeper=""
[ ! -e "/etc/netns/$prefix-h3" ] || fail "the second up left /etc/netns/$prefix-h3"
if grep -q net2 "/etc/netns/$prefix-h1/hosts"; then fail "the second up left net 2 names in h1"; fi
[ "$("$hosts" list | tr '\n' ' ')" = "h1 h2 " ] || fail "list says: $("$hosts" list)"
[ "$("$hosts" addr h2)" = 10.201.0.2 ] || fail "addr h2 says: $("$hosts" addr h2)"
tc -n "$prefix-h1" qdisc show dev eth0 | grep "tbf.*rate 100Mbit" >/dev/null ||
  fail "no 100mbit tbf on h1's eth0: $(tc -n "$prefix-h1" qdisc show dev eth0)"
"$hosts" exec 1 -- getent hosts h2 | grep '^10\.201\.0\.2 ' >/dev/null || fail "h2 does not resolve in h1"

# Down twice; nothing of the prefix remains.
"$hosts" down
"$hosts" down || fail "the second down failed"
expect_namespaces "" "down"
leftovers=$(find /etc/netns -maxdepth 1 -name "$prefix-*" 2>/dev/null || true)
[ -z "$leftovers" ] || fail "left in /etc/netns: $leftovers"
[ -z "$("$hosts" list)" ] || fail "list after down says: $("$hosts" list)"
echo "$me: up twice, down twice, nothing left: passed"
