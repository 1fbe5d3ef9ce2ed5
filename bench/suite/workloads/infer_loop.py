# SPDX-License-Identifier: Apache-2.0
"""A latency-sensitive inference loop, as a user would write it (no mlOS
code): every --period-ms it runs the small CNN on a batch of 8 images and
records how late the answer is, measured from when the request was due
(waking up late counts, as it would for a client waiting).

    python infer_loop.py [--seconds S] [--period-ms P]

Prints one JSON line: p50_ms, p99_ms, max_ms, requests, torch threads."""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cnn import model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--period-ms", type=float, default=10.0)
    ap.add_argument("--threads", type=int)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    net = model().eval()
    x = torch.randn(8, 3, 32, 32)
    period = a.period_ms / 1000
    latencies = []
    start = due = time.perf_counter()
    with torch.inference_mode():
        while True:
            net(x)
            done = time.perf_counter()
            if done - start >= a.warmup:
                latencies.append((done - due) * 1000)
            if done - start >= a.warmup + a.seconds:
                break
            due += period
            if due > done:
                time.sleep(due - done)
            else:
                due = done  # fell behind: the next request is due now
    q = statistics.quantiles(latencies, n=100)
    print(json.dumps({"p50_ms": statistics.median(latencies), "p99_ms": q[98], "max_ms": max(latencies),
                      "requests": len(latencies), "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
