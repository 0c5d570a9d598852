#!/usr/bin/env bash
# Quick start, command 1: sets up, builds and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release
exec build/examples/rocl-demo "$@"
