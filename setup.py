"""Builds precision_lab's extensions and CLI with the project's CMake (pyproject.toml says how to
install).

precision_lab._quantize and precision_lab._core are the CMake targets precision_lab_quantize and
precision_lab_core, and the CLI the target precision-lab-cli, configured with the desktop app, the
tests and packaging off (no Qt needed) for the interpreter that runs this build, as a unity build,
and built together on every core (issue 66 item 5: one target at a time took 11 minutes on a
loaded 2-core machine). The CMake build folder, setuptools' build folder and its egg-info go to a
cache folder outside the source tree ($XDG_CACHE_HOME/precision-lab, reused by the next
install); the extensions are copied next to the package's Python sources in the wheel, the CLI
into precision_lab/_bin, which the precision-lab-cli entry point runs."""

import glob
import hashlib
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["precision_lab_quantize", "precision_lab_core", "precision-lab-cli"]


def cache_folder():
    """Outside the source tree, one per source tree and interpreter."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = hashlib.sha256(f"{ROOT}\n{sys.executable}".encode()).hexdigest()[:12]
    folder = os.path.join(base, "precision-lab", f"python-build-{tag}")
    os.makedirs(folder, exist_ok=True)
    return folder


CACHE = cache_folder()


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    built_in = None  # the CMake build folder, once its targets are built

    def cmake_build(self):
        # PLAB_CMAKE_BUILD_DIR: a folder the project's CMake configured already (the tests' own
        # build): its targets are built there as configured, not configured again.
        if CMakeBuild.built_in is not None:
            return CMakeBuild.built_in
        existing = os.environ.get("PLAB_CMAKE_BUILD_DIR")
        build = existing or os.path.join(CACHE, "cmake")
        if not existing:
            configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                         "-DCMAKE_UNITY_BUILD=ON", "-DCMAKE_UNITY_BUILD_BATCH_SIZE=16",
                         "-DPLAB_BUILD_GUI=OFF", "-DPLAB_BUILD_TESTS=OFF",
                         "-DPLAB_BUILD_PACKAGING=OFF", "-DPLAB_BUILD_PYTHON=ON",
                         f"-DPython_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            subprocess.run(configure, check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build, "-j", jobs, "--target"] + TARGETS, check=True)
        CMakeBuild.built_in = build
        return build

    def build_extension(self, ext):
        build = self.cmake_build()
        module = ext.name.split(".")[-1]  # "_core": the target precision_lab_core
        built = glob.glob(os.path.join(build, "python", "precision_lab", module + "*.so"))
        if not built:
            raise RuntimeError(f"CMake built no precision_lab/{module}*.so under {build} (is "
                               f"pybind11-dev installed? apt-get install pybind11-dev "
                               f"python3-dev)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)
        if module == "_core":  # the CLI, once, beside the package
            cli = os.path.join(build, "app", "precision-lab-cli")
            into = os.path.join(os.path.dirname(target), "_bin", "precision-lab-cli")
            os.makedirs(os.path.dirname(into), exist_ok=True)
            shutil.copyfile(cli, into)
            os.chmod(into, 0o755)


setup(
    packages=["precision_lab"],
    package_dir={"precision_lab": "app/python/precision_lab"},
    package_data={"precision_lab": ["*.pyi", "py.typed"]},  # the type stubs (PEP 561)
    ext_modules=[CMakeExtension("precision_lab._quantize"), CMakeExtension("precision_lab._core")],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build folders outside the source tree too.
    options={"build": {"build_base": os.path.join(CACHE, "setuptools")},
             "egg_info": {"egg_base": CACHE}},
)
