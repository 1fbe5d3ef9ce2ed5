# SPDX-License-Identifier: Apache-2.0
"""`mlos status`, `mlos top` and `mlos daemon` against a real mlosd.

Each test starts its own mlosd on a private socket and state directory
(cgroups off, except in the one test that needs CPU accounting, which uses a
cgroup base of its own and removes it), and a training client
(build/bin/mlos-demo in MLOS_MODE=daemon) that keeps running for a while."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from cli_helpers import *  # noqa: F401,F403
from conftest import build_dir

PHASES = ("IDLE", "DATA_LOADING", "FORWARD", "BACKWARD", "OPTIMIZER", "CHECKPOINT")
V1_CONTROLLERS = ("cpuset", "cpu", "memory", "cpuacct")


def short_dir(tmp_path: Path) -> Path:
    """tmp_path, or a /tmp directory when a socket path there would be too
    long for sun_path (108 bytes)."""
    if len(str(tmp_path / "mlosd.sock")) < 100:
        return tmp_path
    return Path(tempfile.mkdtemp(prefix="mlos-cli-"))


class Mlosd:
    """One mlosd process for one test."""

    def __init__(self, directory: Path, cgroups="none", cgroup_base=None):
        self.dir = directory
        self.socket = directory / "mlosd.sock"
        self.log = directory / "mlosd.log"
        self.cgroup_base = cgroup_base
        argv = [str(build_dir() / "bin" / "mlosd"), "--socket", str(self.socket),
                "--state-dir", str(directory / "state"), "--cgroups", cgroups,
                "--metrics-listen", "127.0.0.1:0", "--sample-interval-ms", "50"]
        if cgroup_base:
            argv += ["--cgroup-base", cgroup_base]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + 15
        while not self.socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"mlosd did not create {self.socket}:\n{self.log.read_text()}")
            time.sleep(0.02)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_demo(daemon: Mlosd, steps=400000) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env.update(MLOS_MODE="daemon", MLOS_DAEMON_SOCKET=str(daemon.socket), MLOS_RUNTIME_DIR=str(daemon.dir))
    return subprocess.Popen([str(build_dir() / "bin" / "mlos-demo"), str(steps), "1"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_job(mlos, daemon: Mlosd, demo: subprocess.Popen, timeout=20.0) -> dict:
    """The demo's job in `mlos status --json`, once it has entered a phase."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if demo.poll() is not None:
            pytest.fail(f"mlos-demo exited {demo.returncode}: {demo.stderr.read()}")
        last = mlos.json("status", "--json", "--socket", str(daemon.socket))
        for job in last["jobs"]:
            if job["pid"] == demo.pid and job["phase"] in PHASES:
                return job
        time.sleep(0.05)
    pytest.fail(f"no phased job for pid {demo.pid}: {json.dumps(last)}\n{daemon.log.read_text()}")


@pytest.fixture
def daemon(tmp_path):
    d = Mlosd(short_dir(tmp_path))
    yield d
    d.stop()


@pytest.fixture
def demo(daemon):
    p = start_demo(daemon)
    yield p
    kill_and_reap(p)


def top_rows(output: str) -> list:
    """The job rows of every frame of `mlos top --batch`, split in columns."""
    rows = []
    for line in output.splitlines():
        cols = line.split()
        if cols and cols[0].isdigit():
            rows.append(cols)
    return rows


def test_status_json_and_text_show_the_daemon_jobs(mlos, daemon, demo):
    job = wait_for_job(mlos, daemon, demo)
    j = mlos.json("status", "--json", "--socket", str(daemon.socket))
    assert j["schema_version"] == 1
    assert j["command"] == "status"
    assert j["source"] == "mlosd"
    assert j["daemon"]["pid"] == daemon.proc.pid
    assert j["daemon"]["socket"] == str(daemon.socket)
    assert j["daemon"]["version"]
    assert set(job["phase_seconds"]) == set(PHASES)
    assert job["cpus"] and job["label"]

    # auto finds the daemon through MLOS_DAEMON_SOCKET as well.
    j = mlos.json("status", "--json", env={"MLOS_DAEMON_SOCKET": str(daemon.socket)})
    assert j["source"] == "mlosd"
    assert any(x["pid"] == demo.pid for x in j["jobs"])
    # mlos-demo was started without mlos run: no tuning choice to show.
    assert all(x["tuning"] == "" for x in j["jobs"] if x["pid"] == demo.pid)

    r = mlos.run("status", "--socket", str(daemon.socket))
    assert r.returncode == 0, mlos.describe(r)
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"mlosd {j['daemon']['version']} (pid {daemon.proc.pid}, up ")
    assert str(daemon.socket) in lines[0]
    assert "shared pool" in lines[1]
    # Then whether exclusive CPUs are kept from other processes, the GPUs
    # (none here, and why), one line per uid holding something, and the jobs.
    assert lines[2].startswith("confinement off: none ("), lines
    assert lines[3].startswith("GPUs: none (") or lines[3].startswith("GPU 0 "), lines
    header = next(i for i, l in enumerate(lines) if l.split()[:1] == ["JOB"])
    assert all(l.startswith(("uid ", "GPU ")) for l in lines[4:header]) and header > 4, lines
    assert lines[header].split() == ["JOB", "LABEL", "PID", "UID", "CPUS", "EXCL", "PHASE", "WEIGHT", "MEM", "CPU-s",
                                     "GPUS", "GPU-USE", "TUNING", "POLICIES"]
    row = next(cols for cols in (l.split() for l in lines[header + 1:]) if cols[2] == str(demo.pid))
    assert row[0] == str(job["job"])
    assert row[6] in PHASES

    # --source ledger: the embedded ledger, exactly as without a daemon.
    j = mlos.json("status", "--json", "--source", "ledger", "--socket", str(daemon.socket))
    assert j["claims"] == [] and "source" not in j


def test_top_batch(mlos, daemon, demo):
    job = wait_for_job(mlos, daemon, demo)
    r = mlos.run("top", "--batch", "--iterations", "2", "--interval", "0.2", "--socket", str(daemon.socket))
    assert r.returncode == 0, mlos.describe(r)
    assert "\x1b" not in r.stdout
    assert r.stdout.count("mlos top - ") == 2
    assert f"(pid {daemon.proc.pid})" in r.stdout
    header = next(l for l in r.stdout.splitlines() if l.split()[:1] == ["JOB"])
    assert header.split() == ["JOB", "LABEL", "PID", "CPUS", "PHASE", "IDLE%", "DATA%", "FWD%", "BWD%", "OPT%",
                              "CKPT%", "MEM", "GPUS", "GPU-USE", "CPU%", "POLICIES"]
    rows = [cols for cols in top_rows(r.stdout) if cols[2] == str(demo.pid)]
    assert len(rows) == 2, r.stdout
    for cols in rows:
        assert cols[0] == str(job["job"])
        assert cols[4] in PHASES
        shares = [float(x) for x in cols[5:11]]
        assert abs(sum(shares) - 100.0) < 0.5, cols
    assert rows[0][11].startswith("-")  # MEM: no cgroup, so the use is unknown


def test_without_a_daemon(mlos, tmp_path):
    missing = str(tmp_path / "no-such.sock")
    r = mlos.run("status", "--source", "daemon", "--socket", missing)
    assert r.returncode == 1, mlos.describe(r)
    assert missing in r.stderr and "mlosd unavailable" in r.stderr

    r = mlos.run("status", "--source", "daemon", "--json", "--socket", missing)
    assert r.returncode == 1, mlos.describe(r)
    assert json.loads(r.stdout)["error"]["code"] == error_codes()["MLOS_ERR_DAEMON_UNAVAILABLE"]

    # auto falls back to the ledger, output unchanged.
    r = mlos.run("status", "--socket", missing)
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout == f"ledger: {mlos.ledger}\nno claims\n"

    r = mlos.run("top", "--batch", "--iterations", "1", "--socket", missing)
    assert r.returncode == 1, mlos.describe(r)
    assert missing in r.stderr

    r = mlos.run("status", "--source", "nonsense")
    assert r.returncode == EXIT_USAGE, mlos.describe(r)


def test_daemon_check_config(mlos, tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"socket": str(tmp_path / "x.sock"), "cgroups": "none"}))
    r = mlos.run("daemon", "--check-config", "-c", str(good))
    assert r.returncode == 0, mlos.describe(r)
    effective = json.loads(r.stdout)
    assert effective["socket"] == str(tmp_path / "x.sock")
    assert effective["cgroups"] == "none"

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"no_such_key": 1}))
    r = mlos.run("daemon", "--check-config", "-c", str(bad))
    assert r.returncode == 2, mlos.describe(r)
    assert "no_such_key" in r.stderr
    assert not (tmp_path / "x.sock").exists()


def test_daemon_not_found(mlos, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy2(mlos.binary, lone / "mlos")
    r = subprocess.run([str(lone / "mlos"), "daemon", "--version"], env=mlos.env({"PATH": str(tmp_path)}),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == EXIT_NOT_FOUND, mlos.describe(r)
    assert "mlosd not found" in r.stderr


def _v1_unusable() -> str:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    for ctl in V1_CONTROLLERS:
        if not (Path("/sys/fs/cgroup") / ctl / "cgroup.procs").exists():
            return f"cgroup v1 {ctl} controller not mounted"
    return ""


def _remove_cgroup_base(base: str) -> None:
    for ctl in V1_CONTROLLERS + ("devices",):  # devices: a GPU job's device rules
        root = Path("/sys/fs/cgroup") / ctl
        d = root / base
        if not d.is_dir():
            continue
        for child in sorted((p for p in d.iterdir() if p.is_dir()), reverse=True):
            for pid in (child / "cgroup.procs").read_text().split():
                try:
                    (root / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            child.rmdir()
        d.rmdir()


@pytest.mark.skipif(bool(_v1_unusable()), reason=_v1_unusable() or "cgroup v1 usable")
def test_top_cpu_percent_with_cgroups(mlos, tmp_path):
    base = f"mlos-test-{os.getpid()}-topcpu"
    d = Mlosd(short_dir(tmp_path), cgroups="v1", cgroup_base=base)
    demo = None
    try:
        demo = start_demo(d)
        wait_for_job(mlos, d, demo)
        r = mlos.run("top", "--batch", "--iterations", "2", "--interval", "0.5", "--socket", str(d.socket))
        assert r.returncode == 0, mlos.describe(r)
        rows = [cols for cols in top_rows(r.stdout) if cols[2] == str(demo.pid)]
        assert len(rows) == 2, r.stdout
        # CPU% is the column before POLICIES.
        assert rows[0][-2] == "-"  # no rate before a second sample
        assert 5.0 < float(rows[1][-2]) < 150.0, r.stdout  # one busy worker thread
        j = mlos.json("status", "--json", "--socket", str(d.socket))
        job = next(x for x in j["jobs"] if x["pid"] == demo.pid)
        assert job["cpu_seconds"] > 0
    finally:
        if demo is not None:
            kill_and_reap(demo)
        d.stop()
        _remove_cgroup_base(base)
