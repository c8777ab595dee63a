"""open_run: any run record (the app's, the CLI's, a sweep's, a watched PyTorch run's) as pandas
DataFrames, read through the core's RunRecord."""

import os

from . import _core


class Run:
    """A run record read at one moment (a live run: call ``open_run`` again for newer steps).

    ``steps``: one row per step (loss, scale, lr, ...; NaN where not reported).
    ``stats``: one row per statistics step, stage (module), role and format, with layers.csv's
    columns in its order (docs/record.md): the class counts (zero, flushed, ...), amax,
    flushed_share, updates and lost_updates (master weights), grad_scale (the loss scale
    gradients were judged at), tensor_scale, blocks and saturated_blocks, mse, sqnr_db,
    norm_rel_error (NaN where not measured), scaling (the per-tensor scaling that cast the row:
    "none", "amax-current", "nvfp4", ...; "" for a watched run's judged formats).
    ``steps`` has metrics.csv's columns.
    ``diagnostics``: per statistics step, stage and role of a watched run, the activations'
    kurtosis (format "") and each block format's block-scale spread (block_scale_log2_std) and
    live and zero-scale blocks (docs/record.md); empty for other runs.
    ``events``: what happened (start, dropped statistics, end, ...).
    ``summary``: how the run ended (or that it is running). ``live``: a process writes it now.
    ``histograms()``: the log2 histograms, decoded on request.
    """

    def __init__(self, raw):
        import pandas
        self.dir = raw["dir"]
        self.stage_names = list(raw["stage_names"])
        self.config = raw["config"]
        self.source = raw["source"]
        self.watch = raw["watch"]
        self.formats = list(raw["formats"])
        self.summary = raw["summary"]
        self.live = raw["live"]
        self.steps = pandas.DataFrame(raw["steps"])
        self.stats = pandas.DataFrame(raw["stats"])
        self.diagnostics = pandas.DataFrame(raw["diagnostics"])
        self.events = pandas.DataFrame(raw["events"], columns=["step", "type", "message",
                                                                "change"])

    def histograms(self, step=None):
        """A DataFrame of (step, stage, stage_name, role, bins): each row's ``bins`` a numpy
        array in the core's log2 layout (bin 0 zeros, then 4 bins a binade from 2^-149, Inf,
        NaN; ``precision_lab.quantize``'s ``bin_edges_log2``). Every recorded step, or one."""
        import pandas
        return pandas.DataFrame(_core.read_histograms(self.dir, step),
                                columns=["step", "stage", "stage_name", "role", "bins"])

    def __repr__(self):
        return (f"Run({self.dir!r}: {len(self.steps)} steps, {len(self.stage_names)} stages, "
                f"{self.summary.get('stop_reason', '?') if self.summary else '?'})")


class DistributedRun:
    """A distributed run's records (``rank-<r>`` folders, one per rank) read together: ``steps``,
    ``stats``, ``diagnostics`` and ``events`` with a ``rank`` column; ``ranks`` maps each rank to its Run."""

    def __init__(self, dir, ranks):
        import pandas
        self.dir = str(dir)
        self.ranks = {r: Run(_core.read_run(path)) for r, path in ranks}
        runs = list(self.ranks.items())
        first = runs[0][1]
        self.stage_names, self.config, self.source = first.stage_names, first.config, first.source
        self.live = any(run.live for _, run in runs)

        def joined(table):
            return pandas.concat([getattr(run, table).assign(rank=r) for r, run in runs],
                                 ignore_index=True)
        self.steps, self.stats, self.events = joined("steps"), joined("stats"), joined("events")
        self.diagnostics = joined("diagnostics")

    def __repr__(self):
        return f"DistributedRun({self.dir!r}: ranks {sorted(self.ranks)})"


def open_run(dir):
    """Reads the run record in ``dir`` (it holds run.sqlite), or a distributed run's records
    (``dir/rank-<r>``, as a DistributedRun). Raises OSError naming the file when there is none
    or it cannot be read."""
    from ._distributed import rank_folders
    ranks = rank_folders(str(dir))
    if ranks and not os.path.isfile(os.path.join(str(dir), "run.sqlite")):
        return DistributedRun(dir, ranks)
    return Run(_core.read_run(str(dir)))
