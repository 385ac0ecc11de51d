#!/usr/bin/env python3
"""The docs' links (ctest house/docs-links): every relative link of
README.md and docs/**/*.md names a file of the repository, and a link with
an #anchor names a heading of that page (GitHub's anchors: lower case,
punctuation but - and _ dropped, spaces as -). Also: every "DESIGN §N" in
src/ and tests/ names a section N of docs/design.md. Usage:
check_docs_links.py ROOT."""
import os
import re
import sys


def anchors(path):
    out, inside = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            inside = not inside
        if inside or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n, base = 1, slug
        while slug in out:
            slug, n = f"{base}-{n}", n + 1
        out.add(slug)
    return out


def main(root):
    pages = [os.path.join(root, "README.md")]
    for d, _, files in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(d, f) for f in files if f.endswith(".md")]
    bad = []
    for page in pages:
        text = open(page, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(full):
                bad.append(f"{os.path.relpath(page, root)}: {target}: no such file")
                continue
            if os.path.isdir(full):
                full = os.path.join(full, "README.md")
            if anchor and anchor not in anchors(full):
                bad.append(f"{os.path.relpath(page, root)}: {target}: no such heading")
    design = open(os.path.join(root, "docs", "design.md"), encoding="utf-8").read()
    sections = set(re.findall(r"^#+ ([0-9]+(?:\.[0-9]+)?)\.? ", design, flags=re.M))
    for d in ("src", "tests", "scripts"):
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                path = os.path.join(base, f)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                for ref in re.findall(r"DESIGN((?:[ ,]*§[0-9.]*[0-9][–-]?)+)", text):
                    for n in re.findall(r"§([0-9.]*[0-9])", ref):
                        if n not in sections:
                            bad.append(f"{os.path.relpath(path, root)}: DESIGN §{n}: no such section in docs/design.md")
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"house/docs-links: {len(bad)} broken link(s)", file=sys.stderr)
        return 1
    print("house/docs-links: every link and DESIGN § resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
