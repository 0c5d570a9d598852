#!/usr/bin/env python3
"""check-class-size.py - fails when a class or struct of the library has
more member functions than one type with one job should need.

Usage: scripts/check-class-size.py [ROOT] [--limit N] [--top K]

Counts the distinct member-function names (overloads count once;
constructors and destructors count) of every class and struct declared
or defined in src/, include/, layers/, tools/ and bench/, tests excepted,
with Universal Ctags (package universal-ctags). The limit is "about 40":
a Transport's non-virtual interface names each hook twice (send and
send_impl), hence the default of 45. Prints the largest types (--top) and
each one over the limit; exits 1 if there is any, 2 if ctags is missing.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

FOLDERS = ["src", "include", "layers", "tools", "bench"]


def is_test(path):
    name = os.path.basename(path)
    return "_test." in name or "test_util" in name or "/testing/" in path or "/tests/" in path


def member_names(root):
    ctags = shutil.which("ctags-universal") or shutil.which("ctags")
    if ctags is None:
        print("check-class-size: ctags not found (apt-get install universal-ctags)",
              file=sys.stderr)
        sys.exit(2)
    folders = [f for f in FOLDERS if os.path.isdir(os.path.join(root, f))]
    out = subprocess.run(
        [ctags, "--output-format=json", "--languages=C++", "--map-C++=+.h",
         "--c++-kinds=fp", "--fields=+s", "-R", "-f", "-"] + folders,
        cwd=root, check=True, capture_output=True, text=True).stdout
    names = collections.defaultdict(set)
    for line in out.splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        scope = tag.get("scope")
        if not scope or tag.get("scopeKind") not in ("class", "struct"):
            continue
        if is_test(tag.get("path", "")):
            continue
        names[scope].add(tag["name"])
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--limit", type=int, default=45)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    names = member_names(os.path.abspath(args.root))
    ranked = sorted(names.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for scope, members in ranked[:args.top]:
        print(f"{len(members):4d} {scope}")
    over = [(scope, members) for scope, members in ranked if len(members) > args.limit]
    for scope, members in over:
        print(f"check-class-size: {scope} has {len(members)} member functions "
              f"(limit {args.limit}): split it into types with one job each", file=sys.stderr)
    if over:
        return 1
    print(f"check-class-size: no class over {args.limit} member functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
