"""precision_lab.torch.watch: the recorded counts equal quantize() on the same tensors taken by
hooks of the test's own, the hooks are gone after close(), a script killed with SIGKILL leaves a
record `export` reads with whole steps, dropped statistics steps are events, bad input errors."""

import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import precision_lab as pl
from conftest import tied_model

COUNTS = ("total", "zero", "flushed", "subnormal", "normal", "overflow", "nan")


def small_model(torch):
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(48, 32), torch.nn.ReLU(inplace=True),
                               torch.nn.Linear(32, 5))


def hooks_left(model):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
               for m in model.modules())


def test_recorded_counts_equal_quantize_of_the_same_tensors(torch, tmp_path):
    import precision_lab.torch as plt
    model = small_model(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = 2.0 ** 12  # an fp16-style loss scale that the script multiplies into the loss
    fc2 = model[2]
    # The test's own hooks: the weight gradient as backward makes it (scaled), and the
    # gradient of fc2's output.
    seen = {}
    fc2.weight.register_hook(lambda g: seen.__setitem__("wgrad", g.detach().clone()))

    def on_output(module, inputs, output):
        output.register_hook(lambda g: seen.__setitem__("agrad", g.detach().clone()))

    fc2.register_forward_hook(on_output)
    formats = ("fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "mxfp4")  # plain casts: quantize's
    taken = {}
    with plt.watch(model, tmp_path / "run", formats=formats, every=2,
                   loss_scale=scale) as watcher:
        for step in range(1, 6):
            x = torch.randn(16, 48) * 1e-3  # small activations: small gradients to flush
            loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 5, (16,)))
            (loss * scale).backward()
            for p in model.parameters():  # unscaled before the update, as a GradScaler does
                p.grad /= scale
            optimizer.step()
            watcher.step(loss=loss, lr=0.1)
            optimizer.zero_grad()
            taken[step] = dict(seen)
    run = pl.open_run(tmp_path / "run")
    assert list(run.steps["step"]) == [1, 2, 3, 4, 5]
    assert set(run.stats["step"]) == {1, 3, 5}
    assert (run.steps["scale"] == scale).all()
    assert run.formats == list(formats)
    assert run.source == "pytorch-watch" and run.watch["model"] == "Sequential"
    checked = 0
    for step in (1, 3, 5):
        for role, key in (("weight_gradients", "wgrad"), ("activation_gradients", "agrad")):
            tensor = taken[step][key].numpy()
            for fmt in formats:
                _, expected = pl.quantize(tensor, fmt)
                row = run.stats[(run.stats.step == step) & (run.stats.stage_name == "2") &
                                (run.stats.role == role) & (run.stats.format == fmt)]
                assert len(row) == 1, (step, role, fmt)
                row = row.iloc[0]
                for c in COUNTS:
                    assert row[c] == expected[c], (step, role, fmt, c)
                assert row["amax"] == pytest.approx(expected["amax"], rel=0, abs=0)
                # The tensor's own amax in every format, a block format's too (not its
                # block-scaled elements' largest, about the element format's max).
                assert row["amax"] == float(np.abs(tensor).max()), (step, role, fmt)
                assert row["grad_scale"] == scale
                if fmt == "mxfp4":
                    assert row["blocks"] == expected["blocks"]["blocks"]
                checked += 1
    assert checked == 30
    # The scale matters: in fp8-e4m3 unscaled gradients would flush far more.
    wgrad = taken[5]["wgrad"].numpy() / scale
    _, unscaled = pl.quantize(wgrad, "fp8-e4m3")
    scaled = run.stats[(run.stats.step == 5) & (run.stats.stage_name == "2") &
                       (run.stats.role == "weight_gradients") &
                       (run.stats.format == "fp8-e4m3")].iloc[0]
    assert unscaled["flushed"] > scaled["flushed"]
    assert len(run.histograms(step=5)) == 2 * 4  # two modules, four roles
    assert run.summary["finished"] and run.summary["stop_reason"] == "completed"


def test_close_removes_every_hook(torch, tmp_path):
    import precision_lab.torch as plt
    model = small_model(torch)
    before = hooks_left(model)
    watcher = plt.watch(model, tmp_path / "a")
    assert hooks_left(model) > before
    model(torch.randn(2, 48)).sum().backward()
    watcher.step()
    watcher.close()
    watcher.close()  # idempotent
    assert hooks_left(model) == before
    # An exception inside a with block: hooks gone too, the summary says why.
    with pytest.raises(RuntimeError, match="boom"):
        with plt.watch(model, tmp_path / "b"):
            model(torch.randn(2, 48))
            raise RuntimeError("boom")
    assert hooks_left(model) == before
    run = pl.open_run(tmp_path / "b")
    assert not run.summary["finished"]
    assert "RuntimeError: boom" in run.summary["stop_reason"]


def test_a_killed_script_leaves_whole_steps(torch, tmp_path, cli):
    run_dir = tmp_path / "killed"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    script = os.path.join(os.path.dirname(__file__), "watched_script.py")
    proc = subprocess.Popen([sys.executable, script, str(run_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            if line.startswith("step 20") or time.monotonic() > deadline:
                break
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.2)  # mid-run: more steps are being captured and counted
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = tmp_path / "export"
    result = subprocess.run([cli, "export", str(run_dir), "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with open(out / "metrics.csv") as f:
        steps = [int(r["step"]) for r in csv.DictReader(f)]
    assert len(steps) >= 20 and steps == list(range(1, len(steps) + 1))
    rows = {}
    with open(out / "layers.csv") as f:
        for r in csv.DictReader(f):
            rows[int(r["step"])] = rows.get(int(r["step"]), 0) + 1
    # Every recorded statistics step is whole: 2 modules x (4 roles x 2 plain formats + 3 roles
    # x 5 recipe candidates), none half written; the others were dropped with an event (the
    # script outpaces the counting).
    whole = 2 * (4 * 2 + 3 * 5)
    assert set(rows) <= set(steps) and len(rows) >= 10 and set(rows.values()) == {whole}
    with open(out / "events.jsonl") as f:
        dropped = sum('"statistics_dropped"' in line for line in f)
    assert len(rows) + dropped >= len(steps) - 1  # the step in flight at the kill may be lost
    run = pl.open_run(run_dir)
    assert "killed or crashed" in run.summary["stop_reason"]
    assert not run.live


def test_full_queue_drops_statistics_with_an_event(torch, tmp_path):
    import precision_lab.torch as plt
    torch.manual_seed(0)
    model = torch.nn.Linear(2048, 2048)
    formats = ("fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "nvfp4", "e3m2", "e2m3", "e2m1",
               "mxfp8-e4m3", "mxfp4", "fp8-block128", "e4m3:fnuz")
    with plt.watch(model, tmp_path / "q", formats=formats, every=1, queue_steps=1) as watcher:
        for _ in range(12):  # far faster than counting 2 x 4M values in 12 formats a step
            model(torch.randn(1, 2048)).sum().backward()
            watcher.step()
            model.zero_grad()
        dropped = watcher.dropped_steps
    run = pl.open_run(tmp_path / "q")
    events = run.events[run.events.type == "statistics_dropped"]
    assert dropped > 0 and len(events) == dropped
    assert len(run.steps) == 12  # every step's scalars are kept
    assert run.stats.step.nunique() == 12 - dropped


def test_loss_scale_callable_and_grad_scaler(torch, tmp_path):
    import precision_lab.torch as plt
    model = small_model(torch)
    scales = iter([8.0, 16.0, 32.0])
    with plt.watch(model, tmp_path / "c", every=1, loss_scale=lambda: next(scales)) as w:
        for _ in range(3):
            model(torch.randn(2, 48)).sum().backward()
            w.step()
    assert list(pl.open_run(tmp_path / "c").steps["scale"]) == [8.0, 16.0, 32.0]
    scaler = torch.cuda.amp.GradScaler(enabled=False)  # as on a CPU-only machine
    with plt.watch(model, tmp_path / "g", loss_scale=scaler) as w:
        model(torch.randn(2, 48)).sum().backward()
        w.step()
    assert list(pl.open_run(tmp_path / "g").steps["scale"]) == [1.0]


def test_default_formats_judge_the_framework_recipes(torch, tmp_path):
    """The default formats are BF16, FP16 and the recipe candidates; a candidate's rows name
    the scaling that cast them and hold no weight gradients (a product's output), and the
    advisor's default ladder advises from them."""
    import precision_lab.torch as plt
    model = small_model(torch)
    with plt.watch(model, tmp_path / "d", every=1) as w:
        for _ in range(2):
            model(torch.randn(4, 48)).sum().backward()
            w.step()
            model.zero_grad()
    run = pl.open_run(tmp_path / "d")
    assert run.formats == list(plt.DEFAULT_FORMATS)
    stats = run.stats
    for candidate, scaling in (("fp8-current", "amax-current"), ("fp8-delayed", "amax-delayed"),
                               ("fp8-block", "blockwise"), ("mxfp8", "mx"), ("nvfp4", "nvfp4")):
        rows = stats[stats.format == candidate]
        assert set(rows.role) == {"weights", "activations", "activation_gradients"}, candidate
        assert set(rows.scaling) == {scaling}, candidate
    assert (stats[stats.format == "bf16"].scaling == "").all()  # judged as it is
    advice = pl.advise(tmp_path / "d")
    ladder = ["nvfp4", "mxfp8", "fp8-block", "fp8-delayed", "fp8-current", "bf16", "fp32"]
    assert set(advice.format) <= set(ladder)
    grads = advice[advice.role == "weight_gradients"]
    assert set(grads.format) <= {"bf16", "fp32"}
    assert all("a recipe keeps weight gradients" in r for r in grads.reason)


def test_bad_watch_arguments(torch, tmp_path):
    import precision_lab.torch as plt
    model = small_model(torch)
    cases = [
        (dict(formats=("fp9",)), ValueError, '"fp9"'),
        (dict(formats=()), ValueError, "formats is empty"),
        (dict(every=0), ValueError, "every 0"),
        (dict(roles=("gradients",)), ValueError, "gradients"),
        (dict(loss_scale=-4.0), ValueError, "loss_scale -4.0"),
        (dict(loss_scale="big"), TypeError, "loss_scale is a str"),
    ]
    for kwargs, error, text in cases:
        with pytest.raises(error, match=text):
            plt.watch(model, tmp_path / "bad", **kwargs)
        assert hooks_left(model) == 0
    with pytest.raises(TypeError, match="torch.nn.Module"):
        plt.watch(object(), tmp_path / "bad")
    with pytest.raises(ValueError, match="no module with parameters"):
        plt.watch(torch.nn.ReLU(), tmp_path / "bad")
    first = plt.watch(model, tmp_path / "locked")
    with pytest.raises(OSError, match="another run is writing"):
        plt.watch(small_model(torch), tmp_path / "locked")
    first.close()
    with pytest.raises(OSError, match="holds an earlier run"):
        plt.watch(model, tmp_path / "locked")
    plt.watch(model, tmp_path / "locked", overwrite=True).close()


def test_modules_chooses_what_is_watched(torch, tmp_path):
    import precision_lab.torch as plt
    model = small_model(torch)  # modules with parameters: "0" (48 -> 32) and "2" (32 -> 5)

    def train(watcher, steps=3):
        for _ in range(steps):
            loss = torch.nn.functional.cross_entropy(model(torch.randn(8, 48)),
                                                     torch.randint(0, 5, (8,)))
            loss.backward()
            watcher.step(loss=loss)
            model.zero_grad()

    def head(module, fqn):  # torchao's module_filter_fn order
        return isinstance(module, torch.nn.Linear) and module.out_features == 5

    for modules, selection in (("2", ["2"]), (["?"], ["?"]), (head, "callable " + head.__qualname__)):
        run_dir = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
        with plt.watch(model, run_dir, formats=("fp16",), every=1, modules=modules) as watcher:
            train(watcher)
        assert hooks_left(model) == 0
        run = pl.open_run(run_dir)
        names = [m["name"] for m in run.watch["modules"]]
        expected = ["0", "2"] if modules == ["?"] else ["2"]
        assert names == expected, modules
        assert sorted(set(run.stats["stage_name"])) == expected
        assert set(run.stats["role"]) == set(plt.ROLES)
        assert run.watch["module_selection"] == selection
    with plt.watch(model, tmp_path / "all", formats=("fp16",)) as watcher:
        train(watcher, 1)
    assert "module_selection" not in pl.open_run(tmp_path / "all").watch
    # Issue 67 item 4: a filter in the earlier (name, module) order still works, with a
    # DeprecationWarning, known by its first parameter's name or by being the only order that
    # chooses modules.
    def earlier(name, module):
        return name == "2"

    with pytest.warns(DeprecationWarning, match=r"takes \(name, module\)"):
        with plt.watch(model, tmp_path / "earlier", formats=("fp16",), modules=earlier) as w:
            train(w, 1)
    assert [m["name"] for m in pl.open_run(tmp_path / "earlier").watch["modules"]] == ["2"]
    with pytest.warns(DeprecationWarning):  # torchao's order chooses none: the earlier one
        with plt.watch(model, tmp_path / "lambda", formats=("fp16",),
                       modules=lambda n, m: n == "2") as w:
            train(w, 1)
    assert [m["name"] for m in pl.open_run(tmp_path / "lambda").watch["modules"]] == ["2"]
    cases = [
        (dict(modules=["2", "fc9"]), ValueError,
         r"modules \['fc9'\] match none of Sequential's modules with parameters \(those: 0, 2\)"),
        (dict(modules=[]), ValueError, "modules is empty"),
        (dict(modules=[2]), TypeError, "modules holds a int"),
        (dict(modules=lambda n, m: False), ValueError, "chose none of Sequential's 2 modules"),
    ]
    for kwargs, error, text in cases:
        with pytest.raises(error, match=text):
            plt.watch(model, tmp_path / "bad", **kwargs)
        assert hooks_left(model) == 0
    assert not (tmp_path / "bad").exists()  # refused before the record is made


def test_open_run_reads_a_cli_run(tmp_path, cli):
    result = subprocess.run([cli, "train", "--preset", "fp16-static", "--steps", "5", "--out",
                             str(tmp_path / "cli")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    run = pl.open_run(tmp_path / "cli")
    assert list(run.steps["step"]) == [1, 2, 3, 4, 5]
    assert run.formats == [] and run.source is None
    assert set(run.stats["role"]) >= {"weights", "activation_gradients"}
    assert (run.stats["format"] != "").all()
    assert run.summary["finished"]
    # Issue 65 item 25: one set of names: open_run's tables have the exports' columns, in their
    # order, and the same values (a float as its shortest text; a CSV's empty cell is NaN).
    import pandas
    for table, export in ((run.stats, "layers.csv"), (run.steps, "metrics.csv")):
        exported = pandas.read_csv(tmp_path / "cli" / export)
        assert list(table.columns) == list(exported.columns), export
        for column in exported.columns:
            ours, theirs = table[column], exported[column]
            if column == "scaling":
                ours, theirs = ours.fillna(""), theirs.fillna("")
            pandas.testing.assert_series_equal(ours, theirs, check_dtype=False,
                                               check_exact=False, rtol=1e-15, obj=column)
    with pytest.raises(OSError, match="no run record here"):
        pl.open_run(tmp_path)


ENDINGS = """
import os, signal, sys, time
sys.path.insert(0, os.environ["PLAB_PYTHON_PATH"])
import torch, precision_lab.torch as plt
model = torch.nn.Linear(8, 2)
how = sys.argv[2]
if how == "no-close":
    w = plt.watch(model, sys.argv[1])
    model(torch.randn(2, 8)).sum().backward()
    w.step()
    sys.exit(0)  # without close()
with plt.watch(model, sys.argv[1]) as w:
    model(torch.randn(2, 8)).sum().backward()
    w.step()
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
    time.sleep(5)
"""


@pytest.mark.parametrize("how,reason", [("no-close", "the script ended without close()"),
                                        ("ctrl-c", "interrupted (Ctrl-C)")])
def test_how_a_script_ended_is_in_the_summary(torch, tmp_path, how, reason):
    subprocess.run([sys.executable, "-c", ENDINGS, str(tmp_path / how), how],
                   capture_output=True, timeout=60)
    run = pl.open_run(tmp_path / how)
    assert run.summary["stop_reason"] == reason and not run.summary["finished"]
    assert list(run.steps["step"]) == [1]


def test_a_watched_config_is_not_a_training_config(torch, tmp_path, cli):
    import precision_lab.torch as plt
    plt.watch(small_model(torch), tmp_path / "w").close()
    result = subprocess.run([cli, "train", "--config", str(tmp_path / "w" / "config.json"),
                             "--out", str(tmp_path / "t")], capture_output=True, text=True)
    assert result.returncode == 2
    assert "watched PyTorch run's description" in result.stderr


def test_a_tied_weight_is_recorded_once_with_its_aliases(torch, tmp_path):
    """nanoGPT ties lm_head.weight to transformer.wte.weight: one tensor, one set of rows."""
    import precision_lab.torch as plt

    torch.manual_seed(0)
    model = tied_model(torch)
    with plt.watch(model, tmp_path / "run", formats="fp16", every=1) as watcher:
        for _ in range(2):
            x = torch.randint(0, 32, (4, 8))
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
            loss.backward()
            watcher.step(loss=loss)
            model.zero_grad()
    run = pl.open_run(tmp_path / "run")
    roles = run.stats.groupby("stage_name").role.agg(set)
    assert roles["wte"] >= {"weights", "weight_gradients"}
    assert roles["lm_head"] == {"activations", "activation_gradients"}
    assert run.watch["tied_weights"] == [{"parameter": "wte.weight",
                                          "aliases": ["lm_head.weight"]}]
    notes = list(run.events[run.events.type == "note"].message)
    assert any(n.startswith("lm_head.weight is wte.weight (tied)") for n in notes)


def test_attentions_out_proj_records_what_it_can_and_says_what_it_cannot(torch, tmp_path):
    """MultiheadAttention calls out_proj's weight functionally (its forward never runs): the
    watcher takes its weights and output gradient at the attention's forward, and says that its
    input is not recorded. Before, it was listed with weight-gradient rows only."""
    import precision_lab.torch as plt
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0)
    with plt.watch(layer, tmp_path / "run", formats="fp16", every=1) as watcher:
        for _ in range(2):
            out = layer(torch.randn(6, 3, 16))
            out.square().mean().backward()
            watcher.step()
            layer.zero_grad()
    run = pl.open_run(tmp_path / "run")
    roles = run.stats.groupby("stage_name").role.agg(set)
    assert roles["self_attn.out_proj"] == {"weights", "activation_gradients", "weight_gradients"}
    assert run.watch["not_recorded"] == {"self_attn.out_proj": ["activations"]}
    # Its output gradient is the attention's: the same counts.
    rows = run.stats[(run.stats.role == "activation_gradients") & (run.stats.step == 2)]
    attention = rows[rows.stage_name == "self_attn"].iloc[0]
    out_proj = rows[rows.stage_name == "self_attn.out_proj"].iloc[0]
    for c in ("total", "zero", "flushed", "subnormal", "normal"):
        assert attention[c] == out_proj[c], c
    # Its weights as forward used them: quantize's counts of out_proj.weight.
    _, expected = pl.quantize(layer.self_attn.out_proj.weight.detach().numpy(), "fp16")
    weights = run.stats[(run.stats.role == "weights") & (run.stats.step == 1) &
                        (run.stats.stage_name == "self_attn.out_proj")]
    assert len(weights) == 1
    for c in ("total", "zero", "flushed", "subnormal", "normal", "overflow"):
        assert weights.iloc[0][c] == expected[c], c
    notes = " ".join(run.events[run.events.type == "note"].message)
    assert "self_attn.out_proj: MultiheadAttention calls it functionally" in notes


def test_under_autocast_the_weights_are_those_forward_used(torch, tmp_path):
    """torch.autocast(bfloat16) runs a Linear with its weight cast to bf16: the weights role is
    that cast (no error left to a bf16 cast), not the float32 master (55.6 dB before)."""
    import precision_lab.torch as plt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 32), torch.nn.Linear(32, 32))
    with plt.watch(model, tmp_path / "run", formats=("bf16", "fp16"), every=1) as watcher:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(torch.randint(0, 16, (8,)))
        out.float().square().mean().backward()
        watcher.step()
    run = pl.open_run(tmp_path / "run")
    w = run.stats[(run.stats.role == "weights") & (run.stats.format == "bf16")]
    embedding, linear = w[w.stage_name == "0"].iloc[0], w[w.stage_name == "1"].iloc[0]
    assert linear["mse"] == 0.0  # already bf16: the cast changes nothing
    _, expected = pl.quantize(model[1].weight.detach().bfloat16().float().numpy(), "fp16")
    row = run.stats[(run.stats.role == "weights") & (run.stats.format == "fp16") &
                    (run.stats.stage_name == "1")].iloc[0]
    for c in ("total", "zero", "flushed", "subnormal", "normal"):
        assert row[c] == expected[c], c
    # An embedding's lookup runs in float32 under autocast: its float32 weight is what it used.
    assert embedding["mse"] > 0.0
