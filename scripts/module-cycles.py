#!/usr/bin/env python3
"""Import cycles between the files of recorder/src.

    python3 scripts/module-cycles.py [--use-only] [--edges] [--max N] [SRC_DIR]

Reads every .rs file under SRC_DIR (default recorder/src), drops comments
and string literals, and follows each `crate::`, `super::` and `self::` path
(in `use` items, with their `{..}` groups, and in code) to the file of the
deepest module it names. Prints the strongly connected components of that
file graph with more than one file (the import cycles), largest first, and
the edges inside each. A path inside an inline module (`mod tests { .. }`)
is read relative to that module. `--use-only` follows only the paths of
`use` items (not paths written in code). `--edges` also prints every edge.
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


def paths(toks, use_only):
    """Every path starting at `crate`, `super` or `self`, expanded (only
    those right after `use` if `use_only`)."""
    found = []

    def read(i, prefix):
        segs = list(prefix)
        while i < len(toks):
            t = toks[i]
            if t == "{":
                depth_end = i + 1
                # Each comma-separated subtree under `segs`.
                j = i + 1
                while j < len(toks) and toks[j] != "}":
                    if toks[j] == ",":
                        j += 1
                        continue
                    j = read(j, segs)
                    if j < len(toks) and toks[j] == "as":
                        j += 2
                    while j < len(toks) and toks[j] not in (",", "}"):
                        j += 1
                depth_end = j + 1
                return depth_end
            if re.match(r"[A-Za-z_]", t) or t == "*":
                segs.append(t)
                i += 1
            else:
                break
            if i < len(toks) and toks[i] == "::":
                i += 1
            else:
                break
        if len(segs) > len(prefix):
            found.append(segs)
        return i

    # Inline modules (`mod tests { .. }`) open at brace depth `d`: a path
    # inside one is relative to it, so each found path carries the inline
    # modules around it.
    inline, depth = [], 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if toks[i] in ("crate", "super", "self") and i + 1 < len(toks) and toks[i + 1] == "::" \
                and not (i > 0 and toks[i - 1] == "::") \
                and not (use_only and not (i > 0 and toks[i - 1] == "use")):
            start = len(found)
            i = read(i, [])
            for k in range(start, len(found)):
                found[k] = ([name for name, _ in inline], found[k])
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
    use_only = "--use-only" in argv
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "recorder", "src")
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, name), src)
                files[tuple(module_of(rel))] = rel
    edges = {f: set() for f in files.values()}
    for mod, rel in files.items():
        with open(os.path.join(src, rel), encoding="utf-8") as fh:
            code = strip(fh.read())
        for inner, p in paths(tokens(code), use_only):
            if p[0] == "crate":
                base, rest = [], p[1:]
            else:
                base = list(mod) + inner
                rest = p
                while rest and rest[0] in ("self", "super"):
                    if rest[0] == "super":
                        base = base[:-1]
                    rest = rest[1:]
            # An inline module has no file: its paths land in the file that
            # holds it (the deepest file-backed prefix).
            while base and tuple(base) not in files:
                base = base[:-1]
            target = tuple(base)
            for seg in rest:
                if target + (seg,) in files:
                    target = target + (seg,)
                else:
                    break
            dest = files.get(target)
            if dest and dest != rel:
                edges[rel].add(dest)

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
