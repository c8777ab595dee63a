"""Distributed runs (torch.distributed: DDP, torchrun, gloo or NCCL): each rank records into a
folder of its own, ``run_dir/rank-<r>``, which the app opens (the parent folder: pick a rank) and
``open_run`` reads (the parent folder: every rank, with a ``rank`` column)."""

import os


def current_rank():
    """This process's rank in the default process group, or None outside one."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return None


def rank_folder(run_dir, ranks=None):
    """(folder, rank, recorded): where this process records. Outside a process group the folder
    is run_dir itself (rank None). In one, run_dir/rank-<r>; with ``ranks`` (ranks to record),
    a rank not in it is not recorded (recorded False)."""
    if ranks is not None:
        ranks = {ranks} if isinstance(ranks, int) else set(ranks)
        if not ranks or not all(isinstance(r, int) and r >= 0 for r in ranks):
            raise ValueError(f"ranks {sorted(ranks) if ranks else ranks!r}: expected ranks to "
                             f"record (whole numbers, 0 or more)")
    rank = current_rank()
    if rank is None or run_dir is None:
        return run_dir, rank, True
    recorded = ranks is None or rank in ranks
    return os.path.join(os.fspath(run_dir), f"rank-{rank}"), rank, recorded


def rank_folders(run_dir):
    """[(rank, folder)] of a distributed run's parent folder, by rank; [] for a single record."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith("rank-") and name[5:].isdigit():
            path = os.path.join(run_dir, name)
            if os.path.isfile(os.path.join(path, "run.sqlite")):
                found.append((int(name[5:]), path))
    return sorted(found)
