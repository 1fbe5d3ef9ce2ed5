#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Records the runs the `auto` policy's classifier is trained on
(docs/auto.md, "Training data").

Every run is one of the suite's workloads under
`mlos run --cpus N --policy auto='{"act": false, "confirm": 1}'`: auto only
classifies and reports, and this script reads each job's report
(<runtime>/policy-reports/<claim>.json) as it changes, keeping every
window's features. A run's label is its scenario's class:

  input_bound          train_cnn.py on photo-sized JPEGs (decode in 0-2 DataLoader workers)
  compute_bound        train_cnn.py synthetic or on 64x64 JPEGs (2 workers), train_resnet.py,
                       train_transformer.py
  memory_bound         the compute workloads in a memory cgroup whose limit is
                       lowered, after warm-up, to just above what they use
  communication_bound  train_ddp.py (DDP, the mlos backend) under torchrun, 2 ranks
  latency_inference    infer_loop.py (a batch every P ms)

Runs vary in model, size, threads and neighbour (every other run of a class
has `stress-ng --cpu 1` beside it), and are interleaved across classes so
the machine's noise falls on all of them.

    python3 bench/auto/record.py --runs-per-class 20 --out FILE.jsonl
        [--cli build/bin/mlos] [--seconds 10] [--images DIR] [--seed 1]

Needs root for the memory cgroup (cgroup v1 memory controller, or v2).
Writes one JSON line per window: run, class, scenario, neighbour, t (s since
the job's first report), job (claim id), features."""
import argparse
import glob
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = os.path.join(ROOT, "bench", "suite", "workloads")
CLASSES = ("input_bound", "compute_bound", "memory_bound", "communication_bound", "latency_inference")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workload(name, *args):
    return [sys.executable, os.path.join(WORKLOADS, name), *map(str, args)]


COMPUTE_KINDS = ("cnn", "resnet", "transformer", "cnn-small-jpeg")


def compute_workload(rng, t, a):
    kind = rng.choice(a.compute_kinds)
    threads = rng.choice((None, 1, 2))
    th = ["--threads", threads] if threads else []
    if kind == "cnn-small-jpeg":
        # A light input pipeline (64x64 JPEGs in 2 workers): the job still
        # spends most of its time computing.
        b = rng.choice((32, 64, 128))
        return (f"train_cnn small jpeg batch {b} threads {threads}",
                workload("train_cnn.py", "--data", "jpeg", "--images", a.small_images, "--workers", 2, "--batch", b,
                         *th, *t))
    if kind == "cnn":
        b = rng.choice((32, 64, 128))
        return f"train_cnn synthetic batch {b} threads {threads}", workload("train_cnn.py", "--batch", b, *th, *t)
    if kind == "resnet":
        size, b = rng.choice((64, 96, 112)), rng.choice((4, 8, 16))
        return f"train_resnet {size}px batch {b} threads {threads}", workload("train_resnet.py", "--size", size,
                                                                             "--batch", b, *th, *t)
    seq, b = rng.choice((64, 128, 256)), rng.choice((4, 8))
    return f"train_transformer seq {seq} batch {b} threads {threads}", workload("train_transformer.py", "--seq", seq,
                                                                               "--batch", b, *th, *t)


def scenario(cls, rng, a):
    """(description, argv, memory-limited) of one run of class `cls`."""
    t = ["--warmup", 1, "--seconds", a.seconds]
    if cls == "input_bound":
        workers, b = rng.choice((0, 1, 2)), rng.choice((16, 32, 64))
        threads = rng.choice((None, 1))
        th = ["--threads", threads] if threads else []
        return (f"train_cnn jpeg workers {workers} batch {b} threads {threads}",
                workload("train_cnn.py", "--data", "jpeg", "--images", a.images, "--workers", workers, "--batch", b,
                         *th, *t), False)
    if cls == "compute_bound":
        return (*compute_workload(rng, t, a), False)
    if cls == "memory_bound":
        return (*compute_workload(rng, t, a), True)
    if cls == "communication_bound":
        model = rng.choice(("mlp", "mlp", "cnn"))
        width, b = rng.choice((512, 1024, 2048)), rng.choice((8, 16, 32))
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        return (f"train_ddp {model} width {width} batch {b}",
                [torchrun, "--nproc-per-node", "2", "--master-port", str(free_port()),
                 os.path.join(WORKLOADS, "train_ddp.py"), "--model", model, "--width", str(width), "--batch", str(b),
                 *map(str, t)], False)
    period, threads = rng.choice((5, 10, 20, 40)), rng.choice((None, 1, 2))
    th = ["--threads", threads] if threads else []
    return (f"infer_loop period {period} ms threads {threads}",
            workload("infer_loop.py", "--period-ms", period, *th, "--warmup", 1, "--seconds", a.seconds), False)


class MemoryCgroup:
    """A memory cgroup of its own for one run (v1 controller or v2)."""

    def __init__(self, name):
        v1 = "/sys/fs/cgroup/memory"
        if os.path.isdir(v1):
            self.path, self.v1 = os.path.join(v1, name), True
        else:
            self.path, self.v1 = os.path.join("/sys/fs/cgroup", name), False
        os.makedirs(self.path, exist_ok=True)

    def _read(self, f):
        with open(os.path.join(self.path, f)) as fh:
            return fh.read()

    def _write(self, f, v):
        with open(os.path.join(self.path, f), "w") as fh:
            fh.write(str(v))

    def working_set(self):
        usage = int(self._read("memory.usage_in_bytes" if self.v1 else "memory.current"))
        stat = dict(line.split() for line in self._read("memory.stat").splitlines())
        inactive = int(stat.get("total_inactive_file" if self.v1 else "inactive_file", 0))
        return usage - inactive

    def limit(self, bytes_):
        self._write("memory.limit_in_bytes" if self.v1 else "memory.max", bytes_)

    def procs_file(self):
        return os.path.join(self.path, "cgroup.procs")

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def descendants(pid):
    """pid and every process below it."""
    children = {}
    for d in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d.split("/")[2]))
        except (OSError, IndexError, ValueError):
            pass
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo.extend(children.get(p, ()))
    return out


def record_run(run_id, cls, rng, a, out):
    desc, argv, memory_limited = scenario(cls, rng, a)
    neighbour = run_id % 2 == 1  # every other run of a class
    reports = os.path.join(a.runtime, "policy-reports")
    cmd = [a.cli, "run", "--cpus", str(a.cpus), "--policy", 'auto={"act": false, "confirm": 1}', "--", *argv]
    cg = MemoryCgroup(f"mlos-auto-record-{os.getpid()}-{run_id}") if memory_limited else None
    if cg:
        # A limit from the start, far above what the job uses: libmlos finds
        # the job's limited cgroup when the job starts, and follows its limit.
        cg.limit(16 << 30)
    pre = (lambda: open(cg.procs_file(), "w").write(str(os.getpid()))) if cg else None
    noisy = subprocess.Popen(["stress-ng", "--cpu", "1", "--quiet"]) if neighbour else None
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pre,
                           env=dict(os.environ, MLOS_RUNTIME_DIR=a.runtime))
    start, seen, first, limit_at, windows = time.monotonic(), {}, {}, None, 0
    limited_at = None
    try:
        while job.poll() is None:
            time.sleep(0.25)
            now = time.monotonic()
            if cg and limited_at is None and now - start > a.limit_after:
                ws = cg.working_set()
                factor = rng.uniform(1.10, 1.22)
                cg.limit(int(ws * factor))
                limited_at, limit_at = now, (ws, factor)
            pids = descendants(job.pid)
            for path in glob.glob(os.path.join(reports, "*.json")):
                try:
                    with open(path) as f:
                        r = json.load(f)
                except (OSError, ValueError):
                    continue
                if r.get("pid") not in pids or r.get("pid") == job.pid and argv[0].endswith("torchrun"):
                    continue  # not this run's, or torchrun's own job (its agent process imports torch)
                claim = os.path.basename(path)[:-5]
                rep = r.get("reports", {}).get("auto", {})
                n = rep.get("windows", 0)
                if n == 0 or seen.get(claim) == n:
                    continue
                seen[claim] = n
                first.setdefault(claim, now)
                if cg and (limited_at is None or now - limited_at < a.window + 1):
                    continue  # the limit is not in the window yet
                out.write(json.dumps({"run": run_id, "class": cls, "scenario": desc, "neighbour": neighbour,
                                      "t": round(now - first[claim], 2), "job": claim, "pid": r["pid"],
                                      "features": rep.get("features"), "window_verdict": rep.get("window")}) + "\n")
                windows += 1
    finally:
        if job.poll() is None:
            job.kill()
        _, err = job.communicate()
        if noisy:
            noisy.send_signal(signal.SIGTERM)
            noisy.wait()
        if cg:
            cg.remove()
    out.flush()
    note = f" limit {limit_at[1]:.2f}x of {limit_at[0] >> 20} MiB" if limit_at else ""
    print(f"record: run {run_id} {cls}: {desc}{' + stress-ng' if neighbour else ''}{note}: rc {job.returncode}, "
          f"{windows} windows", file=sys.stderr, flush=True)
    if job.returncode != 0:
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    return windows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs-per-class", type=int, default=20)
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "mlos"))
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--window", type=float, default=3, help="auto's window (s): memory runs are kept from one "
                                                           "window after the limit")
    ap.add_argument("--limit-after", type=float, default=6, help="s after start a memory run's limit is set")
    ap.add_argument("--images", help="photo-sized JPEGs (default: made once under /tmp)")
    ap.add_argument("--small-images", help="64x64 JPEGs (default: made once under /tmp)")
    ap.add_argument("--compute-kinds", default=",".join(COMPUTE_KINDS),
                    help="the compute workloads to draw from (compute- and memory-bound runs)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not a.images:
        a.images = "/tmp/mlos-auto-photos"
        if not os.path.isdir(a.images):
            subprocess.run([sys.executable, os.path.join(WORKLOADS, "make_images.py"), a.images, "512", "--photo"],
                           check=True)
    if not a.small_images:
        a.small_images = "/tmp/mlos-auto-small"
        if not os.path.isdir(a.small_images):
            subprocess.run([sys.executable, os.path.join(WORKLOADS, "make_images.py"), a.small_images, "512"],
                           check=True)
    a.compute_kinds = a.compute_kinds.split(",")
    for tool in ("stress-ng",):
        if shutil.which(tool) is None:
            sys.exit(f"record: {tool} is not installed (scripts/setup.sh)")
    rng = random.Random(a.seed)
    classes = a.classes.split(",")
    a.runtime = tempfile.mkdtemp(prefix="mlos-auto-record-")
    try:
        with open(a.out, "a") as out:
            for i in range(a.runs_per_class):
                order = list(classes)
                rng.shuffle(order)
                for c in order:
                    run_id = i * len(CLASSES) + CLASSES.index(c)
                    record_run(run_id, c, rng, a, out)
    finally:
        shutil.rmtree(a.runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
