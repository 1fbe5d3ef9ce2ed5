# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training as a user would write it for torchrun (no mlOS
code beyond naming the backend): DistributedDataParallel over the ranks
torchrun starts, on synthetic tensors. The communication-bound workload of
bench/auto: --model mlp has many parameters for little compute, so its
gradients' all-reduce takes a large share of each step; --model cnn is the
suite's small CNN.

    torchrun --nproc-per-node 2 train_ddp.py [--model mlp|cnn] [--width W]
        [--batch B] [--backend mlos|gloo] [--seconds S]

Rank 0 prints the suite's JSON line (as timed_steps.run does)."""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from process_facts import runtime_libraries  # noqa: E402
from timed_steps import parse_args, training_step  # noqa: E402


def model_for(name, width):
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10)), (3, 32, 32)
    return nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10)), (256,)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--width", type=int, default=1024, help="hidden width of --model mlp")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--backend", default="mlos", help="torch.distributed backend (default: mlos)")
    a = parse_args(ap, warmup=2.0, seconds=8.0)
    if a.backend == "mlos":
        import mlos_training.distributed  # noqa: F401  (registers "mlos")
    dist.init_process_group(a.backend, timeout=datetime.timedelta(seconds=120))
    net, shape = model_for(a.model, a.width)
    ddp = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(a.batch, *shape), torch.randint(0, 10, (a.batch,))
    step = training_step(opt, lambda: loss_fn(ddp(x), y))
    # Time-bounded like the suite's other workloads, but every rank must
    # stop after the same step: rank 0's "done" is all-reduced each step.
    start = time.perf_counter()
    t0, steps = None, 0
    while True:
        step()
        now = time.perf_counter()
        if t0 is None and now - start >= a.warmup:
            t0 = now
        elif t0 is not None:
            steps += 1
        done = torch.tensor([1.0 if t0 is not None and now - t0 >= a.seconds and steps >= 3 else 0.0])
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item():
            break
    if dist.get_rank() == 0:
        print(json.dumps({"samples_per_s": steps * a.batch * dist.get_world_size() / (now - t0), "steps": steps,
                          "seconds": now - t0, "threads": torch.get_num_threads(),
                          "cpus": sorted(os.sched_getaffinity(0)), **runtime_libraries()}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
