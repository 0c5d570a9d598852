#!/usr/bin/env bash
# check_deb.sh [BUILD_DIR]: makes the Debian package of BUILD_DIR (default
# build) with `cpack -G DEB`, installs it with apt-get as a user would
# (`apt-get install ./rocl_*.deb`), checks that the installed roclrun,
# rocl-mpicc, pkg-config and find_package(rocl) work from /usr (an MPI
# program built with rocl-mpicc and a C program built with pkg-config, each
# run as 2 processes under roclrun; the C++ program with CMake), and
# purges the package again, also when a check fails. Needs root; refuses to
# run when a package rocl is installed already (it would replace it).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
build=$(cd "${1:-build}" && pwd)
programs=$src/tests/install/consumer
step() { echo "-- $*"; }
fail() {
  echo "check_deb: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "needs root (apt-get install)"
if dpkg-query -W -f='${Status}' rocl 2>/dev/null | grep -q "install ok installed"; then
  fail "a package rocl is installed already; apt-get purge rocl first"
fi
work=$(mktemp -d)
installed=no
cleanup() {
  if [ $installed = yes ]; then
    # purge: remove would leave the package listed (its postrm runs ldconfig)
    echo "-- apt-get purge rocl"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq rocl >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT
trap "exit 143" TERM

step "cpack -G DEB in $build"
(cd "$build" && cpack -G DEB -B "$work/package") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log" >&2
  fail "cpack failed"
}
deb=$(find "$work/package" -maxdepth 1 -name 'rocl_*.deb')
[ -n "$deb" ] || fail "cpack made no rocl_*.deb"
dpkg-deb --field "$deb" Package Version Architecture Depends Maintainer

step "apt-get install ./$(basename "$deb")"
installed=yes
(cd "$work/package" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$(basename "$deb")") \
  >"$work/apt.log" 2>&1 || {
  cat "$work/apt.log" >&2
  fail "apt-get install failed"
}

# From here on only the system's paths: nothing of the build tree.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
cd "$work"
for tool in roclrun rocld rocl-dir rocl-info rocl-mpicc rocl-mpicxx; do
  [ "$(command -v $tool)" = /usr/bin/$tool ] || fail "$tool is not /usr/bin/$tool"
done
rocl-info >/dev/null || fail "rocl-info failed"

run2() {
  local out
  out=$(roclrun --timeout 60 -n 2 "$@" 2>&1) || fail "roclrun -n 2 $*: $out"
  echo "$out"
}

step "rocl-mpicc, then roclrun -n 2"
rocl-mpicc -O2 -o mpi_ring "$programs/mpi_ring.c"
run2 ./mpi_ring | grep "consumer_mpi: ok (2 ranks" || fail "mpi_ring did not say ok"

step "pkg-config --cflags --libs rocl: $(pkg-config --cflags --libs rocl)"
# shellcheck disable=SC2046  # word splitting of pkg-config's output is meant
cc -o consumer_c "$programs/main.c" $(pkg-config --cflags --libs rocl)
run2 ./consumer_c | grep -c "consumer_c: ok" | grep -qx 2 || fail "consumer_c did not say ok twice"
echo "consumer_c: ok in both ranks"

step "find_package(rocl) from /usr"
cmake -S "$programs" -B cmake -G Ninja -DCMAKE_BUILD_TYPE=Release >cmake.log 2>&1 &&
  cmake --build cmake >>cmake.log 2>&1 || {
  cat cmake.log >&2
  fail "the CMake consumer failed"
}
./cmake/consumer_cpp
echo "check_deb: ok"
