#!/usr/bin/env bash
# tables.sh - the NCS paper's tables 1-3 on the test hosts: each application
# (matrix multiplication, JPEG, DIF FFT) single-threaded and multithreaded
# on NCS, and single-threaded on Open MPI when mpicc.openmpi built it, on 1,
# 2 and 4 test hosts (one process per host) under a LAN-like and a WAN-like
# rate; prints the execution times and the multithreaded version's
# improvement as markdown tables (docs/ncs.md, "Reproducing tables 1-3").
# Run as root; the hosts are made with the prefix $ROCL_NETNS_PREFIX
# (default ncs) and taken down at the end.
#
#   examples/ncs/tables.sh [--build DIR] [--lan RATE] [--wan RATE]
#       [--hosts "1 2 4"] [--repeat R] [--matmul N] [--jpeg "W H"]
#       [--fft "M SETS"] [--no-openmpi]
set -euo pipefail

me=tables.sh
here=$(cd "$(dirname "$0")" && pwd)
hosts_sh=$here/../../tests/netns/hosts.sh
build=build
lan=1gbit
wan=100mbit
host_counts="1 2 4"
repeat=3
matmul_args="1000"
jpeg_args="3000 2000"
fft_args="131072 8"
openmpi=1

bad_usage() {
  echo "$me: $* (see $me --help)" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  --build | --lan | --wan | --hosts | --repeat | --matmul | --jpeg | --fft)
    [ $# -ge 2 ] || bad_usage "$1 needs a value"
    case $1 in
    --build) build=$2 ;;
    --lan) lan=$2 ;;
    --wan) wan=$2 ;;
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
for n in $host_counts; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || bad_usage "--hosts takes counts of hosts from 1, not '$n'"
done
[ "$(id -u)" -eq 0 ] || {
  echo "$me: run as root (the test hosts are network namespaces)" >&2
  exit 77
}
build=$(cd "$build" && pwd)
roclrun=$build/tools/roclrun/roclrun
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
# the host's namespace instead of logging in to it.
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

# The median of $repeat runs.
run_median() {
  local i t times=()
  for ((i = 0; i < repeat; ++i)); do
    t=$(run_once "$@")
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

declare -A time
max_hosts=0
for n in $host_counts; do [ "$n" -gt "$max_hosts" ] && max_hosts=$n; done
for net in lan wan; do
  rate=$lan
  [ $net = wan ] && rate=$wan
  "$hosts_sh" up "$max_hosts" --nets 1 --rate "$rate" >/dev/null
  for app in "${apps[@]}"; do
    for n in $host_counts; do
      for version in "${versions[@]}"; do
        time[$app,$net,$n,$version]=$(run_median "$app" "$version" "$n")
        echo "$me: $app $version, $n host(s), $net ($rate): ${time[$app,$net,$n,$version]} s" >&2
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
  echo "Table $table: $title (median of $repeat runs; LAN $lan, WAN $wan)"
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
