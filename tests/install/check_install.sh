#!/usr/bin/env bash
# check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR: installs rocl from
# BUILD_DIR into WORK_DIR/prefix and, using only what is installed there,
# builds a C, a C++ and an MPI program (consumer/) twice, with CMake
# (find_package(rocl)) and with pkg-config (rocl.pc, rocl-mpi.pc), and the
# MPI one with the installed rocl-mpicc and rocl-mpicxx; runs them, the MPI
# ones as 2 processes under the installed roclrun. Then moves the prefix
# and runs the installed tools from their new place (they find the
# libraries relative to themselves, as in a package). Exits non-zero at the
# first failure, saying what failed.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix
programs=$src/tests/install/consumer
step() { echo "-- $*"; }
fail() {
  echo "check_install: $*" >&2
  exit 1
}

# Nothing from the build tree or the environment may help.
unset LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH PKG_CONFIG_PATH
unset CMAKE_PREFIX_PATH ROCL_MPICC_CC ROCL_MPICXX_CXX

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/roclrun bin/rocld bin/rocl-dir bin/rocl-info bin/rocl-mpicc bin/rocl-mpicxx \
  bin/rocl-mpi-alternatives \
  include/rocl/rocl.h include/rocl/rocl.hpp include/rocl/mpi/mpi.h; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
[ ! -e "$prefix/include/mpi.h" ] || fail "mpi.h is installed as include/mpi.h (clashes with other MPIs)"
pc=$(find "$prefix" -name rocl.pc)
[ -n "$pc" ] || fail "rocl.pc is not installed"
[ -e "$(dirname "$pc")/rocl-mpi.pc" ] || fail "rocl-mpi.pc is not installed"
[ -n "$(find "$prefix" -name roclConfig.cmake)" ] || fail "roclConfig.cmake is not installed"
# No installed text file (CMake package, .pc, wrappers) may point into the
# source or build tree (the prefix may lie inside the latter).
for f in $(grep -rIl -- "$src" "$prefix" || true); do
  if sed "s#$prefix##g" "$f" | grep -qF -- "$src"; then
    fail "$f names the source or build tree ($src)"
  fi
done
shared=no
[ -z "$(find "$prefix" -name 'librocl.so*')" ] || shared=yes
"$prefix/bin/rocl-info" >"$work/rocl-info.log" || fail "rocl-info failed"
"$prefix/bin/roclrun" --help >/dev/null || fail "roclrun --help failed"

# roclrun -n 2 PROGRAM...: the installed launcher, two ranks; rank 0 says ok.
run2() {
  local out
  out=$("$prefix/bin/roclrun" --timeout 60 -n 2 "$@" 2>&1) || fail "roclrun -n 2 $*: $out"
  grep "consumer_mpi: ok (2 ranks" <<<"$out" || fail "roclrun -n 2 $*: $out"
}

step "CMake: find_package(rocl) with CMAKE_PREFIX_PATH=$prefix"
cmake -S "$programs" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" || fail "configuring $programs (log: $work/cmake.log)"
cmake --build "$work/cmake" >>"$work/cmake.log" || fail "building $programs (log: $work/cmake.log)"
"$work/cmake/consumer_c"
"$work/cmake/consumer_cpp"
run2 "$work/cmake/consumer_mpi"

step "pkg-config with PKG_CONFIG_PATH=$(dirname "$pc")"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
static=()
[ $shared = yes ] || static=(--static)
libdir=$(pkg-config --variable=libdir rocl)
rpath=(-Wl,-rpath,"$libdir")
mkdir -p "$work/pkg-config"
cd "$work/pkg-config"
# Word splitting of pkg-config's output is meant.
# shellcheck disable=SC2046
cc -o consumer_c "$programs/main.c" $(pkg-config "${static[@]}" --cflags --libs rocl) "${rpath[@]}"
# shellcheck disable=SC2046
c++ -std=c++20 -o consumer_cpp "$programs/main.cpp" $(pkg-config "${static[@]}" --cflags --libs rocl) \
  "${rpath[@]}"
# shellcheck disable=SC2046
cc -o consumer_mpi "$programs/mpi_ring.c" $(pkg-config "${static[@]}" --cflags --libs rocl-mpi) \
  "${rpath[@]}"
./consumer_c
./consumer_cpp
run2 ./consumer_mpi
unset PKG_CONFIG_PATH

step "rocl-mpicc and rocl-mpicxx of $prefix/bin"
"$prefix/bin/rocl-mpicc" -O2 -Wall -o mpicc_ring "$programs/mpi_ring.c"
"$prefix/bin/rocl-mpicxx" -O2 -Wall -x c++ -o mpicxx_ring "$programs/mpi_ring.c"
run2 ./mpicc_ring
run2 ./mpicxx_ring

step "rocl-mpi-alternatives: mpicc, mpicxx, mpirun as Debian alternatives (a private root)"
if command -v update-alternatives >/dev/null; then
  # update-alternatives --root: links and records under $root only; the
  # prefix is seen there at its own path.
  root=$work/alternatives-root
  mkdir -p "$root/usr/bin" "$root/etc/alternatives" "$root/var/lib/dpkg/alternatives" \
    "$root/var/log" "$root$(dirname "$prefix")"
  ln -s "$prefix" "$root$prefix"
  "$prefix/bin/rocl-mpi-alternatives" install --set -- --root "$root" >"$work/alternatives.log" ||
    fail "rocl-mpi-alternatives install (log: $work/alternatives.log)"
  [ "$(readlink "$root/usr/bin/mpicc")" = /etc/alternatives/mpi ] || fail "no /usr/bin/mpicc link"
  for pair in mpi:rocl-mpicc mpicxx:rocl-mpicxx mpic++:rocl-mpicxx mpiCC:rocl-mpicxx \
    mpirun:roclrun mpiexec:roclrun; do
    link=$(readlink "$root/etc/alternatives/${pair%%:*}" || true)
    [ "$link" = "$prefix/bin/${pair#*:}" ] || fail "alternative ${pair%%:*} is '$link'"
  done
  # What the plain names run: built by "mpicc", run by "mpirun -np 2".
  "$(readlink "$root/etc/alternatives/mpi")" -O2 -o alternatives_ring "$programs/mpi_ring.c"
  out=$("$(readlink "$root/etc/alternatives/mpirun")" --timeout 60 -np 2 ./alternatives_ring 2>&1) ||
    fail "mpirun -np 2: $out"
  grep -q "consumer_mpi: ok (2 ranks" <<<"$out" || fail "mpirun -np 2: $out"
  "$prefix/bin/rocl-mpi-alternatives" remove -- --root "$root" >>"$work/alternatives.log" ||
    fail "rocl-mpi-alternatives remove (log: $work/alternatives.log)"
  [ ! -e "$root/etc/alternatives/mpi" ] || fail "the mpi alternative is still there after remove"
  rm "$root$prefix"
else
  echo "   (skipped: no update-alternatives)"
fi

step "the prefix moved: its tools find their libraries, rocl-mpicc its new place"
mv "$prefix" "$work/moved"
prefix=$work/moved
"$prefix/bin/rocl-info" >/dev/null || fail "rocl-info of the moved prefix failed"
"$prefix/bin/rocl-mpicc" -O2 -o moved_ring "$programs/mpi_ring.c"
run2 ./moved_ring
echo "check_install: ok"
