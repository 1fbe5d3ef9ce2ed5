#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exclusive that means exclusive: `mlos run --cpus n-1 --exclusive` next to
n CPU-bound neighbours on n CPUs.

    python3 bench/exclusive_confinement.py [--reps 5] [--seconds 3] [--out DIR] [--quick]

Needs root and a cgroup hierarchy with cpuset (v1 or v2), and a build
(build/bin/mlosd, build/bin/mlos; $MLOS_BUILD_DIR). Starts a private mlosd.
The job is a single-threaded CPU-bound loop on each of its n-1 CPUs (one
process per CPU, iterations counted over --seconds); its speed is the sum.
Three configurations, interleaved (the order rotates each repetition):

- alone:    no neighbours (the job's speed on its CPUs, the baseline);
- mlos:     n neighbours (`stress-ng --cpu n`, the suite's CPU-bound
            neighbour), mlosd --confine off (exclusive among mlOS jobs
            only: what `--exclusive` gave before);
- node:     the same neighbours, mlosd --confine node (they are kept on
            the one CPU left).

Reports the medians and each one's ratio to `alone` (goal for `node`: at
least 0.9), and writes DIR/exclusive_confinement.json. Timing is reported,
never judged: this machine is shared."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build")

WORK = """
import sys, time
end = time.monotonic() + float(sys.argv[1]); n = 0
while time.monotonic() < end:
    for _ in range(10000): n += 1
print(n)
"""
JOB = """
import os, subprocess, sys
cpus = sorted(os.sched_getaffinity(0))
procs = [subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1]], stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda c=c: os.sched_setaffinity(0, {c})) for c in cpus]
print(sum(int(p.communicate()[0]) for p in procs))
"""


def start_mlosd(tmp: Path, confine: str):
    sock = tmp / "mlosd.sock"
    sock.unlink(missing_ok=True)  # the last run's, whose mlosd has stopped
    log_path = tmp / f"mlosd-{confine}.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    log = open(log_path, "a")
    p = subprocess.Popen([str(BUILD / "bin" / "mlosd"), "--socket", str(sock), "--state-dir", str(tmp / "state"),
                          "--cgroup-base", f"mlos-bench-{os.getpid()}", "--metrics-listen", "",
                          "--ledger-dir", str(tmp), "--confine", confine], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 10
    ready = lambda: "ready on" in log_path.read_text()[offset:]  # noqa: E731
    while not ready() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if not ready():
        p.kill()
        sys.exit(f"mlosd did not start: {log_path.read_text()[offset:]}")
    return p, sock


def one_run(tmp: Path, config: str, n: int, seconds: float) -> float:
    mlosd, sock = start_mlosd(tmp, "node" if config == "node" else "off")
    hogs = []
    try:
        if config != "alone":
            hogs = [subprocess.Popen(["stress-ng", "--cpu", str(n), "--quiet"])]  # the suite's neighbour
            time.sleep(0.3)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
        env.update(MLOS_MODE="daemon", MLOS_DAEMON_SOCKET=str(sock), MLOS_RUNTIME_DIR=str(tmp))
        r = subprocess.run([str(BUILD / "bin" / "mlos"), "run", "--cpus", str(n - 1), "--exclusive", "--",
                            sys.executable, "-c", JOB, str(seconds), WORK], env=env, capture_output=True, text=True,
                           timeout=seconds * 10 + 30)
        if r.returncode != 0:
            sys.exit(f"mlos run failed ({config}): {r.stderr}")
        return int(r.stdout.strip()) / seconds
    finally:
        for h in hogs:
            h.terminate()  # stress-ng stops its workers on SIGTERM
            h.wait()
        mlosd.terminate()
        mlosd.wait(10)
        # The job's cgroups are gone with it; the base stays (mlosd keeps it).
        name = f"mlos-bench-{os.getpid()}"
        for base in [*Path("/sys/fs/cgroup").glob(f"*/{name}"), Path("/sys/fs/cgroup") / name]:
            if not base.is_dir():
                continue
            for child in (c for c in base.iterdir() if c.is_dir()):
                child.rmdir()
            base.rmdir()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "2cpu-debian12"))
    ap.add_argument("--quick", action="store_true", help="1 repetition of 0.3 s (a smoke run)")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds = 1, 0.3
    if os.geteuid() != 0:
        sys.exit("needs root (mlosd moves processes between cgroups)")
    n = len(os.sched_getaffinity(0))
    if n < 2:
        sys.exit("needs at least 2 CPUs")
    configs = ["alone", "mlos", "node"]
    speeds = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="mlos-confine-bench-") as d:
        for rep in range(a.reps):
            order = configs[rep % 3:] + configs[:rep % 3]
            for c in order:
                speeds[c].append(one_run(Path(d), c, n, a.seconds))
    med = {c: statistics.median(v) for c, v in speeds.items()}
    result = {"cpus": n, "job_cpus": n - 1, "neighbours": n, "seconds": a.seconds, "reps": a.reps,
              "iterations_per_second": speeds, "median": med,
              "ratio_to_alone": {c: med[c] / med["alone"] for c in configs}}
    print("| configuration | job speed (median, iterations/s) | ratio to alone |")
    print("|---|---:|---:|")
    for c in configs:
        print(f"| {c} | {med[c]:.3g} | {med[c] / med['alone']:.2f} |")
    if not a.quick:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "exclusive_confinement.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
