#!/usr/bin/env bash
# restart_test.sh - a host's directory server restarts under a cached route
# (label netns, the fixture's hosts):
#   - rocld on h1 and h2, joined; stale_route's rank 1 registers a target
#     at h2, rank 0 at h1 finds it and sends (the route is cached);
#   - h2's rocld is killed (-9) and started again with the same socket and
#     id: h1's server hears it restarted and drops what it had answered,
#     and rank 0's next sends to the target fail with ROCL_EBADGID naming
#     the gid within 10 s, none hangs;
#   - a target registered at the restarted server gets a gid its first
#     life never issued (serials start past the earlier ones).
#   restart_test.sh ROCLD STALE_ROUTE
set -euo pipefail

me=netns_restart
[ $# -eq 2 ] || {
  echo "usage: $0 ROCLD STALE_ROUTE" >&2
  exit 2
}
rocld=$1 stale_route=$2
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

work=$(mktemp -d /tmp/rocl-netns-restart.XXXXXX)
chmod 700 "$work"
cleanup() {
  pkill -KILL -f -- "$work/" 2>/dev/null || true
  pkill -KILL -f -- "^$stale_route" 2>/dev/null || true  # its processes in the hosts
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"

start_rocld() { # HOST LOG
  "$hosts" exec "$1" --prefix "$prefix" -- "$rocld" --socket "$work/$1.sock" \
    --secret-file "$work/secret" --peer-port 7947 >>"$work/$2" 2>&1 &
  for _ in $(seq 100); do
    [ -S "$work/$1.sock" ] && return 0
    sleep 0.05
  done
  fail "rocld of $1 did not start: $(cat "$work/$2")"
}
start_rocld h1 rocld1.log
start_rocld h2 rocld2.log
wait_for_line "$work/rocld1.log" "server 2 at .* joined" || fail "h2's server never joined h1's"

export ROCL_SECRET_FILE=$work/secret ROCL_TCP_BIND=auto ROCL_TRANSPORTS=inproc,shm,tcp
export ROCL_SIZE=2 STALE_ROUTE_GO=$work/go
run() { # RANK HOST OUT
  ROCL_RANK=$1 ROCL_DIRECTORY=unix:$work/$2.sock ROCL_HOST_NAME=$2 \
    timeout 90 "$hosts" exec "$2" --prefix "$prefix" -- "$stale_route" >"$work/$3" 2>&1
}
run 1 h2 target.out &
target_pid=$!
run 0 h1 sender.out &
sender_pid=$!
wait_for_line "$work/sender.out" "^cached" 10 || fail "no cached route: $(cat "$work/sender.out")"
first_gid=$(sed -n 's/^target //p' "$work/target.out")

# h2's server restarts (the daemon is found by its socket).
pkill -KILL -f -- "--socket $work/h2.sock" || fail "no rocld of h2 to kill"
for _ in $(seq 50); do
  pgrep -f -- "--socket $work/h2.sock" >/dev/null || break
  sleep 0.05
done
rm -f "$work/h2.sock"
start_rocld h2 rocld2.log
wait_for_line "$work/rocld1.log" "server 2 at .* restarted" ||
  fail "h1 did not hear h2's server restart: $(cat "$work/rocld1.log")"
touch "$work/go"
wait "$sender_pid" || fail "the sender: $(cat "$work/sender.out")"
grep -q "stale route refused after" "$work/sender.out" || fail "sender: $(cat "$work/sender.out")"
pkill -KILL -f -- "^$stale_route" 2>/dev/null || true # the first target, still waiting
wait "$target_pid" 2>/dev/null || true

# A new target at the restarted server: a gid never issued before.
run 1 h2 target2.out &
second=$!
wait_for_line "$work/target2.out" "^target" 10 || fail "no second target: $(cat "$work/target2.out")"
second_gid=$(sed -n 's/^target //p' "$work/target2.out")
pkill -KILL -f -- "^$stale_route" 2>/dev/null || true
wait "$second" 2>/dev/null || true
[ -n "$first_gid" ] && [ -n "$second_gid" ] || fail "no gids: $first_gid / $second_gid"
[ "$first_gid" != "$second_gid" ] ||
  fail "the restarted server issued gid $second_gid again"
cat "$work/sender.out"
echo "$me: ok (gids $first_gid, then $second_gid)"
