#!/usr/bin/env bash
# build.sh [--target T]... DIR [cmake args...]: configures rocl in DIR
# (once) and builds it: everything, or only the targets named.
set -euo pipefail
cd "$(dirname "$0")/.."
bad_usage() {
  echo "build.sh: $* (see scripts/build.sh --help)" >&2
  exit 2
}
targets=()
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help)
    echo "usage: scripts/build.sh [--target T]... DIR [cmake args...]"
    echo "Configures rocl in DIR (once, with the cmake args) and builds it: everything,"
    echo "or only the targets named."
    exit 0
    ;;
  --target)
    [ $# -ge 2 ] || bad_usage "--target needs a name"
    targets+=("$2")
    shift 2
    ;;
  -*) bad_usage "unknown option '$1'" ;;
  *) break ;;
  esac
done
[ $# -ge 1 ] || bad_usage "no build folder given"
dir=$1
shift
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
fi
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$(nproc)"
fi
