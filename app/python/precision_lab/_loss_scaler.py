"""precision_lab.torch.LossScaler: the core's loss-scaling policies with GradScaler's methods, on
any device (torch 1.13's GradScaler runs only on CUDA).

    scaler = LossScaler("dynamic")                 # or "static", "enhanced", "none", a preset
    for x, y in data:
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)                     # skipped when a gradient overflowed
        scaler.update()
        optimizer.zero_grad()

The policy is the core's own (``core/train/dynamic_scaler.cpp``, the code ``precision-lab-cli
train`` runs): static; dynamic (GradScaler's rule with Megatron's minimum and hysteresis);
Mellempudi et al.'s enhanced scaling (a floor that rises on a schedule); and the tensor-scaling
policies (amax-*, mx, nvfp4, blockwise), under which the loss scale stays fixed and the recipe
scales each tensor instead. Settings are the config's ``scaling.*`` keys (``scale``,
``growth_interval``, ``hysteresis``, ``floor``...; docs/config.md). Per-layer scaling (Zhao et
al.) scales the gradients a layer passes down inside backward: it is not a loss scaler.
"""

import json
import math

import torch

from . import _core

_POLICIES = ("none", "static", "dynamic", "enhanced")


def scaling_config(policy="dynamic", **settings):
    """The config document of a scaling policy (``{"scaling": {...}}``), checked by the core."""
    scaling = {"policy": policy}
    scaling.update(settings)
    return {"scaling": scaling}


class LossScaler:
    def __init__(self, policy="dynamic", *, init_scale=None, model=None, **settings):
        """``policy``: a scaling policy name (none, static, dynamic, enhanced, amax-current,
        amax-delayed, mx, nvfp4, blockwise) or a config document (a dict holding "scaling").
        ``init_scale``: the starting scale (the config's ``scaling.scale``). ``model``: names
        the module whose gradient overflowed first in the skip's event. Further keywords are
        ``scaling.*`` settings (``growth_interval=2000``, ``hysteresis=2``, ``floor=256``...)."""
        if isinstance(policy, dict):
            config = json.loads(json.dumps(policy))
        else:
            if not isinstance(policy, str):
                raise TypeError(f"policy is a {type(policy).__name__}: expected a policy name or "
                                f"a config document")
            if policy == "per-layer":
                raise ValueError("policy 'per-layer' (Zhao et al.) scales gradients inside "
                                 "backward, layer by layer: it is not a loss scaler (train "
                                 "with precision-lab-cli --preset fp16-zhao)")
            config = scaling_config(policy, **settings)
            settings = {}
        if settings:
            config.setdefault("scaling", {}).update(settings)
        if init_scale is not None:
            config.setdefault("scaling", {})["scale"] = float(init_scale)
        if config.get("scaling", {}).get("policy") == "per-layer":
            raise ValueError("scaling.policy 'per-layer' is not a loss scaler: see LossScaler")
        # The core checks every key and value (ValueError naming config.scaling.KEY).
        self._core = _core.LossScaler(json.dumps(config))
        self._config = config
        self._names = {}
        if model is not None:
            self._names = {id(p): n for n, p in model.named_parameters()}
        self._unscaled = {}  # id(optimizer) -> the first overflowing parameter's name, or ""
        self._found_inf = False
        self._first_overflow = None
        self.last_decision = None  # (skipped, reason) of the last update()

    # -- GradScaler's methods --------------------------------------------------------------
    def is_enabled(self):
        return True

    def get_scale(self):
        """The scale the next backward uses."""
        return self._core.scale

    @property
    def policy(self):
        return self._core.name

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple of them) multiplied by the scale."""
        s = self._core.scale
        if isinstance(outputs, torch.Tensor):
            return outputs * s
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"scale() takes a tensor or a list of tensors, not "
                        f"{type(outputs).__name__}")

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale, in place, and notes any Inf/NaN."""
        key = id(optimizer)
        if key in self._unscaled:
            raise RuntimeError("unscale_() was already called on this optimizer since the last "
                               "update()")
        inverse = 1.0 / self._core.scale
        first = ""
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not first and not bool(torch.isfinite(p.grad).all()):
                    first = self._names.get(id(p), f"a {tuple(p.shape)} parameter")
                p.grad.mul_(inverse)
        self._unscaled[key] = first
        if first:
            self._found_inf = True
            if self._first_overflow is None:
                self._first_overflow = first
        return first == ""

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless a gradient overflowed (then skipped: returns None)."""
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Ends the step: the core's policy decides the next scale (or ``new_scale`` sets it)."""
        skipped, reason = self._core.update(self._found_inf)
        if self._found_inf and self._first_overflow:
            reason += f"; first Inf/NaN: weight_gradients of {self._first_overflow}"
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, torch.Tensor) else new_scale)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"new_scale {new_scale!r}: expected a finite positive number")
            self._core.set_scale(value)
        self.last_decision = (skipped, reason)
        self._unscaled.clear()
        self._found_inf = False
        self._first_overflow = None

    def _reconfigure(self, config):
        """Another policy or its settings from now on (an emulated run steered from the app)."""
        self._core = _core.LossScaler(json.dumps(config))
        self._config = config

    def state_dict(self):
        state = dict(self._core.state())
        state["config"] = self._config
        return state

    def load_state_dict(self, state):
        if not isinstance(state, dict) or "scale" not in state:
            raise ValueError("load_state_dict: expected a dict from LossScaler.state_dict()")
        self._core.set_state({k: v for k, v in state.items() if k != "config"})

    def __repr__(self):
        return f"LossScaler({self.policy}, scale={self.get_scale():g})"
