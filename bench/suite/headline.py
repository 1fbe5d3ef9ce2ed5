#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The headline comparison (docs/benchmarks.md, "A job alone"): one
training job alone on the machine, started plainly (generic), through
PyTorch's CPU launcher (the anchor: `python -m torch.backends.xeon.run_cpu`
with each allocator it offers), with the best single hand-tuning factor
(expert), and through `mlos run` with nothing tuned by hand.

    /opt/mlos/venv/bin/python bench/suite/headline.py [--workloads cnn resnet18 ...] [--reps 5] [--out DIR]

Budget (about 45 minutes on 2 CPUs for the five workloads; 37 runs of
10-25 s each per workload), per workload:
  1. screening, one run each: the anchor's variants and the expert's
     factors, each changed alone from the generic command;
  2. mlOS's learning runs: a fresh tuning store, then as many runs as it
     has candidates (its trials), recorded and reported apart;
  3. the final comparison, --reps interleaved repetitions with the order
     rotated: generic, the best anchor variant, the best expert factor
     and mlOS (which now uses what its trials measured).
Picking the anchor's and the expert's best on their screening run favours
them: a lucky run is kept. Writes DIR/headline.json and prints a table."""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "workloads"))

from make_images import make_images  # noqa: E402
from runner import Failed, Job, run_together  # noqa: E402
from run import machine, shown  # noqa: E402

MULTIARCH = Path("/usr/lib/x86_64-linux-gnu")
TCMALLOC = MULTIARCH / "libtcmalloc_minimal.so.4"
JEMALLOC = MULTIARCH / "libjemalloc.so.2"
# Its --no-python (added last) makes it exec the job's own "python SCRIPT" as given.
ANCHOR = [sys.executable, "-m", "torch.backends.xeon.run_cpu"]
MLOS_LEARNING_RUNS = 5  # mlos run's candidates for a Python command (docs/tuning.md)


def workloads(images, yolo_data, quick):
    """name -> (script, args, the thread count torch runs with unless told):
    the five of issue 19, and resnet18-112 as an extra, run only when named."""
    t = ["--warmup", "0.2", "--seconds", "0.3"]
    yolo_quick = ["--images", "40", "--imgsz", "64", "--batch", "8", "--warmup-batches", "1"]
    return {
        "yolov8n": ("train_yolo.py", ["--dataset", yolo_data, *(yolo_quick if quick else [])], "cpus - 1"),
        "resnet18": ("train_resnet.py", t if quick else ["--warmup", "2", "--seconds", "6"], "cpus"),
        "transformer": ("train_transformer.py", t if quick else ["--warmup", "3", "--seconds", "6"], "cpus"),
        "cnn": ("train_cnn.py", ["--data", "synthetic", *(t if quick else ["--warmup", "1.5", "--seconds", "5"])],
                "cpus"),
        "cnn-jpeg": ("train_cnn.py", ["--data", "jpeg", "--images", images,
                                      *(t if quick else ["--warmup", "2", "--seconds", "6"])], "cpus"),
        "resnet18-112": ("train_resnet.py", ["--size", "112", *(t if quick else ["--warmup", "2", "--seconds", "6"])],
                         "cpus"),
    }


EXTRAS = ("resnet18-112",)  # measured only when named: not one of the five


def anchor_variants():
    """The launcher's choices: its defaults (tcmalloc and Intel OpenMP with
    KMP_AFFINITY and KMP_BLOCKTIME=1, when it finds them), jemalloc,
    glibc's malloc, and GNU OpenMP (torch's own)."""
    return {"anchor: defaults": [], "anchor: --enable-jemalloc": ["--enable-jemalloc"],
            "anchor: --use-default-allocator": ["--use-default-allocator"],
            "anchor: --disable-iomp": ["--disable-iomp"]}


def expert_factors(ncpu, default_threads):
    """One factor changed from the generic command: name -> (env, args).
    The thread count tried is the one torch does not run with by default:
    1 where torch takes every CPU, every CPU where the framework takes
    fewer (Ultralytics on the CPU: cpu_count - 1)."""
    threads = 1 if default_threads == "cpus" else ncpu
    retain = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"
    return {
        "expert: tcmalloc": ({"LD_PRELOAD": str(TCMALLOC)}, []),
        "expert: jemalloc": ({"LD_PRELOAD": str(JEMALLOC),
                              "MALLOC_CONF": "oversize_threshold:1,background_thread:true,metadata_thp:auto"}, []),
        "expert: glibc, thresholds raised": ({"GLIBC_TUNABLES": retain}, []),
        "expert: glibc, THP (hugetlb=1)": ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, []),
        "expert: OMP_PROC_BIND=close, OMP_PLACES=cores": ({"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}, []),
        "expert: OMP_WAIT_POLICY=passive": ({"OMP_WAIT_POLICY": "passive"}, []),
        f"expert: {threads} thread{'s' if threads > 1 else ''}": ({}, ["--threads", str(threads)]),
    }


def anchor_prefix(work):
    """The launcher looks for libiomp5.so, libtcmalloc.so and libjemalloc.so
    only in $CONDA_PREFIX/lib, $VIRTUAL_ENV/lib, ~/.local/lib, /usr/local/lib
    and /usr/lib; Debian installs the allocators in the multiarch directory
    under their sonames. scripts/setup_headline_bench.sh makes a prefix with
    Intel OpenMP and links to them; without it, a prefix of links to the
    allocators alone (the launcher then says iomp5 is missing)."""
    made = Path(os.environ.get("MLOS_ANCHOR_PREFIX", "/opt/mlos/anchor-prefix"))
    if (made / "lib" / "libiomp5.so").exists():
        return str(made)
    lib = work / "anchor-prefix" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name, target in (("libtcmalloc.so", TCMALLOC), ("libjemalloc.so", JEMALLOC)):
        if target.exists() and not (lib / name).exists():
            (lib / name).symlink_to(target)
    print("headline: no Intel OpenMP for the anchor (bash scripts/setup_headline_bench.sh)", file=sys.stderr)
    return str(lib.parent)


class Config:
    def __init__(self, name, job, env):
        self.name, self.job, self.env = name, job, env

    def run(self):
        return run_together([self.job], self.env, timeout=900)["train"]


def configs(cli, ncpu, workload, base_env, work, tune_dir):
    script, args, default_threads = workload
    out = {"generic": Config("generic", Job("train", script, args), base_env)}
    anchor_env = {**base_env, "CONDA_PREFIX": anchor_prefix(work)}
    for name, flags in anchor_variants().items():
        out[name] = Config(name, Job("train", script, args, [*ANCHOR, *flags, "--no-python"]), anchor_env)
    for name, (env, extra) in expert_factors(ncpu, default_threads).items():
        out[name] = Config(name, Job("train", script, [*args, *extra]), {**base_env, **env})
    out["mlOS"] = Config("mlOS", Job("train", script, args, [cli, "run", "--cpus", str(ncpu), "--"]),
                         {**base_env, "MLOS_TUNE_DIR": str(tune_dir)})
    return out


def med(rs):
    xs = [r["samples_per_s"] for r in rs]
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def tuning_choices(tune_dir):
    """What mlos run's store recorded: candidate -> step times (ms)."""
    out = {}
    for f in Path(tune_dir).glob("*/*.jsonl"):
        out[f.stem] = [json.loads(line)["step_ms"] for line in f.read_text().splitlines() if "step_ms" in line]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", nargs="*", help="default: all")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="every step once, for a fraction of a second (checks it runs)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest")
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--report-only", action="store_true",
                    help="print the table and redraw headline.png from DIR/headline.json without measuring")
    a = ap.parse_args()
    if a.report_only:
        results = json.loads((a.out / "headline.json").read_text())
        plot(results, a.out / "headline.png")
        print(table(results))
        return
    reps = 1 if a.quick else a.reps
    cli = str(a.build / "bin" / "mlos")
    work = Path(tempfile.mkdtemp(prefix="mlos-headline-"))
    images = make_images(str(work / "images"), count=64 if a.quick else 1024, photo=True)
    sys.path.insert(0, str(REPO / "examples" / "yolo_showcase"))
    from make_dataset import make_dataset
    yolo_data = work / "yolo-data"
    make_dataset(yolo_data, images=40 if a.quick else 200, imgsz=64 if a.quick else 320, seed=0)
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("MLOS_", "OMP_", "MKL_", "KMP_", "GOMP_")) and
                k not in ("LD_PRELOAD", "MALLOC_CONF", "GLIBC_TUNABLES", "CONDA_PREFIX", "VIRTUAL_ENV")}
    base_env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(work / "runtime"))
    (work / "runtime").mkdir()
    ncpu = len(os.sched_getaffinity(0))
    all_w = workloads(images, str(yolo_data), a.quick)
    chosen = a.workloads or [w for w in all_w if w not in EXTRAS]
    t0 = time.monotonic()
    results = {"machine": machine(), "reps": reps, "quick": a.quick, "workloads": {}}

    def log(msg):
        print(f"[{time.monotonic() - t0:6.0f} s] {msg}", file=sys.stderr, flush=True)

    try:
        for w in chosen:
            tune_dir = work / f"tune-{w}"
            cs = configs(cli, ncpu, all_w[w], base_env, work, tune_dir)
            res = {"commands": {n: shown(c.job.argv(), work) for n, c in cs.items()}, "screening": {},
                   "learning": [], "final": {}}
            for name in [n for n in cs if n.startswith(("anchor", "expert"))] + ["generic"]:
                res["screening"][name] = cs[name].run()
                log(f"{w} screening {name}: {res['screening'][name]['samples_per_s']:.1f}/s "
                    f"({res['screening'][name]['malloc']}, {res['screening'][name]['openmp']})")
            for i in range(1 if a.quick else MLOS_LEARNING_RUNS):
                res["learning"].append(cs["mlOS"].run())
                log(f"{w} mlOS learning run {i + 1}: {res['learning'][-1]['samples_per_s']:.1f}/s "
                    f"({res['learning'][-1]['malloc']})")
            best = {}
            for kind in ("anchor", "expert"):
                names = [n for n in res["screening"] if n.startswith(kind)]
                best[kind] = max(names, key=lambda n: res["screening"][n]["samples_per_s"])
            final = ["generic", best["anchor"], best["expert"], "mlOS"]
            runs = {n: [] for n in final}
            for rep in range(reps):
                for name in final[rep % 4:] + final[:rep % 4]:
                    runs[name].append(cs[name].run())
                    log(f"{w} rep {rep + 1}/{reps} {name}: {runs[name][-1]['samples_per_s']:.1f}/s "
                        f"({runs[name][-1]['malloc']})")
            res["final"] = runs
            res["best_anchor"], res["best_expert"] = best["anchor"], best["expert"]
            res["mlos_store"] = tuning_choices(tune_dir)
            res["summary"] = {n: med(rs) for n, rs in runs.items()}
            results["workloads"][w] = res
    except Failed as e:
        sys.exit(f"headline: {e}")
    finally:
        results["wall_seconds"] = time.monotonic() - t0
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "headline.json").write_text(json.dumps(results, indent=1) + "\n")
        shutil.rmtree(work, ignore_errors=True)
    plot(results, a.out / "headline.png")
    print(table(results))


def table(results):
    rows = ["| workload | generic | anchor (best) | expert (best factor) | mlOS | mlOS / generic | mlOS / anchor |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for w, r in results["workloads"].items():
        s = r["summary"]
        g, an, ex, m = s["generic"], s[r["best_anchor"]], s[r["best_expert"]], s["mlOS"]

        def cell(x):
            return f"{x['median']:.1f} [{x['min']:.1f}–{x['max']:.1f}]"
        rows.append(f"| {w} | {cell(g)} | {cell(an)} {r['best_anchor'][8:]} | {cell(ex)} {r['best_expert'][8:]} | "
                    f"{cell(m)} | {m['median'] / g['median']:.2f} | {m['median'] / an['median']:.2f} |")
    return "\n".join(rows)


def plot(results, path):
    """One panel per workload: each configuration's median over generic's,
    with its min-max range."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = results["workloads"]
    fig, axes = plt.subplots(1, len(ws), figsize=(3.4 * len(ws), 3.6), squeeze=False)
    for ax, (w, r) in zip(axes[0], ws.items()):
        s = r["summary"]
        names = ["generic", r["best_anchor"], r["best_expert"], "mlOS"]
        base = s["generic"]["median"]
        med = [s[n]["median"] / base for n in names]
        err = [[(s[n]["median"] - s[n]["min"]) / base for n in names], [(s[n]["max"] - s[n]["median"]) / base for n in names]]
        ax.bar(range(4), med, yerr=err, capsize=3, color=["tab:gray", "tab:orange", "tab:blue", "tab:green"])
        ax.axhline(1.0, color="black", linewidth=0.6)
        labels = ["generic", "anchor\n" + names[1][8:], "expert\n" + names[2][8:], "mlOS"]
        ax.set_xticks(range(4), labels, fontsize=6, rotation=25, ha="right")
        ax.set_title(w, fontsize=9)
    axes[0][0].set_ylabel("samples/s over generic (median, min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
