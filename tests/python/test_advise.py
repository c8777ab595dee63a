"""precision_lab.advise and export_advice: the round trip the advisor promises (watch a model,
advise, emulate the advice, and the advised tensors meet the criteria in the new run), the
exports parsed by what takes them, and the one-line refusals."""

import json
import os
import subprocess

import pytest
import yaml

from conftest import require_torch


def train(torch, model, steps, hook):
    """A small fixed problem: the same batches every time (seeded), SGD; hook(loss) after each
    optimiser step (watcher.step / emulation.step)."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(512, 32, generator=gen)
    y = torch.randint(0, 4, (512,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for s in range(steps):
        i = (s * 32) % 512
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        hook(loss)


def mlp(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 4))


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    torch = require_torch()
    import precision_lab.torch as plt
    run = tmp_path_factory.mktemp("advise") / "watched"
    model = mlp(torch)
    with plt.watch(model, run, formats=("nvfp4", "fp8-e4m3", "bf16"), every=1,
                   queue_steps=32) as w:  # no statistics step dropped
        train(torch, model, 24, lambda loss: w.step(loss=loss))
    return run


LADDER = ("fp8-e4m3", "bf16", "fp32")


def test_advice_names_the_deciding_number(watched):
    import precision_lab as pl
    table = pl.advise(watched, ladder=LADDER)
    assert list(table.columns) == ["stage", "module", "role", "format", "reason"]
    assert len(table) == 3 * 4 and table.attrs["window"]["statistics_steps"] == 24
    # Unscaled E4M3 flushes most of this model's gradients (loss scale 1) and keeps its
    # activations: the reason gives the share and the step.
    grads = table[(table.module == "0") & (table.role == "activation_gradients")].iloc[0]
    assert grads.format == "bf16"
    assert "fp8-e4m3 rejected: " in grads.reason
    assert "flushed (limit 1%, 0.5% with the margin) at step" in grads.reason
    verdict = table.attrs["verdicts"][grads.name][0]
    assert verdict["outcome"] == "fails" and verdict["criterion"] == "flushed"
    assert verdict["value"] > 0.01
    activations = table[(table.module == "0") & (table.role == "activations")].iloc[0]
    assert activations.format == "fp8-e4m3"
    products = table.attrs["products"]
    assert len(products) == 9
    forward = products[(products.module == "0") & (products["product"] == "forward")].iloc[0]
    assert forward.format in ("fp8-e4m3", "bf16")


def test_round_trip_the_advised_tensors_meet_the_criteria(watched, tmp_path):
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as plt
    recipe_file = tmp_path / "advice.json"
    pl.export_advice(watched, "recipe", out=recipe_file, ladder=LADDER)
    advice = pl.advise(watched, ladder=LADDER)
    model = mlp(torch)
    run = tmp_path / "emulated"
    with plt.emulate(model, str(recipe_file), str(run)) as em:
        train(torch, model, 24, lambda loss: em.step(loss=loss))
    stats = pl.open_run(run).stats
    for _, row in advice.iterrows():
        rows = stats[(stats.stage == row.stage) & (stats.role == row.role)]
        assert len(rows) == 24, (row.module, row.role)
        assert set(rows.format) == {row.format}, (row.module, row.role, set(rows.format))
        assert rows.flushed_share.max() <= 0.01, (row.module, row.role)
        assert (rows.overflow == 0).all(), (row.module, row.role)
        assert rows.sqnr_db.min() >= 20, (row.module, row.role)


def test_round_trip_on_the_examples_gpt(tmp_path):
    """Issue 63 item 5: the examples' GPT (watch_pytorch.py's TinyGpt, this repository's README as
    its text) watched at loss scale 1 with the default formats, advised with the defaults, the
    recipe exported and emulated: every advised product tensor meets the criteria in the new run,
    and a gradient is advised a scaled recipe wherever the widest candidate keeps it inside them
    (not BF16 by default, as when FP8 was judged unscaled)."""
    torch = require_torch()
    import sys
    import precision_lab as pl
    import precision_lab.torch as plt
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from watch_pytorch import TinyGpt
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme, "rb") as f:
        data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()

    def train_gpt(hook):
        torch.manual_seed(0)
        model = TinyGpt()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(0)
        hooked = hook(model)
        with hooked as h:
            for _ in range(40):
                starts = torch.randint(0, len(data) - 65, (16,), generator=gen)
                x = torch.stack([data[i:i + 64] for i in starts])
                y = torch.stack([data[i + 1:i + 65] for i in starts])
                loss = torch.nn.functional.cross_entropy(model(x).flatten(0, -2), y.flatten())
                if hasattr(h, "scaler"):  # an emulation: its loss scaler (none here) steps
                    h.scaler.scale(loss).backward()
                    h.scaler.step(opt)
                    h.scaler.update()
                else:
                    loss.backward()
                    opt.step()
                h.step(loss=loss)
                opt.zero_grad()

    train_gpt(lambda m: plt.watch(m, tmp_path / "watched", every=2, queue_steps=64))
    advice = pl.advise(tmp_path / "watched")
    pl.export_advice(tmp_path / "watched", "recipe", out=tmp_path / "advice.json")
    train_gpt(lambda m: plt.emulate(m, str(tmp_path / "advice.json"), str(tmp_path / "advised"),
                                    every=2))
    stats = pl.open_run(tmp_path / "advised").stats
    candidates = {"nvfp4", "mxfp8", "fp8-block", "fp8-delayed", "fp8-current"}
    checked = 0
    for _, row in advice.iterrows():
        # emulate names an attention's input projection NAME.in_proj; a LayerNorm has no product
        rows = stats[((stats.stage_name == row.module) |
                      (stats.stage_name == row.module + ".in_proj")) & (stats.role == row.role)]
        if rows.empty:
            continue
        checked += 1
        where = (row.module, row.role, row.format)
        assert rows.flushed_share.max() <= 0.01, where
        assert (rows.overflow == 0).all(), where
        assert rows.sqnr_db.min() >= 20, where
        if row.role == "activation_gradients":
            assert row.format in candidates or "fp8-current rejected" in row.reason, where
    assert checked >= 30  # 11 product modules' roles


def test_exports_parse_where_they_go(watched, cli, tmp_path):
    import precision_lab as pl
    # The recipe: the CLI writes the same text, and emulate's checks take it (resolve_recipe).
    recipe = pl.export_advice(watched, "recipe", ladder=LADDER)
    out = tmp_path / "cli.json"
    subprocess.run([cli, "advise", str(watched), "--ladder", ",".join(LADDER), "--export",
                    "recipe", "--out", str(out)], check=True, capture_output=True)
    assert out.read_text() == recipe
    from precision_lab._emulate import resolve_recipe
    config = resolve_recipe(json.loads(recipe), ["0", "2", "4"])
    assert config["recipe"]["activations"]["format"] == "fp8-e4m3"
    # TE's YAML: sections with enabled, layers and the features TE documents (their names after
    # TE 2.12, and TE 2.4-2.12's on request).
    for kind, gemm_feature, layer_feature in (
            ("te-yaml", "DisableQuantizationGEMM", "DisableQuantizationLayer"),
            ("te-yaml-fp8", "DisableFP8GEMM", "DisableFP8Layer")):
        document = yaml.safe_load(pl.export_advice(watched, kind, ladder=LADDER))
        assert document, "no layer kept in high precision"
        for section in document.values():
            assert section["enabled"] is True
            assert set(section["layers"]) == {"layer_name_regex_pattern"}
            (name, feature), = section["transformer_engine"].items()
            assert name in (gemm_feature, layer_feature)
            assert feature["enabled"] is True
            if name == gemm_feature:
                assert feature["gemms"] and set(feature["gemms"]) <= {"fprop", "dgrad", "wgrad"}
            else:
                assert set(feature) == {"enabled"}
    # torchao: a module_filter_fn that runs.
    scope = {}
    exec(compile(pl.export_advice(watched, "torchao", ladder=LADDER), "torchao", "exec"), scope)
    advice = pl.advise(watched, ladder=LADDER)
    products = advice.attrs["products"]
    for module in ("0", "2", "4"):
        narrow = set(products[products.module == module].format) == {"fp8-e4m3"}
        assert scope["module_filter_fn"](None, module) == narrow


# What Megatron-LM's TEQuantizationRecipe takes (megatron/core/extensions/transformer_engine.py):
# its fields, and the recipes its per-module config accepts (delayed scaling refused).
MEGATRON_RECIPE_FIELDS = {"fp8_quantization_recipe", "fp4_quantization_recipe",
                          "custom_recipe_factory", "fp8_format", "override_quantized_autocast",
                          "override_nonquantized_autocast", "tp_only_amax_red"}


def check_megatron_config(document, modules):
    """Reads a --te-precision-config-file as Megatron does: each config a TEQuantizationParams
    with a training recipe of known fields and values, each matcher a glob naming a config; and
    returns which config each module takes (the first enabled matcher that matches)."""
    import fnmatch
    assert set(document) == {"configs", "matchers"}
    for name, config in document["configs"].items():
        assert config["transformer_engine_config_type"] == "TEQuantizationParams", name
        assert set(config) <= {"transformer_engine_config_type", "training_recipe",
                               "evaluation_recipe"}, name
        recipe = config["training_recipe"]
        assert set(recipe) <= MEGATRON_RECIPE_FIELDS, (name, recipe)
        assert recipe.get("fp8_quantization_recipe") in (None, "tensorwise", "mxfp8",
                                                         "blockwise"), name
        assert recipe.get("fp4_quantization_recipe") in (None, "nvfp4"), name
        assert not ("fp8_quantization_recipe" in recipe and "fp4_quantization_recipe" in recipe)
        assert recipe.get("fp8_format", "e4m3") in ("e4m3", "hybrid"), name
    taken = {}
    for module in modules:
        for matcher in document["matchers"].values():
            assert set(matcher) == {"config", "type", "pattern", "enabled"}
            assert matcher["type"] == "glob" and matcher["config"] in document["configs"]
            if matcher["enabled"] and fnmatch.fnmatchcase(module, matcher["pattern"]):
                taken[module] = matcher["config"]
                break
    return taken


def test_framework_files_carry_each_modules_recipe(tmp_path):
    """Issue 63 item 4: watched in recipe candidates, the advice goes to Megatron's precision
    config and a torchao script with each module's own recipe; what a target cannot express is a
    comment, and a module is converted only where its three GEMMs may all run narrow."""
    torch = require_torch()
    import precision_lab as pl
    import precision_lab.torch as plt
    run = tmp_path / "watched"
    model = mlp(torch)
    with plt.watch(model, run, formats=("mxfp8", "fp8-current", "bf16"), every=1,
                   queue_steps=32) as w:
        train(torch, model, 8, lambda loss: w.step(loss=loss))
    products = pl.advise(run).attrs["products"]
    narrow = {m for m in ("0", "2", "4")
              if set(products[products.module == m].format) <= {"mxfp8", "fp8-current"}}
    taken = check_megatron_config(yaml.safe_load(pl.export_advice(run, "megatron")),
                                  ["0", "2", "4"])
    assert set(taken) == {"0", "2", "4"}
    assert {m for m, config in taken.items() if config != "bf16"} == narrow
    scope = {}
    exec(compile(pl.export_advice(run, "torchao"), "torchao", "exec"), scope)
    assert set(scope["MODULE_RECIPES"]) == narrow
    assert set(scope["MODULE_RECIPES"].values()) <= {"mxfp8", "fp8-current"}
    assert scope["FLOAT8_MODULES"] == {m for m, r in scope["MODULE_RECIPES"].items()
                                       if r == "fp8-current"}
    linear = model[0]
    for recipe in ("mxfp8", "fp8-current"):
        assert scope["filter_for"](recipe)(linear, "0") == (scope["MODULE_RECIPES"].get("0")
                                                            == recipe)
    assert callable(scope["apply_advice"])


def test_bad_criteria_are_one_line_errors(watched, cli):
    import precision_lab as pl
    for kwargs, expected in (
            ({"ladder": ("fp16", "fp32")}, "holds no statistics in any format of the ladder"),
            ({"ladder": ("fp9",)}, "fp9"),
            ({"max_flushed": "150%"}, "max_flushed"),
            ({"max_flushed": 2}, "max_flushed"),
            ({"steps": "last:0"}, "last:N"),
            ({"margin": 0}, "margin 0"),
            ({"margin": 1.5}, "margin"),
            ({"steps": "900:950"}, "no statistics steps from step 900 to 950")):
        with pytest.raises(ValueError, match=expected) as e:
            pl.advise(watched, **kwargs)
        assert "\n" not in str(e.value)
    # NVFP4 in one layer, unscaled E4M3 in another (and as a weight gradient, a product's
    # output, beside NVFP4 in the same layer): a recipe emulate takes.
    from precision_lab._emulate import resolve_recipe
    mixed = json.loads(pl.export_advice(watched, "recipe",
                                        ladder=("nvfp4", "fp8-e4m3", "bf16", "fp32")))
    resolve_recipe(mixed, ["0", "2", "4"])
    with pytest.raises(OSError, match="run.sqlite"):
        pl.advise(os.path.join(str(watched), "nothing"))
    for args, expected in ((["--max-flushed", "2"], "--max-flushed"),
                           (["--margin", "0"], "--margin"),
                           (["--ladder", "fp16"], "holds no statistics"),
                           (["--export", "onnx"], "expected recipe, te-yaml, te-yaml-fp8, megatron or torchao"),
                           (["--out", "x.json"], "give --export")):
        r = subprocess.run([cli, "advise", str(watched), *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert expected in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_diagnostics_equal_numpy_on_the_same_tensors(tmp_path):
    """The record's diagnostics of a watched tensor against numpy on that tensor: the kurtosis,
    the spread of its NVFP4 block scales (the nvfp4 recipe casts activations in 1x16 blocks, as
    the block format does) and its zero-scale blocks, and the signal-to-noise ratio
    10^(SQNR/20) of its FP8 cast."""
    torch = require_torch()
    import numpy as np
    import precision_lab as pl
    import precision_lab.torch as plt
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32))
    with torch.no_grad():
        model[0].weight.mul_(torch.exp(torch.randn(32, 64)))
    weights = model[0].weight.detach().numpy().copy()  # what step 1's forward reads
    inputs = torch.randn(8, 64) * torch.exp(torch.randn(8, 64))  # heavy tails
    inputs[:4] *= 1e-6  # four rows so small that their NVFP4 block scales underflow
    run = tmp_path / "watched"
    with plt.watch(model, run, formats=("nvfp4", "fp8-e4m3"), every=1) as w:
        train_one = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(inputs).square().mean()
        loss.backward()
        train_one.step()
        w.step(loss=loss)
    record = pl.open_run(run)
    d = record.diagnostics
    # The kurtosis is the activations' (the input the layer reads).
    assert set(d[d.format == ""].role) == {"activations"}
    row = d[(d.step == 1) & (d.role == "activations") & (d.format == "")].iloc[0]
    a = inputs.numpy().astype(np.float64)
    c = a - a.mean()
    assert row["kurtosis"] == pytest.approx(np.mean(c ** 4) / np.mean(c ** 2) ** 2, rel=1e-12)
    assert row["kurtosis"] > 5  # the tails the test built in
    x = weights.astype(np.float64)
    blocks = d[(d.step == 1) & (d.role == "activations") & (d.format == "nvfp4")].iloc[0]
    _, s = pl.quantize(inputs.numpy(), "nvfp4", block_scales=True)
    scales = np.asarray(s["blocks"]["scales"], dtype=np.float64)
    amax = np.asarray(s["blocks"]["amax"], dtype=np.float64)
    live = amax > 0
    scaled = live & (scales > 0)
    assert blocks.live_blocks == live.sum()
    assert blocks.zero_scale_blocks == (live & (scales == 0)).sum()
    assert blocks.block_scale_log2_std == pytest.approx(np.log2(scales[scaled]).std(), rel=1e-12)
    assert blocks.zero_scale_blocks == 4 * 64 // 16  # the four rows scaled by 1e-6
    stats = record.stats
    fp8 = stats[(stats.step == 1) & (stats.role == "weights") &
                (stats.format == "fp8-e4m3")].iloc[0]
    q, _ = pl.quantize(weights, "fp8-e4m3")
    finite = np.isfinite(q)
    ratio = np.linalg.norm(x[finite]) / np.linalg.norm(q[finite].astype(np.float64) - x[finite])
    assert 10 ** (fp8.sqnr_db / 20) == pytest.approx(ratio, rel=1e-9)
    # The export writes them too.
    exported = tmp_path / "csv"
    subprocess.run([os.environ["PLAB_CLI"], "export", str(run), "--out", str(exported)],
                   check=True, capture_output=True)
    lines = (exported / "diagnostics.csv").read_text().splitlines()
    assert lines[0] == ("step,stage,stage_name,role,format,kurtosis,block_scale_log2_std,"
                        "live_blocks,zero_scale_blocks")
    assert len(lines) == 1 + len(d)


def test_exports_quote_module_names_that_hold_quotes_and_line_breaks(tmp_path):
    """A ModuleDict key may hold quotes, a backslash or a line break: the YAML and the Python
    export carry it as one quoted string, never as lines or code of their own."""
    torch = require_torch()
    import re
    import precision_lab as pl
    import precision_lab.torch as plt
    name = 'evil"\'\\\nprint("owned")#'
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({name: torch.nn.Linear(16, 8)})
    run = tmp_path / "watched"
    with plt.watch(model, run, formats=("fp8-e4m3", "bf16"), every=1) as w:
        for _ in range(2):
            loss = model[name](torch.randn(4, 16)).square().mean()
            loss.backward()
            w.step(loss=loss)
    # TE: every product kept wide (bf16 only): one section, its pattern matching the name alone.
    document = yaml.safe_load(pl.export_advice(run, "te-yaml", ladder=("bf16", "fp32")))
    assert len(document) == 1
    pattern = next(iter(document.values()))["layers"]["layer_name_regex_pattern"]
    assert re.fullmatch(pattern, name) and not re.fullmatch(pattern, "evil")
    # torchao: every criterion loosened, so the module may go to FP8 and is named in the set.
    text = pl.export_advice(run, "torchao", ladder=("fp8-e4m3", "fp32"), max_flushed=1,
                            max_overflow=1, min_sqnr=-1000)
    scope = {}
    exec(compile(text, "torchao", "exec"), scope)
    assert scope["FLOAT8_MODULES"] == {name} and "owned" not in scope


def test_export_replaces_only_a_regular_file(watched, tmp_path):
    """Issue 65 item 1: the export's rename never replaces a link, FIFO or folder at ``out``, and
    a link planted at the temporary's name is removed, not written through."""
    import precision_lab as pl
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "advice.json"
    link.symlink_to(victim)
    with pytest.raises(OSError, match="is not a regular file; refusing to replace it"):
        pl.export_advice(watched, "recipe", out=link, ladder=LADDER)
    assert link.is_symlink() and victim.read_text() == "keep"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="is not a regular file"):
        pl.export_advice(watched, "recipe", out=fifo, ladder=LADDER)
    target = tmp_path / "written.json"
    (tmp_path / "written.json.tmp").symlink_to(victim)
    text = pl.export_advice(watched, "recipe", out=target, ladder=LADDER)
    assert target.read_text() == text and victim.read_text() == "keep"
    assert not (tmp_path / "written.json.tmp").exists()


def test_the_default_advice_exports_for_every_kind_of_run(watched, cli, tmp_path):
    """Issue 63, done when: `advise RUN --export recipe` exits 0 with the defaults on a trained
    FP16 run, an FP32 run, a sweep member, a watched run and an emulated run; a trained run's
    export retrains with train --config."""
    torch = require_torch()
    import precision_lab.torch as plt
    runs = {"watched": watched}
    for preset in ("fp16-static", "fp32"):
        runs[preset] = tmp_path / preset
        subprocess.run([cli, "train", "--preset", preset, "--steps", "3", "--data", "synthetic",
                        "--out", str(runs[preset])], check=True, capture_output=True)
    subprocess.run([cli, "sweep", "--presets", "fp16-static", "--seeds", "1", "--steps", "3",
                    "--data", "synthetic", "--jobs", "1", "--out", str(tmp_path / "sweep")],
                   check=True, capture_output=True)
    runs["sweep member"] = tmp_path / "sweep" / "fp16-static" / "seed-1"
    model = mlp(torch)
    with plt.emulate(model, "fp8-hybrid-current", tmp_path / "emulated") as em:
        train(torch, model, 3, lambda loss: em.step(loss=loss))
    runs["emulated"] = tmp_path / "emulated"
    for kind, run in runs.items():
        done = subprocess.run([cli, "advise", str(run), "--export", "recipe"],
                              capture_output=True, text=True)
        assert done.returncode == 0, (kind, done.stderr)
        document = json.loads(done.stdout)
        assert "recipe" in document, kind
        if kind in ("fp16-static", "sweep member"):
            out = tmp_path / f"{kind}.json"
            out.write_text(done.stdout)
            retrain = subprocess.run([cli, "train", "--config", str(out), "--steps", "2",
                                      "--out", str(tmp_path / f"{kind} again")],
                                     capture_output=True, text=True)
            assert retrain.returncode == 0, (kind, retrain.stderr)
