#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Collectives benchmark: barrier and small all-reduce latency, large
all-reduce bandwidth, mlOS against raw Gloo and torch.distributed (gloo
backend), measured in the same run. A benchmark, not a test.

    python3 bench/collectives_report.py [--reps R] [--worlds 2,4] [--build DIR]
        [--python PY] [--impls mlos,gloo,gloo-pin,torch] [--idle-wait S]
        [--lat-iters N] [--bw-target-mib M] [--json FILE] [--quick]

For each repetition, for each world size, the implementations run in a
shuffled order, each as WORLD ranks (processes) on this host with a fresh
FileStore directory and runtime directory:
  mlos   build/bin/mlos_collectives_bench --impl mlos  (published C API)
  gloo   build/bin/mlos_collectives_bench --impl gloo  (Gloo alone: FileStore,
         TCP device on 127.0.0.1, gloo::allreduce with gloo::sum<float>,
         gloo::barrier)
  gloo-pin  the same with Gloo's event-loop thread confined to one CPU
         (rank modulo the CPUs), as mlOS confines it to the job's claim:
         mlos/gloo-pin separates the mlOS call path from placement
  torch  bench/collectives_bench_torch.py (dist.all_reduce / dist.barrier,
         backend "gloo", CPU float32 tensors)
Every rank times each call on its own; a run's figure for one size is the
mean over ranks of the per-rank median. The table shows, per size, the
median over repetitions of those figures, and the median over repetitions
of the ratios taken inside one repetition (mlos vs each other, run back to
back), with their range over repetitions in brackets.
Latency ratios are time ratios (above 1: mlOS slower); bandwidth ratios are
bandwidth ratios (below 1: mlOS slower). Bandwidth is algorithm bandwidth,
bytes / median time (1 GB/s = 1e9 B/s).

On a shared machine, --idle-wait S waits (up to S seconds) for the CPUs to
be idle before each run; the share of the CPUs other processes used during
the runs is printed either way. When a rank's threads outnumber the free
CPUs (other load, or 4 ranks x 2 threads on 2 CPUs) a woken thread can wait
for the next scheduler tick (4 ms at HZ=250, without preemption) and a
whole size's median snaps to ~4 ms; the count of such figures is printed.
Where Gloo's event-loop threads run decides how often that happens, which
is why gloo-pin is there.

--worlds 1 gives the per-call overhead floor: one rank, no network, so
the figures are the libraries' own cost per call.

--quick: a smoke run (2 ranks, 1 repetition, small sizes, few iterations),
for CI: exits non-zero when a run fails or a result is wrong. torch is
skipped with a note when the Python given cannot import torch.distributed
(unless --impls names it)."""
import argparse
import datetime
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KiB, MiB = 1 << 10, 1 << 20

# A latency figure this high means the calls waited for the scheduler tick
# (4 ms at HZ=250) rather than for the network: see the module docstring.
TICK_BOUND_US = 3000
LAT_SIZES = [8, 64, 512, 4 * KiB, 32 * KiB, 64 * KiB]
BW_SIZES = [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB]


def human(n):
    if n >= MiB and n % MiB == 0:
        return f"{n // MiB} MiB"
    if n >= KiB and n % KiB == 0:
        return f"{n // KiB} KiB"
    return f"{n} B"


def default_python():
    venv = Path("/opt/mlos/venv/bin/python")
    return str(venv) if venv.exists() else sys.executable


def torch_available(python):
    try:
        r = subprocess.run([python, "-c", "import torch, torch.distributed as d; print(torch.__version__, d.is_gloo_available())"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 or not r.stdout.strip().endswith("True"):
        return None
    return r.stdout.split()[0]


def cpu_busy_s():
    """Seconds of CPU time spent by everything on the machine (not idle, not iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_s():
    """CPU seconds of this process and its reaped children."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def wait_idle(limit_s, busy_below=0.10):
    """Wait up to limit_s until the CPUs were less than busy_below busy over a 1 s sample."""
    deadline = time.monotonic() + limit_s
    while True:
        b0, t0 = cpu_busy_s(), time.monotonic()
        time.sleep(1)
        share = (cpu_busy_s() - b0) / ((time.monotonic() - t0) * os.cpu_count())
        if share < busy_below or time.monotonic() >= deadline:
            return share


def run_once(impl, world, args, bench_args):
    """Start `world` ranks of one implementation; return their JSON lines."""
    tmp = Path(tempfile.mkdtemp(prefix=f"mlos-coll-{impl}-{world}-"))
    try:
        (tmp / "runtime").mkdir()
        if impl == "torch":
            cmd = [args.python, str(REPO / "bench" / "collectives_bench_torch.py")] + bench_args
        else:
            cmd = [str(Path(args.build) / "bin" / "mlos_collectives_bench"), "--impl", impl] + bench_args
        base = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_") and k not in ("RANK", "WORLD_SIZE")}
        base.update(WORLD_SIZE=str(world), MLOS_STORE=f"file:{tmp / 'store'}", MLOS_RUNTIME_DIR=str(tmp / "runtime"),
                    MLOS_MODE="embedded", MLOS_COLLECTIVE_HOST="127.0.0.1", MLOS_COLLECTIVE_TIMEOUT_MS="300000",
                    GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        procs = []
        for r in range(world):
            env = dict(base, RANK=str(r))
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs, deadline = [], time.monotonic() + args.timeout
        for p in procs:
            try:
                outs.append(p.communicate(timeout=max(1, deadline - time.monotonic()))[0])
            except subprocess.TimeoutExpired:
                for q in procs:
                    if q.poll() is None:
                        q.kill()
                for q in procs:
                    q.wait()
                raise RuntimeError(f"{impl} x{world}: timed out after {args.timeout} s")
        lines, bad = [], []
        for p, out in zip(procs, outs):
            parsed = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
            lines += parsed
            if p.returncode != 0 or not any(x.get("op") == "check" and x.get("ok") for x in parsed):
                bad.append(f"rc {p.returncode}: {out[-2000:]}")
        if bad:
            raise RuntimeError(f"{impl} x{world} failed:\n" + "\n".join(bad))
        return lines
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def summarise(lines):
    """{(op, bytes): {"us": mean over ranks of median_us, "p90_us": ..., "GBps": bytes / us}}"""
    by = {}
    for x in lines:
        if x.get("op") in ("barrier", "allreduce"):
            by.setdefault((x["op"], x["bytes"]), []).append(x)
    out = {}
    for key, xs in by.items():
        us = statistics.mean(x["median_us"] for x in xs)
        out[key] = {"us": us, "p90_us": statistics.mean(x["p90_us"] for x in xs),
                    "min_us": statistics.mean(x["min_us"] for x in xs),
                    "GBps": key[1] / (us * 1e3) if key[1] else 0.0, "iters": xs[0]["iters"]}
    setup = [x["connect_ms"] for x in lines if x.get("op") == "setup"]
    if setup:
        out[("setup", 0)] = {"us": max(setup) * 1e3}
    return out


def fmt_ratio(vals):
    if not vals:
        return "n/a"
    med = statistics.median(vals)
    if len(vals) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} [{min(vals):.2f}–{max(vals):.2f}]"


def table(results, world, impls, keys, bandwidth):
    """results[world][rep][impl] = summary. One markdown table."""
    reps = results[world]
    cols = [i for i in ("mlos", "gloo", "gloo-pin", "torch") if i in impls]
    unit = "GB/s" if bandwidth else "µs"
    head = ["size"] + [f"{c} {unit}" for c in cols] + [f"mlos/{c}" for c in cols if c != "mlos"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        label = "barrier" if key[0] == "barrier" else human(key[1])
        cells = [label]
        for c in cols:
            vals = [rep[c][key]["GBps" if bandwidth else "us"] for rep in reps if c in rep and key in rep[c]]
            if not vals:
                cells.append("n/a")
            else:
                v = statistics.median(vals)
                cells.append(f"{v:.3f}" if bandwidth else f"{v:.2f}" if v < 10 else f"{v:.1f}")
        for c in cols:
            if c == "mlos":
                continue
            ratios = []
            for rep in reps:
                if "mlos" in rep and c in rep and key in rep["mlos"] and key in rep[c]:
                    m, o = rep["mlos"][key], rep[c][key]
                    ratios.append(m["GBps"] / o["GBps"] if bandwidth else m["us"] / o["us"])
            cells.append(fmt_ratio(ratios))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--worlds", default="2,4")
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--python", default=default_python(), help="Python with torch (default: /opt/mlos/venv if present)")
    ap.add_argument("--impls", help="comma-separated subset of mlos,gloo,gloo-pin,torch (default: all; torch if importable)")
    ap.add_argument("--lat-iters", type=int, default=300, help="timed calls per latency size and for the barrier")
    ap.add_argument("--bw-target-mib", type=int, default=512, help="MiB all-reduced per bandwidth size (>= 3 calls)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (all ranks of one implementation)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--idle-wait", type=float, default=0,
                    help="before each run, wait up to this many seconds for the CPUs to be idle (<10%% busy over 1 s)")
    ap.add_argument("--json", help="write every run's summaries here")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 ranks, 1 rep, small sizes, few iterations")
    args = ap.parse_args()

    lat_sizes, bw_sizes = LAT_SIZES, BW_SIZES
    if args.quick:
        args.reps, args.worlds, args.lat_iters, args.warmup = 1, "2", 20, 3
        lat_sizes, bw_sizes, args.bw_target_mib = [8, 4 * KiB], [1 * MiB], 8
        args.timeout = min(args.timeout, 120)
    worlds = [int(w) for w in args.worlds.split(",")]

    exe = Path(args.build) / "bin" / "mlos_collectives_bench"
    if not exe.exists():
        sys.exit(f"{exe} not found: cmake --build {args.build} --target mlos_collectives_bench")
    torch_version = torch_available(args.python)
    if args.impls:
        impls = args.impls.split(",")
        if set(impls) - {"mlos", "gloo", "gloo-pin", "torch"}:
            sys.exit(f"--impls: unknown implementation in {args.impls}")
        if "torch" in impls and not torch_version:
            sys.exit(f"{args.python} cannot import torch.distributed with gloo")
    else:
        impls = ["mlos", "gloo", "gloo-pin"] + (["torch"] if torch_version else [])
        if not torch_version:
            print(f"note: {args.python} cannot import torch.distributed with gloo: torch skipped", file=sys.stderr)

    bench_args = ["--sizes", ",".join(str(s) for s in lat_sizes + bw_sizes), "--iters", str(args.lat_iters),
                  "--barrier-iters", str(args.lat_iters), "--target-bytes", str(args.bw_target_mib * MiB),
                  "--min-iters", "3", "--warmup", str(args.warmup)]
    rng = random.Random(args.seed)
    results = {w: [] for w in worlds}
    started = time.monotonic()
    others = []
    for rep in range(args.reps):
        for w in worlds:
            order = impls[:]
            rng.shuffle(order)
            summaries = {}
            for impl in order:
                if args.idle_wait > 0:
                    wait_idle(args.idle_wait)
                t0, busy0, own0 = time.monotonic(), cpu_busy_s(), own_cpu_s()
                summaries[impl] = summarise(run_once(impl, w, args, bench_args))
                wall = time.monotonic() - t0
                # CPU time used meanwhile by processes other than the ranks: the noise.
                other = max(0.0, (cpu_busy_s() - busy0) - (own_cpu_s() - own0)) / (wall * os.cpu_count())
                others.append(other)
                print(f"rep {rep + 1}/{args.reps} world {w} {impl}: {wall:.1f} s, other load {other:.0%}",
                      file=sys.stderr)
            results[w].append(summaries)
    elapsed = time.monotonic() - started

    lat_keys = [("barrier", 0)] + [("allreduce", s) for s in lat_sizes]
    bw_keys = [("allreduce", s) for s in bw_sizes]
    print("# Collectives: mlOS vs raw Gloo vs torch.distributed (gloo)\n")
    print(f"{datetime.date.today().isoformat()}, {machine()}; torch {torch_version or 'n/a'}; "
          f"{args.reps} repetition(s), implementations interleaved in a shuffled order; {elapsed:.0f} s in all.")
    print(f"Other processes' share of the CPUs during the runs: median {statistics.median(others):.0%}, "
          f"max {max(others):.0%}.")
    print(f"Latency: {args.lat_iters} timed calls per size; bandwidth: {args.bw_target_mib} MiB per size, "
          f"at least 3 calls. Figures: median over repetitions of the mean over ranks of each rank's median; "
          f"ratios: median [range] over repetitions of the ratio within one repetition.")
    for w in worlds:
        print(f"\n## {w} ranks: latency (µs per call; mlos/x = time ratio, above 1 = mlOS slower)\n")
        print(table(results, w, impls, lat_keys, bandwidth=False))
        slow = []
        for c in [i for i in ("mlos", "gloo", "gloo-pin", "torch") if i in impls]:
            figs = [rep[c][k]["us"] for rep in results[w] for k in lat_keys if c in rep and k in rep[c]]
            slow.append(f"{c} {sum(1 for f in figs if f >= TICK_BOUND_US)}/{len(figs)}")
        print(f"\nLatency figures (size x repetition) at or above {TICK_BOUND_US / 1e3:.0f} ms, i.e. bound by "
              f"the scheduler tick: " + ", ".join(slow) + ".")
        if w > 1:  # one rank moves nothing: no bandwidth to speak of
            print(f"\n## {w} ranks: all-reduce bandwidth (GB/s; mlos/x = bandwidth ratio, below 1 = mlOS slower)\n")
            print(table(results, w, impls, bw_keys, bandwidth=True))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(), "machine": machine(), "torch": torch_version,
                       "other_load": others,
                       "reps": args.reps, "results": {str(w): [{i: {f"{k[0]}:{k[1]}": v for k, v in s.items()}
                                                            for i, s in reps.items()} for reps in results[w]]
                                                      for w in worlds}}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        sys.exit(f"error: {e}")
