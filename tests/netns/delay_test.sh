#!/usr/bin/env bash
# ctest netns_delay: hosts.sh up --delay, with a prefix of its own
# (${ROCL_NETNS_PREFIX}d, beside the fixture's hosts): 4 hosts on 2 nets at
# 100mbit, sites h1,h2 and h3,h4 20 ms apart one way. Within a site a round
# trip takes less than 20 ms, across at least 40 ms (every one) and less
# than 240 ms (the median), on both nets; 8 MB cross intact; bad --delay
# values and a missing delay line are refused; down leaves no delay line,
# log or namespace of the prefix.
#   delay_test.sh REACH DELAYLINE   (reach.c and delayline.c, built)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/hosts.sh
me=delay_test
readonly DELAY_MS=20 SAME_SITE_MAX_MS=20 ACROSS_SLACK_MS=200
[ $# -eq 2 ] || {
  echo "usage: $0 REACH DELAYLINE" >&2
  exit 2
}
reach=$1
delayline=$2
prefix=${ROCL_NETNS_PREFIX:-rocl}d
export ROCL_NETNS_PREFIX=$prefix
unset ROCL_DELAYLINE

fail() {
  echo "$me: FAILED: $*" >&2
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "$me: skipped: network namespaces need root" >&2
  exit 77
fi
[ -x "$reach" ] || fail "no reach program at $reach (build the netns_reach target)"
[ -x "$delayline" ] || fail "no delay line at $delayline (build the netns_delayline target)"

# The listeners this test starts, and its hosts, go when it ends.
work=$(mktemp -d)
listeners=()
cleanup() {
  local pid
  for pid in "${listeners[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  "$hosts" down >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Refused before anything is made: a delay out of range, no delay line.
for bad in 0 -5 abc 10001 1e3; do
  rc=0
  "$hosts" up 4 --delay "$bad" --delayline "$delayline" >"$work/out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "up --delay $bad: exit $rc, not 2: $(head -1 "$work/out")"
done
rc=0
"$hosts" up 4 --delay "$DELAY_MS" >"$work/out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] || ! grep -q netns_delayline "$work/out"; then
  fail "up --delay without a delay line: exit $rc, and no word of netns_delayline: $(cat "$work/out")"
fi
echo "$me: bad delays and a missing delay line refused"

"$hosts" up 4 --nets 2 --rate 100mbit --delay "$DELAY_MS" --delayline "$delayline"

# The topology: site A on br0, site B on br1, the delay line's TAP devices
# one in each, a delay line running in each net's namespace.
pids=()
for k in 1 2; do
  net=$prefix-net$k
  for port in h1:br0 h2:br0 dla:br0 h3:br1 h4:br1 dlb:br1; do
    ip -n "$net" link show dev "${port%:*}" | grep -q "master ${port#*:} " ||
      fail "in $net, ${port%:*} is not a port of ${port#*:}: $(ip -n "$net" -br link)"
  done
  found=""
  for pid in $(ip netns pids "$net"); do
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = delayline ]; then found=$pid; fi
  done
  [ -n "$found" ] || fail "no delay line runs in $net"
  pids+=("$found")
done
echo "$me: sites on br0 and br1, delay lines ${pids[*]} in $prefix-net1 and $prefix-net2"

# Starts `reach MODE ADDR PORT [COUNT]` in host $1; returns once it listens.
listen_in() {
  local host=$1 out=$work/listen-$1-$3-$4
  shift
  : >"$out"
  "$hosts" exec "$host" -- "$reach" "$@" >"$out" 2>&1 &
  listeners+=($!)
  for _ in $(seq 1 50); do
    if grep -q '^listening' "$out"; then return 0; fi
    kill -0 "${listeners[-1]}" 2>/dev/null || fail "reach $* in $host ended: $(cat "$out")"
    sleep 0.1
  done
  fail "reach $* in $host did not listen within 5 s"
}

# Round trips from host $1 to host $2 over net $3, min and median checked
# by the awk condition $4 (on min and median, in ms); prints the result.
rtt_between() {
  local from=$1 to=$2 net=$3 check=$4 addr port out min median
  addr=$("$hosts" addr "$to" "$net")
  port=$((7100 + net))
  listen_in "$to" listen "$addr" "$port" 1
  out=$("$hosts" exec "$from" -- "$reach" rtt "$addr" "$port" 20) ||
    fail "no round trips from $from to $to over net $net"
  wait "${listeners[-1]}" || fail "reach listen in $to failed"
  min=$(sed -n 's/.* min \([0-9.]*\) ms.*/\1/p' <<<"$out")
  median=$(sed -n 's/.* median \([0-9.]*\) ms.*/\1/p' <<<"$out")
  if [ -z "$min" ] || [ -z "$median" ]; then fail "reach rtt said: $out"; fi
  awk -v min="$min" -v median="$median" "BEGIN { exit !($check) }" ||
    fail "$from to $to over net $net: $out; expected $check"
  echo "$me: $from to $to, net $net: $out"
}

same="median < $SAME_SITE_MAX_MS"
across="min >= $((2 * DELAY_MS)) && median < $((2 * DELAY_MS + ACROSS_SLACK_MS))"
rtt_between h1 h2 1 "$same"
rtt_between h1 h3 1 "$across"
rtt_between h3 h4 2 "$same"
rtt_between h2 h4 2 "$across"

# Bulk across: 8 MB from h1 to h4, every byte checked.
addr=$("$hosts" addr h4)
listen_in h4 sink "$addr" 7200
out=$("$hosts" exec h1 -- "$reach" send "$addr" 7200 8000000) || fail "8 MB from h1 to h4 failed"
wait "${listeners[-1]}" || fail "reach sink in h4 failed"
echo "$me: h1 to h4: $out"

# Down: the delay lines are killed, their logs and the namespaces gone.
log_dir=/run/rocl-netns
if ! [ -d /run ] || ! [ -w /run ]; then log_dir=/tmp/rocl-netns; fi
[ -e "$log_dir/$prefix-net1.delayline.log" ] || fail "no log $log_dir/$prefix-net1.delayline.log"
"$hosts" down
for pid in "${pids[@]}"; do
  for _ in $(seq 1 20); do
    state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)
    if [ -z "$state" ] || [ "$state" = Z ]; then break; fi
    sleep 0.1
  done
  if [ -n "$state" ] && [ "$state" != Z ]; then fail "delay line $pid still runs after down"; fi
done
left=$(ip netns list | awk '{ print $1 }' | grep -E "^$prefix-" || true)
[ -z "$left" ] || fail "namespaces left after down: $left"
left=$(find "$log_dir" /etc/netns -maxdepth 1 -name "$prefix-*" 2>/dev/null || true)
[ -z "$left" ] || fail "left after down: $left"
echo "$me: down killed the delay lines and left nothing: passed"
