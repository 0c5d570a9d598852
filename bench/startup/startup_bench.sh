#!/usr/bin/env bash
# startup_bench.sh - how long a job takes to start: from just before the
# launcher runs until rank 0 holds a message from every other rank (the
# first moment the whole job can talk), with 2, 4, 8 and 16 processes on
# this machine, for
#   rocl under roclrun            (startup_rocl)
#   rocl under mpirun.openmpi     (startup_rocl; PMIx, src/bootstrap/)
#   rocl's MPI under mpirun       (startup_mpi_rocl: MPI_Init on rocl, PMIx)
#   Open MPI under mpirun         (startup_mpi.openmpi: Open MPI's MPI_Init)
# in rounds that run each once per process count (the VM's speed drifts),
# median of the rounds in ms, and rocl-under-mpirun / Open MPI per round.
#   bench/startup/startup_bench.sh BUILD [--counts 2,4,8,16] [--rounds N]
set -euo pipefail
[ $# -ge 1 ] || {
  echo "usage: $0 BUILD [--counts 2,4,8,16] [--rounds N]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
shift
counts=2,4,8,16 rounds=5
while [ $# -gt 0 ]; do
  case $1 in
    --counts) counts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
dir=$build/bench/startup
roclrun=$build/tools/roclrun/roclrun
mpirun=(mpirun.openmpi --oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
work=$(mktemp -d /tmp/rocl-startup-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.csv
: >"$rows"
one() { # ROUND SYSTEM N COMMAND...
  local round=$1 system=$2 n=$3
  shift 3
  local out
  out=$(STARTUP_T0=$(date +%s%N) "$@" 2>"$work/err" | sed -n 's/^\(\[[^]]*\] \)\{0,1\}startup,[0-9]*,//p' | head -1) ||
    true
  [ -n "$out" ] || { echo "# $system -n $n failed: $(tail -3 "$work/err" | tr '\n' ' ')"; out=-; }
  echo "$round,$system,$n,$out" >>"$rows"
}
echo "# start-up until every rank has talked to rank 0, ms ($(nproc) cpus; $(date -u +%Y-%m-%dT%H:%MZ))"
for ((r = 1; r <= rounds; ++r)); do
  for n in $(tr ',' ' ' <<<"$counts"); do
    one "$r" roclrun "$n" "$roclrun" -n "$n" "$dir/startup_rocl"
    one "$r" rocl-mpirun "$n" "${mpirun[@]}" -n "$n" "$dir/startup_rocl"
    [ ! -x "$dir/startup_mpi_rocl" ] ||
      one "$r" rocl-mpi-mpirun "$n" "${mpirun[@]}" -n "$n" "$dir/startup_mpi_rocl"
    [ ! -x "$dir/startup_mpi.openmpi" ] ||
      one "$r" ompi-mpirun "$n" "${mpirun[@]}" -n "$n" "$dir/startup_mpi.openmpi"
  done
done
python3 - "$rows" <<'PY'
import statistics, sys
from collections import defaultdict
rows = defaultdict(dict)
for line in open(sys.argv[1]):
    r, system, n, ms = line.strip().split(",")
    if ms != "-":
        rows[(int(n), system)][r] = float(ms)
systems = ["roclrun", "rocl-mpirun", "rocl-mpi-mpirun", "ompi-mpirun"]
counts = sorted({n for n, _ in rows})
print(f"{'processes':>9} " + " ".join(f"{s:>16}" for s in systems) + f" {'rocl/ompi (mpirun)':>20}")
for n in counts:
    cells = []
    for s in systems:
        v = list(rows[(n, s)].values())
        cells.append(f"{statistics.median(v):16.0f}" if v else f"{'-':>16}")
    mine, theirs = rows[(n, "rocl-mpirun")], rows[(n, "ompi-mpirun")]
    ratios = [mine[r] / theirs[r] for r in mine if r in theirs and theirs[r] > 0]
    ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"
    print(f"{n:>9} " + " ".join(cells) + f" {ratio:>20}")
PY
