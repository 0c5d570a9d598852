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
#   dir_protocol_fuzz  the directory client protocol: requests, replies,
#              batches of answers, attribute lists
#              (tests/fuzz/dir_protocol_fuzz.cpp)
#   tcp_hello_fuzz  the tcp transport's handshake: a connector's Hello and
#              its answer to the challenge (tests/fuzz/tcp_hello_fuzz.cpp)
#   shm_connect_fuzz  what an shm connection reads of the other process:
#              its address, its inbox's header, its Hello
#              (tests/fuzz/shm_connect_fuzz.cpp)
#   pvm_unpack_fuzz  PVM's pvm_upk* and pvm_upkstr over a received message
#              (tests/fuzz/pvm_unpack_fuzz.cpp)
#   ncs_wire_fuzz  the header of NCS messages, their checksum and credits
#              (tests/fuzz/ncs_wire_fuzz.cpp)
# and runs each for a while over the seeds the binary writes itself and the
# kept corpus tests/fuzz/corpus/<target>/ (read only).
#   scripts/fuzz.sh [seconds]      (default 20, for each target; a campaign:
#                                  scripts/fuzz.sh 3600)
#   scripts/fuzz.sh --update-corpus [seconds]
#                                  (default 60) runs each target, then merges
#                                  what it found that covers more into
#                                  tests/fuzz/corpus/<target>/ (libFuzzer
#                                  -merge=1); commit the files it adds
# FUZZ_TARGETS="dir_protocol peer" builds and runs only those (names
# without _fuzz), e.g. for a campaign of one target at a time.
# FUZZ_OUT=<dir> (default build-fuzz; relative to the repository's root)
# is where the output goes, so that two campaigns can run side by side,
# each with a folder of its own (e.g. FUZZ_OUT=build-fuzz-peer).
# FUZZ_TIMEOUT=<s> (default 10) is libFuzzer's -timeout: an input that runs
# longer fails as a timeout. It is wall-clock time per input, so a campaign
# beside other load (another campaign, a build) wants more, e.g. 60.
# Output in $FUZZ_OUT: the binaries, corpus/<target>/ (seeds plus what the
# fuzzer found interesting) and <target>-crash-*/leak-*/timeout-* files if
# it failed.
# Exits non-zero when a build fails or a fuzzer finds a crash (after all
# have run), or when the kept corpus grows past 2 MB.
set -euo pipefail
cd "$(dirname "$0")/.."

bad_usage() {
  echo "fuzz.sh: $* (see scripts/fuzz.sh --help)" >&2
  exit 2
}
update=0
case ${1:-} in
-h | --help)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
  ;;
--update-corpus)
  update=1
  shift
  ;;
-*) bad_usage "unknown option '$1'" ;;
esac
[ $# -le 1 ] || bad_usage "one argument at most, the seconds for each target"
if [ "$update" = 1 ]; then seconds="${1:-60}"; else seconds="${1:-20}"; fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  bad_usage "the seconds for each target must be a whole number from 1, not '$seconds'"
fi
all_targets=(wire peer rma_wire ucx_wire stripe dir_protocol tcp_hello shm_connect pvm_unpack
  ncs_wire)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
for target in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $target "* ]] ||
    bad_usage "FUZZ_TARGETS: no target '$target' (the targets: ${all_targets[*]})"
done
out="${FUZZ_OUT:-build-fuzz}"
timeout="${FUZZ_TIMEOUT:-10}"
if ! [[ "$timeout" =~ ^[0-9]+$ ]] || [ "$timeout" -lt 1 ]; then
  bad_usage "FUZZ_TIMEOUT: a whole number of seconds from 1, not '$timeout'"
fi
cxx="${CXX_FUZZ:-clang++-14}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found; scripts/setup.sh installs clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi

kept_root=tests/fuzz/corpus
kept_limit_kb=2048
mkdir -p "$out"
# shellcheck disable=SC2054 # -fsanitize= takes a list with commas
flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I include -I src)
# build TARGET: $out/TARGET_fuzz from its harness and the sources it reads.
build() {
  local srcs
  case $1 in
  wire) srcs=("${wire_sources[@]}" src/status/status.cpp) ;;
  peer)
    srcs=(src/directory/peer_protocol.cpp src/directory/attr_list.cpp
      src/directory/spawn_request.cpp src/security/job_secret.cpp src/status/status.cpp -lcrypto)
    ;;
  rma_wire) srcs=(-I layers/mpi/include -I layers/mpi/src layers/mpi/src/rma_wire.cpp) ;;
  ucx_wire) srcs=(src/security/job_secret.cpp src/status/status.cpp -lcrypto) ;;
  stripe)
    srcs=(src/core/stripe_reassembly.cpp src/buffer/buffer_pool.cpp src/buffer/buddy_allocator.cpp
      src/buffer/region.cpp src/status/status.cpp)
    ;;
  dir_protocol)
    srcs=(src/directory/dir_protocol.cpp src/directory/attr_list.cpp src/status/status.cpp)
    ;;
  tcp_hello)
    srcs=(src/transport/tcp/tcp_hello.cpp src/transport/tcp/tcp_socket.cpp src/os/net.cpp
      src/security/job_secret.cpp src/status/status.cpp -lcrypto)
    ;;
  shm_connect)
    srcs=(src/transport/shm/shm_handshake.cpp src/security/job_secret.cpp src/status/status.cpp
      -lcrypto)
    ;;
  pvm_unpack) srcs=(-I layers/pvm/include -I layers/pvm/src layers/pvm/src/message_buffer.cpp) ;;
  ncs_wire)
    srcs=(-I layers/ncs/include -I layers/ncs/src layers/ncs/src/wire.cpp
      layers/ncs/src/credits.cpp)
    ;;
  esac
  "$cxx" "${flags[@]}" "tests/fuzz/$1_fuzz.cpp" "${srcs[@]}" -o "$out/$1_fuzz"
}
wire_sources=()
for f in src/wire/*.cpp; do
  case "$f" in *_test.cpp) ;; *) wire_sources+=("$f") ;; esac
done
# Only the targets that run are built, so that side-by-side campaigns do
# not each compile all of them.
for target in "${targets[@]}"; do build "$target"; done

# The largest single allocation a target may make (-malloc_limit_mb): the
# newer targets' parsers are bounded by their protocols' limits, far below.
malloc_mb() {
  case $1 in
  dir_protocol | tcp_hello | shm_connect | pvm_unpack | ncs_wire) echo 16 ;;
  *) echo 2048 ;;
  esac
}

status=0
for target in "${targets[@]}"; do
  bin="$out/${target}_fuzz"
  corpus="$out/corpus/$target"
  kept="$kept_root/$target"
  mkdir -p "$corpus"
  ROCL_FUZZ_WRITE_SEEDS="$corpus" "$bin"
  dirs=("$corpus")
  [ ! -d "$kept" ] || dirs+=("$kept")
  echo "fuzz: ${target}_fuzz for $seconds s"
  # libFuzzer exits non-zero (and writes <target>-crash-<sha1>) when an input
  # crashes, trips a sanitizer or an invariant of the target. New inputs go
  # to the first folder only: the kept corpus is read.
  options=(-rss_limit_mb=2048 -malloc_limit_mb="$(malloc_mb "$target")" -timeout="$timeout")
  rc=0
  "$bin" -max_total_time="$seconds" "${options[@]}" -print_final_stats=1 \
    -artifact_prefix="$out/${target}-" "${dirs[@]}" || rc=$?
  if [ "$rc" = 0 ] && [ "$update" = 1 ]; then
    mkdir -p "$kept"
    echo "fuzz: merging ${target}_fuzz's new inputs into $kept"
    "$bin" -merge=1 "${options[@]}" "$kept" "$corpus" || rc=$?
  fi
  if [ "$rc" != 0 ]; then
    echo "fuzz: ${target}_fuzz failed (exit $rc)" >&2
    [ "$status" != 0 ] || status=$rc
  fi
done
if [ -d "$kept_root" ]; then
  kb=$(du -s --apparent-size --block-size=1K "$kept_root" | cut -f1)
  echo "fuzz: the kept corpus ($kept_root) takes $kb KiB"
  if [ "$kb" -ge "$kept_limit_kb" ]; then
    echo "fuzz: the kept corpus is past $kept_limit_kb KiB: minimise it (see docs/testing.md)" >&2
    [ "$status" != 0 ] || status=1
  fi
fi
exit "$status"
