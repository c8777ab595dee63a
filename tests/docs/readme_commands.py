#!/usr/bin/python3
"""Every command in the README's ```sh blocks, checked.

A command of the CLI (or a pipe into it) and the PyTorch example are run as written, in a
scratch folder laid out like the repository root (`examples/` and `build/default` linked in), with
the build's CLI first on PATH; each must exit 0. The example gets `--steps 20` appended so that
it ends in seconds. What the README promises of them is checked too: the replay's metrics equal
the run's, the exports and tables exist. A command that cannot run here (it installs packages,
builds, opens a window) must name, in COVERED_ELSEWHERE, the test that runs it; a README command
in neither group fails this test, so a new command comes with its check.

usage: readme_commands.py README.md BUILD_DIR [--python]
(--python: the build has the Python module, so the example runs; the sanitizer builds have none)
"""
import csv
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# Commands (by their start) that other tests run, and which test.
COVERED_ELSEWHERE = {
    "packaging/quickstart.sh test": ".ci/run calls exactly this command",
    "packaging/quickstart.sh run": "the plain stage (its install and build steps); "
                                   "test_main_window readmeFirstSessionHoldsAsWritten (the "
                                   "window it opens)",
    "cmake --preset default && cmake --build --preset default": "the plain stage of .ci/run",
    "(cd build/default && cpack -G DEB)": "tests/package/test_deb_install.sh (label package)",
    "sudo apt install ./build/default/precision-lab_": "tests/package/test_deb_install.sh "
                                                       "unpacks and runs the package",
    "build/default/app/precision-lab --open": "test_follow_run follows a record being written",
    "python3 -m venv --system-site-packages v": "tests/python/test_install.py makes the venv",
    "v/bin/pip install --no-build-isolation .": "tests/python/test_install.py installs into it "
                                                "and imports and quantizes",
    "precision-lab-cli steer": "tests/python/test_emulate_steering.py steers a running script "
                               "with it (here the example has ended: nothing to steer)",
    "precision-lab-cli sweep --recipes": "tests/python/test_script_sweep.py sweeps a script "
                                         "(two recipes, three seeds; its verdicts checked) and "
                                         "tests/cli/slurm_sweep_test.sh one through Slurm",
    "precision-lab-cli compare --runs": "tests/python/test_script_sweep.py sets a script "
                                        "sweep's runs side by side with it",
}

# The PyTorch examples, each run with --steps 20 and its record exported: (script, out folder).
EXAMPLES = {"examples/watch_pytorch.py": "runs/watched",
            "examples/emulate_pytorch.py": "runs/emulated"}


def sh_commands(readme):
    """The README's ```sh blocks, one command per entry (continuation lines joined)."""
    commands, block, pending = [], False, ""
    for line in readme.read_text().splitlines():
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        commands.append(pending.strip())
        pending = ""
    return commands


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(command, cwd, env, timeout=240):
    print(f"$ {command}", flush=True)
    done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        fail(f"README command exited {done.returncode}: {command}\n{done.stderr[-2000:]}")
    return done.stdout


def rows_without_timing(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row.pop("samples_per_s", None)
    return rows


def main():
    readme, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
    repo = readme.resolve().parent
    cli = build / "app" / "precision-lab-cli"
    if not cli.exists():
        fail(f"{cli} is missing: build the CLI first")
    commands = sh_commands(readme)
    if len(commands) < 8:
        fail(f"found {len(commands)} commands in {readme}'s sh blocks; expected the CLI tour")

    scratch = pathlib.Path(tempfile.mkdtemp(prefix="plab-readme-"))
    try:
        (scratch / "build").mkdir()
        os.symlink(build, scratch / "build" / "default")
        os.symlink(repo / "examples", scratch / "examples")
        env = dict(os.environ, PATH=f"{cli.parent}:{os.environ['PATH']}")
        ran = 0
        for command in commands:
            command = re.sub(r"\s+#.*$", "", command)  # a trailing comment
            covered = next((t for c, t in COVERED_ELSEWHERE.items() if command.startswith(c)),
                           None)
            if covered:
                print(f"- {command}\n    (run by {covered})")
                continue
            words = shlex.split(command.rstrip("& "))
            if "precision-lab-cli" in words:
                output = run(command, scratch, env)
                if words[:2] == ["precision-lab-cli", "formats"] and "448" not in output:
                    fail("formats --format fp8-e4m3 does not show its max, 448")
                ran += 1
            elif words[0] == "/usr/bin/python3" and len(words) > 1 and words[1] in EXAMPLES:
                if "--python" not in sys.argv[3:]:
                    print(f"- {command}\n    skipped: this build has no Python module")
                    continue
                probe = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                                       capture_output=True)
                if probe.returncode != 0:
                    if os.environ.get("CI") == "true":
                        fail("python3-torch is missing on CI, where the test command installs it")
                    print(f"- {command}\n    skipped: python3-torch is not installed")
                    continue
                if not pathlib.Path("/usr/share/datasets/fashion-mnist").is_dir():
                    print(f"- {command}\n    skipped: dataset-fashion-mnist is not installed")
                    continue
                if "gpt" in words and not pathlib.Path("/usr/share/games/fortunes").is_dir():
                    print(f"- {command}\n    skipped: fortunes (the GPT's text) is not installed")
                    continue
                out = words[words.index("--out") + 1] if "--out" in words else EXAMPLES[words[1]]
                run(shlex.join(words) + " --steps 20", scratch, env)
                run(f"precision-lab-cli export {out} --out {out}-csv", scratch, env)
                ran += 1
            else:
                fail(f"README command neither run here nor covered elsewhere: {command}\n"
                     "run it in tests/docs/readme_commands.py or name the test that does in "
                     "COVERED_ELSEWHERE")

        # What the README says of the tour's results.
        runs = scratch / "runs"
        if (runs / "amp").is_dir():
            first = rows_without_timing(runs / "amp" / "metrics.csv")
            replay = rows_without_timing(runs / "amp-replay" / "metrics.csv")
            if len(first) != 200 or first != replay:
                fail(f"the replay's metrics.csv differs from the run's ({len(first)} and "
                     f"{len(replay)} rows)")
            for name in ("metrics.csv", "layers.csv", "events.jsonl"):
                if not (runs / "amp-csv" / name).is_file():
                    fail(f"export wrote no {name}")
        for table in ("compare/compare.md", "sweep/sweep.md"):
            if (runs / table.split("/")[0]).is_dir() and not (runs / table).is_file():
                fail(f"no {table}")
        print(f"ok: {ran} commands run, {len(commands) - ran} covered elsewhere or skipped")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
