"""The Python module's tests: run by CTest (label python) as
``/usr/bin/python3 -m pytest tests/python`` with PLAB_PYTHON_PATH (the build's python/ folder)
and PLAB_CLI (precision-lab-cli). Without torch, the watcher's tests skip with the reason; on CI
(CI=true) a missing torch is a failure, since CI installs it."""

import os
import sys

import pytest

sys.path.insert(0, os.environ.get("PLAB_PYTHON_PATH", ""))


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"torch is missing on CI, which installs python3-torch: {e}")
        pytest.skip(f"torch is not installed for {sys.executable} (apt-get install "
                    f"python3-torch): {e}")
    import torch
    return torch


@pytest.fixture
def torch():
    return require_torch()


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("PLAB_CLI")
    if not path or not os.path.exists(path):
        pytest.fail("PLAB_CLI does not name precision-lab-cli (CTest sets it)")
    return path


def tied_model(torch):
    """nanoGPT's tie in small: lm_head.weight is wte.weight (one tensor, two modules)."""

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(32, 16)
            self.lm_head = torch.nn.Linear(16, 32, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, x):
            return self.lm_head(self.wte(x))

    return Tied()
