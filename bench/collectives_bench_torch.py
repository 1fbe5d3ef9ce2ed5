#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One rank of the collectives sweep through torch.distributed (backend
"gloo", CPU float32 tensors): the torch counterpart of
build/bin/mlos_collectives_bench (bench/collectives_bench.cpp), same
arguments, same method, same JSON lines, with "impl":"torch".

    RANK=r WORLD_SIZE=n MLOS_STORE=file:DIR \\
        python bench/collectives_bench_torch.py [--sizes B,B,...] [--iters N]
            [--min-iters N] [--target-bytes B] [--warmup N] [--barrier-iters N]
            [--backend gloo|mlos] [--ops allreduce,allgather,reduce_scatter]

--backend mlos runs the same calls through the mlos torch.distributed
backend ("impl":"torch-mlos"); --ops adds dist.all_gather_into_tensor and
dist.reduce_scatter_tensor, where a size is the bytes of the whole (the
gathered output, the reduced input), as nccl-tests count them
(bench/torch_backend_bandwidth.py drives the comparison).

Rendezvous: init_method=file://DIR/torch_store (torch's FileStore in the
directory the other implementations use). The TCP device is put on the
loopback interface (GLOO_SOCKET_IFNAME=lo unless set) when
MLOS_COLLECTIVE_HOST is 127.0.0.1, as the others bind 127.0.0.1.

Timed per call, with time.perf_counter_ns: dist.all_reduce(t) (SUM,
synchronous: the call returns after the work has completed) on a contiguous
view of one preallocated zero tensor, and dist.barrier(). Python's own
call overhead is part of what a torch user pays, so it is included.
bench/collectives_report.py starts the ranks."""
import argparse
import json
import os
import statistics
import sys
import time


def parse_size(s):
    units = {"": 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30}
    digits = len(s) - len(s.lstrip("0123456789"))
    return int(s[:digits]) * units[s[digits:]]


def stats(us):
    us = sorted(us)
    n = len(us)
    return {"median_us": statistics.median(us), "p90_us": us[min(n - 1, int(0.9 * (n - 1) + 0.5))],
            "min_us": us[0], "mean_us": sum(us) / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8,64,512,4096,32768,65536,1M,4M,16M,64M,256M")
    ap.add_argument("--iters", type=parse_size, default=500)
    ap.add_argument("--min-iters", type=parse_size, default=3)
    ap.add_argument("--target-bytes", type=parse_size, default=1 << 30)
    ap.add_argument("--warmup", type=parse_size, default=20)
    ap.add_argument("--barrier-iters", type=parse_size, default=500)
    ap.add_argument("--backend", choices=("gloo", "mlos"), default="gloo")
    ap.add_argument("--ops", default="allreduce", help="comma-separated: allreduce,allgather,reduce_scatter")
    args = ap.parse_args()
    ops = args.ops.split(",")
    if set(ops) - {"allreduce", "allgather", "reduce_scatter"}:
        ap.error(f"--ops: unknown operation in {args.ops}")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    if any(s < 4 or s % 4 for s in sizes):
        ap.error("sizes must be multiples of 4 bytes (float32)")

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = os.environ.get("MLOS_STORE", "")
    if not store.startswith("file:"):
        ap.error("needs MLOS_STORE=file:DIR")
    if os.environ.get("MLOS_COLLECTIVE_HOST", "127.0.0.1") == "127.0.0.1":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

    import torch
    import torch.distributed as dist
    if args.backend == "mlos":
        import mlos_training.distributed  # noqa: F401  (registers "mlos")
    if any(s % (4 * world) for s in sizes) and set(ops) - {"allreduce"}:
        ap.error(f"sizes must be multiples of {4 * world} bytes to split over {world} ranks")

    head = {"impl": "torch" if args.backend == "gloo" else "torch-mlos", "world": world, "rank": rank}

    def emit(**kw):
        print(json.dumps({**head, **kw}), flush=True)

    try:
        os.makedirs(store[5:], exist_ok=True)
        t0 = time.perf_counter_ns()
        dist.init_process_group(args.backend, init_method=f"file://{store[5:]}/torch_store", rank=rank,
                                world_size=world)
        emit(op="setup", connect_ms=(time.perf_counter_ns() - t0) / 1e6, torch_version=torch.__version__,
             torch_threads=torch.get_num_threads())

        check = torch.full((1000,), float(rank + 1), dtype=torch.float32)
        dist.all_reduce(check)
        ok = bool((check == world * (world + 1) // 2).all())
        emit(op="check", ok=ok)
        if not ok:
            return 3

        buf = torch.zeros(max(sizes) // 4, dtype=torch.float32)  # zeros: every page touched
        pc = time.perf_counter_ns

        def time_each(iters, f):
            us = [0.0] * iters
            for i in range(iters):
                t = pc()
                f()
                us[i] = (pc() - t) / 1e3
            return us

        def record(op, nbytes, iters, us):
            s = stats(us)
            emit(op=op, bytes=nbytes, iters=iters, **s,
                 algbw_GBps=nbytes / (s["median_us"] * 1e3) if nbytes else 0.0)

        if args.barrier_iters > 0:
            for _ in range(args.warmup):
                dist.barrier()
            record("barrier", 0, args.barrier_iters, time_each(args.barrier_iters, dist.barrier))
        out = torch.zeros(max(sizes) // 4, dtype=torch.float32)

        def call_for(op, n):
            """The timed call of `op` over a whole of n floats (views made here, outside the timing)."""
            if op == "allreduce":
                whole = buf[:n]
                return lambda: dist.all_reduce(whole)
            if op == "allgather":
                gathered, mine = out[:n], buf[:n // world]
                return lambda: dist.all_gather_into_tensor(gathered, mine)
            part, whole = out[:n // world], buf[:n]
            return lambda: dist.reduce_scatter_tensor(part, whole)

        for op in ops:
            for nbytes in sizes:
                call = call_for(op, nbytes // 4)
                iters = min(max(args.target_bytes // nbytes, args.min_iters), max(args.min_iters, args.iters))
                warm = min(args.warmup, max(1, iters // 4))
                dist.barrier()
                for _ in range(warm):
                    call()
                dist.barrier()
                record(op, nbytes, iters, time_each(iters, call))
        dist.barrier()
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - reported as a JSON line like the C++ program does
        emit(op="error", message=f"{type(e).__name__}: {e}")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
