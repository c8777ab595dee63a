"""A sweep of the user's own script (`sweep --recipes ... -- python3 SCRIPT`, issue 64): the
children's records and the table's verdicts, checked against a Welch interval computed here from
the records; the faults each reported on its own line with the other runs unharmed; a stop that
leaves the sweep resumable; emulate() and watch() outside a sweep.

The script (sweep_script.py) trains a small MLP for a few steps; the sweeps run two at a time."""

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "sweep_script.py")


def sweep(cli, out, recipes, *script_args, seeds=1, extra=(), check=None):
    env = dict(os.environ, PYTHONPATH=os.environ.get("PLAB_PYTHON_PATH", ""))
    command = [cli, "sweep", "--recipes", ",".join(recipes), "--seeds", str(seeds), "--jobs",
               "2", "--out", str(out), *extra, "--", sys.executable, SCRIPT, *script_args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    if check is not None:
        assert result.returncode == check, result.stderr
    return result


def rows_of(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {r["point"]: r for r in csv.DictReader(f)}


def rows(out):
    return rows_of(os.path.join(out, "sweep.csv"))


# --- Welch's interval, computed here (no scipy): Student's t from its regularised beta ------

def _beta_continued_fraction(a, b, x):
    """Lentz's continued fraction of the regularised incomplete beta function."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _regularised_beta(a, b, x):
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) +
                     b * math.log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_quantile_975(df):
    """The t quantile by bisection on its CDF, at the whole df below (the core's convention)."""
    df = math.floor(df)
    low, high = 0.0, 100.0
    for _ in range(200):
        t = (low + high) / 2
        cdf = 1.0 - 0.5 * _regularised_beta(df / 2.0, 0.5, df / (df + t * t))
        low, high = (t, high) if cdf < 0.975 else (low, t)
    return (low + high) / 2


def welch(candidate, baseline):
    def mean_var(v):
        m = sum(v) / len(v)
        return m, sum((x - m) ** 2 for x in v) / (len(v) - 1)
    (ma, va), (mb, vb) = mean_var(candidate), mean_var(baseline)
    a, b = va / len(candidate), vb / len(baseline)
    df = (a + b) ** 2 / (a * a / (len(candidate) - 1) + b * b / (len(baseline) - 1))
    return ma - mb, t_quantile_975(df) * math.sqrt(a + b)


def test_t_quantile_is_students():
    assert t_quantile_975(1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile_975(4) == pytest.approx(2.7764, abs=1e-4)
    assert t_quantile_975(4.9) == pytest.approx(2.7764, abs=1e-4)  # the whole df below


# --- the sweep ------------------------------------------------------------------------------

def test_two_recipes_three_seeds_give_welchs_verdict(torch, cli, tmp_path):
    out = tmp_path / "sweep"
    hostile = "it's \"$(touch " + str(tmp_path / "pwned") + ")\"\n`id`; a b"
    result = sweep(cli, out, ["fp32", "fp8-current"], "--steps", "12", "--args-to",
                   str(tmp_path / "args.json"), hostile, seeds=3, check=0)
    # The hostile argument reached the script whole, as one argv entry; no shell ran it.
    assert json.loads((tmp_path / "args.json").read_text())[-1] == hostile
    assert not (tmp_path / "pwned").exists()
    plan = json.loads((out / "sweep.json").read_text())
    assert plan["command"][-1] == hostile and plan["baseline"] == "fp32"
    assert plan["recipes"]["fp8-current"]["document"]["recipe"]["activations"]["format"] == \
        "fp8-e4m3"
    # Each child recorded under its recipe and seed, into its own folder.
    finals = {}
    for recipe in ("fp32", "fp8-current"):
        for seed in (1, 2, 3):
            run = out / recipe / f"seed-{seed}"
            summary = json.loads((run / "summary.json").read_text())
            assert summary["finished"] and summary["steps"] == 12, summary
            config = json.loads((run / "config.json").read_text())
            assert config["emulate"]["seed"] == seed
            finals.setdefault(recipe, []).append(summary)
    # Different seeds, different models; the recipe's casts are in its record.
    losses = [s["final_train_loss"] for s in finals["fp32"]]
    assert len(set(losses)) == 3
    # The verdicts: Welch's interval of fp8-current - fp32, computed here from the records.
    table = rows(out)
    for metric, value in (("final_train_loss", lambda s: s["final_train_loss"]),
                          ("val_loss", lambda s: s["final_metrics"]["val_loss"])):
        diff, half = welch([value(s) for s in finals["fp8-current"]],
                           [value(s) for s in finals["fp32"]])
        row = table["fp8-current"]
        assert float(row[f"{metric}_diff"]) == pytest.approx(diff, rel=1e-9, abs=1e-12)
        # The core's t quantiles are a statistics table's, to three decimals (2.776 at df 4).
        assert float(row[f"{metric}_diff_ci95"]) == pytest.approx(half, rel=3e-4)
        expected = ("indistinguishable at n = 3" if abs(diff) <= half else
                    ("worse" if diff > 0 else "better"))
        assert row[f"{metric}_verdict"].startswith(expected), row[f"{metric}_verdict"]
    assert table["fp32"]["val_loss_verdict"] == ""  # the baseline
    md = (out / "sweep.md").read_text()
    assert "| fp8-current | 3 |" in md and "vs fp32: val_loss" in md
    assert "| fp8-current | 3 |" in result.stdout

    # compare --runs: the same six folders set side by side, grouped by the recipe each ran,
    # give the same table's verdicts (a sweep member's group is its sweep's point).
    members = [str(out / r / f"seed-{k}") for r in ("fp32", "fp8-current") for k in (1, 2, 3)]
    compared = subprocess.run([cli, "compare", "--runs", *members, "--out",
                               str(tmp_path / "compared")], capture_output=True, text=True,
                              timeout=60)
    assert compared.returncode == 0, compared.stderr
    again = rows_of(tmp_path / "compared" / "compare.csv")
    for metric in ("final_train_loss", "val_loss"):
        assert again["fp8-current"][f"{metric}_verdict"] == \
            table["fp8-current"][f"{metric}_verdict"]
        assert again["fp8-current"][f"{metric}_diff"] == table["fp8-current"][f"{metric}_diff"]
    bad = subprocess.run([cli, "compare", "--runs", str(out)], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "holds a sweep (expected a run folder" in bad.stderr


def test_faults_fail_their_runs_alone(torch, cli, tmp_path):
    out = tmp_path / "faults"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = sweep(cli, out, ["fp32", "bf16", "fp8-current", str(tmp_path / "missing.json"),
                              str(bad)],
                   "--steps", "5", "--fail-under", "bf16", "--nan-under", "fp8-current")
    assert result.returncode == 3, result.stderr  # runs failed: the sweep says so
    failed = {p: (out / p / "seed-1.failed").read_text().strip()
              for p in ("bf16", "fp8-current", "missing", "bad")}
    assert "ValueError: the script failed on purpose at step 3" in failed["bf16"]
    assert "its loss is NaN" in failed["fp8-current"]
    assert "missing.json: no such recipe file" in failed["missing"]
    assert "bad.json: not a JSON object" in failed["bad"]
    assert not (out / "fp32" / "seed-1.failed").exists()
    table = rows(out)
    assert table["fp32"]["runs"] == "1" and table["bf16"]["runs"] == "0"
    md = (out / "sweep.md").read_text()
    for point, why in failed.items():
        assert f"- {point}/seed-1: {why}" in md, md  # each a line of the table's file

    # A script that never records, and a command that is not there.
    quiet = sweep(cli, tmp_path / "quiet", ["fp32"], "--no-step")
    assert quiet.returncode == 3
    assert "recorded no step" in (tmp_path / "quiet" / "fp32" / "seed-1.failed").read_text()
    env = dict(os.environ)
    missing = subprocess.run([cli, "sweep", "--recipes", "fp32", "--out",
                              str(tmp_path / "nocommand"), "--", "no-such-command-plab"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 3
    assert "no-such-command-plab: command not found" in \
        (tmp_path / "nocommand" / "fp32" / "seed-1.failed").read_text()


def test_bad_sweeps_are_refused_before_anything_runs(cli, tmp_path):
    for args, says in (
            (["--recipes", "fp32"], "--recipes needs the script's command after --"),
            (["--recipes", "fp32,fp32", "--", "true"], "listed twice"),
            (["--recipes", "fp32", "--grid", "train.lr=1,2", "--", "true"],
             "a script takes its own options after --"),
            (["--recipes", "fp32", "--baseline", "bf16", "--", "true"],
             "--baseline bf16 is not among the recipes"),
            (["--recipes", "a/x.json,b/x.json", "--", "true"], "the name x is taken"),
            # A newline in a name would be two lines of a Slurm task list.
            (["--recipes", "fp32,two\nlines.json", "--", "true"],
             "without spaces, quotes or control characters")):
        out = tmp_path / f"refused-{len(os.listdir(tmp_path))}"
        r = subprocess.run([cli, "sweep", "--out", str(out), *args], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode != 0 and says in r.stderr, (args, r.stderr)
        assert not (out / "fp32").exists()


def test_a_stopped_sweep_resumes(torch, cli, tmp_path):
    out = tmp_path / "stopped"
    env = dict(os.environ, PYTHONPATH=os.environ.get("PLAB_PYTHON_PATH", ""))
    command = [cli, "sweep", "--recipes", "fp32", "--seeds", "2", "--jobs", "2", "--out",
               str(out), "--", sys.executable, SCRIPT, "--steps", "200", "--sleep", "0.02"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    first = out / "fp32" / "seed-1" / "summary.json"
    while time.monotonic() < deadline:  # both children are training
        if first.exists() and (out / "fp32" / "seed-2" / "summary.json").exists():
            break
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGINT, err
    assert "runs what is missing" in err
    summary = json.loads(first.read_text())
    assert not summary["finished"] and summary["stop_reason"] == "interrupted (Ctrl-C)", summary
    assert not (out / "fp32" / "seed-1.failed").exists()  # stopped, not failed
    # The same command again: the stopped runs run again, from the start (the script's own
    # checkpoints are its business).
    again = subprocess.run(command, env=env, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "2 run(s) started" in again.stderr
    assert json.loads(first.read_text())["finished"]


def test_outside_a_sweep_the_script_says_what_it_needs(torch, monkeypatch):
    for name in ("PLAB_SWEEP_RUN_DIR", "PLAB_SWEEP_RECIPE", "PLAB_SWEEP_SEED"):
        monkeypatch.delenv(name, raising=False)
    import precision_lab.torch as plt
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match="without a recipe takes the sweep's.*precision-lab-cli "
                                         "sweep"):
        plt.emulate(model)
    with pytest.raises(ValueError, match="without a run folder records into the sweep's"):
        plt.watch(model)
    assert plt.seed_from_sweep(7) == 7
    first = torch.rand(3)
    plt.seed_from_sweep(7)
    assert torch.equal(torch.rand(3), first)
    with pytest.raises(ValueError, match="metrics: name 'a b'"):
        with plt.emulate(model, "fp32") as em:
            em.step(loss=1.0, metrics={"a b": 1.0})


def test_metrics_are_recorded_each_step(torch, tmp_path):
    import sqlite3
    import precision_lab.torch as plt
    model = torch.nn.Linear(4, 2)
    with plt.emulate(model, "bf16", str(tmp_path / "run")) as em:
        for step in range(3):
            model(torch.randn(5, 4)).sum().backward()
            em.step(loss=float(step), metrics={"val_loss": torch.tensor(0.5 * step),
                                               "acc": step / 10})
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["final_metrics"] == {"acc": 0.2, "val_loss": 1.0}
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        recorded = db.execute("SELECT step, name, value FROM reported ORDER BY seq").fetchall()
    assert recorded == [(1, "acc", 0.0), (1, "val_loss", 0.0), (2, "acc", 0.1),
                        (2, "val_loss", 0.5), (3, "acc", 0.2), (3, "val_loss", 1.0)]


def test_watch_records_into_the_sweeps_run(torch, tmp_path, monkeypatch):
    """watch(model) in a sweep's child: no run folder given, the sweep's (replacing what a stopped
    attempt left); its metrics recorded as emulate's are."""
    import precision_lab.torch as plt
    run = tmp_path / "fp32" / "seed-2"
    run.mkdir(parents=True)
    (tmp_path / "fp32" / "seed-2.recipe.json").write_text('{"preset": "fp32"}')
    monkeypatch.setenv("PLAB_SWEEP_RUN_DIR", str(run))
    monkeypatch.setenv("PLAB_SWEEP_RECIPE", str(tmp_path / "fp32" / "seed-2.recipe.json"))
    monkeypatch.setenv("PLAB_SWEEP_RECIPE_NAME", "fp32")
    monkeypatch.setenv("PLAB_SWEEP_SEED", "2")
    assert plt.seed_from_sweep(7) == 2  # the sweep's seed, not the default
    model = torch.nn.Linear(4, 2)
    for attempt in range(2):  # a second attempt replaces the first's record
        with plt.watch(model, every=1) as w:
            model(torch.randn(3, 4)).sum().backward()
            w.step(loss=0.5, metrics={"val_loss": 0.25 + attempt})
    summary = json.loads((run / "summary.json").read_text())
    assert summary["finished"] and summary["final_metrics"] == {"val_loss": 1.25}
    monkeypatch.setenv("PLAB_SWEEP_SEED", "two")
    with pytest.raises(ValueError, match="PLAB_SWEEP_SEED='two': expected a whole number"):
        plt.seed_from_sweep()
