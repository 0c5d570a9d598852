#!/usr/bin/env bash
# ab-builds.sh - two builds of rocl alternated, run by run, on one benchmark.
#
# Usage: scripts/ab-builds.sh [--latency] [--mpi] [--transport shm|tcp]
#                             [--rounds N] [--sizes LIST] [--values]
#                             OLD_BUILD NEW_BUILD
#
# On this kind of VM a timing moves by 20-50 % between minutes, so two
# builds measured one after the other say little. This runs `rocl-bench
# bandwidth` (or `latency` with --latency) of OLD_BUILD, then of
# NEW_BUILD, ROUNDS times (default 12), each run 3 repetitions of 0.1 s
# per size (default sizes 1,16,64,256), and prints per size the median of
# each build's runs, their ratio (NEW / OLD) and in how many of the pairs
# NEW was better (more messages per second; a shorter one-way time). A
# build is a build directory (tools/rocl-bench/rocl-bench and
# tools/roclrun/roclrun under it), e.g. a Release build of an older commit:
#   git worktree add /tmp/old HEAD~1 && scripts/build.sh ... (or cmake -B)
# With --mpi, rocl's MPI is measured instead: the MPI anchors' program built
# against it (tools/rocl-bench/compare/anchors/mpi_pingpong.rocl, the loops
# of rocl-bench compare's rocl-mpi rows), roclrun --bind-to core -n 2.
# With --values, every run's figure is printed too, sorted, per build: the
# VM's slow phases make the distributions bimodal, and a median may fall
# in either mode.
# Exits 1 for a bad command line or a missing binary.
set -euo pipefail

mode=bandwidth
mpi=0
transport=shm
rounds=12
sizes=1,16,64,256
values=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --latency) mode=latency; shift ;;
    --mpi) mpi=1; shift ;;
    --transport) transport="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --values) values=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "ab-builds.sh: unknown option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
if [[ $# -ne 2 ]]; then
  echo "ab-builds.sh: need OLD_BUILD and NEW_BUILD (see --help)" >&2
  exit 1
fi
builds=("$1" "$2")
bench=tools/rocl-bench/rocl-bench
[[ $mpi == 1 ]] && bench=tools/rocl-bench/compare/anchors/mpi_pingpong.rocl
for b in "${builds[@]}"; do
  for tool in "$bench" tools/roclrun/roclrun; do
    if [[ ! -x "$b/$tool" ]]; then
      echo "ab-builds.sh: $b/$tool is missing (build it first)" >&2
      exit 1
    fi
  done
done

# rocl's MPI program: its CSV rows (latency in us; bandwidth in GB/s,
# turned into messages per second) as "k size value" rows.
run_mpi() {
  local b=$1 k=$2 out
  local bw_sizes=$sizes
  [[ $mode == latency ]] && bw_sizes=1
  if ! out=$(ROCL_TRANSPORTS="$transport" "$b/tools/roclrun/roclrun" --bind-to core -n 2 \
      "$b/$bench" --sizes "$sizes" \
      --bw-sizes "$bw_sizes" --reps 3 --time 0.1 2>&1); then
    echo "ab-builds.sh: round $i: rocl's MPI program of $b failed" >&2
    exit 1
  fi
  sed 's/^\[0\] //' <<< "$out" | awk -F, -v k="$k" -v m="$mode" \
    '$1 == m {print k, $2, (m == "latency" ? $4 : $4 * 1e9 / $2)}' >> "$rows"
}

csv=$(mktemp)
rows=$(mktemp)
trap 'rm -f "$csv" "$rows"' EXIT
for ((i = 1; i <= rounds; ++i)); do
  for k in 0 1; do
    b=${builds[$k]}
    if [[ $mpi == 1 ]]; then
      run_mpi "$b" "$k"
      continue
    fi
    args=(--sizes "$sizes" --transport "$transport" --roclrun "$b/tools/roclrun/roclrun"
          --reps 3 --time 0.1 --csv "$csv")
    [[ $mode == bandwidth ]] && args+=(--bandwidth-sizes "$sizes")
    if ! "$b/tools/rocl-bench/rocl-bench" "$mode" "${args[@]}" > /dev/null 2>&1; then
      echo "ab-builds.sh: round $i: rocl-bench of $b failed" >&2
      exit 1
    fi
    # bandwidth rows: one MB/s and one msg/s per size; keep msg/s.
    awk -F, -v k="$k" -v m="$mode" 'NR > 1 && (m == "latency" || $7 == "msg/s") {print k, $2, $4}' \
      "$csv" >> "$rows"
  done
  echo "round $i/$rounds done" >&2
done

python3 - "$mode" "$rows" "$values" "${builds[@]}" <<'EOF'
import collections, statistics, sys
mode, rows, values, old, new = sys.argv[1:6]
runs = collections.defaultdict(lambda: ([], []))
for line in open(rows):
    k, size, value = line.split()
    runs[int(size)][int(k)].append(float(value))
unit = "us one-way" if mode == "latency" else "M msg/s"
scale = 1.0 if mode == "latency" else 1e-6
print(f"{mode}, {unit}: OLD {old}, NEW {new}")
print(f"{'size':>8} {'OLD median':>11} {'NEW median':>11} {'NEW/OLD':>8}  NEW better")
for size in sorted(runs):
    a, b = runs[size]
    if mode == "latency":
        better = sum(1 for x, y in zip(a, b) if y < x)
    else:
        better = sum(1 for x, y in zip(a, b) if y > x)
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{size:>8} {ma * scale:>11.3f} {mb * scale:>11.3f} {mb / ma:>8.3f}  {better}/{min(len(a), len(b))}")
    if values == "1":
        for name, runs_of in (("OLD", a), ("NEW", b)):
            print(f"{'':>8} {name}: " + " ".join(f"{x * scale:.3g}" for x in sorted(runs_of)))
EOF
