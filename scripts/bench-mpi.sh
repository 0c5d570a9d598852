#!/usr/bin/env bash
# bench-mpi.sh - the MPI benchmark suite (bench/mpi, program mpi_bench)
# against rocl's MPI, Open MPI and MPICH in one go, in one table.
#
# Usage: scripts/bench-mpi.sh [options] [ROCL_BUILD_DIR] [-- MPI_BENCH_ARGS...]
#
#   --mpis LIST     rocl,openmpi,mpich by default. openmpi means two
#                   configurations: openmpi (pml ob1, btl self,vader) and
#                   openmpi-ucx (pml ucx over shared memory); name
#                   openmpi-ob1 or openmpi-ucx for one of them only.
#   --bench LIST    latency,bw,bibw,mbw_mr,mt_latency,mt_rate,coll (all)
#   --rounds N      interleaved rounds (default 3; --quick: 1)
#   --quick         mpi_bench --quick: a few points, one short repetition
#   --mt-mode M     tag (default) or comm, for mt_latency and mt_rate
#   --subject NAME  whose ratio to the best of the others the tables show
#                   and the goals judge (default rocl)
#   --out DIR       results (default build/bench-mpi)
#   --no-install    never apt-get (else, as root, apt-get update + install
#                   openmpi-bin libopenmpi-dev mpich libmpich-dev
#                   gnuplot-nox when one of them is missing)
#   --no-build      use ROCL_BUILD_DIR as it is (else ninja builds
#                   rocl-mpi-bench and roclrun in it first)
#   -h, --help      this text
#   ROCL_BUILD_DIR  rocl's CMake build (default build-bench): the program
#                   is ROCL_BUILD_DIR/bench/mpi/mpi_bench, the launcher
#                   ROCL_BUILD_DIR/tools/roclrun/roclrun. Without them rocl
#                   is skipped with a note.
#   after --         passed to every mpi_bench run (e.g. -- --reps 3 --time 0.1)
#
# Builds mpi_bench with mpicc.openmpi and mpicc.mpich (-O2) into OUT/, then
# runs, 2 ranks pinned to a core each (launchers' own --bind-to core; 4
# ranks for mbw_mr with 2 pairs):
#   rocl         roclrun --bind-to core -n 2 (without --bind-to if this
#                roclrun does not know it yet; said so)
#   openmpi      mpirun.openmpi --mca pml ob1 --mca btl self,vader
#   openmpi-ucx  mpirun.openmpi --mca pml ucx, UCX_NET_DEVICES=lo
#   mpich        mpiexec.mpich -bind-to core (MPICH ch4:ucx)
# Three jobs per MPI and round: the single-threaded benchmarks (MPI_Init),
# the multithreaded ones (MPI_THREAD_MULTIPLE; threads 1,2,4,8) and mbw_mr
# with 4 ranks. Rounds are interleaved: each job runs under every MPI in
# turn (the order rotating from round to round) before the next job, so
# that the VM's slow spells hit every MPI alike. A figure is the median
# over the rounds of each run's median (min and max: over everything).
# Prints one table per benchmark, each MPI's figure and SUBJECT / the best
# of the others, and the goals, ok or MISS:
#   latency 8 B <= best; bw >= best at every size from 4 KiB;
#   mt_rate at 4 and 8 threads >= 3 x best; barrier and allreduce <= best.
# Writes OUT/bench-mpi.csv (every run's rows, with the MPI and the round),
# OUT/bench-mpi-summary.csv, OUT/latency.png and OUT/bandwidth.png
# (gnuplot) and each run's output in OUT/logs/. A run that fails (or whose
# data arrive wrong: mpi_bench aborts) is reported with its log, and the
# script exits 1 after the table; 2 for a bad command line or build.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '%s\n' "$*"; }
fail() {
  printf 'bench-mpi.sh: %s\n' "$*" >&2
  exit 2
}
usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; }

# ---- the command line --------------------------------------------------------
mpis=rocl,openmpi,mpich
benches=latency,bw,bibw,mbw_mr,mt_latency,mt_rate,coll
rounds=""
quick=0
mt_mode=tag
subject=rocl
out=build/bench-mpi
install=1
build_rocl=1
rocl_build=build-bench
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mpis) mpis=${2:?--mpis needs a list}; shift ;;
    --bench) benches=${2:?--bench needs a list}; shift ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --quick) quick=1 ;;
    --mt-mode) mt_mode=${2:?--mt-mode needs tag or comm}; shift ;;
    --subject) subject=${2:?--subject needs a name}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --no-install) install=0 ;;
    --no-build) build_rocl=0 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) usage >&2; fail "unknown option $1" ;;
    *) rocl_build=$1 ;;
  esac
  shift
done
[ -n "$rounds" ] || rounds=$([ $quick = 1 ] && echo 1 || echo 3)
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || fail "--rounds wants a positive number, not '$rounds'"
[ "$mt_mode" = tag ] || [ "$mt_mode" = comm ] || fail "--mt-mode takes tag or comm, not '$mt_mode'"

configs=()
for m in ${mpis//,/ }; do
  case "$m" in
    rocl | openmpi-ucx | mpich) configs+=("$m") ;;
    openmpi) configs+=(openmpi openmpi-ucx) ;;
    openmpi-ob1) configs+=(openmpi) ;;
    *) fail "--mpis: no MPI '$m' (rocl, openmpi, openmpi-ob1, openmpi-ucx, mpich)" ;;
  esac
done
single=() threaded=() mbw=0
for b in ${benches//,/ }; do
  case "$b" in
    latency | bw | bibw | coll) single+=("$b") ;;
    mbw_mr) single+=("$b"); mbw=1 ;;
    mt_latency | mt_rate) threaded+=("$b") ;;
    *) fail "--bench: no benchmark '$b'" ;;
  esac
done
command -v python3 >/dev/null || fail "python3 is needed for the tables"

# ---- the packages ------------------------------------------------------------
packages=(openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ $install = 0 ]; then
    say "note: not installed (--no-install): ${missing[*]}"
  elif [ "$(id -u)" != 0 ]; then
    say "note: not installed, and installing needs root: ${missing[*]}"
  else
    say "== apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q "${missing[@]}" >/dev/null
  fi
fi

# ---- the programs --------------------------------------------------------------
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs=$out/logs
rm -rf "$logs"
mkdir -p "$logs"
declare -A problem=() program=()

build_with() { # $1 = openmpi | mpich: builds $out/mpi_bench.$1
  local cc=mpicc.$1 exe=$out/mpi_bench.$1
  command -v "$cc" >/dev/null || { problem[$1]="$cc not found"; return 0; }
  if "$cc" -O2 -std=c11 -Wall -Wextra -pthread -DBENCH_MPI_NAME="\"$1\"" -o "$exe" \
    bench/mpi/[a-z]*.c >"$out/build-$1.log" 2>&1; then
    [ -s "$out/build-$1.log" ] && say "   warnings from $cc: see $out/build-$1.log"
    program[$1]=$exe
  else
    cat "$out/build-$1.log" >&2
    fail "$cc failed (see $out/build-$1.log)"
  fi
}

roclrun="" rocl_bind=()
find_rocl() {
  local dir=$rocl_build
  if [ $build_rocl = 1 ] && [ -f "$dir/build.ninja" ]; then
    if ! ninja -C "$dir" rocl-mpi-bench roclrun >"$out/build-rocl.log" 2>&1; then
      problem[rocl]="ninja -C $dir rocl-mpi-bench roclrun failed: $(grep -m1 -iE 'error|unknown target' "$out/build-rocl.log" | cut -c1-120) (log: $out/build-rocl.log)"
      return 0
    fi
  fi
  if [ ! -x "$dir/bench/mpi/mpi_bench" ] || [ ! -x "$dir/tools/roclrun/roclrun" ]; then
    problem[rocl]="not built: no $dir/bench/mpi/mpi_bench or $dir/tools/roclrun/roclrun"
    return 0
  fi
  program[rocl]=$(cd "$dir" && pwd)/bench/mpi/mpi_bench
  roclrun=$(cd "$dir" && pwd)/tools/roclrun/roclrun
  if "$roclrun" --bind-to core -n 1 true >/dev/null 2>&1; then
    rocl_bind=(--bind-to core)
  else
    say "   note: this roclrun rejects --bind-to core: rocl runs unpinned"
  fi
}

say "== building mpi_bench into $out"
for c in "${configs[@]}"; do
  case "$c" in
    openmpi | openmpi-ucx) [ -n "${program[openmpi]:-}" ] || build_with openmpi ;;
    mpich) [ -n "${program[mpich]:-}" ] || build_with mpich ;;
    rocl) find_rocl ;;
  esac
done
program[openmpi-ucx]=${program[openmpi]:-}
[ -n "${problem[openmpi]:-}" ] && problem[openmpi-ucx]=${problem[openmpi]}
for c in "${configs[@]}"; do
  if [ -n "${problem[$c]:-}" ]; then say "   skipping $c: ${problem[$c]}"; fi
done
skipped=("${!problem[@]}")

# ---- the runs ------------------------------------------------------------------
ncpus=$(nproc)
launcher() { # $1 = config, $2 = ranks: sets cmd=(launcher... program)
  local bind=core
  case "$1" in
    rocl) cmd=("$roclrun" "${rocl_bind[@]}" -n "$2") ;;
    openmpi | openmpi-ucx)
      # more ranks than cpus: Open MPI refuses to bind two to a core unless told
      [ "$2" -gt "$ncpus" ] && bind=core:overload-allowed
      cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$2" --bind-to "$bind")
      if [ "$1" = openmpi ]; then
        cmd+=(--mca pml ob1 --mca btl self,vader)
      else
        cmd+=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo)
      fi
      ;;
    mpich) cmd=(mpiexec.mpich -n "$2" -bind-to core) ;;
  esac
  cmd+=("${program[$1]}")
}

# job: name ranks mpi_bench-arguments
jobs=()
common=()
[ $quick = 1 ] && common+=(--quick)
common+=(${extra[@]+"${extra[@]}"})
[ ${#single[@]} -gt 0 ] && jobs+=("single 2 ${single[*]}")
[ ${#threaded[@]} -gt 0 ] && jobs+=("threaded 2 ${threaded[*]} --mt-mode $mt_mode")
[ $mbw = 1 ] && jobs+=("mbw4 4 mbw_mr")
run_limit=$([ $quick = 1 ] && echo 120 || echo 1800)

raw=$out/bench-mpi.csv
echo "mpi,round,ranks,benchmark,size_bytes,threads,median,min,max,unit" >"$raw"
failed=0

# Appends a run's CSV rows to $raw; roclrun puts "[rank] " before lines.
collect() { # $1 config, $2 round, $3 ranks, $4 log
  sed -E 's/^\[[0-9]+\] //' "$4" | awk -F, -v OFS=, -v mpi="$1" -v round="$2" -v ranks="$3" '
    NF == 7 && $1 !~ /^#/ && $1 != "benchmark" { print mpi, round, ranks, $0 }' >>"$raw"
}

run_one() { # $1 config, $2 round, $3 job name, $4 ranks, rest: arguments
  local config=$1 round=$2 job=$3 ranks=$4
  shift 4
  local log=$logs/$round-$config-$job.log status=0 t0=$SECONDS
  launcher "$config" "$ranks"
  printf '   round %d %-12s %-9s' "$round" "$config" "$job"
  timeout --kill-after=10 "$run_limit" "${cmd[@]}" "$@" ${common[@]+"${common[@]}"} >"$log" 2>&1 ||
    status=$?
  # A failed run's rows stay out of the table, even those it printed
  # before it failed: they are in its log.
  local before after
  before=$(wc -l <"$raw")
  [ $status = 0 ] && collect "$config" "$round" "$ranks" "$log"
  after=$(wc -l <"$raw")
  printf '%4d s %3d rows' $((SECONDS - t0)) $((after - before))
  if [ $status != 0 ]; then
    local why
    if [ $status = 124 ] || [ $status = 137 ]; then
      why="timed out after $run_limit s"
    else
      # mpi_bench's own message first, else the launcher's
      why=$(grep -v '#' "$log" | grep -m1 -E 'mpi_bench( \(rank [0-9]+\))?:' || true)
      [ -n "$why" ] || why=$(grep -v '#' "$log" | grep -m1 -iE 'error|abort|failed|cannot|not found' || true)
      [ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$log" | tail -1 || true)
      why="exit status $status: $(printf '%s' "$why" | cut -c1-160)"
    fi
    printf '  FAILED: %s (log: %s)' "$why" "$log"
    printf '%s\t%s %s: %s (log: %s)\n' "$config" "$job" "round $round" "$why" "$log" >>"$logs/failures.txt"
    failed=1
  fi
  printf '\n'
}

active=()
for c in "${configs[@]}"; do [ -z "${problem[$c]:-}" ] && active+=("$c"); done
say "== $rounds round(s) of ${active[*]:-nothing}; jobs: ${jobs[*]}"
say "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
for ((round = 1; round <= rounds; ++round)); do
  for job in "${jobs[@]}"; do
    read -r -a words <<<"$job"
    for ((k = 0; k < ${#active[@]}; ++k)); do
      config=${active[(k + round - 1) % ${#active[@]}]}
      run_one "$config" "$round" "${words[@]}"
    done
  done
done
say "   $((SECONDS - start)) s in all; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the tables, the summary CSV, the plots --------------------------------------
notes=$logs/notes.txt
: >"$notes"
for c in ${skipped[@]+"${skipped[@]}"}; do printf '%s\tskipped: %s\n' "$c" "${problem[$c]}" >>"$notes"; done
[ -f "$logs/failures.txt" ] && cat "$logs/failures.txt" >>"$notes"

python3 - "$raw" "$out" "$subject" "$rounds" "$notes" "${configs[@]}" <<'PY'
import csv, statistics, sys
from collections import defaultdict

raw, out, subject, rounds, notes_file = sys.argv[1:6]
configs = list(dict.fromkeys(sys.argv[6:]))
runs = defaultdict(list)  # (bench, size, threads, mpi) -> [(median, min, max)]
units = {}
with open(raw) as f:
    for r in csv.DictReader(f):
        key = (r["benchmark"], int(r["size_bytes"]), int(r["threads"]), r["mpi"])
        runs[key].append((float(r["median"]), float(r["min"]), float(r["max"])))
        units[r["benchmark"]] = r["unit"]

# Per point: the median over the rounds of the runs' medians, min, max.
value, spread = {}, {}
for key, rows in runs.items():
    value[key] = statistics.median(m for m, _, _ in rows)
    spread[key] = (min(lo for _, lo, _ in rows), max(hi for _, _, hi in rows), len(rows))

def lower_is_better(bench):
    return units.get(bench) == "us"

def size_text(b):
    for suffix, shift in (("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{suffix}"
    return str(b)

def fmt(v):
    a = abs(v)
    if a >= 100 or a == 0:
        return f"{v:.0f}"
    return f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 1 else f"{v:.3f}" if a >= 0.01 else f"{v:.2g}"

def goal_of(bench, size, threads):
    """(factor, description) when a goal applies to this point, else None.
    The subject must beat factor x the best of the others."""
    if bench == "latency" and size == 8:
        return 1.0, "8 B latency <= best"
    if bench == "bw" and size >= 4096:
        return 1.0, "bw >= best from 4 KiB"
    if bench.startswith("mt_rate") and threads in (4, 8):
        return 3.0, f"{bench} at 4 and 8 threads >= 3x best"
    if bench in ("barrier", "allreduce"):
        return 1.0, f"{bench} latency <= best"
    return None

order = ["latency", "bw", "bibw", "mbw_mr", "mbw_mr_rate", "mt_latency", "mt_latency_comm",
         "mt_rate", "mt_rate_comm", "barrier", "bcast", "allreduce"]
benches = sorted({k[0] for k in value}, key=lambda b: (order.index(b) if b in order else 99, b))
others = [c for c in configs if c != subject]
summary = [["benchmark", "size_bytes", "threads", "mpi", "runs", "median", "min", "max", "unit"]]
goals = defaultdict(list)  # description -> ["ok"/"MISS"/"n/a", ...]
titles = {"latency": "one-way ping-pong latency", "bw": "one-way bandwidth (osu_bw)",
          "bibw": "bidirectional bandwidth (osu_bibw)",
          "mbw_mr": "multi-pair bandwidth (osu_mbw_mr), threads = pairs",
          "mbw_mr_rate": "multi-pair message rate (osu_mbw_mr), threads = pairs",
          "mt_latency": "multithreaded 8 B latency, mean over the thread pairs",
          "mt_rate": "multithreaded 8 B message rate, all pairs",
          "barrier": "MPI_Barrier", "bcast": "MPI_Bcast", "allreduce": "MPI_Allreduce (double, SUM)"}

for bench in benches:
    unit = units[bench]
    low = lower_is_better(bench)
    points = sorted({(k[2], k[1]) if bench.startswith(("mt_", "mbw_mr")) else (k[1], k[2])
                     for k in value if k[0] == bench})
    title = titles.get(bench, titles.get(bench.replace("_comm", ""), bench))
    print(f"\n{bench}: {title}; {unit}, {'lower' if low else 'higher'} is better; "
          f"median of {rounds} round(s)")
    header = f"{'threads' if bench.startswith('mt_') else 'size':>8}"
    header += "".join(f" {c:>12}" for c in configs)
    header += f"  {subject + '/best':>10}  {'best of the others':<20}  goal"
    print(header)
    for a, b in points:
        size, threads = (b, a) if bench.startswith(("mt_", "mbw_mr")) else (a, b)
        if bench.startswith("mt_"):
            label = str(threads)
        elif bench.startswith("mbw_mr"):
            label = f"{threads}p {size_text(size)}"
        else:
            label = size_text(size)
        line = f"{label:>8}"
        for c in configs:
            key = (bench, size, threads, c)
            line += f" {fmt(value[key]) if key in value else 'n/a':>12}"
            if key in value:
                lo, hi, n = spread[key]
                summary.append([bench, size, threads, c, n, value[key], lo, hi, unit])
        mine = value.get((bench, size, threads, subject))
        rivals = [(value[(bench, size, threads, c)], c) for c in others
                  if (bench, size, threads, c) in value]
        best = (min if low else max)(rivals) if rivals else None
        ratio, verdict = "n/a", ""
        if mine is not None and best is not None and best[0] > 0:
            r = mine / best[0]
            ratio = f"{r:.2f}x"
            summary.append([bench, size, threads, f"{subject}/{best[1]}", "", r, "", "", "ratio"])
        goal = goal_of(bench, size, threads)
        if goal:
            factor, what = goal
            if mine is None or best is None:
                verdict = "n/a"
            elif low:
                verdict = "ok" if mine * factor <= best[0] else "MISS"
            else:
                verdict = "ok" if mine >= factor * best[0] else "MISS"
            goals[what].append(verdict)
        best_text = f"{fmt(best[0])} {best[1]}" if best else "n/a"
        print(f"{line}  {ratio:>10}  {best_text:<20}  {verdict}")

print(f"\ngoals ({subject} against the best of {', '.join(others) or 'nobody'}):")
for what in ["8 B latency <= best", "bw >= best from 4 KiB", "mt_rate at 4 and 8 threads >= 3x best",
             "mt_rate_comm at 4 and 8 threads >= 3x best", "barrier latency <= best",
             "allreduce latency <= best"]:
    if what not in goals:
        continue
    v = goals[what]
    overall = "n/a" if "n/a" in v else "MISS" if "MISS" in v else "ok"
    print(f"  {overall:>4}  {what}  ({v.count('ok')} of {len(v)} point(s) ok)")

with open(notes_file) as f:
    notes = [line.rstrip("\n").split("\t", 1) for line in f if line.strip()]
if notes:
    print("\nnot measured or failed:")
    for who, what in notes:
        print(f"  {who:<12} {what}")

with open(f"{out}/bench-mpi-summary.csv", "w", newline="") as f:
    csv.writer(f).writerows(summary)

# Data and script for gnuplot: one line per MPI against the size.
plots = [("latency", "latency", "one-way latency (us)", "set logscale y"),
         ("bandwidth", "bw", "bandwidth (GB/s = 1e9 B/s)", "")]
with open(f"{out}/plots.gp", "w") as gp:
    gp.write("set terminal TERMINAL size 900,600\nset logscale x 2\nset key left top\n"
             "set grid\nset xlabel 'message size (bytes)'\n")
    for name, bench, ylabel, extra in plots:
        lines = []
        for c in configs:
            pts = sorted((k[1], v) for k, v in value.items() if k[0] == bench and k[3] == c)
            if not pts:
                continue
            with open(f"{out}/plot-{bench}-{c}.dat", "w") as d:
                d.writelines(f"{s} {v}\n" for s, v in pts)
            lines.append(f"'{out}/plot-{bench}-{c}.dat' using 1:2 with linespoints title '{c}'")
        gp.write(f"unset logscale y\n{extra}\nset ylabel '{ylabel}'\n"
                 f"set title '{bench}: median of {rounds} round(s)'\n"
                 f"set output '{out}/{name}.png'\n")
        gp.write(("plot " + ", ".join(lines) if lines else "# no data for " + bench) + "\n")
PY

if command -v gnuplot >/dev/null; then
  terminal=png
  gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 && terminal=pngcairo
  sed -i "s/TERMINAL/$terminal/" "$out/plots.gp"
  if gnuplot "$out/plots.gp" >"$logs/gnuplot.log" 2>&1; then
    say ""
    say "plots: $out/latency.png $out/bandwidth.png"
  else
    say "note: gnuplot failed (see $logs/gnuplot.log)"
  fi
else
  say "note: no gnuplot (apt-get install gnuplot-nox): no plots"
fi
say "CSV: $raw (every run), $out/bench-mpi-summary.csv (the table, the ratios)"
say "logs: $logs/"
exit $failed
