#!/usr/bin/env python3
"""Fails on intra-doc links that rustdoc rendered as literal `[text]`.

    python3 scripts/doc-literal-links.py target/doc/flightrec

rustdoc resolves a link written in one crate's docs in that crate; when
the item is private there (or hidden), the page a user reads shows the
brackets as text, and `-D rustdoc::broken_intra_doc_links` says nothing
for it. This reads the docblocks of every page under the directory
(code blocks left out, brackets inside code spans ignored) and prints
each `[...]` left in the text with its page and context. Exit 1 if any.
"""
import html
import os
import re
import sys


def literal_links(root):
    found = []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                page = f.read()
            for block in re.finditer(r'<div class="docblock[^"]*">(.*?)</div>', page, re.S):
                body = re.sub(r"<pre.*?</pre>", "", block.group(1), flags=re.S)
                # Brackets inside code spans are code (`[u8; 4]`, `#[cold]`).
                body = re.sub(
                    r"<code>(.*?)</code>",
                    lambda m: "`" + re.sub(r"[\[\]]", "", m.group(1)) + "`",
                    body,
                    flags=re.S,
                )
                body = re.sub(r"<a [^>]*>.*?</a>", "LINK", body, flags=re.S)
                text = html.unescape(re.sub(r"<[^>]+>", "", body))
                for m in re.finditer(r"\[[^\]\n]{1,80}\]", text):
                    context = text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ")
                    found.append((path, m.group(0), context))
    return found


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: doc-literal-links.py DOC_DIR (e.g. target/doc/flightrec)")
    found = literal_links(sys.argv[1])
    for path, link, context in found:
        print(f"{path}: {link} rendered as text: ...{context}...")
    if found:
        sys.exit(f"doc-literal-links: {len(found)} link(s) rendered as literal text")
    print(f"doc-literal-links: none under {sys.argv[1]}")


if __name__ == "__main__":
    main()
