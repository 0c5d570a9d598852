#!/usr/bin/env bash
# Quick start, command 1: sets up, builds and runs the demo: two processes
# of rocl-demo under roclrun, each with worker threads that find each other
# and exchange messages; a table of figures ends it. Arguments go to
# rocl-demo (--threads N, --quick); build/examples/rocl-demo alone runs the
# threads of one process. Builds only what it runs (rocl-demo, roclrun);
# scripts/test.sh builds the rest in the same folder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target rocl-demo --target roclrun build -DCMAKE_BUILD_TYPE=Release
exec build/tools/roclrun/roclrun --timeout 60 -n 2 build/examples/rocl-demo "$@"
