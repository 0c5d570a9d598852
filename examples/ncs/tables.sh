#!/usr/bin/env bash
# tables.sh - the NCS paper's tables 1-3 on the test hosts: each application
# (matrix multiplication, JPEG, DIF FFT) single-threaded and multithreaded
# on NCS, and single-threaded on Open MPI when mpicc.openmpi built it, on 1,
# 2, 4 and 8 test hosts (one process per host) on a LAN-like network (a
# rate) and a WAN-like one (a rate, and a delay between two sites of half
# the hosts each); prints the execution times and the multithreaded
# version's improvement as markdown tables (docs/ncs.md, "Reproducing
# tables 1-3"), and with --plot draws the improvements (gnuplot).
# Run as root; the hosts are made with the prefix $ROCL_NETNS_PREFIX
# (default ncs) and taken down at the end.
#
#   examples/ncs/tables.sh [--build DIR] [--lan RATE] [--wan RATE]
#       [--wan-delay MS] [--hosts "1 2 4 8"] [--repeat R] [--matmul N]
#       [--jpeg "W H"] [--fft "M SETS"] [--no-openmpi] [--plot FILE.svg]
set -euo pipefail

me=tables.sh
here=$(cd "$(dirname "$0")" && pwd)
hosts_sh=$here/../../tests/netns/hosts.sh
build=build
lan=1gbit
wan=100mbit
wan_delay=10
host_counts="1 2 4 8"
repeat=3
matmul_args="2000"
jpeg_args="3000 2000"
fft_args="131072 8"
openmpi=1
plot=""

bad_usage() {
  echo "$me: $* (see $me --help)" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  --build | --lan | --wan | --wan-delay | --plot | --hosts | --repeat | --matmul | --jpeg | --fft)
    [ $# -ge 2 ] || bad_usage "$1 needs a value"
    case $1 in
    --build) build=$2 ;;
    --lan) lan=$2 ;;
    --wan) wan=$2 ;;
    --wan-delay) wan_delay=$2 ;;
    --plot) plot=$2 ;;
    --hosts) host_counts=$2 ;;
    --repeat) repeat=$2 ;;
    --matmul) matmul_args=$2 ;;
    --jpeg) jpeg_args=$2 ;;
    --fft) fft_args=$2 ;;
    esac
    shift
    ;;
  --no-openmpi) openmpi=0 ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) bad_usage "unexpected argument '$1'" ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || bad_usage "--repeat takes a count from 1, not '$repeat'"
[[ $wan_delay =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad_usage "--wan-delay takes milliseconds, not '$wan_delay'"
for n in $host_counts; do
  [[ $n =~ ^[1-9][0-9]?$ ]] || bad_usage "--hosts takes host counts from 1 to 64, not '$n'"
done
[ "$(id -u)" -eq 0 ] || {
  echo "$me: run as root (the test hosts are network namespaces)" >&2
  exit 77
}
build=$(cd "$build" && pwd)
roclrun=$build/tools/roclrun/roclrun
export ROCL_DELAYLINE=${ROCL_DELAYLINE:-$build/tests/netns/delayline}
if [ "$wan_delay" != 0 ] && [ ! -x "$ROCL_DELAYLINE" ]; then
  echo "$me: $ROCL_DELAYLINE is not built (ninja -C $build netns_delayline), or use --wan-delay 0" >&2
  exit 1
fi
apps=(matmul jpeg fft)
for app in "${apps[@]}"; do
  for program in "$build/examples/ncs/ncs_${app}_st" "$build/examples/ncs/ncs_${app}_mt" "$roclrun"; do
    [ -x "$program" ] || {
      echo "$me: $program is not built (ninja -C $build ncs_${app}_st ncs_${app}_mt roclrun)" >&2
      exit 1
    }
  done
done

export ROCL_NETNS_PREFIX=${ROCL_NETNS_PREFIX:-ncs}
prefix=$ROCL_NETNS_PREFIX
work=$(mktemp -d /tmp/rocl-ncs-tables.XXXXXX)
cleanup() {
  "$hosts_sh" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Open MPI reaches the other hosts through its rsh agent: this one enters
# the host's namespace instead of logging in to it. It connects every pair
# of ranks in MPI_Init (mpi_preconnect_mpi), as NCS_init does, so that
# neither pays for connections inside the timed work.
cat >"$work/omp-agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
exec ip netns exec "$prefix-\$host" sh -c "\$*"
AGENT
chmod +x "$work/omp-agent.sh"

args_of() {
  case $1 in
  matmul) echo "$matmul_args" ;;
  jpeg) echo "$jpeg_args" ;;
  fft) echo "$fft_args" ;;
  esac
}

host_list() { # 3 -> h1,h2,h3
  local i list=h1
  for ((i = 2; i <= $1; ++i)); do list+=",h$i"; done
  echo "$list"
}

# One run; prints its time in seconds, or "FAILED" (the output is kept in
# $work/last.out, and appended to $work/all.out).
run_once() {
  local app=$1 version=$2 hosts=$3 out=$work/last.out label=$2
  local -a args
  read -r -a args <<<"$(args_of "$app")"
  if [ "$version" = openmpi ]; then
    ip netns exec "$prefix-h1" timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe \
      --host "$(host_list "$hosts")" -np "$hosts" --mca plm_rsh_agent "$work/omp-agent.sh" \
      --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
      --mca mpi_preconnect_mpi 1 \
      "$build/examples/ncs/mpi/${app}_mpi.openmpi" "${args[@]}" >"$out" 2>&1 || true
    version=mpi
  else
    "$roclrun" --launcher netns --timeout 600 --hosts "$(host_list "$hosts")" -n "$hosts" \
      "$build/examples/ncs/ncs_${app}_${version}" "${args[@]}" >"$out" 2>&1 || true
  fi
  cat "$out" >>"$work/all.out"
  local time
  time=$(grep -E "${app}_${version}: OK" "$out" | grep -oE 'time=[0-9.]+' | cut -d= -f2 || true)
  if [ -z "$time" ]; then
    echo "$me: ${app} ${label} on ${hosts} host(s) failed:" >&2
    tail -5 "$out" >&2
    echo FAILED
  else
    echo "$time"
  fi
}

# The median of $repeat runs; a failed run is tried once more (Open MPI's
# tcp BTL now and then fails to connect between the namespaces), and a
# second failure fails the point.
run_median() {
  local i t times=()
  for ((i = 0; i < repeat; ++i)); do
    t=$(run_once "$@")
    [ "$t" = FAILED ] && t=$(run_once "$@")
    [ "$t" = FAILED ] && {
      echo FAILED
      return
    }
    times+=("$t")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'
}

versions=(st mt)
if [ "$openmpi" = 1 ] && command -v mpirun.openmpi >/dev/null &&
  [ -x "$build/examples/ncs/mpi/matmul_mpi.openmpi" ]; then
  versions+=(openmpi)
else
  openmpi=0
  echo "$me: no Open MPI builds (mpicc.openmpi, mpirun.openmpi): its column is left out" >&2
fi

# The hosts are made anew for each count, so that with a delay the first
# half (h1 ..) is one site and the second half the other: from 2 hosts on,
# the master's messages to half of the hosts cross the delay line.
declare -A time
for net in lan wan; do
  rate=$lan
  delay_args=()
  if [ $net = wan ]; then
    rate=$wan
    [ "$wan_delay" != 0 ] && delay_args=(--delay "$wan_delay")
  fi
  for n in $host_counts; do
    "$hosts_sh" up "$n" --nets 1 --rate "$rate" "${delay_args[@]}" >/dev/null
    for app in "${apps[@]}"; do
      for version in "${versions[@]}"; do
        time[$app,$net,$n,$version]=$(run_median "$app" "$version" "$n")
        echo "$me: $app $version, $n host(s), $net ($rate${delay_args[*]:+, ${wan_delay} ms}): ${time[$app,$net,$n,$version]} s" >&2
      done
    done
  done
done
"$hosts_sh" down >/dev/null

improvement() { # st mt -> "12.3 %"
  awk -v st="$1" -v mt="$2" 'BEGIN {
    if (st + 0 > 0 && mt + 0 > 0) printf "%.1f %%", (st - mt) * 100 / st; else print "n/a" }'
}

table=1
for app in "${apps[@]}"; do
  case $app in
  matmul) title="matrix multiplication, n = $matmul_args" ;;
  jpeg) title="JPEG compression and decompression, ${jpeg_args/ /x} image" ;;
  fft) title="DIF FFT, M and sets = $fft_args" ;;
  esac
  echo
  echo "Table $table: $title (median of $repeat runs; LAN $lan, WAN $wan and $wan_delay ms one way between the sites)"
  echo
  header="| network | hosts | single-threaded (s) | multithreaded (s) | improvement |"
  rule="| --- | ---: | ---: | ---: | ---: |"
  if [ "$openmpi" = 1 ]; then
    header+=" Open MPI single-threaded (s) |"
    rule+=" ---: |"
  fi
  echo "$header"
  echo "$rule"
  for net in lan wan; do
    for n in $host_counts; do
      st=${time[$app,$net,$n,st]} mt=${time[$app,$net,$n,mt]}
      row="| ${net^^} | $n | $st | $mt | $(improvement "$st" "$mt") |"
      [ "$openmpi" = 1 ] && row+=" ${time[$app,$net,$n,openmpi]} |"
      echo "$row"
    done
  done
  table=$((table + 1))
done

[ -n "$plot" ] || exit 0
command -v gnuplot >/dev/null || {
  echo "$me: no gnuplot: no plot (apt-get install gnuplot-nox)" >&2
  exit 0
}
# The improvements, a line per application and network, against the hosts.
data=$work/improvement.dat
for app in "${apps[@]}"; do
  for net in lan wan; do
    echo "# $app $net"
    for n in $host_counts; do
      echo "$n $(improvement "${time[$app,$net,$n,st]}" "${time[$app,$net,$n,mt]}" | cut -d' ' -f1)"
    done
    printf '\n\n'
  done
done >"$data"
{
  echo "set terminal svg size 720,420 font 'sans,11'"
  echo "set output '$plot'"
  echo "set title 'NCS: multithreaded vs single-threaded (LAN $lan; WAN $wan, $wan_delay ms)'"
  echo "set xlabel 'test hosts'; set ylabel 'improvement (%)'; set logscale x 2"
  echo "set key outside right; set grid; set xtics (${host_counts// /, })"
  printf "plot"
  index=0
  for app in "${apps[@]}"; do
    for net in lan wan; do
      [ "$index" -gt 0 ] && printf ","
      printf " '%s' index %d using 1:2 with linespoints title '%s %s'" "$data" "$index" "$app" "${net^^}"
      index=$((index + 1))
    done
  done
  echo
} | gnuplot
echo "$me: plot written to $plot" >&2
