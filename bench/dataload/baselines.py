#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the mlOS data loader will be compared against: the standard ImageNet
training transform at 224 (RandomResizedCrop + flip + float + Normalize,
float32 CHW batches) by the usual loaders, on one CPU set, and the decode-
only ceiling of libjpeg-turbo on the same files and CPUs.

    python bench/dataload/baselines.py --data DIR [--cpus 0-1] [--batch 64]
        [--loaders dataloader-tv,dataloader-pil,webdataset-tv,spdl,dali,dali-fused,decode-pil,decode-tv,mlos,mlos-pread]
        [--reps 3] [--warmup-batches 3] [--measure-batches 20] [--cold] [--json out.json]

DIR is a bench/dataload/make_dataset.py output. Loaders (bench/dataload/
loaders.py says what each does and how it differs from torchvision's
transform) are swept over their parallelism, 0..N DataLoader workers or
1..N threads (N: CPUs in --cpus); the best setting of each is "the expert".
The ceiling: decode-only, no transform, in a multiprocessing.Pool of 1..N
processes: decode-pil is PIL Image.open().load() (Pillow's bundled
libjpeg-turbo, no draft mode, full-size RGB), decode-tv is
torchvision.io.decode_jpeg(read_file()) (torchvision's libjpeg-turbo).
`mlos` is the mlOS loader (loaders.mlos_loader: io_uring reads where the
kernel allows), `mlos-pread` the same with reader="pread".

--cold drops the page cache (sync; echo 1 > /proc/sys/vm/drop_caches; root
only) before every run, so each reads its files from the disk: what a
first epoch over a dataset larger than memory sees. Without it the files
stay cached after the first run, as in later epochs of a dataset that fits.

Method. Every (loader, setting) runs in a fresh child process (this script,
--_child), pinned with os.sched_setaffinity to --cpus before anything
starts, so DataLoader workers, pool processes and SPDL/DALI threads inherit
it. Repetitions are interleaved (A B C ... A B C ...); medians are reported
with the min-max. Per run: --warmup-batches batches are drawn and thrown
away, then --measure-batches are timed.
- images/s: measured images / wall seconds of the measured batches;
- CPU-s/image: utime+stime (+cutime+cstime of reaped children) summed over
  the child and all its live descendants (from /proc/<pid>/stat, all
  threads included), read just before and just after the measured batches;
- memory, three ways, all summed over the child's process tree:
  pss_mb: Pss (/proc/<pid>/smaps_rollup) read once, right after the
  measured batches: memory shared by forked workers (libraries, pages not
  yet copied) counted once, proportionally; the fairest footprint, but at
  one instant, not a peak. peak_rss_mb: the parent samples VmRSS
  (/proc/<pid>/status) every 0.2 s and keeps the largest sum: a peak, but
  shared pages count once per process, and a peak under 0.2 s can be
  missed. hwm_sum_mb: each process's VmHWM at the end, summed: an upper
  bound (per-process peaks need not coincide). The parent does not sample
  smaps_rollup: walking a process's page tables 5 times a second held its
  mmap lock often enough to slow a 0-worker DataLoader run ~8x here.
- others_cpus: how many of --cpus other processes kept busy during the
  measured batches (busy time from /proc/stat minus the tree's): 0 on a
  quiet machine. Above ~0.2 the run shared its CPUs; a DataLoader with 0
  workers (torch's 2 intra-op threads) then slows by up to 10x, because an
  OpenMP team waits on a descheduled thread. So before each run the parent
  waits (up to --quiet-wait s) for a 1-s window in which others kept under
  0.15 CPUs busy, and records what it waited and saw.
Timing is reported, never judged: this machine is shared."""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loaders  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
DECODE_KINDS = ("decode-pil", "decode-tv")
MLOS_KINDS = ("mlos", "mlos-pread")
DEFAULT_LOADERS = loaders.KINDS + DECODE_KINDS + MLOS_KINDS


def parse_cpus(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


# --- /proc: a process tree's CPU time and memory -----------------------------

def _stat_fields(pid):
    """Fields after the ')' of /proc/<pid>/stat (index 0 is the state)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def tree_pids(root):
    """root and its live descendants (a /proc scan: the kernel here has no
    /proc/<pid>/task/<tid>/children)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parent[int(name)] = int(_stat_fields(name)[1])
            except (OSError, IndexError):
                pass
    out, frontier = [root], [root]
    while frontier:
        frontier = [p for p, pp in parent.items() if pp in frontier]
        out += frontier
    return out


def tree_cpu_seconds(root):
    total = 0
    for pid in tree_pids(root):
        try:
            f = _stat_fields(pid)
        except OSError:
            continue
        total += sum(int(v) for v in f[11:15])  # utime stime cutime cstime
    return total / TICK


def busy_cpu_seconds(cpus):
    """Non-idle time of these CPUs, all processes (/proc/stat)."""
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *vals = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in vals[:8])
                total += user + nice + system + irq + softirq + steal
    return total / TICK


def wait_for_quiet(cpus, max_wait, threshold=0.15, window=1.0):
    """Waits up to max_wait seconds for a `window` in which other processes
    kept less than `threshold` of the CPUs busy (the caller is idle).
    Returns (seconds waited, others' busy CPUs in the last window)."""
    t0 = time.monotonic()
    while True:
        b0 = busy_cpu_seconds(cpus)
        time.sleep(window)
        others = (busy_cpu_seconds(cpus) - b0) / window
        waited = time.monotonic() - t0
        if others < threshold or waited >= max_wait:
            return round(waited, 1), round(others, 2)


def _status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def tree_hwm_mb(root):
    total = 0
    for pid in tree_pids(root):
        try:
            total += _status_kb(pid, "VmHWM")
        except OSError:
            pass
    return total / 1024


def tree_rss_mb(root):
    total = 0
    for pid in tree_pids(root):
        try:
            total += _status_kb(pid, "VmRSS")
        except OSError:
            pass
    return total / 1024


def tree_pss_mb(root):
    total = 0
    for pid in tree_pids(root):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += sum(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except OSError:
            pass
    return total / 1024


def tree_memory(root):
    """Read right after a measured window (not inside it)."""
    return {"pss_mb": round(tree_pss_mb(root), 1), "hwm_sum_mb": round(tree_hwm_mb(root), 1)}


# --- the decode-only ceiling ---------------------------------------------------

def _decode_one_pil(path):
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        return im.size


def _decode_one_tv(path):
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    return tuple(decode_jpeg(read_file(path), mode=ImageReadMode.RGB).shape)


def _pool_init():
    import torch
    torch.set_num_threads(1)


def decode_ceiling(kind, data_dir, procs, warmup, measure, seed, cpus):
    """Decode-only: images/s and CPU-s over `measure` files after `warmup`."""
    import random
    files = [p for p, _ in loaders.read_file_list(data_dir)]
    random.Random(seed).shuffle(files)
    fn = _decode_one_pil if kind == "decode-pil" else _decode_one_tv
    need = warmup + measure
    files = (files * (need // len(files) + 1))[:need]
    with multiprocessing.get_context("fork").Pool(procs, _pool_init) as pool:
        pool.map(fn, files[:warmup], chunksize=4)
        busy0, cpu0, t0 = busy_cpu_seconds(cpus), tree_cpu_seconds(os.getpid()), time.perf_counter()
        sizes = pool.map(fn, files[warmup:], chunksize=4)
        t1, cpu1, busy1 = time.perf_counter(), tree_cpu_seconds(os.getpid()), busy_cpu_seconds(cpus)
        mem = tree_memory(os.getpid())
    assert len(sizes) == measure
    return {"images": measure, "seconds": t1 - t0, "cpu_seconds": cpu1 - cpu0,
            "others_cpus": max(0.0, (busy1 - busy0) - (cpu1 - cpu0)) / (t1 - t0), **mem}


# --- one run, in a child process -----------------------------------------------

def run_child(cfg):
    os.sched_setaffinity(0, cfg["cpus"])
    import torch
    torch.set_num_threads(len(cfg["cpus"]))
    kind, batch = cfg["kind"], cfg["batch"]
    warm_n, meas_n = cfg["warmup_batches"] * batch, cfg["measure_batches"] * batch
    if kind in DECODE_KINDS:
        r = decode_ceiling(kind, cfg["data"], cfg["parallel"], warm_n, meas_n, cfg["seed"], cfg["cpus"])
    else:
        it = (loaders.mlos_loader(cfg["data"], cfg["cpus"], batch, reader="pread" if kind == "mlos-pread" else "auto")
              if kind in MLOS_KINDS else loaders.batches(kind, cfg["data"], batch, cfg["parallel"], cfg["seed"]))
        for _ in range(cfg["warmup_batches"]):
            x, y = next(it)
        assert x.shape == (batch, 3, loaders.SIZE, loaders.SIZE) and x.dtype == torch.float32, (x.shape, x.dtype)
        assert y.shape == (batch,), y.shape
        me = os.getpid()
        busy0, cpu0, t0 = busy_cpu_seconds(cfg["cpus"]), tree_cpu_seconds(me), time.perf_counter()
        n = 0
        for _ in range(cfg["measure_batches"]):
            x, y = next(it)
            n += len(y)
        t1, cpu1, busy1 = time.perf_counter(), tree_cpu_seconds(me), busy_cpu_seconds(cfg["cpus"])
        r = {"images": n, "seconds": t1 - t0, "cpu_seconds": cpu1 - cpu0,
             "others_cpus": max(0.0, (busy1 - busy0) - (cpu1 - cpu0)) / (t1 - t0), **tree_memory(me),
             # A sanity check that each loader normalises: about 0 and 1.
             "last_batch_mean": round(float(x.mean()), 3), "last_batch_std": round(float(x.std()), 3),
             "label_range": [int(y.min()), int(y.max())]}
    r["images_per_s"] = r["images"] / r["seconds"]
    r["cpu_s_per_image"] = r["cpu_seconds"] / r["images"]
    r["cpus_seen"] = sorted(os.sched_getaffinity(0))
    print(json.dumps(r), flush=True)
    os._exit(0)  # skip DataLoader/DALI/SPDL teardown: it is not measured and can be slow


def run_one(cfg, timeout):
    """Runs cfg in a child; samples its tree's summed VmRSS. Returns the
    child's result dict with peak_rss_mb added, or {"error": ...}."""
    proc = subprocess.Popen([sys.executable, __file__, "--_child", json.dumps(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0.0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak["rss"] = max(peak["rss"], tree_rss_mb(proc.pid))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\ntimed out after {timeout} s"
    done.set()
    sampler.join()
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = [l for l in err.strip().splitlines() if l.strip()][-1:] or [f"exit {proc.returncode}"]
        return {"error": tail[0][:500], "returncode": proc.returncode}
    r = json.loads(lines[-1])
    r["peak_rss_mb"] = round(peak["rss"], 1)
    return r


# --- the sweep -------------------------------------------------------------------

def drop_page_cache():
    """Writes dirty pages back, then drops clean page-cache pages (not
    dentries and inodes: the listing a loader does at start stays cheap)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("1\n")


def settings(kind, ncpu):
    """The parallelism values swept for a loader."""
    if kind.startswith("dataloader") or kind == "webdataset-tv":
        return list(range(0, ncpu + 1))
    if kind in MLOS_KINDS:
        return [ncpu]
    return list(range(1, ncpu + 1))


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for dist in ("torch", "torchvision", "pillow", "numpy", "spdl", "spdl-io", "spdl-core", "webdataset",
                 "nvidia-dali-cuda120", "nvidia-dali-cuda130", "scikit-image"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    try:
        from PIL import features
        out["pillow_libjpeg_turbo"] = features.version("libjpeg_turbo")
    except Exception:  # older Pillow: no such feature name
        pass
    return out


def summarise(runs):
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"]}
    ips = [r["images_per_s"] for r in ok]
    return {"images_per_s": round(statistics.median(ips), 1), "images_per_s_min": round(min(ips), 1),
            "images_per_s_max": round(max(ips), 1),
            "cpu_s_per_image": round(statistics.median(r["cpu_s_per_image"] for r in ok), 5),
            "pss_mb": round(statistics.median(r["pss_mb"] for r in ok), 1),
            "peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in ok), 1),
            "hwm_sum_mb": round(statistics.median(r["hwm_sum_mb"] for r in ok), 1),
            "others_cpus": round(statistics.median(r["others_cpus"] for r in ok), 2),
            "reps": len(ok), "errors": len(runs) - len(ok)}


def knob_name(kind):
    if kind.startswith("dataloader") or kind == "webdataset-tv":
        return "workers"
    return "processes" if kind in DECODE_KINDS else "threads"


def table(results):
    lines = ["| loader | setting | images/s (min-max) | CPU-s/image | PSS MB | peak RSS MB | sum VmHWM MB | others' CPUs |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["summary"]
        setting = f"{r['parallel']} {knob_name(r['kind'])}"
        if "error" in s:
            lines.append(f"| {r['kind']} | {setting} | error: {s['error'][:90]} | | | | | |")
            continue
        best = " **expert**" if r.get("expert") else ""
        lines.append(f"| {r['kind']}{best} | {setting} | {s['images_per_s']:.0f} "
                     f"({s['images_per_s_min']:.0f}-{s['images_per_s_max']:.0f}) | "
                     f"{s['cpu_s_per_image'] * 1000:.2f} ms | {s['pss_mb']:.0f} | {s['peak_rss_mb']:.0f} | "
                     f"{s['hwm_sum_mb']:.0f} | {s['others_cpus']:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="a make_dataset.py output directory")
    ap.add_argument("--cpus", default=None, help="CPU list, e.g. 0-1 (default: this process's affinity)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--loaders", default=",".join(DEFAULT_LOADERS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup-batches", type=int, default=3)
    ap.add_argument("--measure-batches", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run")
    ap.add_argument("--quiet-wait", type=float, default=30,
                    help="before each run, wait up to this many seconds for the CPUs to be quiet (0: don't)")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every run (root)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--_child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._child:
        return run_child(json.loads(a._child))
    if not a.data:
        ap.error("--data is required")
    cpus = parse_cpus(a.cpus) if a.cpus else sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus)
    kinds = [k for k in a.loaders.split(",") if k]
    unknown = set(kinds) - set(DEFAULT_LOADERS)
    if unknown:
        ap.error(f"unknown loaders {sorted(unknown)}; known: {','.join(DEFAULT_LOADERS)}")
    data = str(Path(a.data).resolve())
    meta_path = Path(data) / "meta.json"
    report = {"what": "ImageNet training transform at 224, float32 CHW batches; decode-only ceiling",
              "data": data, "dataset": json.loads(meta_path.read_text()) if meta_path.exists() else None,
              "cpus": cpus, "batch": a.batch, "reps": a.reps, "warmup_batches": a.warmup_batches,
              "measure_batches": a.measure_batches, "quiet_wait_s": a.quiet_wait, "cold": a.cold, "versions": versions(), "unavailable": {}, "results": []}
    configs = [{"kind": k, "parallel": p, "data": data, "cpus": cpus, "batch": a.batch, "seed": a.seed,
                "warmup_batches": a.warmup_batches, "measure_batches": a.measure_batches}
               for k in kinds for p in settings(k, len(cpus))]
    runs = {i: [] for i in range(len(configs))}
    for rep in range(a.reps):
        for i, cfg in enumerate(configs):
            if rep > 0 and runs[i] and all("error" in r for r in runs[i]):
                continue  # failed once: the error is recorded, do not retry
            waited, before = wait_for_quiet(cpus, a.quiet_wait) if a.quiet_wait > 0 else (0.0, None)
            if a.cold:
                drop_page_cache()
            r = run_one(cfg, a.timeout)
            r["quiet_wait_s"], r["others_cpus_before"] = waited, before
            runs[i].append(r)
            msg = r.get("error") or (f"{r['images_per_s']:.1f} images/s, {r['cpu_s_per_image'] * 1000:.2f} CPU-ms/image, "
                                     f"others {r['others_cpus']:.2f} CPUs")
            print(f"baselines: rep {rep + 1}/{a.reps} {cfg['kind']} {cfg['parallel']}: {msg}", file=sys.stderr)
    for i, cfg in enumerate(configs):
        report["results"].append({"kind": cfg["kind"], "parallel": cfg["parallel"], "knob": knob_name(cfg["kind"]),
                                  "summary": summarise(runs[i]), "runs": runs[i]})
    experts = {}
    for r in report["results"]:
        s = r["summary"]
        if "error" not in s and s["images_per_s"] > experts.get(r["kind"], {}).get("images_per_s", -1):
            experts[r["kind"]] = {"parallel": r["parallel"], "knob": r["knob"], **s}
    for r in report["results"]:
        r["expert"] = experts.get(r["kind"], {}).get("parallel") == r["parallel"]
    report["experts"] = experts
    md = table(report["results"])
    if report["unavailable"]:
        md += "\n\n" + "\n".join(f"- {k}: {v}" for k, v in report["unavailable"].items())
    report["table_md"] = md
    print(md)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
