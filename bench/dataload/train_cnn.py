#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The data-bound training case: a small CNN trained at 224x224 on 100
classes, fed by each loader of bench/dataload/loaders.py (or by one fixed
synthetic batch: compute only), all on the same CPUs.

    python bench/dataload/train_cnn.py --data DIR [--cpus 0-1]
        [--loaders synthetic,dataloader-pil:2,dataloader-tv:2,spdl:2,dali-fused:2,...]
        [--model convnet|resnet18] [--width 8] [--steps 30] [--warmup-steps 5]
        [--reps 2] [--json out.json | --json-into existing.json]

A loader is KIND:N (N: DataLoader workers or threads, as in baselines.py),
`synthetic`, or `mlos` (the mlOS ImageLoader; its stats, with the
decoding threads its governor left working, are recorded per run). The model: `convnet` is a 5x5 stride-4 stem and three
stride-2 3x3 conv+BN+ReLU layers, widths w..8w, global average pool, linear
(w=8: ~4.6 M multiply-adds forward per image, ~2 CPU-ms per sample for
forward+backward+SGD on a quiet 2-CPU machine), chosen so that one step's
compute costs less CPU than the DataLoader's decode+augment of its batch
(~3-4 CPU-ms per image) but not nothing; torchvision's resnet18 (~1.8 G
multiply-adds) trains at a few samples/s on 2 CPUs: compute-bound (try
--model resnet18 --loaders synthetic).

Each loader runs in a fresh child pinned to --cpus (os.sched_setaffinity,
inherited by workers); torch in the training process uses one intra-op
thread per CPU (torch's default for that affinity). SGD, momentum 0.9, lr
0.01, fixed seed. --warmup-steps steps are not timed; then --steps are:
samples/s = steps*batch / wall seconds; CPU-s/sample from /proc over the
child's tree (as baselines.py); others_cpus: how busy other processes kept
the CPUs meanwhile (before each run the parent waits up to --quiet-wait s
for them to be quiet, as baselines.py does). Repetitions are interleaved;
medians reported."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import loaders  # noqa: E402

DEFAULT_LOADERS = ("synthetic,dataloader-pil:1,dataloader-pil:2,dataloader-tv:2,webdataset-tv:2,"
                   "spdl:2,dali:2,dali-fused:2,mlos")


def convnet(width, classes=100):
    import torch.nn as nn

    def conv(cin, cout, k, stride):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    w = width
    return nn.Sequential(*conv(3, w, 5, 4), *conv(w, 2 * w, 3, 2), *conv(2 * w, 4 * w, 3, 2),
                         *conv(4 * w, 8 * w, 3, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * w, classes))


def make_model(name, width):
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=100)
    return convnet(width)


def synthetic_batches(batch):
    import torch
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 3, loaders.SIZE, loaders.SIZE, generator=g)
    y = torch.randint(0, 100, (batch,), generator=g)
    while True:
        yield x, y


def run_child(cfg):
    os.sched_setaffinity(0, cfg["cpus"])
    import torch
    torch.set_num_threads(len(cfg["cpus"]))
    torch.manual_seed(0)
    kind, par, batch = cfg["kind"], cfg["parallel"], cfg["batch"]
    if kind == "synthetic":
        it = synthetic_batches(batch)
    elif kind == "mlos":
        it = loaders.mlos_loader(cfg["data"], cfg["cpus"], batch)
    else:
        it = loaders.batches(kind, cfg["data"], batch, par, cfg["seed"])
    net = make_model(cfg["model"], cfg["width"])
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    me, losses = os.getpid(), []
    for step in range(cfg["warmup_steps"] + cfg["steps"]):
        if step == cfg["warmup_steps"]:
            busy0, cpu0 = baselines.busy_cpu_seconds(cfg["cpus"]), baselines.tree_cpu_seconds(me)
            t0 = time.perf_counter()
        x, y = next(it)
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    t1, cpu1, busy1 = time.perf_counter(), baselines.tree_cpu_seconds(me), baselines.busy_cpu_seconds(cfg["cpus"])
    n = cfg["steps"] * batch
    # The mlOS loader's own view: reader, decoding threads the governor
    # left working, time the trainer waited for batches.
    extra = {"mlos_stats": it.loader.stats()} if kind == "mlos" else {}
    print(json.dumps({"samples_per_s": n / (t1 - t0), "cpu_s_per_sample": (cpu1 - cpu0) / n,
                      "others_cpus": max(0.0, (busy1 - busy0) - (cpu1 - cpu0)) / (t1 - t0),
                      "seconds": t1 - t0, "loss_first": losses[0], "loss_last": losses[-1],
                      "torch_threads": torch.get_num_threads(), **extra}), flush=True)
    os._exit(0)


def run_one(cfg, timeout):
    proc = subprocess.run([sys.executable, __file__, "--_child", json.dumps(cfg)], capture_output=True, text=True,
                          timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = [l for l in proc.stderr.strip().splitlines() if l.strip()][-1:] or [f"exit {proc.returncode}"]
        return {"error": tail[0][:500]}
    return json.loads(lines[-1])


def parse_spec(spec, ncpu):
    kind, _, n = spec.partition(":")
    if kind not in loaders.KINDS + ("synthetic", "mlos"):
        raise SystemExit(f"unknown loader {kind!r}")
    return kind, int(n) if n else (0 if kind == "synthetic" else ncpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data")
    ap.add_argument("--cpus", default=None)
    ap.add_argument("--loaders", default=DEFAULT_LOADERS)
    ap.add_argument("--model", choices=("convnet", "resnet18"), default="convnet")
    ap.add_argument("--width", type=int, default=8, help="convnet base width")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--quiet-wait", type=float, default=30,
                    help="before each run, wait up to this many seconds for the CPUs to be quiet (0: don't)")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--json-into", help="put the report under key 'train_cnn' of this existing JSON file")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._child:
        return run_child(json.loads(a._child))
    cpus = baselines.parse_cpus(a.cpus) if a.cpus else sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus)
    specs = [parse_spec(s, len(cpus)) for s in a.loaders.split(",") if s]
    if any(k != "synthetic" for k, _ in specs) and not a.data:
        ap.error("--data is required for loaders other than synthetic")
    data = str(Path(a.data).resolve()) if a.data else None
    report = {"model": a.model, "width": a.width if a.model == "convnet" else None, "batch": a.batch,
              "quiet_wait_s": a.quiet_wait,
              "steps": a.steps, "warmup_steps": a.warmup_steps, "reps": a.reps, "cpus": cpus, "data": data,
              "unavailable": {}, "results": []}
    runs = {s: [] for s in specs}
    for rep in range(a.reps):
        for kind, par in specs:
            if runs[(kind, par)] and all("error" in r for r in runs[(kind, par)]):
                continue
            cfg = {"kind": kind, "parallel": par, "data": data, "cpus": cpus, "batch": a.batch, "seed": a.seed,
                   "model": a.model, "width": a.width, "steps": a.steps, "warmup_steps": a.warmup_steps}
            waited, before = baselines.wait_for_quiet(cpus, a.quiet_wait) if a.quiet_wait > 0 else (0.0, None)
            r = run_one(cfg, a.timeout)
            r["quiet_wait_s"], r["others_cpus_before"] = waited, before
            runs[(kind, par)].append(r)
            msg = r.get("error") or (f"{r['samples_per_s']:.1f} samples/s, {r['cpu_s_per_sample'] * 1000:.2f} "
                                     f"CPU-ms/sample, others {r['others_cpus']:.2f} CPUs")
            print(f"train_cnn: rep {rep + 1}/{a.reps} {kind}:{par}: {msg}", file=sys.stderr)
    lines = ["| loader | samples/s (min-max) | CPU-s/sample | others' CPUs |", "|---|---|---|---|"]
    for (kind, par), rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            summary = {"error": rs[0]["error"]}
            lines.append(f"| {kind}:{par} | error: {rs[0]['error'][:90]} | | |")
        else:
            sps = [r["samples_per_s"] for r in ok]
            summary = {"samples_per_s": round(statistics.median(sps), 1), "samples_per_s_min": round(min(sps), 1),
                       "samples_per_s_max": round(max(sps), 1),
                       "cpu_s_per_sample": round(statistics.median(r["cpu_s_per_sample"] for r in ok), 5),
                       "others_cpus": round(statistics.median(r["others_cpus"] for r in ok), 2), "reps": len(ok)}
            lines.append(f"| {kind}:{par} | {summary['samples_per_s']:.0f} ({min(sps):.0f}-{max(sps):.0f}) | "
                         f"{summary['cpu_s_per_sample'] * 1000:.2f} ms | {summary['others_cpus']:.2f} |")
        report["results"].append({"kind": kind, "parallel": par, "summary": summary, "runs": rs})
    report["table_md"] = "\n".join(lines)
    print(report["table_md"])
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")
    if a.json_into:
        doc = json.loads(Path(a.json_into).read_text())
        doc["train_cnn"] = report
        Path(a.json_into).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
