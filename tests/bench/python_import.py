"""Benchmark, not a test: what loading precision_lab costs a script that only casts, against
loading the whole core, in one run. Each round starts fresh interpreters (numpy already imported,
so only our part is timed), alternating the two, and reports medians:

  cast:  `import precision_lab` + one quantize (loads the _quantize extension: numerics only)
  whole: the same, then precision_lab.open_run (loads _core too: SQLite, the trainers)

and the extensions' sizes. Usage: /usr/bin/python3 tests/bench/python_import.py [BUILD] [ROUNDS]
(BUILD: a build folder with python/, default build/default)."""

import glob
import os
import statistics
import subprocess
import sys

CAST = ("import numpy, time\n"
        "t = time.perf_counter()\n"
        "import precision_lab as pl\n"
        "pl.quantize(numpy.ones(4, numpy.float32), 'fp8-e4m3')\n"
        "{extra}"
        "print(time.perf_counter() - t)\n")


def seconds(package_dir, extra):
    env = dict(os.environ, PYTHONPATH=package_dir)
    out = subprocess.run([sys.executable, "-c", CAST.format(extra=extra)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/default"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    package_dir = os.path.join(build, "python")
    for so in sorted(glob.glob(os.path.join(package_dir, "precision_lab", "_*.so"))):
        print(f"{os.path.basename(so)}: {os.path.getsize(so):,} bytes")
    cast, whole = [], []
    for _ in range(rounds):
        cast.append(seconds(package_dir, ""))
        whole.append(seconds(package_dir, "pl.open_run\n"))
    c, w = statistics.median(cast), statistics.median(whole)
    print(f"cast only: median {c * 1e3:.2f} ms; with the whole core: {w * 1e3:.2f} ms "
          f"({rounds} rounds each, alternating); cast / whole = {c / w:.2f}")


if __name__ == "__main__":
    main()
