#!/usr/bin/env python3
"""Lists the functions in src/ longer than a limit (default 80 lines, signature to closing brace).

A function is a top-level definition: a line at column 0 that is not a preprocessor line, a
namespace, a class or a comment, ending (possibly a few lines later) with '{', up to the next '}'
at column 0. Numeric kernels whose length is their nature are exempt when the line before the
signature (or the signature's comment block) contains 'numeric kernel'. Exit 1 when any other
function is too long, so CTest can run it.
"""
import pathlib
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 80
ROOT = pathlib.Path(__file__).resolve().parent.parent / "src"
SKIP = re.compile(r"^(#|namespace|}|//|/\*|\*|using |template|struct |class |enum |static_assert|extern )")


def functions(lines):
    i = 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and not SKIP.match(line) and "(" in line:
            start = i
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                comment = "\n".join(lines[max(0, start - 12):start])
                yield start + 1, k - start + 1, line.strip(), "numeric kernel" in comment
                i = k + 1
                continue
        i += 1


def main():
    bad = 0
    for path in sorted(ROOT.rglob("*.cpp")):
        lines = path.read_text().splitlines()
        for line_no, length, signature, kernel in functions(lines):
            if length > LIMIT:
                tag = "kernel" if kernel else "TOO LONG"
                bad += not kernel
                print(f"{tag:8} {length:4} {path.relative_to(ROOT.parent)}:{line_no} {signature[:90]}")
    print(f"{bad} function(s) over {LIMIT} lines that are not marked numeric kernels")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
