#!/usr/bin/env bash
# ctest roclrun_unknown_variable: a real program under roclrun with a typo
# in its environment (ROCL_TRANSPORT for ROCL_TRANSPORTS) says so once per
# process on stderr, with the right name, and nothing about the variables
# roclrun itself sets (ROCL_RANK, ROCL_JOB_DIR, ...).
#   unknown_variable_test.sh ROCLRUN PROGRAM
set -euo pipefail

[ $# -eq 2 ] || {
  echo "usage: $0 ROCLRUN PROGRAM" >&2
  exit 2
}
roclrun=$1 program=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT

ROCL_TRANSPORT=tcp "$roclrun" --timeout 60 -n 2 "$program" >/dev/null 2>"$err" || {
  echo "unknown_variable: $program under roclrun failed:" >&2
  cat "$err" >&2
  exit 1
}
warning="rocl: warning: unknown variable ROCL_TRANSPORT=tcp ignored (did you mean ROCL_TRANSPORTS?)"
for rank in 0 1; do
  n=$(grep -cxF "[$rank] $warning" "$err" || true)
  [ "$n" -eq 1 ] || {
    echo "unknown_variable: rank $rank warned $n times, not once:" >&2
    cat "$err" >&2
    exit 1
  }
done
n=$(grep -c "unknown variable" "$err" || true)
[ "$n" -eq 2 ] || {
  echo "unknown_variable: $n warnings, not 2 (one per rank):" >&2
  cat "$err" >&2
  exit 1
}
echo "unknown_variable: ok"
