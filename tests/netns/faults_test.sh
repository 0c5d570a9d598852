#!/usr/bin/env bash
# faults_test.sh - ctest netns_fault_<case>: a fault across the test hosts of
# the fixture netns_hosts and what the program sees (faults.c says what each
# mode asserts). A rocld per host, joined by broadcast; the program's
# processes started by hand in the hosts (under roclrun a killed rank or
# directory server ends the whole job, which the rocld case checks too).
# Before each fault the script writes its moment into a file of the work
# folder (`date +%s%3N`); the programs print "detected in N ms" against it
# and fail beyond the documented bound plus FAULTS_SLACK_MS (2000).
#   kill            rank 2 (h3) killed -9 while ranks 0 (h1), 1 (h2) and it
#                   stream to each other
#   rocld           h2's rocld killed -9 while ranks 0 (h1) and 1 (h2)
#                   stream, rank 2 (h3) watching; rank 0 exits; h2's rocld
#                   restarted, rank 3 started on h2; then under roclrun: h2's
#                   directory agent killed -9 ends the job with a sentence
#                   naming it
#   link_delivered  h1's eth0 down for 3 s with ROCL_TCP_USER_TIMEOUT_MS=10000
#   link_error      h1's eth0 down for 5 s with ROCL_TCP_USER_TIMEOUT_MS=1000
#   link_lossless   the same, and every message whose send returned ROCL_OK
#                   must arrive (it does not: the test is disabled)
#                   (in the link cases the rocld federation runs on net 2: eth1)
#   stall           rank 1 (h2, ROCL_POOL_MAX=64M) does not receive what rank
#                   0 (h1) sends, then does, then is killed while rank 0 is
#                   blocked
#   big             the sender (h1) of a 256 MiB rendezvous message, of the
#                   same into the receive's memory and of a 48 MiB eager one
#                   killed -9 once 32 MB (16 MB) reached h2, h1's eth0 at
#                   200mbit; then a whole one
# FAULTS_HOGS=K runs K busy loops per cpu beside the case (the overloaded
# machine: same assertions, same bounds), stopped when it ends.
# FAULTS_KEEP=1 keeps the work folder (/tmp/rocl-netns-faults.*: the
# outputs, the rocld logs, the marks).
#   faults_test.sh CASE ROCLD FAULTS [ROCLRUN]
set -euo pipefail

[ $# -ge 3 ] || {
  echo "usage: $0 CASE ROCLD FAULTS [ROCLRUN]" >&2
  exit 2
}
case_name=$1 rocld=$2 faults=$3 roclrun=${4:-}
hogs=${FAULTS_HOGS:-0}
[[ $hogs =~ ^[0-9]+$ ]] || {
  echo "$0: FAULTS_HOGS must be a number of busy loops per cpu, not '$hogs'" >&2
  exit 2
}
me=netns_fault_$case_name
[ "$hogs" -eq 0 ] || me=${me}_loaded
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

readonly peer_port=7948
work=$(mktemp -d /tmp/rocl-netns-faults.XXXXXX)
chmod 700 "$work"
pids=()
hog_pids=()
link_down=""
saved_qdisc=""
cleanup() {
  local status=$? pid
  for pid in "${hog_pids[@]}" "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$link_down" ]; then ip -n "$prefix-$link_down" link set eth0 up || status=1; fi
  if [ -n "$saved_qdisc" ]; then restore_qdisc || status=1; fi
  if [ "$status" -ne 0 ]; then
    for f in "$work"/*.log "$work"/*.out; do
      [ -e "$f" ] || continue
      echo "---- $(basename "$f")" >&2
      tail -n 40 "$f" >&2
    done
  fi
  [ -n "${FAULTS_KEEP:-}" ] || rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
chmod 600 "$work/secret"
export ROCL_SECRET_FILE=$work/secret FAULTS_DIR=$work
export ROCL_TRANSPORTS=inproc,shm,tcp ROCL_TCP_BIND=auto

# lines FILE PATTERN: how many lines of FILE match the grep PATTERN.
lines() {
  local n
  n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
  echo "${n:-0}"
}

# start_rocld HOST [ARG...]: HOST's rocld in the background, until it says
# it serves (a socket file alone may be a killed server's); its pid in
# rocld_pid[HOST].
declare -A rocld_pid
start_rocld() {
  local h=$1 served
  shift
  served=$(lines "$work/rocld-$h.log" "serving the directory")
  "$hosts" exec "$h" --prefix "$prefix" -- "$rocld" --socket "$work/$h.sock" \
    --secret-file "$work/secret" --peer-port "$peer_port" "$@" >>"$work/rocld-$h.log" 2>&1 &
  rocld_pid[$h]=$!
  pids+=($!)
  for _ in $(seq 200); do
    [ "$(lines "$work/rocld-$h.log" "serving the directory")" -gt "$served" ] && return 0
    sleep 0.05
  done
  fail "rocld of $h did not start: $(cat "$work/rocld-$h.log")"
}

# joined HOST N: HOST's rocld has heard N other servers join.
joined() {
  local tries
  for tries in $(seq 100); do
    [ "$(lines "$work/rocld-$1.log" "joined")" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "the rocld of $1 did not hear $2 other servers: $(cat "$work/rocld-$1.log")"
}

# run RANK HOST MODE [VAR=VALUE...]: the program in HOST in the background,
# output to $work/rRANK.out; its pid in rank_pid[RANK].
declare -A rank_pid
run() {
  local rank=$1 h=$2 mode=$3
  shift 3
  env ROCL_RANK="$rank" ROCL_DIRECTORY="unix:$work/$h.sock" ROCL_HOST_NAME="$h" "$@" \
    "$hosts" exec "$h" --prefix "$prefix" -- "$faults" "$mode" >"$work/r$rank.out" 2>&1 &
  rank_pid[$rank]=$!
  pids+=($!)
}

# expect RANK PATTERN [SECONDS]: a line of rank RANK's output matches.
expect() {
  wait_for_line "$work/r$1.out" "$2" "${3:-30}" ||
    fail "rank $1 did not say '$2': $(tail -n 20 "$work/r$1.out")"
}

# finish RANK: waits for rank RANK, which must exit 0.
finish() {
  wait "${rank_pid[$1]}" || fail "rank $1 failed: $(tail -n 20 "$work/r$1.out")"
}

# kill_now PID: SIGKILL, and reaped at once (bash says nothing of it then).
kill_now() {
  kill -KILL "$1"
  wait "$1" 2>/dev/null || true
}

mark() {
  date +%s%3N >"$work/$1.tmp"
  mv "$work/$1.tmp" "$work/$1"
}

# The "detected in" figures of every rank's output, for the log.
report() {
  grep -h "detected in\|ok:\|resumed\|blocked\|longest pause\|rocl_exit returned" "$work"/r*.out |
    sed "s/^/$me: /" || true
}

case_kill() {
  for h in h1 h2 h3; do start_rocld "$h"; done
  joined h1 2
  run 0 h1 kill
  run 1 h2 kill
  run 2 h3 kill
  for r in 0 1 2; do expect "$r" "streaming"; done
  mark killed
  kill_now "${rank_pid[2]}"
  finish 0
  finish 1
}

case_rocld() {
  for h in h1 h2 h3; do start_rocld "$h"; done
  joined h1 2
  run 0 h1 rocld
  run 1 h2 rocld
  run 2 h3 rocld
  expect 0 "streaming"
  expect 1 "streaming"
  expect 2 "watching"
  mark killed
  kill_now "${rocld_pid[h2]}"
  finish 0
  mark r0-exited
  finish 1
  expect 2 "rank 1 gone from h3's queries"
  # The same socket, the same server id (from its address): a new life,
  # heard by h1's server as a second join.
  local rejoin="server 2 at .* \(joined\|restarted\)" joins
  joins=$(lines "$work/rocld-h1.log" "$rejoin")
  start_rocld h2
  for _ in $(seq 100); do
    [ "$(lines "$work/rocld-h1.log" "$rejoin")" -gt "$joins" ] && break
    sleep 0.1
  done
  [ "$(lines "$work/rocld-h1.log" "$rejoin")" -gt "$joins" ] ||
    fail "h2's restarted rocld did not join h1's: $(cat "$work/rocld-h1.log")"
  mark restarted
  run 3 h2 rocld
  finish 2
  finish 3

  # Under roclrun the host's directory server is the job's own: its death
  # ends the job, with a sentence naming it.
  [ -n "$roclrun" ] || return 0
  "$roclrun" --launcher netns --hosts h1,h2 -n 2 --timeout 60 sleep 50 >"$work/roclrun.out" 2>&1 &
  local run_pid=$! agent=""
  pids+=("$run_pid")
  for _ in $(seq 100); do
    agent=$(pgrep -f -- "--agent directory --job job-$run_pid-[^ ]* --host h2 " || true)
    [ -n "$agent" ] && [ "$(pgrep -f -- "--agent rank --job job-$run_pid-" | wc -l)" -eq 2 ] && break
    sleep 0.1
  done
  [ -n "$agent" ] || fail "no directory agent of roclrun on h2"
  sleep 1
  local t0 rc=0
  t0=$(date +%s%3N)
  kill -KILL "$agent"  # not our child: roclrun reaps it
  wait "$run_pid" || rc=$?
  local took=$(($(date +%s%3N) - t0))
  cat "$work/roclrun.out"
  [ "$rc" -eq 137 ] || fail "roclrun exited $rc, not 137 (128 + SIGKILL)"
  grep -q "h2:dir (pid $agent) .*before the ranks were done; stopping them" "$work/roclrun.out" ||
    fail "roclrun did not name h2's directory server"
  echo "$me: roclrun: the job ended $took ms after h2's directory agent was killed (bound 5000 ms)"
  [ "$took" -le 5000 ] || fail "roclrun took $took ms to end the job"
}

# link DOWN_SECONDS TIMEOUT_MS EXPECT [VAR=VALUE...]
link() {
  # The directory's federation on net 2, so that only the data path breaks.
  for h in h1 h2; do start_rocld "$h" --bind eth1; done
  joined h1 1
  local env=(ROCL_TCP_BIND=eth0 ROCL_TCP_USER_TIMEOUT_MS="$2" FAULTS_EXPECT="$3" "${@:4}")
  run 0 h1 link "${env[@]}"
  run 1 h2 link "${env[@]}"
  expect 0 "streaming"
  expect 1 "streaming"
  mark down
  link_down=h1
  ip -n "$prefix-h1" link set eth0 down
  sleep "$1"
  ip -n "$prefix-h1" link set eth0 up
  link_down=""
  mark up
  finish 0
  finish 1
}

case_link_delivered() { link 3 10000 delivered; }
case_link_error() { link 5 1000 error; }
case_link_lossless() { link 5 1000 error FAULTS_LOSSLESS=1; }

case_stall() {
  for h in h1 h2; do start_rocld "$h"; done
  joined h1 1
  run 0 h1 stall
  run 1 h2 stall ROCL_POOL_MAX=64M
  expect 0 "blocked in rocl_send" 60
  mark drain
  expect 0 "blocked again" 60
  mark killed
  kill_now "${rank_pid[1]}"
  finish 0
}

root_qdisc() { tc -n "$prefix-h1" qdisc show dev eth0 root | head -n 1; }
restore_qdisc() {
  if [[ $saved_qdisc =~ ^qdisc\ tbf\ .*\ rate\ ([^ ]+)\ burst\ ([^ ]+)\ lat\ ([^ ]+) ]]; then
    tc -n "$prefix-h1" qdisc replace dev eth0 root tbf rate "${BASH_REMATCH[1]}" \
      burst "${BASH_REMATCH[2]}" latency "${BASH_REMATCH[3]}"
  elif [[ $(root_qdisc) =~ ^qdisc\ tbf ]]; then
    tc -n "$prefix-h1" qdisc del dev eth0 root
  fi
}
rx_bytes() { ip netns exec "$prefix-h2" cat /sys/class/net/eth0/statistics/rx_bytes; }

case_big() {
  saved_qdisc=$(root_qdisc)
  [ -n "$saved_qdisc" ] || fail "cannot read h1's qdisc"
  tc -n "$prefix-h1" qdisc replace dev eth0 root tbf rate 200mbit burst 100000 latency 50ms
  for h in h1 h2; do start_rocld "$h"; done
  joined h1 1
  export ROCL_TRANSPORTS=tcp
  run 1 h2 big
  local phase=0 name mb before
  for name in rndv into eager whole; do
    expect 1 "waiting for the $name sender"
    before=$(rx_bytes)
    run $((10 + phase)) h1 big
    expect $((10 + phase)) "sent"
    if [ "$name" != whole ]; then
      mb=32
      [ "$name" != eager ] || mb=16
      for _ in $(seq 300); do
        [ $(($(rx_bytes) - before)) -ge $((mb * 1000000)) ] && break
        sleep 0.05
      done
      [ $(($(rx_bytes) - before)) -ge $((mb * 1000000)) ] || fail "$name: $mb MB never reached h2"
      mark "killed-$name"
      kill_now "${rank_pid[$((10 + phase))]}"
      echo "$me: $name: the sender killed after $((($(rx_bytes) - before) / 1000000)) MB reached h2"
    else
      finish $((10 + phase))
    fi
    phase=$((phase + 1))
  done
  finish 1
}

for _ in $(seq $((hogs * $(nproc)))); do
  sh -c 'while :; do :; done' &
  hog_pids+=($!)
done
[ "$hogs" -eq 0 ] || echo "$me: $((hogs * $(nproc))) busy loops on $(nproc) cpus"
"case_$case_name"
report
echo "$me: ok"
