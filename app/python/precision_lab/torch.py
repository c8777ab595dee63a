"""precision_lab.torch: your own PyTorch training, recorded live (``watch``: judged in several
formats as it runs) or trained under one of the core's recipes (``emulate``: the recipe's casts in
place of the model's products, every cast counted; ``LossScaler``: the core's loss-scaling
policies with GradScaler's methods, on any device). Both record into run records the app follows.

This module is the package's PyTorch face, as torchao's float8 package is: the names below and
nothing else (``dir()`` shows them); the work is in the private modules (``_watch``: the watcher,
``_emulate`` and ``_emulated_ops``: the emulation and its module types, ``_loss_scaler``,
``_sweep``), whose documentation says what each does. docs/python.md is the user's guide.
"""

from ._emulate import ALIASES, Emulation, emulate, register_emulated_type, resolve_recipe
from ._emulated_ops import Site, emulated_convolution, emulated_embedding, emulated_linear
from ._loss_scaler import LossScaler
from ._sweep import seed_from_sweep
from ._watch import DEFAULT_FORMATS, ROLES, Watcher, watch

__all__ = ["watch", "Watcher", "DEFAULT_FORMATS", "ROLES", "emulate", "Emulation",
           "LossScaler", "resolve_recipe", "ALIASES", "seed_from_sweep",
           # Another module type emulated: register_emulated_type(MyLinear, forward), forward
           # computing through these operators, one Site per product.
           "register_emulated_type", "emulated_linear", "emulated_convolution",
           "emulated_embedding", "Site"]
