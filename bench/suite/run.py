#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mlOS benchmark suite: training throughput and latency under generic
Linux, expert hand tuning and mlOS, in the same run, repetitions
interleaved, medians and ratios reported; plus memory-pressure survival,
checkpoint stall and micro costs from the project's own tools.

    /opt/mlos/venv/bin/python bench/suite/run.py [--quick] [--out DIR]
    (or: bash scripts/bench.sh [--quick], which sets up and builds first)

Writes DIR/results.json (machine, versions, every repetition), DIR/results.md
and DIR/*.png. --quick only checks that every scenario runs (CI): a fraction
of a second per measurement, one repetition, numbers meaningless."""
import argparse
import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "workloads"))

import extras  # noqa: E402
import report  # noqa: E402
from make_images import make_images  # noqa: E402
from runner import Failed, run_together  # noqa: E402
from scenarios import build  # noqa: E402


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    versions = {}
    for mod in ("torch", "torchvision", "numpy", "PIL"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    sn = subprocess.run(["stress-ng", "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    return {"cpu_model": cpu, "cpus": os.cpu_count(), "allowed_cpus": len(os.sched_getaffinity(0)),
            "memory_gib": round(mem / 2**20, 1), "kernel": platform.release(), "python": platform.python_version(),
            "versions": versions, "stress_ng": sn, "mlos_commit": commit,
            "cgroup": "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() and
                      Path("/sys/fs/cgroup/cgroup.controllers").read_text().strip() else "v1"}


def shown(argv, work):
    """A command as the report shows it: paths relative to the repository."""
    text = " ".join(argv).replace(sys.executable, "python").replace(str(work), "$WORK")
    return text.replace(str(REPO) + "/", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest")
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--reps", type=int, help="repetitions per configuration (default 3; quick 1)")
    ap.add_argument("--seconds", type=float, help="measured seconds per run (default 5; quick 0.3)")
    ap.add_argument("--only", nargs="*", help="scenario names to run (default: all, and the extras)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite results.md and the plots from DIR/results.json without measuring")
    a = ap.parse_args()
    if a.report_only:
        results = json.loads((a.out / "results.json").read_text())
        (a.out / "results.md").write_text(report.markdown(results))
        report.plots(results, a.out)
        return
    reps = a.reps or (1 if a.quick else 3)
    seconds = a.seconds or (0.3 if a.quick else 5.0)
    warmup = 0.2 if a.quick else 1.5
    cli = a.build / "bin" / "mlos"
    for tool in ("stress-ng", "taskset", str(cli)):
        if not shutil.which(tool):
            sys.exit(f"bench suite: {tool} not found (bash scripts/setup.sh; bash scripts/build.sh)")
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mlos-bench-"))  # images, runtime directory: not results
    atexit.register(shutil.rmtree, work, True)
    images = make_images(str(work / "images"), count=128 if a.quick else 1024)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLOS_", "OMP_", "MKL_"))}
    env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(work / "runtime"))
    (work / "runtime").mkdir(exist_ok=True)

    t_start = time.monotonic()
    results = {"machine": machine(), "quick": a.quick, "reps": reps, "seconds": seconds, "warmup": warmup,
               "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "scenarios": [], "extras": {}}
    ncpu = len(os.sched_getaffinity(0))
    for sc in build(str(cli), ncpu, images, seconds, warmup):
        if a.only and sc.name not in a.only:
            continue
        names = list(sc.configs)
        runs = {n: [] for n in names}
        for rep in range(reps):
            # Interleaved, and the order rotated each repetition, so that a
            # slow phase of the machine does not land on one configuration.
            order = names[rep % len(names):] + names[:rep % len(names)]
            for name in order:
                # A fresh tuning store for every run: the suite measures what
                # mlos run does for a command it has never seen (its default
                # allocator); headline.py measures it after its trials.
                run_env = {**env, "MLOS_TUNE_DIR": str(work / f"tune-{sc.name}-{rep}-{names.index(name)}")}
                try:
                    runs[name].append(run_together(sc.configs[name], run_env, sc.neighbour))
                except Failed as e:
                    sys.exit(f"bench suite: {sc.name} / {name}: {e}")
                print(f"[{time.monotonic() - t_start:6.0f} s] {sc.name:12s} rep {rep + 1}/{reps} {name}: "
                      f"{report.brief(runs[name][-1])}", file=sys.stderr, flush=True)
        results["scenarios"].append({"name": sc.name, "title": sc.title, "kind": sc.kind, "baseline": sc.baseline,
                                     "neighbour": sc.neighbour,
                                     "commands": {n: [shown(j.argv(), work) for j in js] for n, js in sc.configs.items()},
                                     "runs": runs})
    if not a.only:
        print("extras: memory pressure, checkpoint stall, phase hints, micro costs", file=sys.stderr, flush=True)
        results["extras"]["memory_pressure"] = extras.memory_pressure(a.build, 1 if a.quick else 3)
        results["extras"]["checkpoint"] = extras.checkpoint_stall(a.build, 1 if a.quick else 5,
                                                                  [16] if a.quick else [64, 256])
        results["extras"]["phase_hints"] = extras.phase_hints(a.build, a.quick)
        results["extras"]["micro"] = extras.micro(a.build, 1 if a.quick else 5, 0.05 if a.quick else 0.5)
    results["wall_seconds"] = time.monotonic() - t_start
    (a.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    md = report.markdown(results)
    (a.out / "results.md").write_text(md)
    report.plots(results, a.out)
    print(md)
    print(f"bench suite: {results['wall_seconds']:.0f} s; results in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
