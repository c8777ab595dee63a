#!/usr/bin/env python3
"""The mutation check: each one-line mutant of tests/mutation/mutants.json is applied to a copy
of the tree, which is rebuilt and tested; a mutant the tests do not catch survives, and any
survivor fails the check. No mutation tool is packaged for Debian 12, hence this short list of
the rules a past audit found unguarded (issue 44).

Usage: /usr/bin/python3 tests/mutation/run_mutants.py [--quick] [--work DIR] [--only ID ...]
  default  build everything, run the default suite (ctest --preset default, stopping at the
           first failure) once unmutated (it must pass) and once per mutant
  --quick  build and run only the tests each mutant names as catching it (after checking that
           they pass unmutated): minutes instead of an hour on 2 cores
  --work   the scratch folder for the copy and its build (default: /tmp/plab-mutation); kept
           between runs, so a second run rebuilds only what changed
CTest runs it as `mutation_check` (label `mutation`, out of the default run).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, cwd, log):
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        return subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def copy_tree(work):
    """The repository's files (tracked and untracked-but-not-ignored) into work/src; a file
    already there with the same bytes is left alone, so the build stays incremental."""
    src = os.path.join(work, "src")
    files = subprocess.check_output(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT
    ).split(b"\0")
    for f in filter(None, files):
        rel = f.decode()
        a, b = os.path.join(ROOT, rel), os.path.join(src, rel)
        if not os.path.isfile(a):
            continue
        if os.path.isfile(b):
            with open(a, "rb") as x, open(b, "rb") as y:
                if x.read() == y.read():
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        # A fresh modification time (not the original's, as copy2 would keep): a file edited
        # while an earlier copy was building would otherwise look older than its object file.
        shutil.copyfile(a, b)
        shutil.copymode(a, b)
    # A repository of its own: device_check_dry_run copies the tree as git lists it.
    if not os.path.isdir(os.path.join(src, ".git")):
        subprocess.check_call(["git", "init", "-q"], cwd=src)
    return src


def apply(src, mutant, undo=False):
    path = os.path.join(src, mutant["file"])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    old, new = (mutant["replace"], mutant["find"]) if undo else (mutant["find"], mutant["replace"])
    if text.count(old) != 1:
        sys.exit(f"mutant {mutant['id']}: {mutant['file']} holds {text.count(old)} copies of "
                 f"'{old}', expected exactly 1 (update tests/mutation/mutants.json)")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))


def build_and_test(src, targets, tests, quick, log):
    build = ["cmake", "--build", "--preset", "default"]
    if quick:
        build += ["--target"] + targets
    if run(build, src, log) != 0:
        return "build failed"
    ctest = ["ctest", "--preset", "default", "-j2", "--stop-on-failure"]
    if quick:
        ctest += ["-R", tests]
    return "passed" if run(ctest, src, log) == 0 else "failed"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--work", default="/tmp/plab-mutation")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "tests", "mutation", "mutants.json"), encoding="utf-8") as f:
        mutants = json.load(f)["mutants"]
    if args.only:
        unknown = set(args.only) - {m["id"] for m in mutants}
        if unknown:
            sys.exit(f"--only: no mutant named {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m["id"] in args.only]
    os.makedirs(args.work, exist_ok=True)
    log = os.path.join(args.work, "mutation.log")
    open(log, "w").close()
    src = copy_tree(args.work)
    if run(["cmake", "--preset", "default"], src, log) != 0:
        sys.exit(f"configure failed: see {log}")
    targets = sorted({t for m in mutants for t in m["targets"]})
    tests = "|".join(sorted({m["tests"] for m in mutants}))
    start = time.time()
    baseline = build_and_test(src, targets, tests, args.quick, log)
    if baseline != "passed":
        sys.exit(f"unmutated tree: {baseline}, so no mutant can be judged: see {log}")
    print(f"unmutated: the {'named tests' if args.quick else 'default suite'} pass "
          f"({time.time() - start:.0f} s)", flush=True)
    survivors = []
    for m in mutants:
        apply(src, m)
        start = time.time()
        try:
            outcome = build_and_test(src, m["targets"], m["tests"], args.quick, log)
        finally:
            apply(src, m, undo=True)
        caught = outcome != "passed"
        if outcome == "build failed":
            outcome = "did not build (fix the mutant: a compile error is no catch)"
            caught = False
        if not caught:
            survivors.append(m["id"])
        print(f"{'caught  ' if caught else 'SURVIVED'} {m['id']}: {m['why']} "
              f"({outcome}, {time.time() - start:.0f} s)", flush=True)
    print(f"{len(mutants) - len(survivors)} of {len(mutants)} mutants caught; log: {log}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
