"""A watched PyTorch training that runs until it is killed (test_watch's SIGKILL test):
python3 watched_script.py RUN_DIR. Prints "step N" after each step."""

import os
import sys

sys.path.insert(0, os.environ.get("PLAB_PYTHON_PATH", ""))

import torch  # noqa: E402

import precision_lab.torch as plt  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
watcher = plt.watch(model, sys.argv[1], every=1)
step = 0
while True:
    x = torch.randn(32, 64)
    loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 10, (32,)))
    loss.backward()
    optimizer.step()
    watcher.step(loss=loss, lr=0.05)
    optimizer.zero_grad()
    step += 1
    print(f"step {step}", flush=True)
