#!/usr/bin/env bash
# tidy.sh [BASE]: runs clang-tidy (the checks of the root's .clang-tidy) on
# the .cpp files changed since BASE, in the work tree included, that a build
# compiles; fails when it reports what .clang-tidy's WarningsAsErrors
# selects, or cannot parse a file.
#
# BASE defaults to the merge-base with origin/main when there is one, else
# HEAD~10, else (a shallow clone) the oldest commit there is. The compile
# commands are those of the build in $ROCL_TIDY_BUILD (default build; it is
# configured with CMAKE_EXPORT_COMPILE_COMMANDS, as rocl's top-level CMake
# sets it), without the GCC-only flags clang does not know. $CLANG_TIDY
# names clang-tidy (default clang-tidy), $ROCL_TIDY_JOBS how many run at
# once (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ROCL_TIDY_BUILD:-build}
tidy=${CLANG_TIDY:-clang-tidy}
jobs=${ROCL_TIDY_JOBS:-2}
say() { echo "tidy: $*"; }
bad_usage() {
  say "$* (see scripts/tidy.sh --help)" >&2
  exit 2
}
case ${1:-} in
-h | --help)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
  ;;
-*) bad_usage "unknown option '$1'" ;;
esac
[ $# -le 1 ] || bad_usage "one argument at most, the BASE commit"

command -v "$tidy" >/dev/null || {
  say "$tidy not found (scripts/setup.sh installs clang-tidy)" >&2
  exit 2
}
[ -f "$build/compile_commands.json" ] || {
  say "no $build/compile_commands.json: configure and build $build first (scripts/build.sh $build)" >&2
  exit 2
}

base=${1:-}
if [ -z "$base" ] && git rev-parse -q --verify origin/main >/dev/null; then
  base=$(git merge-base HEAD origin/main 2>/dev/null) || base=""
fi
if [ -z "$base" ] && git rev-parse -q --verify 'HEAD~10^{commit}' >/dev/null; then
  base=HEAD~10
fi
if [ -z "$base" ]; then
  # A shallow clone: its oldest commit stands in for the base.
  base=$(git rev-list --max-parents=0 HEAD | tail -1)
fi
git rev-parse -q --verify "$base^{commit}" >/dev/null || bad_usage "no commit '$base' to start from"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git diff --name-only --diff-filter=ACMR "$base" -- '*.cpp' >"$work/changed"

# The build's compile commands for the changed files only, without the
# flags that clang rejects (GCC's code generation and LTO options).
python3 - "$build/compile_commands.json" "$work" <<'PY'
import json, os, re, shlex, sys
db_path, work = sys.argv[1], sys.argv[2]
changed = {os.path.abspath(l.strip()) for l in open(os.path.join(work, "changed")) if l.strip()}
gcc_only = re.compile(r"^-(mmemset-strategy=|mtls-dialect=|flto|ffat-lto-objects|fno-fat-lto-objects)")
kept, files = [], []
for entry in json.load(open(db_path)):
    path = os.path.abspath(os.path.join(entry["directory"], entry["file"]))
    if path not in changed or path in files:
        continue
    args = entry.get("arguments") or shlex.split(entry["command"])
    entry.pop("command", None)
    entry["arguments"] = [a for a in args if not gcc_only.match(a)]
    kept.append(entry)
    files.append(path)
json.dump(kept, open(os.path.join(work, "compile_commands.json"), "w"), indent=1)
open(os.path.join(work, "files"), "w").write("".join(f + "\n" for f in files))
PY

changed=$(wc -l <"$work/changed")
checked=$(wc -l <"$work/files")
say "$changed .cpp file(s) changed since $(git rev-parse --short "$base"), $checked of them in $build's compile commands"
[ "$checked" -gt 0 ] || exit 0
status=0
xargs -P "$jobs" -n 1 "$tidy" -p "$work" --quiet --extra-arg=-Wno-unknown-warning-option \
  <"$work/files" || status=$?
if [ $status != 0 ]; then
  say "clang-tidy failed (see above); .clang-tidy says which checks are errors" >&2
  exit 1
fi
say "clean"
