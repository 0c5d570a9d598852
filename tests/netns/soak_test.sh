#!/usr/bin/env bash
# ctests netns_soak and netns_soak_loaded: the soak program (soak.cpp) on the
# 4 test hosts of the fixture netns_hosts, 2 processes per host, under
# roclrun --launcher netns (docs/testing.md, "Soak"). The program checks
# every message, the end counts, its resident memory, and its file
# descriptors and threads after rocl_exit; this script checks the job as a
# whole: every rank said done without a failure, as many messages and bytes
# received as sent and as asked for, every rank reached others over shm and
# over tcp, and nothing left behind: no process
# in the hosts, no job folder, no new /dev/shm entry that no process holds
# (the node's cpu board, /dev/shm/rocl-cpus-*, is kept by design).
#   soak_test.sh [--hogs K] [--timeout S] ROCLRUN SOAK [SOAK ARGS...]
# --hogs K: K busy loops per cpu beside the job (nice 0, the job's own
# priority), stopped when it ends. --timeout: roclrun's (default 300 s).
# SOAK_KEEP=1 keeps the output (/tmp/rocl-netns-soak.*).
set -euo pipefail

hogs=0 timeout=300
while [ $# -gt 0 ]; do
  case $1 in
  --hogs) hogs=$2 && shift 2 ;;
  --timeout) timeout=$2 && shift 2 ;;
  *) break ;;
  esac
done
me=netns_soak
[ "$hogs" -eq 0 ] || me=netns_soak_loaded
[ $# -ge 2 ] || {
  echo "usage: $0 [--hogs K] [--timeout S] ROCLRUN SOAK [SOAK ARGS...]" >&2
  exit 2
}
roclrun=$1 soak=$2
shift 2
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
case ${ROCL_TRANSPORTS:-auto} in
auto | *shm*tcp* | *tcp*shm*) ;;
*) fail "ROCL_TRANSPORTS=$ROCL_TRANSPORTS: the soak wants shm within a host and tcp between" ;;
esac

work=$(mktemp -d /tmp/rocl-netns-soak.XXXXXX)
hog_pids=()
job=""
cleanup() {
  local status=$?
  [ ${#hog_pids[@]} -eq 0 ] || kill "${hog_pids[@]}" 2>/dev/null || true
  [ -z "$job" ] || kill -TERM "$job" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$status" -ne 0 ] && [ -f "$work/out" ]; then
    grep -v ': rss [0-9]* s:' "$work/out" | tail -n 60 >&2
  fi
  [ -n "${SOAK_KEEP:-}" ] || rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

ls /dev/shm >"$work/shm.before"
for _ in $(seq $((hogs * $(nproc)))); do
  nice -n 0 sh -c 'while :; do :; done' &
  hog_pids+=($!)
done
[ "$hogs" -eq 0 ] || echo "$me: $((hogs * $(nproc))) busy loops on $(nproc) cpus"

start=$(date +%s)
"$roclrun" --launcher netns --timeout "$timeout" --hosts h1,h2,h3,h4 -n 8 "$soak" "$@" \
  >"$work/out" 2>&1 &
job=$!
rc=0
wait "$job" || rc=$?
pid=$job job=""
took=$(($(date +%s) - start))
if [ ${#hog_pids[@]} -gt 0 ]; then
  kill "${hog_pids[@]}"
  wait "${hog_pids[@]}" 2>/dev/null || true
  hog_pids=()
fi
[ "$rc" -eq 0 ] || fail "the job failed with status $rc after $took s"

# ---- the job's figures --------------------------------------------------
asked=$(sed -n 's/^\[h1:0\] soak: .* x .* threads, \([0-9]*\) messages.*/\1/p' "$work/out")
[ -n "$asked" ] || fail "rank 0 did not say how many messages"
grep 'soak rank [0-9]*: done:' "$work/out" | sed 's/.*soak rank \([0-9]*\): done: /rank=\1 /' \
  >"$work/done"
[ "$(wc -l <"$work/done")" -eq 8 ] || fail "$(wc -l <"$work/done") of 8 ranks said done"
awk -v me="$me" -v asked="$asked" -v took="$took" '
  function field(name,   i, kv) {
    for (i = 1; i <= NF; ++i) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
  }
  {
    sent += field("sent"); received += field("received")
    sent_bytes += field("sent_bytes"); received_bytes += field("received_bytes")
    if (field("seconds") > seconds) seconds = field("seconds")
    split(field("fds"), f, "/"); split(field("threads"), t, "/")
    if (f[1] != f[2] || t[1] != t[2] || field("failures") != 0) {
      printf "%s: rank %s: fds %s, threads %s, failures %s\n", me, field("rank"), field("fds"),
        field("threads"), field("failures"); bad = 1
    }
    if (field("shm_pools") < 1 || field("tcp") < 1) {
      printf "%s: rank %s mapped %s pools of other processes and had %s tcp connections: not shm and tcp both\n",
        me, field("rank"), field("shm_pools"), field("tcp"); bad = 1
    }
    printf "%s: rank %s: rss %.1f MiB before rocl_init, %.1f at the start of the traffic, %.1f at its peak, %.1f at its end, %.1f after rocl_exit; fds %s, threads %s; shm to %s, tcp connections %s\n",
      me, field("rank"), field("rss_start_kib") / 1024, field("rss_traffic_kib") / 1024,
      field("rss_peak_kib") / 1024, field("rss_traffic_end_kib") / 1024,
      field("rss_exit_kib") / 1024, field("fds"), field("threads"), field("shm_pools"),
      field("tcp")
  }
  END {
    printf "%s: %.0f messages sent, %.0f received, %.1f MB each way, traffic %.1f s, job %d s\n",
      me, sent, received, sent_bytes / 1e6, seconds, took
    if (sent != asked || received != asked || sent_bytes != received_bytes) {
      printf "%s: %.0f messages asked for, %.0f sent, %.0f received; %.0f bytes sent, %.0f received\n",
        me, asked, sent, received, sent_bytes, received_bytes; bad = 1
    }
    exit bad
  }' "$work/done" || fail "the job's counts do not add up"
grep -E 'soak rank [0-9]+: (memory not judged|resident memory outside|the pool.s reserved)' \
  "$work/out" | sed "s/^/$me: /" || true

# ---- nothing left behind ------------------------------------------------
hosts_empty() {
  local h
  for h in 1 2 3 4; do [ -z "$(ip netns pids "$prefix-h$h")" ] || return 1; done
}
for _ in $(seq 50); do
  if hosts_empty; then break; fi
  sleep 0.1
done
hosts_empty || fail "processes left in the hosts: $(for h in 1 2 3 4; do
  ip netns pids "$prefix-h$h" | xargs -r ps -o pid=,args= -p
done)"
if ls -d /tmp/rocl-"$(id -u)"/job-"$pid"-* 2>/dev/null; then fail "job folders left behind"; fi
# A new entry of /dev/shm that no process has open or mapped is the job's
# leftover (one that a process holds belongs to something still running).
held() {
  local f
  for f in /proc/[0-9]*/maps; do grep -qF "/dev/shm/$1" "$f" 2>/dev/null && return 0; done
  for f in /proc/[0-9]*/fd/*; do [ "$(readlink "$f" 2>/dev/null)" = "/dev/shm/$1" ] && return 0; done
  return 1
}
ls /dev/shm >"$work/shm.after"
left=""
for name in $(comm -13 "$work/shm.before" "$work/shm.after"); do
  case $name in rocl-cpus-*) continue ;; esac
  held "$name" || left="$left $name"
done
[ -z "$left" ] || fail "left in /dev/shm:$left"
echo "$me: nothing left behind (processes, job folders, /dev/shm)"
echo "$me: ok"
