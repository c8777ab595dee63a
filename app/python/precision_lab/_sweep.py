"""What a script learns from the sweep that started it, and the metrics it reports of its own.

``precision-lab-cli sweep --recipes fp32,fp8-current --seeds 5 --out DIR -- python3 train.py``
starts the script once per recipe and seed, each child with these environment variables
(docs/training.md, "Your own script"):

    PLAB_SWEEP_RUN_DIR       the run folder the child records into (DIR/<recipe>/seed-<k>)
    PLAB_SWEEP_RECIPE        a JSON file: the recipe as a config document ({"preset": ...} or
                             the advice file's content), resolved by the sweep
    PLAB_SWEEP_RECIPE_NAME   the recipe's name in the sweep's table
    PLAB_SWEEP_SEED          the seed, 1..N

``emulate(model)`` and ``watch(model)`` without a recipe or run folder take them from there;
``seed_from_sweep()`` seeds torch, numpy and random with the seed.
"""

import numbers
import os
import random
import re

from ._arguments import check_whole

RUN_DIR = "PLAB_SWEEP_RUN_DIR"
RECIPE = "PLAB_SWEEP_RECIPE"
RECIPE_NAME = "PLAB_SWEEP_RECIPE_NAME"
SEED = "PLAB_SWEEP_SEED"

_HOW = ("run the script under `precision-lab-cli sweep --recipes ... --seeds N --out DIR -- "
        "python3 SCRIPT`, which sets " + RUN_DIR + ", " + RECIPE + " and " + SEED)


class SweepRun:
    """The run a sweep gave this process: its folder, recipe file and name, and seed."""

    def __init__(self, run_dir, recipe, recipe_name, seed):
        self.run_dir, self.recipe, self.recipe_name, self.seed = run_dir, recipe, recipe_name, seed


def current():
    """The sweep's run of this process, or None outside a sweep. ValueError when the variables
    are there but malformed (a sweep always sets them whole)."""
    run_dir = os.environ.get(RUN_DIR)
    if not run_dir:
        return None
    recipe = os.environ.get(RECIPE, "")
    seed_text = os.environ.get(SEED, "")
    if not recipe:
        raise ValueError(f"{RUN_DIR} is set but {RECIPE} is not: {_HOW}")
    if not re.fullmatch(r"[0-9]{1,9}", seed_text):
        raise ValueError(f"{SEED}={seed_text!r}: expected a whole number (the sweep's seed)")
    return SweepRun(run_dir, recipe, os.environ.get(RECIPE_NAME, ""), int(seed_text))


def required(what):
    """The sweep's run, for a call that left out what a sweep gives; ValueError outside one."""
    run = current()
    if run is None:
        raise ValueError(f"{what}: outside a sweep it needs them given; or {_HOW}")
    return run


def seed_from_sweep(default=0):
    """Seeds Python's random, numpy (when installed) and torch (CPU and every CUDA device) with
    the sweep's seed, or with ``default`` outside a sweep; returns the seed used. Call it before
    the model is built, so that its initial weights are the seed's."""
    check_whole("default", default, 0)
    run = current()
    seed = int(default) if run is None else run.seed
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    import torch
    torch.manual_seed(seed)  # every CUDA device's too
    return seed


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def metrics_argument(metrics):
    """step(metrics=...) as {name: float}: names a table column can hold (a letter or '_',
    then letters, digits, '_', '.', '-'; 64 at most), values numbers or 0-d tensors (NaN and
    infinities are recorded as they are)."""
    if metrics is None:
        return {}
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics is a {type(metrics).__name__}: expected a dict of name -> "
                        f"number")
    out = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"metrics: name {name!r}: expected a letter or '_', then letters, "
                             f"digits, '_', '.' or '-' (64 at most)")
        if hasattr(value, "detach") and hasattr(value, "numel"):  # a tensor
            if value.numel() != 1:
                raise ValueError(f"metrics[{name!r}]: a tensor of {value.numel()} values: "
                                 f"expected one")
            value = value.detach().float().item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"metrics[{name!r}] is a {type(value).__name__}: expected a number")
        out[name] = float(value)
    return out
