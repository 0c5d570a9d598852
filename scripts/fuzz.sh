#!/usr/bin/env bash
# Builds the libFuzzer target for the wire validator
# (tests/fuzz/wire_fuzz.cpp) with clang++-14 outside the CMake project, and
# runs it for a while over a seed corpus the binary writes itself.
#   scripts/fuzz.sh [seconds]      (default 20)
# Output in build-fuzz/: the binary, corpus/ (seeds plus what the fuzzer
# found interesting) and crash-*/leak-*/timeout-* files if it failed.
# Exits non-zero when the build fails or the fuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [seconds]" >&2
  exit 2
fi
cxx="${CXX_FUZZ:-clang++-14}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found; scripts/setup.sh installs clang-14 and libclang-rt-14-dev" >&2
  exit 2
fi

out=build-fuzz
mkdir -p "$out/corpus"
sources=()
for f in src/wire/*.cpp; do
  case "$f" in *_test.cpp) ;; *) sources+=("$f") ;; esac
done
"$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I include -I src \
  tests/fuzz/wire_fuzz.cpp "${sources[@]}" src/status/status.cpp \
  -o "$out/wire_fuzz"

ROCL_FUZZ_WRITE_SEEDS="$out/corpus" "$out/wire_fuzz"

# libFuzzer exits non-zero (and writes crash-<sha1>) when an input crashes,
# trips a sanitizer or an invariant of the target.
"$out/wire_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus"
