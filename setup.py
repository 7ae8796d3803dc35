"""Builds the `_dpstats` extension through the project's CMake build (pyproject.toml is the
package's metadata; this file only adds the CMake step).

`pip install --no-build-isolation .` configures a CMake build in build/pip (Release, no tests or
benchmarks), builds the `_dpstats` target and puts the module beside the pure-Python package.
DPSTATS_CMAKE_BUILD_DIR names an already configured build tree to reuse instead; without it, the
tree `make` configured (build/) is reused when it was configured for this interpreter (a virtual
environment made from /usr/bin/python3, as the README's, counts), so `pip install .` after `make
demo` or `make test` compiles only the module. Either way only the library and the module are built.
DPSTATS_BUILD_JOBS sets the parallel build jobs (default 2).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def built_for_this_python(cache: Path) -> bool:
    """True when the tree's module was built for this interpreter. A virtual environment's python
    is a link to the interpreter it was made from (/usr/bin/python3 for the README's venv), so the
    paths are compared once resolved: the venv reuses the tree `make` built."""
    for line in cache.read_text().splitlines():
        if line.startswith("PYTHON_EXECUTABLE:FILEPATH="):
            built = Path(line.split("=", 1)[1]).resolve()
            return built == Path(sys.executable).resolve()
    return False


def default_build_dir() -> Path:
    made = ROOT / "build"  # the Makefile's tree, built for /usr/bin/python3
    cache = made / "CMakeCache.txt"
    if cache.exists() and built_for_this_python(cache):
        return made
    return ROOT / "build" / "pip"


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = Path(os.environ.get("DPSTATS_CMAKE_BUILD_DIR", default_build_dir()))
        print(f"dpstats: building the _dpstats target in the CMake tree {build_dir}", flush=True)
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                "-DDPSTATS_BUILD_TESTS=OFF", "-DDPSTATS_BUILD_BENCH=OFF",
                f"-DPYTHON_EXECUTABLE={sys.executable}", f"-DPython_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("DPSTATS_BUILD_JOBS", "2")
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_dpstats",
                               "-j", jobs])
        built = sorted((build_dir / "python" / "dpstats").glob("_dpstats*.so"))
        if not built:
            raise RuntimeError(f"the CMake build left no _dpstats module in {build_dir}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(ext_modules=[CMakeExtension("dpstats._dpstats")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": str(Path("build") / "pip-setuptools")}})
