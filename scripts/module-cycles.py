#!/usr/bin/env python3
"""Fails when the modules of a crate, or the child modules of one folder, import each other in
a circle.

For every crate under crates/, an edge A -> B is a `crate::B` path written in module A's
files (the top-level module: `src/a.rs` or `src/a/**`), outside test code (`#[cfg(test)]`
onwards, `*tests*.rs`). Inside every module folder (`src/x/`, `src/x/y/`, ...) the same is
done one level down: an edge A -> B is a `super::B` path in a file directly in the folder
(`a.rs` or `a/mod.rs`), or a `crate::x::B` path anywhere under `a`. Cargo already forbids
cycles between crates; this keeps the modules inside a crate layered the same way.
Usage: scripts/module-cycles.py [--graph]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
PATH = re.compile(r"\bcrate::(\w+)")
GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def top_module(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def non_test_text(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]")
    text = text if cut < 0 else text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def sources(base):
    """(path, path relative to base) of every non-test Rust file under base."""
    for dirpath, _, files in os.walk(base):
        for f in files:
            if f.endswith(".rs") and "tests" not in f and f != "fuzzing.rs":
                path = os.path.join(dirpath, f)
                yield path, os.path.relpath(path, base)


def edges_of(src):
    edges = {}
    for path, rel in sources(src):
        if rel in ("lib.rs", "main.rs"):
            continue
        text = non_test_text(path)
        targets = set(PATH.findall(text))
        for group in GROUP.findall(text):
            targets.update(t.strip().split("::")[0] for t in group.split(",") if t.strip())
        me = top_module(rel)
        edges.setdefault(me, set()).update(t for t in targets if t != me)
    return edges


def child_edges(src, folder):
    """Edges between the child modules of `folder` (a module folder under `src`)."""
    base = os.path.join(src, folder)
    mod_path = "::".join(folder.split(os.sep))
    full = re.compile(r"\bcrate::" + re.escape(mod_path) + r"::(\w+)")
    sup = re.compile(r"\bsuper::(\w+)")
    sup_group = re.compile(r"\bsuper::\{([^}]*)\}", re.S)
    edges = {}
    for path, rel in sources(base):
        if rel == "mod.rs":
            continue
        me = top_module(rel)
        text = non_test_text(path)
        targets = set(full.findall(text))
        # `super::` names a sibling only from a file directly in the folder or a/mod.rs
        if os.sep not in rel or rel == os.path.join(me, "mod.rs"):
            targets.update(sup.findall(text))
            for group in sup_group.findall(text):
                targets.update(
                    t.strip().split("::")[0] for t in group.split(",") if t.strip()
                )
        edges.setdefault(me, set()).update(t for t in targets if t not in (me, "self"))
    return edges


def module_folders(src):
    for dirpath, _, files in os.walk(src):
        if dirpath != src and "mod.rs" in files:
            yield os.path.relpath(dirpath, src)


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    bad = False
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        edges = edges_of(src)
        if "--graph" in sys.argv:
            for m in sorted(edges):
                print(f"{crate}: {m} -> {' '.join(sorted(t for t in edges[m] if t in edges))}")
        for comp in cycles(edges):
            bad = True
            print(f"module cycle in {crate}: {' <-> '.join(comp)}")
        for folder in sorted(module_folders(src)):
            inner = child_edges(src, folder)
            if "--graph" in sys.argv:
                for m in sorted(inner):
                    kids = " ".join(sorted(t for t in inner[m] if t in inner))
                    print(f"{crate}/{folder}: {m} -> {kids}")
            for comp in cycles(inner):
                bad = True
                print(f"module cycle in {crate}/{folder}: {' <-> '.join(comp)}")
    if bad:
        sys.exit(1)
    print("no module cycles in crates/")


if __name__ == "__main__":
    main()
