#!/usr/bin/env python3
"""The house rule on sizes (docs/design.md §8): a source file under src/ of
more than 500 lines says why at its top (a comment with "Over N lines" in
its first 15 lines, N at least 500), and no C++ function is longer than 80 lines, its
signature to its closing brace.

    tests/house/check_sizes.py SOURCE_DIR

Prints each breach as file:line and exits 1 when there is one. The C++
reader is small on purpose: it skips comments, string and character
literals (raw strings too, where the SQL lives), counts braces, and takes a
brace opened at namespace or class level after a ')' for a function body.
"""
import os
import re
import sys

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
SOURCES = (".cpp", ".hpp", ".lua", ".h")
# "Over 500 lines: why" (or "Over 600 lines for a reason: why"): a reason
# written when the file was smaller does not count.
REASON = re.compile(r"[Oo]ver (\d+) lines")


def code_only(text):
    """`text` with comments and literals blanked (newlines kept)."""
    # Preprocessor lines hold no braces of the code's own (and their
    # parentheses would make a header look like a function's).
    text = re.sub(r"(?m)^[ \t]*#.*$", "", text)
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(text):
    """(line, length) of each function body over the limit."""
    code = code_only(text)
    found = []
    stack = []  # "scope" (namespace, class: functions may open here) or "body"
    header_start = 0  # where the text before the next '{' began
    line = 1
    header_line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
            continue
        if c in ";}" and (not stack or stack[-1][0] == "scope"):
            header_start, header_line = i + 1, None
        if header_line is None and not c.isspace() and c not in ";}":
            header_line = line
        if c == "{":
            inside_body = stack and stack[-1][0] == "body"
            header = code[header_start:i]
            if inside_body:
                stack.append(("body", None))
            elif re.search(r"\b(namespace|class|struct|enum|union)\b", header) and \
                    "(" not in header.split("{")[0].split("=")[0]:
                stack.append(("scope", None))
            elif ")" in header:
                stack.append(("body", header_line or line))
            else:
                stack.append(("scope", None))  # an initializer, extern "C"...
            header_start, header_line = i + 1, None
        elif c == "}":
            if not stack:
                continue
            kind, start = stack.pop()
            if kind == "body" and start is not None:
                length = line - start + 1
                if length > MAX_FUNCTION_LINES:
                    found.append((start, length))
            if not stack or stack[-1][0] == "scope":
                header_start, header_line = i + 1, None
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    breaches = []
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = text.count("\n")
            head = "\n".join(text.splitlines()[:15])
            stated = [int(m) for m in REASON.findall(head)]
            if lines > MAX_FILE_LINES and not any(n >= MAX_FILE_LINES for n in stated):
                breaches.append(f"{path}:1: {lines} lines, over {MAX_FILE_LINES} without "
                                f"its reason at the top (\"Over {MAX_FILE_LINES} lines: why\")")
            if name.endswith((".cpp", ".hpp", ".h")):
                for start, length in long_functions(text):
                    breaches.append(f"{path}:{start}: a function of {length} lines "
                                    f"(at most {MAX_FUNCTION_LINES})")
    for b in breaches:
        print(b)
    if breaches:
        print(f"house/sizes: {len(breaches)} breach(es) of the size rule", file=sys.stderr)
        return 1
    print("house/sizes: every file and function within the size rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
