"""advise: which format each module's tensors and products can take, from a run's record (the
core's recipe advisor, as ``precision-lab-cli advise``), and its exports."""

import numbers
import os
import stat

from . import _core
from ._arguments import is_whole

# None: the run's own ladder (the core's defaultLadder: those of nvfp4, mxfp8, fp8-block,
# fp8-delayed, fp8-current and bf16 it recorded, else every format it recorded; then fp32).
DEFAULT_LADDER = None
EXPORTS = ("recipe", "te-yaml", "te-yaml-fp8", "megatron", "torchao")


def _share(value, name):
    """A share as a fraction (0.01) or a percentage text ("1%")."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ValueError(f"{name} {value!r}: expected a share from 0 to 1 or a text such "
                             f"as '1%'") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"{name} {value!r}: expected a share from 0 to 1 (0.01) or '1%'")
    return float(value)


def _write_regular_file(out, text):
    """Writes text to out through a temporary renamed over it, as the core's writers do: only a
    regular file (or nothing) at out is replaced, never a link, FIFO, device or folder, and the
    temporary is created anew, never through a link planted at its name."""
    path = os.fspath(out)
    for name, refused in ((path, "replace"), (f"{path}.tmp", "write")):
        try:
            mode = os.lstat(name).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISREG(mode) or (name != path and stat.S_ISLNK(mode)):
            if name != path:
                os.unlink(name)  # a leftover temporary (a link: only the link goes)
            continue
        raise OSError(f"{name}: is not a regular file; refusing to {refused} it (the advice is "
                      f"written only as a regular file)")
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _advice(run_dir, ladder, max_flushed, max_overflow, min_sqnr, max_flushed_blocks,
            max_saturated_blocks, margin, steps, export_kind="", fp4_noise_check=False):
    if ladder is None:
        ladder = []
    elif isinstance(ladder, str):
        ladder = [f.strip() for f in ladder.split(",")]
    if not isinstance(min_sqnr, numbers.Real) or isinstance(min_sqnr, bool):
        raise ValueError(f"min_sqnr {min_sqnr!r}: expected a number of dB")
    if is_whole(steps):
        steps = f"last:{steps}"
    margin = _share(margin, "margin")
    if margin == 0:
        raise ValueError("margin 0: expected a share above 0 (0.5: within half of each limit; "
                         "1: at the limits)")
    return _core.advise(os.fspath(run_dir), list(ladder), _share(max_flushed, "max_flushed"),
                        _share(max_overflow, "max_overflow"), float(min_sqnr),
                        _share(max_flushed_blocks, "max_flushed_blocks"),
                        _share(max_saturated_blocks, "max_saturated_blocks"), margin,
                        str(steps), export_kind, bool(fp4_noise_check))


def advise(run_dir, ladder=DEFAULT_LADDER, max_flushed=0.01, max_overflow=0.0, min_sqnr=20.0,
           max_flushed_blocks=0.001, max_saturated_blocks=1.0, steps="last:200", margin=0.5,
           fp4_noise_check=False):
    """Per module and role of the run at ``run_dir`` (own, watched, emulated or a sweep's), the
    narrowest format or framework recipe of ``ladder`` (narrowest first; None: the run's own,
    docs/advise.md) whose recorded statistics meet every
    criterion at every statistics step of ``steps`` ("all", "last:N", "A:B" or N): at most
    ``max_flushed`` of the nonzero values flushed to zero, ``max_overflow`` past the format's
    max, an SQNR of ``min_sqnr`` dB or more, and for block formats ``max_flushed_blocks`` of the
    live blocks flushed whole and ``max_saturated_blocks`` of the blocks clipped, each with the
    ``margin`` (0.5: the worst step within half of each limit, the SQNR 3 dB above its floor,
    so that a run under the advice still meets them; 1: at the limits). Shares are fractions or
    texts ("1%"). ``fp4_noise_check``: "FP4 all the way" (arXiv 2505.19115): a 4-bit format on
    gradients judged by that paper's floor (their norm at least sqrt(3) times the quantisation
    noise at every step) instead of ``min_sqnr``.

    Returns a DataFrame (stage, module, role, format, reason; format None where no format of the
    ladder meets the criteria) with ``attrs``: "products" (a DataFrame: each layer's forward,
    data-gradient and weight-gradient product and the wider of its operands' formats),
    "verdicts" (per row, each format tried: meets / fails / no data, the criterion, its worst
    value and step), "window" (first and last step, how many), "recorded_formats".
    ValueError with one line for bad criteria, a window without statistics, or a ladder the
    record holds none of."""
    import pandas
    raw = _advice(run_dir, ladder, max_flushed, max_overflow, min_sqnr, max_flushed_blocks,
                  max_saturated_blocks, margin, steps, fp4_noise_check=fp4_noise_check)
    table = pandas.DataFrame([{k: r[k] for k in ("stage", "module", "role", "format", "reason")}
                              for r in raw["roles"]],
                             columns=["stage", "module", "role", "format", "reason"])
    table.attrs["products"] = pandas.DataFrame(
        raw["gemms"], columns=["stage", "module", "product", "format", "reason"])
    table.attrs["verdicts"] = [r["verdicts"] for r in raw["roles"]]
    table.attrs["window"] = {"first_step": raw["first_step"], "last_step": raw["last_step"],
                             "statistics_steps": raw["statistics_steps"]}
    table.attrs["recorded_formats"] = list(raw["recorded_formats"])
    return table


def export_advice(run_dir, kind="recipe", out=None, ladder=DEFAULT_LADDER, max_flushed=0.01,
                  max_overflow=0.0, min_sqnr=20.0, max_flushed_blocks=0.001,
                  max_saturated_blocks=1.0, steps="last:200", margin=0.5, fp4_noise_check=False):
    """The advice (as ``advise`` computes it) as ``kind``: "recipe" (a config document that
    ``precision_lab.torch.emulate``, ``train --config`` and the app take), "te-yaml" (Transformer
    Engine's debug-tools config; "te-yaml-fp8" with the feature names of TE 2.4 to 2.12),
    "megatron" (Megatron-LM's ``--te-precision-config-file``) or "torchao" (a script with each
    module's recipe, ``module_filter_fn`` and ``apply_advice(model)``). Returns the text and, with
    ``out``, writes it there. ValueError naming the kind for any other."""
    if kind not in EXPORTS:
        raise ValueError(f"kind {kind!r}: expected one of {', '.join(EXPORTS)}")
    text = _advice(run_dir, ladder, max_flushed, max_overflow, min_sqnr, max_flushed_blocks,
                   max_saturated_blocks, margin, steps, kind, fp4_noise_check)["export"]
    if out is not None:
        _write_regular_file(out, text)
    return text
