"""Precision Lab's core for Python: number formats with exact cast statistics, run records, and
a live watcher for PyTorch training (precision_lab.torch.watch).

Every function calls the same C++ code as the app and ``precision-lab-cli``: ``quantize`` gives
the bits ``precision-lab-cli quantize --binary`` gives, and its counts are the ones the app draws.
"""

import importlib

from . import _quantize
from ._arrays import as_float32_array

__all__ = ["formats", "quantize", "open_run", "advise", "export_advice", "ROUNDINGS",
           "MAX_THREADS"]

# Records and the advisor live in the larger _core extension (SQLite, the trainers): loaded when
# one of them is first used, so a script that only casts never loads it.
_LOADED_ON_USE = {"open_run": "._runs", "advise": "._advise", "export_advice": "._advise"}


def __getattr__(name):
    if name not in _LOADED_ON_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LOADED_ON_USE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LOADED_ON_USE))

ROUNDINGS = ("nearest-even", "nearest-away", "toward-zero", "stochastic")
# The most threads a cast takes (the CLI's config allows as many): more would only be refused by
# the machine, late, or oversubscribe it.
MAX_THREADS = 256


def _format_name(fmt):
    """A format as the core takes it: our names and specs, ml_dtypes' and PyTorch's names
    ("float8_e4m3fn", "bfloat16"), a torch dtype (torch.float8_e5m2) or a numpy dtype of
    ml_dtypes (its name)."""
    if isinstance(fmt, str):
        return fmt
    if type(fmt).__module__ == "torch" and type(fmt).__name__ == "dtype":
        return str(fmt)  # "torch.bfloat16": the core drops the "torch."
    name = getattr(fmt, "name", None)
    if type(fmt).__module__ == "numpy" and isinstance(name, str):
        return name
    raise TypeError(f"fmt {fmt!r}: expected a format name such as 'fp8-e4m3', 'nvfp4' or "
                    f"'float8_e4m3fn', or a torch dtype (formats() lists them)")


def formats(spec=None):
    """The format table ``precision-lab-cli formats`` prints, as a list of dicts (element
    formats, then block formats); with ``spec`` (any name or custom ``eXmY[:options]`` the CLI
    accepts), that one format's dict. Raises ValueError with the CLI's message for a bad spec."""
    return _quantize.formats(spec)


def quantize(x, fmt, rounding="nearest-even", seed=0, scale=1.0, stats=True,
             scale_rounding=None, out=None, threads=1, overflow=None, four_over_six=False,
             pow2_scales=False, block_scales=False, error=True, stream=0):
    """Casts ``x`` (a float32 numpy array or CPU torch tensor of any shape, read without a copy)
    to ``fmt`` and back to float32: ``(y, stats)``.

    ``y`` is a new numpy array, or ``out`` (a writable float32 array of x's shape; it may be
    ``x`` itself) filled in place. With ``scale`` the values are multiplied by it before the
    cast and divided by it after (a loss scale: the counts say how the scaled values fare).
    ``stats`` (a dict, or None with ``stats=False``) holds the class counts (total, zero,
    flushed, subnormal, normal, overflow, nan), amax, flushed_share (flushed over nonzero
    inputs), the error sums and sqnr_db (skipped with ``error=False``: a quarter less time), and the log2 histogram of the (scaled) inputs with its
    bin edges; block formats add ``blocks`` (per-block statistics: blocks that are zero, flushed
    or saturated, histograms of the block scales and of the range inside blocks; with
    ``block_scales=True`` also each block's decoded scale and amax as arrays) and
    ``tensor_scale`` (NVFP4's s_enc).
    Block formats form blocks along the last dimension (a 1-D array is one row).
    Stochastic rounding draws its words from the Philox stream (``seed``, ``stream``): an
    emulated run's cast of a role at step k, stage s uses seed = the run's seed and stream =
    ((k - 1) << 16) | (s << 4) | role index (weights 0, activations 1, activation gradients 2,
    weight gradients 3), so a test can reproduce it.

    Refused with TypeError / ValueError, before anything is written: other dtypes (no silent
    conversion), non-contiguous views (pass ``numpy.ascontiguousarray(x)``), empty and 0-d
    arrays, unknown or contradictory format options, scales that are not finite and positive.
    The GIL is released while the core casts; ``threads`` > 1 uses the core's thread pool.
    """
    array = as_float32_array(x, "x")
    target = None if out is None else as_float32_array(out, "out")
    if out is not None and hasattr(out, "requires_grad") and out.requires_grad:
        raise ValueError("out requires grad: pass a tensor without autograd history "
                         "(out.detach())")
    if not _is_int(seed) or not 0 <= seed < 2**64:
        raise ValueError(f"seed {seed!r}: expected a whole number from 0 to 2^64-1")
    if not _is_int(stream) or not 0 <= stream < 2**64:
        raise ValueError(f"stream {stream!r}: expected a whole number from 0 to 2^64-1")
    fmt = _format_name(fmt)
    if not _is_int(threads) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads {threads!r}: expected a whole number from 1 to "
                         f"{MAX_THREADS}")
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"scale {scale!r}: expected a finite positive number") from None
    y, s = _quantize.quantize(array, fmt, rounding, seed, scale, bool(stats), scale_rounding,
                              target, threads, overflow, bool(four_over_six),
                              bool(pow2_scales), bool(block_scales), bool(error), int(stream))
    if out is not None:
        return out, s
    return y, s


def _is_int(value):
    from ._arguments import is_whole
    return is_whole(value)
