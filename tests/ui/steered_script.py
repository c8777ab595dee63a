"""A PyTorch script under precision_lab.torch.emulate for test_steer_run: the app follows its
run and steers it. A small MLP under fp16-amp whose gradients sit low enough that the loss
scale decides how much of them flushes; a step every 20 ms until STOP_FILE appears (at most
3000 steps).

    python3 steered_script.py RUN_DIR STOP_FILE
"""
import os
import sys
import time

import torch

from precision_lab.torch import emulate

run_dir, stop_file = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
em = emulate(model, "fp16-amp", run_dir, histograms_every=1)
x, y = torch.randn(64, 32), torch.randint(0, 8, (64,))
for step in range(3000):
    loss = torch.nn.functional.cross_entropy(model(x), y) * 1e-6  # small gradients
    em.scaler.scale(loss).backward()
    em.scaler.step(optimizer)
    em.scaler.update()
    em.step(loss=loss)
    optimizer.zero_grad()
    if os.path.exists(stop_file):
        break
    time.sleep(0.02)
em.remove()
