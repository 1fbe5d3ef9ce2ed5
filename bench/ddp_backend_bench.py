#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DDP step time with the `mlos` torch.distributed backend against `gloo`
(docs/benchmarks.md, "DDP backend"): 2 ranks on this host train the same
model; each repetition runs every configuration once, in a random order,
and the report gives each configuration's median step time over the
repetitions and the ratio against gloo in the same run.

    python3 bench/ddp_backend_bench.py [--model cnn|resnet18] [--reps 5]
        [--steps 20] [--world 2] [--mlos-run build/bin/mlos]
        [--env OMP_WAIT_POLICY=PASSIVE ...] [--launcher manual|torchrun]

With --mlos-run, each backend also runs with every rank under
`mlos run --cpus N` (N: this machine's CPUs divided by the world size);
with --launcher torchrun, torchrun (with its defaults) starts the ranks,
and --mlos-run puts torchrun under one `mlos run` on every CPU, which
splits them between the local ranks.
--env sets a variable in every rank's environment (all configurations).
Output: one JSON line per run, then a summary line."""
import argparse
import datetime
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_for(name):
    import torch.nn as nn
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10), (3, 64, 64)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 8 * 8, 10)), (3, 32, 32)


def worker(args):
    """One rank: warm-up steps, then `steps` timed ones; rank 0 prints."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import mlos_training.distributed  # noqa: F401  (registers "mlos")
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    model, shape = model_for(args.model)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(args.batch, *shape)
    y = torch.randint(0, 10, (args.batch,))
    times = []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        print(json.dumps({"step_ms": statistics.median(times) * 1e3}), flush=True)
    dist.destroy_process_group()


def worker_command(args, backend):
    return [__file__, "--worker", "--backend", backend, "--model", args.model, "--steps", str(args.steps),
            "--warmup", str(args.warmup), "--batch", str(args.batch)]


def run_under_torchrun(args, backend, under_mlos):
    """The ranks as torchrun starts them (its defaults: OMP_NUM_THREADS=1
    for more than one rank per node); under_mlos: torchrun itself under
    one `mlos run` on every CPU, which splits them between the local ranks."""
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.env))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(args.world),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port())] + worker_command(args, backend)
    if under_mlos:
        cmd = [args.mlos_run, "run", "--cpus", str(os.cpu_count() or 1), "--"] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{backend}: torchrun failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads([line for line in p.stdout.splitlines() if '"step_ms"' in line][-1])["step_ms"]


def run_once(args, backend, under_mlos):
    if args.launcher == "torchrun":
        return run_under_torchrun(args, backend, under_mlos)
    port = free_port()
    cpus = max(1, (os.cpu_count() or 1) // args.world)
    procs = []
    for r in range(args.world):
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.env), RANK=str(r),
                   WORLD_SIZE=str(args.world), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        cmd = [sys.executable] + worker_command(args, backend)
        if under_mlos:
            cmd = [args.mlos_run, "run", "--cpus", str(cpus), "--"] + cmd
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{backend}: a rank failed ({p.returncode}): {err[-2000:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])["step_ms"]


def run_retrying(args, backend, under_mlos):
    """run_once, and once more when a rank failed (reported, not hidden:
    torch's own gloo backend was seen to abort at exit, "terminate called
    without an active exception")."""
    try:
        return run_once(args, backend, under_mlos)
    except RuntimeError as e:
        print(json.dumps({"failed": backend, "mlos_run": under_mlos, "error": str(e)[-300:]}), flush=True)
        return run_once(args, backend, under_mlos)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=("cnn", "resnet18"), default="cnn")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--mlos-run", help="the mlos CLI: also run every rank under `mlos run`")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in every rank's environment (repeatable)")
    ap.add_argument("--launcher", choices=("manual", "torchrun"), default="manual",
                    help="manual: one process per rank, started here (each under its own `mlos run --cpus "
                         "CPUS/WORLD` with --mlos-run); torchrun: torchrun with its defaults starts them (under "
                         "one `mlos run` on every CPU with --mlos-run)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    configs = [(b, False) for b in ("gloo", "mlos")]
    if args.mlos_run:
        configs += [(b, True) for b in ("gloo", "mlos")]
    results = {c: [] for c in configs}
    for rep in range(args.reps):
        for backend, under in random.sample(configs, len(configs)):
            ms = run_retrying(args, backend, under)
            results[(backend, under)].append(ms)
            print(json.dumps({"rep": rep, "backend": backend, "mlos_run": under, "model": args.model,
                              "step_ms": round(ms, 3)}), flush=True)
    base = statistics.median(results[("gloo", False)])
    summary = {f"{b}{'+mlos_run' if u else ''}": {"median_step_ms": round(statistics.median(v), 3),
                                                  "speedup_vs_gloo": round(base / statistics.median(v), 3)}
               for (b, u), v in results.items()}
    print(json.dumps({"summary": summary, "model": args.model, "world": args.world, "reps": args.reps,
                      "env": args.env, "launcher": args.launcher}))


if __name__ == "__main__":
    main()
