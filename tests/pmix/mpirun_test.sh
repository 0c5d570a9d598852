#!/usr/bin/env bash
# mpirun_test.sh - rocl programs started by Open MPI's mpirun (a PMIx
# server), no roclrun: they take rank, size and the host layout from PMIx,
# start their own directory servers and talk (src/bootstrap/).
#   mpirun_test.sh [--hosts] PROGRAM [ARG...]
# Without --hosts: 4 processes on this machine. With --hosts: 2 processes
# on each of test hosts h1 and h2 (the netns fixture's, $ROCL_NETNS_PREFIX),
# mpirun starting its daemons there through `ip netns exec`. Exits 77
# (skipped) without mpirun.openmpi, or for --hosts without root.
set -euo pipefail
me=pmix_mpirun
command -v mpirun.openmpi >/dev/null || {
  echo "$me: skipped: no mpirun.openmpi (openmpi-bin)" >&2
  exit 77
}
across=""
if [ "${1:-}" = --hosts ]; then
  across=1
  shift
fi
[ $# -ge 1 ] || {
  echo "usage: $0 [--hosts] PROGRAM [ARG...]" >&2
  exit 2
}
root_args=()
[ "$(id -u)" -ne 0 ] || root_args=(--allow-run-as-root)
work=$(mktemp -d /tmp/rocl-pmix-test.XXXXXX)
folders() { find "/tmp/rocl-$(id -u)" -maxdepth 1 -name 'pmix-*' 2>/dev/null | sort; }
# What a crashed job leaves (its processes' secret files name dead pids),
# which the next job's first process on this host removes, and a live
# job's folder (this script's pid), which it keeps.
user_dir=/tmp/rocl-$(id -u)
mkdir -p -m 700 "$user_dir"
crashed=$user_dir/pmix-rocl-test-crashed-$$ live=$user_dir/pmix-rocl-test-live-$$
dead_pid=$(sh -c 'echo $$')
mkdir -m 700 "$crashed" "$live"
touch "$crashed/secret.0.$dead_pid" "$crashed/secret.1.$dead_pid" "$live/secret.0.$$"
trap 'rm -rf "$work" "$crashed" "$live"' EXIT
folders >"$work/before"
if [ -z "$across" ]; then
  timeout 300 mpirun.openmpi "${root_args[@]}" --oversubscribe --bind-to none -n 4 \
    -x ALL_PAIRS_LARGE_MB=8 "$@" >"$work/out" 2>&1 || {
    echo "$me: FAILED: mpirun -n 4 $*:" >&2
    cat "$work/out" >&2
    exit 1
  }
else
  netns_dir=$(cd "$(dirname "$0")/../netns" && pwd)
  me=pmix_mpirun_hosts
  # shellcheck source=tests/netns/test_lib.sh
  source "$netns_dir/test_lib.sh"
  hosts=$netns_dir/hosts.sh
  cat >"$work/netns-rsh" <<RSH
#!/bin/sh
host=\$1
shift
exec ip netns exec $prefix-\$host sh -c "\$*"
RSH
  chmod +x "$work/netns-rsh"
  timeout 300 "$hosts" exec h1 --prefix "$prefix" -- mpirun.openmpi "${root_args[@]}" \
    --host h1:2,h2:2 --bind-to none --mca plm_rsh_agent "$work/netns-rsh" \
    --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    -n 4 -x ALL_PAIRS_LARGE_MB=8 "$@" >"$work/out" 2>&1 || {
    echo "$me: FAILED: mpirun --host h1:2,h2:2 -n 4 $*:" >&2
    cat "$work/out" >&2
    exit 1
  }
  # Both hosts' servers met.
  grep -q "server 2 at 10.201.0.2:[0-9]* joined" "$work/out" ||
    { cat "$work/out" >&2; echo "$me: FAILED: h2's directory server never joined h1's" >&2; exit 1; }
fi
cat "$work/out"
# The job's folder is gone (the pmix tests run one at a time).
folders >"$work/after"
left=$(comm -13 "$work/before" "$work/after")
[ -z "$left" ] || { echo "$me: FAILED: job folder left behind: $left" >&2; exit 1; }
[ ! -e "$crashed" ] || { echo "$me: FAILED: a crashed job's folder was kept: $crashed" >&2; exit 1; }
[ -e "$live/secret.0.$$" ] || { echo "$me: FAILED: a live job's folder was removed" >&2; exit 1; }
echo "$me: ok"
