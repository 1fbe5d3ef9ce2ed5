# SPDX-License-Identifier: Apache-2.0
"""mlosd as a systemd service, without systemd: readiness, status, reloads,
watchdog keep-alives and stopping through a fake NOTIFY_SOCKET (a datagram
socket the test binds, as systemd's is), journal messages with priorities
and fields through a fake journal socket (journald's native protocol, at
the path libsystemd sends to, in a mount namespace of mlosd's own), and
SIGHUP reloads that apply what they may and refuse a bad file whole. The
same with the real systemd and journald: tests/vm/guest/test_systemd_unit.py."""
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import build_dir
from daemon_helpers import Daemon, Started, wait_for


@pytest.fixture
def started():
    s = Started()
    yield s
    s.stop_all()


class DatagramSink:
    """A bound AF_UNIX datagram socket that keeps what it receives."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setblocking(False)
        self.got = []

    def drain(self):
        while True:
            try:
                self.got.append(self.sock.recv(1 << 20))
            except BlockingIOError:
                return self.got

    def wait(self, predicate, timeout):
        """The first message (decoded by the caller's predicate) that
        matches, within `timeout` seconds (a bound, not a measurement)."""
        return wait_for(lambda: next((m for m in self.drain() if predicate(m)), None), timeout=timeout, interval=0.05)


def notify_fields(message: bytes) -> dict:
    return dict(line.split("=", 1) for line in message.decode().splitlines() if "=" in line)


def journal_fields(message: bytes) -> dict:
    """journald's native protocol: KEY=value lines, or KEY, a 64-bit
    little-endian length and the value for values with newlines."""
    fields, i = {}, 0
    while i < len(message):
        nl = message.index(b"\n", i)
        line = message[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v.decode()
            i = nl + 1
        else:
            (n,) = struct.unpack("<Q", message[nl + 1:nl + 9])
            fields[line.decode()] = message[nl + 9:nl + 9 + n].decode()
            i = nl + 9 + n + 1
    return fields


def start(daemon, env, argv=None):
    daemon.proc = subprocess.Popen(argv or daemon.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=open(daemon.log, "a"), env=env)
    return daemon


def test_ready_status_watchdog_and_stopping_are_notified(tmp_path, started):
    sink = DatagramSink(tmp_path / "notify")
    d = started(Daemon(tmp_path))
    env = dict(os.environ, NOTIFY_SOCKET=sink.path, WATCHDOG_USEC="1000000")
    start(d, env)
    ready = sink.wait(lambda m: b"READY=1" in m, timeout=60)
    assert ready, (sink.got, d.log.read_text())
    assert f"ready on {d.socket}" in notify_fields(ready)["STATUS"], ready
    # Keep-alives every half period (0.5 s): two within a generous bound.
    assert wait_for(lambda: sum(m == b"WATCHDOG=1" for m in sink.drain()) >= 2, timeout=30), sink.got
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(30) == 0
    stopping = [notify_fields(m) for m in sink.drain() if b"STOPPING=1" in m]
    assert stopping and "stopping" in stopping[0]["STATUS"], sink.got


def test_without_notify_socket_nothing_is_sent_and_it_still_starts(tmp_path, started):
    d = started(Daemon(tmp_path)).start()
    env = (d.proc.pid, open(f"/proc/{d.proc.pid}/environ", "rb").read())
    assert b"NOTIFY_SOCKET" not in env[1]
    assert d.status()["ok"]


def write_config(path, text):
    # Written whole and renamed, as an editor or config manager would.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.rename(path)


def test_sighup_applies_what_it_may_names_the_rest_and_refuses_a_bad_file(tmp_path, started):
    # What a reload changes is seen in the next grant: the policies every
    # job gets (policies.defaults, reloadable; quotas would be too, but
    # root, which runs this test, is exempt from them).
    sink = DatagramSink(tmp_path / "notify")
    config = tmp_path / "mlosd.json"
    write_config(config, '// comments are allowed\n{"policies": {"defaults": ["thread-governor"]}}\n')
    d = started(Daemon(tmp_path, extra_args=["--config", str(config)]))
    start(d, dict(os.environ, NOTIFY_SOCKET=sink.path))
    assert sink.wait(lambda m: b"READY=1" in m, timeout=60), d.log.read_text()
    c = d.client()
    try:
        first = c.call("request", num_cpus=1, label="first")
        # The sanitizer run (scripts/sanitize_daemon.sh) builds no policy
        # host or policies: a default that cannot be found is not attached,
        # and the reload is then seen in its status line alone.
        has_policies = (build_dir() / "bin" / "mlos-policyhost").exists() and (build_dir() / "policies").is_dir()
        assert first["ok"] and first["policies"] == (["thread-governor"] if has_policies else []), first
        # Reloadable (policies.defaults) and restart-only (metrics_interval_ms) keys change.
        write_config(config, '{"policies": {"defaults": []}, /* needs a restart: */ "metrics_interval_ms": 2000}\n')
        sink.drain()
        sink.got.clear()
        d.proc.send_signal(signal.SIGHUP)
        reloaded = sink.wait(lambda m: b"READY=1" in m, timeout=30)
        assert reloaded, (sink.got, d.log.read_text())
        assert any(b"RELOADING=1" in m for m in sink.got), sink.got
        status = notify_fields(reloaded)["STATUS"]
        assert "changed: policies.defaults" in status, status
        assert "kept until a restart: metrics_interval_ms" in status, status
        second = c.call("request", num_cpus=1, label="second")
        assert second["ok"] and second["policies"] == [], second
        # A file with a syntax error: refused whole, with where; nothing changes.
        write_config(config, '{\n  "policies": {"defaults": ["thread-governor"]},\n  "oops"\n}\n')
        sink.got.clear()
        d.proc.send_signal(signal.SIGHUP)
        again = sink.wait(lambda m: b"READY=1" in m, timeout=30)
        assert again and "reload refused" in notify_fields(again)["STATUS"], sink.got
        assert f"{config}:4:1:" in notify_fields(again)["STATUS"], again
        assert wait_for(lambda: "reload refused" in d.log.read_text(), timeout=10), d.log.read_text()
        third = c.call("request", num_cpus=1, label="third")
        assert third["ok"] and third["policies"] == [], third
    finally:
        c.close()
    assert d.proc.poll() is None, "a reload never stops mlosd"


def journal_namespace_usable():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare(1) to give mlosd a mount namespace with a fake journal socket"
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    return "" if r.returncode == 0 else f"unshare --mount failed: {r.stderr.decode().strip()}"


def test_events_reach_the_journal_with_priorities_and_fields(tmp_path, started):
    why = journal_namespace_usable()
    if why:
        pytest.skip(why)
    journal_dir = tmp_path / "journal"
    journal_dir.mkdir()
    sink = DatagramSink(journal_dir / "socket")
    d = started(Daemon(tmp_path, extra_args=["--log", "journal"]))
    # libsystemd sends to /run/systemd/journal/socket: in mlosd's own mount
    # namespace, that is the test's socket (a tmpfs over /run hides the
    # host's; mlosd's paths here are all under tmp_path).
    script = ('mount -t tmpfs mlos-test /run && mkdir -p /run/systemd/journal && '
              f'mount --bind {journal_dir} /run/systemd/journal && exec "$@"')
    start(d, dict(os.environ), ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"] + d.argv())
    ready = sink.wait(lambda m: journal_fields(m).get("MLOS_EVENT") == "ready", timeout=60)
    assert ready, (sink.got, d.log.read_text())
    f = journal_fields(ready)
    assert f["PRIORITY"] == "6" and f["SYSLOG_IDENTIFIER"] == "mlosd" and "ready on" in f["MESSAGE"], f
    c = d.client()
    try:
        r = c.call("request", num_cpus=1, label="journal-test")
        assert r["ok"], r
        job = str(r["job"])
        granted = sink.wait(lambda m: journal_fields(m).get("MLOS_EVENT") == "granted", timeout=30)
        g = journal_fields(granted)
        assert g["JOB_ID"] == job and g["UID"] == str(os.getuid()) and g["LABEL"] == "journal-test", g
        assert g["PRIORITY"] == "6" and g["CPUS"] and g["OWNER_PID"] == str(os.getpid()), g
        assert c.call("release", job=int(job))["ok"]
        ended = sink.wait(lambda m: journal_fields(m).get("MLOS_EVENT") == "ended", timeout=30)
        e = journal_fields(ended)
        assert e["JOB_ID"] == job and e["REASON"] == "released", e
    finally:
        c.close()
    # Nothing of it on stderr: the journal took it.
    assert "granted job" not in d.log.read_text()


def test_a_journal_that_refuses_falls_back_to_stderr(tmp_path, started):
    if os.path.exists("/run/systemd/journal/socket"):
        pytest.skip("this machine runs journald: the fallback is tested where it does not")
    d = started(Daemon(tmp_path, extra_args=["--log", "journal"])).start()
    text = d.log.read_text()
    assert "no journal at /run/systemd/journal/socket" in text and "logging to stderr" in text, text
    assert "mlosd: info: ready on" in text, text
