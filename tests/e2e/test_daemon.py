# SPDX-License-Identifier: Apache-2.0
"""mlosd end to end: jobs from the published API in daemon mode, their
cgroups in the real hierarchy (v1 here, v2 in the VM test bed), status and metrics, kill -9 and restart,
uid checks, malformed frames, a corrupt state file."""
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from cli_helpers import error_codes, parse_cpu_list
from conftest import build_dir
from daemon_helpers import (CGROUP_ROOT, Client, Daemon, allowed_cpus, encode, read_frame, start_job_client,
                            real_cgroups_usable, wait_for)

ERR = error_codes()


@pytest.fixture
def cgroup_daemon(tmp_path):
    why = real_cgroups_usable()
    if why:
        pytest.skip(why)
    d = Daemon(tmp_path, cgroups="real")
    yield d
    d.stop()
    d.remove_cgroups()


@pytest.fixture
def plain_daemon(tmp_path):
    d = Daemon(tmp_path, cgroups="none")
    yield d
    d.stop()


def stop_clients(clients):
    for c in clients:
        if c.poll() is None:
            c.terminate()
    return [c.wait(10) for c in clients]


def jobs_by_claim(daemon):
    return {j["job"]: j for j in daemon.status()["jobs"]}


def metrics_text(daemon):
    port = daemon.status()["daemon"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def test_two_jobs_get_disjoint_cpus_own_cgroups_and_survive_kill9(cgroup_daemon, tmp_path):
    d = cgroup_daemon.start()
    if os.cpu_count() < 2:
        pytest.skip("needs 2 CPUs")
    a = start_job_client(d, label="train-a")
    b = start_job_client(d, label="train-b")
    try:
        assert not (parse_cpu_list(a.cpus) & parse_cpu_list(b.cpus)), (a.cpus, b.cpus)
        # Each job's own cgroup holds its process, confined to its CPUs.
        for p in (a, b):
            job = f"job-{p.claim}"
            assert parse_cpu_list((d.cgroup_dir("cpuset", job) / "cpuset.cpus").read_text()) == parse_cpu_list(p.cpus)
            for ctl in ("cpuset", "cpu", "memory"):
                assert str(p.pid) in (d.cgroup_dir(ctl, job) / "cgroup.procs").read_text().split()
            assert parse_cpu_list(allowed_cpus(p.pid)) <= parse_cpu_list(p.cpus)
        # Phases show up in status (through the phase page) and drive the CPU weight.
        jobs = wait_for(lambda: (j := jobs_by_claim(d)) and all(x["phase"] != "UNMARKED" for x in j.values()) and j)
        assert set(jobs) == {a.claim, b.claim}
        for p in (a, b):
            j = jobs[p.claim]
            assert j["pid"] == p.pid and j["exclusive"] and j["phase_source"] == "page"
            assert j["phase"] in ("FORWARD", "BACKWARD", "OPTIMIZER")
            assert d.cpu_weight(j["cgroup"]) in (100, 200)
        st = d.status()
        assert parse_cpu_list(st["exclusive_cpus"]) == parse_cpu_list(a.cpus) | parse_cpu_list(b.cpus)
        # Metrics: both jobs, accepted by promtool.
        series = [f'mlos_job_phase_seconds_total{{job_id="{p.claim}",label="{label}",phase="BACKWARD",uid="{os.getuid()}"}}'
                  for p, label in ((a, "train-a"), (b, "train-b"))]
        # Metrics are sampled once a second.
        text = wait_for(lambda: (t := metrics_text(d)) and all(x in t for x in series) and t, timeout=5)
        assert text, metrics_text(d)
        assert "mlos_build_info" in text
        if shutil.which("promtool"):
            r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr
        # kill -9 and restart: both keep running with the same CPUs; the new
        # daemon adopts them and maps their phase pages again.
        d.kill9()
        time.sleep(0.3)
        assert a.poll() is None and b.poll() is None
        d.start()
        jobs = jobs_by_claim(d)
        assert set(jobs) == {a.claim, b.claim}
        for p in (a, b):
            assert parse_cpu_list(jobs[p.claim]["cpus"]) == parse_cpu_list(p.cpus)
            assert jobs[p.claim]["phase_source"] == "page"
            assert parse_cpu_list(allowed_cpus(p.pid)) <= parse_cpu_list(p.cpus)
        assert "adopted job" in d.log.read_text()
    finally:
        rcs = stop_clients([a, b])
    assert rcs == [0, 0], (a.stdout.read(), b.stdout.read())
    # Released: the jobs and their cgroups are gone.
    assert d.status()["jobs"] == []
    for p in (a, b):
        assert not d.cgroup_dir("cpuset", f"job-{p.claim}").exists()


def test_kill9_at_random_moments_loses_no_cpus_and_registry_matches(cgroup_daemon):
    d = cgroup_daemon.start()
    rng = random.Random(7)
    clients = [start_job_client(d, exclusive=False, label=f"c{i}") for i in range(3)]
    recovery = []
    try:
        for round_ in range(15):
            time.sleep(rng.uniform(0.0, 0.3))
            d.kill9()
            if round_ == 5:
                # An owner that dies while the daemon is down is pruned at restart.
                gone = clients.pop()
                gone.kill()
                gone.wait(10)
            t0 = time.monotonic()
            d.start()
            recovery.append(time.monotonic() - t0)
            for c in clients:
                assert c.poll() is None, c.stdout.read()
            jobs = jobs_by_claim(d)
            assert set(jobs) == {c.claim for c in clients}, (round_, jobs.keys())
            for c in clients:
                assert parse_cpu_list(jobs[c.claim]["cpus"]) == parse_cpu_list(c.cpus)
                assert parse_cpu_list(allowed_cpus(c.pid)) <= parse_cpu_list(c.cpus)
    finally:
        rcs = stop_clients(clients)
    assert rcs == [0] * len(clients)
    recovery.sort()
    print(f"\nrecovery (start to ready) after kill -9: median {recovery[len(recovery) // 2] * 1000:.0f} ms, "
          f"max {recovery[-1] * 1000:.0f} ms over {len(recovery)} restarts")


def test_client_outlives_daemon_and_release_without_daemon_is_reported(plain_daemon):
    d = plain_daemon.start()
    c = start_job_client(d, exclusive=False, label="orphan")
    d.stop()
    time.sleep(0.3)
    assert c.poll() is None
    c.terminate()
    assert c.wait(10) == 5  # release could not reach mlosd: reported, no crash
    assert f"rc={ERR['MLOS_ERR_DAEMON_UNAVAILABLE']}" in c.stdout.read()
    d.start()  # the owner is gone: its job is pruned
    assert d.status()["jobs"] == []
    assert "pruned job" in d.log.read_text()


def test_other_uid_cannot_release_rebind_or_change_a_job(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to become nobody")
    sockdir = Path(tempfile.mkdtemp(prefix="mlosd-uid-"))
    os.chmod(sockdir, 0o755)
    d = Daemon(tmp_path, cgroups="none")
    d.socket = sockdir / "mlosd.sock"
    d.start()
    job = start_job_client(d, exclusive=False, label="root-job")
    script = f"""
import json, os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from daemon_helpers import Client  # imported before dropping privileges
os.setgroups([]); os.setgid(65534); os.setuid(65534)
c = Client({str(d.socket)!r})
out = {{op: c.call(op, **args) for op, args in [
    ("release", {{"job": {job.claim}}}), ("phase", {{"job": {job.claim}, "phase": 5}}),
    ("attach", {{"job": {job.claim}, "pid": os.getpid()}})]}}
out["status"] = c.call("status")
print(json.dumps(out))
"""
    try:
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        import json
        out = json.loads(r.stdout)
        for op in ("release", "phase", "attach"):
            assert out[op]["ok"] is False and out[op]["error"]["code"] == ERR["MLOS_ERR_PERMISSION"], out[op]
        assert out["status"]["ok"] and [j["job"] for j in out["status"]["jobs"]] == [job.claim]  # reads are open
        jobs = jobs_by_claim(d)
        assert job.claim in jobs and jobs[job.claim]["phase"] != "CHECKPOINT"
        assert job.poll() is None
    finally:
        assert stop_clients([job]) == [0]
        d.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


def raw_exchange(path, data: bytes, shutdown=True):
    """Sends bytes; returns the first reply frame, or None if the daemon closed."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(str(path))
    s.sendall(data)
    if shutdown:
        s.shutdown(socket.SHUT_WR)
    try:
        return read_frame(s)
    except (ConnectionError, OSError):
        return None
    finally:
        s.close()


def test_malformed_frames_get_an_error_or_a_close_and_the_daemon_stays_up(plain_daemon):
    d = plain_daemon.start()
    good = encode(1, {"op": "status", "id": 1})
    cases = {
        "bad magic": b"XXXX" + good[4:],
        "other version": good[:4] + struct.pack("<H", 9) + good[6:],
        "unknown kind": good[:6] + struct.pack("<H", 7) + good[8:],
        "oversized": good[:8] + struct.pack("<I", 1 << 30) + good[12:],
        "reserved set": good[:12] + b"\x01\x00\x00\x00" + good[16:],
        "not json": b"MLOS" + struct.pack("<HHII", 1, 1, 5, 0) + b"{nope",
        "truncated": good[:20],
        "random": bytes(random.Random(3).randrange(256) for _ in range(4096)),
    }
    for name, data in cases.items():
        reply = raw_exchange(d.socket, data)
        if reply is not None:
            assert reply["ok"] is False, name
    c = d.client()
    assert c.call("no_such_op")["error"]["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"]
    bad = c.call("request", num_cpus="two")
    assert bad["ok"] is False and bad["error"]["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"]
    assert c.call("release", job=-1)["error"]["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"]
    assert c.call("release", job=12345)["error"]["code"] == ERR["MLOS_ERR_INVALID_HANDLE"]
    c.close()
    assert d.proc.poll() is None
    assert d.status()["ok"]


def test_corrupt_state_file_refuses_start_and_is_kept(tmp_path):
    d = Daemon(tmp_path, cgroups="none")
    d.start()
    c = d.client()
    assert c.call("request", num_cpus=1)["ok"]
    c.close()
    d.stop()
    state = d.state_dir / "registry.json"
    damaged = state.read_bytes().replace(b'"cpus"', b'"cpuz"')
    state.write_bytes(damaged)
    r = subprocess.run(d.argv(), capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    assert "refusing to start" in r.stderr and str(state) in r.stderr and "--quarantine-state" in r.stderr
    assert state.read_bytes() == damaged
    d.extra_args = ["--quarantine-state"]
    d.start()
    assert d.status()["jobs"] == []
    assert list(d.state_dir.glob("registry.json.corrupt-*"))[0].read_bytes() == damaged
    d.stop()


def test_check_config(tmp_path):
    d = Daemon(tmp_path)
    good = tmp_path / "good.json"
    good.write_text('{"sample_interval_ms": 200, "arbitration": {"phase_weights": {"BACKWARD": 300}}}')
    r = subprocess.run([d.binary, "--check-config", "-c", str(good), "--cgroups", "none"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert '"sample_interval_ms": 200' in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"arbitration": {"phase_weights": {"BACKWRD": 300}}}')
    r = subprocess.run([d.binary, "--check-config", "-c", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "BACKWRD" in r.stderr


def test_shipped_config_and_systemd_unit_are_valid(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    d = Daemon(tmp_path)
    r = subprocess.run([d.binary, "--check-config", "-c", str(repo / "packaging/systemd/mlosd.json"), "--cgroups",
                        "none"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    # The unit as this build generated it for its prefix (mlosd.service.in).
    unit = build_dir() / "mlosd.service"
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    # Only what is not installed here may be reported: the binary and the
    # man page the unit's Documentation= names.
    problems = [l for l in (r.stdout + r.stderr).splitlines()
                if l.strip() and "is not executable" not in l and "Command 'man mlosd(8)' failed" not in l]
    assert not problems, problems
    text = unit.read_text()
    settings = [l for l in text.splitlines() if not l.startswith("#")]
    assert "Delegate=yes" in settings and not any(l.startswith("ProtectControlGroups") for l in settings)
    assert "Type=notify" in settings and any(l.startswith("WatchdogSec=") for l in settings)
    assert "ExecReload=/bin/kill -HUP $MAINPID" in settings
    assert not re.search(r"@[A-Z_]+@", text), "every @VAR@ of the template is substituted"
    assert any(l.startswith("ExecStart=/") and l.endswith("/sbin/mlosd --config /etc/mlos/mlosd.json") for l in settings)


def test_a_released_job_goes_back_to_the_cgroup_its_owner_came_from(cgroup_daemon, tmp_path):
    """Under systemd, Slurm or Kubernetes a process belongs to a cgroup
    somebody else manages: when its job ends, it goes back there (not to
    the root), even after a mlosd restart in between (the origin is in the
    registry)."""
    d = cgroup_daemon.start()
    origin = f"mlos-origin-{os.getpid()}-{tmp_path.name}"[:60]
    roots = ([CGROUP_ROOT] if d.cgroups == "v2" else [CGROUP_ROOT / c for c in ("cpuset", "cpu", "memory")])
    made = []
    child = None
    try:
        for root in roots:
            (root / origin).mkdir()
            made.append(root / origin)
            if root.name == "cpuset":  # v1 cpuset takes tasks once it has CPUs and nodes
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (root / origin / f).write_text((root / f).read_text())
        script = f"""
import json, os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from daemon_helpers import Client, cgroup_of
for root in {[str(r) for r in roots]!r}:
    open(root + "/{origin}/cgroup.procs", "w").write(str(os.getpid()))
c = Client({str(d.socket)!r})
r = c.call("request", num_cpus=1, label="origin")
print(json.dumps({{"job": r["job"], "cgroup": cgroup_of(os.getpid())}}), flush=True)
sys.stdin.readline()
c = Client({str(d.socket)!r})  # mlosd restarted: a new connection, the same owner
print(json.dumps(c.call("release", job=r["job"])), flush=True)
print(json.dumps({{"cgroup": cgroup_of(os.getpid()), "memory": cgroup_of(os.getpid(), "memory")}}), flush=True)
sys.stdin.readline()
"""
        child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        granted = json.loads(child.stdout.readline())
        assert granted["cgroup"] == f"/{d.base}/job-{granted['job']}", granted
        # A restart in between: the new mlosd knows the origin from its registry.
        d.kill9()
        d.start()
        child.stdin.write("release\n")
        child.stdin.flush()
        reply = json.loads(child.stdout.readline())
        assert reply["ok"], reply
        released = json.loads(child.stdout.readline())
        assert released == {"cgroup": f"/{origin}", "memory": f"/{origin}"}, released
    finally:
        if child:
            child.kill()
            child.wait(10)
        for dir_ in made:
            wait_for(lambda: not (dir_ / "cgroup.procs").read_text().strip(), timeout=5)
            dir_.rmdir()
