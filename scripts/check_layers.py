#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the house's floors (docs/architecture.md, "Floors"): every
#include between folders points down, the components include each other
without a circle, and api and daemon (the two floors that sit beside each
other on top of the components) do not include each other.

  python3 scripts/check_layers.py            # exit 1 and the offending includes
  python3 scripts/check_layers.py --graph    # the folder graph, arrows counted

A folder is src/<name>, tools, policies (the shipped policy modules),
python (the extension's C++) or include (the public headers, mlos/*.h).

It also checks that the Python package (python/mlos_training) has no
import circle: no module imports, at load time, a module that imports it
(a package's __init__ included: a submodule the root imports must not take
names from the root).
"""
import ast
import argparse
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lower floors first. A folder may include its own floor's folders only
# where the floor says so (components: without a circle).
FLOORS = [
    ("include", {"include"}),
    ("core", {"core"}),
    ("os", {"os"}),
    ("protocol", {"protocol"}),
    ("components", {"policy", "collectives", "dataload", "tmm", "tune", "checkpoint", "gpu", "gpushare"}),
    ("engine", {"engine"}),
    ("top", {"api", "daemon"}),
    ("tools", {"tools"}),
]
# What some folders may include at all, whatever their floor: a shipped
# policy is built the way a user's would be (the public headers and the
# pure core), and the Python extension binds the public C API only.
ONLY = {
    "policies": {"include", "core"},
    "python": {"include"},
}
FLOOR_OF = {folder: i for i, (_, folders) in enumerate(FLOORS) for folder in folders}
FLOOR_OF.update({"policies": FLOOR_OF["tools"], "python": FLOOR_OF["tools"]})
INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]', re.M)
SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp")


def folder_of(path):
    parts = path.split("/")
    if parts[0] == "src":
        return parts[1]
    return {"python": "python", "include": "include"}.get(parts[0], parts[0])


def arrows():
    """(from, to) -> [file:line that includes], over src, tools, policies,
    python/src and include."""
    known = set(os.listdir(os.path.join(ROOT, "src")))
    found = collections.defaultdict(list)
    for top in ("src", "tools", "policies", "python/src", "include"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(d, name), ROOT)
                a = folder_of(path)
                with open(os.path.join(ROOT, path), errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    first = target.split("/")[0]
                    if first in known:
                        b = first
                    elif first == "mlos" and "/" in target:
                        b = "include"
                    else:
                        continue
                    if a != b:
                        line = text.count("\n", 0, m.start()) + 1
                        found[(a, b)].append(f"{path}:{line} includes {target}")
    return found


def circles(edges, nodes):
    """Each circle among `nodes` (as a list of folders), found by DFS."""
    graph = collections.defaultdict(set)
    for a, b in edges:
        if a in nodes and b in nodes:
            graph[a].add(b)
    seen, on_path, found = set(), [], []

    def visit(n):
        if n in on_path:
            found.append(on_path[on_path.index(n):] + [n])
            return
        if n in seen:
            return
        seen.add(n)
        on_path.append(n)
        for m in sorted(graph[n]):
            visit(m)
        on_path.pop()

    for n in sorted(nodes):
        visit(n)
    return found


PACKAGE = os.path.join(ROOT, "python", "mlos_training")


def python_module_of(path):
    """'mlos_training.x.y' (a package by its __init__) for a file of PACKAGE."""
    rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-len(".py")].split(os.sep)
    return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)


def python_imports():
    """(module, module it imports at load time) -> [file:line], over PACKAGE.
    Imports inside functions run later and cannot form a load-time circle;
    `from . import name` imports the submodule `name` if there is one, else
    the package."""
    modules = {}
    for d, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                modules[python_module_of(os.path.join(d, name))] = os.path.join(d, name)
    found = collections.defaultdict(list)
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:  # load time only: the module's top level
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            base = module.split(".")
            base = base[:len(base) - node.level + (1 if is_package else 0)]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                to = sub if sub in modules or alias.name == "_core" else target
                where = f"{os.path.relpath(path, ROOT)}:{node.lineno}"
                if to != module and to in modules and where not in found[(module, to)]:
                    found[(module, to)].append(where)
    return found, set(modules)


def problems(found):
    out = []
    for (a, b), where in sorted(found.items()):
        if a in ONLY:
            if b not in ONLY[a]:
                out.append((f"{a} may include only {sorted(ONLY[a])}, not {b}", where))
            continue
        fa, fb = FLOOR_OF.get(a), FLOOR_OF.get(b)
        if fa is None or fb is None:
            out.append((f"{a} -> {b}: a folder with no floor (add it to scripts/check_layers.py)", where))
        elif fb > fa:
            out.append((f"{a} (floor {FLOORS[fa][0]}) includes {b} (floor {FLOORS[fb][0]}): an arrow up", where))
        elif fb == fa and FLOORS[fa][0] != "components":
            out.append((f"{a} and {b} share the floor {FLOORS[fa][0]} and must not include each other", where))
    for circle in circles(found.keys(), FLOORS[FLOOR_OF["policy"]][1]):
        where = [w for x, y in zip(circle, circle[1:]) for w in found[(x, y)]]
        out.append(("components in a circle: " + " -> ".join(circle), where))
    imports, modules = python_imports()
    for circle in circles(imports.keys(), modules):
        where = [w for x, y in zip(circle, circle[1:]) for w in imports[(x, y)]]
        out.append(("Python modules import each other: " + " -> ".join(circle), where))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", action="store_true", help="print the folder graph (arrows counted)")
    args = ap.parse_args()
    found = arrows()
    if args.graph:
        for (a, b), where in sorted(found.items()):
            print(f"{a:12s} -> {b:12s} {len(where)}")
    bad = problems(found)
    for why, where in bad:
        print(f"check_layers: {why}", file=sys.stderr)
        for w in where[:5]:
            print(f"  {w}", file=sys.stderr)
        if len(where) > 5:
            print(f"  ... and {len(where) - 5} more", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
