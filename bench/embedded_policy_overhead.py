#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the embedded engine's policy hosting costs and gives a training job
alone on its machine (no mlosd): the default `thread-governor` policy, run
by libmlos in a policy host of the job's own process (`policies`), against
the same job with no policy (`none`: MLOS_DEFAULT_POLICIES="", the pool
stays at the grant's thread count), interleaved, order rotated.

    python3 bench/embedded_policy_overhead.py [--reps 3] [--seconds 5] [--out DIR] [--quick]

The job is the suite's unmodified small CNN (bench/suite/workloads/
train_cnn.py, synthetic data) under `mlos run --cpus N` (N: every CPU of
this process), in two scenarios:
- alone: the ratio policies/none is the overhead of hosting (goal: within
  the run-to-run spread, reported next to it);
- beside a hog: one CPU-bound process next to the job; the thread-governor
  should advise one thread fewer, which is what the pool needs.
For `policies` it also samples, from outside, the CPU time of the job's
policy host and of its `mlos-policies` thread, per second of the run.

Needs the mlos_training package installed in this interpreter (the venv of
scripts/setup.sh) and a build (build/bin/mlos; $MLOS_BUILD_DIR). Writes
DIR/embedded_policy_overhead.json and prints a markdown table. Timing is
reported, never judged: this machine is shared."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build")
TRAIN = REPO / "bench" / "suite" / "workloads" / "train_cnn.py"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path):
    """utime + stime of /proc/.../stat, None once it is gone."""
    try:
        text = Path(stat_path).read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid):
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        if int(text.rsplit(")", 1)[1].split()[1]) == pid:
            out.append((int(entry.name), comm))
    return out


class PolicyCost:
    """Samples, until stop(), the CPU time of the job's policy host and of
    its mlos-policies thread (the last reading before they go)."""

    def __init__(self, proc):
        self.proc, self.host, self.thread = proc, 0.0, 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            for pid, comm in children(self.proc.pid):
                if comm == "mlos-policyhost":
                    self.host = cpu_seconds(f"/proc/{pid}/stat") or self.host
            try:
                for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
                    if (task / "comm").read_text().strip() == "mlos-policies":
                        self.thread = cpu_seconds(task / "stat") or self.thread
            except OSError:
                pass
            self._stop.wait(0.2)

    def stop(self):
        self._stop.set()
        self._t.join()


def run_job(config, seconds, warmup, runtime):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=runtime)
    if config == "none":
        env["MLOS_DEFAULT_POLICIES"] = ""
    cpus = len(os.sched_getaffinity(0))
    t0 = time.monotonic()
    proc = subprocess.Popen([str(BUILD / "bin" / "mlos"), "run", "--cpus", str(cpus), "--", sys.executable,
                             str(TRAIN), "--warmup", str(warmup), "--seconds", str(seconds)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cost = PolicyCost(proc)
    out, err = proc.communicate(timeout=300)
    cost.stop()
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the job failed ({config}): {err[-2000:]}")
    r = json.loads(out.strip().splitlines()[-1])
    return {"samples_per_s": r["samples_per_s"], "threads": r["threads"],
            "host_cpu_s_per_s": cost.host / wall, "thread_cpu_s_per_s": cost.thread / wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "2cpu-debian12"))
    ap.add_argument("--quick", action="store_true", help="1 repetition of 2 s")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds, a.warmup = 1, 2, 2
    runtime = tempfile.mkdtemp(prefix="mlos-bench-embedded-")
    configs, scenarios = ["policies", "none"], ["alone", "beside a hog"]
    results = {s: {c: [] for c in configs} for s in scenarios}
    for rep in range(a.reps):
        order = configs if rep % 2 == 0 else configs[::-1]
        for scenario in scenarios:
            for config in order:
                hog = None
                if scenario == "beside a hog":
                    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    time.sleep(0.3)
                try:
                    results[scenario][config].append(run_job(config, a.seconds, a.warmup, runtime))
                finally:
                    if hog is not None:
                        hog.kill()
                        hog.wait()
    summary = {}
    for scenario in scenarios:
        med = {c: statistics.median(r["samples_per_s"] for r in results[scenario][c]) for c in configs}
        spread = {c: (max(r["samples_per_s"] for r in results[scenario][c]) -
                      min(r["samples_per_s"] for r in results[scenario][c])) / med[c] for c in configs}
        summary[scenario] = {
            "samples_per_s_median": med,
            "spread": spread,
            "ratio_policies_over_none": med["policies"] / med["none"],
            "threads": {c: [r["threads"] for r in results[scenario][c]] for c in configs},
            "policy_host_cpu_s_per_s": statistics.median(r["host_cpu_s_per_s"] for r in results[scenario]["policies"]),
            "policy_thread_cpu_s_per_s": statistics.median(r["thread_cpu_s_per_s"] for r in results[scenario]["policies"]),
        }
    doc = {"reps": a.reps, "seconds": a.seconds, "cpus": len(os.sched_getaffinity(0)), "summary": summary,
           "runs": results}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "embedded_policy_overhead.json").write_text(json.dumps(doc, indent=2) + "\n")
    print("| scenario | policies samples/s | none samples/s | ratio | spread (policies, none) | threads (policies, none) | host CPU s/s | thread CPU s/s |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario, s in summary.items():
        m = s["samples_per_s_median"]
        print(f"| {scenario} | {m['policies']:.0f} | {m['none']:.0f} | {s['ratio_policies_over_none']:.2f} | "
              f"{s['spread']['policies']:.0%}, {s['spread']['none']:.0%} | {s['threads']['policies']}, "
              f"{s['threads']['none']} | {s['policy_host_cpu_s_per_s']:.4f} | {s['policy_thread_cpu_s_per_s']:.4f} |")


if __name__ == "__main__":
    main()
