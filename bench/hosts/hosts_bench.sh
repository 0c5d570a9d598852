#!/usr/bin/env bash
# hosts_bench.sh - rocl's figures across the test hosts (as root), each next
# to its limit in the same run:
#   - the directory (dir_bench under roclrun --hosts, one rank per host):
#     local query, global query, lookup by gid, multi-answer answers per
#     second, with 2, 4, 8 and 16 hosts;
#   - tcp between two hosts (h1 -> h2 over net 1, veth + bridge): rocl's
#     8 B latency and 1 MiB bandwidth (rocl-bench's process benchmarks with
#     ROCL_TRANSPORTS=inproc,tcp; with the default waiting and with
#     ROCL_WAIT=spin, as the polling anchors wait) next to a bare TCP socket (tcp_pingpong,
#     polling receives, cubic as rocl's connections; with blocking receives
#     too), the standard tools over the same path (iperf3's stream: the
#     path's limit for 1 MiB; sockperf's ping-pong, which checks the bare
#     socket's blocking figure) and Open MPI's tcp BTL (mpi_pingpong.openmpi,
#     mpirun launching its daemons into the hosts through `ip netns exec`;
#     --bind-to none, since each host would bind its one rank to cpu 0).
#   - with --load K,...: the same tcp figures of rocl, Open MPI and the bare
#     socket with blocking receives (what the kernel gives a sleeping
#     receiver) with K CPU-bound competitors (busy loops) per cpu, for each
#     K, every round
#     running each K once (the overloaded machine's table).
#   bench/hosts/hosts_bench.sh BUILD [--hosts 2,4,8,16] [--reps N] [--rounds N]
#       [--load 0,1,2] [--quick]
# Makes its own test hosts (prefix rbench) and removes them at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || {
  echo "usage: $0 BUILD [--hosts 2,4,8,16] [--reps N] [--rounds N] [--load 0,1,2] [--quick]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
shift
host_counts=2,4,8,16 reps=5 dir_reps=200 seconds=0.2 tool_seconds=1 rounds=3 loads=""
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) host_counts=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --load)
      [[ "${2:-}" =~ ^[0-9]+(,[0-9]+)*$ ]] ||
        { echo "$0: --load takes busy loops per cpu, e.g. 0,1,2, not '${2:-}'" >&2; exit 2; }
      loads=$2; shift 2 ;;
    --quick) host_counts=2,4 reps=1 dir_reps=20 seconds=0.05 tool_seconds=1 rounds=1; shift ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "$0: the test hosts need root" >&2; exit 77; }
export ROCL_NETNS_PREFIX=rbench
hosts=$root/tests/netns/hosts.sh
roclrun=$build/tools/roclrun/roclrun
most=$(tr ',' '\n' <<<"$host_counts" | sort -n | tail -1)
[ "$most" -ge 2 ] || most=2
work=$(mktemp -d /tmp/rocl-hosts-bench.XXXXXX)
hogs=()
stop_hogs() {
  [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true
  [ ${#hogs[@]} -eq 0 ] || wait "${hogs[@]}" 2>/dev/null || true
  hogs=()
}
start_hogs() { # K: busy loops per cpu, at the benchmarks' own priority
  local i
  for ((i = 0; i < $1 * $(nproc); ++i)); do
    sh -c 'while :; do :; done' &
    hogs+=($!)
  done
}
cleanup() {
  stop_hogs
  "$hosts" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$hosts" up "$most" >/dev/null

echo "# rocl across test hosts (network namespaces on one machine: $(nproc) cpus)"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## directory: dir_bench, one rank per host, 100 items per host, median of $dir_reps (min, max)"
echo "benchmark,hosts,median,min,max,unit"
for n in $(tr ',' ' ' <<<"$host_counts"); do
  list=$(seq -s, -f 'h%g' 1 "$n")
  "$roclrun" --launcher netns --timeout 300 --hosts "$list" -n "$n" \
    "$build/bench/hosts/dir_bench" --items 100 --reps "$dir_reps" >"$work/dir$n.out" 2>&1 ||
    { echo "dir_bench on $n hosts failed:" >&2; cat "$work/dir$n.out" >&2; exit 1; }
  sed -n 's/^\[h1:0\] \([a-z-]*,[0-9]\)/\1/p' "$work/dir$n.out"
done

echo
echo "## tcp between h1 and h2: 8 B one-way latency (us) and 1 MiB bandwidth (MB/s)"
echo "# $rounds rounds, each running every system once (median of $reps runs each);"
echo "# the table gives the median round and the range; ratios are taken per round"
cat >"$work/netns-rsh" <<RSH
#!/bin/sh
host=\$1
shift
exec ip netns exec rbench-\$host sh -c "\$*"
RSH
chmod +x "$work/netns-rsh"
anchor=$build/bench/rocl-bench/compare/anchors/mpi_pingpong.openmpi
rows=$work/tcp.csv
: >"$rows"
row() { echo "$1,$2,${3:--},${4:--}" >>"$rows"; } # ROUND SYSTEM LAT BW
bare() { # ROUND NAME [--block]
  local port=$((5555 + RANDOM % 1000))
  "$hosts" exec h2 -- "$build/bench/hosts/tcp_pingpong" serve 10.201.0.2 "$port" "${@:3}" >/dev/null &
  local server=$!
  sleep 0.2
  "$hosts" exec h1 -- "$build/bench/hosts/tcp_pingpong" run 10.201.0.2 "$port" --sizes 8 \
    --bw-sizes 1M --reps "$reps" --time "$seconds" "${@:3}" >"$work/bare.csv"
  wait "$server" # only the server: the busy loops of --load run on
  row "$1" "$2" "$(awk -F, '$1=="latency"&&$2==8{print $4}' "$work/bare.csv")" \
    "$(awk -F, '$1=="bandwidth"{print $4*1000}' "$work/bare.csv")"
}
# The standard tools over the same path: iperf3 streams 1 MiB writes with
# cubic (as rocl's connections); sockperf ping-pongs its smallest message
# (14 B) with blocking receives.
iperf() { # ROUND
  command -v iperf3 >/dev/null || return 0
  "$hosts" exec h2 -- iperf3 -s -1 -B 10.201.0.2 -p 5557 >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  "$hosts" exec h1 -- iperf3 -c 10.201.0.2 -p 5557 -l 1M -C cubic -t "$tool_seconds" -J \
    >"$work/iperf.json" 2>&1 || true
  wait "$server" || true
  row "$1" iperf3 - "$(python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e6)
except Exception: print("-")' "$work/iperf.json")"
}
sockperf_run() { # ROUND
  command -v sockperf >/dev/null || return 0
  "$hosts" exec h2 -- sockperf server --tcp -i 10.201.0.2 -p 5558 >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  row "$1" sockperf "$("$hosts" exec h1 -- sockperf ping-pong --tcp -i 10.201.0.2 -p 5558 \
    -t "$tool_seconds" 2>&1 | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p')"
  kill "$server" 2>/dev/null || true
  wait "$server" || true
}
rocl() { # ROUND NAME [ROCL_WAIT]
  ROCL_WAIT=${3:-auto} ROCL_TRANSPORTS=inproc,tcp "$roclrun" --launcher netns --timeout 300 --hosts h1,h2 -n 2 \
    "$build/bench/rocl-bench/rocl-bench" latency bandwidth --sizes 8,1M --bandwidth-sizes 1M \
    --pairs 1 --reps "$reps" --time "$seconds" --window 64 --process-rank tcp \
    --rows-out "$work/rocl.csv" --no-cpu-pin >"$work/rocl.out" 2>&1 ||
    { echo "rocl-bench across hosts failed:" >&2; cat "$work/rocl.out" >&2; exit 1; }
  row "$1" "$2" "$(awk -F, '$1=="tcp-latency"&&$2==8{print $4}' "$work/rocl.csv")" \
    "$(awk -F, '$1=="tcp-bandwidth"&&$7=="MB/s"{print $4}' "$work/rocl.csv")"
}
# Open MPI's tcp BTL, its daemons started in the hosts through ip netns
# exec; --bind-to none, since each host would bind its one rank to cpu 0.
ompi() { # ROUND [NAME]
  [ -x "$anchor" ] && command -v mpirun.openmpi >/dev/null || return 0
  if "$hosts" exec h1 -- mpirun.openmpi --allow-run-as-root --host h1,h2 --bind-to none \
    --mca plm_rsh_agent "$work/netns-rsh" --mca btl tcp,self --mca btl_tcp_if_include eth0 \
    --mca oob_tcp_if_include eth0 -n 2 "$anchor" --sizes 8 --bw-sizes 1M --reps "$reps" \
    --time "$seconds" >"$work/ompi.out" 2>&1; then
    row "$1" "${2:-ompi}" "$(awk -F, '$1=="latency"&&$2==8{print $4}' "$work/ompi.out")" \
      "$(awk -F, '$1=="bandwidth"{print $4*1000}' "$work/ompi.out")"
  else
    echo "# Open MPI across the hosts failed: $(tail -3 "$work/ompi.out" | tr '\n' ' ')"
  fi
}
for ((r = 1; r <= rounds; ++r)); do
  bare "$r" bare-poll
  bare "$r" bare-block --block
  iperf "$r"
  sockperf_run "$r"
  rocl "$r" rocl
  rocl "$r" rocl-spin spin
  ompi "$r"
done
python3 "$here/tcp_table.py" "$rows"
[ -z "${ROCL_HOSTS_BENCH_ROWS:-}" ] || cp "$rows" "$ROCL_HOSTS_BENCH_ROWS"

[ -n "$loads" ] || exit 0
echo
echo "## tcp between h1 and h2 beside K busy loops per cpu: rocl, Open MPI, a bare socket"
echo "# $rounds rounds, each running every K once (median of $reps runs each)"
rows=$work/load.csv
: >"$rows"
for ((r = 1; r <= rounds; ++r)); do
  for k in $(tr ',' ' ' <<<"$loads"); do
    start_hogs "$k"
    rocl "$r" "load$k-rocl"
    ompi "$r" "load$k-ompi"
    bare "$r" "load$k-bare" --block
    stop_hogs
  done
done
python3 "$here/load_table.py" "$rows"
