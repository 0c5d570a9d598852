#!/usr/bin/env bash
# Builds the libFuzzer targets with clang++-14 outside the CMake project:
#   wire_fuzz  the wire validator (tests/fuzz/wire_fuzz.cpp)
#   peer_fuzz  the directory servers' peer packets (tests/fuzz/peer_fuzz.cpp)
#   rma_wire_fuzz  the requests of MPI one-sided operations
#              (tests/fuzz/rma_wire_fuzz.cpp)
#   ucx_wire_fuzz  the header of the ucx transport's active messages and
#              a hello's proof (tests/fuzz/ucx_wire_fuzz.cpp)
#   stripe_fuzz  the fragments of striped messages and their reassembly
#              (tests/fuzz/stripe_fuzz.cpp)
# and runs each for a while over a seed corpus the binary writes itself.
#   scripts/fuzz.sh [seconds]      (default 20, for each target)
# Output in build-fuzz/: the binaries, corpus/<target>/ (seeds plus what the
# fuzzer found interesting) and <target>-crash-*/leak-*/timeout-* files if
# it failed.
# Exits non-zero when a build fails or a fuzzer finds a crash (after all
# have run).
set -euo pipefail
cd "$(dirname "$0")/.."

bad_usage() {
  echo "fuzz.sh: $* (see scripts/fuzz.sh --help)" >&2
  exit 2
}
case ${1:-} in
-h | --help)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
  ;;
-*) bad_usage "unknown option '$1'" ;;
esac
[ $# -le 1 ] || bad_usage "one argument at most, the seconds for each target"
seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  bad_usage "the seconds for each target must be a whole number from 1, not '$seconds'"
fi
cxx="${CXX_FUZZ:-clang++-14}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found; scripts/setup.sh installs clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi

out=build-fuzz
mkdir -p "$out"
flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I include -I src)
sources=()
for f in src/wire/*.cpp; do
  case "$f" in *_test.cpp) ;; *) sources+=("$f") ;; esac
done
"$cxx" "${flags[@]}" tests/fuzz/wire_fuzz.cpp "${sources[@]}" src/status/status.cpp \
  -o "$out/wire_fuzz"
"$cxx" "${flags[@]}" tests/fuzz/peer_fuzz.cpp src/directory/peer_protocol.cpp \
  src/directory/attr_list.cpp src/directory/spawn_request.cpp src/security/job_secret.cpp \
  src/status/status.cpp -lcrypto \
  -o "$out/peer_fuzz"
"$cxx" "${flags[@]}" -I layers/mpi/include -I layers/mpi/src tests/fuzz/rma_wire_fuzz.cpp \
  layers/mpi/src/rma_wire.cpp -o "$out/rma_wire_fuzz"
"$cxx" "${flags[@]}" tests/fuzz/ucx_wire_fuzz.cpp src/security/job_secret.cpp \
  src/status/status.cpp -lcrypto -o "$out/ucx_wire_fuzz"
"$cxx" "${flags[@]}" tests/fuzz/stripe_fuzz.cpp src/core/stripe_reassembly.cpp \
  src/buffer/buffer_pool.cpp src/buffer/buddy_allocator.cpp src/buffer/region.cpp \
  src/status/status.cpp -o "$out/stripe_fuzz"

status=0
for target in wire peer rma_wire ucx_wire stripe; do
  corpus="$out/corpus/$target"
  mkdir -p "$corpus"
  ROCL_FUZZ_WRITE_SEEDS="$corpus" "$out/${target}_fuzz"
  echo "fuzz: ${target}_fuzz for $seconds s"
  # libFuzzer exits non-zero (and writes <target>-crash-<sha1>) when an input
  # crashes, trips a sanitizer or an invariant of the target.
  rc=0
  "$out/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$out/${target}-" "$corpus" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "fuzz: ${target}_fuzz failed (exit $rc)" >&2
    [ "$status" != 0 ] || status=$rc
  fi
done
exit "$status"
