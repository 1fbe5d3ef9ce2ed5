#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One run of bench/prefetch/prefetch_bench.py: an embedded mlOS job that
reads a directory's files once per epoch and prints one JSON line of
per-epoch figures. Run by the bench inside its memory cgroup."""
import argparse
import json
import os
import random
import time

import mlos_training
from mlos_training import PHASE_DATA_LOADING, PHASE_FORWARD

DL = int(PHASE_DATA_LOADING)


def io_read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def read_at(path, offset, view):
    """Reads len(view) bytes of `path` at `offset` (fewer at its end);
    returns (bytes read, bytes that were already in the page cache):
    preadv2(RWF_NOWAIT) first takes what is resident, then a plain read
    waits for the rest."""
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            cached = os.preadv(fd, [view], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            cached = 0
        done = cached
        while done < len(view):
            n = os.preadv(fd, [view[done:]], offset + done)
            if n == 0:
                break
            done += n
        return done, cached
    finally:
        os.close(fd)


def record_order(files, record_bytes):
    """Every record of every file, in one fixed shuffled order (an index
    file's order, the same every epoch): (path, offset) pairs."""
    records = [(f, off) for f in files for off in range(0, os.path.getsize(f) - record_bytes + 1, record_bytes)]
    random.Random(99).shuffle(records)
    return records


def burn(ms):
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--order", choices=["scan", "shuffled", "records"], default="scan")
    ap.add_argument("--record-kb", type=int, default=1024, help="records: the size of one read")
    ap.add_argument("--compute-ms", type=float, default=3.0)
    ap.add_argument("--policy", default=None, help="prefetch's config (JSON); none: no policy")
    ap.add_argument("--announce", action="store_true")
    args = ap.parse_args()
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir))
    buf = bytearray(max(os.path.getsize(f) for f in files))
    res = mlos_training.request_resources(num_cpus=1)
    if args.policy is not None:
        res.request_policy("prefetch", json.loads(args.policy))
    rng = random.Random(1234)
    epochs = []
    record_bytes = args.record_kb * 1024
    records = record_order(files, record_bytes) if args.order == "records" else None
    view = memoryview(buf)[:record_bytes] if records else None
    for epoch in range(args.epochs):
        order = list(files)
        if args.order == "shuffled":
            rng.shuffle(order)
        if args.announce:
            # A plan names files only: for records, the files in first-read order.
            res.announce_reads(list(dict.fromkeys(p for p, _ in records)) if records else order)
        before_prof = res.phase_profile()
        before_io = io_read_bytes()
        t0 = time.monotonic()
        total = cached = 0
        for item in (records or order):
            mlos_training.set_phase(res, PHASE_DATA_LOADING)
            if records:
                path, offset = item
                n, c = read_at(path, offset, view)
                res.record_read(path, offset, n)
            else:
                n, c = read_at(item, 0, memoryview(buf)[:os.path.getsize(item)])
                res.record_read(item, 0, 0)
            total += n
            cached += c
            mlos_training.set_phase(res, PHASE_FORWARD)
            burn(args.compute_ms)
        seconds = time.monotonic() - t0
        after_prof = res.phase_profile()
        epochs.append({
            "seconds": seconds,
            "stall_seconds": after_prof["seconds"][DL] - before_prof["seconds"][DL],
            "hit_rate": cached / total if total else 0.0,
            "storage_bytes": io_read_bytes() - before_io,
            "bytes": total,
        })
    mlos_training.set_phase(res, mlos_training.PHASE_IDLE)
    mlos_training.release_resources(res)
    print(json.dumps({"epochs": epochs}))


if __name__ == "__main__":
    main()
