#!/usr/bin/env python3
"""House rules of the workspace's Rust sources, checked without building anything.

usage: house_rules.py [--root DIR] [--max-fn-lines N] [--fn-dir DIR]...

1. No import circles. Each crate of the workspace (every member's src/lib.rs, src/main.rs,
   src/bin/*, tests/*.rs, benches/*.rs, examples/*.rs) is read as a tree of modules from its
   `mod` declarations (with `#[path]`), and every source file is a node. An edge A -> B is a
   reference from A to a module that lives in B: `use crate::...`, `use super::...`,
   `use self::...`, `use child::...` (a child module of the current one), and the same paths
   in expressions and types (`crate::a::b::f()`, `super::x`, `$crate::...`). A path is
   resolved to the file that defines the deepest module it names: `crate::a::b::Item` is an
   edge to the file of `a::b` (an item defined in a parent file, reached with `super::`, is an
   edge to that parent file). A parent's `mod child;` is not an edge; references inside inline
   modules (`mod tests { use super::*; }`) belong to the file they are written in. Comments
   (doc links included) and string literals are not read. Every strongly connected component
   of more than one file is printed with one of its cycles.
2. No long functions. Every `fn` with a body under recorder/src (or the --fn-dir folders)
   longer than --max-fn-lines (150) lines, from the `fn` line to the line of its closing brace,
   is listed.

Exits 1 if either check finds something, 0 otherwise; prints what it checked either way.
Python 3 standard library only.
"""

import argparse
import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# Lexing: comments and string/char literals blanked (newlines kept, so line numbers hold).
# ---------------------------------------------------------------------------------------------

_CHAR_LIT = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|.)|[^\\'\n])'")
_RAW_STR = re.compile(r'b?r(#*)"')


def strip_rust(text):
    """`text` with comments, strings and char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and (
            m := _RAW_STR.match(text, i)
        ):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(" " * (m.end() - i - 1) + '"' + blank(text[m.end() : j - len(end)]) + '"' + " " * (len(end) - 1))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append('"' + blank(text[i + 1 : j - 1]) + '"')
            i = j
        elif c == "'":
            m = _CHAR_LIT.match(text, i)
            if m:
                out.append("' '" + " " * (m.end() - i - 3))
                i = m.end()
            else:  # a lifetime or a label
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_TOKEN = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_]*|::|\n|[{}();,*<>#\[\]=.!]|\S")


def tokens(stripped):
    """(token, line) pairs of a stripped source; newlines are not tokens."""
    line, out = 1, []
    for m in _TOKEN.finditer(stripped):
        t = m.group(0)
        if t == "\n":
            line += 1
        else:
            out.append((t, line))
    return out


def is_ident(t):
    return bool(re.fullmatch(r"\$?[A-Za-z_][A-Za-z0-9_]*", t))


# ---------------------------------------------------------------------------------------------
# Crates and their module trees.
# ---------------------------------------------------------------------------------------------

_PATH_ATTR = re.compile(r'#\[\s*path\s*=\s*"([^"]+)"\s*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)')


def workspace_members(root):
    text = open(os.path.join(root, "Cargo.toml"), encoding="utf-8").read()
    m = re.search(r"^members\s*=\s*\[([^\]]*)\]", text, re.M)
    if not m:
        return ["."]
    return re.findall(r'"([^"]+)"', m.group(1))


def crate_roots(member_dir):
    roots = []
    for name in ("src/lib.rs", "src/main.rs"):
        p = os.path.join(member_dir, name)
        if os.path.isfile(p):
            roots.append(p)
    for sub in ("src/bin", "tests", "benches", "examples"):
        d = os.path.join(member_dir, sub)
        if not os.path.isdir(d):
            continue
        for e in sorted(os.listdir(d)):
            p = os.path.join(d, e)
            if e.endswith(".rs") and os.path.isfile(p):
                roots.append(p)
            elif os.path.isfile(os.path.join(p, "main.rs")):
                roots.append(os.path.join(p, "main.rs"))
    return roots


class Crate:
    """One crate: module path (tuple of names) -> file, and each file's parsed tokens."""

    def __init__(self, root_file, files):
        self.root_file = root_file
        self.modules = {(): root_file}  # module path -> file it lives in
        self.files = files  # shared cache: file -> (tokens, module spans)
        self.file_module = {}  # file -> its module path (first seen)
        self._load(root_file, (), is_mod_rs=True)

    def _load(self, path, modpath, is_mod_rs):
        path = os.path.normpath(path)
        if path in self.file_module:
            return
        self.file_module[path] = modpath
        self.modules[modpath] = path
        text = open(path, encoding="utf-8", errors="replace").read()
        if path not in self.files:
            self.files[path] = tokens(strip_rust(text))
        path_attrs = {m.group(2): m.group(1) for m in _PATH_ATTR.finditer(text)}
        toks = self.files[path]
        base_dir = os.path.dirname(path)
        mod_dir = base_dir if is_mod_rs else os.path.join(base_dir, os.path.splitext(os.path.basename(path))[0])
        # inline-module stack: (names, brace depth at which it closes)
        stack, depth = [], 0
        i = 0
        while i < len(toks):
            t = toks[i][0]
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                while stack and stack[-1][1] > depth:
                    stack.pop()
            elif t == "mod" and i + 2 < len(toks) and is_ident(toks[i + 1][0]) and (i == 0 or toks[i - 1][0] != "::"):
                name, nxt = toks[i + 1][0], toks[i + 2][0]
                inner = tuple(s[0] for s in stack)
                child = modpath + inner + (name,)
                if nxt == "{":
                    self.modules[child] = path
                    stack.append((name, depth + 1))
                elif nxt == ";":
                    if name in path_attrs and not inner:
                        f = os.path.join(base_dir, path_attrs[name])
                        self._load(f, child, is_mod_rs=os.path.basename(f) == "mod.rs")
                    else:
                        d = os.path.join(mod_dir, *inner)
                        for f, mr in ((os.path.join(d, name + ".rs"), False), (os.path.join(d, name, "mod.rs"), True)):
                            if os.path.isfile(f):
                                self._load(f, child, is_mod_rs=mr)
                                break
            i += 1

    def module_at(self, path):
        """For each token index of `path`'s tokens, the module path it is written in."""
        toks = self.files[path]
        base = self.file_module[path]
        stack, depth, out = [], 0, []
        pending = None
        for i, (t, _) in enumerate(toks):
            if t == "{":
                depth += 1
                if pending is not None and pending[1] == i:
                    stack.append((pending[0], depth))
                    pending = None
            elif t == "}":
                depth -= 1
                while stack and stack[-1][1] > depth:
                    stack.pop()
            elif t == "mod" and i + 2 < len(toks) and is_ident(toks[i + 1][0]) and toks[i + 2][0] == "{":
                pending = (toks[i + 1][0], i + 2)
            out.append(base + tuple(s[0] for s in stack))
        return out


def parse_use_tree(toks, i):
    """Parses a use tree from token i; returns (list of segment lists, next index)."""
    prefix = []
    while i < len(toks):
        t = toks[i][0]
        if t == "{":
            paths, i = [], i + 1
            while i < len(toks) and toks[i][0] != "}":
                sub, i = parse_use_tree(toks, i)
                paths.extend(prefix + s for s in sub)
                if i < len(toks) and toks[i][0] == ",":
                    i += 1
            return paths, i + 1
        if t == "*":
            return [prefix + ["*"]], i + 1
        if is_ident(t):
            prefix.append(t)
            i += 1
            if i < len(toks) and toks[i][0] == "as":
                # `path as alias`: the alias is what the module's code names it by.
                alias = toks[i + 1][0] if i + 1 < len(toks) else "_"
                return [prefix + ["=>" + alias]], i + 2
            if i < len(toks) and toks[i][0] == "::":
                i += 1
                continue
            return [prefix], i
        if t == "::":  # a leading `::` (extern crate path)
            return [["::"]], i + 1
        return [prefix] if prefix else [], i
    return [prefix], i


def resolve(crate, here, segs):
    """The module path a path written in module `here` refers to, or None if external."""
    if not segs:
        return None
    first = segs[0]
    if first in ("crate", "$crate"):
        base, rest = (), segs[1:]
    elif first == "super":
        k = 0
        while k < len(segs) and segs[k] == "super":
            k += 1
        if k > len(here):
            return None
        base, rest = here[: len(here) - k], segs[k:]
    elif first == "self":
        base, rest = here, segs[1:]
    elif here + (first,) in crate.modules:
        base, rest = here, segs
    else:
        return None
    target = base
    for s in rest:
        if target + (s,) in crate.modules:
            target = target + (s,)
        else:
            break
    return target


def import_graph(root):
    """(edges: {file: {file: first line}}, files, crates) over every crate of the workspace."""
    files_cache, crates = {}, []
    for member in workspace_members(root):
        for r in crate_roots(os.path.join(root, member)):
            crates.append(Crate(os.path.normpath(r), files_cache))
    edges = {}
    for crate in crates:
        for path in crate.file_module:
            toks = crate.files[path]
            mods = crate.module_at(path)
            out = edges.setdefault(path, {})

            def add(segs, i):
                m = resolve(crate, mods[i], segs)
                if m is None:
                    return
                target = crate.modules[m]
                if target != path:
                    out.setdefault(target, toks[i][1])

            # The names `use` binds in this file (`use crate::a::{self, b}` binds `a` and `b`;
            # `use x as y` binds `y`), to their paths: a path written from such a name
            # (`a::c::f()`) names a module of the crate too.
            bindings = {}
            i = 0
            while i < len(toks):
                prev = toks[i - 1][0] if i else ""
                if toks[i][0] == "use" and i + 1 < len(toks) and toks[i + 1][0] != "<" and prev != "::":
                    start = i
                    paths, i = parse_use_tree(toks, i + 1)
                    for segs in paths:
                        segs = [x for x in segs if x != "*"]
                        alias = segs[-1][2:] if segs and segs[-1].startswith("=>") else None
                        segs = [x for x in segs if not x.startswith("=>")]
                        if segs and segs[-1] == "self":
                            segs = segs[:-1]
                        name = alias or (segs[-1] if segs else "")
                        if not is_ident(name) or name in ("crate", "$crate", "super", "self"):
                            continue
                        # Resolved where the `use` stands (a test module's `super` is not
                        # the file's), to a module only when it names one as a whole.
                        m = resolve(crate, mods[start], segs)
                        if m is not None and len(m) > 0 and m[-1] == segs[-1]:
                            bindings[name] = m
                    continue
                i += 1

            i = 0
            while i < len(toks):
                t = toks[i][0]
                prev = toks[i - 1][0] if i else ""
                if t == "use" and i + 1 < len(toks) and toks[i + 1][0] != "<" and prev != "::":
                    start = i
                    paths, i = parse_use_tree(toks, i + 1)
                    for segs in paths:
                        add([s for s in segs if s != "*" and not s.startswith("=>")], start)
                    continue
                if is_ident(t) and prev not in ("::", ".") and i + 1 < len(toks) and toks[i + 1][0] == "::":
                    bound = t in bindings and t not in ("crate", "$crate", "super", "self")
                    if bound or t in ("crate", "$crate", "super", "self") or (mods[i] + (t,)) in crate.modules:
                        segs, j = [t], i + 1
                        while j + 1 < len(toks) and toks[j][0] == "::" and is_ident(toks[j + 1][0]):
                            segs.append(toks[j + 1][0])
                            j += 2
                        if bound:
                            target = bindings[t]
                            for seg in segs[1:]:
                                if target + (seg,) in crate.modules:
                                    target = target + (seg,)
                                else:
                                    break
                            if crate.modules[target] != path:
                                out.setdefault(crate.modules[target], toks[i][1])
                        else:
                            add(segs, i)
                        i = j
                        continue
                i += 1
    files = sorted(set(files_cache))
    return edges, files, crates


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; components in discovery order."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for v0 in nodes:
        if v0 in index:
            continue
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def a_cycle(comp, edges):
    """One cycle through the component's first file (breadth-first, so a shortest one)."""
    members = set(comp)
    start = comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


# ---------------------------------------------------------------------------------------------
# Long functions.
# ---------------------------------------------------------------------------------------------


def long_functions(path, limit):
    """(name, first line, lines) of each `fn` with a body longer than `limit` lines."""
    text = open(path, encoding="utf-8", errors="replace").read()
    toks = tokens(strip_rust(text))
    found, count = [], 0
    for i, (t, line) in enumerate(toks):
        if t != "fn" or i + 1 >= len(toks) or not is_ident(toks[i + 1][0]):
            continue  # `fn(...)` pointer types
        # The body is the first `{` outside parentheses/brackets; a `;` there first: no body.
        j, nest = i + 2, 0
        while j < len(toks):
            u = toks[j][0]
            if u in "([":
                nest += 1
            elif u in ")]":
                nest -= 1
            elif nest == 0 and u == ";":
                j = None
                break
            elif nest == 0 and u == "{":
                break
            j += 1
        if j is None or j >= len(toks):
            continue
        count += 1
        depth = 0
        for k in range(j, len(toks)):
            if toks[k][0] == "{":
                depth += 1
            elif toks[k][0] == "}":
                depth -= 1
                if depth == 0:
                    lines = toks[k][1] - line + 1
                    if lines > limit:
                        found.append((toks[i + 1][0], line, lines))
                    break
    return found, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--max-fn-lines", type=int, default=150)
    ap.add_argument("--fn-dir", action="append", help="folder whose functions are measured (default recorder/src)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    os.chdir(root)
    failed = False

    edges, files, crates = import_graph(".")
    n_edges = sum(len(v) for v in edges.values())
    comps = [c for c in strongly_connected(files, edges) if len(c) > 1]
    print(f"imports: {len(crates)} crates, {len(files)} files, {n_edges} edges between files")
    for c in comps:
        failed = True
        cyc = a_cycle(c, edges)
        steps = " -> ".join(
            f"{a} (line {edges[a][b]})" if b is not None else a for a, b in zip(cyc, cyc[1:] + [None])
        )
        print(f"  CIRCLE of {len(c)} files: {', '.join(c)}")
        print(f"    {steps}")
    print(f"imports: {len(comps)} circle(s)")

    fn_dirs = args.fn_dir or ["recorder/src"]
    n_files = n_fns = 0
    longs = []
    for d in fn_dirs:
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".rs"):
                    p = os.path.join(dirpath, f)
                    found, count = long_functions(p, args.max_fn_lines)
                    n_files += 1
                    n_fns += count
                    longs.extend((p, *x) for x in found)
    print(f"functions: {n_fns} fn bodies in {n_files} files under {', '.join(fn_dirs)}, limit {args.max_fn_lines} lines")
    for p, name, line, lines in longs:
        failed = True
        print(f"  LONG fn {name} at {p}:{line}: {lines} lines")
    print(f"functions: {len(longs)} longer than {args.max_fn_lines} lines")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
