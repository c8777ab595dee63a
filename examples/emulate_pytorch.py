#!/usr/bin/python3
"""Train your own PyTorch model under one of Precision Lab's recipes, every cast counted, and
follow it live in the app:

    /usr/bin/python3 examples/emulate_pytorch.py --recipe nvfp4 --out runs/emulated &
    build/default/app/precision-lab --open runs/emulated

Models: a small GPT written for this example (nanoGPT's shape: token and position embeddings,
pre-norm blocks of causal self-attention and a GELU MLP, a linear head) on the text of Debian's
fortunes package (default), the small CNN of watch_pytorch.py on Fashion-MNIST (--model cnn), or
watch_pytorch.py's GPT (--model watch-gpt), whose watched run `precision-lab-cli advise` turns
into a recipe this script runs (docs/advise.md).
Recipes: any preset of `precision-lab-cli presets` (nvfp4, fp8-hybrid, fp16-amp, bf16, ...) or a
config JSON file (an advice); the loss scaling is the recipe's, run by the core's LossScaler
(fp16-amp: dynamic from 2^16).
"""

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from watch_pytorch import (SmallCnn, TinyGpt, fashion_batches, fortunes_batches, plt,  # noqa: E402
                           torch)

F = torch.nn.functional


class Block(torch.nn.Module):
    """Pre-norm: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.fc = torch.nn.Linear(width, 4 * width)
        self.out = torch.nn.Linear(4 * width, width)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads) + mask[:t, :t]
        y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.norm2(x)), approximate="tanh"))


class SmallGpt(torch.nn.Module):
    def __init__(self, context=64, width=128, heads=4, blocks=2):
        super().__init__()
        self.tokens = torch.nn.Embedding(256, width)
        self.positions = torch.nn.Embedding(context, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(blocks))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, 256)
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")),
                                                diagonal=1))

    def forward(self, x):
        h = self.tokens(x) + self.positions(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks:
            h = block(h, self.mask)
        return self.head(self.norm(h))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None,
                        help="run folder to record into (default: runs/emulate-<date>-<time>; "
                             "under `precision-lab-cli sweep`, the sweep's)")
    parser.add_argument("--model", choices=("gpt", "cnn", "watch-gpt"), default="gpt",
                        help="watch-gpt: watch_pytorch.py's GPT (torch's TransformerEncoderLayer), "
                             "to run the advice `precision-lab-cli advise` gives on its watched run")
    parser.add_argument("--recipe", default=None,
                        help="a preset (nvfp4, fp8-hybrid, fp16-amp, ...) or a config JSON file "
                             "(default: nvfp4; under `precision-lab-cli sweep`, the sweep's)")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--every", type=int, default=1, help="statistics every N steps")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="pause after each step, to watch a short run go by")
    parser.add_argument("--threads", type=int, default=1, help="torch's and the casts' threads")
    parser.add_argument("--overwrite", action="store_true", help="replace a record in --out")
    args = parser.parse_args()
    if args.steps < 1 or args.every < 1 or args.threads < 1:
        parser.error("--steps, --every and --threads must be positive")

    # Under a sweep (sweep --recipes ... -- python3 examples/emulate_pytorch.py) the recipe, the
    # run folder and the seed are the sweep's; alone, nvfp4 into a new folder, seed 0.
    in_sweep = bool(os.environ.get("PLAB_SWEEP_RUN_DIR"))
    if not in_sweep:
        args.recipe = args.recipe or "nvfp4"
        args.out = args.out or time.strftime("runs/emulate-%Y%m%d-%H%M%S")
    seed = plt.seed_from_sweep(0)
    torch.set_num_threads(args.threads)
    if args.model in ("gpt", "watch-gpt"):
        model = SmallGpt() if args.model == "gpt" else TinyGpt()
        batches, lr = fortunes_batches(16, 64, seed), 1e-3
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    else:
        model, batches, lr = SmallCnn(), fashion_batches(128, seed), 0.05
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    if args.out is not None:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    try:
        emulation = plt.emulate(model, args.recipe, args.out, every=args.every,
                                threads=args.threads, overwrite=args.overwrite)
    except (ValueError, TypeError, OSError) as e:
        sys.exit(f"emulate_pytorch: {e}")
    scaler = emulation.scaler
    with emulation:
        print(f"{args.model} under {args.recipe or os.environ.get('PLAB_SWEEP_RECIPE_NAME')} "
              f"({scaler!r}), recording into {emulation.run_dir}:\n"
              f"  precision-lab --open {emulation.run_dir}", flush=True)
        start = time.perf_counter()
        recent = []  # the last 50 steps' losses: their mean is what a sweep compares
        for step in range(1, args.steps + 1):
            x, y = next(batches)
            loss = F.cross_entropy(model(x).flatten(0, -2), y.flatten())
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            recent = (recent + [loss.item()])[-50:]
            emulation.step(loss=loss, lr=lr, metrics={"loss_last_50": sum(recent) / len(recent)})
            optimizer.zero_grad()
            if step % 50 == 0 or step == args.steps:
                rate = step / (time.perf_counter() - start)
                print(f"step {step}: loss {loss.item():.4f}, scale {scaler.get_scale():g} "
                      f"({rate:.1f} steps/s)", flush=True)
            if args.delay_ms > 0:
                time.sleep(args.delay_ms / 1000)
    print(f"Done: {emulation.run_dir} (precision-lab-cli export {emulation.run_dir} writes its "
          f"CSV files)")


if __name__ == "__main__":
    main()
