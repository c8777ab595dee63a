"""The operators precision_lab.torch.emulate puts in place of a module's forward: one
torch.autograd.Function per product (linear, convolution, embedding lookup), casting its operands
through the core's recipe caster as hardware in the recipe's formats would:

    forward:   activations = Q(x), weights = Q(W), y = op(Q(x), Q(W)) + bias
    backward:  activation_gradients = Q(dy); dx = op_x(Q(dy), Q(W)); dW = Q(op_W(Q(dy), Q(x)));
               d(bias) = sum(dy)

Biases are added in FP32, as a GEMM's epilogue adds them, and their gradient is the sum of the
output gradient before its cast, as Transformer Engine fuses it into that cast (dbias). Each
cast is one pass of the core over the tensor's memory (GIL released, the core's thread pool),
counted on statistics steps; an identity cast (FP32, unscaled) off statistics steps is skipped.

A module type of your own: ``register_emulated_type(MyLinear, emulated_forward)``, where
``emulated_forward(module, site, *args)`` computes the module's output through
``emulated_linear(x, weight, bias, site)`` (or the conv / embedding operators here).
"""

import torch
import torch.nn.functional as F

ROLE_WEIGHTS = "weights"
ROLE_ACTIVATIONS = "activations"
ROLE_ACTIVATION_GRADIENTS = "activation_gradients"
ROLE_WEIGHT_GRADIENTS = "weight_gradients"


class Site:
    """One emulated module (a stage of the record): casts its tensors through the run."""

    def __init__(self, run, stage, name):
        self.run = run
        self.stage = stage
        self.name = name
        self.training = True  # false while its module's forward runs under torch.no_grad

    def cast(self, role, t, rows_along="last", tiles=False, in_place=False):
        """The recipe's cast of ``t`` for ``role`` at this stage: a new tensor (or ``t`` itself,
        cast where it lies, with ``in_place``), of t's dtype and device."""
        core = self.run._core
        if core is None:  # removed while autograd still held the operator: plain values
            return t
        if not core.statistics_step and core.is_identity(self.stage, role):
            return t
        src = t.detach()
        device, dtype = src.device, src.dtype
        if device.type != "cpu":  # CUDA tensors go through the host (the casts run on the CPU)
            src = src.to("cpu")
            in_place = False
        if dtype != torch.float32:  # autocast's bf16/fp16 operands: cast from their float32 value
            src = src.float()
            in_place = False
        if not src.is_contiguous():
            src = src.contiguous()
            in_place = False
        out = src if in_place else torch.empty_like(src)
        n = src.numel()
        if n == 0:
            return t
        if rows_along == "last":
            cols = src.shape[-1] if src.dim() >= 1 else n
        elif rows_along == "first":  # (outputs, fan-in...) weights; (batch, features...) maps
            cols = n // src.shape[0] if src.dim() >= 2 else n
        else:
            cols = n
        rows = n // cols
        # A forward under torch.no_grad (an evaluation): cast alike, but not counted and not in
        # the amax histories, so that training goes on as if it had not run. (Backward runs
        # with grad mode off too: its casts are training's.)
        training = role in (ROLE_ACTIVATION_GRADIENTS, ROLE_WEIGHT_GRADIENTS) or self.training
        core.cast(self.stage, role, src.data_ptr(), out.data_ptr(), n, rows, cols,
                  bool(tiles),  # the caster tiles a weight where its stage's scaling does
                  _agreed_amax(core, self.stage, role, src, device) if training else -1.0,
                  training)
        if out.device != device or out.dtype != dtype:
            out = out.to(device=device, dtype=dtype)
        return out

    def weight(self, w):
        return self.cast(ROLE_WEIGHTS, w, rows_along="first", tiles=True)

    def weight_gradient(self, g):
        return self.cast(ROLE_WEIGHT_GRADIENTS, g, rows_along="first", tiles=True,
                         in_place=True)

    def hadamard(self):
        core = self.run._core
        return core is not None and core.hadamard_for(self.stage)

    def along_batch(self, role, raw2d):
        """The Hadamard operand: raw (batch, width) transformed along the batch and cast in
        blocks along it, returned as (width, batch)."""
        src = raw2d.detach().to("cpu", torch.float32).contiguous()
        batch, width = src.shape
        out = torch.empty((width, batch), dtype=torch.float32)
        self.run._core.cast_along_batch(self.stage, role, src.data_ptr(), out.data_ptr(),
                                        batch, width)
        return out.to(raw2d.device)


def _agreed_amax(core, stage, role, src, device):
    """Under per-tensor amax scaling inside a torch.distributed process group, the largest finite
    |x| of the tensor over the group (Transformer Engine reduces the amax across the data-parallel
    group, so every replica casts with one scale); -1 (the tensor's own) otherwise. Every rank
    casts the same tensors in the same order, so the collectives pair up."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1 and
            core.reduces_amax(stage, role)):
        return -1.0
    finite = src.abs().nan_to_num(nan=0.0, posinf=0.0)
    amax = (finite.max() if finite.numel() else torch.zeros(())).reshape(1).float()
    if dist.get_backend() == "nccl":  # NCCL reduces device tensors only
        amax = amax.to(device if device.type == "cuda" else torch.device("cuda"))
    dist.all_reduce(amax, op=dist.ReduceOp.MAX)
    return float(amax.item())


def _flat(t):
    return t.reshape(-1, t.shape[-1])


def _refuse_double_backward(what):
    """A backward under create_graph=True (a gradient penalty, MAML) would need the casts'
    backward differentiated again, which the core's casts are not: the second-order terms would
    be dropped and the gradients wrong. Refused, never computed wrong."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"precision_lab.torch.emulate: a double backward through {what} (autograd.grad(..., "
            f"create_graph=True): a gradient penalty, MAML) is not emulated: the casts' "
            f"second-order terms would be dropped. Take that gradient outside the emulation "
            f"(em.remove(), or a plain copy of the model) or without create_graph")


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, site):
        xq = site.cast(ROLE_ACTIVATIONS, x)
        wq = site.weight(weight)
        ctx.site = site
        ctx.hadamard = site.hadamard() and weight.requires_grad
        ctx.save_for_backward(xq, wq, x if ctx.hadamard else None)
        ctx.has_bias = bias is not None
        return F.linear(xq, wq, bias)

    @staticmethod
    def backward(ctx, gy):
        _refuse_double_backward(ctx.site.name)
        xq, wq, x_raw = ctx.saved_tensors
        site = ctx.site
        gq = site.cast(ROLE_ACTIVATION_GRADIENTS, gy)
        g2 = _flat(gq)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = g2.mm(wq).view(xq.shape)
        if ctx.needs_input_grad[1]:
            if ctx.hadamard:
                # NVIDIA's NVFP4 recipe: dW from the operands before their casts, each
                # transformed along the batch and cast in blocks along it.
                dy_t = site.along_batch(ROLE_ACTIVATION_GRADIENTS, _flat(gy))
                x_t = site.along_batch(ROLE_ACTIVATIONS, _flat(x_raw))
                gw = dy_t.mm(x_t.t())
            else:
                gw = g2.t().mm(_flat(xq))  # as torch's own linear backward computes it
            gw = site.weight_gradient(gw)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = _flat(gy).sum(0)  # before the cast, as TE's dbias
        return gx, gw, gb, None


def emulated_linear(x, weight, bias, site):
    """F.linear(x, weight, bias) under the recipe at ``site``."""
    return _Linear.apply(x, weight, bias, site)


class _Convolution(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, site, stride, padding, dilation, groups):
        xq = site.cast(ROLE_ACTIVATIONS, x, rows_along="first")
        wq = site.weight(weight)
        ctx.site = site
        ctx.args = (stride, padding, dilation, groups)
        ctx.bias_shape = None if bias is None else list(bias.shape)
        ctx.save_for_backward(xq, wq)
        conv = F.conv1d if x.dim() == 3 else F.conv2d
        return conv(xq, wq, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, gy):
        _refuse_double_backward(ctx.site.name)
        xq, wq = ctx.saved_tensors
        site = ctx.site
        stride, padding, dilation, groups = ctx.args
        gq = site.cast(ROLE_ACTIVATION_GRADIENTS, gy, rows_along="first")
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], False]
        zeros = [0] * len(stride)
        gx, gw, _ = torch.ops.aten.convolution_backward(
            gq, xq, wq, ctx.bias_shape, list(stride), list(padding), list(dilation), False,
            zeros, groups, mask)
        gb = None
        if ctx.bias_shape is not None and ctx.needs_input_grad[2]:
            # before the cast, as the linear's (TE's dbias): summed over batch and positions
            gb = gy.sum([d for d in range(gy.dim()) if d != 1])
        if gw is not None:
            gw = site.weight_gradient(gw.contiguous())
        return gx, gw, gb, None, None, None, None, None


def emulated_convolution(x, weight, bias, site, stride, padding, dilation, groups):
    """F.conv1d / F.conv2d under the recipe at ``site`` (padding as numbers, not a string)."""
    return _Convolution.apply(x, weight, bias, site, tuple(stride), tuple(padding),
                              tuple(dilation), groups)


class _Embedding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, indices, weight, site, padding_idx):
        wq = site.weight(weight)
        ctx.site = site
        ctx.padding_idx = padding_idx
        ctx.num_weights = weight.shape[0]
        ctx.save_for_backward(indices)
        return F.embedding(indices, wq, padding_idx)

    @staticmethod
    def backward(ctx, gy):
        _refuse_double_backward(ctx.site.name)
        (indices,) = ctx.saved_tensors
        site = ctx.site
        gq = site.cast(ROLE_ACTIVATION_GRADIENTS, gy)
        gw = torch.ops.aten.embedding_dense_backward(
            gq, indices, ctx.num_weights, -1 if ctx.padding_idx is None else ctx.padding_idx,
            False)
        return None, site.weight_gradient(gw.contiguous()), None, None


def emulated_embedding(indices, weight, site, padding_idx=None):
    """F.embedding(indices, weight) under the recipe at ``site`` (no max_norm, dense gradient)."""
    return _Embedding.apply(indices, weight, site, padding_idx)
