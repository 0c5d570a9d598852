#!/usr/bin/env bash
# slurm_test.sh - rocl programs under Slurm's srun --mpi=pmix, no roclrun
# (label slurm). Makes a Slurm cluster for the test and removes it after:
# munged, slurmctld and slurmd from Debian's packages (scripts/setup.sh),
# run as root with a configuration, key, state, spool and logs of their own
# in a private folder, on ports of their own (16817, 16818); nothing of the
# system's (/etc/slurm, /etc/munge, services) is used or touched.
#   slurm_test.sh PROGRAM...          one node, this machine (127.0.0.1):
#                                     each run as srun --mpi=pmix -n 4
#   slurm_test.sh --netns PROGRAM...  four nodes, the test hosts h1..h4
#                                     ($ROCL_NETNS_PREFIX, tests/netns):
#                                     slurmctld on h1, a slurmd on each
#                                     (slurmd -N NAME), each run as
#                                     srun --mpi=pmix -N 2 -n 4 from h1
# A slurmd in a test host runs in a mount namespace of its own (ip netns
# exec) with cgroup v1 mounted as on the machine (slurmd needs it) and a
# private tmpfs for its spool and for the PMIx plugin's folders (TmpFS),
# which a real node has to itself.
# Exits 77 (skipped) without root or without the Slurm and munge daemons.
set -euo pipefail
me=slurm_srun
netns=false
if [ "${1:-}" = --netns ]; then
  netns=true
  me=netns_slurm_srun
  shift
fi
[ $# -ge 1 ] || {
  echo "usage: $0 [--netns] PROGRAM..." >&2
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
  for f in "$work"/slurmd*.pid; do stop_daemon "$f"; done
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
controller=127.0.0.1 nodes="NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN"
on_h1=()
if $netns; then
  prefix=${ROCL_NETNS_PREFIX:-rocl}
  for i in 1 2 3 4; do
    ip netns list 2>/dev/null | grep -E "^$prefix-h$i( |$)" >/dev/null ||
      fail "host $prefix-h$i is missing: the fixture runs 'hosts.sh up 4 --nets 2' first"
  done
  address() { ip netns exec "$prefix-$1" ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1; }
  controller=$(address h1)
  nodes=""
  for i in 1 2 3 4; do
    nodes+="NodeName=h$i NodeAddr=$(address "h$i") CPUs=2 State=UNKNOWN"$'\n'
  done
  on_h1=(ip netns exec "$prefix-h1")
fi
cat >"$work/slurm.conf" <<CONF
ClusterName=rocltest
SlurmctldHost=$host($controller)
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
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd-%n.log
TmpFS=$work/spool
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
$nodes
PartitionName=rocltest Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$work/slurm.conf
srun --mpi=list 2>&1 | grep -q pmix || {
  echo "$me: skipped: this Slurm has no pmix plugin: $(srun --mpi=list 2>&1 | tr '\n' ' ')" >&2
  exit 77
}
cat >"$work/slurmd-in-host.sh" <<'SH'
#!/bin/sh
# In a test host's own mount namespace: cgroup v1 as on the machine, a
# private spool and tmp, then the node's slurmd.  slurmd-in-host.sh WORK NODE
set -e
mount -t tmpfs none /sys/fs/cgroup
for c in cpu cpuacct cpuset memory devices freezer; do
  mkdir -p "/sys/fs/cgroup/$c"
  mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"
done
mkdir -p /sys/fs/cgroup/systemd
mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
mount -t tmpfs none "$1/spool"
mkdir -p "$1/spool/$2"
exec slurmd -f "$SLURM_CONF" -N "$2"
SH
chmod +x "$work/slurmd-in-host.sh"
"${on_h1[@]}" slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
if $netns; then
  for i in 1 2 3 4; do
    ip netns exec "$prefix-h$i" "$work/slurmd-in-host.sh" "$work" "h$i" ||
      fail "the slurmd of h$i did not start"
  done
  want=4
else
  mkdir -p "$work/spool/$host"
  slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
  want=1
fi
idle() { "${on_h1[@]}" sinfo -h -N -o %T 2>/dev/null | grep -c idle || true; }
for _ in $(seq 150); do
  [ "$(idle)" -ge "$want" ] && break
  sleep 0.1
done
[ "$(idle)" -ge "$want" ] || fail "$want nodes never became idle: $("${on_h1[@]}" sinfo 2>&1)"

folders() { find "/tmp/rocl-$(id -u)" -maxdepth 1 -name 'pmix-*' 2>/dev/null | sort; }
folders >"$work/before"
for program in "$@"; do
  name=$(basename "$program")
  layout=(-n 4)
  $netns && layout=(-N 2 -n 4)
  ALL_PAIRS_LARGE_MB=8 timeout 300 "${on_h1[@]}" srun --mpi=pmix "${layout[@]}" -t 5 "$program" \
    >"$work/$name.out" 2>&1 || {
    cat "$work/$name.out" >&2
    fail "srun --mpi=pmix ${layout[*]} $name"
  }
  tail -3 "$work/$name.out"
  echo "$me: $name ok"
done
folders >"$work/after"
left=$(comm -13 "$work/before" "$work/after")
[ -z "$left" ] || fail "job folders left behind: $left"
echo "$me: ok"
