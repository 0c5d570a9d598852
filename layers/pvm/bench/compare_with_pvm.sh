#!/usr/bin/env bash
# compare_with_pvm.sh - the same ping-pong (pingpong.c) and the same pairs
# of tasks (pairs.c: 1, 2 and 4 pairs ping-ponging at once) under PVM
# 3.4.6 (a pvmd on this host; default route and PvmRouteDirect) and under
# rocl's PVM (roclrun), in one run on one machine, with the ratios of the
# goals (round trip at 8 B, transfer rate at 1 MiB) and of every pairs
# point against PvmRouteDirect.
#
# Usage: compare_with_pvm.sh BUILD_DIR   (a build with the targets
# pvm_pingpong, pvm_pairs and roclrun). Needs pvm and pvm-dev; as root it sets
# PVM_ALLOW_ROOT. The pvmd it starts is halted at the end.
set -euo pipefail
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
export PVM_ROOT="${PVM_ROOT:-/usr/lib/pvm3}" PVM_ALLOW_ROOT=yes
trap 'echo halt | pvm >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

gcc -O2 -o "$work/pingpong" "$here/pingpong.c" -lpvm3
gcc -O2 -o "$work/pairs" "$here/pairs.c" -lpvm3
printf '* ep=%s wd=%s\n%s\n' "$work" "$work" "$(hostname)" >"$work/hostfile"
echo quit | pvm "$work/hostfile" >/dev/null 2>&1

(cd "$work" && ./pingpong) >"$work/pvm.txt"
(cd "$work" && ./pingpong direct) >"$work/pvm-direct.txt"
(cd "$work" && ./pairs) >"$work/pvm-pairs.txt"
(cd "$work" && ./pairs direct) >"$work/pvm-direct-pairs.txt"
rocl_bin="$build/layers/pvm/bench"
for program in pingpong pairs; do
  suffix=""
  [ "$program" = pingpong ] || suffix="-$program"
  (cd "$rocl_bin" && PATH="$rocl_bin:$PATH" "$build/tools/roclrun/roclrun" --no-prefix -n 1 \
    "./pvm_$program" 2>/dev/null) >"$work/rocl$suffix.txt"
done

for run in pvm pvm-direct rocl pvm-pairs pvm-direct-pairs rocl-pairs; do
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
def pairs(name):
    rows = [l.split() for l in open(f"{sys.argv[1]}/{name}.txt") if l.split()[0].isdigit()]
    return {(int(r[0]), int(r[1])): (float(r[2]), float(r[3])) for r in rows}
p, d, r = pairs("pvm-pairs"), pairs("pvm-direct-pairs"), pairs("rocl-pairs")
print("pairs at once: round trip of a pair (us) and the pairs' transfer rate together (MB/s)")
print("%6s %8s %10s %10s %10s %12s %10s %10s %10s %10s" % ("pairs", "bytes", "pvm_rtt", "direct_rtt",
      "rocl_rtt", "rtt_ratio", "pvm_MB/s", "direct", "rocl", "rate_ratio"))
for k in sorted(r):
    print("%6d %8d %10.1f %10.1f %10.2f %11.1fx %10.1f %10.1f %10.1f %9.1fx" % (k[0], k[1],
          p[k][0], d[k][0], r[k][0], d[k][0] / r[k][0], p[k][1], d[k][1], r[k][1], r[k][1] / d[k][1]))
PY
