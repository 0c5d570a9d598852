#!/usr/bin/env bash
# ctest netns_roclrun_hosts: roclrun --hosts with the netns launcher on the
# test hosts of the fixture netns_hosts (prefix $ROCL_NETNS_PREFIX):
#   - exchange between two hosts (h1, h4): 0 B..8 MiB and 2000 ordered
#     messages over tcp, output prefixed [host:rank], exit 0;
#   - the demo on 4 hosts (-n 4, --quick), exit 0;
#   - a rank that fails stops the job with its status, on every host;
#   - SIGTERM to roclrun (the path of Ctrl-C's SIGINT, which a background
#     job of a script ignores) stops every rank on every host (nothing left
#     in the namespaces, no job folder left), and the job secret was on no
#     command line while the job ran.
#   - a send to a resource deleted on another host fails with EBADGID;
#   - all_pairs on 4 hosts x 2 processes x 4 threads;
#   roclrun_hosts_test.sh ROCLRUN EXCHANGE DEMO SEND_TO_DELETED ALL_PAIRS
set -euo pipefail

me=netns_roclrun_hosts
[ $# -eq 5 ] || {
  echo "usage: $0 ROCLRUN EXCHANGE DEMO SEND_TO_DELETED ALL_PAIRS" >&2
  exit 2
}
roclrun=$1 exchange=$2 demo=$3 send_to_deleted=$4 all_pairs=$5
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
work=$(mktemp -d /tmp/rocl-netns-run.XXXXXX)
# Only what runs in this test's hosts: other jobs' agents on the machine
# (other test hosts, other builds) are not this test's to kill.
cleanup() {
  local h
  for h in 1 2 3 4; do
    ip netns pids "$prefix-h$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
run() { "$roclrun" --launcher netns --timeout 100 "$@"; }
nothing_left() { # no process of ours in any test host
  local h
  for h in 1 2 3 4; do
    [ -z "$(ip netns pids "$prefix-h$h")" ] || return 1
  done
}
sleeping() { # the job's sleeps, in the hosts
  local h
  for h in 1 2 3 4; do ip netns pids "$prefix-h$h"; done | xargs -r ps -o args= -p |
    grep -c '^sleep 30' || true
}
what_is_left() {
  local h
  for h in 1 2 3 4; do ip netns pids "$prefix-h$h" | xargs -r ps -o pid=,args= -p; done
}

# Two hosts, tcp between them.
run --hosts h1,h4 -n 2 "$exchange" >"$work/x.out" 2>&1 || fail "exchange: $(cat "$work/x.out")"
grep -q '^\[h1:0\] rank 0: exchanged 7 sizes' "$work/x.out" || fail "no [h1:0] line: $(cat "$work/x.out")"
grep -q '^\[h4:1\] rank 1: exchanged 7 sizes' "$work/x.out" || fail "no [h4:1] line: $(cat "$work/x.out")"
grep -q '^\[h1:dir\] .*server 2 at 10.201.0.4:.* joined' "$work/x.out" ||
  fail "h1's directory did not see h4's: $(cat "$work/x.out")"

# A send to a resource deleted on another host fails, naming it (the
# removal reaches the sender's server by the servers' announcement).
run --hosts h1,h3 -n 2 "$send_to_deleted" >"$work/d.out" 2>&1 || fail "send_to_deleted: $(cat "$work/d.out")"
grep -q '^\[h1:0\] rank 0: a send to deleted .* is not a registered resource' "$work/d.out" ||
  fail "no EBADGID line: $(cat "$work/d.out")"

# 4 hosts x 2 processes x 4 threads: every thread to every other, 50
# small messages per pair and 64 MiB per process pair, exactly once and in
# order (shm within a host, tcp between hosts).
run --hosts h1,h2,h3,h4 -n 8 "$all_pairs" >"$work/p.out" 2>&1 || fail "all_pairs: $(cat "$work/p.out")"
grep -q '^\[h1:0\] all_pairs: 8 processes x 4 threads, 50 messages per pair and 64 MiB' \
  "$work/p.out" || fail "no all_pairs line: $(cat "$work/p.out")"

# The demo on 4 hosts.
run --hosts h1,h2,h3,h4 -n 4 "$demo" --quick >"$work/demo.out" 2>&1 ||
  fail "demo: $(tail -20 "$work/demo.out")"

# A failing rank ends the job with its status, everywhere.
set +e
# shellcheck disable=SC2016 # $ROCL_RANK is the rank's, not ours
run --hosts h2,h3 -n 4 sh -c 'if [ "$ROCL_RANK" = 3 ]; then exit 7; fi; sleep 30' \
  >"$work/f.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 7 ] || fail "a rank's exit 7 gave $rc: $(cat "$work/f.out")"
for _ in $(seq 50); do nothing_left && break; sleep 0.1; done
nothing_left || fail "processes left in the hosts after a failed job: $(what_is_left)"

# SIGTERM stops everything; the secret is on no command line.
"$roclrun" --launcher netns --hosts h1,h2,h3,h4 -n 4 sleep 30 >"$work/i.out" 2>&1 &
job=$! # roclrun itself (run() in the background would be a subshell)
secret=""
for _ in $(seq 300); do
  f=$(ls /tmp/rocl-"$(id -u)"/job-*-h2/secret 2>/dev/null | head -1 || true)
  if [ -n "$f" ] && [ "$(sleeping)" -ge 4 ]; then
    secret=$(cat "$f")
    break
  fi
  sleep 0.1
done
[ -n "$secret" ] || fail "the job did not start: $(cat "$work/i.out")"
if ps -eo args | grep -v grep | grep -q "$secret"; then fail "the job secret is on a command line"; fi
kill -TERM "$job"
set +e
wait "$job"
rc=$?
set -e
[ "$rc" -eq 143 ] || fail "SIGTERM gave exit $rc, not 143: $(cat "$work/i.out")"
for _ in $(seq 50); do nothing_left && break; sleep 0.1; done
nothing_left || fail "processes left in the hosts after SIGTERM: $(what_is_left)"
ls -d /tmp/rocl-"$(id -u)"/job-*-h* 2>/dev/null && fail "job folders left on the hosts"
echo "$me: ok"
