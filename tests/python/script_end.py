"""A script that trains a few steps watched (or emulated) and ends without close(): normally,
by Ctrl-C or by an exception. Usage: script_end.py watch|emulate RUN_DIR normal|ctrl-c|error"""
import sys

import torch

import precision_lab.torch as pt

mode, run_dir, ending = sys.argv[1:4]
model = torch.nn.Linear(8, 2)
observer = (pt.watch(model, run_dir, every=1) if mode == "watch"
            else pt.emulate(model, "bf16", run_dir))
for _ in range(3):
    model(torch.randn(4, 8)).sum().backward()
    observer.step(loss=1.0)
if ending == "ctrl-c":
    raise KeyboardInterrupt
if ending == "error":
    raise ValueError("a bad batch")
