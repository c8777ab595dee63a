"""A user's training script as a script sweep runs it (test_script_sweep.py): a small MLP on a
fixed synthetic task, emulated under the sweep's recipe, seeded by the sweep, reporting its
loss and a held-out loss. Its options make the faults the sweep must report under one recipe
while the others run: --fail-under R (an exception), --nan-under R (a NaN loss); --no-step (it
never records), --args-to FILE (writes its argv), --sleep S (a slow run, to be stopped)."""

import argparse
import json
import os
import sys
import time

import torch

from precision_lab.torch import emulate, seed_from_sweep

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--fail-under", help="raise under this recipe (PLAB_SWEEP_RECIPE_NAME)")
parser.add_argument("--nan-under", help="a NaN loss at the last step under this recipe")
parser.add_argument("--no-step", action="store_true")
parser.add_argument("--sleep", type=float, default=0.0, help="seconds after each step")
parser.add_argument("--args-to")
parser.add_argument("rest", nargs="*")
args = parser.parse_args()
if args.args_to:
    with open(args.args_to, "w", encoding="utf-8") as f:
        json.dump(sys.argv[1:], f)

torch.set_num_threads(1)
seed = seed_from_sweep()
# The task's data is the same for every seed; only the model's start and the batches vary.
data = torch.Generator().manual_seed(1234)
x = torch.randn(512, 16, generator=data)
y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
x_val = torch.randn(256, 16, generator=data)
y_val = (x_val[:, :4].sum(dim=1, keepdim=True) > 0).float()

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
loss_fn = torch.nn.BCEWithLogitsLoss()
if args.no_step:
    sys.exit(0)
recipe = os.environ.get("PLAB_SWEEP_RECIPE_NAME")
em = emulate(model)
order = torch.Generator().manual_seed(seed)
for step in range(1, args.steps + 1):
    batch = torch.randint(0, x.shape[0], (64,), generator=order)
    loss = loss_fn(model(x[batch]), y[batch])
    if args.nan_under == recipe and step == args.steps:
        loss = loss * float("nan")
    em.scaler.scale(loss).backward()
    em.scaler.step(optimizer)
    em.scaler.update()
    with torch.no_grad():
        val_loss = loss_fn(model(x_val), y_val)
    em.step(loss=loss, metrics={"val_loss": val_loss})
    optimizer.zero_grad()
    if args.fail_under == recipe and step == 3:
        raise ValueError("the script failed on purpose at step 3")
    time.sleep(args.sleep)
em.remove()
