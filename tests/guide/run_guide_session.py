#!/usr/bin/env python3
"""Runs the analyst's session of docs/guide.md literally, so that the guide cannot drift.

The code blocks of the guide whose info string is ``sh session`` run, in order, as one bash script
(``set -euo pipefail``) with the tool on PATH as ``dpstats``; the ``python session`` blocks run, in
order, as one Python script importing the built module, followed by the ``python session-pandas``
blocks where pandas is installed. Both run in one fresh directory. The test fails when a command
fails or a block's own ``assert`` does.

usage: run_guide_session.py GUIDE.md DPSTATS_BINARY PYTHONPATH PYTHON
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w+) (session|session-pandas)\s*\n(.*?)^```\s*$", re.S | re.M)


def blocks(guide: str, language: str, tag: str = "session"):
    return [body for lang, t, body in FENCE.findall(guide) if lang == language and t == tag]


def have_pandas(python: str, env) -> bool:
    return subprocess.run([python, "-c", "import pandas"], env=env,
                          capture_output=True).returncode == 0


def main(argv) -> int:
    guide_path, dpstats, pythonpath, python = argv
    guide = open(guide_path, encoding="utf-8").read()
    sh, py = blocks(guide, "sh"), blocks(guide, "python")
    if len(sh) < 5 or len(py) < 5:
        print(f"expected the session's sh and python blocks, found {len(sh)} and {len(py)}")
        return 1
    with tempfile.TemporaryDirectory() as work:
        bin_dir = os.path.join(work, ".bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(dpstats), os.path.join(bin_dir, "dpstats"))
        os.symlink(python, os.path.join(bin_dir, "python3"))
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                   PYTHONPATH=os.path.abspath(pythonpath))
        script = "set -euo pipefail\n" + "\n".join(sh)
        r = subprocess.run(["bash", "-c", script], cwd=work, env=env)
        if r.returncode != 0:
            print(f"the guide's sh session failed (exit {r.returncode})")
            return 1
        if have_pandas(python, env):
            py += blocks(guide, "python", "session-pandas")
        else:
            print("pandas is not installed: the guide's pandas block is skipped")
        r = subprocess.run([python, "-c", "\n".join(py)], cwd=work, env=env)
        if r.returncode != 0:
            print(f"the guide's python session failed (exit {r.returncode})")
            return 1
    print(f"guide session: {len(sh)} sh blocks and {len(py)} python blocks ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
