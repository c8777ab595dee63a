"""Steering an emulated run through its record (precision_lab.torch.emulate + the app's
commands): a command written as the app writes it (the core's send_run_command, which the app's
controls call) changes the next recorded step and is recorded as an event and a timeline entry;
a command that cannot be applied becomes an event, never an exception in the script; pause and
step hold the loop at a step boundary; a steered run's config.json replays it bit for bit; a
watched or ended run refuses commands, saying why."""

import json
import threading
import time

import pytest

from conftest import require_torch


def _model(torch, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(32, 24), torch.nn.ReLU(), torch.nn.Linear(24, 8))


def _batch(torch, step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(16, 32, generator=g), torch.randint(0, 8, (16,), generator=g)


def _train(torch, model, em, steps, commands=None, after_step=None):
    """The user's loop; commands: {step: [command, ...]} sent during that step as the app
    would, so applied at its end: the next step is the first to use them."""
    from precision_lab import _core
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(1, steps + 1):
        x, y = _batch(torch, step)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        em.scaler.scale(loss).backward()
        em.scaler.step(opt)
        em.scaler.update()
        for command in (commands or {}).get(step, []):
            _core.send_run_command(em.run_dir, json.dumps(dict(command, **{"from": "the app"})))
        em.step(loss=loss)
        opt.zero_grad()
        losses.append(loss.item())
        if after_step:
            after_step(step)
    return losses


def _scale_command(scale):
    return {"set": {"scaling": {"scale": scale}}}


def test_the_apps_commands_change_the_next_steps_and_are_recorded(tmp_path):
    torch = require_torch()
    from precision_lab import open_run
    from precision_lab.torch import emulate
    model = _model(torch)
    d = tmp_path / "run"
    em = emulate(model, "fp16-amp", d)
    recipe = json.loads(json.dumps(em.config["recipe"]))
    recipe["weights"]["format"] = "fp8-e4m3"
    recipe["activation_gradients"]["rounding"] = "stochastic"
    commands = {
        3: [_scale_command(4096)],
        6: [{"set": {"scaling": {"policy": "static", "scale": 256}}}],
        8: [{"set": {"recipe": recipe}}],
    }
    _train(torch, model, em, 12, commands)
    # Each command is applied at the boundary that ends the step it was sent in.
    assert em.format("0", "weights") == "fp8-e4m3"
    assert em.scaler.policy == "static"
    em.remove()
    run = open_run(d)
    scales = run.steps.set_index("step")["scale"]
    assert list(scales.loc[1:3]) == [65536.0] * 3
    assert list(scales.loc[4:6]) == [4096.0] * 3
    assert list(scales.loc[7:12]) == [256.0] * 6
    weights = run.stats[(run.stats.role == "weights") & (run.stats.stage == 0)]
    assert set(weights[weights.step <= 8].format) == {"fp16"}
    assert set(weights[weights.step >= 9].format) == {"fp8-e4m3"}
    events = run.events.set_index("type")
    assert events.loc["scale", "message"] == "loss scale set to 4096 (2^12) from the app at step 3"
    assert "scaling.policy: dynamic -> static" in events.loc["policy", "message"]
    assert "recipe.weights.format: fp16 -> fp8-e4m3" in events.loc["recipe", "message"]
    assert "recipe.activation_gradients.rounding: nearest-even -> stochastic" in \
        events.loc["recipe", "message"]
    timeline = json.loads((d / "config.json").read_text())["emulate"]["train_config"]["timeline"]
    assert [(e["step"], list(e["set"])) for e in timeline] == \
        [(3, ["scaling"]), (6, ["scaling"]), (8, ["recipe"])]
    assert timeline[0]["set"] == {"scaling": {"scale": 4096}}


def test_a_command_that_cannot_apply_is_an_event_not_an_exception(tmp_path):
    torch = require_torch()
    from precision_lab import open_run
    from precision_lab.torch import emulate
    model = _model(torch)
    d = tmp_path / "run"
    em = emulate(model, "fp16-amp", d)
    bad = [
        _scale_command(-1.0),
        _scale_command("big"),
        {"set": {"recipe": {"weights": {"format": "fp9-e9m9"}}}},
        {"set": {"recipe": {"overrides": [{"stage": 7, "weights": "bf16"}]}}},
        {"set": {"train": {"lr": 1.0}}},
        {"action": "jump"},
        {"set": {}, "action": "pause"},
    ]
    _train(torch, model, em, 3, {1: bad})
    with open(d / "commands.jsonl", "a") as f:  # a line that is not JSON at all
        f.write("not json\n")
    _train(torch, model, em, 2)
    em.remove()
    run = open_run(d)
    refused = list(run.events[run.events.type == "command"].message)
    assert len(refused) == len(bad) + 1
    assert "command 1 from the app refused at step 1: config.scaling.scale" in refused[0]
    assert "fp9-e9m9" in refused[2]
    assert "stage 7" in refused[3]
    assert "config.train" in refused[4]
    assert "action jump" in refused[5]
    assert refused[7].startswith("command 8 from another process refused") and \
        "not JSON" in refused[7]
    assert set(run.steps.scale) == {65536.0}  # nothing changed
    config = json.loads((d / "config.json").read_text())["emulate"]["train_config"]
    assert "timeline" not in config


def test_pause_and_step_hold_the_loop_at_a_step_boundary(tmp_path):
    torch = require_torch()
    from precision_lab import _core, open_run
    from precision_lab.torch import emulate
    model = _model(torch)
    d = tmp_path / "run"
    em = emulate(model, "fp8-hybrid", d)
    done = []
    started = threading.Event()

    def loop():
        _train(torch, model, em, 40, after_step=lambda s: (done.append(s), started.set(),
                                                           time.sleep(0.005)))
    worker = threading.Thread(target=loop)
    worker.start()
    started.wait(10)

    def settled():
        before = len(done)
        time.sleep(0.3)
        return len(done) == before

    _core.send_run_command(str(d), json.dumps({"action": "pause", "from": "the app"}))
    deadline = time.time() + 10
    while not em.paused and time.time() < deadline:
        time.sleep(0.01)
    assert em.paused
    assert settled()
    held = len(done)
    assert held < 40
    _core.send_run_command(str(d), json.dumps({"action": "step"}))
    deadline = time.time() + 10
    while len(done) < held + 1 and time.time() < deadline:
        time.sleep(0.01)
    assert settled()
    assert len(done) == held + 1  # one step, then held again
    _core.send_run_command(str(d), json.dumps({"action": "resume"}))
    worker.join(20)
    assert not worker.is_alive() and len(done) == 40
    em.remove()
    events = open_run(d).events
    assert list(events[events.type.isin(["pause", "step", "resume"])].type) == \
        ["pause", "step", "resume"]


def test_a_steered_runs_config_replays_it_bit_for_bit(tmp_path):
    torch = require_torch()
    from precision_lab import open_run
    from precision_lab.torch import emulate
    recipe = {"preset": "fp8-hybrid", "recipe": {"weights": {"rounding": "stochastic"}}}
    commands = {
        2: [{"set": {"scaling": {"policy": "dynamic", "scale": 1024}}}],
        5: [{"set": {"recipe": {"activation_gradients": {"format": "fp8-e4m3"}}}}],
        7: [_scale_command(8.0)],
    }
    model = _model(torch)
    steered = emulate(model, recipe, tmp_path / "steered", seed=3)
    steered_losses = _train(torch, model, steered, 12, commands)
    steered.remove()
    model = _model(torch)
    replay = emulate(model, tmp_path / "steered" / "config.json", tmp_path / "replay")
    replay_losses = _train(torch, model, replay, 12)
    replay.remove()
    assert replay_losses == steered_losses  # bit for bit: float equality of every loss
    a, b = open_run(tmp_path / "steered"), open_run(tmp_path / "replay")
    assert list(a.steps.scale) == list(b.steps.scale)
    assert 8.0 in set(a.steps.scale)
    counts = ["step", "stage", "role", "format", "total", "flushed", "subnormal", "normal"]
    assert a.stats[counts].equals(b.stats[counts])
    # The replay applied the timeline itself: the same edits, from the replayed timeline.
    assert list(b.events[b.events.type.isin(["scale", "policy", "recipe"])].step) == [2, 5, 7]
    assert all("from the replayed timeline" in m for m in
               b.events[b.events.type.isin(["scale", "policy", "recipe"])].message)
    # The same timeline given as an argument does the same.
    model = _model(torch)
    timeline = json.loads((tmp_path / "steered" / "config.json").read_text())
    timeline = timeline["emulate"]["train_config"]["timeline"]
    again = emulate(model, recipe, tmp_path / "again", seed=3, timeline=timeline)
    assert _train(torch, model, again, 12) == steered_losses
    again.remove()


def test_a_watched_or_ended_run_refuses_commands_saying_why(tmp_path):
    torch = require_torch()
    import precision_lab.torch as pt
    from precision_lab import _core
    model = _model(torch)
    with pt.watch(model, tmp_path / "watched"):
        with pytest.raises(OSError, match="is a watched run: precision_lab.torch.watch only "
                                          "observes"):
            _core.send_run_command(str(tmp_path / "watched"), json.dumps(_scale_command(2.0)))
    em = pt.emulate(model, "bf16", tmp_path / "ended")
    em.remove()
    with pytest.raises(OSError, match="has ended"):
        _core.send_run_command(str(tmp_path / "ended"), json.dumps(_scale_command(2.0)))
    assert not (tmp_path / "watched" / "commands.jsonl").exists()


def test_timeline_argument_is_checked_before_anything_is_written(tmp_path):
    torch = require_torch()
    from precision_lab.torch import emulate
    model = _model(torch)
    with pytest.raises(ValueError, match=r"timeline\[0\].set.train"):
        emulate(model, "bf16", tmp_path / "a", timeline=[{"step": 1, "set": {"train": {"lr": 1}}}])
    with pytest.raises(ValueError, match=r"config.timeline\[0\]"):
        emulate(model, "bf16", tmp_path / "b",
                timeline=[{"step": 1, "set": {"scaling": {"scale": -2}}}])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_cli_steers_a_running_script(tmp_path, cli):
    """precision-lab-cli steer: the same commands from a shell (a server without the app)."""
    import subprocess
    torch = require_torch()
    from precision_lab import open_run
    from precision_lab.torch import emulate
    model = _model(torch)
    d = tmp_path / "run"
    em = emulate(model, "fp16-amp", d)
    sent = []

    def after(step):
        if step == 2:
            done = subprocess.run([cli, "steer", str(d), "--scale", "512",
                                   "--set", "recipe.weights.format=bf16"],
                                  capture_output=True, text=True)
            sent.append(done)
    _train(torch, model, em, 5, after_step=after)
    bad = subprocess.run([cli, "steer", str(d), "--scale", "-4"], capture_output=True, text=True)
    both = subprocess.run([cli, "steer", str(d), "--pause", "--resume"], capture_output=True,
                          text=True)
    em.remove()
    assert sent[0].returncode == 0, sent[0].stderr
    assert sent[0].stdout.startswith(f"command 1 sent to {d}")
    assert bad.returncode == 2 and "--scale: \"-4\": expected a finite positive number" in \
        bad.stderr
    assert both.returncode == 2 and "give one of" in both.stderr
    run = open_run(d)
    assert list(run.steps.scale) == [65536.0] * 3 + [512.0] * 2
    assert set(run.stats[(run.stats.step >= 4) & (run.stats.role == "weights")].format) == \
        {"bf16"}
    ended = subprocess.run([cli, "steer", str(d), "--resume"], capture_output=True, text=True)
    assert ended.returncode == 2 and "has ended" in ended.stderr
