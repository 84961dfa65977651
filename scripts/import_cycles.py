#!/usr/bin/env python3
"""Import cycles between the files of each crate of this workspace.

A file imports another when it names an item through `crate::`, `super::`
or `self::` paths that resolve into the other file's module (`use`
declarations, `{a, b}` groups and paths in expressions alike). Declaring a
child module (`mod x;`) is not an import. Prints each cycle (a strongly
connected set of files, with the edges inside it) and `import cycles: N`;
exits 1 when N > 0. `make test` runs it so the layers stay acyclic.

Usage: scripts/import_cycles.py [WORKSPACE_DIR]
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"\b(crate|super|self)((?:::(?:" + IDENT + r"|\{[^;]*?\}))+)", re.S)
COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')


def module_of(src, path):
    """The module path (a tuple) of a file below a crate's src/."""
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def expand(tail):
    """`::a::{b, c::d}::e` -> ['a::b', 'a::c::d'] (groups expanded, one level)."""
    tail = tail.lstrip(":")
    m = re.match(r"((?:" + IDENT + r"::)*)\{(.*)\}", tail, re.S)
    if not m:
        return [tail]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        for sub in expand(p) if "{" in p else [p]:
            out.append(prefix + sub)
    return out


def crate_files(src):
    """The library's files (binaries, `main.rs` beside `lib.rs` and
    `src/bin/`, are crates of their own that use the library by name)."""
    files = []
    for top, dirs, names in os.walk(src):
        if os.path.relpath(top, src).split(os.sep)[0] == "bin":
            continue
        files += [os.path.join(top, n) for n in names if n.endswith(".rs")]
    if os.path.join(src, "lib.rs") in files:
        files = [f for f in files if f != os.path.join(src, "main.rs")]
    return files


def edges(src):
    files = crate_files(src)
    modules = {module_of(src, f): f for f in files}
    graph = {f: set() for f in files}
    for f in files:
        me = module_of(src, f)
        text = STRING_RE.sub('""', COMMENT_RE.sub("", open(f, encoding="utf-8").read()))
        # A file's own tests are part of it; they may import anything.
        text = text.split("#[cfg(test)]")[0]
        # Paths through a child module by its bare name (`lenient::x`).
        children = {mod[-1]: fl for mod, fl in modules.items() if len(mod) == len(me) + 1 and mod[:-1] == me}
        for m in re.finditer(r"(?<![:\w])(" + IDENT + r")::(" + IDENT + r")", text):
            if m.group(1) in children and children[m.group(1)] != f:
                deeper = modules.get(me + (m.group(1), m.group(2)))
                graph[f].add(deeper or children[m.group(1)])
        for m in PATH_RE.finditer(text):
            base, tail = m.group(1), m.group(2)
            if base == "crate":
                start = ()
            elif base == "super":
                # `super` of a module is its parent module.
                start = me[:-1]
            else:
                start = me
            for item in expand(tail):
                names = [n for n in item.split("::") if n and n != "self"]
                while names and names[0] == "super":
                    start = start[:-1]
                    names = names[1:]
                # The longest prefix that is a module file.
                target = None
                for k in range(len(names), -1, -1):
                    cand = start + tuple(names[:k])
                    if cand in modules:
                        target = modules[cand]
                        break
                if target and target != f:
                    graph[f].add(target)
    return graph


def cycles(graph):
    """Strongly connected sets of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = 0
    for crate in sorted(os.listdir(top)):
        src = os.path.join(top, crate, "src")
        if not os.path.isfile(os.path.join(top, crate, "Cargo.toml")) or not os.path.isdir(src):
            continue
        graph = edges(src)
        for comp in cycles(graph):
            found += 1
            rel = lambda p: os.path.relpath(p, top)
            print("cycle %d: %d files in %s: %s" % (found, len(comp), crate, ", ".join(rel(c) for c in comp)))
            for a in comp:
                for b in sorted(graph[a]):
                    if b in comp:
                        print("  %s -> %s" % (rel(a), rel(b)))
    print("import cycles: %d" % found)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
