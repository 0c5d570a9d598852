#!/usr/bin/env bash
# check_subproject.sh SOURCE_DIR WORK_DIR: configures subproject/, which
# adds rocl with add_subdirectory, and checks that the library, its MPI
# layer and the user tools are built and installed there too, while the
# tests, examples and benchmarks (top level only) are not. Configures only.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
cmake -S "$src/tests/install/subproject" -B "$work" -G Ninja -DROCL_SOURCE_DIR="$src" \
  >"$work.log" 2>&1 || {
  cat "$work.log" >&2
  exit 1
}
targets=$(ninja -C "$work" -t targets all | sed 's/:.*//')
status=0
for t in rocl rocl_mpi roclrun rocld rocl-dir rocl-info; do
  grep -qx "$t" <<<"$targets" || {
    echo "check_subproject: no target $t" >&2
    status=1
  }
done
for t in rocl-bench rocl-demo status_test rocl-mpi-tests; do
  if grep -qx "$t" <<<"$targets"; then
    echo "check_subproject: target $t is built below another project" >&2
    status=1
  fi
done
for t in roclrun rocld rocl-dir rocl-info rocl-mpicc rocl-mpicxx librocl librocl_mpi rocl.pc; do
  grep -rqF -- "$t" "$work"/rocl/cmake_install.cmake "$work"/rocl/*/cmake_install.cmake \
    "$work"/rocl/*/*/cmake_install.cmake || {
    echo "check_subproject: $t is not installed" >&2
    status=1
  }
done
[ $status = 0 ] && echo "check_subproject: ok"
exit $status
