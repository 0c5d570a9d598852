#!/usr/bin/env python3
"""check-variables.py - fails when a ROCL_* environment variable that the
tree sets or reads is unknown to rocl_init, which would then warn about it
in every process that has it (docs/options.md, "Unknown variables").

Usage: scripts/check-variables.py [ROOT]

Known: the names of every row written {"ROCL_...", ...} in src/ (the
options of the core and of each transport, and the other variables of
src/config/known_variables.cpp). Set or read: in C and C++ sources, a name
passed to getenv/setenv/unsetenv (or a helper named env*), a constant
string that is a name alone, or a string that starts "ROCL_NAME=" (an
environment entry); in shell scripts, $ROCL_NAME, ${ROCL_NAME...},
ROCL_NAME=... before a command or an export, and unset ROCL_NAME; in CMake
files, ROCL_NAME=... in a test's environment. The tests of the check itself
set unknown names on purpose (EXEMPT). Prints each unknown name as
FILE:LINE: NAME and exits 1 if there is any; 0 otherwise.
"""
import os
import re
import subprocess
import sys

NAME = r"ROCL_[A-Z0-9_]*[A-Z0-9]"
ROW = re.compile(r'\{\s*"(' + NAME + r')",')
C_PATTERNS = [
    re.compile(r'\b(?:getenv|setenv|unsetenv|env\w*)\(\s*"(' + NAME + r')"'),
    re.compile(r'=\s*"(' + NAME + r')"\s*;'),
    re.compile(r'"(' + NAME + r')='),
]
SHELL_PATTERNS = [
    re.compile(r"\$\{?(" + NAME + r")\b(?!@)"),
    re.compile(r"(?:^|[\s;(])(?:export\s+)?(" + NAME + r")="),
    re.compile(r"\bunset\s+((?:" + NAME + r"\s*)+)"),
]
CMAKE_PATTERN = re.compile(r'(?:^|[\s"(;])(' + NAME + r")=")
C_SOURCES = (".c", ".cpp", ".h", ".hpp")
EXEMPT = {
    "src/config/known_variables_test.cpp",
    "tests/unit/api/unknown_variables_test.cpp",
    "tests/multiproc/unknown_variable_test.sh",
    "src/directory/spawn_request_test.cpp",  # parses a made-up entry, ROCL_A=1
}


def tree_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, text=True, check=False)
    if out.returncode == 0:
        return out.stdout.split()
    files = []
    for folder, _, names in os.walk(root):
        if "/.git" in folder:
            continue
        files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return files


def known_names(root, files):
    names = set()
    for path in files:
        if path.startswith("src/") and path.endswith(".cpp"):
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                names.update(ROW.findall(f.read()))
    return names


def used_names(path, line):
    """The ROCL_* names that `line` of file `path` sets or reads."""
    base = os.path.basename(path)
    if path.endswith(C_SOURCES):
        return [n for p in C_PATTERNS for n in p.findall(line)]
    if path.endswith(".sh") or base in ("run",) or path.endswith("cc.in"):
        if "-D" in line and re.search(r"-D" + NAME, line):
            line = re.sub(r"-D" + NAME + r"=\S*", "", line)
        found = []
        for p in SHELL_PATTERNS:
            for n in p.findall(line):
                found += n.split()
        return found
    if base == "CMakeLists.txt" or path.endswith(".cmake"):
        return CMAKE_PATTERN.findall(line)
    return []


def cmake_environment_lines(lines):
    """The lines of a CMake file, less those of calls whose ROCL_NAME=...
    are text, build options or macros, not the environment."""
    depth = 0
    for line in lines:
        if depth == 0 and re.search(r"message\(|-D|DEFINITIONS|compile_definitions", line,
                                    re.IGNORECASE):
            depth = max(line.count("(") - line.count(")"), 0)
            yield ""
        elif depth > 0:
            depth = max(depth + line.count("(") - line.count(")"), 0)
            yield ""
        else:
            yield line


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = tree_files(root)
    known = known_names(root, files)
    problems = []
    for path in files:
        if path in EXEMPT or not os.path.isfile(os.path.join(root, path)):
            continue
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue
        if os.path.basename(path) == "CMakeLists.txt" or path.endswith(".cmake"):
            lines = list(cmake_environment_lines(lines))
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith(("//", "/*", "*", "#")) and not line.startswith("#!"):
                continue  # what a comment says is not set or read
            for name in used_names(path, line):
                if name not in known:
                    problems.append(f"{path}:{number}: {name}")
    for p in problems:
        print(f"{p} is set or read here but unknown to rocl_init "
              "(add it to src/config/known_variables.cpp)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
