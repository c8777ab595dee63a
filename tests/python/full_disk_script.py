"""Trains a small MLP for 300 steps, watched or emulated into RUN_DIR, with files limited to
LIMIT bytes (RLIMIT_FSIZE: a write past it fails as on a full disk). Prints the observer's
`failed` and `error` and the steps trained. Usage: full_disk_script.py watch|emulate RUN_DIR LIMIT"""
import resource
import signal
import sys

import torch

import precision_lab.torch as pt

mode, run_dir, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
observer = (pt.watch(model, run_dir, every=1) if mode == "watch"
            else pt.emulate(model, "fp8-hybrid", run_dir, histograms_every=1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
trained = 0
for step in range(300):
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    observer.step(loss=loss)
    opt.zero_grad()
    trained += 1
observer.close()
print(f"trained={trained} failed={observer.failed} error={observer.error}")
