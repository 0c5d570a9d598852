#!/usr/bin/env bash
# bench-processes.sh - rocl between two processes next to MPI, in one run.
#
# Usage: scripts/bench-processes.sh [--quick] [--rounds N] [--stat median|best] [--no-install]
#                                   [BUILD_DIR]
#
# Builds rocl-bench and roclrun (Release) in BUILD_DIR (default build/),
# installs Open MPI and MPICH with apt-get when they are missing (root only;
# --no-install never installs), builds the MPI anchor
# bench/anchors/mpi_pingpong.c with mpicc.openmpi and mpicc.mpich into
# BUILD_DIR/bench-anchors/, then measures, back to back and in ROUNDS
# interleaved rounds (default 3, the order rotating each round, so that a
# slow phase of the VM hits every configuration alike):
#   rocl-shm    rocl-bench --transport shm  (roclrun -n 2, ROCL_TRANSPORTS=shm)
#   rocl-tcp    rocl-bench --transport tcp
#   ompi-vader  Open MPI, pml ob1, btl self,vader  (shared memory)
#   ompi-tcp    Open MPI, pml ob1, btl self,tcp over lo
#   ompi-ucx    Open MPI, pml ucx (UCX picks sysv shared memory + cma here)
#   mpich       MPICH ch4:ucx (the same UCX transports)
# ping-pong one-way latency 1 B..16 MiB (us) and windowed one-way bandwidth
# 4 KiB..16 MiB (GB/s = 1e9 B/s), the two processes pinned to cpu 0 and 1
# in every configuration. Each point is the median of its repetitions in a
# round; the table shows the median over the rounds (--stat best: the best
# round, i.e. the VM's quiet phases) and the ratios rocl-shm / best MPI
# shared-memory anchor and rocl-tcp / ompi-tcp.
# Writes BUILD_DIR/bench-processes.csv (every round, both summaries) and
# keeps each run's output in BUILD_DIR/bench-processes-logs/. A
# configuration that cannot run is shown as n/a with the reason; the
# script still exits 0 (1 only for a bad command line or a failed build).
# --quick: one round of a few sizes, 1 repetition of 0.05 s (about 30 s).
# rocl's ROCL_* variables in the environment reach the rocl runs (e.g.
# ROCL_SPIN_US); the MPI runs use their libraries' defaults.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '4,5p' "$0" | sed 's/^# //'; }
quick=0
rounds=""
install=1
stat=median
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds)
      rounds=${2:-}
      shift
      ;;
    --rounds=*) rounds=${1#--rounds=} ;;
    --stat)
      stat=${2:-}
      shift
      ;;
    --stat=*) stat=${1#--stat=} ;;
    --no-install) install=0 ;;
    -h | --help)
      sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
      exit 0
      ;;
    -*)
      echo "bench-processes.sh: unknown option $1" >&2
      usage >&2
      exit 1
      ;;
    *) build=$1 ;;
  esac
  shift
done
if [ "$stat" != median ] && [ "$stat" != best ]; then
  echo "bench-processes.sh: --stat takes median or best, not '$stat'" >&2
  exit 1
fi
if [ -n "$rounds" ] && ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench-processes.sh: --rounds wants a positive number, not '$rounds'" >&2
  exit 1
fi

if [ $quick = 1 ]; then
  lat_sizes=8,4K,64K,1M
  bw_sizes=64K,1M
  reps=1
  seconds=0.05
  rounds=${rounds:-1}
  run_limit=120
else
  lat_sizes=1,4,8,16,64,256,1K,4K,16K,64K,256K,1M,4M,16M
  bw_sizes=4K,16K,64K,256K,1M,4M,16M
  reps=3
  seconds=0.2
  rounds=${rounds:-3}
  run_limit=900
fi

say() { printf '%s\n' "$*"; }

# ---- rocl ------------------------------------------------------------------
say "== building rocl-bench and roclrun (Release) in $build"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ "$type" != Release ]; then
  say "   warning: $build is a '$type' build, not Release: rocl's figures will be slower"
fi
# src/ may change while we build (a file caught half-written): one retry.
build_log=$build/bench-processes-build.log
if ! ninja -C "$build" rocl-bench roclrun >"$build_log" 2>&1; then
  say "   the build failed; trying once more in 10 s"
  sleep 10
  if ! ninja -C "$build" rocl-bench roclrun >"$build_log" 2>&1; then
    tail -30 "$build_log"
    echo "bench-processes.sh: the build failed (see $build_log)" >&2
    exit 1
  fi
fi
bench=$build/tools/rocl-bench/rocl-bench
build=$(cd "$build" && pwd)
bench=$build/tools/rocl-bench/rocl-bench

# ---- MPI ---------------------------------------------------------------------
have_mpi() {
  command -v mpicc.openmpi && command -v mpirun.openmpi && command -v mpicc.mpich &&
    command -v mpiexec.mpich
} >/dev/null 2>&1
mpi_problem=""
if ! have_mpi; then
  if [ $install = 0 ]; then
    mpi_problem="Open MPI / MPICH not installed (--no-install)"
  elif [ "$(id -u)" != 0 ]; then
    mpi_problem="Open MPI / MPICH not installed, and installing needs root"
  else
    say "== installing Open MPI and MPICH (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q >/dev/null &&
      apt-get install -y -q openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null; }; then
      mpi_problem="apt-get install of openmpi-bin libopenmpi-dev mpich libmpich-dev failed"
    fi
  fi
fi

anchors=$build/bench-anchors
mkdir -p "$anchors"
declare -A problem=()
build_anchor() { # $1 = openmpi | mpich
  local cc=mpicc.$1 out=$anchors/mpi_pingpong.$1
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "${mpi_problem:-$cc not found}"
    return 1
  fi
  if [ ! -x "$out" ] || [ bench/anchors/mpi_pingpong.c -nt "$out" ]; then
    # -Wno-stringop-overflow: GCC 12 misreads MPICH's MPI_STATUSES_IGNORE.
    if ! "$cc" -O2 -Wall -Wno-stringop-overflow -o "$out" bench/anchors/mpi_pingpong.c \
      >"$anchors/build-$1.log" 2>&1; then
      echo "$cc failed: $(grep -m1 -i error "$anchors/build-$1.log")"
      return 1
    fi
  fi
}
say "== building the MPI anchor (bench/anchors/mpi_pingpong.c) in $anchors"
if why=$(build_anchor openmpi); then :; else
  problem[ompi-vader]=$why problem[ompi-tcp]=$why problem[ompi-ucx]=$why
fi
if why=$(build_anchor mpich); then :; else problem[mpich]=$why; fi

# ---- the runs ------------------------------------------------------------------
configs=(rocl-shm rocl-tcp ompi-vader ompi-tcp ompi-ucx mpich)
anchor_args=(--sizes "$lat_sizes" --bw-sizes "$bw_sizes" --reps "$reps" --time "$seconds")
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core)
command_of() { # $1 = config, $2 = where rocl-bench writes its CSV; sets cmd=(...)
  case "$1" in
    rocl-shm | rocl-tcp)
      cmd=("$bench" latency bandwidth --transport "${1#rocl-}" --sizes "$lat_sizes"
        --bandwidth-sizes "$bw_sizes" --reps "$reps" --time "$seconds" --csv "$2")
      ;;
    ompi-vader)
      cmd=("${ompi[@]}" --mca pml ob1 --mca btl self,vader
        "$anchors/mpi_pingpong.openmpi" "${anchor_args[@]}")
      ;;
    ompi-tcp)
      cmd=("${ompi[@]}" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo
        "$anchors/mpi_pingpong.openmpi" "${anchor_args[@]}")
      ;;
    ompi-ucx)
      cmd=("${ompi[@]}" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
        -x UCX_NET_DEVICES=lo "$anchors/mpi_pingpong.openmpi" "${anchor_args[@]}")
      ;;
    mpich) # Hydra runs as root without complaint; -launcher fork: no ssh on one host
      cmd=(mpiexec.mpich -n 2 -bind-to core -launcher fork
        "$anchors/mpi_pingpong.mpich" "${anchor_args[@]}")
      ;;
  esac
}

logs=$build/bench-processes-logs
rm -rf "$logs"
mkdir -p "$logs"
raw=$logs/raw.csv # round,config,metric,size_bytes,median,min,max,unit
: >"$raw"

# Appends one run's rows to $raw: rocl-bench's CSV (shm-latency ... us,
# shm-bandwidth ... MB/s) or the anchor's stdout (latency us, bandwidth GB/s).
collect() { # $1 round, $2 config, $3 file
  awk -F, -v round="$1" -v config="$2" -v OFS=, '
    NF != 7 || $1 ~ /^#/ || $1 == "benchmark" { next }
    { name = $1; sub(/^(shm|tcp)-/, "", name) }
    name == "latency" && $7 == "us" { print round, config, "latency", $2, $4, $5, $6, "us" }
    name == "bandwidth" && $7 == "GB/s" { print round, config, "bandwidth", $2, $4, $5, $6, "GB/s" }
    name == "bandwidth" && $7 == "MB/s" {
      print round, config, "bandwidth", $2, $4 / 1000, $5 / 1000, $6 / 1000, "GB/s"
    }' "$3" >>"$raw"
}

# ---- the VM's phases --------------------------------------------------------------
# This VM moves between phases every few seconds, in which a cache line
# crosses between the two cpus in ~0.033 us, ~0.085 us or ~0.35 us (the
# host places the vCPUs on sibling threads, on two cores, or apart); every
# configuration, MPI's as much as rocl's, follows (8 B ping-pong, rocl and
# MPICH alike: ~0.2 us in the middle phase, ~0.65 us in the slow one), so a
# comparison is fair only between runs made in the same phase. probe: the
# one-way time of a bare two-thread ring ping-pong (rocl-bench
# anchor-spsc), in us. The target phase is the median of 5 probes at the
# start; each run starts once a probe is within 1.4x of it (waiting up to
# 60 s), and a run after which the probe is not is made again (twice at
# most). Every probe goes to phases.txt; a run's line shows its probes.
# Besides, a whole run (rocl's and MPI's alike, e.g. vader 1 KiB 0.25 or
# 0.96 us, MPICH 8 B 0.19 or 0.70 us) may land in a slow mode the probe
# does not see (another process's memory, placed elsewhere by the host?):
# hence several rounds, and the median and the best round.
probe() {
  "$bench" anchor-spsc --reps 1 --time 0.05 --csv /dev/null 2>/dev/null |
    awk '$1 == "anchor-spsc" { print $4; exit }'
}
target=""
in_phase() { # $1 probe
  [ -n "$1" ] && [ -n "$target" ] &&
    awk -v p="$1" -v t="$target" 'BEGIN { exit !(p <= 1.4 * t && p >= t / 1.4) }'
}
wait_phase() { # sets pre
  local waited=0
  pre=$(probe)
  while ! in_phase "$pre" && [ $waited -lt 60 ]; do
    printf '%s other phase %s (target %s)\n' "$(date +%T)" "$pre" "$target" >>"$logs/phases.txt"
    sleep 1
    waited=$((waited + 1))
    pre=$(probe)
  done
  printf '%s before %s (target %s)\n' "$(date +%T)" "$pre" "$target" >>"$logs/phases.txt"
}
target=$(for ((i = 0; i < 5; ++i)); do probe; done | sort -g | sed -n 3p)
say "   probe (anchor-spsc one-way): target phase ${target:-n/a} us (median of 5); runs wait for it"

say "== $rounds round(s) of ${configs[*]}"
say "   latency sizes $lat_sizes; bandwidth sizes $bw_sizes; $reps rep(s) of ~$seconds s per point"
say "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
for ((round = 1; round <= rounds; ++round)); do
  for ((k = 0; k < ${#configs[@]}; ++k)); do
    config=${configs[(k + round - 1) % ${#configs[@]}]}
    [ -n "${problem[$config]:-}" ] && continue
    log=$logs/$round-$config.log
    rows=$logs/$round-$config.csv
    command_of "$config" "$rows"
    printf '   round %d %-10s ' "$round" "$config"
    t0=$SECONDS
    redone=0
    for ((attempt = 0; attempt < 3; ++attempt)); do
      [ $attempt -gt 0 ] && redone=$attempt
      wait_phase
      rm -f "$rows"
      timeout --kill-after=10 "$run_limit" "${cmd[@]}" >"$log" 2>&1
      status=$?
      post=$(probe)
      printf '%s after %s %s round %d\n' "$(date +%T)" "$post" "$config" "$round" >>"$logs/phases.txt"
      [ $status = 0 ] && ! in_phase "$post" || break
    done
    [ "$config" = rocl-shm ] || [ "$config" = rocl-tcp ] || cp "$log" "$rows"
    before=$(wc -l <"$raw")
    [ -f "$rows" ] && collect "$round" "$config" "$rows"
    got=$(($(wc -l <"$raw") - before))
    printf '%3d s  %2d points  probe %s/%s us' $((SECONDS - t0)) "$got" "${pre:-?}" "${post:-?}"
    [ $redone -gt 0 ] && printf ' (redone %d time(s): the phase changed)' "$redone"
    if [ $status != 0 ] || [ "$got" = 0 ]; then
      if [ $status = 124 ] || [ $status = 137 ]; then
        why="timed out after $run_limit s"
      else
        # The first line that says what went wrong, else the last line.
        why=$(grep -m1 -iE 'rocl-bench:|roclrun:|error|abort|failed|cannot|not found' "$log")
        [ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$log" | tail -1)
        why="exit status $status: $(printf '%s' "$why" | cut -c1-150)"
      fi
      problem[$config]="$why (log: $log)"
      printf '  FAILED: %s' "$why"
    fi
    printf '\n'
  done
done
say "   $((SECONDS - start)) s in all; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- summary -------------------------------------------------------------------
csv=$build/bench-processes.csv
problems=$logs/problems.txt
: >"$problems"
for config in "${configs[@]}"; do
  [ -n "${problem[$config]:-}" ] && printf '%s\t%s\n' "$config" "${problem[$config]}" >>"$problems"
done

awk -F, -v OFS=, -v rounds="$rounds" -v csv="$csv" -v problems="$problems" -v stat="$stat" \
  -v configs="${configs[*]}" '
function fmt(v, a) {
  a = v < 0 ? -v : v
  return sprintf(a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", v)
}
function size_text(b, s, i) {
  s = b ""
  split("K M G", suffix, " ")
  for (i = 1; i <= 3 && b >= 1024 && b % 1024 == 0; ++i) { b /= 1024; s = b suffix[i] }
  return s
}
function median(list, n, v, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; ++i)
    for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
BEGIN {
  OFMT = CONVFMT = "%.9g"
  nconf = split(configs, conf, " ")
  while ((getline line < problems) > 0) {
    split(line, f, "\t")
    why[f[1]] = f[2]
  }
  print "metric,size_bytes,config,round,median,min,max,unit" > csv
}
{
  key = $3 SUBSEP $4 SUBSEP $2
  print $3, $4, $2, $1, $5, $6, $7, $8 > csv
  meds[key] = meds[key] " " $5
  if (!(key in lo) || $6 + 0 < lo[key]) lo[key] = $6 + 0
  if (!(key in hi) || $7 + 0 > hi[key]) hi[key] = $7 + 0
  unit[$3] = $8
  if (!(($3, $4) in seen)) { seen[$3, $4] = 1; sizes[$3] = sizes[$3] " " $4 }
}
END {
  for (key in meds) {
    split(key, k, SUBSEP)
    mid = median(meds[key]) + 0
    n = split(meds[key], v, " ")
    top = v[1] + 0
    for (i = 2; i <= n; ++i) {
      if (k[1] == "latency" ? v[i] + 0 < top : v[i] + 0 > top) top = v[i] + 0
    }
    print k[1], k[2], k[3], "median", mid, lo[key], hi[key], unit[k[1]] > csv
    print k[1], k[2], k[3], "best", top, "", "", unit[k[1]] > csv
    value[key] = stat == "best" ? top : mid
  }
  title["latency"] = "latency: one-way, us (lower is better)"
  title["bandwidth"] = "bandwidth: one-way stream, GB/s = 1e9 B/s (higher is better)"
  shm_note["latency"] = "shm/best: rocl-shm over the lowest of ompi-vader, ompi-ucx, mpich (> 1: rocl slower)"
  shm_note["bandwidth"] = "shm/best: rocl-shm over the highest of ompi-vader, ompi-ucx, mpich (< 1: rocl slower)"
  split("latency bandwidth", metrics, " ")
  for (m = 1; m <= 2; ++m) {
    metric = metrics[m]
    printf "\n%s; %s of %d round(s)\n", title[metric], stat == "best" ? "the best" : "median", rounds
    printf "%6s", "size"
    for (c = 1; c <= nconf; ++c) printf " %10s", conf[c]
    printf "  %-18s %s\n", "shm/best MPI shm", "tcp/ompi-tcp"
    n = split(sizes[metric], list, " ")
    # ascending sizes
    for (i = 2; i <= n; ++i)
      for (j = i; j > 1 && list[j - 1] + 0 > list[j] + 0; --j) { t = list[j]; list[j] = list[j - 1]; list[j - 1] = t }
    for (i = 1; i <= n; ++i) {
      s = list[i]
      printf "%6s", size_text(s)
      for (c = 1; c <= nconf; ++c) {
        key = metric SUBSEP s SUBSEP conf[c]
        printf " %10s", (key in value) ? fmt(value[key]) : "n/a"
      }
      best = ""; best_name = ""
      split("ompi-vader ompi-ucx mpich", shm, " ")
      for (a = 1; a <= 3; ++a) {
        key = metric SUBSEP s SUBSEP shm[a]
        if (!(key in value)) continue
        if (best == "" || (metric == "latency" ? value[key] < best : value[key] > best)) {
          best = value[key]; best_name = shm[a]
        }
      }
      r1 = ""; r2 = ""
      key = metric SUBSEP s SUBSEP "rocl-shm"
      if (best != "" && best > 0 && (key in value)) {
        r1 = fmt(value[key] / best) " (" best_name ")"
        print metric, s, "rocl-shm/" best_name, stat, value[key] / best, "", "", "ratio" > csv
      }
      key = metric SUBSEP s SUBSEP "rocl-tcp"
      key2 = metric SUBSEP s SUBSEP "ompi-tcp"
      if ((key in value) && (key2 in value) && value[key2] > 0) {
        r2 = fmt(value[key] / value[key2])
        print metric, s, "rocl-tcp/ompi-tcp", stat, value[key] / value[key2], "", "", "ratio" > csv
      }
      printf "  %-18s %s\n", r1 == "" ? "n/a" : r1, r2 == "" ? "n/a" : r2
    }
    print shm_note[metric]
  }
  any = 0
  for (c = 1; c <= nconf; ++c) {
    if (!(conf[c] in why)) continue
    if (!any) { print "\nnot measured (n/a) or incomplete:"; any = 1 }
    printf "  %-10s %s\n", conf[c], why[conf[c]]
  }
}' "$raw"
# The CSV sorted: metric, size, configuration, round.
{
  head -1 "$csv"
  tail -n +2 "$csv" | sort -t, -k1,1 -k2,2n -k3,3 -k4,4
} >"$csv.sorted" && mv "$csv.sorted" "$csv"
say ""
say "CSV: $csv (every round; round=median and round=best: the summaries; the table's ratios)"
say "logs: $logs/"
exit 0
