#!/usr/bin/env python3
"""compare_output.py - compares what a PVM example printed under rocl with
what it printed under PVM 3.4.6, modulo what differs between any two runs.

Usage: compare_output.py MODE EXPECTED ACTUAL

Both texts are normalised first: task ids (t40002, 0x40002, or in decimal
as spmd prints them) and context ids, which PVM and rocl number
differently, become ID1, ID2, ... in order of first appearance (the same
id keeps its name, so a program that mixes ids up still fails); this
machine's name becomes HOST. MODE then says how the rest compares:
  exact   line for line;
  sorted  the same lines in any order (results that arrive in any order);
  shape   every number is N (timings).
Exits 0 when they match, else prints both and a diff and exits 1.
"""
import difflib
import re
import socket
import sys

IDS = re.compile(r"\bt([0-9a-f]{5,8})\b|\b0x([0-9a-f]{5,8})\b|\b([0-9]{5,10})\b")
HEX_IDS = re.compile(r"\bt([0-9a-f]{5,8})\b|\b0x([0-9a-f]{5,8})\b()")


def normalise(text, mode):
    names = {}

    def rename(m):
        hex_digits = m.group(1) or m.group(2)
        value = int(hex_digits, 16) if hex_digits else int(m.group(3))
        names.setdefault(value, "ID%d" % (len(names) + 1))
        return names[value]

    host = socket.gethostname()
    lines = []
    for line in text.splitlines():
        # Timings may have five digits: in shape mode only hex ids are ids.
        line = (HEX_IDS if mode.startswith("shape") else IDS).sub(rename, line.rstrip())
        if host:
            line = re.sub(r"\b%s\b" % re.escape(host), "HOST", line)
        if mode.startswith("shape"):
            line = re.sub(r"[0-9]+(\.[0-9]+)?", "N", line)
            line = re.sub(r"\s+", " ", line)
        lines.append(line)
    if mode.startswith("sorted"):
        lines.sort()
    return lines


def compare(mode, expected_text, actual_text, what="output"):
    expected, actual = normalise(expected_text, mode), normalise(actual_text, mode)
    if expected == actual:
        return True
    print("%s differs from PVM 3.4.6's (%s comparison, normalised):" % (what, mode))
    for line in difflib.unified_diff(expected, actual, "PVM 3.4.6", "rocl", lineterm=""):
        print(line)
    return False


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    mode, expected_path, actual_path = sys.argv[1:]
    with open(expected_path, encoding="utf-8", errors="replace") as e, \
            open(actual_path, encoding="utf-8", errors="replace") as a:
        return 0 if compare(mode, e.read(), a.read()) else 1


if __name__ == "__main__":
    sys.exit(main())
