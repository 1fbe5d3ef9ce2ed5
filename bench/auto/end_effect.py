#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What `mlos run --policy auto` gives a job against the best hand-picked
policy set (docs/auto.md, "End effect"), on the suite's scenarios.

Every scenario runs its workload under `mlos run --cpus N` with each policy
set; the hand-picked set with the best median is the reference, and
auto's median is reported as a ratio to its median (each repetition runs
every set once, in a random order).

    python3 bench/auto/end_effect.py [--reps 3] [--seconds 6] [--out FILE.json]
        [--cli build/bin/mlos] [--scenarios solo,noisy-cpu,jpeg,infer-noisy,ddp]

Policy sets: "none" (MLOS_DEFAULT_POLICIES="": no policy at all),
"defaults" (thread-governor), "prefetch", "exclusive" (--exclusive) and
"auto" (classifies and acts).

Every run gets an empty MLOS_TUNE_DIR, so `mlos run` starts it with its
default allocator (docs/tuning.md). With one shared store, the tuner's
trials of other allocators (keyed by the command after `--`, the same for
every policy set) fell on whichever set ran next, up to 1.3x slower, and
were read as the policy set's effect."""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "suite"))
from runner import Failed, Job, run_together  # noqa: E402

ROOT = HERE.parent.parent
SETS = {"none": ([], {"MLOS_DEFAULT_POLICIES": ""}), "defaults": ([], {}),
        "prefetch": (["--policy", "prefetch"], {}), "exclusive": (["--exclusive"], {}),
        "auto": (["--policy", "auto"], {})}
HAND_PICKED = ("none", "defaults", "prefetch", "exclusive")


def scenarios(a):
    """name -> (role, workload, args, neighbour, launcher, metric, higher_is_better)."""
    t = ["--warmup", 2, "--seconds", a.seconds]
    torchrun = [str(Path(sys.executable).parent / "torchrun"), "--nproc-per-node", "2", "--no-python"]
    noisy = ["stress-ng", "--cpu", "1", "--quiet"]
    return {
        "solo": ("train", "train_cnn.py", t, None, [], "samples_per_s", True),
        "noisy-cpu": ("train", "train_cnn.py", t, noisy, [], "samples_per_s", True),
        "jpeg": ("train", "train_cnn.py", ["--data", "jpeg", "--images", a.images, "--batch", 32, *t], None, [],
                 "samples_per_s", True),
        "infer-noisy": ("infer", "infer_loop.py", ["--warmup", 1, "--seconds", a.seconds], noisy, [], "p99_ms",
                        False),
        "ddp": ("train", "train_ddp.py", ["--model", "mlp", *t], None, torchrun, "samples_per_s", True),
    }


def summarise(by_set, metric, higher):
    """The hand-picked set with the best median is the reference (picking
    the best of several sets per repetition would favour the reference with
    the luck of several draws); auto's median against its median, above 1:
    auto better."""
    median = {s: statistics.median([v for v in vs if v is not None])
              for s, vs in by_set.items() if any(v is not None for v in vs)}
    hand = {s: v for s, v in median.items() if s in HAND_PICKED}
    best = (max if higher else min)(hand, key=hand.get)
    ratio = None
    if "auto" in median:
        ratio = median["auto"] / median[best] if higher else median[best] / median["auto"]
    return {"metric": metric, "higher_is_better": higher, "median": median, "best_hand_picked": best,
            "auto_vs_best_hand_picked": ratio}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--cli", default=str(ROOT / "build" / "bin" / "mlos"))
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--images", default="/tmp/mlos-auto-photos", help="photo-sized JPEGs (bench/auto/record.py)")
    ap.add_argument("--scenarios", default="solo,noisy-cpu,jpeg,infer-noisy,ddp")
    ap.add_argument("--out")
    a = ap.parse_args()
    rng = random.Random(1)
    all_scenarios = scenarios(a)
    results = {}
    for rep in range(a.reps):
        for name in a.scenarios.split(","):
            role, workload, args, neighbour, launcher, metric, _ = all_scenarios[name]
            order = list(SETS)
            rng.shuffle(order)
            for s in order:
                flags, env = SETS[s]
                prefix = [a.cli, "run", "--cpus", str(a.cpus), *flags, "--", *launcher]
                job = Job(role, workload, args, prefix)
                try:
                    with tempfile.TemporaryDirectory(prefix="mlos-auto-tune-") as tune:
                        out = run_together([job], dict(os.environ, **env, MLOS_TUNE_DIR=tune), neighbour=neighbour)
                    value = out[role][metric]
                except Failed as e:
                    print(f"end_effect: {name} {s}: {e}", file=sys.stderr)
                    value = None
                results.setdefault(name, {}).setdefault(s, []).append(value)
                print(f"end_effect: rep {rep} {name} {s}: {metric} {value}", file=sys.stderr, flush=True)
    summary = {name: summarise(by_set, *all_scenarios[name][5:]) for name, by_set in results.items()}
    report = {"reps": a.reps, "seconds": a.seconds, "cpus": a.cpus, "sets": {k: v[0] for k, v in SETS.items()},
              "results": results, "summary": summary}
    print(json.dumps(summary, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
