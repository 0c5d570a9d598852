#!/usr/bin/env bash
# Quick start, command 2: sets up, builds and runs every test.
# Extra arguments go to ctest (e.g. -L unit, -R api).
set -euo pipefail
case ${1:-} in
-h | --help)
  echo "usage: scripts/test.sh [ctest arguments...]"
  echo "Sets up, builds (build/, Release) and runs every test; the arguments go to"
  echo "ctest (e.g. -L unit, -R api; ctest --help lists them)."
  exit 0
  ;;
esac
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build --output-on-failure --timeout 600 -j 2 "$@"
