#!/usr/bin/env python3
"""Checks that docs/benchmarks.md states the present (issue 30): under 300 lines, and every
section that reports a number names the command that reproduces it (a code span starting with one
of the page's commands: `bench`, `dpstats`, `py`, `bench/…`, `scripts/…`, `make`, `mpirun`, …).
Exit 1, naming the section, so CTest can run it.
"""
import pathlib
import re
import sys

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
LIMIT = 300
COMMAND = re.compile(r"`(bench|dpstats|py|make|mpirun|cmake|git clone|/usr/bin/time|/usr/bin/python3|OMPI_\w+=\S+ mpirun"
                     r"|(bench|scripts|build)/[\w./-]+)[ `]")
NUMBER = re.compile(r"\d+(\.\d+)? ?(s|ms|ns|µs|×|x|%|MB|GB|MiB)\b")


def main() -> int:
    lines = PAGE.read_text().splitlines()
    problems = []
    if len(lines) >= LIMIT:
        problems.append(f"{len(lines)} lines (keep it under {LIMIT}: replace numbers, history is in git)")
    sections, title = {}, "(top)"
    for line in lines:
        if line.startswith("## "):
            title = line[3:].strip()
        sections.setdefault(title, []).append(line)
    for title, body in sections.items():
        text = "\n".join(body)
        if NUMBER.search(text) and not COMMAND.search(text):
            problems.append(f"section {title!r} reports numbers but names no reproduce command")
    for p in problems:
        print(f"docs/benchmarks.md: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
