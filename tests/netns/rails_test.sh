#!/usr/bin/env bash
# ctest netns_rails: a context reaching its peer over both nets (rails),
# between test hosts h1 (rank 0, the sender) and h2 (rank 1) of the fixture
# netns_hosts, over tcp with an end-point per net (ROCL_TCP_BIND=eth0,eth1).
# Each case puts tbf rates on the two hosts' eth0 and eth1 (what they send)
# and on their bridge ports (what they receive), as hosts.sh --rate does,
# counts the bytes h1 sent on each (tx_bytes) and runs rails.c:
#   equal     both rails 400mbit, big 64: each carried 30 % to 70 %
#   unequal   eth0 400mbit, eth1 100mbit, big 64: eth1 carried 8 % to 35 %
#   mixed     both 400mbit, mixed: every message once, in order, whole
#   failover  h1's eth1 taken down mid-message: every message arrives whole
#   route     rank 0's resource bound to tcp.2, then tcp (rocl_route), then
#             its buffers to tcp.2 (rocl_bfnet): that rail carried at least 95 %
#   single    one rail (ROCL_TCP_BIND=eth0), 400mbit, big 64: for comparison;
#             eth0 carried at least 95 %
# The MB/s of each big case is printed, never asserted. The qdiscs found at
# the start are put back on exit.
#   rails_test.sh ROCLRUN PROGRAM
set -euo pipefail
me=rails_test
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
[ $# -eq 2 ] || fail "usage: $0 ROCLRUN PROGRAM"
roclrun=$1 program=$2

payload_mib=64
rounds=3 # rails.c sends the big message this many times

# Where a rate applies: "namespace device rail" (rail: 0 for net 1, 1 for net 2).
shaped=(
  "$prefix-h1 eth0 0" "$prefix-net1 h1 0" "$prefix-h2 eth0 0" "$prefix-net1 h2 0"
  "$prefix-h1 eth1 1" "$prefix-net2 h1 1" "$prefix-h2 eth1 1" "$prefix-net2 h2 1"
)

out=$(mktemp)
saved=$(mktemp)

# The root qdisc of device $2 in namespace $1, one line (tc's own words).
root_qdisc() {
  tc -n "$1" qdisc show dev "$2" root | head -n 1
}

save_qdiscs() {
  local entry ns dev _
  for entry in "${shaped[@]}"; do
    read -r ns dev _ <<<"$entry"
    echo "$ns $dev $(root_qdisc "$ns" "$dev")" >>"$saved" ||
      fail "cannot read the qdisc of $dev in $ns"
  done
}

# Puts back what save_qdiscs found: a default qdisc (handle 0:) by deleting
# ours, a tbf (hosts.sh --rate) with its rate, burst and latency.
restore_qdiscs() {
  local ns dev line status=0
  while read -r ns dev line; do
    if [[ $line =~ ^qdisc\ [a-z_]+\ 0:\  ]]; then
      if [[ $(root_qdisc "$ns" "$dev") =~ ^qdisc\ tbf ]]; then
        tc -n "$ns" qdisc del dev "$dev" root || status=1
      fi
    elif [[ $line =~ ^qdisc\ tbf\ .*\ rate\ ([^ ]+)\ burst\ ([^ ]+)\ lat\ ([^ ]+) ]]; then
      tc -n "$ns" qdisc replace dev "$dev" root tbf rate "${BASH_REMATCH[1]}" \
        burst "${BASH_REMATCH[2]}" latency "${BASH_REMATCH[3]}" || status=1
    else
      echo "$me: cannot put back the qdisc of $dev in $ns: $line" >&2
      status=1
    fi
  done <"$saved"
  return "$status"
}

link_down=0
cleanup() {
  local status=$?
  if [ "$link_down" = 1 ]; then
    ip -n "$prefix-h1" link set eth1 up || status=1
  fi
  restore_qdiscs || {
    echo "$me: some qdiscs were not put back" >&2
    [ "$status" -ne 0 ] || status=1
  }
  rm -f "$out" "$saved"
  exit "$status"
}

# "RATE0 RATE1" in bits per second, like 400mbit: tbf on every device of
# each rail, its bucket 4 ms of traffic and at least 16 KiB (hosts.sh).
set_rates() {
  local rates=("$1" "$2") entry ns dev rail rate bits burst
  for entry in "${shaped[@]}"; do
    read -r ns dev rail <<<"$entry"
    rate=${rates[$rail]}
    [[ $rate =~ ^([0-9]+)mbit$ ]] || fail "set_rates takes rates in mbit, not '$rate'"
    bits=$((BASH_REMATCH[1] * 1000000))
    burst=$((bits / 8 / 250))
    [ "$burst" -ge 16384 ] || burst=16384
    tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms ||
      fail "cannot put a tbf qdisc ($rate) on $dev in $ns"
  done
}

tx_bytes() {
  ip netns exec "$prefix-h1" cat "/sys/class/net/$1/statistics/tx_bytes" ||
    fail "cannot read h1's tx_bytes of $1"
}

# run CASE BIND ARGS...: the program across h1 and h2 with ROCL_TCP_BIND=BIND;
# sets sent0 and sent1, the bytes h1 sent on eth0 and eth1 meanwhile, and
# split, them in words.
run() {
  local case=$1 bind=$2 before0 before1 total
  shift 2
  before0=$(tx_bytes eth0) before1=$(tx_bytes eth1)
  if ! ROCL_TRANSPORTS=tcp ROCL_TCP_BIND=$bind timeout 150 \
    "$roclrun" --launcher netns --timeout 120 --hosts h1,h2 -n 2 "$program" "$@" >"$out" 2>&1; then
    cat "$out" >&2
    fail "$case: rails $* with ROCL_TCP_BIND=$bind failed"
  fi
  sent0=$(($(tx_bytes eth0) - before0)) sent1=$(($(tx_bytes eth1) - before1))
  total=$((sent0 + sent1))
  [ "$total" -gt 0 ] || total=1
  split="eth0 $((sent0 / 1000000)) MB ($((sent0 * 100 / total)) %), eth1 $((sent1 / 1000000)) MB ($((sent1 * 100 / total)) %)"
}

# Fails unless rank 0 said "rails MODE: ok", and the counters saw at least
# the payload of a big case leave h1.
expect_ok() {
  local case=$1 mode=$2
  grep -E "^\[h1:0\] rails $mode: ok" "$out" >/dev/null || {
    cat "$out" >&2
    fail "$case: rank 0 on h1 did not say 'rails $mode: ok'"
  }
  if [ "$mode" = big ] && [ $((sent0 + sent1)) -lt $((rounds * payload_mib * 1048576)) ]; then
    cat "$out" >&2
    fail "$case: h1 sent less than the payload ($rounds x $payload_mib MiB): $split"
  fi
}

# The MB/s lines of the last run, for the log.
print_speeds() {
  sed -n "s/^\[h1:0\] rails big: \([0-9]* MiB in .*\)$/$me: $1: \1/p" "$out"
}

# Fails unless rail $2 (0 or 1) carried between $3 and $4 % of the bytes.
expect_share() {
  local case=$1 rail=$2 low=$3 high=$4 sent pct
  if [ "$rail" -eq 0 ]; then sent=$sent0; else sent=$sent1; fi
  pct=$((sent * 100 / (sent0 + sent1)))
  if [ "$pct" -lt "$low" ] || [ "$pct" -gt "$high" ]; then
    cat "$out" >&2
    fail "$case: eth$rail carried $pct % of the bytes, not $low to $high %: $split"
  fi
}

case_equal() {
  set_rates 400mbit 400mbit
  run equal eth0,eth1 big "$payload_mib"
  expect_ok equal big
  print_speeds equal
  expect_share equal 0 30 70
  expect_share equal 1 30 70
  echo "$me: equal: ok ($split)"
}

case_unequal() {
  set_rates 400mbit 100mbit
  run unequal eth0,eth1 big "$payload_mib"
  expect_ok unequal big
  print_speeds unequal
  expect_share unequal 1 8 35
  echo "$me: unequal: ok ($split)"
}

case_mixed() {
  set_rates 400mbit 400mbit
  run mixed "$1" mixed
  expect_ok mixed mixed
  sed -n "s/^\[h1:0\] rails mixed: ok: /$me: mixed: /p" "$out"
  echo "$me: mixed: ok (over $1; $split)"
}

# A rail taken down in the middle of a transfer: h1's eth1 goes down while
# the first 64 MiB message is on its way; its connection times out
# (ROCL_TCP_USER_TIMEOUT_MS=1000), the fragments it held go over eth0,
# and every message still arrives whole, the later ones over eth0 alone.
case_failover() {
  set_rates 400mbit 400mbit
  local before0 before1 pid
  before0=$(tx_bytes eth0) before1=$(tx_bytes eth1)
  ROCL_TRANSPORTS=tcp ROCL_TCP_BIND=eth0,eth1 ROCL_TCP_USER_TIMEOUT_MS=1000 ROCL_STRIPE_RESEND_MS=2000 timeout 150 \
    "$roclrun" --launcher netns --timeout 120 --hosts h1,h2 -n 2 "$program" big "$payload_mib" \
    >"$out" 2>&1 &
  pid=$!
  # Down once the first message is under way (the first 'MiB' of eth1's
  # counter moved), at most 20 s later.
  for _ in $(seq 200); do
    [ $(($(tx_bytes eth1) - before1)) -gt 4000000 ] && break
    sleep 0.1
  done
  ip -n "$prefix-h1" link set eth1 down || fail "failover: cannot take h1's eth1 down"
  link_down=1
  local rc=0
  wait "$pid" || rc=$?
  ip -n "$prefix-h1" link set eth1 up || fail "failover: cannot bring h1's eth1 back up"
  link_down=0
  if [ "$rc" -ne 0 ]; then
    cat "$out" >&2
    fail "failover: rails big $payload_mib with eth1 taken down failed (exit $rc)"
  fi
  sent0=$(($(tx_bytes eth0) - before0)) sent1=$(($(tx_bytes eth1) - before1))
  split="eth0 $((sent0 / 1000000)) MB, eth1 $((sent1 / 1000000)) MB before it went down"
  expect_ok failover big
  print_speeds failover
  echo "$me: failover: ok ($split)"
}

# Routes per resource: rank 0's resource bound to one network (rocl_route)
# sends its large messages over that one alone, whichever it is.
case_route() {
  set_rates 400mbit 400mbit
  run route eth0,eth1 big "$payload_mib" tcp.2
  expect_ok route big
  expect_share route 1 95 100
  echo "$me: route: tcp.2 alone: ok ($split)"
  run route eth0,eth1 big "$payload_mib" tcp
  expect_ok route big
  expect_share route 0 95 100
  echo "$me: route: tcp alone: ok ($split)"
  run route eth0,eth1 big "$payload_mib" buffer:tcp.2
  expect_ok route big
  expect_share route 1 95 100
  echo "$me: route: buffers on tcp.2: ok ($split)"
}

case_single() {
  set_rates 400mbit 400mbit
  run single eth0 big "$payload_mib"
  expect_ok single big
  print_speeds single
  expect_share single 0 95 100
  echo "$me: single: ok ($split)"
}

trap cleanup EXIT
save_qdiscs
case_equal
case_unequal
case_mixed eth0,eth1
case_failover
case_route
case_single
echo "$me: ok"
