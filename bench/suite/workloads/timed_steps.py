# SPDX-License-Identifier: Apache-2.0
"""The measuring loop shared by the heavier workloads: run `step()` for a
warm-up, then count samples for a measured span, and print the one JSON
line the suite reads (samples_per_s, steps, seconds, torch threads, the
main thread's CPUs). Time-bounded with a floor of steps, so a model whose
step takes seconds is still measured over several of them."""
import json
import os
import time

import torch

from process_facts import runtime_libraries


def run(step, samples_per_step, warmup, seconds, min_steps=3, extra=None):
    start = time.perf_counter()
    while True:
        step()
        if time.perf_counter() - start >= warmup:
            break
    t0, steps = time.perf_counter(), 0
    while True:
        step()
        steps += 1
        now = time.perf_counter()
        if now - t0 >= seconds and steps >= min_steps:
            break
    print(json.dumps({"samples_per_s": steps * samples_per_step / (now - t0), "steps": steps, "seconds": now - t0,
                      "threads": torch.get_num_threads(), "cpus": sorted(os.sched_getaffinity(0)), **runtime_libraries(), **(extra or {})}),
          flush=True)


def parse_args(ap, warmup=2.0, seconds=8.0):
    """Adds --warmup, --seconds and --threads to `ap`, parses, applies
    --threads and seeds torch."""
    ap.add_argument("--warmup", type=float, default=warmup, help="seconds of warm-up steps (at least one step)")
    ap.add_argument("--seconds", type=float, default=seconds, help="measured seconds (at least 3 steps)")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own choice)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    return a


def training_step(opt, loss_of):
    """One training step as users write it: the loss, zero_grad, backward,
    step."""
    def step():
        loss = loss_of()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step
