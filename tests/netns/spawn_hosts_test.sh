#!/usr/bin/env bash
# spawn_hosts_test.sh - rocl_spawn when a host cannot spawn (label netns,
# the fixture's hosts): rocld on h1 and h2 with --spawn and on h3 without,
# joined; spawn_hosts (tests/multiproc/spawn_hosts.c) on h1 checks that h3
# refuses, that h2 spawns, that h2 is unreachable within 3 s while its
# rocld is stopped (SIGSTOP), and that h2 is gone once its rocld is killed.
#   spawn_hosts_test.sh ROCLD SPAWN_HOSTS
set -euo pipefail

me=netns_spawn_hosts
[ $# -eq 2 ] || {
  echo "usage: $0 ROCLD SPAWN_HOSTS" >&2
  exit 2
}
rocld=$1 program=$2
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

work=$(mktemp -d /tmp/rocl-netns-spawn.XXXXXX)
chmod 700 "$work"
cleanup() {
  pkill -CONT -f -- "$work/" 2>/dev/null || true
  pkill -KILL -f -- "$work/" 2>/dev/null || true
  pkill -KILL -f -- "^$program" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"

start_rocld() { # HOST [--spawn]
  ROCL_HOST_NAME=$1 "$hosts" exec "$1" --prefix "$prefix" -- "$rocld" --socket "$work/$1.sock" \
    --secret-file "$work/secret" --peer-port 7948 "${@:2}" >>"$work/rocld-$1.log" 2>&1 &
  for _ in $(seq 100); do
    [ -S "$work/$1.sock" ] && return 0
    sleep 0.05
  done
  fail "rocld of $1 did not start: $(cat "$work/rocld-$1.log")"
}
start_rocld h1 --spawn
start_rocld h2 --spawn
start_rocld h3
wait_for_line "$work/rocld-h1.log" "server 2 at .* joined" || fail "h2's server never joined h1's"
wait_for_line "$work/rocld-h1.log" "server 3 at .* joined" || fail "h3's server never joined h1's"

export ROCL_SECRET_FILE=$work/secret ROCL_TRANSPORTS=inproc,shm,tcp
export SPAWN_HOSTS_STOPPED=$work/stopped SPAWN_HOSTS_KILLED=$work/killed
run() { # HOST MODE OUT
  ROCL_DIRECTORY=unix:$work/$1.sock ROCL_HOST_NAME=$1 \
    timeout 90 "$hosts" exec "$1" --prefix "$prefix" -- "$program" "$2" >"$work/$3" 2>&1
}
run h3 wait waiter.out &
wait_for_line "$work/waiter.out" "waiting" 10 || fail "no waiter: $(cat "$work/waiter.out")"
run h1 check check.out &
checker=$!
wait_for_line "$work/check.out" "ready" 20 || fail "the checker: $(cat "$work/check.out")"
pkill -STOP -f -- "--socket $work/h2.sock" || fail "no rocld of h2 to stop"
touch "$work/stopped"
wait_for_line "$work/check.out" "unreachable after" 20 || fail "checker: $(cat "$work/check.out")"
pkill -CONT -f -- "--socket $work/h2.sock"
pkill -KILL -f -- "--socket $work/h2.sock"
wait_for_line "$work/rocld-h1.log" "server 2 .*dropped" 10 || fail "h1 never dropped h2's server"
touch "$work/killed"
wait "$checker" || fail "the checker: $(cat "$work/check.out")"
cat "$work/check.out"
grep -q "^spawn_hosts: ok" "$work/check.out" || fail "checker: $(cat "$work/check.out")"
echo "$me: ok"
