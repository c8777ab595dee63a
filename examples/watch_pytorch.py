#!/usr/bin/python3
"""Train a small PyTorch network on Fashion-MNIST with Precision Lab watching it, then follow
the run live in the app:

    /usr/bin/python3 examples/watch_pytorch.py --out runs/watched &
    build/default/app/precision-lab --open runs/watched

Models: a small CNN (default) or an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist), or a
tiny GPT on the text of Debian's fortunes package (--model gpt). Precision: bfloat16 autocast
(default), an fp16-style static loss scale that the script multiplies into the loss and divides
out of the gradients (--precision fp16-scaled; gradients are then judged at that scale), or FP32.

Needs python3-torch and the precision_lab module (the build's python/ folder, found by itself
when run from a checkout; installed by the .deb).
"""

import argparse
import gzip
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for candidate in (os.path.join(HERE, "..", "build", "default", "python"),):
    if os.path.isdir(os.path.join(candidate, "precision_lab")):
        sys.path.insert(0, os.path.abspath(candidate))

try:
    import numpy as np
    import torch
except ImportError as e:
    sys.exit(f"watch_pytorch: {e}: run it with Debian's /usr/bin/python3 and "
             f"apt-get install python3-torch python3-numpy")
try:
    import precision_lab.torch as plt
except ImportError as e:
    sys.exit(f"watch_pytorch: {e}: build the module first (packaging/quickstart.sh run), or "
             f"install the .deb")

FASHION = "/usr/share/datasets/fashion-mnist"
FORTUNES = "/usr/share/games/fortunes"


def read_idx(path):
    """An IDX file (gzip), as numpy: images (n, 28, 28) uint8 or labels (n,) uint8."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_batches(batch, seed):
    images = os.path.join(FASHION, "train-images-idx3-ubyte.gz")
    if not os.path.exists(images):
        sys.exit(f"watch_pytorch: {images} is missing: apt-get install dataset-fashion-mnist")
    x = torch.from_numpy(read_idx(images).astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.2860) / 0.3530
    y = torch.from_numpy(read_idx(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
                         .astype(np.int64))
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(x), generator=g)
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i:i + batch]
            yield x[idx], y[idx]


def fortunes_batches(batch, context, seed):
    if not os.path.isdir(FORTUNES):
        sys.exit(f"watch_pytorch: {FORTUNES} is missing: apt-get install fortunes")
    text = b""
    for name in sorted(os.listdir(FORTUNES)):
        path = os.path.join(FORTUNES, name)
        if os.path.isfile(path) and not name.endswith(".dat") and not os.path.islink(path):
            with open(path, "rb") as f:
                text += f.read()
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    g = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(data) - context - 1, (batch,), generator=g)
        x = torch.stack([data[s:s + context] for s in starts])
        y = torch.stack([data[s + 1:s + context + 1] for s in starts])
        yield x, y


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 256)
        self.fc2 = torch.nn.Linear(256, 256)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.head(torch.relu(self.fc2(x)))


class TinyGpt(torch.nn.Module):
    """A byte-level GPT: token and position embeddings, pre-norm blocks of causal self-attention
    and a GELU MLP, a final LayerNorm and a linear head."""

    def __init__(self, context=64, width=128, heads=4, blocks=2):
        super().__init__()
        self.tokens = torch.nn.Embedding(256, width)
        self.positions = torch.nn.Embedding(context, width)
        layer = lambda: torch.nn.TransformerEncoderLayer(  # noqa: E731
            width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True,
            norm_first=True)
        self.blocks = torch.nn.ModuleList(layer() for _ in range(blocks))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, 256)
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")),
                                                diagonal=1))

    def forward(self, x):
        t = x.shape[1]
        h = self.tokens(x) + self.positions(torch.arange(t, device=x.device))
        for block in self.blocks:
            h = block(h, src_mask=self.mask[:t, :t])
        return self.head(self.norm(h))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=time.strftime("runs/watch-%Y%m%d-%H%M%S"),
                        help="run folder to record into (default: runs/watch-<date>-<time>)")
    parser.add_argument("--model", choices=("cnn", "mlp", "gpt"), default="cnn")
    parser.add_argument("--precision", choices=("bf16", "fp16-scaled", "fp32"), default="bf16")
    parser.add_argument("--loss-scale", type=float, default=2.0 ** 10,
                        help="the static loss scale of --precision fp16-scaled")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=10, help="statistics every N steps")
    parser.add_argument("--formats", default=",".join(plt.DEFAULT_FORMATS),
                        help="formats to judge every tensor in (comma-separated)")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="pause after each step, to watch a short run go by")
    parser.add_argument("--threads", type=int, default=1, help="torch's threads")
    parser.add_argument("--overwrite", action="store_true", help="replace a record in --out")
    args = parser.parse_args()
    if args.steps < 1 or args.every < 1 or args.loss_scale <= 0:
        parser.error("--steps, --every and --loss-scale must be positive")

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    if args.model == "gpt":
        model, batches, lr = TinyGpt(), fortunes_batches(16, 64, 0), 1e-3
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    else:
        model = SmallCnn() if args.model == "cnn" else Mlp()
        batches, lr = fashion_batches(128, 0), 0.05
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scale = args.loss_scale if args.precision == "fp16-scaled" else None
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with plt.watch(model, args.out, formats=formats, every=args.every, loss_scale=scale,
                   overwrite=args.overwrite) as watcher:
        print(f"Recording into {args.out}: open it in the app to follow the run live:\n"
              f"  precision-lab --open {args.out}", flush=True)
        start = time.perf_counter()
        for step in range(1, args.steps + 1):
            x, y = next(batches)
            with torch.autocast("cpu", dtype=torch.bfloat16,
                                enabled=args.precision == "bf16"):
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, -2),
                                                         y.flatten())
            if scale is None:
                loss.backward()
            else:  # an fp16-style static loss scale: multiplied in, divided out before the step
                (loss * scale).backward()
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad /= scale
            optimizer.step()
            watcher.step(loss=loss, lr=lr)
            optimizer.zero_grad()
            if step % 100 == 0 or step == args.steps:
                rate = step / (time.perf_counter() - start)
                print(f"step {step}: loss {loss.item():.4f} ({rate:.0f} steps/s)", flush=True)
            if args.delay_ms > 0:
                time.sleep(args.delay_ms / 1000)
    if watcher.dropped_steps:
        print(f"{watcher.dropped_steps} statistics steps were dropped (the counting fell "
              f"behind; see the run's events)")
    print(f"Done: {args.out} (precision-lab-cli export {args.out} writes its CSV files)")


if __name__ == "__main__":
    main()
