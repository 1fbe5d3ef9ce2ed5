# SPDX-License-Identifier: Apache-2.0
"""Tensor pool tensors against torch.empty from Python, same shapes, same
run, repetitions interleaved, medians reported (docs/benchmarks.md,
"Tensor memory").

Each call makes a float32 tensor of the shape and writes it whole
(tensor.fill_), as a training step fills a batch; the tensor is then
dropped. torch.empty's memory comes from the C allocator (a large tensor
is mmap'd and page-faulted anew unless glibc keeps it); the pool's is
reused by size class, already faulted in.

    python bench/tmm_python_bench.py [--reps 5] [--calls 200] [--json out.json]
"""
import argparse
import json
import statistics
import time

import torch

from mlos_training.tmm import TensorPool

SHAPES = [(256,), (64, 1024), (64, 3, 64, 64), (64, 3, 224, 224)]


def run(make, shape, calls):
    """Seconds per call of make(shape) + fill_ (median over batches of 10)."""
    per_call = []
    for _ in range(max(1, calls // 10)):
        t0 = time.perf_counter()
        for _ in range(10):
            t = make(shape)
            t.fill_(1.0)
            del t
        per_call.append((time.perf_counter() - t0) / 10)
    return statistics.median(per_call)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pool = TensorPool("1GiB", name="bench")
    makers = {"torch.empty": lambda s: torch.empty(s, dtype=torch.float32),
              "mlos TensorPool.tensor": lambda s: pool.tensor(s, torch.float32)}
    results = []
    for shape in SHAPES:
        samples = {name: [] for name in makers}
        for _ in range(args.reps):  # interleaved
            for name, make in makers.items():
                samples[name].append(run(make, shape, args.calls))
        nbytes = 4
        for n in shape:
            nbytes *= n
        base = statistics.median(samples["torch.empty"])
        for name, s in samples.items():
            med = statistics.median(s)
            results.append({"maker": name, "shape": list(shape), "bytes": nbytes, "us_per_call": round(med * 1e6, 2),
                            "speedup_vs_torch_empty": round(base / med, 2)})
            print(f"{name:24s} {str(shape):20s} {nbytes:>10d} B {med * 1e6:10.1f} us/call  "
                  f"x{base / med:.2f} vs torch.empty")
    out = {"reps": args.reps, "calls": args.calls, "threads": 1, "results": results, "pool": pool.stats()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
