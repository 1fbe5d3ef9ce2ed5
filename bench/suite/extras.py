# SPDX-License-Identifier: Apache-2.0
"""Scenarios 5-8 reuse the project's own benchmark tools, run here and
parsed: memory-pressure survival, checkpoint stall, and the micro costs."""
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def memory_pressure(build, runs):
    """bench/memory_pressure_report.py: the pressure issue's survival
    scenario (a trainer in a 320 MiB v1 memory cgroup with a hog), plain
    against mlOS shedding its cache on the callback. Needs root and v1."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pressure.json"
        r = subprocess.run([sys.executable, str(REPO / "bench" / "memory_pressure_report.py"), "--runs", str(runs),
                            "--build", str(build), "--json", str(out)], capture_output=True, text=True, timeout=900)
        if r.returncode != 0 or not out.exists():
            return {"skipped": (r.stderr or r.stdout).strip().splitlines()[-1:] or ["failed"]}
        runs_by_variant = json.loads(out.read_text())
    return {v: {"survived": sum(x["survived"] for x in xs), "runs": len(xs), "rc": [x["rc"] for x in xs],
                "critical_callback_to_oom_kill_ms": [x["critical_callback_to_oom_ms"] for x in xs
                                                     if "critical_callback_to_oom_ms" in x]}
            for v, xs in runs_by_variant.items()}


def checkpoint_stall(build, reps, sizes_mib):
    """build/bin/mlos_checkpoint_bench: time the training loop is blocked
    per checkpoint: plain write + fsync, mlOS synchronous save, mlOS
    asynchronous durable save (copy into locked staging, written behind)."""
    with tempfile.TemporaryDirectory(dir=str(REPO)) as tmp:  # the disk the project is on, not tmpfs
        r = subprocess.run([str(build / "bin" / "mlos_checkpoint_bench"), tmp, str(reps), *map(str, sizes_mib)],
                           capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"skipped": r.stderr.strip()[-500:]}
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\| (\d+) MiB \| ([\d.]+) ms \| ([\d.]+) ms \| ([\d.]+) ms \|", line)
        if m:
            rows[f"{m.group(1)} MiB"] = {"plain_ms": float(m.group(2)), "mlos_sync_ms": float(m.group(3)),
                                         "mlos_async_ms": float(m.group(4))}
    return {"reps": reps, "sizes": rows}


def micro(build, reps, seconds):
    """set_phase (embedded, and through mlosd's phase page), request +
    release: Google Benchmark's medians from mlos_api_bench, and the
    interleaved embedded/daemon phase-hint comparison of mlos_daemon_load
    against an mlosd started here (no cgroups)."""
    r = subprocess.run([str(build / "bin" / "mlos_api_bench"), "--benchmark_format=json",
                        f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                        f"--benchmark_min_time={seconds}s"], capture_output=True, text=True, timeout=600)
    out = {}
    if r.returncode == 0:
        for b in json.loads(r.stdout)["benchmarks"]:
            if b.get("aggregate_name") == "median":
                scale = {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
                out[b["run_name"]] = b["real_time"] * scale
    else:
        out["api_bench_error"] = r.stderr[-500:]
    with tempfile.TemporaryDirectory() as tmp:
        sock = f"{tmp}/mlosd.sock"
        d = subprocess.Popen([str(build / "bin" / "mlosd"), "--socket", sock, "--state-dir", f"{tmp}/state",
                              "--cgroups", "none", "--metrics-listen", ""],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if Path(sock).exists():
                    break
                time.sleep(0.05)
            r = subprocess.run([str(build / "bin" / "mlos_daemon_load"), "--socket", sock, "--clients", "4",
                                "--seconds", str(max(1, int(seconds * 4))), "--json"],
                               capture_output=True, text=True, timeout=300)
            if r.returncode == 0:
                out["phase_hint_ns"] = json.loads(r.stdout)["phase_hint_ns"]
            else:
                out["daemon_load_error"] = (r.stderr or r.stdout)[-500:]
        finally:
            d.terminate()
            d.wait()
    return out


def phase_hints(build, quick):
    """build/bin/mlos_phase_scenario: two jobs on one shared CPU, a trainer
    computing next to a job that loads data then checkpoints; phases ignored,
    honoured, and DATA_LOADING read literally as "low priority I/O" at normal
    CPU; interleaved repetitions, medians, ratios against "ignored"."""
    with tempfile.TemporaryDirectory(dir=str(REPO)) as tmp:  # the disk the project is on, not tmpfs
        r = subprocess.run([str(build / "bin" / "mlos_phase_scenario"), "--dir", tmp,
                            *(["--quick"] if quick else ["--reps", "5"])],
                           capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"skipped": (r.stderr or r.stdout).strip()[-500:]}
    return json.loads(r.stdout)
