"""The repository's fixtures are made from the repository alone: make_gpt_fixture.py (with the
project's own baseline, tests/baselines/tiny_gpt_torch.py) writes gpt_peer_fixture.bin again, the
same weights, batch and loss bit for bit, and the same gradients up to PyTorch's summation order
on this CPU (normalised error below 1e-5, the bound test_gpt_model holds our model to; measured 5.8e-7 on this machine against the committed file)."""

import os
import struct
import subprocess
import sys

import numpy as np

from conftest import require_torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "tests", "gpt", "gpt_peer_fixture.bin")


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    dims = struct.unpack("<7i", data[4:32])
    v, t, c, h, l, b, time = dims
    head = 32 + 2 * b * time
    loss = struct.unpack("<d", data[head:head + 8])[0]
    floats = np.frombuffer(data[head + 8:], dtype="<f4")
    n = floats.size // 2
    return data[:head + 8], loss, floats[:n], floats[n:]


def test_gpt_fixture_regenerates(tmp_path):
    require_torch()
    out = tmp_path / "gpt_peer_fixture.bin"
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpt", "make_gpt_fixture.py"),
                    str(out)], check=True, cwd=tmp_path, capture_output=True)
    head, loss, params, grads = read(out)
    want_head, want_loss, want_params, want_grads = read(FIXTURE)
    assert head == want_head  # dimensions, tokens, targets and the loss's bits
    assert loss == want_loss
    assert np.array_equal(params.view(np.uint32), want_params.view(np.uint32))
    error = np.abs(grads.astype(np.float64) - want_grads).max() / np.abs(want_grads).max()
    assert error < 1e-5, f"gradients: normalised error {error:.3g}"
