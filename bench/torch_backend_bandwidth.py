#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""all_reduce, all_gather_into_tensor and reduce_scatter_tensor through
torch.distributed with the `mlos` backend against `gloo`, 4 KiB to 256 MiB
(docs/benchmarks.md, "DDP backend"). Each repetition runs both backends,
in a random order, as `world` rank processes of
bench/collectives_bench_torch.py on this host; the report gives, per
operation and size, the median over repetitions of rank 0's median call
time, the algorithm bandwidth (bytes of the whole / time) and the speed of
mlos against gloo from the same repetitions.

    python3 bench/torch_backend_bandwidth.py [--reps 3] [--world 2]
        [--sizes 4K,64K,1M,16M,256M] [--ops allreduce,allgather,reduce_scatter]
        [--json out.json]

Output: one JSON line per run and size, then a markdown table."""
import argparse
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_once(backend, args):
    """Rank 0's result lines of one run of `backend`."""
    with tempfile.TemporaryDirectory(prefix=f"mlos-torch-bw-{backend}-") as tmp:
        procs = []
        for r in range(args.world):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.world), MLOS_STORE=f"file:{tmp}",
                       MLOS_COLLECTIVE_HOST="127.0.0.1")
            cmd = [sys.executable, str(HERE / "collectives_bench_torch.py"), "--backend", backend,
                   "--ops", args.ops, "--sizes", args.sizes, "--barrier-iters", "0",
                   "--target-bytes", str(args.target_bytes), "--iters", str(args.iters)]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=1800) for p in procs]
    lines = [json.loads(line) for line in outs[0][0].splitlines() if line.startswith("{")]
    bad = [f"rank {r} rc {p.returncode}: {err[-1500:]}" for r, (p, (_, err)) in enumerate(zip(procs, outs))
           if p.returncode != 0]
    bad += [json.dumps(line) for line in lines if line["op"] == "error"]
    if bad:
        raise SystemExit(f"{backend} failed:\n" + "\n".join(bad))
    return [line for line in lines if "bytes" in line]


def human(nbytes):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--sizes", default="4K,64K,1M,16M,256M")
    ap.add_argument("--ops", default="allreduce,allgather,reduce_scatter")
    ap.add_argument("--target-bytes", type=int, default=1 << 30, help="bytes moved per size (fewer calls when large)")
    ap.add_argument("--iters", type=int, default=300, help="most calls per size")
    ap.add_argument("--json", help="write the runs and the summary here")
    args = ap.parse_args()
    medians = collections.defaultdict(list)  # (backend, op, bytes) -> rank 0's median per run
    runs = []
    for rep in range(args.reps):
        for backend in random.sample(["gloo", "mlos"], 2):
            for line in run_once(backend, args):
                medians[(backend, line["op"], line["bytes"])].append(line["median_us"])
                runs.append({"rep": rep, "backend": backend, "op": line["op"], "bytes": line["bytes"],
                             "median_us": round(line["median_us"], 2)})
                print(json.dumps(runs[-1]), flush=True)
    summary = []
    print(f"\n{args.world} ranks, {args.reps} repetitions; time: median over repetitions of rank 0's median call\n")
    print("| operation | size | gloo | mlos | gloo GB/s | mlos GB/s | mlos speed vs gloo |")
    print("|---|---|---|---|---|---|---|")
    for _, op, nbytes in sorted(k for k in medians if k[0] == "gloo"):
        g = statistics.median(medians[("gloo", op, nbytes)])
        m = statistics.median(medians[("mlos", op, nbytes)])
        summary.append({"op": op, "bytes": nbytes, "gloo_us": round(g, 2), "mlos_us": round(m, 2),
                        "mlos_speed_vs_gloo": round(g / m, 3)})
        print(f"| {op} | {human(nbytes)} | {g:.0f} µs | {m:.0f} µs | {nbytes / g / 1e3:.2f} | "
              f"{nbytes / m / 1e3:.2f} | {g / m:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"world": args.world, "reps": args.reps, "runs": runs,
                                               "summary": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
