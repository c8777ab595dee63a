"""precision_lab.torch.watch: a live, format-aware record of your own PyTorch training.

    watcher = precision_lab.torch.watch(model, "runs/mine")
    for x, y in data:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        watcher.step(loss=loss)        # after the optimiser step, before zero_grad()
        optimizer.zero_grad()
    watcher.close()

Every ``every``-th step (the first one included) the watcher copies, for each module that holds
parameters (Linear, Conv*, Embedding, LayerNorm, attention, ...), its input (activations), its
weight as forward used it (weights), the gradient of its output (activation_gradients, in
backward) and its weight's gradient (weight_gradients, at ``step()``). A counting thread in the
core judges each copy in every format (exact class counts, amax, error, histogram, per-block
statistics for block formats), or as a framework recipe casts it (``fp8-current``,
``fp8-delayed``, ``fp8-block``, ``mxfp8``, ``nvfp4``: scaled per tensor or per block, as
Transformer Engine casts; the weight gradient, a product's output, is not a recipe's cast;
docs/advise.md), and writes each step as one transaction of a run record that the
app follows live (``precision-lab --open DIR``), ``precision-lab-cli export`` reads and
``precision_lab.open_run`` loads.

Loss scaling: ``loss_scale`` is None (no scaling), a number, a callable returning the scale, or
a ``torch.cuda.amp.GradScaler``. Activation gradients carry the scale in backward and are judged
as they are; weight gradients are read at ``step()``, after the optimiser step, where a
GradScaler (and any correct mixed-precision loop) has divided the scale out again, so they are
multiplied by the step's scale to be judged as backward produced them. The record's grad_scale
says which scale that was.

Which modules: ``modules`` is None (every module with parameters of its own), a name pattern
or a list of them (shell-style, as ``fnmatch``: "blocks.*.attn", "head"; matched against the
names ``named_modules()`` gives; a module's exact name names it alone, even one holding ``[``),
or a filter ``(module, fqn) -> bool`` (torchao's ``module_filter_fn`` order; the earlier
``(name, module)`` order works with a DeprecationWarning). A pattern that
matches no such module is an error naming it, so a typo does not silently watch nothing.

CUDA tensors are copied to the host at capture (the counting runs on the CPU).

Distributed runs: inside a torch.distributed process group each rank records into
``run_dir/rank-<r>`` (``ranks=`` records only those ranks).
"""

import atexit
import functools
import json
import numbers
import sys
import weakref

import torch

from . import _core
from . import _distributed
from . import _script_end
from ._arguments import check_whole
from . import _selection
from . import _sweep
from ._emulate import _check_threads
from ._record_failure import RecordFailure

# BF16 and FP16, then the frameworks' recipes as they cast (core/train/recipe_candidates.h):
# what the advisor's default ladder advises from.
DEFAULT_FORMATS = ("bf16", "fp16", "fp8-current", "fp8-delayed", "fp8-block", "mxfp8", "nvfp4")
ROLES = ("weights", "activations", "activation_gradients", "weight_gradients")

def watch(model, run_dir=None, formats=DEFAULT_FORMATS, every=10, roles=ROLES, loss_scale=None,
          queue_steps=4, threads=1, overwrite=False, modules=None, ranks=None):
    """Starts watching ``model``, recording into ``run_dir``; returns the Watcher (also a
    context manager). Under ``precision-lab-cli sweep ... -- python3 SCRIPT`` a run_dir left
    out is the sweep's run folder (replaced). See the module's documentation."""
    return Watcher(model, run_dir, formats=formats, every=every, roles=roles,
                   loss_scale=loss_scale, queue_steps=queue_steps, threads=threads,
                   overwrite=overwrite, modules=modules, ranks=ranks)


def _select_modules(model, modules):
    """The (name, module) pairs to watch, in ``named_modules()`` order, and how they were
    chosen (for the record): see the module's documentation."""
    named = [(name or type(model).__name__, m) for name, m in model.named_modules()
             if _watched(m)]
    if not named:
        raise ValueError(f"{type(model).__name__} has no module with parameters to watch")
    return _selection.choose(type(model).__name__, named, modules, "with parameters")


def _functional_children(model, watched):
    """Watched modules whose parent uses their weight functionally and never runs their forward:
    nn.MultiheadAttention's out_proj (F.multi_head_attention_forward takes out_proj.weight; also
    inside TransformerEncoderLayer). [(parent, [child stage, ...])]."""
    stage_of = {id(m): stage for stage, (_, m) in enumerate(watched)}
    return [(m, [stage_of[id(m.out_proj)]]) for _, m in model.named_modules()
            if isinstance(m, torch.nn.MultiheadAttention) and id(m.out_proj) in stage_of]


# The modules whose product torch.autocast runs in its lower dtype (its weight cast to it): the
# weight forward used is that cast, not the float32 parameter the optimiser holds.
_AUTOCAST_PRODUCTS = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def _as_forward_used(module, w):
    """``w`` as the module's forward used it: under torch.autocast a product's weight is cast to
    the autocast dtype (bf16, fp16) first; otherwise the parameter itself."""
    if not isinstance(module, _AUTOCAST_PRODUCTS) or w.dtype != torch.float32:
        return w
    if w.device.type == "cuda" and torch.is_autocast_enabled():
        return w.to(torch.get_autocast_gpu_dtype())
    if w.device.type == "cpu" and torch.is_autocast_cpu_enabled():
        return w.to(torch.get_autocast_cpu_dtype())
    return w


def _watched(module):
    """A module with parameters of its own (Linear, Conv*, Embedding, LayerNorm, attention...)."""
    return any(True for _ in module.parameters(recurse=False))


def _host_float32(t):
    """A float32, contiguous host copy or view of ``t`` that numpy can read."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    if t.dtype != torch.float32:
        t = t.float()
    if not t.is_contiguous():
        t = t.contiguous()
    return t.numpy()


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            if isinstance(v, torch.Tensor):
                return v
    return None


def _weight_of(module):
    w = getattr(module, "weight", None)
    if isinstance(w, torch.Tensor):
        return w
    for p in module.parameters(recurse=False):
        return p
    return None


def _describe_scale(loss_scale):
    if loss_scale is None:
        return None
    if isinstance(loss_scale, numbers.Real):
        return float(loss_scale)
    return type(loss_scale).__name__


class Watcher(RecordFailure):
    def __init__(self, model, run_dir=None, formats=DEFAULT_FORMATS, every=10, roles=ROLES,
                 loss_scale=None, queue_steps=4, threads=1, overwrite=False, modules=None,
                 ranks=None):
        if run_dir is None:  # the sweep's member folder, its own to replace
            run_dir = _sweep.required("watch(model) without a run folder records into the "
                                      "sweep's").run_dir
            overwrite = True
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model is a {type(model).__name__}: expected a torch.nn.Module")
        if isinstance(formats, str):
            formats = (formats,)
        formats = list(formats)
        if not formats:
            raise ValueError("formats is empty: name at least one (e.g. 'fp8-e4m3')")
        check_whole("every", every, 1, unit="steps")
        if isinstance(roles, str):
            roles = (roles,)
        roles = tuple(roles)
        unknown = [r for r in roles if r not in ROLES]
        if unknown or not roles:
            raise ValueError(f"roles {unknown or roles!r}: expected some of {', '.join(ROLES)}")
        if loss_scale is not None and not (isinstance(loss_scale, numbers.Real)
                                           or callable(loss_scale)
                                           or hasattr(loss_scale, "get_scale")):
            raise TypeError(f"loss_scale is a {type(loss_scale).__name__}: expected None, a "
                            f"number, a callable or a GradScaler")
        _check_threads(threads)
        check_whole("queue_steps", queue_steps, 1,
                    unit="statistics steps that may wait to be counted")
        if isinstance(loss_scale, numbers.Real) and not (0 < float(loss_scale) < float("inf")):
            raise ValueError(f"loss_scale {loss_scale!r}: expected a finite positive number")
        self._modules, selection = _select_modules(model, modules)
        run_dir, rank, recorded = _distributed.rank_folder(run_dir, ranks)
        if not recorded:
            raise ValueError(f"rank {rank} is not among ranks {sorted(ranks)}: a watcher records "
                             f"(watch only the ranks to record: `if rank in ranks: watch(...)`)")
        self._model = model
        self._every = int(every)
        self._roles = frozenset(roles)
        self._loss_scale = loss_scale
        # A weight two modules share (tied embeddings: nanoGPT's lm_head.weight is
        # transformer.wte.weight) is one tensor: recorded once, under its first module.
        self._tied, tied = set(), {}
        owners = {}
        for stage, (name, module) in enumerate(self._modules):
            w = _weight_of(module)
            if w is None:
                continue
            if id(w) in owners:
                self._tied.add(stage)
                tied.setdefault(owners[id(w)], []).append(f"{name}.weight")
            else:
                owners[id(w)] = f"{name}.weight"
        functional = _functional_children(model, self._modules)
        unseen = {self._modules[c][0]: ["activations"] for _, cs in functional for c in cs}
        description = {
            "model": type(model).__name__,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "roles": list(roles),
            "loss_scale": _describe_scale(loss_scale),
            "modules": [{"name": n, "type": type(m).__name__} for n, m in self._modules],
            "rank": rank,
        }
        if selection is not None:  # a chosen subset: say how it was chosen
            description["module_selection"] = selection
        if unseen:
            description["not_recorded"] = unseen
        if tied:
            description["tied_weights"] = [{"parameter": p, "aliases": a}
                                           for p, a in tied.items()]
        # The core checks the formats (ValueError with the CLI's message) and the folder
        # (OSError: locked by another run, or holding one and overwrite is off).
        self._recorder = _core.Recorder(str(run_dir), formats, [n for n, _ in self._modules],
                                        self._every, int(queue_steps), int(threads),
                                        json.dumps(description), bool(overwrite))
        for name in unseen:
            self._recorder.event(0, "note", f"{name}: MultiheadAttention calls it functionally, "
                                            f"so its input (activations) stays inside the "
                                            f"attention and is not recorded; its weights, "
                                            f"activation gradients (the attention's output "
                                            f"gradient) and weight gradients are")
        for parameter, aliases in tied.items():
            self._recorder.event(0, "note", f"{', '.join(aliases)} is {parameter} (tied): its "
                                            f"weights and weight gradients are recorded once, "
                                            f"under {parameter.rsplit('.', 1)[0]}")
        self.run_dir = str(run_dir)
        self.formats = tuple(self._recorder.formats)
        self._step = 1
        self._capturing = True
        self._captured = set()
        self._scale = None  # the scale of the step under way, read at its first forward
        self._missing_grads = set()
        self._closed = False
        self._handles = [model.register_forward_pre_hook(self._on_model_forward)]
        for stage, (_, module) in enumerate(self._modules):
            self._handles.append(
                module.register_forward_hook(functools.partial(self._on_forward, stage)))
        # A child its parent calls functionally (MHA's out_proj): its weights and output
        # gradient are taken at the parent's forward (the parent's output is the child's); its
        # input stays inside the attention and is not recorded, which the record says.
        for parent, children in functional:
            self._handles.append(parent.register_forward_hook(
                functools.partial(self._on_functional_parent, children)))
        # A script that ends without close() (an exception, Ctrl-C outside a with block) still
        # leaves a summary saying so.
        ref = weakref.ref(self)
        _script_end.install()
        self._atexit = lambda: (ref() is not None and
                                ref()._close_quietly(*_script_end.ending("close()")))
        atexit.register(self._atexit)

    # -- what the user calls ------------------------------------------------------------
    @property
    def step_number(self):
        """The step under way (1-based): the one the next ``step()`` records."""
        return self._step

    @property
    def dropped_steps(self):
        """Statistics steps dropped because the counting queue was full (each is an event)."""
        return self._recorder.dropped_steps

    def step(self, loss=None, lr=None, metrics=None):
        """Ends a training step: call it after ``optimizer.step()`` and before ``zero_grad()``.
        ``loss`` (a number or a 0-d tensor) and ``lr`` are recorded when given; ``metrics``, the
        script's own numbers of this step ({"val_loss": ...}), too (a sweep compares their
        last values). A record that
        cannot be written (a full disk) stops the recording, never the training: ``failed``
        and ``error`` say why, and stderr once."""
        if self._closed:
            raise RuntimeError(f"the watcher of {self.run_dir} is closed")
        if self._error is not None:
            self._step += 1
            return
        metrics = _sweep.metrics_argument(metrics)
        try:
            self._record_step(loss, lr, metrics)
        except OSError as e:
            self._fail(e)

    def _record_step(self, loss, lr, metrics):
        scale = self._scale if self._scale is not None else self._current_scale()
        if self._capturing and "weight_gradients" in self._roles:
            for stage, (name, module) in enumerate(self._modules):
                if stage in self._tied:
                    continue
                w = _weight_of(module)
                if w is None or w.grad is None:
                    if name not in self._missing_grads and w is not None and w.requires_grad:
                        self._missing_grads.add(name)
                        self._recorder.event(self._step, "note",
                                             f"{name}: no weight gradient at step(): call "
                                             f"step() before zero_grad()")
                    continue
                self._capture(stage, "weight_gradients", w.grad, self._rows_of_weight(w),
                              multiplier=scale)
        if isinstance(loss, torch.Tensor):
            loss = loss.detach().float().item()
        self._recorder.submit(self._step, None if loss is None else float(loss),
                              None if lr is None else float(lr), float(scale), self._capturing,
                              metrics)
        self._step += 1
        self._capturing = (self._step - 1) % self._every == 0
        self._captured.clear()
        self._scale = None

    def flush(self):
        """Waits until every step handed over is in the record."""
        self._recorder.flush()

    def close(self, reason="completed"):
        """Removes every hook, waits for the counting, writes the summary and closes the record
        (its CSV/JSONL exports written). Idempotent."""
        self._finish(reason, finished=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif issubclass(exc_type, KeyboardInterrupt):
            self._finish("interrupted (Ctrl-C)", finished=False)
        else:
            self._finish(f"stopped by {exc_type.__name__}: {exc}", finished=False)
        return False

    # -- hooks ---------------------------------------------------------------------------
    def _current_scale(self):
        s = self._loss_scale
        if s is None:
            return 1.0
        if isinstance(s, numbers.Real):
            return float(s)
        if hasattr(s, "get_scale"):
            enabled = getattr(s, "is_enabled", lambda: True)()
            return float(s.get_scale()) if enabled else 1.0
        return float(s())

    def _on_model_forward(self, module, inputs):
        if self._scale is None and torch.is_grad_enabled():
            self._scale = self._current_scale()  # before a GradScaler's update() changes it

    def _on_forward(self, stage, module, inputs, output):
        if not self._capturing or stage in self._captured or not torch.is_grad_enabled():
            return
        self._captured.add(stage)
        if "activations" in self._roles:
            x = _first_tensor(inputs)
            if x is not None and x.is_floating_point():
                self._capture(stage, "activations", x, self._rows_of_values(x))
        if "weights" in self._roles and stage not in self._tied:
            w = _weight_of(module)
            if w is not None and w.is_floating_point():
                self._capture(stage, "weights", _as_forward_used(module, w),
                              self._rows_of_weight(w))
        if "activation_gradients" in self._roles:
            y = _first_tensor(output)
            if y is not None and y.requires_grad:
                y.register_hook(functools.partial(self._on_output_grad, stage))

    def _on_functional_parent(self, children, module, inputs, output):
        if not self._capturing or not torch.is_grad_enabled():
            return
        for stage in children:
            if stage in self._captured:
                continue
            self._captured.add(stage)
            child = self._modules[stage][1]
            if "weights" in self._roles and stage not in self._tied:
                w = _weight_of(child)
                if w is not None and w.is_floating_point():
                    self._capture(stage, "weights", w, self._rows_of_weight(w))
            if "activation_gradients" in self._roles:
                y = _first_tensor(output)
                if y is not None and y.requires_grad:
                    y.register_hook(functools.partial(self._on_output_grad, stage))

    def _on_output_grad(self, stage, grad):
        if not self._closed and self._error is None:
            self._capture(stage, "activation_gradients", grad, self._rows_of_values(grad))

    def _capture(self, stage, role, tensor, rows, multiplier=1.0):
        self._recorder.capture(stage, role, _host_float32(tensor), rows, float(multiplier))

    @staticmethod
    def _rows_of_values(t):
        # Blocks along the last dimension, the one a following product reduces over.
        return t.shape[-1] if t.dim() >= 2 else 0

    @staticmethod
    def _rows_of_weight(w):
        # A weight (out, in, ...) is read by its product along everything but its outputs.
        return w.numel() // w.shape[0] if w.dim() >= 2 else 0

    # -- the end -------------------------------------------------------------------------
    def _remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def _fail(self, error):
        """An observer's failure: whole steps stay in the record, the training goes on."""
        self._recording_failed(error, self._step, "precision_lab.torch.watch",
                               "training goes on (watcher.error)")
        self._remove_hooks()
        self._step += 1

    def _finish(self, reason, finished):
        if self._closed:
            return
        self._closed = True
        self._remove_hooks()
        atexit.unregister(self._atexit)
        try:
            self._recorder.close(reason, finished)
        except OSError:
            if self._error is None:  # a failure not reported yet
                raise

    def _close_quietly(self, reason, finished=False):
        try:
            self._finish(reason, finished=finished)
        except Exception:  # at exit nothing can be reported; the record keeps its whole steps
            pass
