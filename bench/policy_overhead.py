#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What hosting the default policies costs: mlosd with phase-weights and
thread-governor as policy modules (`policies`) against the same mlosd with
policy modules off (`builtin`: its compiled-in phase table, what every job
got before the move), on one node, interleaved.

    python3 bench/policy_overhead.py [--reps 5] [--seconds 3] [--flips 50] [--out DIR] [--quick]

Needs root and the cgroup v1 cpu controller (or none: the weight latency is
then skipped), and a build (build/bin/mlosd, build/bin/mlos, build/policies;
$MLOS_BUILD_DIR). Starts a private mlosd per configuration and repetition.

Measured, per configuration (medians over repetitions, order rotated):
- contention: two `mlos run --cpus N` jobs, each a CPU-bound Python loop on
  every CPU of the node, run together for --seconds; their summed
  iterations. The ratio policies/builtin is the overhead (goal: within the
  run-to-run spread, which is reported next to it);
- phase -> weight: a job flips between BACKWARD and IDLE --flips times over
  the socket; the time from the reply to the cgroup's cpu.shares showing the
  new weight (builtin writes it before replying; a policy answers through
  its host);
- policies only: tick latency of thread-governor (mlosd's figures), each
  host's resident memory, and the time to start a host (policy_load of
  `example`: spawn, confine, dlopen, init), and after a crash the time from
  the failure to running again (backoff included: 1 s).

Writes DIR/policy_overhead.json and prints a markdown table. Timing is
reported, never judged: this machine is shared."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build")
sys.path.insert(0, str(REPO / "tests" / "e2e"))
os.environ.setdefault("MLOS_BUILD_DIR", str(BUILD))
from daemon_helpers import Daemon, v1_cgroups_usable, wait_for  # noqa: E402

WORK = """
import os, sys, time
end = time.monotonic() + float(sys.argv[1]); n = 0
while time.monotonic() < end:
    for _ in range(10000): n += 1
os.write(1, f"{n}\\n".encode())
"""


def policy_dir(names):
    d = Path(tempfile.mkdtemp(prefix="mlos-bench-policies-"))
    os.chmod(d, 0o755)
    for name in names:
        src = BUILD / "policies" / f"{name}.so"
        if not src.exists():
            src = BUILD / "tests" / "policy-fixtures" / f"{name}.so"
        shutil.copy(src, d / f"{name}.so")
        os.chmod(d / f"{name}.so", 0o644)
    return d


def start(tmp, config, cgroups, pdir):
    (tmp / "mlosd.json").write_text(json.dumps(config))
    d = Daemon(tmp, cgroups=cgroups, extra_args=["--config", str(tmp / "mlosd.json")], policy_dir=pdir)
    return d.start()


def call(d, op, **args):
    c = d.client()
    try:
        r = c.call(op, **args)
        assert r["ok"], r
        return r
    finally:
        c.close()


def contention(d, seconds):
    cpus = os.cpu_count()
    env = d.client_env()
    jobs = [subprocess.Popen([str(BUILD / "bin" / "mlos"), "run", "--cpus", str(cpus), "--", "bash", "-c",
                              " & ".join([f"{sys.executable} -c '{WORK}' {seconds}"] * cpus) + "; wait"],
                             env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    total = 0
    for p in jobs:
        out, _ = p.communicate(timeout=seconds * 10 + 60)
        total += sum(int(x) for x in out.split())
    return total


def weight_latency(d, flips):
    c = d.client()
    try:
        job = c.call("request", num_cpus=1)
        assert job["ok"], job
        shares = d.cgroup_dir("cpu", f"job-{job['job']}") / "cpu.shares"
        out = []
        for i in range(flips):
            phase, weight = (3, 200) if i % 2 == 0 else (0, 10)
            want = str(weight * 1024 // 100)
            r = c.call("phase", job=job["job"], phase=phase)
            assert r["ok"], r
            t0 = time.perf_counter()
            while shares.read_text().strip() != want:
                if time.perf_counter() - t0 > 5:
                    raise AssertionError(f"cpu.shares stayed {shares.read_text()}, want {want}")
                time.sleep(0.0002)
            out.append(time.perf_counter() - t0)
        c.call("release", job=job["job"])
        return statistics.median(out)
    finally:
        c.close()


def policy_facts(d):
    c = d.client()
    try:
        job = c.call("request", num_cpus=1)
        time.sleep(3)  # a few thread-governor ticks
        loaded = {p["name"]: p for p in c.call("policies")["loaded"]}
        starts = []
        for _ in range(5):
            t0 = time.perf_counter()
            assert c.call("policy_load", name="example")["ok"]
            starts.append(time.perf_counter() - t0)
            assert c.call("policy_unload", name="example")["ok"]
        r = c.call("policy_request", job=job["job"], name="crash-tick")
        assert r["ok"], r
        failed = wait_for(lambda: (p := {x["name"]: x for x in c.call("policies")["loaded"]}["crash-tick"])
                          ["failures"] >= 1 and time.perf_counter(), timeout=30, interval=0.001)
        running = wait_for(lambda: (p := {x["name"]: x for x in c.call("policies")["loaded"]}["crash-tick"])
                           ["state"] == "running" and p["restarts"] >= 1 and time.perf_counter(),
                           timeout=30, interval=0.001)
        return {"tick_seconds_mean": loaded["thread-governor"]["tick_seconds"]["mean"],
                "tick_seconds_max": loaded["thread-governor"]["tick_seconds"]["max"],
                "host_resident_bytes": {n: p["host_resident_bytes"] for n, p in loaded.items()},
                "start_seconds_median": statistics.median(starts),
                "crash_to_running_seconds": running - failed if failed and running else None}
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--flips", type=int, default=50)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "2cpu-debian12"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.seconds, a.flips = 1, 0.5, 4
    if os.geteuid() != 0:
        sys.exit("policy_overhead.py needs root")
    cgroups = "v1" if not v1_cgroups_usable() else "none"
    pdir = policy_dir(["phase-weights", "thread-governor", "example", "crash-tick"])
    configs = {
        "policies": {"policies": {"tick_interval_ms": {"crash-tick": 200}}},
        "builtin": {"policies": {"enabled": False}},
    }
    results = {name: {"throughput": [], "weight_latency": []} for name in configs}
    facts = []
    try:
        for rep in range(a.reps):
            order = list(configs)[rep % 2:] + list(configs)[:rep % 2]
            for name in order:
                tmp = Path(tempfile.mkdtemp(prefix=f"mlos-bench-{name}-"))
                d = start(tmp, configs[name], cgroups, pdir)
                try:
                    results[name]["throughput"].append(contention(d, a.seconds))
                    if cgroups != "none":
                        results[name]["weight_latency"].append(weight_latency(d, a.flips))
                    if name == "policies" and rep == 0:
                        facts.append(policy_facts(d))
                finally:
                    d.stop()
                    d.remove_cgroups()
                    shutil.rmtree(tmp, ignore_errors=True)
    finally:
        shutil.rmtree(pdir, ignore_errors=True)
    summary = {}
    for name, r in results.items():
        t = r["throughput"]
        summary[name] = {"throughput_median": statistics.median(t),
                         "throughput_spread": (max(t) - min(t)) / statistics.median(t) if t else None,
                         "weight_latency_median_s": statistics.median(r["weight_latency"]) if r["weight_latency"] else None}
    ratio = summary["policies"]["throughput_median"] / summary["builtin"]["throughput_median"]
    out = {"cgroups": cgroups, "reps": a.reps, "seconds": a.seconds, "raw": results, "summary": summary,
           "ratio_policies_to_builtin": ratio, "policy_facts": facts[0] if facts else None}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "policy_overhead.json").write_text(json.dumps(out, indent=2))
    print("| config | throughput (median) | spread | phase->weight latency (median) |")
    print("|---|---|---|---|")
    for name, s in summary.items():
        lat = s["weight_latency_median_s"]
        print(f"| {name} | {s['throughput_median']:.0f} | {s['throughput_spread']:.1%} | "
              f"{'-' if lat is None else f'{lat * 1000:.2f} ms'} |")
    print(f"\npolicies/builtin throughput: {ratio:.3f}")
    print(json.dumps(out["policy_facts"], indent=2))


if __name__ == "__main__":
    main()
