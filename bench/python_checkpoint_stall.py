#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python checkpoint stall: how long a training loop is blocked by one save
of a state dict, for three ways of saving it (issue 15 point 7):

  torch_save_fsync  torch.save(sd, f) then f.flush() and os.fsync(f): the
                    loop waits for the whole durable write;
  dcp_async_save    torch.distributed.checkpoint.async_save(sd, checkpoint_id=dir)
                    in one process (no process group): the loop waits for
                    DCP's staging copy, its writer thread does the rest;
  mlos_async_save   mlos_training.pytorch.AsyncCheckpointer.save(sd): the
                    loop waits for the serialisation into the job's locked
                    staging, the C writer does the rest.

    python bench/python_checkpoint_stall.py [--mib 512] [--reps 7] [--dir DIR] [--out FILE]

Each repetition runs the three once, in an order rotated per repetition
(interleaved, so drift of the machine hits all three alike), each from an
empty target and waiting for the previous save to be durable before the
next starts: the stall is measured with nothing else in flight. One
untimed round first (imports, DCP's set-up; mlOS's checkpointer allocates
and locks its staging on its first save and keeps it, as in a loop that
saves repeatedly: that first stall is reported apart). Reported:
the median and min/max of the stall (the call's duration, perf_counter) and
of the time until the file is durable (the future/wait returned), and the
ratios of medians against torch_save_fsync measured in the same run. The
state dict is 8 tensors of float32 random values. Writes JSON (one object)
to --out and a summary on stdout."""
import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import torch

import mlos_training as m
from mlos_training.pytorch import AsyncCheckpointer


def state_dict(mib):
    n = mib * (1 << 20) // 4 // 8
    g = torch.Generator().manual_seed(0)
    return {f"layer{i}.weight": torch.randn(n, generator=g) for i in range(8)}


def torch_save_fsync(sd, d, _):  # the third argument: mlOS's checkpointer, for its method
    t0 = time.perf_counter()
    with open(os.path.join(d, "model.pt"), "wb") as f:
        torch.save(sd, f)
        f.flush()
        os.fsync(f.fileno())
    t1 = time.perf_counter()
    return t1 - t0, t1 - t0


def dcp_async_save(sd, d, _):
    import torch.distributed.checkpoint as dcp
    t0 = time.perf_counter()
    future = dcp.async_save(sd, checkpoint_id=d)
    t1 = time.perf_counter()
    future.result()
    return t1 - t0, time.perf_counter() - t0


def mlos_async_save(sd, d, ckpt):
    t0 = time.perf_counter()
    pending = ckpt.save(sd)
    t1 = time.perf_counter()
    pending.wait()
    return t1 - t0, time.perf_counter() - t0


METHODS = {"torch_save_fsync": torch_save_fsync, "dcp_async_save": dcp_async_save,
           "mlos_async_save": mlos_async_save}


def summary(xs):
    return {"median_s": statistics.median(xs), "min_s": min(xs), "max_s": max(xs), "all_s": xs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary directory in build/)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # DCP warns that no process group is initialised: intended
    root = tempfile.mkdtemp(prefix="ckpt-stall-", dir=args.dir or os.path.join(os.path.dirname(__file__), "..", "build"))
    sd = state_dict(args.mib)
    stall = {k: [] for k in METHODS}
    durable = {k: [] for k in METHODS}
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        mlos_dir = os.path.join(root, "mlos")
        os.mkdir(mlos_dir)
        ckpt = AsyncCheckpointer(mlos_dir, ctx, keep_last=1)  # one file kept: each save replaces the last
        names = list(METHODS)
        first = None
        for rep in range(-1, args.reps):  # -1: the untimed round
            for name in names[rep % 3:] + names[:rep % 3]:
                d = os.path.join(root, f"{name}-{rep}")
                os.mkdir(d)
                s, w = METHODS[name](sd, d if name != "mlos_async_save" else None, ckpt)
                if rep >= 0:
                    stall[name].append(s)
                    durable[name].append(w)
                elif name == "mlos_async_save":
                    first = s
                shutil.rmtree(d)
        staging = ckpt.staging_bytes
        ckpt.close()
    shutil.rmtree(root)
    base = statistics.median(stall["torch_save_fsync"])
    result = {
        "bench": "python_checkpoint_stall", "state_dict_mib": args.mib, "reps": args.reps,
        "torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
        "stall": {k: summary(v) for k, v in stall.items()},
        "durable": {k: summary(v) for k, v in durable.items()},
        "stall_ratio_vs_torch_save_fsync": {k: statistics.median(v) / base for k, v in stall.items()},
        "mlos_first_save_stall_s": first, "mlos_staging_bytes": staging,
        "mlos_stall_vs_dcp": statistics.median(stall["mlos_async_save"]) / statistics.median(stall["dcp_async_save"]),
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    for k in METHODS:
        print(f"{k:18s} stall {statistics.median(stall[k]):7.3f} s (x{result['stall_ratio_vs_torch_save_fsync'][k]:.3f})"
              f"  durable after {statistics.median(durable[k]):7.3f} s")
    print(f"mlos stall / dcp stall: {result['mlos_stall_vs_dcp']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
