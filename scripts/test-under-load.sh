#!/usr/bin/env bash
# Runs the tests of a build several times with CPU-bound competitors on
# every cpu, and prints which tests failed in which runs: a test that fails
# only under load depends on scheduling (it waited for a thread to have run
# by a deadline instead of for a condition).
#   scripts/test-under-load.sh [--runs N] [--hogs-per-cpu K] [--build DIR]
#       [ctest arguments...]
# Defaults: 3 runs, 1 hog per cpu, the repository's build/. The ctest arguments select the
# tests (e.g. -L unit, -R Shm); every run gets --timeout 600 -j 2.
# Exit status: 0 if every run passed, 1 if a test failed, 2 for a bad
# command line.
set -uo pipefail

me=test-under-load.sh
bad_usage() {
  echo "$me: $* (see scripts/$me --help)" >&2
  exit 2
}
runs=3 hogs=1 build=$(dirname "$0")/../build
while [ $# -gt 0 ]; do
  case $1 in
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
  --runs | --hogs-per-cpu | --build)
    [ $# -ge 2 ] || bad_usage "$1 needs a value"
    case $1 in
    --runs) runs=$2 ;;
    --hogs-per-cpu) hogs=$2 ;;
    --build) build=$2 ;;
    esac
    shift 2
    ;;
  *) break ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || bad_usage "--runs takes a count from 1, not '$runs'"
[[ $hogs =~ ^[0-9]+$ ]] || bad_usage "--hogs-per-cpu takes a count from 0, not '$hogs'"
[ -f "$build/CTestTestfile.cmake" ] || bad_usage "no tests in '$build' (build it first: scripts/build.sh $build)"

cpus=$(nproc)
pids=()
# shellcheck disable=SC2317  # called by the trap
stop_hogs() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  pids=()
}
trap stop_hogs EXIT
for _ in $(seq 1 $((cpus * hogs))); do
  # A busy loop at normal priority: it takes its full share of a cpu.
  bash -c 'while :; do :; done' &
  pids+=($!)
done
echo "$me: $((cpus * hogs)) hogs on $cpus cpus, $runs runs of ctest $*"

declare -A failed_in=()
status=0
for run in $(seq 1 "$runs"); do
  log=$build/test-under-load-$run.log
  start=$(date +%s)
  ctest --test-dir "$build" --timeout 600 -j 2 "$@" >"$log" 2>&1
  rc=$?
  summary=$(grep -E "tests passed|No tests were found" "$log" | tail -1)
  echo "run $run: ${summary:-ctest exit $rc} ($(($(date +%s) - start)) s; $log)"
  while read -r name; do
    [ -n "$name" ] || continue
    failed_in[$name]+=" $run"
    status=1
  done < <(awk '/^The following tests FAILED:/ { on = 1; next }
    on && /^[[:space:]]+[0-9]+ - / { print $3 }' "$log")
  [ "$rc" -eq 0 ] || status=1
done
if [ ${#failed_in[@]} -eq 0 ]; then
  echo "$me: every test passed in every run"
else
  echo "$me: failed under load (test: runs):"
  for name in "${!failed_in[@]}"; do echo "  $name:${failed_in[$name]}"; done | sort
fi
exit "$status"
