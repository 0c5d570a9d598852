#!/usr/bin/env python3
"""check_reference.py - runs the example programs under PVM 3.4.6 itself
(record_pvm_outputs.sh into a temporary folder) and checks that PVM still
prints what expected/ holds, compared as the rocl runs are: so the
reference the rocl runs are held to is PVM's own, on this machine.

Usage: check_reference.py   (exits 77, skipped, if this user's pvmd runs)
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_output import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def runs():
    with open(os.path.join(HERE, "examples.txt"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#") and "|" in line:
                fields = [x.strip() for x in line.split("|")]
                yield fields[0], fields[3]


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def main():
    # PVM keeps one virtual machine per user, and recording halts it at the
    # end: leave a running one alone (77: ctest's skip).
    if os.path.exists("/tmp/pvmd.%d" % os.getuid()):
        print("a pvmd of this user is running already; not touching it")
        return 77
    with tempfile.TemporaryDirectory() as into:
        subprocess.run([os.path.join(HERE, "record_pvm_outputs.sh"), "--into", into], check=True)
        ok = True
        for name, mode in runs():
            streams = ["stdout", "stderr"] if mode.endswith("+stderr") else ["stdout"]
            for stream in streams:
                now = read(os.path.join(into, "%s.%s" % (name, stream)))
                recorded = read(os.path.join(HERE, "expected", "%s.%s" % (name, stream)))
                ok = compare(mode, recorded, now, "%s's %s under PVM" % (name, stream)) and ok
    print("PVM 3.4.6 prints what expected/ holds" if ok else "expected/ is out of date")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
