#!/usr/bin/env python3
"""The layout rules of docs/architecture.md ("Layout", "Namespaces", "Adding an option or a
method") that the compiler does not check. Exit 1 on any breach, so CTest can run it.

  * No file in src/ longer than 700 lines: a longer one mixes algorithms; split it by what it does.
  * Namespaces per folder of src/: a folder's files (src/<folder>/*.cpp, *.hpp; src/*.cpp for the
    root) declare at most one public namespace (`dpstats`, `dpstats::stats`, ...) and at most one
    internal one, whose last name ends in `detail`. Anonymous namespaces do not count, nor does
    `struct dpstats::EnumNames<...>` (a specialisation, not a namespace), nor a block of forward
    declarations only (`namespace dpstats { class Communicator; }`). The public headers of a
    folder of include/dpstats/ declare at most one public namespace, by the same counting.
  * No dispatch on a user's name: comparing a method, task, profile, loss, accountant or a spec
    and its head word (`method == "prime"`, `task.starts_with("dp-")`, `spec.rfind("blt:", 0)`,
    `head == "decay"`) with a string literal in src/, apps/ or python/ is a breach; users' names
    are parsed once into an enum (EnumNames, names.hpp) and code switches on the enum.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 700
# The names users type: a method, task, profile or loss; an accountant; a spec ("decay:0.9",
# "blt:4") or its head word.
NAMED = r"(method|task|profile|loss|accountant|spec|head)"
DISPATCH = re.compile(
    rf"""\b{NAMED}\b(\.value\(\))?\s*(==|!=|\.starts_with\(|\.ends_with\(|\.rfind\()\s*["']"""
    rf"""|["'][a-z][a-z0-9-]*["']\s*(==|!=)\s*(\w+\.)*{NAMED}\b"""
    rf"""|\b{NAMED}\s+(not\s+)?in\s+[\(\[{{]\s*["']""")


def strip(text):
    """C++ text without comments, string and character literals (kept as empty quotes)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


# `namespace dpstats { class Communicator; }`: a block of forward declarations only.
FORWARD_ONLY = re.compile(r"\bnamespace\s+[\w:]+\s*\{(\s*(class|struct)\s+\w+\s*;)+\s*\}")


def namespaces(text):
    """Every fully qualified named namespace a file opens (a block of forward declarations
    only does not count)."""
    out, stack = set(), []
    tokens = re.finditer(r"\bnamespace\s+([A-Za-z_][\w:]*)?\s*\{|\{|\}",
                         FORWARD_ONLY.sub(" ", strip(text)))
    for t in tokens:
        if t.group(0) == "{":
            stack.append(None)
        elif t.group(0) == "}":
            if stack:
                stack.pop()
        else:
            name = t.group(1)
            stack.append(name or "")  # "" = anonymous
            if name:
                out.add("::".join(s for s in stack if s))
    return out


def folder_of(path, base="src"):
    rel = path.relative_to(ROOT / base)
    return rel.parts[0] if len(rel.parts) > 1 else f"({base}/ root)"


def check_sizes(files):
    bad = []
    for f in files:
        n = f.read_text().count("\n")
        if n > MAX_LINES:
            bad.append(f"{f.relative_to(ROOT)}: {n} lines (at most {MAX_LINES}): split it by what it does")
    return bad


def check_namespaces(files, base="src", kinds=("public", "internal (…detail)")):
    """At most one namespace of each of `kinds` per folder of `base`."""
    by_folder = {}
    for f in files:
        for ns in namespaces(f.read_text()):
            by_folder.setdefault(folder_of(f, base), {}).setdefault(ns, []).append(f.name)
    bad = []
    for folder, found in sorted(by_folder.items()):
        internal = [n for n in found if n.split("::")[-1].endswith("detail")]
        public = [n for n in found if n not in internal]
        for kind, names in (("public", public), ("internal (…detail)", internal)):
            if kind in kinds and len(names) > 1:
                where = "; ".join(f"{n} ({', '.join(sorted(found[n]))})" for n in sorted(names))
                bad.append(f"{base}/{folder}: {len(names)} {kind} namespaces, at most one: {where}")
    return bad


def check_dispatch():
    bad = []
    files = [*ROOT.glob("src/**/*.[ch]pp"), *ROOT.glob("apps/**/*.[ch]pp"),
             *ROOT.glob("python/src/**/*.[ch]pp"), *ROOT.glob("python/dpstats/**/*.py")]
    for f in sorted(files):
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines, 1):
            code = line.split("//")[0] if f.suffix != ".py" else line.split("#")[0]
            if DISPATCH.search(code):
                bad.append(f"{f.relative_to(ROOT)}:{i}: dispatch on a name by string comparison "
                           f"(parse it once into its enum): {line.strip()}")
    return bad


def main():
    files = sorted(ROOT.glob("src/**/*.[ch]pp"))
    headers = sorted(ROOT.glob("include/dpstats/**/*.hpp"))
    bad = (check_sizes(files) + check_namespaces(files)
           + check_namespaces(headers, "include/dpstats", kinds=("public",)) + check_dispatch())
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} breach(es) of docs/architecture.md's layout rules")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
