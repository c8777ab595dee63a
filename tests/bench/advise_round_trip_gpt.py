#!/usr/bin/python3
"""The advisor's round trip on the examples' GPT, measured for docs/advise.md: watch_pytorch.py's
TinyGpt on this repository's README as text (Debian's fortunes need not be installed), FP32 at
loss scale 1, watched with the default formats (statistics every EVERY steps), advised with the
defaults, the recipe exported and emulated from the same seed; FP32 alone and the fp8-current
preset (fp8-hybrid-current) beside it. Prints the losses and, per module and role, the advised
entry with its worst flushed share and SQNR watched and in the run under the advice.

    /usr/bin/python3 tests/bench/advise_round_trip_gpt.py [STEPS [EVERY [OUT]]]   # 300 10
"""

import contextlib
import os
import shutil
import statistics
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "default", "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import torch  # noqa: E402

import precision_lab as pl  # noqa: E402
import precision_lab.torch as plt  # noqa: E402
from watch_pytorch import TinyGpt  # noqa: E402

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
EVERY = int(sys.argv[2]) if len(sys.argv) > 2 else 10
OUT = sys.argv[3] if len(sys.argv) > 3 else "runs/advise-round-trip-gpt"

with open(os.path.join(ROOT, "README.md"), "rb") as f:
    DATA = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()


def batches():
    gen = torch.Generator().manual_seed(0)
    while True:
        starts = torch.randint(0, len(DATA) - 65, (16,), generator=gen)
        yield (torch.stack([DATA[i:i + 64] for i in starts]),
               torch.stack([DATA[i + 1:i + 65] for i in starts]))


def run(hook):
    """Trains the GPT from seed 0 under hook(model) (a context: None, a watcher, an emulation);
    the mean loss of the last 20 steps."""
    torch.manual_seed(0)
    model = TinyGpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data, losses = batches(), []
    with hook(model) as h:
        for _ in range(STEPS):
            x, y = next(data)
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, -2), y.flatten())
            if hasattr(h, "scaler"):
                h.scaler.scale(loss).backward()
                h.scaler.step(opt)
                h.scaler.update()
            else:
                loss.backward()
                opt.step()
            if h is not None:
                h.step(loss=loss)
            opt.zero_grad()
            losses.append(loss.item())
    return statistics.mean(losses[-20:])


def main():
    torch.set_num_threads(1)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    fp32 = run(lambda m: contextlib.nullcontext())
    watched = run(lambda m: plt.watch(m, f"{OUT}/watched", every=EVERY, queue_steps=256))
    advice = pl.advise(f"{OUT}/watched")
    pl.export_advice(f"{OUT}/watched", "recipe", out=f"{OUT}/advice.json")
    advised = run(lambda m: plt.emulate(m, f"{OUT}/advice.json", f"{OUT}/advised", every=EVERY))
    current = run(lambda m: plt.emulate(m, "fp8-hybrid-current", f"{OUT}/fp8-current",
                                        every=EVERY))
    print(f"{STEPS} steps, statistics every {EVERY}; mean loss of the last 20 steps: fp32 "
          f"{fp32:.4f}, watched {watched:.4f}, advised {advised:.4f}, fp8-current {current:.4f}")
    ran = pl.open_run(f"{OUT}/advised").stats
    seen = pl.open_run(f"{OUT}/watched").stats
    print("| module | role | advised | worst flushed, watched | worst flushed, advised run | "
          "worst SQNR, watched | worst SQNR, advised run |")
    print("|---|---|---|---|---|---|---|")
    for _, row in advice.iterrows():
        rows = ran[((ran.stage_name == row.module) | (ran.stage_name == row.module + ".in_proj"))
                   & (ran.role == row.role)]
        if rows.empty:
            continue  # a LayerNorm: no product, no recipe entry
        judged = seen[(seen.stage_name == row.module) & (seen.role == row.role)
                      & (seen.format == row.format) & (seen.step > STEPS - 200)]
        print(f"| {row.module} | {row.role.replace('_', ' ')} | {row.format} | "
              f"{judged.flushed_share.max():.3%} | {rows.flushed_share.max():.3%} | "
              f"{judged.sqnr_db.min():.1f} dB | {rows.sqnr_db.min():.1f} dB |")


if __name__ == "__main__":
    main()
