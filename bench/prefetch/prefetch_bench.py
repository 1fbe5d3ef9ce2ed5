#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Learned read-ahead (the `prefetch` policy) on a dataset twice the page
cache the job may use, against plain Linux readahead.

    python3 bench/prefetch/prefetch_bench.py [--files 1024] [--file-kb 1024]
        [--limit-mb 512] [--epochs 3] [--reps 3] [--compute-ms 3] [--out DIR] [--quick]

Each run is a fresh process (bench/prefetch/reader.py) in a memory cgroup
of its own (cgroup v1 memory.limit_in_bytes, or v2 memory.max) limited to
--limit-mb, with the page cache dropped before it (/proc/sys/vm/drop_caches).
The reader reads every file of the dataset whole, once per epoch, marking
DATA_LOADING while it reads and FORWARD while it "computes" (a fixed
--compute-ms of CPU per file), and records each read in the job's read log.

Variants (one embedded mlOS job each, MLOS_DEFAULT_POLICIES=""):
- linux:   no policy: the kernel's own readahead within each file;
- plan:    prefetch {"learn": false}; the reader announces each epoch's
           order (mlos_training_announce_reads) as a sampler would;
- learned: prefetch {"use_plan": false}; nothing announced, the Markov
           model learns from the read log.
Orders: `scan` (the same order every epoch: shards read in a fixed order, a
validation pass), `shuffled` (a new permutation per epoch, as a shuffling
sampler does; the learned model has nothing to learn there) and `records`
(the same bytes as --shards large files, read in records of --file-kb at
offsets in one fixed shuffled order, the same every epoch: a record file
read through its index; a plan names whole files, so only the learned
model can say which block comes next).

Measured per epoch, medians over interleaved repetitions: epoch seconds,
read stall (the DATA_LOADING seconds of the job's phase profile), hit rate
(bytes a read found in the page cache: preadv2(RWF_NOWAIT) before the
blocking read), and bytes read from storage (/proc/self/io read_bytes: the
reader's and its policy thread's fetches; above the dataset's size is what
readahead and prefetch fetched and was evicted unread). Epoch 1 of
`learned` is its learning pass. Needs root (cgroups, drop_caches) and the
mlos_training package. Writes DIR/prefetch.json and prints a table."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
READER = HERE / "reader.py"
VARIANTS = {
    "linux": None,
    "plan": {"learn": False},
    "learned": {"use_plan": False},
}


def make_dataset(root, files, file_kb):
    """`files` files of `file_kb` KiB each under root (made once, kept)."""
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(file_kb * 1024)
    paths = []
    for i in range(files):
        p = root / f"sample-{i:06d}.bin"
        if not p.exists() or p.stat().st_size != len(block):
            with open(p, "wb") as f:
                f.write(block[i % 97:] + block[:i % 97])
        paths.append(p)
    os.sync()
    return paths


class MemoryCgroup:
    """A memory cgroup of its own for one run: v1 memory.limit_in_bytes, or
    v2 memory.max."""

    def __init__(self, limit_bytes):
        v1 = Path("/sys/fs/cgroup/memory")
        if (v1 / "memory.limit_in_bytes").exists():
            self.path = v1 / f"mlos-prefetch-bench-{os.getpid()}"
            self.path.mkdir(exist_ok=True)
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        else:
            self.path = Path("/sys/fs/cgroup") / f"mlos-prefetch-bench-{os.getpid()}"
            self.path.mkdir(exist_ok=True)
            (self.path / "memory.max").write_text(str(limit_bytes))

    def close(self):
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def drop_caches():
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def run_once(args, variant, order, dataset_dir, shard_dir):
    cg = MemoryCgroup(args.limit_mb << 20)
    try:
        drop_caches()
        env = dict(os.environ, MLOS_MODE="embedded", MLOS_DEFAULT_POLICIES="")
        cmd = [sys.executable, str(READER), "--dir", str(shard_dir if order == "records" else dataset_dir),
               "--epochs", str(args.epochs), "--order", order, "--compute-ms", str(args.compute_ms),
               "--record-kb", str(args.file_kb)]
        if VARIANTS[variant] is not None:
            # The policy's default, 64 MiB, or a quarter of a smaller limit.
            config = dict(VARIANTS[variant], ahead_mb=min(64, args.limit_mb // 4))
            cmd += ["--policy", json.dumps(config)]
        if variant == "plan":
            cmd.append("--announce")
        procs = cg.path / "cgroup.procs"
        shell = f'echo $$ > {procs} && exec "$@"'
        out = subprocess.run(["sh", "-c", shell, "sh", *cmd], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{variant}/{order} failed:\n{out.stderr}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        cg.close()


def disk_facts(path):
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sysdir = Path(f"/sys/dev/block/{major}:{minor}")
    facts = {"device": f"{major}:{minor}"}
    try:
        block = sysdir.resolve()
        if (block / "partition").exists():
            block = block.parent
        facts["name"] = block.name
        facts["rotational"] = (block / "queue" / "rotational").read_text().strip()
        facts["driver"] = os.path.basename(os.readlink(block / "device" / "driver")) if (block / "device" / "driver").exists() else ""
        facts["size_gib"] = int((block / "size").read_text()) * 512 / 2**30
    except OSError:
        pass
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1024)
    ap.add_argument("--file-kb", type=int, default=1024)
    ap.add_argument("--limit-mb", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compute-ms", type=float, default=3.0)
    ap.add_argument("--orders", default="scan,shuffled,records")
    ap.add_argument("--shards", type=int, default=4, help="records: the dataset in this many files")
    ap.add_argument("--data", default="/var/tmp/mlos-prefetch-bench")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="256 files, limit 128 MiB, 2 epochs, 1 rep")
    args = ap.parse_args()
    if args.quick:
        args.files, args.limit_mb, args.epochs, args.reps = 256, 128, 2, 1
    if os.geteuid() != 0:
        sys.exit("needs root: a memory cgroup per run and /proc/sys/vm/drop_caches")
    dataset_dir = Path(args.data) / f"{args.files}x{args.file_kb}k"
    make_dataset(dataset_dir, args.files, args.file_kb)
    dataset_bytes = args.files * args.file_kb * 1024
    # The same bytes as a few large shards, read in records of file_kb.
    shard_kb = dataset_bytes // args.shards // 1024
    shard_dir = Path(args.data) / f"{args.shards}x{shard_kb}k"
    if "records" in args.orders:
        make_dataset(shard_dir, args.shards, shard_kb)
    orders = args.orders.split(",")
    runs = []
    for rep in range(args.reps):
        names = list(VARIANTS)
        names = names[rep % len(names):] + names[:rep % len(names)]  # rotate the order
        for order in orders:
            for variant in names:
                r = run_once(args, variant, order, dataset_dir, shard_dir)
                r.update(variant=variant, order=order, rep=rep)
                runs.append(r)
                e = r["epochs"][-1]
                print(f"rep {rep} {order:8s} {variant:8s} last epoch {e['seconds']:.2f} s, stall "
                      f"{e['stall_seconds']:.2f} s, hit {e['hit_rate']:.2f}", file=sys.stderr)
    summary = {}
    for order in orders:
        for variant in VARIANTS:
            mine = [r for r in runs if r["order"] == order and r["variant"] == variant]
            per_epoch = []
            for ep in range(args.epochs):
                col = [r["epochs"][ep] for r in mine]
                per_epoch.append({k: statistics.median(c[k] for c in col)
                                  for k in ("seconds", "stall_seconds", "hit_rate", "storage_bytes")})
            summary.setdefault(order, {})[variant] = per_epoch
    result = {
        "what": "prefetch policy vs Linux readahead, dataset 2x the job's memory limit",
        "files": args.files, "file_kb": args.file_kb, "dataset_bytes": dataset_bytes,
        "limit_bytes": args.limit_mb << 20, "epochs": args.epochs, "reps": args.reps,
        "compute_ms_per_file": args.compute_ms, "storage": disk_facts(dataset_dir),
        "runs": runs, "median": summary,
    }
    print("| order | variant | " + " | ".join(f"epoch {i + 1} s (stall s, hit)" for i in range(args.epochs)) +
          " | storage MiB last epoch | last epoch vs linux |")
    print("|---|---|" + "---|" * args.epochs + "---|---|")
    for order in orders:
        base = summary[order]["linux"][-1]["seconds"]
        for variant in VARIANTS:
            eps = summary[order][variant]
            cells = [f"{e['seconds']:.2f} ({e['stall_seconds']:.2f}, {e['hit_rate']:.2f})" for e in eps]
            print(f"| {order} | {variant} | " + " | ".join(cells) +
                  f" | {eps[-1]['storage_bytes'] / 2**20:.0f} | {base / eps[-1]['seconds']:.2f}x |")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "prefetch.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
