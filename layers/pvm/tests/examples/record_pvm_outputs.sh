#!/usr/bin/env bash
# record_pvm_outputs.sh - runs the PVM example programs under PVM 3.4.6
# itself (a pvmd on this host) and writes what they print to
# expected/NAME.stdout and expected/NAME.stderr, the reference that the
# ctest runs under rocl compare with (compare_output.py).
#
# Usage: record_pvm_outputs.sh [--into DIR] [NAME...]   (default: every
# line of examples.txt, into expected/). Needs the Debian packages pvm,
# pvm-dev and pvm-examples; as root it sets PVM_ALLOW_ROOT. The pvmd it
# starts is halted at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
into="$here/expected"
if [[ "${1:-}" == "--into" ]]; then
  into="$2"
  shift 2
fi
work="$(mktemp -d)"
export PVM_ROOT="${PVM_ROOT:-/usr/lib/pvm3}" PVM_ALLOW_ROOT=yes
trap 'echo halt | pvm >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# The examples built against PVM's own library, as its Makefile.aimk does
# on LINUX64 (the mailbox examples with taskf.c).
mkdir -p "$work/src" "$work/bin"
tar -xzf /usr/share/doc/pvm-examples/examples.tar.gz -C "$work/src"
tar -xzf /usr/share/doc/pvm-examples/gexamples.tar.gz -C "$work/src"
flags=(-w -DSYSVSIGNAL -DNOWAIT3 -DHASSTDLIB -DSYSVSTR)
for c in "$work"/src/examples/*.c "$work"/src/gexamples/*.c; do
  name="$(basename "$c" .c)"
  gcc "${flags[@]}" "$c" "$work/src/examples/taskf.c" -o "$work/bin/$name" -lgpvm3 -lpvm3 \
    2>/dev/null || gcc "${flags[@]}" "$c" -o "$work/bin/$name" -lgpvm3 -lpvm3 2>/dev/null || true
done

printf '* ep=%s:%s/lib wd=%s\n%s\n' "$work/bin" "$PVM_ROOT" "$work/bin" "$(hostname)" \
  >"$work/hostfile"
echo quit | pvm "$work/hostfile" >/dev/null 2>&1

trim() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' <<<"$1"; }
while IFS='|' read -r name command input mode; do
  [[ "$name" == \#* ]] && continue
  name="$(trim "$name")"
  [[ -z "$name" ]] && continue
  if [[ $# -gt 0 && ! " $* " =~ " $name " ]]; then continue; fi
  read -r -a argv <<<"$command"
  echo "recording $name: ${argv[*]}"
  (cd "$work/bin" && printf "$(trim "$input")" |
    timeout 120 "./${argv[0]}" "${argv[@]:1}" >"$into/$name.stdout" 2>"$into/$name.stderr") || echo "  $name exited with status $?"
done <"$here/examples.txt"
