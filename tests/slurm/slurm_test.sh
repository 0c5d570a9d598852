#!/usr/bin/env bash
# slurm_test.sh - rocl programs under Slurm's srun --mpi=pmix, no roclrun
# (label slurm). Makes a one-node Slurm cluster of this machine for the
# test and removes it after: munged, slurmctld and slurmd from Debian's
# packages (scripts/setup.sh), run as root with a configuration, key,
# state, spool and logs of their own in a private folder, talking over
# 127.0.0.1 on ports of their own (16817, 16818); nothing of the system's
# (/etc/slurm, /etc/munge, services) is used or touched.
#   slurm_test.sh PROGRAM...   (each run as srun --mpi=pmix -n 4 PROGRAM)
# Exits 77 (skipped) without root or without the Slurm and munge daemons.
set -euo pipefail
me=slurm_srun
[ $# -ge 1 ] || {
  echo "usage: $0 PROGRAM..." >&2
  exit 2
}
[ "$(id -u)" -eq 0 ] || {
  echo "$me: skipped: the Slurm daemons of the test run as root" >&2
  exit 77
}
for tool in munged slurmctld slurmd srun; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null || {
    echo "$me: skipped: no $tool (slurm-wlm, munge)" >&2
    exit 77
  }
done

work=$(mktemp -d /tmp/rocl-slurm-test.XXXXXX)
chmod 700 "$work"
mkdir "$work/state" "$work/spool" "$work/log"
stop_daemon() { # PIDFILE
  [ -s "$1" ] || return 0
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  stop_daemon "$work/slurmd.pid"
  stop_daemon "$work/slurmctld.pid"
  stop_daemon "$work/munged.pid"
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "$me: FAILED: $*" >&2
  for f in "$work"/log/*; do
    echo "--- $f" >&2
    tail -20 "$f" >&2
  done
  exit 1
}

head -c 1024 /dev/urandom >"$work/munge.key"
chmod 400 "$work/munge.key"
munged -f -S "$work/munge.sock" --key-file="$work/munge.key" --log-file="$work/log/munged.log" \
  --pid-file="$work/munged.pid" --seed-file="$work/munged.seed" || fail "munged did not start"

host=$(hostname)
cat >"$work/slurm.conf" <<CONF
ClusterName=rocltest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=rocltest Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$work/slurm.conf
srun --mpi=list 2>&1 | grep -q pmix || {
  echo "$me: skipped: this Slurm has no pmix plugin: $(srun --mpi=list 2>&1 | tr '\n' ' ')" >&2
  exit 77
}
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.1
done
sinfo -h -o %T 2>/dev/null | grep -q idle || fail "the node never became idle: $(sinfo 2>&1)"

folders() { find "/tmp/rocl-$(id -u)" -maxdepth 1 -name 'pmix-*' 2>/dev/null | sort; }
folders >"$work/before"
for program in "$@"; do
  name=$(basename "$program")
  ALL_PAIRS_LARGE_MB=8 timeout 300 srun --mpi=pmix -n 4 -t 5 "$program" >"$work/$name.out" 2>&1 ||
    { cat "$work/$name.out" >&2; fail "srun --mpi=pmix -n 4 $name"; }
  tail -3 "$work/$name.out"
  echo "$me: $name ok"
done
folders >"$work/after"
left=$(comm -13 "$work/before" "$work/after")
[ -z "$left" ] || fail "job folders left behind: $left"
echo "$me: ok"
