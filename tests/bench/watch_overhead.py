#!/usr/bin/python3
"""Benchmark, not a test (tests/bench/watch_overhead.sh runs it): what watching a PyTorch run
costs, and precision_lab.quantize's speed against its peers, each in one run.

1. The PyTorch MLP peer (shared/peers/mlp_torch.py: 784-256-256-10, batch 128, SGD momentum,
   Fashion-MNIST, its own training loop, one thread) trained for EPOCHS epochs unwatched, watched
   every 10th step and watched every step (the default formats: BF16, FP16 and the five
   recipe candidates; all four roles), in
   interleaved rounds; samples/s and the loss against the unwatched run of the same round.
2. The PyTorch tiny-GPT peer (shared/peers/gpt_torch.py: byte-level, 2 blocks, d_model 128,
   batch 32 x 64, AdamW, its own loop, one thread) for GPT_STEPS steps, unwatched and watched
   every 10th step, in interleaved rounds; tokens/s against the unwatched run of the same round.
3. shared/peers/watch_naive_torch.py, the hand-written torch-op watcher, for scale.
4. precision_lab.quantize (with and without statistics) against `precision-lab-cli bench
   quantize` (the same distribution and size: normal values over 24 binades), torch's own
   .to(float16 / bfloat16) round trips, and the numpy FP8 emulation of shared/peers/convert_peers.py.
Knobs (env): ROUNDS (3), EPOCHS (1), GPT_STEPS (200), QUANT_N (16Mi), PEERS (../shared/peers), PLAB_CLI, and
PLAB_PYTHON_PATH (the build's python/ folder).
"""

import contextlib
import importlib.util
import inspect
import io
import os
import re
import runpy
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.environ.get("PLAB_PYTHON_PATH", "build/default/python"))
import precision_lab as pl  # noqa: E402
import precision_lab.torch as plt  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", 3))
EPOCHS = int(os.environ.get("EPOCHS", 1))
GPT_STEPS = int(os.environ.get("GPT_STEPS", 200))
QUANT_N = int(os.environ.get("QUANT_N", 16 * 1024 * 1024))
PEERS = os.environ.get("PEERS", "../shared/peers")
CLI = os.environ.get("PLAB_CLI", "build/default/app/precision-lab-cli")
torch.set_num_threads(1)


def load_peer(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(PEERS, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.np = np
    return module


class WatchedOptimizers:
    """torch.optim for the peer's loop, with watcher.step() after each optimiser step (the peer
    zeroes its gradients before backward, so they are still there)."""

    def __init__(self, watcher_for):
        self._watcher_for = watcher_for

    def SGD(self, params, **kw):
        watcher_for = self._watcher_for

        class Watched(torch.optim.SGD):
            def step(self, closure=None):
                result = super().step(closure)
                if watcher_for.watcher is not None:
                    watcher_for.watcher.step(lr=kw.get("lr"))
                return result
        return Watched(params, **kw)


class WatchingNn:
    """torch.nn for the peer, whose Sequential starts a watcher on the model it builds."""

    def __init__(self, every, out):
        self.every, self.out, self.watcher = every, out, None

    def __getattr__(self, name):
        return getattr(torch.nn, name)

    def Sequential(self, *layers):
        model = torch.nn.Sequential(*layers)
        if self.every:
            self.watcher = plt.watch(model, self.out, every=self.every, overwrite=True)
        return model


class PeerTorch:
    def __init__(self, nn):
        self.nn = nn
        self.optim = WatchedOptimizers(nn)

    def __getattr__(self, name):
        return getattr(torch, name)


def mlp_rounds():
    mlp = load_peer("mlp_torch")
    mlp.EPOCHS = EPOCHS
    xtr = torch.from_numpy(mlp.load_idx("train-images-idx3-ubyte.gz").reshape(-1, 784)
                           .astype(np.float32)).div_(255)
    xte = torch.from_numpy(mlp.load_idx("t10k-images-idx3-ubyte.gz").reshape(-1, 784)
                           .astype(np.float32)).div_(255)
    sd, mu = torch.std_mean(xtr)
    xtr.sub_(mu).div_(sd)
    xte.sub_(mu).div_(sd)
    ytr = torch.from_numpy(mlp.load_idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    yte = torch.from_numpy(mlp.load_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    losses = {10: [], 1: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(ROUNDS):
            rates = {}
            for every in (0, 10, 1):
                nn = WatchingNn(every, os.path.join(tmp, f"every{every}"))
                mlp.nn, mlp.torch = nn, PeerTorch(nn)
                text = io.StringIO()
                with contextlib.redirect_stdout(text):
                    mlp.run("fp32", 1, xtr, ytr, xte, yte)
                    if nn.watcher is not None:
                        dropped = nn.watcher.dropped_steps
                        nn.watcher.close()
                rates[every] = float(re.search(r"train +(\d+) samples/s", text.getvalue())[1])
                if every:
                    losses[every].append(rates[0] / rates[every] - 1)
                    rates[f"dropped{every}"] = dropped
            print(f"round {r}: unwatched {rates[0]:.0f} samples/s; every 10: {rates[10]:.0f} "
                  f"({rates[0] / rates[10] - 1:+.1%}, {rates['dropped10']} statistics steps "
                  f"dropped); every 1: {rates[1]:.0f} ({rates[0] / rates[1] - 1:+.1%}, "
                  f"{rates['dropped1']} dropped)", flush=True)
    print(f"median cost of watching: every 10 {statistics.median(losses[10]):+.1%}, every 1 "
          f"{statistics.median(losses[1]):+.1%} (one torch thread; the counting thread runs "
          f"beside it)", flush=True)


def gpt_run(every, out):
    """One run of the GPT peer as its own script, watched every `every` steps (0: unwatched).
    The peer builds its model and AdamW at module level, so the watcher starts in a stand-in
    AdamW that finds the model in the script's globals, and steps after each optimiser step."""
    real = torch.optim.AdamW
    started = {}

    class WatchedAdamW(real):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            if every:
                model = inspect.currentframe().f_back.f_globals["model"]
                started["watcher"] = plt.watch(model, out, every=every, overwrite=True)

        def step(self, closure=None):
            result = super().step(closure)
            if "watcher" in started:
                started["watcher"].step()
            return result

    text = io.StringIO()
    torch.optim.AdamW = WatchedAdamW
    try:
        with contextlib.redirect_stdout(text):
            runpy.run_path(os.path.join(PEERS, "gpt_torch.py"), run_name="__main__")
    finally:
        torch.optim.AdamW = real
    dropped = 0
    if "watcher" in started:
        dropped = started["watcher"].dropped_steps
        started["watcher"].close()
    return float(re.search(r"(\d+) tokens/s", text.getvalue())[1]), dropped


def gpt_rounds():
    os.environ["GPT_STEPS"] = str(GPT_STEPS)
    costs = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(ROUNDS):
            plain, _ = gpt_run(0, None)
            watched, dropped = gpt_run(10, os.path.join(tmp, "gpt"))
            costs.append(plain / watched - 1)
            print(f"round {r}: unwatched {plain:.0f} tokens/s; every 10: {watched:.0f} "
                  f"({costs[-1]:+.1%}, {dropped} statistics steps dropped)", flush=True)
    print(f"median cost of watching the GPT peer every 10 steps: {statistics.median(costs):+.1%}",
          flush=True)


def best_rate(fn, n, repeat=5):
    fn()
    best = min(timed(fn) for _ in range(repeat))
    return n / best / 1e9


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def quantize_figures():
    rng = np.random.default_rng(42)
    x = (rng.standard_normal(QUANT_N, dtype=np.float32) *
         np.exp2(rng.uniform(-20, 4, QUANT_N)).astype(np.float32))
    out = np.empty_like(x)
    formats = ("fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "nvfp4")
    cli = subprocess.run([CLI, "bench", "quantize", "--size", str(QUANT_N), "--threads", "1",
                          "--repeat", "5", "--formats", *formats], capture_output=True,
                         text=True, check=True).stdout
    cli_rate = {m[1]: float(m[2]) for m in
                re.finditer(r"^(\S+) +nearest-even +([0-9.]+)", cli, re.M)}
    print(f"\nquantize, {QUANT_N} float32 values, one thread, nearest-even, G elements/s "
          f"(best of 5):")
    print("(the CLI's bench counts classes and the histogram; `counts` is the module doing the "
          "same, error=False; `+error` adds the error sums (SQNR), the default)")
    print(f"{'format':<10} {'CLI bench':>10} {'counts':>8} {'ratio':>7} {'+error':>8} "
          f"{'no stats':>9}")
    for f in formats:
        counts = best_rate(lambda: pl.quantize(x, f, out=out, error=False), QUANT_N)
        full = best_rate(lambda: pl.quantize(x, f, out=out), QUANT_N)
        bare = best_rate(lambda: pl.quantize(x, f, out=out, stats=False), QUANT_N)
        print(f"{f:<10} {cli_rate[f]:>10.3f} {counts:>8.3f} {counts / cli_rate[f]:>7.2f} "
              f"{full:>8.3f} {bare:>9.3f}")
    t = torch.from_numpy(x)
    t16, tf = torch.empty(QUANT_N, dtype=torch.float16), torch.empty(QUANT_N)
    tb = torch.empty(QUANT_N, dtype=torch.bfloat16)
    half = best_rate(lambda: tf.copy_(t16.copy_(t)), QUANT_N)
    bf = best_rate(lambda: tf.copy_(tb.copy_(t)), QUANT_N)
    convert = load_peer("convert_peers")
    buf = convert.np_buf(QUANT_N)
    e4m3 = best_rate(lambda: convert.fp8_quant_np(x, "E4M3", buf), QUANT_N, repeat=3)
    print(f"peers, no statistics: torch .to(float16) and back {half:.3f}, .to(bfloat16) and "
          f"back {bf:.3f}, numpy FP8 E4M3 emulation (preallocated) {e4m3:.3f}")


if __name__ == "__main__":
    print(f"watch_overhead: torch {torch.__version__}, numpy {np.__version__}, rounds {ROUNDS}, "
          f"epochs {EPOCHS}, cpus {os.cpu_count()}", flush=True)
    mlp_rounds()
    print(f"\nthe GPT peer, {GPT_STEPS} steps a run:", flush=True)
    gpt_rounds()
    print("\nshared/peers/watch_naive_torch.py (hand-written torch-op watcher, rough counts):",
          flush=True)
    subprocess.run([sys.executable, os.path.join(PEERS, "watch_naive_torch.py")],
                   env=dict(os.environ, WATCH_ROUNDS=str(ROUNDS)), check=True)
    quantize_figures()
