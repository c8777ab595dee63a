"""precision_lab.torch.emulate: your own PyTorch model trained under one of the core's recipes,
every cast counted into a run record the app follows.

    em = emulate(model, "fp8-hybrid", "runs/mine")       # a preset, or a config document
    for x, y in data:
        loss = loss_fn(model(x), y)
        em.scaler.scale(loss).backward()                   # the recipe's loss scaler (the core's)
        em.scaler.step(optimizer); em.scaler.update()
        em.step(loss=loss)                                 # after the optimiser step
        optimizer.zero_grad()
    em.remove()                                            # or: with emulate(...) as em:

Which modules: every nn.Linear, nn.Conv1d, nn.Conv2d, nn.Embedding and nn.MultiheadAttention
(its input projection and out_proj, two stages), or those ``modules`` names (shell patterns as
fnmatch, a module's exact name first, or a filter ``(module, fqn) -> bool``, torchao's order). Each becomes a stage of the record, in
``named_modules()`` order. Their forward is replaced (an instance attribute, removed again by
``remove()``) by one autograd.Function per product that casts the operands as the recipe says:
activations (the product's input) and weights in forward, the output's gradient in backward, the
weight gradient before the optimiser sees it. Biases stay FP32 (a GEMM's epilogue).

Steering: the app (``precision-lab --open RUN_DIR``) or ``precision-lab-cli steer RUN_DIR``
writes commands into the run's folder (RUN_DIR/commands.jsonl); ``step()`` looks for new ones at
every step boundary (one stat of the file) and applies them there: the loss scale, the scaling
policy, the recipe (a module's role's format, the rounding), pause / step / resume. Each is
recorded as an event and an entry of the run's timeline (config.json), and a command that cannot
be applied becomes an event, never an exception in the script. ``emulate(model,
"RUN_DIR/config.json", ...)`` (or ``timeline=[{"step": N, "set": {...}}]``) runs the script again
with the same changes at the same steps.

The recipe: a preset of ``precision-lab-cli presets`` ("fp16-amp", "bf16", "fp8-hybrid" (=
"fp8-hybrid-delayed"), "nvfp4", "mxfp8-e4m3", "fp8-blockwise", ...) or a config document as
``train --config`` takes (``{"preset": ..., "recipe": {...}, "scaling": {...}}``), whose
``recipe.overrides`` may name modules: ``{"modules": "head", "weights": "bf16", ...}``. The
recipe's master_weights and optimizer_state are the script's optimiser's: not emulated (an event
says so when the recipe sets them).
"""

import atexit
import contextlib
import copy
import functools
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
import weakref

import torch

from . import _core
from . import _distributed
from . import _script_end
from . import _selection
from . import _sweep
from ._arguments import check_whole
from ._emulated_ops import (Site, emulated_convolution, emulated_embedding, emulated_linear)
from ._loss_scaler import LossScaler
from ._names import name_matches, name_or_parent_matches
from ._record_failure import RecordFailure
from . import MAX_THREADS

# The advisor's and the sweep's names for two presets too (fp8-current, fp8-delayed: what the
# frameworks call their FP8 recipes).
ALIASES = {"fp8-hybrid": "fp8-hybrid-delayed", "mxfp8": "mxfp8-e4m3",
           "fp8-current": "fp8-hybrid-current", "fp8-delayed": "fp8-hybrid-delayed"}
_MARK = "_precision_lab_emulation"
# Every module whose forward an open emulation replaced, and that emulation: a model holding one
# (or a part of an emulated model) is refused, since two emulations would each record a part.
_PATCHED = weakref.WeakKeyDictionary()


# -- module types -------------------------------------------------------------------------
def _linear_forward(module, sites, x):
    return emulated_linear(x, module.weight, module.bias, sites[0])


def _convolution_forward(module, sites, x):
    return emulated_convolution(x, module.weight, module.bias, sites[0], module.stride,
                                module.padding, module.dilation, module.groups)


def _embedding_forward(module, sites, indices):
    return emulated_embedding(indices, module.weight, sites[0], module.padding_idx)


def _check_convolution(module):
    if isinstance(module.padding, str):
        return f"padding={module.padding!r} (give the padding as numbers)"
    if module.padding_mode != "zeros":
        return f"padding_mode={module.padding_mode!r} (only 'zeros')"
    return None


def _check_embedding(module):
    if module.max_norm is not None or module.sparse or module.scale_grad_by_freq:
        return "max_norm, sparse or scale_grad_by_freq set"
    return None


def _check_attention(module):
    if not module._qkv_same_embed_dim:
        return "kdim/vdim other than embed_dim"
    if module.bias_k is not None or module.add_zero_attn:
        return "add_bias_kv or add_zero_attn"
    return None


def _attention_forward(module, sites, query, key, value, key_padding_mask=None,
                       need_weights=True, attn_mask=None, average_attn_weights=True,
                       is_causal=False):
    import math
    import torch.nn.functional as F
    if module.batch_first:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    length, batch, embed = query.shape
    source = key.shape[0]
    heads = module.num_heads
    head_dim = embed // heads
    w, b = module.in_proj_weight, module.in_proj_bias
    if query is key and key is value:
        q, k, v = emulated_linear(query, w, b, sites[0]).chunk(3, dim=-1)
    else:
        ws = w.chunk(3)
        bs = b.chunk(3) if b is not None else (None, None, None)
        q = emulated_linear(query, ws[0], bs[0], sites[0])
        k = emulated_linear(key, ws[1], bs[1], sites[0])
        v = emulated_linear(value, ws[2], bs[2], sites[0])
    q = q.contiguous().view(length, batch * heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(source, batch * heads, head_dim).transpose(0, 1)
    v = v.contiguous().view(source, batch * heads, head_dim).transpose(0, 1)
    mask = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.dtype == torch.bool:
            mask = torch.zeros_like(mask, dtype=q.dtype).masked_fill_(mask, float("-inf"))
        if mask.dim() == 2:
            mask = mask.unsqueeze(0)
    elif is_causal:
        mask = torch.full((length, source), float("-inf"), dtype=q.dtype,
                          device=q.device).triu_(1).unsqueeze(0)
    if key_padding_mask is not None:
        padding = key_padding_mask.view(batch, 1, 1, source).expand(-1, heads, -1, -1)
        padding = padding.reshape(batch * heads, 1, source)
        if padding.dtype == torch.bool:
            padding = torch.zeros_like(padding, dtype=q.dtype).masked_fill_(padding,
                                                                             float("-inf"))
        mask = padding if mask is None else mask + padding
    scores = torch.bmm(q / math.sqrt(head_dim), k.transpose(-2, -1))
    if mask is not None:
        scores = scores + mask
    attention = F.softmax(scores, dim=-1)
    if module.training and module.dropout > 0.0:
        attention = F.dropout(attention, p=module.dropout)
    out = torch.bmm(attention, v).transpose(0, 1).contiguous().view(length * batch, embed)
    out = emulated_linear(out, module.out_proj.weight, module.out_proj.bias, sites[1])
    out = out.view(length, batch, embed)
    if module.batch_first:
        out = out.transpose(0, 1)
    if not need_weights:
        return out, None
    weights = attention.view(batch, heads, length, source)
    return out, (weights.mean(dim=1) if average_attn_weights else weights)


class _EmulatedType:
    def __init__(self, forward, stages=("",), check=None):
        self.forward = forward
        self.stages = stages  # the stage names' suffixes, one per product site
        self.check = check


_TYPES = {
    torch.nn.Linear: _EmulatedType(_linear_forward),
    torch.nn.Conv1d: _EmulatedType(_convolution_forward, check=_check_convolution),
    torch.nn.Conv2d: _EmulatedType(_convolution_forward, check=_check_convolution),
    torch.nn.Embedding: _EmulatedType(_embedding_forward, check=_check_embedding),
    torch.nn.MultiheadAttention: _EmulatedType(_attention_forward, (".in_proj", ".out_proj"),
                                               _check_attention),
}


def register_emulated_type(module_type, forward, stages=("",), check=None):
    """Emulates modules of ``module_type`` (and its subclasses): ``forward(module, sites, *args,
    **kwargs)`` computes the module's output through the operators precision_lab.torch
    exports (``emulated_linear(x, w, b, sites[0])``, ``emulated_convolution``,
    ``emulated_embedding``), one site (a ``Site``) per entry
    of ``stages`` (suffixes of the module's name, "" for one product). ``check(module)`` returns
    why a module cannot be emulated, or None."""
    if not (isinstance(module_type, type) and issubclass(module_type, torch.nn.Module)):
        raise TypeError(f"module_type {module_type!r}: expected a torch.nn.Module subclass")
    if not callable(forward):
        raise TypeError("forward: expected a callable (module, sites, *args)")
    _TYPES[module_type] = _EmulatedType(forward, tuple(stages), check)


def _type_of(module):
    for cls in type(module).__mro__:
        if cls in _TYPES:
            return _TYPES[cls]
    return None


def _emulable_names():
    return ", ".join(sorted(t.__name__ for t in _TYPES))


# -- choosing the modules -------------------------------------------------------------------
def _select(model, modules):
    """[(name, module, type)] to emulate, in named_modules() order."""
    candidates = []
    inside = set()  # submodules an emulated module handles itself (MultiheadAttention.out_proj)
    for name, m in model.named_modules():
        name = name or type(model).__name__
        if id(m) in inside:
            continue
        t = _type_of(m)
        if t is not None:
            candidates.append((name, m, t))
            if len(t.stages) > 1:
                inside.update(id(sub) for sub in m.modules() if sub is not m)
    if modules is not None and not callable(modules):
        # A pattern naming a module emulate cannot cast says so (before the general refusal).
        patterns = (modules,) if isinstance(modules, str) else tuple(modules)
        named = {(n or type(model).__name__): m for n, m in model.named_modules()}
        names = {n for n, _, _ in candidates}
        for p in patterns:
            if not isinstance(p, str) or any(name_matches(n, p, names) for n, _, _ in candidates):
                continue
            hits = [n for n in named if name_matches(n, p, named)]
            if hits:
                raise ValueError(f"modules {p!r}: {hits[0]} is a {type(named[hits[0]]).__name__}"
                                 f", which emulate cannot cast (it casts {_emulable_names()}; "
                                 f"register_emulated_type adds others)")
    if not candidates:
        raise ValueError(f"{type(model).__name__} has no module emulate can cast (it casts "
                         f"{_emulable_names()})")
    chosen, rule = _selection.choose(type(model).__name__, candidates, modules,
                                     "that emulate can cast")
    for name, m, t in chosen:
        why = t.check(m) if t.check else None
        if why:
            raise ValueError(f"module {name} ({type(m).__name__}) cannot be emulated: {why}")
    return chosen, rule


# -- the recipe ------------------------------------------------------------------------------
def _recipe_document(recipe):
    """(preset, config document) from a preset name, a dict or a JSON file's path."""
    if isinstance(recipe, str) and not recipe.endswith(".json"):
        return ALIASES.get(recipe, recipe), {}
    if isinstance(recipe, (str, os.PathLike)):
        path = os.fspath(recipe)
        try:
            with open(path, encoding="utf-8") as f:
                document = json.load(f)
        except OSError as e:
            raise OSError(f"{path}: cannot be read ({e.strerror})") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    elif isinstance(recipe, dict):
        document = json.loads(json.dumps(recipe))
    else:
        raise TypeError(f"recipe is a {type(recipe).__name__}: expected a preset name, a config "
                        f"document (dict) or a JSON file")
    if not isinstance(document, dict):
        raise ValueError("recipe: expected a JSON object (a config document)")
    recorded = document.get("emulate")
    if isinstance(recorded, dict) and isinstance(recorded.get("train_config"), dict):
        # An emulated run's config.json: the recipe it resolved to, with its timeline of edits.
        return "", json.loads(json.dumps(recorded["train_config"]))
    preset = document.pop("preset", "")
    return ALIASES.get(preset, preset), document


def _recorded_loss_scaler(recipe):
    """The loss scaler an emulated run's config.json (a path or its document) recorded, or
    None for any other recipe."""
    if isinstance(recipe, (str, os.PathLike)) and os.fspath(recipe).endswith(".json"):
        try:
            with open(os.fspath(recipe), encoding="utf-8") as f:
                recipe = json.load(f)
        except (OSError, json.JSONDecodeError):
            return None  # _recipe_document has said why
    recorded = recipe.get("emulate") if isinstance(recipe, dict) else None
    scaler = recorded.get("loss_scaler") if isinstance(recorded, dict) else None
    return scaler if isinstance(scaler, dict) and scaler else None


def _resolve_overrides(document, stage_names):
    """recipe.overrides entries naming modules become entries naming their stages."""
    recipe = document.get("recipe")
    if not isinstance(recipe, dict) or not isinstance(recipe.get("overrides"), list):
        return
    resolved = []
    for i, entry in enumerate(recipe["overrides"]):
        if isinstance(entry, dict) and "modules" in entry:
            patterns = entry["modules"]
            patterns = (patterns,) if isinstance(patterns, str) else tuple(patterns)
            roles = {k: v for k, v in entry.items() if k != "modules"}
            stages = [s for s, n in enumerate(stage_names)
                      if any(name_or_parent_matches(n, p, stage_names) for p in patterns)]
            if not stages:
                raise ValueError(f"config.recipe.overrides[{i}].modules {entry['modules']!r} "
                                 f"matches no emulated module ({', '.join(stage_names[:8])}"
                                 f"{', ...' if len(stage_names) > 8 else ''})")
            resolved.extend(dict(roles, stage=s) for s in stages)
        else:
            resolved.append(entry)
    recipe["overrides"] = resolved


_STEERABLE = ("scaling", "recipe")


def _check_timeline(timeline):
    """timeline=: [{"step": N, "set": PATCH}]; the core checks each patch against the config."""
    if not isinstance(timeline, (list, tuple)):
        raise TypeError(f"timeline is a {type(timeline).__name__}: expected a list of "
                        f'{{"step": N, "set": {{...}}}} edits')
    for i, edit in enumerate(timeline):
        if not isinstance(edit, dict) or not isinstance(edit.get("set"), dict):
            raise ValueError(f'timeline[{i}]: expected {{"step": N, "set": {{...}}}}')
        for key in edit["set"]:
            if key not in _STEERABLE:
                raise ValueError(f"timeline[{i}].set.{key}: an emulated run's edits change "
                                 f"scaling or recipe (the script's optimiser keeps train.lr)")
    return [json.loads(json.dumps(e)) for e in timeline]


def resolve_recipe(recipe, stage_names, seed=None, timeline=None):
    """The run config (dict) a recipe makes for these stages: the CLI's preset table and config
    checks, module patterns resolved to stages. ``seed`` None: a recorded run's own (else 0).
    ValueError naming what is wrong."""
    preset, document = _recipe_document(recipe)
    _resolve_overrides(document, stage_names)
    if seed is not None or "seed" not in document:
        document["seed"] = 0 if seed is None else seed
    if timeline is not None:
        document["timeline"] = list(document.get("timeline", [])) + _check_timeline(timeline)
    config = json.loads(_core.resolve_config(preset, json.dumps(document)))
    if config.get("scaling", {}).get("policy") == "per-layer":
        raise ValueError("config.scaling.policy 'per-layer' (Zhao et al.) is not emulated yet "
                         "(its layer-by-layer gradient scales live inside the core's backward)")
    return config


def _tied_weights(chosen):
    """A weight two emulated modules share (tied embeddings: nanoGPT's lm_head.weight is
    transformer.wte.weight): {its first module's parameter name: the other names}."""
    owners, tied = {}, {}
    for name, module, _ in chosen:
        w = getattr(module, "weight", None)
        if not isinstance(w, torch.Tensor):
            continue
        if id(w) in owners:
            tied.setdefault(owners[id(w)], []).append(f"{name}.weight")
        else:
            owners[id(w)] = f"{name}.weight"
    return tied


def _not_emulated(config):
    """What of the recipe emulate leaves to torch, each said once in the record (an event) and
    on stderr."""
    recipe = config.get("recipe", {})
    notes = []
    for role in ("master_weights", "optimizer_state"):
        if recipe.get(role, {}).get("format", "fp32") != "fp32":
            notes.append(f"the recipe's {role} ({recipe[role]['format']}) is not emulated: the "
                         f"script's optimiser keeps its own")
    if recipe.get("accumulation"):
        notes.append(f"the recipe's accumulator ({recipe['accumulation'].get('format')}) is not "
                     f"emulated: torch sums the products in FP32 (precision-lab-cli train "
                     f"emulates it)")
    return notes


def _check_threads(threads):
    check_whole("threads", threads, 1, MAX_THREADS)


def _loss_scaling_of(config):
    return {"scaling": config["scaling"]}


# -- the emulation -----------------------------------------------------------------------------
def emulate(model, recipe=None, run_dir=None, *, modules=None, every=1, seed=None,
            histograms_every=10, threads=1, overwrite=False, loss_scaler=None, ranks=None,
            timeline=None):
    """Runs ``model`` under ``recipe`` from now on, recording into ``run_dir`` (None: a new
    temporary folder); returns the Emulation (also a context manager). Under ``precision-lab-cli
    sweep ... -- python3 SCRIPT``, a recipe, run folder or seed left out is the sweep's (its
    run's folder is replaced); outside one, a recipe is needed. ``seed``: the casts'
    random streams (None: a recorded run's own, else 0). ``timeline``: edits to apply at step
    boundaries, as a steered run's config.json records them. Every check is made before
    anything is written. See the module's documentation."""
    return Emulation(model, recipe, run_dir, modules=modules, every=every, seed=seed,
                     histograms_every=histograms_every, threads=threads, overwrite=overwrite,
                     loss_scaler=loss_scaler, ranks=ranks, timeline=timeline)


_WHO = "precision_lab.torch.emulate"
_HOLD_POLL_SECONDS = 0.05  # how often a paused script looks for Resume or Step
_GOES_ON = "training goes on under the recipe (emulation.error)"


class Emulation(RecordFailure):
    def __init__(self, model, recipe=None, run_dir=None, *, modules=None, every=1, seed=None,
                 histograms_every=10, threads=1, overwrite=False, loss_scaler=None, ranks=None,
                 timeline=None):
        sweep = _sweep.current()
        if recipe is None:
            recipe = _sweep.required("emulate(model) without a recipe takes the sweep's").recipe
        elif sweep is not None:
            warnings.warn(f"precision_lab.torch.emulate: the sweep's recipe "
                          f"{sweep.recipe_name or sweep.recipe} is not used: emulate() was "
                          f"given {recipe!r}", stacklevel=3)
        if sweep is not None and run_dir is None:
            run_dir, overwrite = sweep.run_dir, True  # the sweep's member folder, its own
        if sweep is not None and seed is None:
            seed = sweep.seed
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model is a {type(model).__name__}: expected a torch.nn.Module")
        if getattr(model, _MARK, None) is not None:
            raise RuntimeError(f"{type(model).__name__} is already emulated (into "
                               f"{getattr(model, _MARK).run_dir}): remove() it first")
        for name, m in model.named_modules():
            other = _PATCHED.get(m)
            if other is not None:
                raise RuntimeError(f"{name or type(model).__name__} ({type(m).__name__}) is "
                                   f"already emulated by the emulation into {other.run_dir} (a "
                                   f"part of an emulated model, or a model holding one): "
                                   f"remove() that one first")
        for name, p in model.named_parameters():
            if p.dtype != torch.float32:
                raise TypeError(f"parameter {name} is {str(p.dtype).replace('torch.', '')}: "
                                f"emulate casts from float32 (the FP32 master copy); call "
                                f"model.float()")
        check_whole("every", every, 1)
        check_whole("histograms_every", histograms_every, 1)
        _check_threads(threads)
        if seed is not None:
            check_whole("seed", seed, 0)
        if loss_scaler is not None and not isinstance(loss_scaler, LossScaler):
            raise TypeError(f"loss_scaler is a {type(loss_scaler).__name__}: expected a "
                            f"precision_lab.torch.LossScaler (None: the recipe's)")
        chosen, selection = _select(model, modules)
        stage_names = []
        for name, _, t in chosen:
            stage_names.extend(name + suffix for suffix in t.stages)
        config = resolve_recipe(recipe, stage_names, None if seed is None else int(seed),
                                timeline)
        seed = config.get("seed", 0)
        self.config = config
        # The loss scaler the run uses is recorded (its policy and settings; its scale per step
        # is in the steps), so that a replay from config.json scales as the run did: a script's
        # own scaler was recorded as the recipe's (static, 1) and its replay ran at scale 1.
        recorded = _recorded_loss_scaler(recipe) if loss_scaler is None else None
        if recorded is not None:
            loss_scaler = LossScaler({"scaling": recorded}, model=model)
        self.scaler = loss_scaler or LossScaler(_loss_scaling_of(config), model=model)
        if not self.scaler._names:
            self.scaler._names = {id(p): n for n, p in model.named_parameters()}
        run_dir, self.rank, recorded = _distributed.rank_folder(run_dir, ranks)
        # A rank left out of ``ranks`` is emulated all the same, its record a temporary one.
        self._temporary = None if recorded else run_dir
        if run_dir is None:
            run_dir = tempfile.mkdtemp(prefix="precision-lab-emulate-")
            overwrite = True
        elif not recorded:
            self._temporary = run_dir = tempfile.mkdtemp(prefix="precision-lab-emulate-")
            overwrite = True
        description = {
            "model": type(model).__name__,
            "parameters": int(sum(p.numel() for p in model.parameters())),
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "recipe": recipe if isinstance(recipe, (str, dict)) else os.fspath(recipe),
            "train_config": config,
            "modules": [{"name": n, "type": type(m).__name__} for n, m, _ in chosen],
            "seed": int(seed),
            "rank": self.rank,
            "not_emulated": "master_weights and optimizer_state: the script's optimiser",
            "loss_scaler": self.scaler._config.get("scaling", {}),
        }
        if selection is not None:
            description["module_selection"] = selection
        tied = _tied_weights(chosen)
        if tied:
            description["tied_weights"] = [{"parameter": p, "aliases": a}
                                           for p, a in tied.items()]
        self._core = _core.Emulator(str(run_dir), json.dumps(config), stage_names, int(every),
                                    int(histograms_every), int(threads), json.dumps(description),
                                    bool(overwrite))
        self.run_dir = str(run_dir)
        self.stage_names = tuple(stage_names)
        self._model = model
        self._closed = False
        self._scale = None
        self._patched = []
        stage = 0
        for name, m, t in chosen:
            sites = [Site(self, stage + i, name + suffix) for i, suffix in enumerate(t.stages)]
            stage += len(t.stages)
            m.forward = _bound_forward(t.forward, m, sites)
            _copy_as_plain(m)
            self._patched.append(m)
            _PATCHED[m] = self
        self._pre_hook = model.register_forward_pre_hook(self._on_model_forward)
        # The emulation's state (steps taken, delayed scaling's amax histories) in the model's
        # state_dict, so that a checkpoint resumes bit for bit (issue 65 item 16).
        self._state_hooks = (model._register_state_dict_hook(_save_emulation_state),
                             model._register_load_state_dict_pre_hook(_load_emulation_state,
                                                                      with_module=True))
        for parameter, aliases in tied.items():
            # What is cast of a tied weight's gradient (issue 65 item 22): each module's part.
            self._core.event("note", f"{', '.join(aliases)} is {parameter} (tied): each module's "
                                     f"weight gradient is cast in its own recipe's format and "
                                     f"recorded as that module's weight_gradients row; the "
                                     f"optimiser sees their FP32 sum, which is not itself cast")
        for note in _not_emulated(config):
            self._core.event("note", note)
            warnings.warn(f"precision_lab.torch.emulate: {note}", stacklevel=3)
        setattr(model, _MARK, self)
        _copy_as_plain(model)
        self._steering_failed = False
        self._said_paused = False
        self._steer()  # a replayed timeline's edits of step 0
        ref = weakref.ref(self)
        _script_end.install()
        self._atexit = lambda: (ref() is not None and
                                ref()._finish(*_script_end.ending("remove()")))
        atexit.register(self._atexit)

    # -- what the user calls ------------------------------------------------------------
    @property
    def step_number(self):
        """The step under way (1-based)."""
        return self._core.step

    def format(self, stage_name, role):
        """The format the recipe casts ``role`` of the module ``stage_name`` to (now: after the
        edits applied so far)."""
        return self._core.format(self.stage_names.index(stage_name), role)

    @property
    def effective_config(self):
        """The run's config with every edit applied so far (the app's, a replayed timeline's)."""
        return json.loads(self._core.effective_config())

    @property
    def paused(self):
        """Paused from the app: ``step()`` waits for Resume or Step."""
        return self._core.paused

    def step(self, loss=None, lr=None, metrics=None):
        """Ends a training step (after ``optimizer.step()`` or ``scaler.update()``): its loss,
        learning rate, scale and skip go to the record with the step's counted casts.
        ``metrics``: the script's own numbers of this step ({"val_loss": ...}), recorded and
        compared by a sweep at their last value."""
        if self._closed:
            raise RuntimeError(f"the emulation of {self.run_dir} was removed")
        metrics = _sweep.metrics_argument(metrics)
        if isinstance(loss, torch.Tensor):
            loss = loss.detach().float().item()
        scale = self._scale if self._scale is not None else self.scaler.get_scale()
        skipped, reason = False, ""
        if self.scaler.last_decision is not None:
            skipped, reason = self.scaler.last_decision
            self.scaler.last_decision = None
        step = self._core.step
        if reason and self._error is None:
            try:
                self._core.event("scale", reason)
            except OSError as e:
                self._recording_failed(e, step, _WHO, _GOES_ON)
        try:  # the core's step advances even when its record cannot take it
            self._core.end_step(None if loss is None else float(loss),
                                None if lr is None else float(lr), float(scale), bool(skipped),
                                metrics)
        except OSError as e:
            self._recording_failed(e, step, _WHO, _GOES_ON)
        self._scale = None
        self._steer()

    def flush(self):
        """Waits until every step handed over is in the record."""
        self._core.flush()

    def remove(self, reason="completed"):
        """Restores every module's own forward (the model is as it was) and closes the record
        (its summary, CSV/JSONL exports). Idempotent."""
        self._finish(reason, True)

    close = remove

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.remove()
        elif issubclass(exc_type, KeyboardInterrupt):
            self._finish("interrupted (Ctrl-C)", False)
        else:
            self._finish(f"stopped by {exc_type.__name__}: {exc}", False)
        return False

    # -- internals ---------------------------------------------------------------------------
    def _steer(self):
        """The commands and due timeline edits at this step boundary, applied; waits here while
        the app holds the run paused (Ctrl-C interrupts the wait as it would the step)."""
        if self._steering_failed:
            return
        try:
            self._apply_steering(self._core.steer())
            if not self._core.paused:
                self._said_paused = False
            if not self._core.holding:
                return
            if not self._said_paused:  # once a pause, not at every step the app lets through
                print(f"{_WHO}: paused from the app before step {self._core.step}; waiting for "
                      f"Resume or Step (or: precision-lab-cli steer {self.run_dir} --resume)",
                      file=sys.stderr, flush=True)
                self._said_paused = True
            while self._core.holding:
                time.sleep(_HOLD_POLL_SECONDS)
                self._apply_steering(self._core.steer())
        except Exception as e:  # steering is the app's: it never stops the script's training
            self._steering_failed = True
            warnings.warn(f"{_WHO}: steering from the app stopped ({e}); training goes on",
                          stacklevel=3)

    def _apply_steering(self, changes):
        """The loss scaler's part of each change (the casts took theirs in the core)."""
        for action, patch in changes:
            if action != "set" or not patch:
                continue
            scaling = json.loads(patch).get("scaling")
            if scaling is None:
                continue
            if set(scaling) == {"scale"}:  # the slider: the scale the policy goes on from
                self.scaler._core.set_scale(float(scaling["scale"]))
            else:
                self.scaler._reconfigure(
                    {"scaling": json.loads(self._core.effective_config())["scaling"]})

    def _on_model_forward(self, module, inputs):
        if self._scale is None and torch.is_grad_enabled():
            self._scale = self.scaler.get_scale()  # before update() changes it

    def _finish(self, reason, finished):
        if self._closed:
            return
        self._closed = True
        for m in self._patched + [self._model]:
            for attribute in ("forward", "__deepcopy__", "__reduce_ex__"):
                m.__dict__.pop(attribute, None)
        for m in self._patched:
            if _PATCHED.get(m) is self:
                del _PATCHED[m]
        self._patched = []
        self._pre_hook.remove()
        for hook in self._state_hooks:
            hook.remove()
        if getattr(self._model, _MARK, None) is self:
            delattr(self._model, _MARK)
        atexit.unregister(self._atexit)
        core, self._core = self._core, None
        try:
            core.close(reason, finished)
        except Exception:
            if finished and self._error is None:  # a failure not reported yet
                raise
        finally:
            if self._temporary is not None:
                shutil.rmtree(self._temporary, ignore_errors=True)


# An emulated module's own attributes (its forward, the model's mark, the copy hooks below),
# set aside so that a copy or a pickle of it is of the plain module.
_SET_ASIDE = ("forward", _MARK, "__deepcopy__", "__reduce_ex__")


# The key of the emulation's state in the model's state_dict: a float64 tensor (version, steps
# taken, the amax histories as EmulatedRun::castingState lays them out).
STATE_KEY = "_precision_lab_emulation_state"


def _save_emulation_state(module, state_dict, prefix, local_metadata):
    emulation = module.__dict__.get(_MARK)
    if emulation is not None and not emulation._closed:
        state_dict[prefix + STATE_KEY] = torch.tensor(emulation._core.casting_state(),
                                                      dtype=torch.float64)


def _load_emulation_state(module, state_dict, prefix, local_metadata, strict, missing_keys,
                          unexpected_keys, error_msgs):
    """Restores the emulation's state before the first step; taken out of state_dict, so that a
    strict load does not call it unexpected. A checkpoint of an emulated model loaded into a
    model that is not emulated keeps the key (load with strict=False there)."""
    emulation = module.__dict__.get(_MARK)
    key = prefix + STATE_KEY
    if emulation is None or emulation._closed or key not in state_dict:
        return
    value = state_dict.pop(key)
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"load_state_dict: {key} is a {type(value).__name__}: expected the "
                         f"tensor an emulated model's state_dict() holds")
    emulation._core.restore_casting_state(value.detach().double().cpu().tolist())


@contextlib.contextmanager
def _emulation_set_aside(module):
    saved = {k: module.__dict__.pop(k) for k in _SET_ASIDE if k in module.__dict__}
    emulation = saved.get(_MARK)
    # The emulation's hooks leave the copy or pickle too (a pickle of them would need this
    # package to load).
    set_aside = []
    if emulation is not None:
        for hooks, hook_id in ((module._forward_pre_hooks, emulation._pre_hook.id),
                               (module._state_dict_hooks, emulation._state_hooks[0].id),
                               (module._load_state_dict_pre_hooks, emulation._state_hooks[1].id)):
            if hook_id in hooks:
                set_aside.append((hooks, list(hooks.items())))
                del hooks[hook_id]
    try:
        yield
    finally:
        for hooks, before in set_aside:
            hooks.clear()
            hooks.update(before)
        module.__dict__.update(saved)


def _plain_deepcopy(module, memo):
    """copy.deepcopy of an emulated module (an EMA copy, a snapshot): the plain module, its
    own forward and hooks, with copies of its parameters. The copy's forward was the original's
    emulated one (computing with the original's weights), and the emulation could not be
    copied at all (issue 65 item 17)."""
    with _emulation_set_aside(module):
        return copy.deepcopy(module, memo)


def _plain_reduce(module, protocol):
    """pickle (torch.save(model)) of an emulated module: the plain module's state."""
    with _emulation_set_aside(module):
        reduced = type(module).__reduce_ex__(module, protocol)
        if len(reduced) > 2 and isinstance(reduced[2], dict):  # the state: a copy, taken now
            state = dict(reduced[2])
            state["_forward_pre_hooks"] = type(module._forward_pre_hooks)(
                module._forward_pre_hooks)
            reduced = reduced[:2] + (state,) + tuple(reduced[3:])
    return reduced


def _copy_as_plain(module):
    module.__deepcopy__ = functools.partial(_plain_deepcopy, module)
    module.__reduce_ex__ = functools.partial(_plain_reduce, module)


def _bound_forward(forward, module, sites):
    def emulated_forward(*args, **kwargs):
        # Under torch.no_grad this forward is an evaluation (Site.cast): the grad mode is read
        # here, since an autograd.Function's forward always runs without grad.
        training = torch.is_grad_enabled()
        for site in sites:
            site.training = training
        return forward(module, sites, *args, **kwargs)
    return emulated_forward
