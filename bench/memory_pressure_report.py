#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory-pressure scenario, repeated: how soon callbacks come after the
threshold is crossed, how much time they leave before the OOM killer, and
whether the job survives, with and without mlOS.

    python3 bench/memory_pressure_report.py [--runs N] [--build DIR] [--json FILE]

Runs (as root, on cgroup v1) the scenario of tests/e2e/pressure_scenario.py
N times per variant, variants interleaved:
  plain     the trainer without mlOS               -> killed or not
  shed      embedded engine, sheds its cache       -> survives or not
  observe   embedded engine, only records          -> callback timings
  daemon    under mlosd (its own, started here), observe -> callback timings
Timings are CLOCK_MONOTONIC differences between processes of one machine:
  crossing->callback  the callback's time minus the moment the hog, checking
                      the cgroup after every MiB it touches, first saw the
                      working set at the threshold (the hog's check lags the
                      kernel by up to one MiB of page faults, so this can be
                      slightly negative);
  detect->callback    the callback's time minus detected_ns (when the level
                      was entered: by the library thread or by mlosd);
  callback->OOM kill  how long the job had to react before the kernel
                      killed it (observe variants only).
Medians and ranges are printed."""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import pressure_scenario as sc  # noqa: E402
from daemon_helpers import Daemon  # noqa: E402

MODERATE, CRITICAL = 1, 2


def timings(out):
    t = {}
    for level, at, name in ((MODERATE, sc.MODERATE_AT, "moderate"), (CRITICAL, sc.CRITICAL_AT, "critical")):
        cb = next((c for c in out.callbacks if c["level"] == level), None)
        crossed = out.crossing_ns(at)
        if cb is None:
            continue
        if crossed is not None:
            t[f"{name}_crossing_to_callback_ms"] = (cb["t_ns"] - crossed) / 1e6
        t[f"{name}_detect_to_callback_ms"] = (cb["t_ns"] - cb["detected_ns"]) / 1e6
        if out.trainer_rc == -9:
            t[f"{name}_callback_to_oom_ms"] = (out.trainer_exit_ns - cb["t_ns"]) / 1e6
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--json", help="write every run's numbers here")
    args = ap.parse_args()
    if reason := sc.v1_memory_unavailable_reason():
        sys.exit(f"memory_pressure_report: {reason}")
    build = Path(args.build)
    results = {v: [] for v in ("plain", "shed", "observe", "daemon")}
    with tempfile.TemporaryDirectory(prefix="mlos-pressure-") as tmp:
        tmp = Path(tmp)
        daemon = Daemon(tmp / "mlosd", cgroups="v1")
        (tmp / "mlosd").mkdir()
        daemon.start()
        try:
            for i in range(args.runs):
                for variant in results:
                    run_dir = tmp / f"{variant}-{i}"
                    run_dir.mkdir()
                    if variant == "daemon":
                        out = sc.run(build, "observe", run_dir, daemon=daemon)
                    else:
                        out = sc.run(build, variant, run_dir)
                    rec = {"survived": out.trainer_rc == 0, "rc": out.trainer_rc,
                           "levels": [c["level"] for c in out.callbacks], **timings(out)}
                    results[variant].append(rec)
                    print(f"run {i} {variant:8s} rc={out.trainer_rc:4d} levels={rec['levels']}", file=sys.stderr)
        finally:
            daemon.stop()
            daemon.remove_cgroups()

    print(f"\n{args.runs} runs per variant (limit {sc.LIMIT_MB} MiB, cache {sc.CACHE_MB} MiB, "
          f"hog {sc.HOG_TARGET_MB} MiB at {sc.HOG_STEP_MB} MiB/{sc.HOG_INTERVAL_MS} ms)\n")
    print("| variant | survived | levels heard before the end |")
    print("|---|---|---|")
    for v, runs in results.items():
        heard = sorted({tuple(r["levels"][:2]) for r in runs})
        print(f"| {v} | {sum(r['survived'] for r in runs)}/{len(runs)} | {heard} |")
    print("\n| variant | measure | median | min | max |")
    print("|---|---|---|---|---|")
    for v in ("observe", "daemon", "shed"):
        keys = sorted({k for r in results[v] for k in r if k.endswith("_ms")})
        for k in keys:
            xs = [r[k] for r in results[v] if k in r]
            print(f"| {v} | {k[:-3]} | {statistics.median(xs):.2f} ms | {min(xs):.2f} | {max(xs):.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
