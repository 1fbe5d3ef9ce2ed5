# SPDX-License-Identifier: Apache-2.0
"""mlosd against a hostile or careless local user (docs/security.md): the
daemon out of file descriptors, connections handed to other processes, a
pid reused by a root process, a setuid program behind a user's connection,
per-uid quotas, idle and half-open connections, a daemon that refuses in
auto mode, and registries no mlosd should trust. Real uids (nobody), real
fd limits (prlimit on the daemon), a real pid reuse (ns_last_pid)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

from cli_helpers import error_codes, parse_cpu_list, runnable_by_nobody
from daemon_helpers import (Client, Daemon, Started, allowed_cpus, encode, read_frame, start_job_client,
                            v1_cgroups_usable, wait_for)

ERR = error_codes()
NOBODY = 65534
HERE = Path(__file__).parent


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root to act as other users and lower the daemon's limits")


@pytest.fixture
def shared_dir():
    """A directory user nobody can reach (pytest's tmp_path is root-only)."""
    d = Path(tempfile.mkdtemp(prefix="mlosd-harden-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


started = Started()  # daemons and processes to stop whatever a test's outcome


@pytest.fixture(autouse=True)
def _stop_what_was_started():
    yield
    started.stop_all()


@pytest.fixture
def v1_daemon(tmp_path, shared_dir):
    """A root-run mlosd on the real v1 hierarchy, reachable by nobody."""
    needs_root()
    if v1_cgroups_usable():
        pytest.skip(v1_cgroups_usable())
    return start_daemon(tmp_path, shared_dir, cgroups="v1")


def start_daemon(tmp_path, shared_dir, cgroups="none", config=None, extra=()):
    args = list(extra)
    if config is not None:
        path = tmp_path / "mlosd.json"
        path.write_text(json.dumps(config))
        args += ["--config", str(path)]
    d = Daemon(tmp_path, cgroups=cgroups, extra_args=args)
    d.socket = shared_dir / "mlosd.sock"
    return started(d).start()


def as_nobody(body: str, timeout=60, **popen):
    """Runs Python `body` as user nobody with daemon_helpers importable;
    returns the JSON it prints last."""
    script = (f"import json, os, socket, sys, time\nsys.path.insert(0, {str(HERE)!r})\n"
              "from daemon_helpers import Client, encode, read_frame\n"
              f"os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n" + body)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, **popen)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpu_seconds(pid) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_cgroup(pid) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return ""


def spawn_with_pid(pid, argv):
    """Starts argv as a process with exactly `pid` (ns_last_pid), or None."""
    for _ in range(20):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        p = subprocess.Popen(argv)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


# ---- descriptors ----

def test_out_of_descriptors_the_daemon_neither_drops_live_jobs_nor_spins(tmp_path, shared_dir):
    needs_root()
    d = start_daemon(tmp_path, shared_dir)
    job = started(start_job_client(d, cpus=1, exclusive=True, label="root-exclusive"))
    held = []
    try:
        # Leave the daemon a few descriptors, then take them with connections
        # (each costs it two: the socket and the peer's pidfd).
        subprocess.run(["prlimit", f"--pid={d.proc.pid}", "--nofile=40:40"], check=True)
        refused = 0
        for _ in range(60):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(str(d.socket))
            held.append(s)
        time.sleep(0.5)
        for s in held:
            s.setblocking(False)
            try:
                s.recv(1 << 16)  # an error frame, or b"" (closed): refused either way
                refused += 1
            except BlockingIOError:
                pass  # accepted and waiting for a request
        assert refused > 0, "the daemon never ran out of descriptors; the test proves nothing"
        # More connections keep arriving while it is out: the loop must not
        # spin on the listener, and the liveness sweep (each tick here),
        # unable to open /proc, must keep the job.
        before = cpu_seconds(d.proc.pid)
        for _ in range(40):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(str(d.socket))
            held.append(s)
            time.sleep(0.1)
        used = cpu_seconds(d.proc.pid) - before
        assert used < 1.0, f"mlosd used {used:.2f} CPU-seconds in 4 s out of descriptors: it spins"
    finally:
        for s in held:
            s.close()
    # Descriptors freed: it answers again, and the job was never dropped.
    status = wait_for(lambda: _status_or_none(d), timeout=10)
    assert status is not None, d.log.read_text()
    assert [j["label"] for j in status["jobs"]] == ["root-exclusive"], d.log.read_text()
    assert job.poll() is None
    assert "pruned" not in d.log.read_text()
    assert "out of file descriptors" in d.log.read_text()
    job.terminate()
    assert job.wait(10) == 0
    d.stop()


def _status_or_none(d):
    try:
        return d.status()
    except (OSError, AssertionError, ConnectionError):
        return None


def test_mlosd_raises_its_soft_descriptor_limit_to_the_hard_one(tmp_path, shared_dir):
    d = started(Daemon(tmp_path, cgroups="none"))
    d.socket = shared_dir / "mlosd.sock"
    argv = ["prlimit", "--nofile=1024:4096", "--"] + d.argv()
    d.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(d.log, "a"))
    try:
        assert wait_for(lambda: "ready on" in d.log.read_text(), timeout=10), d.log.read_text()
        limits = Path(f"/proc/{d.proc.pid}/limits").read_text()
        line = next(l for l in limits.splitlines() if l.startswith("Max open files"))
        assert line.split()[3:5] == ["4096", "4096"], line
    finally:
        d.stop()


# ---- who the peer is ----

def test_a_connection_outliving_its_process_cannot_move_the_root_process_that_got_its_pid(v1_daemon):
    d = v1_daemon
    # User nobody connects, hands the connection to a child and exits; the
    # child asks for a job (2 MiB memory limit) once root holds the pid.
    body = f"""
c = Client({str(d.socket)!r})
if os.fork() == 0:
    sys.stdin.readline()
    print(json.dumps(c.call("request", num_cpus=1, memory_bytes=2 << 20, label="handed")), flush=True)
    os._exit(0)
print(json.dumps({{"pid": os.getpid()}}), flush=True)
"""
    script = (f"import json, os, sys\nsys.path.insert(0, {str(HERE)!r})\nfrom daemon_helpers import Client\n"
              f"os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n" + body)
    p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    root_proc = None
    try:
        first = json.loads(p.stdout.readline())
        assert p.wait(10) == 0
        root_proc = spawn_with_pid(first["pid"], ["sleep", "60"])
        if root_proc is None:
            pytest.skip(f"could not get pid {first['pid']} back for a root process")
        cgroup_before = memory_cgroup(root_proc.pid)
        p.stdin.write("go\n")
        p.stdin.flush()
        reply = json.loads(p.stdout.readline())
        assert reply["ok"] is False and reply["error"]["code"] == ERR["MLOS_ERR_NO_SUCH_THREAD"], reply
        assert memory_cgroup(root_proc.pid) == cgroup_before
        assert d.status()["jobs"] == []
    finally:
        if root_proc:
            root_proc.kill()
            root_proc.wait()
        p.kill()
        d.stop()
        d.remove_cgroups()


def test_a_setuid_program_behind_a_users_connection_is_not_moved_or_granted(tmp_path, shared_dir):
    needs_root()
    d = start_daemon(tmp_path, shared_dir)
    setuid_python = shared_dir / "python-setuid"
    shutil.copy2(os.path.realpath(sys.executable), setuid_python)
    os.chown(setuid_python, 0, 0)
    os.chmod(setuid_python, 0o4755)
    inner = (f"import json, os, socket, sys\nsys.path.insert(0, {str(HERE)!r})\n"
             "from daemon_helpers import encode, read_frame\n"
             "s = socket.socket(fileno=int(sys.argv[1]))\n"
             "s.sendall(encode(1, {'op': 'request', 'id': 7, 'num_cpus': 1, 'exclusive': True}))\n"
             "print(json.dumps({'euid': os.geteuid(), 'uid': os.getuid(), 'reply': read_frame(s)}))\n")
    body = f"""
s = socket.socket(socket.AF_UNIX)
s.connect({str(d.socket)!r})
os.set_inheritable(s.fileno(), True)
os.execv({str(setuid_python)!r}, [{str(setuid_python)!r}, "-c", {inner!r}, str(s.fileno())])
"""
    try:
        out = as_nobody(body)
        if out["euid"] != 0:
            pytest.skip("setuid is not honoured here (nosuid mount?)")
        assert out["uid"] == NOBODY
        reply = out["reply"]
        assert reply["ok"] is False and reply["error"]["code"] == ERR["MLOS_ERR_PERMISSION"], reply
        assert d.status()["jobs"] == []
    finally:
        setuid_python.unlink()
        d.stop()


# ---- several jobs around one process ----

def test_a_second_job_of_a_process_and_a_job_nested_in_anothers_can_be_bound_to(v1_daemon):
    d = v1_daemon
    binary = str(Path(d.binary).parent / "mlos_two_jobs_client")
    for mode in ("same", "nested"):
        p = started(subprocess.Popen([binary, mode], env=d.client_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        line = p.stdout.readline()
        assert line.startswith("BOUND"), (mode, line, p.stderr.read() if p.poll() is not None else "")
        bound = dict(f.split("=", 1) for f in line.split()[1:])
        # The kernel runs the bound thread where the job's CPUs are: the
        # process's cgroup lets it (it used to hold only the first job's).
        assert parse_cpu_list(allowed_cpus(int(bound["pid"]))) == parse_cpu_list(bound["cpus"])
        jobs = {j["label"]: j for j in d.status()["jobs"]}
        if mode == "same":
            first, second = jobs["first"], jobs["second"]
            assert second["host"] == first["job"] and second["cgroup"] == first["cgroup"], jobs
            cpuset = (d.cgroup_dir("cpuset", first["cgroup"]) / "cpuset.cpus").read_text().strip()
            assert parse_cpu_list(cpuset) == parse_cpu_list(first["cpus"]) | parse_cpu_list(second["cpus"])
        else:
            outer, inner = jobs["outer"], jobs["inner"]
            assert inner["nested_in"] == outer["job"] and inner["cgroup"] == outer["cgroup"], jobs
            assert parse_cpu_list(inner["cpus"]) < parse_cpu_list(outer["cpus"])
        p.stdin.close()
        assert p.wait(10) == 0
        assert wait_for(lambda: d.status()["jobs"] == [], timeout=10)


# ---- quotas ----

def test_per_uid_quotas_refuse_with_quota_and_status_says_who_holds_what(tmp_path, shared_dir):
    needs_root()
    d = start_daemon(tmp_path, shared_dir,
                     config={"quotas": {"exclusive_cpus_per_uid": 1, "connections_per_uid": 2, "jobs_per_uid": 2}})
    body = f"""
c = Client({str(d.socket)!r})
out = {{"first": c.call("request", num_cpus=1, exclusive=True)}}
out["second"] = c.call("request", num_cpus=1, exclusive=True)
out["shared"] = c.call("request", num_cpus=1)
out["third_job"] = c.call("request", num_cpus=1)
extra = Client({str(d.socket)!r})
over = socket.socket(socket.AF_UNIX); over.settimeout(5); over.connect({str(d.socket)!r})
out["third_connection"] = read_frame(over)
out["status"] = c.call("status")
extra.close()  # room for the CLI's connection
import subprocess
out["cli"] = subprocess.run([{runnable_by_nobody(Path(d.binary).parent / "mlos", shared_dir)!r}, "status", "--socket", {str(d.socket)!r}],
                            capture_output=True, text=True, timeout=30).stdout
print(json.dumps(out))
"""
    try:
        out = as_nobody(body)
        assert out["first"]["ok"], out["first"]
        for key in ("second", "third_job", "third_connection"):
            assert out[key]["ok"] is False and out[key]["error"]["code"] == ERR["MLOS_ERR_QUOTA"], (key, out[key])
        assert "exclusive_cpus_per_uid" in out["second"]["error"]["message"]
        assert out["shared"]["ok"], out["shared"]
        users = {u["uid"]: u for u in out["status"]["users"]}
        assert users[NOBODY]["jobs"] == 2 and users[NOBODY]["exclusive_cpus"] == 1, users
        assert users[NOBODY]["connections"] == 2 and users[NOBODY]["quota"]["exclusive_cpus"] == 1, users
        # mlos status says who holds what, against which quota.
        assert f"uid {NOBODY}: 2 jobs/2, 1 exclusive CPUs/1" in out["cli"], out["cli"]
        # Root is exempt: the other CPU is still its to take exclusively.
        c = d.client()
        r = c.call("request", num_cpus=1, exclusive=True, label="root")
        assert r["ok"], r
        c.close()
    finally:
        d.stop()


# ---- connections ----

def test_idle_connections_are_closed_and_the_library_reconnects(tmp_path, shared_dir):
    d = start_daemon(tmp_path, shared_dir, config={"client_idle_timeout_ms": 300})
    raw = socket.socket(socket.AF_UNIX)
    raw.settimeout(10)
    raw.connect(str(d.socket))
    assert raw.recv(1) == b""  # closed by the daemon, not by the 10 s timeout
    raw.close()
    # A job whose connection idled out still releases through a new one.
    job = started(start_job_client(d, cpus=1, exclusive=False, label="idle"))
    time.sleep(1.0)
    job.terminate()
    assert job.wait(10) == 0, job.stdout.read()
    assert "RELEASED rc=0" in job.stdout.read()
    assert d.status()["jobs"] == []
    d.stop()


def test_auto_mode_falls_back_only_when_no_daemon_is_there(tmp_path, shared_dir):
    d = start_daemon(tmp_path, shared_dir, config={"max_clients": 2, "quotas": {"root_reserved_connections": 0}})
    binary = str(Path(d.binary).parent / "mlos_daemon_job_client")
    env = dict(d.client_env(), MLOS_MODE="auto")
    held = [d.client(), d.client()]
    try:
        # Up but full: an error the caller sees, not a grant outside mlosd.
        r = subprocess.run([binary, "1", "1", "auto-busy"], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "mlosd unavailable" in r.stdout and "too many clients" in r.stdout, r.stdout
    finally:
        for c in held:
            c.close()
    d.kill9()  # the socket file stays, nothing accepts on it: no daemon
    p = started(subprocess.Popen([binary, "1", "1", "auto-fallback"], env=env, stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    p.terminate()
    p.wait(10)
    assert line.startswith("GRANTED"), line


def test_metrics_answer_next_to_half_open_connections(tmp_path, shared_dir):
    d = start_daemon(tmp_path, shared_dir)
    port = d.status()["daemon"]["metrics_port"]
    stalled = []
    try:
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
            stalled.append(s)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
            assert b"mlos_" in r.read()
    finally:
        for s in stalled:
            s.close()
        d.stop()


# ---- registries no daemon should trust ----

def write_registry(state_dir: Path, payload, fmt="mlosd-registry"):
    state_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    doc = {"format": fmt, "schema_version": 1, "crc32": zlib.crc32(text.encode()), "payload": payload}
    (state_dir / "registry.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("case", ["format_is_a_number", "next_id_near_2_64"])
def test_untrustworthy_registries_are_refused_not_crashed_on(tmp_path, case):
    d = Daemon(tmp_path, cgroups="none")
    payload = {"schema_version": 1, "next_id": 1, "jobs": []}
    if case == "format_is_a_number":
        write_registry(d.state_dir, payload, fmt=12)
    else:
        write_registry(d.state_dir, dict(payload, next_id=2**64 - 2))
    for quarantine in (False, True):
        argv = d.argv() + (["--quarantine-state"] if quarantine else [])
        if quarantine:
            p = started(subprocess.Popen(argv, stderr=subprocess.PIPE, text=True))
            try:
                assert wait_for(lambda: d.socket.exists(), timeout=10)
                assert Client(d.socket).call("status")["jobs"] == []
            finally:
                p.terminate()
                p.wait(10)
        else:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            assert r.returncode == 1, (r.returncode, r.stderr)  # refused, not aborted (134)
            assert "refusing to start" in r.stderr and "registry" in r.stderr
