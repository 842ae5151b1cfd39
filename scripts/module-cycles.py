#!/usr/bin/env python3
"""Import cycles between the files of recorder/src.

    python3 scripts/module-cycles.py [--use-only] [--edges] [--why] [--max N] [SRC_DIR]

Reads every .rs file under SRC_DIR (default recorder/src), drops comments
and string literals, and follows each path (in `use` items, with their
`{..}` groups, and in code) to the file of the deepest module it names.
A path starts at `crate::`, `super::` or `self::`, or at a name that the
module it is written in knows as a module: a child module file (Rust 2018
relative paths: `use emit::x;` or `emit::x()` in alloc/mod.rs names
alloc/emit.rs), a module a `use` item bound (`use crate::a::b;` then
`b::f()`, `use x::{self}`, `use y as z`), or one of those of a module that
a glob (`use super::*;`) imports. Re-exports are edges like any `use`: a
path `crate::m::X` lands on m/mod.rs, and m/mod.rs's `pub(crate) use
inner::X;` is its edge to m/inner.rs; a path through a re-exported module
(`crate::a::m::X` where a.rs has `pub use crate::b::m;`) counts for both a.rs
and b/m.rs. Prints the strongly connected components of that file graph
with more than one file (the import cycles), largest first, and the edges
inside each. A path inside an inline module (`mod tests { .. }`) is read
relative to that module. `--use-only` follows only the paths of `use`
items (not paths written in code). `--edges` also prints every edge;
`--why` shows, after each edge of a cycle, the first path that made it.
`--max N` exits 1 when a cycle has more than N files (the layout rule is
`--max 2`, checked by recorder/tests/module_cycles.rs); otherwise exits 0.
"""

import os
import re
import sys


def strip(text):
    """The code of `text` without comments, string and char literals."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif re.match(r'b?r(#*)"', text[i:i + 20]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            if m:
                i += m.end()
                out.append("' '")
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r"\s*(::|[A-Za-z_][A-Za-z0-9_]*|\{|\}|,|\*|.)", re.S)


def tokens(code):
    return [m.group(1) for m in TOKEN.finditer(code) if m.group(1).strip()]


KEYWORDS = {"crate", "super", "self", "Self", "as", "use", "mod", "fn", "let", "in",
            "for", "if", "else", "match", "pub", "impl", "where", "dyn", "return"}


def paths(toks, use_only):
    """Every path (two segments or more, or a `use` item), expanded from
    its `{..}` groups, with the inline modules around it. Each is a tuple
    `(inline, segs, alias, is_use)`: `alias` is the `as` name of a `use`
    leaf. A path starts at `crate`, `super`, `self` or any identifier
    followed by `::` that does not continue another path (`a::b`, `.f::<T>`,
    `$crate` aside); which of the relative ones name a module is decided by
    the caller. With `use_only`, only the paths of `use` items."""
    found = []

    def read(i, prefix, inline, is_use):
        """Reads one path (tree) at `i` under `prefix`; returns the index
        after it."""
        segs = list(prefix)
        while i < len(toks):
            t = toks[i]
            if t == "{":
                # Each comma-separated subtree under `segs`.
                j = i + 1
                while j < len(toks) and toks[j] != "}":
                    if toks[j] == ",":
                        j += 1
                        continue
                    k = read(j, segs, inline, is_use)
                    j = k if k > j else j + 1
                    while j < len(toks) and toks[j] not in (",", "}"):
                        j += 1
                return j + 1
            if re.match(r"[A-Za-z_]", t) or t == "*":
                segs.append(t)
                i += 1
            else:
                break
            if i < len(toks) and toks[i] == "::":
                i += 1
            else:
                break
        alias = None
        if is_use and i + 1 < len(toks) and toks[i] == "as":
            alias = toks[i + 1]
            i += 2
        if len(segs) > len(prefix):
            found.append(([name for name, _ in inline], segs, alias, is_use))
        return i

    # Inline modules (`mod tests { .. }`) open at brace depth `d`: a path
    # inside one is relative to it, so each found path carries the inline
    # modules around it.
    inline, depth = [], 0
    i = 0
    while i < len(toks):
        t = toks[i]
        prev = toks[i - 1] if i > 0 else ""
        after_use = prev == "use"
        if after_use and (re.match(r"[A-Za-z_]", t) or t == "{") and t not in ("crate", "super", "self") \
                or t in ("crate", "super", "self") and i + 1 < len(toks) and toks[i + 1] == "::" \
                and prev not in ("::", ".") and (after_use or not use_only) \
                or not use_only and re.match(r"[a-z_][A-Za-z0-9_]*$", t) and t not in KEYWORDS \
                and i + 2 < len(toks) and toks[i + 1] == "::" and re.match(r"[A-Za-z_{*]", toks[i + 2]) \
                and prev not in ("::", ".", "$"):
            i = max(read(i, [], inline, after_use), i + 1)
        elif t == "mod" and i + 2 < len(toks) and toks[i + 2] == "{":
            inline.append((toks[i + 1], depth))
            depth += 1
            i += 3
        elif t == "{":
            depth += 1
            i += 1
        elif t == "}":
            depth -= 1
            if inline and inline[-1][1] == depth:
                inline.pop()
            i += 1
        else:
            i += 1
    return found


def module_of(rel):
    """`a/b.rs` -> ['a', 'b']; `a/mod.rs` -> ['a']; `lib.rs` -> []."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def main():
    argv = sys.argv[1:]
    limit = None
    if "--max" in argv:
        k = argv.index("--max")
        limit = int(argv[k + 1])
        del argv[k:k + 2]
    args = [a for a in argv if not a.startswith("--")]
    show_edges = "--edges" in argv
    show_why = "--why" in argv
    use_only = "--use-only" in argv
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "recorder", "src")
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, name), src)
                files[tuple(module_of(rel))] = rel
    parsed = {}
    for mod, rel in files.items():
        with open(os.path.join(src, rel), encoding="utf-8") as fh:
            parsed[mod] = paths(tokens(strip(fh.read())), use_only)

    # Names a `use` item binds to a module (`use crate::a::b;`,
    # `use super::c as d;`, `use crate::x::{self}`), and the modules a glob
    # (`use super::*;`) brings the names of, per module (inline ones too).
    aliases, globs = {}, {}

    def lookup(scope, name, seen=()):
        """The module `name` names inside module `scope`: a child module
        file, a `use` of a module, or one of those of a glob-imported
        module; None otherwise."""
        if scope + (name,) in files:
            return scope + (name,)
        if name in aliases.get(scope, {}):
            return aliases[scope][name]
        for g in globs.get(scope, ()):
            if g not in seen:
                found = lookup(g, name, seen + (scope,))
                if found:
                    return found
        return None

    def resolve(scope, p):
        """(module, rest, via) for path `p` written in module `scope`: the
        deepest module it names, the segments after it, and the modules
        whose re-export of a module it went through; None when the path
        does not start at a module of this crate."""
        if p[0] == "crate":
            base, rest = (), p[1:]
        elif p[0] in ("self", "super"):
            base, rest = scope, p
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    base = base[:-1]
                rest = rest[1:]
        else:
            base = lookup(scope, p[0])
            if base is None:
                return None
            rest = p[1:]
        via = []
        for k, seg in enumerate(rest):
            nxt = lookup(base, seg) if seg not in ("self", "*") else None
            if nxt is None or (nxt != base + (seg,) and seg not in aliases.get(base, {})):
                return base, rest[k:], via
            if nxt != base + (seg,):
                # `crate::a::m` where a.rs has `pub use crate::b::m;`: the
                # path goes through a.rs's re-export, then into b/m.rs.
                via.append(base)
            base = nxt
        return base, [], via

    # Uses may name modules through other uses: bind until nothing changes.
    for _ in range(8):
        changed = False
        for mod, found in parsed.items():
            for inner, p, alias, is_use in found:
                if not is_use:
                    continue
                scope = mod + tuple(inner)
                r = resolve(scope, p)
                if r is None:
                    continue
                target, rest, _ = r
                if rest == ["*"]:
                    if target not in globs.get(scope, []):
                        globs.setdefault(scope, []).append(target)
                        changed = True
                elif not rest or rest == ["self"]:
                    name = alias or (p[-2] if p[-1] == "self" and len(p) > 1 else p[-1])
                    if name not in ("self", "super", "crate", "_") and aliases.get(scope, {}).get(name) != target:
                        aliases.setdefault(scope, {})[name] = target
                        changed = True
        if not changed:
            break

    edges = {f: set() for f in files.values()}
    why = {}
    for mod, rel in files.items():
        for inner, p, _, _ in parsed[mod]:
            r = resolve(mod + tuple(inner), p)
            if r is None:
                continue
            for target in [r[0]] + r[2]:
                # An inline module has no file: a path to it (or into it)
                # lands in the file that holds it.
                while target and target not in files:
                    target = target[:-1]
                dest = files.get(target)
                if dest and dest != rel:
                    edges[rel].add(dest)
                    why.setdefault((rel, dest), "::".join(p))

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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
            sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    cycles = sorted((c for c in sccs if len(c) > 1), key=lambda c: (-len(c), c))
    print(f"{len(files)} files, {sum(len(e) for e in edges.values())} edges, "
          f"{len(cycles)} import cycles (largest {len(cycles[0]) if cycles else 0} files)")
    for c in cycles:
        print(f"\ncycle of {len(c)} files:")
        members = set(c)
        for v in c:
            inside = sorted(edges[v] & members)
            if show_why:
                inside = [f"{w} ({why[(v, w)]})" for w in inside]
            print(f"  {v} -> {', '.join(inside)}")
    if show_edges:
        print("\nall edges:")
        for v in sorted(edges):
            print(f"  {v} -> {', '.join(sorted(edges[v])) or '-'}")
    if limit is not None and cycles and len(cycles[0]) > limit:
        print(f"\nFAIL: an import cycle of {len(cycles[0])} files (at most {limit} allowed)")
        sys.exit(1)


if __name__ == "__main__":
    main()
