#!/usr/bin/env python3
"""check-layers.py - fails when a file includes a header of a layer above
its own (docs/architecture.md, "Layers").

Usage: scripts/check-layers.py [ROOT]

Every source and header of the library, its layers and tools belongs to
one layer (LAYERS below, matched by path); a layer may include headers of
the layers it lists under `uses` and of those layers' own uses, nothing
else. Tests (*_test.cpp, *test_util*, src/testing/) are exempt: a test may
reach into any layer it tests. A transport folder (src/transport/<name>/)
is a layer of its own above the transport base, and no transport includes
another; only the registration table (src/transport/registry.cpp) names
them all. Prints each upward include as FILE:LINE: LAYER includes HEADER
(layer X) and exits 1 if there is any; 0 otherwise.
"""
import os
import re
import sys

# (name, path prefix or exact file, layers it uses directly). Order does not
# matter for matching: the longest matching prefix wins.
LAYERS = [
    ("platform", "include/rocl/platform/", []),
    ("abi", "include/rocl/rocl.h", []),
    ("generic", "include/rocl/generic/", ["platform"]),
    ("status", "src/status/", ["abi"]),
    ("config", "src/config/", []),
    ("security", "src/security/", ["status"]),
    ("wire", "src/wire/", ["status"]),
    ("buffer", "src/buffer/", ["status", "platform"]),
    ("message", "src/message/", ["buffer", "generic"]),
    ("os", "src/os/", []),
    ("wait", "src/wait/", ["platform", "os"]),
    ("transport", "src/transport/", ["message", "wire", "security", "config", "wait", "os"]),
    ("transports", "src/transport/<name>/", ["transport"]),
    ("registry", "src/transport/registry.cpp", ["transports"]),
    ("directory", "src/directory/", ["security", "platform", "generic", "os"]),
    ("bootstrap", "src/bootstrap/", ["directory"]),
    ("core", "src/core/", ["registry", "directory", "bootstrap"]),
    ("domain", "src/domain/", ["core"]),
    ("api", "src/api/", ["core", "domain"]),
    ("cxx-api", "include/rocl/rocl.hpp", ["abi", "generic"]),
    ("launch", "src/launch/", ["directory"]),
    ("pvm", "layers/pvm/", ["abi", "cxx-api"]),
    ("mpi", "layers/mpi/", ["abi", "cxx-api"]),
    ("ncs", "layers/ncs/", ["abi", "cxx-api"]),
    ("tools", "tools/", ["api", "launch", "cxx-api", "os"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".cpp", ".hpp", ".h", ".c")


def is_test(path):
    base = os.path.basename(path)
    return (base.endswith("_test.cpp") or "test_util" in base or path.startswith("src/testing/")
            or "/tests/" in path)


def layer_of(path):
    """The layer of a repository path, or None for files outside every layer."""
    if path.startswith("src/transport/") and path.count("/") >= 3:
        return "transports"
    best = None
    for name, prefix, _ in LAYERS:
        if prefix == "src/transport/<name>/":
            continue
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            if best is None or len(prefix) > len(best[1]):
                best = (name, prefix)
    return best[0] if best else None


def closure():
    uses = {name: set(u) for name, _, u in LAYERS}
    changed = True
    while changed:
        changed = False
        for name in uses:
            extra = set()
            for u in uses[name]:
                extra |= uses[u]
            if not extra <= uses[name]:
                uses[name] |= extra
                changed = True
    return uses


def resolve(header, including, root):
    """The repository path an include names, or None if outside the tree."""
    for base in (os.path.dirname(including), "src", "include", "layers/mpi/include",
                 "layers/mpi/src", "layers/ncs/include", "layers/ncs/src"):
        candidate = os.path.normpath(os.path.join(base, header))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def transport_folder(path):
    parts = path.split("/")
    return parts[2] if path.startswith("src/transport/") and len(parts) >= 4 else None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    allowed = closure()
    problems = []
    for top in ("src", "include", "layers", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), root)
                layer = layer_of(path)
                if layer is None or is_test(path):
                    continue
                with open(os.path.join(root, path), encoding="utf-8") as src:
                    for lineno, line in enumerate(src, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = resolve(m.group(1), path, root)
                        if target is None:
                            continue
                        target_layer = layer_of(target)
                        if target_layer is None:
                            continue
                        upward = target_layer != layer and target_layer not in allowed[layer]
                        sideways = (layer == "transports" and target_layer == "transports" and
                                    transport_folder(path) != transport_folder(target))
                        if upward or sideways:
                            problems.append(f"{path}:{lineno}: {layer} includes {m.group(1)} "
                                            f"(layer {target_layer})")
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} include(s) against the layering "
              "(docs/architecture.md, Layers)", file=sys.stderr)
        return 1
    print("check-layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
