#!/usr/bin/env bash
# build.sh [--target T]... DIR [cmake args...]: configures rocl in DIR
# (once) and builds it: everything, or only the targets named.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ "${1:-}" = --target ]; do
  targets+=("${2:?--target needs a name}")
  shift 2
done
dir=${1:?usage: scripts/build.sh [--target T]... DIR [cmake args...]}
shift
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
fi
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$(nproc)"
fi
