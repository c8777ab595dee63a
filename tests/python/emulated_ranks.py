"""Two ranks (gloo on the CPU, started with torch.multiprocessing: Debian's torchrun does not
start) train a small model under emulate into RUN_DIR/rank-<r>. Usage: emulated_ranks.py RUN_DIR"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, run_dir, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    import precision_lab.torch as pt
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pt.emulate(model, "fp8-hybrid", run_dir) as em:
        for step in range(3):
            x = torch.randn(8, 16) + rank
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            em.step(loss=loss)
            opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket
    with socket.socket() as s:  # a free port on the loopback
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(sys.argv[1], port), nprocs=2, join=True)
