"""Arrays in: numpy arrays as they are, CPU torch tensors as numpy views of the same memory."""

import numpy


def as_float32_array(value, name):
    """``value`` as a numpy array sharing its memory (a torch CPU tensor through ``.numpy()``),
    with the checks of the core left to it (dtype, contiguity, emptiness). Raises TypeError for
    tensors that live elsewhere (CUDA: copy with ``.cpu()`` first)."""
    if isinstance(value, numpy.ndarray):
        return value
    if isinstance(value, numpy.generic):
        raise ValueError(f"{name} is a numpy scalar (0-d): pass an array of at least one "
                         f"dimension, e.g. numpy.atleast_1d({name})")
    module = type(value).__module__
    if module.startswith("torch"):
        if value.device.type != "cpu":
            raise TypeError(f"{name} is a torch tensor on {value.device}: quantize reads host "
                            f"memory; pass {name}.cpu()")
        if value.layout.__repr__() != "torch.strided":
            raise TypeError(f"{name} is a {value.layout} torch tensor: pass {name}.to_dense()")
        if not value.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides {tuple(value.stride())}): "
                             f"precision_lab reads the caller's memory without a copy; pass "
                             f"{name}.contiguous()")
        import torch
        if value.dtype != torch.float32:
            raise TypeError(f"{name} has dtype {value.dtype}: precision_lab casts float32 "
                            f"values and converts nothing silently; pass {name}.float()")
        return value.detach().numpy()
    raise TypeError(f"{name} is a {type(value).__name__}: expected a float32 numpy array or "
                    f"CPU torch tensor")
