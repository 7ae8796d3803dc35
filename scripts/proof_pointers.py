#!/usr/bin/env python3
"""Checks that every pointer `docs/proofs/X.md §N` (also `proofs/X.md §N` from inside docs/, and
the lists and ranges `§2.8, §5.6`, `§8-§9`, `§2.3–2.4`) names a file of docs/proofs/ and a
section heading of it.

A heading numbers its section either as `## §N title` or as `## N. title` (a range `§2.3–2.4`
numbers both ends). Scanned: src/, include/, apps/, python/, experiments/, tests/, bench/ and
docs/ (C++, Python, shell, CMake and Markdown). Exit 1, listing file:line and the pointer, when
one does not resolve, so CTest can run it.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROOFS = ROOT / "docs" / "proofs"
SCANNED = ["src", "include", "apps", "python", "experiments", "tests", "bench", "docs"]
SUFFIXES = {".cpp", ".hpp", ".h", ".py", ".sh", ".md", ".txt", ".cmake"}
NUM = r"\d+(?:\.\d+)*"
# `proofs/x.md` then up to a few characters (a space, a closing bracket or parenthesis, a comma)
# and the section list: §N, optionally followed by `-§M`, `–M`, `, §M` ...
POINTER = re.compile(r"proofs/([A-Za-z0-9_-]+\.md)[)\]`,:]{0,3} ?((?:§" + NUM +
                     r")(?:\s*(?:[-–]|,|and)\s*§?" + NUM + r")*)")
HEADING = re.compile(r"^#+\s+§?(" + NUM + r")(?:\.?\s*[-–]\s*§?(" + NUM + r"))?\.?(?:\s|$)")


def section_numbers(path):
    """The section numbers a proof file's headings name."""
    numbers = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        m = HEADING.match(line)
        if m:
            numbers.update(n for n in m.groups() if n)
    return numbers


def pointers(text):
    """(line, file, [section numbers]) for every pointer in `text`."""
    for m in POINTER.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1), re.findall(NUM, m.group(2))


def main():
    sections = {p.name: section_numbers(p) for p in PROOFS.glob("*.md")}
    bad = checked = 0
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or "corpus" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for line, name, numbers in pointers(text):
                for n in numbers:
                    checked += 1
                    if n not in sections.get(name, set()):
                        bad += 1
                        where = path.relative_to(ROOT)
                        why = "no such file" if name not in sections else "no heading " + n
                        print(f"{where}:{line}: docs/proofs/{name} §{n}: {why}")
    print(f"{checked} section pointers checked, {bad} unresolved")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
