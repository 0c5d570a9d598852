#!/usr/bin/env bash
# ctest other_user_access: another user of the machine (nobody) cannot read
# a running job's secret, connect to its directory socket, open its shared
# memory (the shm inboxes and buffer pools, memfds reachable only as
# /proc/PID/fd/N; the cpu board in /dev/shm) or read its memory; root, the
# job's user, can (so that the paths are known to be the right ones).
#   other_user_test.sh ROCLRUN HOLD TRY
#   (HOLD: other_user_hold, a process of the job; TRY: other_user_try)
set -euo pipefail

me=other_user_test
[ $# -eq 3 ] || {
  echo "usage: $0 ROCLRUN HOLD TRY" >&2
  exit 2
}
roclrun=$1 hold=$2 try=$3

skip() {
  echo "$me: skipped: $*" >&2
  exit 77
}
fail() {
  echo "$me: FAILED: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || skip "switching to another user needs root"
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
other_uid=$(id -u nobody 2>/dev/null) || skip "no user nobody"
other_gid=$(id -g nobody)

work=$(mktemp -d)
chmod 755 "$work"
job_pid=""
cleanup() {
  exec 3>&- 2>/dev/null || true
  if [ -n "$job_pid" ]; then kill "$job_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The other user runs a copy of TRY it can read.
cp "$try" "$work/try"
chmod 755 "$work/try"

# A job of one process, holding on until its stdin closes.
mkfifo "$work/in"
"$roclrun" --timeout 100 -n 1 "$hold" <"$work/in" >"$work/out" 2>&1 &
job_pid=$!
exec 3>"$work/in"
pid=""
for _ in $(seq 1 200); do
  pid=$(sed -n 's/.*ready pid=\([0-9]*\).*/\1/p' "$work/out")
  [ -n "$pid" ] && break
  sleep 0.05
done
[ -n "$pid" ] || fail "the job did not start: $(cat "$work/out")"

# What the job has, as root sees it.
env_of() { tr '\0' '\n' <"/proc/$pid/environ" | sed -n "s/^$1=//p"; }
secret=$(env_of ROCL_SECRET_FILE)
directory=$(env_of ROCL_DIRECTORY)
directory=${directory#unix:}
[ -f "$secret" ] || fail "no secret file in the job's environment ('$secret')"
[ -S "$directory" ] || fail "no directory socket in the job's environment ('$directory')"
memfds=()
for fd in /proc/"$pid"/fd/*; do
  case $(readlink "$fd") in
  /memfd:rocl-shm* | /memfd:rocl-pool*) memfds+=("$fd") ;;
  esac
done
[ "${#memfds[@]}" -ge 2 ] || fail "expected the process's shm inbox and buffer pool memfds, found ${#memfds[@]}"
boards=(/dev/shm/rocl-cpus-"$(id -u)"-*)
[ -e "${boards[0]}" ] || fail "no cpu board in /dev/shm"
address=$(awk 'NR == 1 { split($1, r, "-"); print r[1] }' "/proc/$pid/maps")

paths=("$secret" "$directory" "${memfds[@]}" "${boards[@]}")
echo "$me: job process $pid: ${#paths[@]} paths and its memory at $address"

"$try" allowed "$pid" "$address" "${paths[@]}" >"$work/root.txt" ||
  fail "root could not use the job's own files: $(cat "$work/root.txt")"
rc=0
setpriv --reuid="$other_uid" --regid="$other_gid" --clear-groups \
  "$work/try" denied "$pid" "$address" "${paths[@]}" >"$work/other.txt" 2>&1 || rc=$?
cat "$work/other.txt"
[ "$rc" -eq 0 ] || fail "user nobody reached part of the job (see the UNEXPECTED lines)"

exec 3>&-
wait "$job_pid" || fail "the job failed: $(cat "$work/out")"
job_pid=""
echo "$me: ok: nobody reached none of ${#paths[@]} paths nor the memory; root reached all"
