#!/usr/bin/env bash
# compare_with_pvm.sh - the same ping-pong (pingpong.c) under PVM 3.4.6 (a
# pvmd on this host; default route and PvmRouteDirect) and under rocl's
# PVM (roclrun), in one run on one machine, with the ratios of the issue's
# goals: round trip at 8 B, transfer rate at 1 MiB.
#
# Usage: compare_with_pvm.sh BUILD_DIR   (a build with the target
# pvm_pingpong and roclrun). Needs pvm and pvm-dev; as root it sets
# PVM_ALLOW_ROOT. The pvmd it starts is halted at the end.
set -euo pipefail
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
export PVM_ROOT="${PVM_ROOT:-/usr/lib/pvm3}" PVM_ALLOW_ROOT=yes
trap 'echo halt | pvm >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

gcc -O2 -o "$work/pingpong" "$here/pingpong.c" -lpvm3
printf '* ep=%s wd=%s\n%s\n' "$work" "$work" "$(hostname)" >"$work/hostfile"
echo quit | pvm "$work/hostfile" >/dev/null 2>&1

(cd "$work" && ./pingpong) >"$work/pvm.txt"
(cd "$work" && ./pingpong direct) >"$work/pvm-direct.txt"
rocl_bin="$build/layers/pvm/bench"
(cd "$rocl_bin" && PATH="$rocl_bin:$PATH" "$build/tools/roclrun/roclrun" --no-prefix -n 1 \
  ./pvm_pingpong 2>/dev/null) >"$work/rocl.txt"

for run in pvm pvm-direct rocl; do
  echo "== $run"
  cat "$work/$run.txt"
done
python3 - "$work" <<'PY'
import sys
def table(name):
    rows = [l.split() for l in open(f"{sys.argv[1]}/{name}.txt") if l.split()[0].isdigit()]
    return {int(r[0]): (float(r[1]), float(r[2])) for r in rows}
pvm, direct, rocl = table("pvm"), table("pvm-direct"), table("rocl")
print("round trip at 8 B: PVM %.1f us, PvmRouteDirect %.1f us, rocl %.1f us: %.1fx shorter than direct (goal 10x)"
      % (pvm[8][0], direct[8][0], rocl[8][0], direct[8][0] / rocl[8][0]))
mib = 1 << 20
print("transfer rate at 1 MiB: PVM %.0f MB/s, PvmRouteDirect %.0f MB/s, rocl %.0f MB/s: %.1fx direct's (goal 3x)"
      % (pvm[mib][1], direct[mib][1], rocl[mib][1], rocl[mib][1] / direct[mib][1]))
PY
