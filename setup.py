"""Builds precision_lab's extensions with the project's CMake (pyproject.toml says how to install).

precision_lab._quantize and precision_lab._core are the CMake targets precision_lab_quantize and
precision_lab_core, configured with the desktop app, the tests and packaging off (no Qt needed) for
the interpreter that runs this build; their shared objects are copied next to the package's Python
sources in the wheel."""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # PLAB_CMAKE_BUILD_DIR: a folder the project's CMake configured already (the tests' own
        # build): its target is built there as configured, not configured again.
        existing = os.environ.get("PLAB_CMAKE_BUILD_DIR")
        build = existing or os.path.join(ROOT, "build", "python-install")
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     "-DPLAB_BUILD_GUI=OFF", "-DPLAB_BUILD_TESTS=OFF",
                     "-DPLAB_BUILD_PACKAGING=OFF", "-DPLAB_BUILD_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if not existing:
            subprocess.run(configure, check=True)
        jobs = str(os.cpu_count() or 1)
        module = ext.name.split(".")[-1]  # "_core": the target precision_lab_core
        subprocess.run(["cmake", "--build", build, "--target", "precision_lab" + module, "-j",
                        jobs], check=True)
        built = glob.glob(os.path.join(build, "python", "precision_lab", module + "*.so"))
        if not built:
            raise RuntimeError(f"CMake built no precision_lab/{module}*.so under {build} (is "
                               f"pybind11-dev installed? apt-get install pybind11-dev "
                               f"python3-dev)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    packages=["precision_lab"],
    package_dir={"precision_lab": "app/python/precision_lab"},
    package_data={"precision_lab": ["*.pyi", "py.typed"]},  # the type stubs (PEP 561)
    ext_modules=[CMakeExtension("precision_lab._quantize"), CMakeExtension("precision_lab._core")],
    cmdclass={"build_ext": CMakeBuild},
)
