#!/usr/bin/env bash
# ctest tools_misuse: each tool and each script users run, given a wrong
# command line (an unknown option, a missing value, a bad number, a stray
# argument), answers with exit status 2 and one line on stderr that names
# what is wrong and points at --help; and --help itself exits 0. Tools this
# build lacks (rocl-bench, rocl-demo) are skipped. Nothing is started: every
# case fails before the tool does anything.
#   misuse.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

[ $# -eq 2 ] || {
  echo "usage: $0 SOURCE_DIR BUILD_DIR" >&2
  exit 2
}
src=$1 build=$2
failures=0 cases=0

# expect TOOL_PATH FIRST_LINE_REGEX ARGS...: exit status 2, stderr exactly
# one line, matching the regex and pointing at --help.
expect() {
  local tool=$1 want=$2 err status lines
  shift 2
  cases=$((cases + 1))
  err=$("$tool" "$@" 2>&1 >/dev/null </dev/null)
  status=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ "$status" -ne 2 ] || [ "$lines" -ne 1 ] || ! [[ $err =~ $want ]] ||
    ! [[ $err == *--help* ]]; then
    echo "FAIL: $(basename "$tool") $*: exit $status, $lines line(s), want 2, one line like /$want/ naming --help:"
    printf '%s\n' "$err" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# helps TOOL_PATH ARGS...: --help prints something on stdout and exits 0.
helps() {
  local tool=$1 out status
  shift
  cases=$((cases + 1))
  out=$("$tool" "$@" 2>/dev/null </dev/null)
  status=$?
  if [ "$status" -ne 0 ] || [ -z "$out" ]; then
    echo "FAIL: $(basename "$tool") $*: exit $status, $(printf '%s' "$out" | wc -c) bytes on stdout"
    failures=$((failures + 1))
  fi
}

roclrun=$build/tools/roclrun/roclrun
helps "$roclrun" --help
expect "$roclrun" "^roclrun: unknown option '--bogus'" --bogus -n 1 true
expect "$roclrun" "^roclrun: -n needs a number" -n
expect "$roclrun" "^roclrun: -n takes a number of processes from 1 to 1024, not 'x'" -n x true
expect "$roclrun" "^roclrun: --timeout takes a number of seconds > 0, not 'soon'" --timeout soon -n 1 true
expect "$roclrun" "^roclrun: --launcher takes ssh, netns or local, not 'rsh'" --launcher rsh -n 1 true
expect "$roclrun" "^roclrun: no program to run" -n 2

rocld=$build/tools/rocld/rocld
helps "$rocld" --help
expect "$rocld" "^rocld: unknown option '--bogus'" --bogus
expect "$rocld" "^rocld: unexpected argument 'stray'" stray
expect "$rocld" "^rocld: --socket needs a value" --socket
expect "$rocld" "^rocld: --server-id takes a number from 1 to 32767, not 'x'" --server-id x
expect "$rocld" "^rocld: --spin-us takes microseconds from 0 to 1000000, not ''" --spin-us ""
expect "$rocld" "^rocld: --gid-bits \(ROCL_GID_BITS\) takes 63 or 31, not '7'" --gid-bits 7
expect "$rocld" "^rocld: --peer needs --peer-port" --peer 10.0.0.1

rocl_dir=$build/tools/rocl-dir/rocl-dir
helps "$rocl_dir" --help
expect "$rocl_dir" "^rocl-dir: no command: query, list or job"
expect "$rocl_dir" "^rocl-dir: unknown option '--bogus' before the command" --bogus
expect "$rocl_dir" "^rocl-dir: unknown command 'lsit'" lsit
expect "$rocl_dir" "^rocl-dir: --socket needs a value" --socket
expect "$rocl_dir" "^rocl-dir: query needs at least one name=value" query
expect "$rocl_dir" "^rocl-dir: query takes name=value, not 'worker'" query worker
expect "$rocl_dir" "^rocl-dir: unknown option '--bogus'" list --bogus

rocl_info=$build/tools/rocl-info/rocl-info
helps "$rocl_info" --help
expect "$rocl_info" "^rocl-info: unknown option '--bogus'" --bogus
expect "$rocl_info" "^rocl-info: unexpected argument 'x'" x

rocl_bench=$build/bench/rocl-bench/rocl-bench
if [ -x "$rocl_bench" ]; then
  helps "$rocl_bench" --help
  expect "$rocl_bench" "^rocl-bench: unknown option '--bogus'" --bogus
  expect "$rocl_bench" "^rocl-bench: no benchmark named 'latncy'" latncy
  expect "$rocl_bench" "^rocl-bench: --reps wants a positive integer, not 'x'" --reps x
  expect "$rocl_bench" "^rocl-bench: --sizes needs a value" --sizes
  expect "$rocl_bench" "^rocl-bench: --transport takes a list of inproc, shm, tcp, ucx, not 'pigeon'" \
    --transport pigeon
  helps "$rocl_bench" compare --help
  expect "$rocl_bench" "^rocl-bench compare: unknown argument '--bogus'" compare --bogus
  helps "$rocl_bench" mpi --help
  expect "$rocl_bench" "^rocl-bench mpi: unknown argument '--bogus'" mpi --bogus
fi

rocl_demo=$build/examples/rocl-demo
if [ -x "$rocl_demo" ]; then
  helps "$rocl_demo" --help
  expect "$rocl_demo" "^rocl-demo: unknown option '--bogus'" --bogus
  expect "$rocl_demo" "^rocl-demo: --threads needs a number" --threads
  expect "$rocl_demo" "^rocl-demo: --threads wants a number from 2 to 64, not '1'" --threads 1
fi

scripts=$src/scripts
helps "$scripts/build.sh" --help
expect "$scripts/build.sh" "^build.sh: no build folder given"
expect "$scripts/build.sh" "^build.sh: unknown option '--bogus'" --bogus
expect "$scripts/build.sh" "^build.sh: --target needs a name" --target
helps "$scripts/fuzz.sh" --help
expect "$scripts/fuzz.sh" "^fuzz.sh: the seconds for each target must be a whole number from 1, not 'x'" x
expect "$scripts/fuzz.sh" "^fuzz.sh: unknown option '--bogus'" --bogus
expect "$scripts/fuzz.sh" "^fuzz.sh: the seconds for each target must be a whole number from 1, not '0'" --update-corpus 0
expect env "^fuzz.sh: FUZZ_TIMEOUT: a whole number of seconds from 1, not 'soon'" \
  FUZZ_TIMEOUT=soon "$scripts/fuzz.sh"
helps "$scripts/setup.sh" --help
expect "$scripts/setup.sh" "^setup.sh: unexpected argument 'x'" x
helps "$scripts/test.sh" --help
helps "$scripts/test-under-load.sh" --help
expect "$scripts/test-under-load.sh" "^test-under-load.sh: --runs takes a count from 1, not 'x'" --runs x
expect "$scripts/test-under-load.sh" "^test-under-load.sh: --build needs a value" --build
helps "$scripts/tidy.sh" --help
expect "$scripts/tidy.sh" "^tidy: unknown option '--bogus'" --bogus
expect "$scripts/tidy.sh" "^tidy: one argument at most" a b

hosts=$src/tests/netns/hosts.sh
helps "$hosts" --help
expect "$hosts" "^hosts.sh: missing subcommand"
expect "$hosts" "^hosts.sh: unknown subcommand 'upp'" upp
expect "$hosts" "^hosts.sh: N must be a number from 1 to 64, not 'x'" up x
expect "$hosts" "^hosts.sh: --nets must be 1 or 2, not '3'" up 2 --nets 3
expect "$hosts" "^hosts.sh: unknown option '--bogus'" list --bogus

tables=$src/examples/ncs/tables.sh
helps "$tables" --help
expect "$tables" "^tables.sh: unknown option '--bogus'" --bogus
expect "$tables" "^tables.sh: --build needs a value" --build
expect "$tables" "^tables.sh: --repeat takes a count from 1, not 'x'" --repeat x

echo "tools_misuse: $((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
