"""The README's install into a user's own environment: a venv over Debian's packages, `pip
install --no-build-isolation .` (setup.py builds the extensions and the CLI with the project's
CMake), then the installed module imports from outside the source tree and quantizes, and the
venv's precision-lab-cli runs. The test reuses the
suite's own CMake build (PLAB_CMAKE_BUILD_DIR) so that it takes seconds, not a second build."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_pip_install_into_a_venv_imports_and_quantizes(tmp_path):
    build = os.environ.get("PLAB_CMAKE_BUILD_DIR")
    if not build:
        pytest.skip("PLAB_CMAKE_BUILD_DIR is not set (CTest sets it to the suite's build)")
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    env = dict(os.environ, PLAB_CMAKE_BUILD_DIR=build, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # setup.py's build folders go there
    before = {top: sorted(os.listdir(os.path.join(ROOT, top))) for top in ("", "build")
              if os.path.isdir(os.path.join(ROOT, top))}
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", ROOT],
                   check=True, env=env, cwd=str(tmp_path), timeout=600)
    # Issue 66 item 5: nothing written into the source tree (it wrote build/python-install,
    # build/lib.*, build/bdist.* and precision_lab.egg-info there), and the CLI is installed
    # for the venv's users: its entry point runs the core's binary.
    after = {top: sorted(os.listdir(os.path.join(ROOT, top))) for top in before}
    assert after == before
    cli = subprocess.run([str(venv / "bin" / "precision-lab-cli"), "--version"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0 and cli.stdout.startswith("precision-lab-cli "), cli
    refused = subprocess.run([str(venv / "bin" / "precision-lab-cli"), "formats", "--format",
                              "e9m9"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "e9m9" in refused.stderr, refused
    check = ("import numpy, precision_lab as pl, precision_lab.torch as pt; "
             "y, s = pl.quantize(numpy.array([1e-9, 1.0, 70000.0], numpy.float32), 'fp16'); "
             "print(pl.__file__); print(s['flushed'], s['overflow'], float(y[1]))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", check], check=True, env=env,
                         cwd=str(tmp_path), capture_output=True, text=True).stdout.split("\n")
    assert out[0].startswith(str(venv)), out  # the installed copy, not the build folder's
    assert out[1] == "1 1 1.0"
