"""precision_lab.torch.emulate and LossScaler: the recipe's casts inside a PyTorch model equal
precision_lab.quantize's bits and counts, an FP32 recipe changes nothing, remove() leaves no
trace, the core's loss-scaling policy drives the scale, and every bad input is refused before
anything is written."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import require_torch, tied_model

COUNTS = ("total", "zero", "flushed", "subnormal", "normal", "overflow", "nan")


def _mlp(torch, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 10))


def _batch(torch, seed=1, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(32, 64, generator=g) * scale, torch.randint(0, 10, (32,), generator=g)


def _train(torch, model, steps, em=None, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for step in range(steps):
        x, y = _batch(torch, seed=step)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if em is not None:
            em.step(loss=loss, lr=lr)
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def test_an_fp32_recipe_trains_bit_identically_and_remove_leaves_no_trace(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    plain, emulated, after = _mlp(torch), _mlp(torch), _mlp(torch)
    with pt.emulate(emulated, "fp32", tmp_path / "run") as em:
        assert em.stage_names == ("0", "2", "4")
        emulated_losses = _train(torch, emulated, 20, em)
    plain_losses = _train(torch, plain, 20)
    assert emulated_losses == plain_losses
    for a, b in zip(plain.parameters(), emulated.parameters()):
        assert torch.equal(a, b)
    # remove(): the modules' own forward is back, nothing of the emulation is left on the model.
    assert not any("forward" in m.__dict__ for m in emulated.modules())
    assert not hasattr(emulated, "_precision_lab_emulation")
    assert not emulated._forward_pre_hooks
    em2 = pt.emulate(after, "fp8-hybrid", tmp_path / "again")
    em2.remove()
    torch.manual_seed(5)
    reference = _mlp(torch)
    assert _train(torch, after, 5) == _train(torch, reference, 5)

    import precision_lab as pl
    run = pl.open_run(tmp_path / "run")
    assert run.source == "pytorch-emulate"
    assert list(run.steps["step"]) == list(range(1, 21))
    assert run.summary["stop_reason"] == "completed"
    # What the record can measure, and null for what it cannot (no batch size: no samples/s).
    assert run.summary["wall_seconds"] > 0 and run.summary["samples_per_second"] is None
    rows = run.stats[run.stats.step == 1]
    assert set(rows.role) == {"weights", "activations", "activation_gradients",
                              "weight_gradients"}
    assert set(rows.format) == {"fp32"}


def _emulated_head_casts(torch, tmp_path, recipe, seed=0):
    """One step of an MLP under `recipe`; the head's input, weight and output gradient as the
    test's own hooks took them, and the run."""
    import precision_lab as pl
    import precision_lab.torch as pt
    model = _mlp(torch)
    head = model[4]
    taken = {}
    head.register_forward_pre_hook(lambda m, i: taken.__setitem__("x", i[0].detach().clone()))
    em = pt.emulate(model, recipe, tmp_path / "run", seed=seed, overwrite=True)
    w = head.weight.detach().clone()
    x, y = _batch(torch, scale=4.0)
    out = model(x)
    out.register_hook(lambda g: taken.__setitem__("dy", g.detach().clone()))
    torch.nn.functional.cross_entropy(out, y).backward()
    em.step()
    em.remove()
    return taken["x"], w, taken["dy"], pl.open_run(tmp_path / "run"), em


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp6-e3m2",
                                 "fp6-e2m3", "fp4-e2m1", "e3m3:bias=4"])
@pytest.mark.parametrize("rounding", ["nearest-even", "nearest-away", "toward-zero",
                                      "stochastic"])
def test_every_element_format_and_rounding_casts_as_quantize(tmp_path, fmt, rounding):
    torch = require_torch()
    import precision_lab as pl
    recipe = {"recipe": {r: {"format": fmt, "rounding": rounding}
                         for r in ("weights", "activations", "activation_gradients",
                                   "weight_gradients")}}
    x, w, dy, run, _ = _emulated_head_casts(torch, tmp_path, recipe, seed=7)
    stage, step0 = 2, 0  # the head is stage 2; step 1's casts draw from step 0's streams
    roles = {"activations": (x, 1), "weights": (w, 0), "activation_gradients": (dy, 2)}
    for role, (tensor, role_index) in roles.items():
        stream = (step0 << 16) | (stage << 4) | role_index
        _, expected = pl.quantize(tensor.numpy(), fmt, rounding=rounding, seed=7, stream=stream)
        row = run.stats[(run.stats.stage == stage) & (run.stats.role == role)].iloc[0]
        for c in COUNTS:
            assert row[c] == expected[c], (role, c)
        assert row["amax"] == expected["amax"]


@pytest.mark.parametrize("rounding", ["nearest-even", "stochastic"])
def test_the_cast_tensor_is_quantizes(tmp_path, rounding):
    """What the product reads is quantize's output, bit for bit (taken in the product), stochastic
    rounding included (the run's seed, the (step, stage, role) stream)."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt
    from precision_lab import _emulated_ops
    seen = {}
    original = _emulated_ops.F.linear

    def spy(x, w, b=None):
        seen.setdefault("x", x.detach().clone())
        seen.setdefault("w", w.detach().clone())
        return original(x, w, b)
    model = torch.nn.Sequential(torch.nn.Linear(64, 10))
    role = {"format": "fp8-e5m2", "rounding": rounding}
    em = pt.emulate(model, {"recipe": {"weights": role, "activations": role}},
                    tmp_path / "run", seed=3)
    x, _ = _batch(torch, scale=3.0)
    _emulated_ops.F.linear = spy
    try:
        model(x)
    finally:
        _emulated_ops.F.linear = original
    em.remove("test")
    expected_x, _ = pl.quantize(x.numpy(), "fp8-e5m2", rounding=rounding, seed=3, stream=1)
    expected_w, _ = pl.quantize(model[0].weight.detach().numpy(), "fp8-e5m2", rounding=rounding,
                                seed=3, stream=0)
    assert np.array_equal(seen["x"].numpy().view(np.uint32), expected_x.view(np.uint32))
    assert np.array_equal(seen["w"].numpy().view(np.uint32), expected_w.view(np.uint32))
    if rounding == "stochastic":  # the stream matters: another one gives other bits
        other, _ = pl.quantize(x.numpy(), "fp8-e5m2", rounding=rounding, seed=3, stream=2)
        assert not np.array_equal(other.view(np.uint32), expected_x.view(np.uint32))


@pytest.mark.parametrize("preset,block_format,options", [
    ("nvfp4", "nvfp4", {}), ("mxfp8-e4m3", "mxfp8-e4m3", {}),
    ("mxfp8-ceil", "mxfp8-e4m3", {"scale_rounding": "ceil"}), ("mxfp4", "mxfp4", {}),
    ("fp8-blockwise", "fp8-block128", {})])
def test_block_recipes_count_activations_as_quantize(tmp_path, preset, block_format, options):
    torch = require_torch()
    import precision_lab as pl
    torch.manual_seed(0)
    # 128-wide rows: every block recipe's blocks lie along them. Stage 1 (nvfp4 keeps the last
    # stage in BF16).
    model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 128))
    import precision_lab.torch as pt
    taken = {}
    model[2].register_forward_pre_hook(lambda m, i: taken.__setitem__("x", i[0].detach().clone()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fp8-blockwise's accumulator: said, not emulated
        em = pt.emulate(model, preset, tmp_path / "run")
    from precision_lab import _emulated_ops
    read, original = [], _emulated_ops.F.linear
    _emulated_ops.F.linear = lambda x, w, b=None: (read.append(x.detach().clone()),
                                                   original(x, w, b))[1]
    try:
        x = torch.randn(64, 128) * 3
        model(x).square().mean().backward()
    finally:
        _emulated_ops.F.linear = original
    em.step()
    em.remove()
    run = pl.open_run(tmp_path / "run")
    cast, expected = pl.quantize(taken["x"].numpy(), block_format, **options)
    # What stage 1's product read is quantize's block cast, bit for bit.
    assert np.array_equal(read[1].numpy().view(np.uint32), cast.view(np.uint32))
    row = run.stats[(run.stats.stage == 1) & (run.stats.role == "activations")].iloc[0]
    for c in COUNTS:
        assert row[c] == expected[c], c
    assert row["blocks"] == expected["blocks"]["blocks"]
    # The row's amax is the tensor's (the trainer's caster), as quantize's and a plain row's.
    assert row["amax"] == expected["amax"] == float(np.abs(taken["x"].numpy()).max())


def test_hadamard_changes_only_the_weight_gradients_it_should(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    grads = {}
    for hadamard in (True, False):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 16))
        recipe = {"preset": "nvfp4", "scaling": {"hadamard": hadamard}}
        with pt.emulate(model, recipe, tmp_path / f"run-{hadamard}") as em:
            assert em.config["scaling"]["weight_tiles"]
            model(torch.randn(32, 64)).square().mean().backward()
            em.step()
        grads[hadamard] = [m.weight.grad.clone() for m in (model[0], model[2], model[4])]
    for g in grads[True]:
        assert torch.isfinite(g).all() and g.abs().sum() > 0
    # The transform applies where the gradients are cast narrow (not the BF16 head); the
    # head's gradient reaches layer 2's unchanged, so only the NVFP4 layers' weights differ.
    assert not torch.equal(grads[True][0], grads[False][0])
    assert not torch.equal(grads[True][1], grads[False][1])
    assert torch.equal(grads[True][2], grads[False][2])


def test_loss_scaler_follows_the_core_policy():
    torch = require_torch()
    import precision_lab.torch as pt
    scaler = pt.LossScaler("dynamic", init_scale=2.0 ** 10, growth_interval=3, hysteresis=2)
    p = torch.nn.Parameter(torch.zeros(4))
    opt = torch.optim.SGD([p], lr=0.1)
    pattern = [False, False, True, True, False, False, False, True, False, True, True]
    scales, expected = [], []
    scale, clean, left = 2.0 ** 10, 0, 2
    for overflow in pattern:
        p.grad = torch.full((4,), float("inf") if overflow else 1.0)
        before = p.detach().clone()
        scaler.step(opt)
        assert torch.equal(p.detach(), before) == overflow
        scaler.update()
        scales.append(scaler.get_scale())
        # GradScaler's rule with Megatron's hysteresis, written out.
        if overflow:
            clean = 0
            left -= 1
            if left == 0:
                left, scale = 2, scale / 2
        else:
            clean += 1
            if clean == 3:
                clean, left, scale = 0, 2, scale * 2
        expected.append(scale)
    assert scales == expected
    restored = pt.LossScaler("dynamic", growth_interval=3, hysteresis=2)
    restored.load_state_dict(scaler.state_dict())
    state = {k: v for k, v in scaler.state_dict().items() if k != "config"}
    assert {k: v for k, v in restored.state_dict().items() if k != "config"} == state
    assert state["scale"] == scales[-1]


def test_a_skipped_step_is_recorded_with_the_first_overflowing_module(tmp_path):
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt
    model = _mlp(torch)
    em = pt.emulate(model, "fp16-amp", tmp_path / "run")
    assert em.scaler.policy == "dynamic" and em.scaler.get_scale() == 65536.0
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = _batch(torch)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    em.scaler.scale(loss * 1e30).backward()  # FP16's range is past: Inf gradients
    before = [p.detach().clone() for p in model.parameters()]
    assert em.scaler.step(opt) is None
    em.scaler.update()
    em.step(loss=loss)
    em.remove()
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    run = pl.open_run(tmp_path / "run")
    assert bool(run.steps["skipped"].iloc[0]) and run.steps["scale"].iloc[0] == 65536.0
    scale_events = run.events[run.events.type == "scale"]
    assert len(scale_events) == 1 and "2^16 -> 2^15" in scale_events.message.iloc[0]
    assert "first Inf/NaN: weight_gradients of 0.weight" in scale_events.message.iloc[0]


def test_conv_embedding_and_attention_are_emulated(tmp_path):
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(20, 16)
            self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
            self.conv = torch.nn.Conv1d(16, 8, 3, padding=1)
            self.head = torch.nn.Linear(8, 20)

        def forward(self, idx):
            h = self.embed(idx)
            h, _ = self.attn(h, h, h)
            h = self.conv(h.transpose(1, 2)).transpose(1, 2)
            return self.head(h)
    torch.manual_seed(0)
    net, plain = Net(), Net()
    plain.load_state_dict(net.state_dict())
    em = pt.emulate(net, "bf16", tmp_path / "run")
    assert em.stage_names == ("embed", "attn.in_proj", "attn.out_proj", "conv", "head")
    idx = torch.randint(0, 20, (4, 6))
    out = net(idx)
    ref = plain(idx)
    assert out.shape == ref.shape
    assert (out - ref).abs().max() < 0.1  # BF16 operands: close, not equal
    out.square().mean().backward()
    em.step()
    em.remove()
    run = pl.open_run(tmp_path / "run")
    roles = run.stats.groupby("stage_name").role.apply(set).to_dict()
    assert roles["attn.out_proj"] == {"weights", "activations", "activation_gradients",
                                      "weight_gradients"}
    assert roles["embed"] == {"weights", "activation_gradients", "weight_gradients"}
    assert set(run.stats.format) == {"bf16"}


def test_module_overrides_and_selection(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    recipe = {"preset": "fp8-hybrid",
              "recipe": {"overrides": [{"modules": "4", "weights": "bf16",
                                        "activations": "bf16"}]}}
    em = pt.emulate(_mlp(torch), recipe, tmp_path / "run")
    assert em.format("4", "weights") == "bf16" and em.format("0", "weights") == "fp8-e4m3"
    assert em.format("0", "activation_gradients") == "fp8-e5m2"
    em.remove()
    em = pt.emulate(_mlp(torch), "bf16", tmp_path / "sub", modules=["2", "4"])
    assert em.stage_names == ("2", "4")
    em.remove()


def test_bad_input_is_refused_before_anything_is_written(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    target = tmp_path / "run"
    cases = [
        (lambda: pt.emulate(_mlp(torch), "fp9-nope", target), ValueError, "fp9-nope"),
        (lambda: pt.emulate(_mlp(torch), "bf16", target, modules="decoder*"), ValueError,
         "decoder*"),
        (lambda: pt.emulate(torch.nn.Sequential(torch.nn.LayerNorm(4)), "bf16", target,
                            modules="0"), ValueError, "LayerNorm"),
        (lambda: pt.emulate(_mlp(torch).double(), "bf16", target), TypeError, "float64"),
        (lambda: pt.emulate(_mlp(torch), {"preset": "bf16", "recipe": {"overrides": [
            {"modules": "nothing", "weights": "fp16"}]}}, target), ValueError, "nothing"),
        (lambda: pt.emulate(_mlp(torch), "bf16", target, every=0), ValueError, "every"),
        (lambda: pt.emulate(torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, padding="same")),
                            "bf16", target), ValueError, "padding"),
        (lambda: pt.LossScaler("per-layer"), ValueError, "per-layer"),
        (lambda: pt.LossScaler("dynamic", growth_interval=-3), ValueError, "growth_interval"),
    ]
    for make, error, named in cases:
        with pytest.raises(error) as e:
            make()
        assert named in str(e.value) and "\n" not in str(e.value), str(e.value)
        assert not target.exists()
    model = _mlp(torch)
    em = pt.emulate(model, "bf16", tmp_path / "first")
    with pytest.raises(RuntimeError, match="already emulated"):
        pt.emulate(model, "bf16", target)
    assert not target.exists()
    em.remove()


def test_a_two_rank_gloo_run_writes_two_records(tmp_path):
    require_torch()
    script = os.path.join(os.path.dirname(__file__), "emulated_ranks.py")
    env = dict(os.environ, PYTHONPATH=os.environ.get("PLAB_PYTHON_PATH", ""))
    subprocess.run([sys.executable, script, str(tmp_path / "run")], env=env, check=True,
                   timeout=120)
    import precision_lab as pl
    run = pl.open_run(tmp_path / "run")
    assert sorted(run.ranks) == [0, 1]
    assert sorted(set(run.steps["rank"])) == [0, 1]
    assert (run.steps.groupby("rank").step.max() == 3).all()
    assert set(run.stats["rank"]) == {0, 1}
    # Issue 63 item 7: as Transformer Engine reduces the amax across the data-parallel group,
    # both ranks cast with one scale though their inputs differ (rank 1's are shifted by 1).
    acts = run.stats[run.stats.role == "activations"]
    assert set(acts.scaling) == {"amax-delayed"}
    per_step = acts.pivot_table(index="step", columns="rank", values="tensor_scale")
    assert len(per_step) == 3 and (per_step[0] == per_step[1]).all(), per_step
    amax = acts.pivot_table(index="step", columns="rank", values="amax")
    assert (amax[0] != amax[1]).all()  # their own amaxes differ: the scale is the group's


def test_the_core_trainer_and_emulate_agree_at_step_one(tmp_path, cli):
    """The same MLP, initial weights and batch, trained one step under fp16-noscale by the
    core's own trainer (precision-lab-cli train) and by emulate on torch: the head's activation
    gradients (the loss gradient, where both engines cast the same tensor) have the same class
    counts within 0.5% (or 2 elements: the engines sum their products in other orders, and the
    trainer also rounds the logits to FP16)."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab._core as core
    import precision_lab.torch as pt
    document = {"data": {"source": "synthetic", "train_size": 128, "test_size": 32},
                "model": {"type": "mlp", "hidden": [64, 32], "init": "small",
                          "init_scale": 6},  # peaked softmax: tiny gradients that flush
                "train": {"batch_size": 128, "steps": 1}, "seed": 3}
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(document))
    subprocess.run([cli, "train", "--preset", "fp16-noscale", "--config", str(config_path),
                    "--out", str(tmp_path / "core")], check=True, capture_output=True)
    resolved = core.resolve_config("fp16-noscale", json.dumps(document))
    start = core.core_starting_point(resolved)
    features = torch.from_numpy(start["features"])
    labels = torch.from_numpy(start["labels"].astype(np.int64))
    widths = [features.shape[1], 64, 32, int(labels.max()) + 1]
    layers = []
    for i, (w, b) in enumerate(start["layers"]):
        linear = torch.nn.Linear(widths[i], widths[i + 1])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w).view(widths[i + 1], widths[i]))
            linear.bias.copy_(torch.from_numpy(b))
        layers += [linear, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    with pt.emulate(model, "fp16-noscale", tmp_path / "emulated", seed=3) as em:
        torch.nn.functional.cross_entropy(model(features), labels).backward()
        em.step()
    ours = pl.open_run(tmp_path / "emulated").stats
    theirs = pl.open_run(tmp_path / "core").stats
    mine = ours[(ours.stage == 2) & (ours.role == "activation_gradients")].iloc[0]
    core_row = theirs[(theirs.step == 1) & (theirs.stage == 2) &
                      (theirs.role == "activation_gradients")].iloc[0]
    assert mine["format"] == core_row["format"] == "fp16"
    assert mine["total"] == core_row["total"] == 128 * widths[-1]
    assert core_row["flushed"] > 0  # the comparison is about something
    for c in ("zero", "flushed", "subnormal", "normal", "overflow"):
        a, b = int(mine[c]), int(core_row[c])
        assert abs(a - b) <= max(0.005 * max(a, b), 2), (c, a, b)


@pytest.mark.parametrize("mode", ["watch", "emulate"])
def test_a_full_disk_stops_the_record_not_the_training(tmp_path, mode):
    """An observer whose record cannot be written (files limited to 600 KB: a write past it fails
    as on a full disk) stops recording and says why once; the script trains all its steps and
    the record keeps its whole steps."""
    require_torch()
    import precision_lab as pl
    script = os.path.join(os.path.dirname(__file__), "full_disk_script.py")
    env = dict(os.environ, PYTHONPATH=os.environ.get("PLAB_PYTHON_PATH", ""))
    done = subprocess.run([sys.executable, script, mode, str(tmp_path / "run"), "600000"],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trained=300 failed=True" in done.stdout, done.stdout
    assert done.stderr.count("stopped (noticed at step") == 1, done.stderr
    run = pl.open_run(tmp_path / "run")
    assert 0 < len(run.steps) < 300
    assert list(run.steps["step"]) == list(range(1, len(run.steps) + 1))


@pytest.mark.parametrize("mode", ["watch", "emulate"])
@pytest.mark.parametrize("ending,reason", [
    ("normal", "the script ended without "), ("ctrl-c", "interrupted (Ctrl-C)"),
    ("error", "stopped by ValueError: a bad batch")])
def test_a_script_that_never_closes_says_how_it_ended(tmp_path, mode, ending, reason):
    """Python runs atexit handlers after an uncaught exception too: the summary says which."""
    require_torch()
    import precision_lab as pl
    script = os.path.join(os.path.dirname(__file__), "script_end.py")
    env = dict(os.environ, PYTHONPATH=os.environ.get("PLAB_PYTHON_PATH", ""))
    subprocess.run([sys.executable, script, mode, str(tmp_path / "run"), ending], env=env,
                   capture_output=True, timeout=120)
    run = pl.open_run(tmp_path / "run")
    assert run.summary["stop_reason"].startswith(reason), run.summary["stop_reason"]
    assert run.summary["steps"] == 3 and not run.summary["finished"]


def test_queue_steps_must_let_one_step_wait(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="queue_steps"):
            pt.watch(torch.nn.Linear(2, 2), tmp_path / "run", queue_steps=bad)
    assert not (tmp_path / "run").exists()


def test_python_words_and_limits(tmp_path):
    """Errors name Python's arguments, not the CLI's options; limits hold before anything runs."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt
    with pt.watch(torch.nn.Linear(2, 2), tmp_path / "run") as w:
        w.step()
    with pytest.raises(OSError) as e:
        pt.watch(torch.nn.Linear(2, 2), tmp_path / "run")
    assert "overwrite=True" in str(e.value) and "--" not in str(e.value)
    with pytest.raises(OSError, match="overwrite=True"):
        pt.emulate(torch.nn.Linear(2, 2), "bf16", tmp_path / "run")
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="fmt None"):
        pl.quantize(x, None)
    for make in (lambda: pl.quantize(x, "fp16", threads=10000),
                 lambda: pt.watch(torch.nn.Linear(2, 2), tmp_path / "w", threads=10000),
                 lambda: pt.emulate(torch.nn.Linear(2, 2), "bf16", tmp_path / "e", threads=10000)):
        with pytest.raises(ValueError, match="threads 10000"):
            make()
    assert not (tmp_path / "w").exists() and not (tmp_path / "e").exists()
    nvfp4 = pl.formats("nvfp4")
    assert nvfp4["max_finite"] == 6.0 and pl.formats("mxfp8-e4m3")["max_finite"] == 448.0


def test_a_module_takes_its_own_scaling(tmp_path):
    """Issue 63 item 1: an override naming modules may carry the module's own per-tensor scaling;
    its casts are the policy's (the record's scaling column says so) and the other modules keep
    the run's."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as plt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    recipe = {"recipe": {"weights": "fp8-e4m3", "activations": "fp8-e4m3",
                         "activation_gradients": "fp8-e5m2",
                         "overrides": [{"modules": "2",
                                        "scaling": {"policy": "amax-current", "margin": 1}}]},
              "scaling": {"policy": "static"}}
    run = tmp_path / "mixed"
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    with plt.emulate(model, recipe, str(run)) as em:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            em.step(loss=loss)
    stats = pl.open_run(run).stats
    cast = stats[stats.role.isin(["weights", "activations", "activation_gradients"])]
    assert set(cast[cast.stage_name == "2"].scaling) == {"amax-current"}
    assert set(cast[cast.stage_name == "0"].scaling) == {"none"}
    assert (cast[cast.stage_name == "2"].tensor_scale != 1.0).all()


def test_a_bias_gradient_is_the_sum_of_the_uncast_output_gradient(tmp_path):
    """Issue 63 item 7: Transformer Engine computes dbias from the output gradient before its
    cast (fused into it); emulate did from the E5M2-cast one. Linear and convolution alike."""
    torch = require_torch()
    import precision_lab.torch as pt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.Flatten(),
                                torch.nn.Linear(3 * 4 * 4, 5))
    seen = {}
    with pt.emulate(model, "fp8-hybrid-current", tmp_path / "run") as em:
        x = torch.randn(4, 2, 4, 4)
        h = model[0](x)
        h.register_hook(lambda g: seen.__setitem__("conv", g))
        y = model[2](model[1](h))
        y.register_hook(lambda g: seen.__setitem__("linear", g))
        (y * torch.randn(4, 5)).sum().backward()
        em.step()
    assert torch.equal(model[2].bias.grad, seen["linear"].sum(0))
    assert torch.equal(model[0].bias.grad, seen["conv"].sum([0, 2, 3]))


def test_a_module_name_with_pattern_characters_is_taken_exactly(tmp_path):
    """Issue 65 item 24: a name holding [ ] (a ModuleDict key) is matched exactly before it is
    read as a pattern, by watch's and emulate's modules= and by a recipe's override, which is
    how the advice's export names modules."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"a[0]": torch.nn.Linear(8, 8), "a0": torch.nn.Linear(8, 8)})
    with pt.watch(model, tmp_path / "watched", modules="a[0]", formats="bf16") as w:
        model["a0"](model["a[0]"](torch.randn(2, 8))).sum().backward()
        w.step()
    assert list(pl.open_run(tmp_path / "watched").stats.stage_name.unique()) == ["a[0]"]
    recipe = {"recipe": {"weights": "bf16", "activations": "bf16", "activation_gradients": "bf16",
                         "overrides": [{"modules": "a[0]", "weights": "fp8-e4m3"}]}}
    with pt.emulate(model, recipe, tmp_path / "emulated", modules=["a[0]", "a0"]) as em:
        model["a0"](model["a[0]"](torch.randn(2, 8))).sum().backward()
        em.step()
    stats = pl.open_run(tmp_path / "emulated").stats
    weights = stats[stats.role == "weights"].set_index("stage_name").format
    assert weights["a[0]"] == "fp8-e4m3" and weights["a0"] == "bf16"


def test_a_part_of_an_emulated_model_is_not_emulated_again(tmp_path):
    """Issue 65 item 20: emulating a block of an emulated model (or a model holding an emulated
    block) would split the casts between two records; it is refused, and allowed again once the
    first emulation is removed."""
    torch = require_torch()
    import precision_lab.torch as pt
    model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.nn.Linear(4, 2))
    outer = pt.emulate(model, "bf16", tmp_path / "outer")
    with pytest.raises(RuntimeError, match=r"already emulated by the emulation into .*outer"):
        pt.emulate(model[0], "bf16", tmp_path / "inner")
    assert not (tmp_path / "inner").exists()
    outer.remove()
    inner = pt.emulate(model[0], "bf16", tmp_path / "inner")
    with pytest.raises(RuntimeError, match="already emulated"):
        pt.emulate(model, "bf16", tmp_path / "outer2")
    inner.remove()
    pt.emulate(model, "bf16", tmp_path / "outer3").remove()


def test_an_evaluation_under_no_grad_leaves_training_as_it_was(tmp_path):
    """Issue 65 item 19: a torch.no_grad() evaluation in the middle of training was counted into
    that step's statistics and entered the delayed amax history, so the losses changed from
    then on. Now the run with an evaluation has the same losses and counts as the one without."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt

    def run(folder, evaluate):
        model = _mlp(torch)
        gen = torch.Generator().manual_seed(1)
        losses = []
        with pt.emulate(model, "fp8-hybrid-delayed", tmp_path / folder) as em:
            for step in range(4):
                x = torch.randn(16, 64, generator=gen)
                loss = model(x).square().mean()
                loss.backward()
                if evaluate:
                    with torch.no_grad():
                        model(torch.randn(16, 64, generator=torch.Generator().manual_seed(9)) * 50)
                with torch.no_grad():
                    for p in model.parameters():
                        p -= 0.01 * p.grad
                        p.grad = None
                em.step(loss=loss)
                losses.append(loss.item())
        return losses, pl.open_run(tmp_path / folder).stats

    plain, plain_stats = run("plain", False)
    evaluated, evaluated_stats = run("evaluated", True)
    assert plain == evaluated
    columns = ["step", "stage", "role", "total", "zero", "flushed", "normal", "overflow", "amax"]
    assert plain_stats[columns].equals(evaluated_stats[columns])


def test_a_double_backward_is_refused_not_computed_wrong(tmp_path):
    """Issue 65 item 18: a gradient penalty (autograd.grad with create_graph=True) through
    emulated products returned gradients up to 1.61 off FP32's under emulate(model, "fp32"):
    the casts' second-order terms were dropped. It is refused, naming the module; a first-order
    backward is as before."""
    torch = require_torch()
    import precision_lab.torch as pt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    x = torch.randn(16, 4, requires_grad=True)
    with pt.emulate(model, "fp32", tmp_path / "run"):
        with pytest.raises(RuntimeError, match=r"double backward through 2 .*create_graph"):
            (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
        y = model(x).sum()
        y.backward()  # first order: as before
        assert model[0].weight.grad is not None and torch.isfinite(model[0].weight.grad).all()


def scaled_step(em, model, optimizer, x):
    """One step of the small regression (the first input column from all) under the
    emulation's loss scaler; its loss."""
    loss = (model(x) - x[:, :1]).pow(2).mean()
    em.scaler.scale(loss).backward()
    em.scaler.step(optimizer)
    em.scaler.update()
    em.step(loss=loss)
    optimizer.zero_grad()
    return loss.item()


def test_the_scripts_loss_scaler_is_recorded_and_replayed(tmp_path):
    """Issue 65 item 15: emulate(..., loss_scaler=LossScaler("dynamic", init_scale=2**16))
    recorded the recipe's scaling (static, 1) and its replay from config.json ran at scale 1.
    The scaler used is recorded, and the replay scales as the run did: the same losses and
    scales, step by step."""
    torch = require_torch()
    import precision_lab.torch as pt

    def train(recipe, run, loss_scaler=None):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        losses, scales = [], []
        with pt.emulate(model, recipe, run, loss_scaler=loss_scaler) as em:
            for _ in range(6):
                scales.append(em.scaler.get_scale())
                losses.append(scaled_step(em, model, optimizer, torch.randn(32, 8)))
        return losses, scales

    first = train("fp16-noscale", tmp_path / "run",
                  pt.LossScaler("dynamic", init_scale=2**16, growth_interval=2))
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["emulate"]["loss_scaler"] == {"policy": "dynamic", "scale": 65536.0,
                                                "growth_interval": 2}
    # Issue 65 item 23: what casts and the timeline, not a TrainConfig's defaults for the model,
    # data and optimiser (it said MLP 256-256, synthetic data, SGD lr 0.05 for any script).
    assert sorted(config["emulate"]["train_config"]) == ["recipe", "scaling", "seed"]  # timeline:
    # only when it has edits
    assert config["emulate"]["model"] == "Sequential" and config["emulate"]["parameters"] == 161
    replay = train(tmp_path / "run" / "config.json", tmp_path / "replay")
    assert replay == first and first[1][0] == 65536.0 and first[1][-1] > 65536.0


def test_an_emulated_model_copies_and_saves_as_a_plain_one(tmp_path):
    """Issue 65 item 17: copy.deepcopy (an EMA copy) and torch.save of an emulated model raised
    "cannot pickle precision_lab._core.LossScaler" (torch.save left a truncated file). Both give
    the plain model now, with its own weights: the copy computes in FP32 with the copy's
    parameters, not through the original's emulated forward; the original stays emulated."""
    torch = require_torch()
    import copy
    import precision_lab.torch as pt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    plain = copy.deepcopy(model)
    x = torch.randn(4, 8)
    em = pt.emulate(model, "fp8-e4m3", tmp_path / "run")
    twin = copy.deepcopy(model)
    torch.save(model, tmp_path / "model.pt")
    loaded = torch.load(tmp_path / "model.pt")
    with torch.no_grad():
        for other in (twin, loaded):
            assert "forward" not in other[0].__dict__
            assert not hasattr(other, "_precision_lab_emulation")
            assert torch.equal(other(x), plain(x))
        assert not torch.equal(model(x), plain(x))  # the original: still E4M3
        twin[0].weight.add_(1.0)  # the copy's own parameters
        assert not torch.equal(twin(x), plain(x)) and torch.equal(model[0].weight, plain[0].weight)
    em.remove()
    with torch.no_grad():
        assert torch.equal(model(x), plain(x))
    assert "__deepcopy__" not in model.__dict__ and "__deepcopy__" not in model[0].__dict__


def test_a_checkpoint_resumes_the_emulation_bit_for_bit(tmp_path):
    """Issue 65 item 16: delayed scaling's amax histories were in neither the model's state_dict
    nor the scaler's, so a run resumed from a torch.save checkpoint cast its next step from
    fresh histories (and step 1's random streams). The model's state_dict holds the emulation's
    state: resumed, the losses are those of the run that never stopped, bit for bit; without it
    they are not; loading it after the first step is refused."""
    torch = require_torch()
    import precision_lab.torch as pt
    from precision_lab._emulate import STATE_KEY

    def make():
        torch.manual_seed(5)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1))
        return model, torch.optim.Adam(model.parameters(), lr=1e-2)

    def train(model, optimizer, em, steps):
        losses = []
        for i in steps:
            x = torch.randn(32, 8, generator=torch.Generator().manual_seed(100 + i)) * (1 + i)
            losses.append(scaled_step(em, model, optimizer, x))
        return losses

    model, optimizer = make()
    with pt.emulate(model, "fp8-delayed", tmp_path / "whole") as em:
        whole = train(model, optimizer, em, range(6))
    model, optimizer = make()
    with pt.emulate(model, "fp8-delayed", tmp_path / "first") as em:
        first = train(model, optimizer, em, range(3))
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scaler": em.scaler.state_dict()}, tmp_path / "checkpoint.pt")
    checkpoint = torch.load(tmp_path / "checkpoint.pt")
    assert STATE_KEY in checkpoint["model"] and first == whole[:3]

    def resume(run, state):
        model, optimizer = make()
        with pt.emulate(model, "fp8-delayed", run) as em:
            model.load_state_dict(state)  # strict: the emulation takes its key
            optimizer.load_state_dict(checkpoint["optimizer"])
            em.scaler.load_state_dict(checkpoint["scaler"])
            return em.step_number, train(model, optimizer, em, range(3, 6))

    assert resume(tmp_path / "resumed", checkpoint["model"]) == (4, whole[3:])
    without = {k: v for k, v in checkpoint["model"].items() if k != STATE_KEY}
    assert resume(tmp_path / "afresh", without)[1] != whole[3:]
    model, optimizer = make()
    with pt.emulate(model, "fp8-delayed", tmp_path / "late") as em:
        train(model, optimizer, em, range(1))
        with pytest.raises(ValueError, match="before the first step"):
            model.load_state_dict(checkpoint["model"])


def test_a_tied_weight_says_what_is_cast_of_its_gradient(tmp_path):
    """Issue 65 item 22: under a narrow weight-gradient format a tied weight's gradient is the
    FP32 sum of two separately cast parts, and the record described only the parts, without a
    word. The record names the tie (config.json's tied_weights) and says what is cast (a note
    event), as watch does; each module's weight_gradients row is its own part."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as pt

    torch.manual_seed(0)
    model = tied_model(torch)
    with pt.emulate(model, "fp16-noscale", tmp_path / "run") as em:
        x = torch.randint(0, 32, (4, 8))
        torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten()).backward()
        em.step()
    run = pl.open_run(tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["emulate"]["tied_weights"] == [{"parameter": "wte.weight",
                                                  "aliases": ["lm_head.weight"]}]
    notes = list(run.events[run.events.type == "note"].message)
    assert any(n.startswith("lm_head.weight is wte.weight (tied): each module's weight gradient "
                            "is cast") for n in notes), notes
    parts = run.stats[run.stats.role == "weight_gradients"]
    assert set(parts.stage_name) == {"wte", "lm_head"}
