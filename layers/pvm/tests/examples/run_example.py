#!/usr/bin/env python3
"""run_example.py - runs one PVM example program under rocl and compares
its output with PVM 3.4.6's, recorded in expected/ (record_pvm_outputs.sh).

Usage: run_example.py NAME ROCLRUN BINDIR

NAME is a line of examples.txt (program, arguments, standard input, how
to compare). The program runs as one task under `roclrun -n 1`, started as
./PROGRAM in BINDIR as record_pvm_outputs.sh starts it, with BINDIR first
in PATH, so that the tasks it spawns by name are found there, as
PVM finds them in its ep path. roclrun's own lines on standard error are
left out of the comparison.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_output import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def example(name):
    with open(os.path.join(HERE, "examples.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or "|" not in line:
                continue
            fields = [x.strip() for x in line.split("|")]
            if fields[0] == name:
                return fields[1].split(), fields[2].replace("\\n", "\n"), fields[3]
    raise SystemExit("run_example.py: no example %s in examples.txt" % name)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    name, roclrun, bindir = sys.argv[1:]
    argv, stdin, mode = example(name)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    run = subprocess.run([roclrun, "--no-prefix", "--timeout", "100", "-n", "1",
                          "./" + argv[0]] + argv[1:],
                         input=stdin.encode(), capture_output=True, env=env, cwd=bindir,
                         check=False)
    stdout = run.stdout.decode(errors="replace")
    stderr = "".join(line + "\n" for line in run.stderr.decode(errors="replace").splitlines()
                     if not line.startswith("roclrun:"))
    expected = os.path.join(HERE, "expected", name)
    with open(expected + ".stdout", encoding="utf-8", errors="replace") as f:
        ok = compare(mode, f.read(), stdout, "standard output")
    if mode.endswith("+stderr"):
        with open(expected + ".stderr", encoding="utf-8", errors="replace") as f:
            ok = compare(mode, f.read(), stderr, "standard error") and ok
    if not ok:
        print("--- rocl's standard error:\n" + run.stderr.decode(errors="replace"))
        return 1
    print("%s: same output as under PVM 3.4.6 (%s)" % (name, mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
