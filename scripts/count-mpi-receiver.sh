#!/bin/bash
# count-mpi-receiver.sh - instructions per message on the receiving side of
# rocl's MPI, counted rather than timed (timings on this VM move with its
# phases; counts do not), for one or more builds side by side.
#
# Usage: scripts/count-mpi-receiver.sh [--transport shm|tcp] [--sender] BUILD...
#
# BUILD is a build directory of any commit (Release with -g is best:
# -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -g"; `ninja rocl_mpi roclrun`).
# bench/counts/mpi_receiver.c is compiled with its layers/mpi/rocl-mpicc
# and run under its roclrun -n 2, rank 1 under valgrind's callgrind
# counting only post_window (64 MPI_Irecv) or only wait_window (their
# MPI_Waitall, every message arrived: the completions, not the
# deliveries, which rocl's shm progress thread made while rank 1 slept).
# Prints instructions per message for each. With --sender, rank 0 instead:
# send_window (64 MPI_Isend, each copied into the ring at once) and
# wait_sends (their MPI_Waitall). Needs valgrind.
set -euo pipefail
transport=shm
rank=1
fns=(post_window wait_window)
while [[ ${1:-} == --transport || ${1:-} == --sender ]]; do
  if [[ $1 == --sender ]]; then
    rank=0
    fns=(send_window wait_sends)
    shift
  else
    transport=$2
    shift 2
  fi
done
if [[ $# -eq 0 || ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,19p' "$0"
  exit 0
fi
if ! command -v valgrind > /dev/null; then
  echo "count-mpi-receiver.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 1
fi
src=$(cd "$(dirname "$0")/.." && pwd)/bench/counts/mpi_receiver.c
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/wrap.sh" << 'WRAP'
#!/bin/bash
if [[ $ROCL_RANK == "$COUNT_RANK" ]]; then
  exec valgrind --tool=callgrind --callgrind-out-file="$COUNT_OUT" --collect-atstart=no \
    --toggle-collect="$COUNT_FN" "$@"
fi
exec "$@"
WRAP
chmod +x "$work/wrap.sh"
printf '%-40s %14s %14s\n' build "${fns[0]}" "${fns[1]}"
for b in "$@"; do
  for tool in layers/mpi/rocl-mpicc tools/roclrun/roclrun; do
    if [[ ! -x $b/$tool ]]; then
      echo "count-mpi-receiver.sh: $b/$tool is missing (build it first)" >&2
      exit 1
    fi
  done
  "$b/layers/mpi/rocl-mpicc" -O2 -g -o "$work/receiver" "$src"
  line=$(printf '%-40s' "$b")
  for fn in "${fns[@]}"; do
    out=$(ROCL_TRANSPORTS=$transport COUNT_RANK=$rank COUNT_FN=$fn COUNT_OUT="$work/cg.out" \
      "$b/tools/roclrun/roclrun" -n 2 "$work/wrap.sh" "$work/receiver" 2>&1) || {
      echo "count-mpi-receiver.sh: the run of $b failed:" >&2
      echo "$out" >&2
      exit 1
    }
    messages=$(sed -n "s/^\[$rank\] messages \([0-9]*\)$/\1/p" <<< "$out")
    total=$(sed -n 's/^totals: //p' "$work/cg.out")
    line+=$(printf ' %14s' "$((total / messages))")
  done
  echo "$line"
done
