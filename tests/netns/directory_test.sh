#!/usr/bin/env bash
# ctest netns_directory: the directory and tcp across the test hosts of the
# fixture netns_hosts (prefix $ROCL_NETNS_PREFIX). One rocld per host, each
# joined to the others by UDP broadcast on net 1 (--peer-port) with the
# server id its address gives (1..4); then
#   - exchange (tests/multiproc/exchange.c) between h1 and h4 and between h2
#     and h3: each rank registers at its own host's server, finds the other
#     by a query that misses locally and goes global, and they exchange
#     0 B..8 MiB and 2000 ordered messages over tcp (shm does not reach
#     another host, though it is the same machine);
#   - rocl-dir list at h2 (a multi-answer query) shows every context of
#     every host exactly once, each with its host name and a tcp address on
#     net 1;
#   - a datagram that is not the job's is ignored and said on the log;
#   - a rocld killed (-9) is dropped by the others once silent (3 s);
#   - from h4's address then: a genuine announcement of h2's, captured off
#     the wire and sent again, is refused as a replay; a rocld with another
#     secret is ignored (said on the log) and never joins.
#   directory_test.sh ROCLD EXCHANGE ROCL_DIR
set -euo pipefail

me=netns_directory
[ $# -eq 3 ] || {
  echo "usage: $0 ROCLD EXCHANGE ROCL_DIR" >&2
  exit 2
}
rocld=$1 exchange=$2 rocl_dir=$3
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

work=$(mktemp -d /tmp/rocl-netns-dir.XXXXXX)
chmod 700 "$work"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  pkill -KILL -f -- "$work/" 2>/dev/null || true  # the daemons and programs themselves
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"

run_on() { # HOST CMD... : in the background, output to $work/HOST.<name>
  local h=$1
  shift
  "$hosts" exec "$h" --prefix "$prefix" -- "$@"
}

for h in 1 2 3 4; do
  run_on "h$h" "$rocld" --socket "$work/h$h.sock" --secret-file "$work/secret" \
    --peer-port 7946 >"$work/rocld$h.log" 2>&1 &
  pids+=($!)
done
for h in 1 2 3 4; do
  for _ in $(seq 100); do
    [ -S "$work/h$h.sock" ] && break
    sleep 0.05
  done
  [ -S "$work/h$h.sock" ] || fail "rocld of h$h did not start: $(cat "$work/rocld$h.log")"
done

export ROCL_SECRET_FILE=$work/secret ROCL_TCP_BIND=auto ROCL_TRANSPORTS=inproc,shm,tcp
export ROCL_SIZE=2
exchange_on() { # RANK HOST
  ROCL_RANK=$1 ROCL_DIRECTORY=unix:$work/$2.sock ROCL_HOST_NAME=$2 \
    timeout 120 "$hosts" exec "$2" --prefix "$prefix" -- "$exchange" >"$work/x$1$2.log" 2>&1
}
# Two pairs, each across hosts, one after the other: both pairs' ranks are
# 0 and 1 of type "exchange", so at once they could find each other's.
exchange_on 0 h1 &
a=$!
exchange_on 1 h4 &
b=$!
wait $a || fail "exchange rank 0 on h1: $(cat "$work/x0h1.log")"
wait $b || fail "exchange rank 1 on h4: $(cat "$work/x1h4.log")"
grep -q "2000 ordered messages" "$work/x0h1.log" || fail "h1: $(cat "$work/x0h1.log")"
exchange_on 0 h2 &
a=$!
exchange_on 1 h3 &
b=$!
wait $a || fail "exchange rank 0 on h2: $(cat "$work/x0h2.log")"
wait $b || fail "exchange rank 1 on h3: $(cat "$work/x1h3.log")"

# A context per host stays registered while rocl-dir lists them: exchange
# with ranks 1..4, which wait (10 s) for partners that never come.
for h in 1 2 3 4; do
  ROCL_RANK=$h ROCL_DIRECTORY=unix:$work/h$h.sock ROCL_HOST_NAME=h$h \
    run_on "h$h" "$exchange" >"$work/idle$h.log" 2>&1 &
  pids+=($!)
done
listing=""
for _ in $(seq 100); do
  listing=$(ROCL_DIRECTORY=unix:$work/h2.sock run_on h2 "$rocl_dir" list --ask host --ask addr.tcp)
  [ "$(grep -c 'type=context' <<<"$listing")" -eq 4 ] && break
  sleep 0.05
done
echo "$listing"
[ "$(grep -c 'type=context' <<<"$listing")" -eq 4 ] || fail "h2 does not list 4 contexts"
for h in 1 2 3 4; do
  grep -q "host=h$h addr.tcp=tcp:10.201.0.$h:" <<<"$listing" || fail "no context of h$h on net 1"
done
[ "$(grep -c '^gid' <<<"$listing")" -eq "$(grep '^gid' <<<"$listing" | sort -u | wc -l)" ] ||
  fail "a resource listed twice"

# The job as hosts, processes and resources.
job=$(ROCL_DIRECTORY=unix:$work/h2.sock run_on h2 "$rocl_dir" job)
echo "$job"
for h in 1 2 3 4; do
  grep -q "^host h$h (host id [0-9a-f]\{16\})" <<<"$job" || fail "rocl-dir job shows no host h$h"
done
[ "$(grep -c '^  process [0-9]* (context 0x' <<<"$job")" -eq 4 ] || fail "rocl-dir job: not 4 processes"
[ "$(grep -c '^    0x.* type=exchange' <<<"$job")" -eq 4 ] || fail "rocl-dir job: not 4 resources"

# A datagram that is not the job's (no magic, no MAC) sent to h1's server
# from h2 is ignored, said once on its log, and the servers go on.
"$hosts" exec h2 --prefix "$prefix" -- bash -c 'echo not-a-directory-packet >/dev/udp/10.201.0.1/7946'
wait_for_line "$work/rocld1.log" "directory peers: ignored a datagram from 10.201.0.2" ||
  fail "h1's server did not say it ignored a foreign datagram: $(cat "$work/rocld1.log")"

# rocld of h4 killed: the others drop it within 3 s of silence.
# (pids[] are the hosts.sh wrappers: the daemon is found by its socket.)
pkill -KILL -f -- "--socket $work/h4.sock" || fail "no rocld of h4 to kill"
wait_for_line "$work/rocld1.log" "server 4 was silent" 10 || fail "h1 did not drop h4: $(cat "$work/rocld1.log")"

# A replay: h2's next broadcast (an announcement comes every second, signed
# with the job's secret) caught at h4 (bound to the broadcast address: not
# what h2 sends h4 alone, which h1 never saw) and sent to h1 a moment after
# h1 took it.
"$hosts" exec h4 --prefix "$prefix" -- python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.201.0.255", 7946))
s.settimeout(5)
while True:
    data, src = s.recvfrom(65536)
    if src[0] == "10.201.0.2":
        break
time.sleep(0.2)
s.sendto(data, ("10.201.0.1", 7946))
' || fail "could not catch an announcement of h2's at h4"
wait_for_line "$work/rocld1.log" "ignored a packet from 10.201.0.4.*replay" ||
  fail "h1 did not refuse a replayed announcement: $(cat "$work/rocld1.log")"

# Another job's server on h4 (its own secret, the same port): ignored by h1
# (bad MAC), said once, and never a live peer.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/other-secret"
chmod 600 "$work/other-secret"
joined_before=$(grep -c "server 4 at .* joined" "$work/rocld1.log" || true)
run_on h4 "$rocld" --socket "$work/h4-other.sock" --secret-file "$work/other-secret" \
  --peer-port 7946 >"$work/rocld4-other.log" 2>&1 &
pids+=($!)
wait_for_line "$work/rocld1.log" "ignored a datagram from 10.201.0.4.*MAC" ||
  fail "h1 did not ignore a server with another secret: $(cat "$work/rocld1.log")"
sleep 1.2  # another announcement of the stranger's
[ "$(grep -c "server 4 at .* joined" "$work/rocld1.log" || true)" = "$joined_before" ] ||
  fail "a server with another secret joined h1: $(cat "$work/rocld1.log")"
echo "$me: ok"
