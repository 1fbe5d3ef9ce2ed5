#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mlosd at scale, and a soak against a crowd of local users.

    python3 bench/daemon_scale.py [--jobs 10000] [--owners 4] [--soak-seconds 60] [--cgroups none|real]
                                  [--out DIR] [--quick]
    python3 bench/daemon_scale.py --compare-with OLD_BUILD_DIR [--repeats 3] [--jobs 10000] [--out DIR]

Needs root (owners run as their own uids: the users mlos-soak-0..N are
created if missing) and a build (build/bin/mlosd, $MLOS_BUILD_DIR). Starts a
private mlosd, `--confine off`, with its default policies (phase-weights,
thread-governor: attached to every job) from the build. `--cgroups none`
(default) measures the daemon alone; `--cgroups real` gives every job its
cgroup in this machine's hierarchy (v1 or v2) under a private base, which
is removed at the end and checked to be gone.

Scale: `--owners` processes, each its own uid and its own connection,
register jobs in turns until `--jobs` are held; at 0, 1/10, 1/4, 1/2 and all
of them it records the latency of 50 more requests (median, p99), of a
`status` page and of `hello`, the journal bytes one request adds, mlosd's
descriptors and RSS. Then one owner (a quarter of the jobs) is SIGKILLed and
the time until mlosd has forgotten its jobs is measured.

Soak (`--soak-seconds`): with the jobs held, a root job holds an exclusive
CPU through the published API while small owners die at random and are
replaced (arrivals keep the node near `--jobs` jobs), idle clients sit on connections, slow clients trickle requests
byte by byte and never read, and a prober sends `hello` every 50 ms. At the
end: nothing lost (every live owner's jobs are there, no dead owner's),
the root job kept its CPU throughout, and the hello latency over the whole
soak (max, p99), the policies' failures (the shipped ones never fail by
themselves: any failure is mlosd's), and each registry compaction's pause
(mlosd logs it). Writes DIR/daemon_scale.json and prints a markdown table.
Timing is reported, never judged (this machine is shared); the exit status
is 1 if a job was lost or left over, the root job lost its CPU, a policy
failed, or a cgroup was left behind.

Comparison (`--compare-with`): mlosd, its policy host and policies from
another build (an older commit's build directory) against this build's,
interleaved (this, other, this, other, ... `--repeats` times each), the
clients always this build's. Each run measures the scale part at 50 and at
`--jobs` jobs (no kill, no soak); the table gives, per build and size, the
median over runs of the request median and p99, with the runs' range (the
run-to-run spread to judge a difference by). Writes
DIR/daemon_scale_compare.json."""
import argparse
import json
import os
import pwd
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import build_dir as REPO_BUILD  # noqa: E402
from daemon_helpers import CGROUP_ROOT, V1_HIERARCHIES, Client, Daemon, encode, read_frame  # noqa: E402

OWNER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from daemon_helpers import Client
os.setgroups([]); os.setgid(int(sys.argv[3])); os.setuid(int(sys.argv[3]))
c = Client(sys.argv[2])
c.sock.settimeout(120)
for line in sys.stdin:
    n = int(line)
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        r = c.call("request", num_cpus=1, label="soak")
        lat.append(time.perf_counter() - t)
        if not r["ok"]:
            print(json.dumps({"error": r["error"]}), flush=True)
            break
    print(json.dumps({"latencies": lat}), flush=True)
"""


def ensure_users(n):
    uids = []
    for i in range(n):
        name = f"mlos-soak-{i}"
        try:
            uids.append(pwd.getpwnam(name).pw_uid)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True)
            uids.append(pwd.getpwnam(name).pw_uid)
    return uids


class Owner:
    """A process of its own uid holding jobs over one connection."""

    def __init__(self, socket_path, uid):
        self.uid = uid
        self.jobs = 0
        self.proc = subprocess.Popen([sys.executable, "-c", OWNER, str(REPO / "tests" / "e2e"), str(socket_path),
                                      str(uid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def add(self, n):
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        if "error" in out:
            raise RuntimeError(f"uid {self.uid}: {out['error']}")
        self.jobs += n
        return out["latencies"]

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def daemon_facts(d):
    pid = d.proc.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")) * 1024
    journal = d.state_dir / "registry.journal"
    return {"fds": fds, "rss_bytes": rss, "journal_bytes": journal.stat().st_size if journal.exists() else 0}


def total_jobs(c):
    r = c.call("status", limit=1)
    assert r["ok"], r
    return r["total_jobs"]


def scale(d, owners, jobs, levels):
    probe = d.client()
    rows = []
    held = turn = 0
    for level in levels:
        # Fill up to the level, owners in turn.
        while held < level:
            chunk = min(250, level - held)
            owners[turn % len(owners)].add(chunk)
            turn += 1
            held += chunk
        before = daemon_facts(d)["journal_bytes"]
        lat = owners[0].add(50)
        held += 50
        after = daemon_facts(d)
        rows.append({
            "jobs": held,
            "request_median_ms": statistics.median(lat) * 1e3,
            "request_p99_ms": pct(lat, 0.99) * 1e3,
            "journal_bytes_per_request": (after["journal_bytes"] - before) / 50 if after["journal_bytes"] >= before
            else None,  # compacted meanwhile
            "status_page_ms": statistics.median(timed(lambda: probe.call("status")) for _ in range(5)) * 1e3,
            "hello_ms": statistics.median(timed(lambda: probe.call("hello")) for _ in range(20)) * 1e3,
            **after,
        })
        print(f"  {rows[-1]}", file=sys.stderr)
    probe.close()
    return rows, held


def prune_time(d, owner, expected_after):
    probe = d.client()
    t = time.perf_counter()
    owner.kill()
    while total_jobs(probe) != expected_after:
        time.sleep(0.002)
    elapsed = time.perf_counter() - t
    probe.close()
    return elapsed


def start_root_job(d):
    """A root job on an exclusive CPU through the published API, granted
    before the crowd arrives (later, shared jobs cover every CPU)."""
    binary = str(REPO_BUILD() / "bin" / "mlos_daemon_job_client")  # this build's client, whatever mlosd's
    job = subprocess.Popen([binary, "1", "1", "root-exclusive"], env=d.client_env(), stdout=subprocess.PIPE, text=True)
    line = job.stdout.readline()
    if not line.startswith("GRANTED"):
        raise RuntimeError(f"root job: {line}")
    granted = dict(f.split("=", 1) for f in line.split()[1:])
    return job, int(granted["claim"]), granted["cpus"]


def policy_failures(c):
    r = c.call("policies")
    assert r["ok"], r
    return {p["name"]: {"failures": p["failures"], "last_failure": p["last_failure"], "state": p["state"]}
            for p in r["loaded"] if p["failures"] or p["state"] == "failed"}


def compaction_pauses(d):
    """The pauses mlosd logged ("registry compacted: N jobs in U us")."""
    pauses = []
    for line in d.log.read_text(errors="replace").splitlines():
        if "registry compacted:" in line:
            words = line.split("registry compacted:")[1].split()
            pauses.append({"jobs": int(words[0]), "ms": int(words[3]) / 1000})
    return pauses


def leftover_cgroups(d):
    roots = [CGROUP_ROOT] if d.cgroups == "v2" else [CGROUP_ROOT / ctl for ctl in V1_HIERARCHIES]
    return [str(r / d.base) for r in roots if d.base and (r / d.base).exists()]


def soak(d, uids, seconds, held_by_others, root, population):
    root_job, root_claim, root_cpus = root
    stop = threading.Event()
    hello_lat, errors = [], []

    def prober():
        c = d.client()
        while not stop.is_set():
            try:
                hello_lat.append(timed(lambda: c.call("hello")))
            except OSError as e:  # an idle timeout closes it: reconnect
                errors.append(str(e))
                c = d.client()
            time.sleep(0.05)

    # Idle clients (as other users), and slow ones that trickle a request
    # byte by byte and never read.
    idle = [Client(d.socket) for _ in range(30)]
    slow = []
    for _ in range(5):
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(d.socket))
        slow.append([s, encode(1, {"op": "status", "id": 1}), 0])
    threading.Thread(target=prober, daemon=True).start()
    small = []
    deaths = births = 0
    lost = []
    root_moved = []
    end = time.monotonic() + seconds
    probe = d.client()
    while time.monotonic() < end:
        # Owners die at random and new ones arrive, holding the node near
        # `population` jobs: an arrival only while below it.
        if small and random.random() < 0.5:
            victim = small.pop(random.randrange(len(small)))
            victim.kill()
            deaths += 1
        if held_by_others + sum(o.jobs for o in small) < population:
            o = Owner(d.socket, random.choice(uids))
            o.add(random.randint(10, 100))
            small.append(o)
            births += 1
        for entry in slow:
            s, data, at = entry
            if at < len(data):
                s.send(data[at:at + 1])
                entry[2] = at + 1
        page = probe.call("status", after=root_claim - 1, limit=1)["jobs"]
        if not page or page[0]["job"] != root_claim or page[0]["cpus"] != root_cpus:
            root_moved.append(page[0] if page else None)
        time.sleep(0.5)
    stop.set()
    expected = held_by_others + sum(o.jobs for o in small) + 1
    deadline = time.monotonic() + 10
    while total_jobs(probe) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    got = total_jobs(probe)
    if got != expected:
        lost.append({"expected": expected, "held": got})
    root_job.terminate()
    root_rc = root_job.wait(10)
    for c in idle:
        c.close()
    for s, _, _ in slow:
        s.close()
    for o in small:
        o.kill()
    failed_policies = policy_failures(probe)
    probe.close()
    return {
        "seconds": seconds,
        "jobs_at_end": got,
        "policy_failures": failed_policies,
        "owner_deaths": deaths,
        "owner_births": births,
        "hello_samples": len(hello_lat),
        "hello_max_ms": max(hello_lat) * 1e3 if hello_lat else None,
        "hello_p99_ms": pct(hello_lat, 0.99) * 1e3 if hello_lat else None,
        "hello_over_100ms": sum(1 for x in hello_lat if x > 0.1),
        "prober_reconnects": len(errors),
        "lost_or_extra_jobs": lost,
        "root_job_cpu_changes": root_moved,
        "root_job_exit": root_rc,
    }


class DaemonFrom(Daemon):
    """mlosd with its policy host and policies from another build."""

    def __init__(self, tmp_path, build, **kw):
        super().__init__(tmp_path, policy_dir=Path(build) / "policies", **kw)
        self.build = Path(build)

    @property
    def binary(self):
        return str(self.build / "bin" / "mlosd")

    def argv(self):
        a = super().argv()
        a[a.index("--policy-host") + 1] = str((self.build / "bin" / "mlos-policyhost").resolve())
        return a


def one_scale_run(daemon, uids, jobs):
    """The scale part alone at 50 and `jobs` jobs, on a fresh mlosd."""
    daemon.start()
    owners = []
    try:
        owners = [Owner(daemon.socket, uid) for uid in uids]
        rows, _ = scale(daemon, owners, jobs, [0, jobs - 50])
        return rows
    finally:
        for o in owners:
            o.kill()
        daemon.stop()
        daemon.remove_cgroups()


def build_name(build):
    """A build as results name it: its commit (from the source tree its
    CMakeCache names), never a path of this machine."""
    source = None
    try:
        for line in (Path(build) / "CMakeCache.txt").read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                source = line.split("=", 1)[1]
        commit = subprocess.run(["git", "-C", source, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip() if source else ""
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    return f"build of {commit}" if commit else "another build"


def compare(a, uids):
    builds = {"this": None, "other": Path(a.compare_with).resolve()}
    runs = {name: [] for name in builds}
    for rep in range(a.repeats):
        for name, build in builds.items():
            work = Path(tempfile.mkdtemp(prefix=f"mlos-scale-{name}-"))
            os.chmod(work, 0o755)
            d = Daemon(work, cgroups=a.cgroups, confine="off") if build is None else \
                DaemonFrom(work, build, cgroups=a.cgroups, confine="off")
            print(f"run {rep + 1}/{a.repeats}: {name} ({d.binary})", file=sys.stderr)
            runs[name].append(one_scale_run(d, uids, a.jobs))
    result = {"jobs": a.jobs, "repeats": a.repeats, "other": build_name(builds["other"]), "runs": runs}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "daemon_scale_compare.json").write_text(json.dumps(result, indent=2))
    print("| jobs | build | request median ms (runs' range) | request p99 ms (runs' range) |\n|---:|---|---:|---:|")
    for level in range(2):
        for name in builds:
            rows = [run[level] for run in runs[name]]
            med = [r["request_median_ms"] for r in rows]
            p99 = [r["request_p99_ms"] for r in rows]
            print(f"| {rows[0]['jobs']} | {name} | {statistics.median(med):.2f} ({min(med):.2f}-{max(med):.2f}) | "
                  f"{statistics.median(p99):.2f} ({min(p99):.2f}-{max(p99):.2f}) |")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--owners", type=int, default=4)
    ap.add_argument("--soak-seconds", type=int, default=60)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "latest"))
    ap.add_argument("--cgroups", choices=["none", "real"], default="none",
                    help="none: the daemon alone; real: a cgroup per job in this machine's hierarchy")
    ap.add_argument("--quick", action="store_true", help="200 jobs, 3 s of soak: checks that it runs")
    ap.add_argument("--compare-with", metavar="BUILD_DIR",
                    help="another build's mlosd against this build's, interleaved (the scale part only)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each build with --compare-with")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("daemon_scale.py needs root (owners run as their own users)")
    if a.quick:
        a.jobs, a.soak_seconds = 200, 3
    uids = ensure_users(a.owners)
    if a.compare_with:
        return compare(a, uids)
    work = Path(tempfile.mkdtemp(prefix="mlos-scale-"))
    os.chmod(work, 0o755)
    d = Daemon(work, cgroups=a.cgroups, confine="off")
    d.start()
    owners, root = [], None
    try:
        root = start_root_job(d)
        owners = [Owner(d.socket, uid) for uid in uids]
        levels = sorted({0, a.jobs // 10, a.jobs // 4, a.jobs // 2, a.jobs})
        rows, held = scale(d, owners, a.jobs, levels)
        victim = owners.pop(0)
        prune_s = prune_time(d, victim, held - victim.jobs + 1)
        held -= victim.jobs
        soaked = soak(d, uids, a.soak_seconds, held, root, a.jobs) if a.soak_seconds > 0 else None
        result = {"jobs": a.jobs, "owners": a.owners, "scale": rows,
                  "prune": {"jobs": victim.jobs, "seconds": prune_s}, "soak": soaked,
                  "final": daemon_facts(d)}
    finally:
        for o in owners:
            o.kill()
        if root and root[0].poll() is None:
            root[0].kill()
        t = time.perf_counter()
        try:
            d.stop()
        except subprocess.TimeoutExpired:
            d.proc.kill()
        stop_s = time.perf_counter() - t
        d.remove_cgroups()
    result["stop_seconds"] = stop_s
    result["cgroups"] = d.cgroups
    result["compactions"] = compaction_pauses(d)
    result["cgroups_left_behind"] = leftover_cgroups(d) if d.cgroups != "none" else []
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "daemon_scale.json").write_text(json.dumps(result, indent=2))
    print("| jobs | request median ms | request p99 ms | journal B/request | status page ms | hello ms | mlosd fds |"
          " RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        jb = "compacted" if r["journal_bytes_per_request"] is None else f"{r['journal_bytes_per_request']:.0f}"
        print(f"| {r['jobs']} | {r['request_median_ms']:.2f} | {r['request_p99_ms']:.2f} | {jb} | "
              f"{r['status_page_ms']:.2f} | {r['hello_ms']:.2f} | {r['fds']} | {r['rss_bytes'] / 2**20:.0f} |")
    print(f"\nOwner of {result['prune']['jobs']} jobs killed: forgotten in {prune_s * 1e3:.1f} ms; "
          f"SIGTERM to exit: {stop_s:.2f} s")
    if soaked:
        print(f"\nSoak {soaked['seconds']} s ({soaked['jobs_at_end']} jobs at the end): {soaked['owner_deaths']} owners "
              f"died, {soaked['owner_births']} arrived; "
              f"hello max {soaked['hello_max_ms']:.1f} ms, p99 {soaked['hello_p99_ms']:.1f} ms, "
              f"{soaked['hello_over_100ms']} of {soaked['hello_samples']} over 100 ms; lost/extra jobs: "
              f"{soaked['lost_or_extra_jobs'] or 'none'}; root job CPU changes: "
              f"{len(soaked['root_job_cpu_changes'])}, exit {soaked['root_job_exit']}")
        print(f"Policies failed: {soaked['policy_failures'] or 'none'}")
    pauses = [c["ms"] for c in result["compactions"]]
    print(f"Registry compactions: {len(pauses)}" + (f", pause median {statistics.median(pauses):.1f} ms, max "
                                                    f"{max(pauses):.1f} ms (at {max(result['compactions'], key=lambda c: c['ms'])['jobs']} jobs)"
                                                    if pauses else ""))
    print(f"cgroups ({result['cgroups']}) left behind: {result['cgroups_left_behind'] or 'none'}")
    bad = (soaked and (soaked["lost_or_extra_jobs"] or soaked["root_job_cpu_changes"] or soaked["root_job_exit"] != 0
                       or soaked["policy_failures"])) or result["cgroups_left_behind"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
