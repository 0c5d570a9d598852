# shellcheck shell=bash disable=SC2034,SC2154 # hosts is the caller's, me set by it
# test_lib.sh - what the netns tests share; sourced after `me` is set.
# Sets here, hosts (hosts.sh) and prefix ($ROCL_NETNS_PREFIX, exported);
# defines fail; exits 77 (skipped) without root; fails unless the fixture's
# hosts h1..h4 exist.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
hosts=$here/hosts.sh
prefix=${ROCL_NETNS_PREFIX:-rocl}
export ROCL_NETNS_PREFIX=$prefix
fail() {
  echo "$me: FAILED: $*" >&2
  exit 1
}
if [ "$(id -u)" -ne 0 ]; then
  echo "$me: skipped: network namespaces need root" >&2
  exit 77
fi
for i in 1 2 3 4; do
  ip netns list 2>/dev/null | grep -E "^$prefix-h$i( |$)" >/dev/null ||
    fail "host $prefix-h$i is missing: the fixture runs 'hosts.sh up 4 --nets 2' first"
done
# wait_for_line FILE PATTERN [SECONDS]: waits (default 5 s) until a line of
# FILE matches the grep PATTERN; false if none did in time.
wait_for_line() {
  local tries=$((${3:-5} * 10))
  for _ in $(seq "$tries"); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  grep -q -- "$2" "$1" 2>/dev/null
}
