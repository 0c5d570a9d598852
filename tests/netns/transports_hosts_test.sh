#!/usr/bin/env bash
# ctest netns_hosts_<transports>: programs across the 4 test hosts of the
# fixture netns_hosts over the transports given, one process per host, so
# that every message crosses the hosts' network: all_pairs (every thread of
# every process to every other, order and content checked) and rocl's MPI
# conformance programs (found by their ROCL_JOB_ID on every host).
#   transports_hosts_test.sh ROCLRUN TRANSPORTS PROGRAM...
# Over ucx, UCX may use tcp alone (UCX_TLS=tcp,self): shared memory would
# otherwise join the hosts, which share this machine's memory.
set -euo pipefail
me=transports_hosts_test
# shellcheck source=tests/netns/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
[ $# -ge 3 ] || fail "usage: $0 ROCLRUN TRANSPORTS PROGRAM..."
roclrun=$1 transports=$2
shift 2
export ROCL_TRANSPORTS=$transports
case $transports in *ucx*) export UCX_TLS=tcp,self ;; esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for program in "$@"; do
  name=$(basename "$program")
  if ! timeout 150 "$roclrun" --launcher netns --timeout 120 --hosts h1,h2,h3,h4 -n 4 \
    "$program" >"$out" 2>&1; then
    cat "$out" >&2
    fail "$name over $transports across 4 hosts failed"
  fi
  grep -E '^\[h1:0\] .*(: ok|: OK)' "$out" >/dev/null || {
    cat "$out" >&2
    fail "$name over $transports: rank 0 on h1 did not say ok"
  }
  echo "$me: $name over $transports across 4 hosts: ok"
done
