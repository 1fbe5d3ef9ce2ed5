# SPDX-License-Identifier: Apache-2.0
"""Starting mlosd for a test, and talking its protocol from Python.

Each test's daemon gets a private socket and state directory under tmp_path
and, when it uses the real cgroup hierarchy (v1 on the development
machines, v2 in the VM test bed, tests/vm), a cgroup base of its own
(removed afterwards), so tests never see each other's jobs."""
import errno
import json
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from conftest import build_dir

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CPUSET = CGROUP_ROOT / "cpuset"
V1_CONTROLLERS = ("cpuset", "cpu", "memory", "cpuacct")
# Where mlosd may make cgroups under its base on v1: the controllers it
# needs, and devices (a GPU job's device rules), so a test removes its base
# from each.
V1_HIERARCHIES = V1_CONTROLLERS + ("devices",)


def real_hierarchy() -> str:
    """'v2' where the unified hierarchy has cpuset, cpu and memory (what
    mlosd's driver picks first), else 'v1'."""
    try:
        have = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
    except OSError:
        return "v1"
    return "v2" if {"cpuset", "cpu", "memory"} <= set(have) else "v1"


def encode(kind: int, payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"MLOS" + struct.pack("<HHII", 1, kind, len(body), 0) + body


def read_frame(sock) -> dict:
    header = b""
    while len(header) < 16:
        chunk = sock.recv(16 - len(header))
        if not chunk:
            raise ConnectionError("closed before a reply header")
        header += chunk
    assert header[:4] == b"MLOS"
    (length,) = struct.unpack("<I", header[8:12])
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            raise ConnectionError("closed inside a reply")
        body += chunk
    return json.loads(body)


class Client:
    """One connection; call() sends a request and returns the reply."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A bound, not a measurement: a first request starts the default
        # policy hosts (up to start_deadline_ms each), which took over 10 s
        # once in a TCG guest.
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.next_id = 1

    def call(self, op, **args):
        args.update(op=op, id=self.next_id)
        self.next_id += 1
        self.sock.sendall(encode(1, args))
        return read_frame(self.sock)

    def close(self):
        self.sock.close()


class Daemon:
    def __init__(self, tmp_path: Path, cgroups="none", extra_args=(), confine="off", policy_dir=None, start_in=None):
        """cgroups: none, v1, v2, or real (whichever this machine has);
        start_in: a v2 cgroup directory mlosd starts in (as a service
        manager would put it there), instead of the test's own."""
        self.start_in = start_in
        if cgroups == "real":
            cgroups = real_hierarchy()
        self.confine = confine
        self.policy_dir = policy_dir or build_dir() / "policies"
        self.dir = tmp_path
        self.socket = tmp_path / "mlosd.sock"
        self.state_dir = tmp_path / "state"
        self.base = f"mlos-test-{os.getpid()}-{tmp_path.name}"[:60] if cgroups != "none" else None
        self.cgroups = cgroups
        self.extra_args = list(extra_args)
        self.proc = None
        self.log = tmp_path / "mlosd.log"

    @property
    def binary(self):
        return str(build_dir() / "bin" / "mlosd")

    def argv(self):
        a = [self.binary, "--socket", str(self.socket), "--state-dir", str(self.state_dir),
             "--cgroups", self.cgroups, "--metrics-listen", "127.0.0.1:0", "--sample-interval-ms", "50",
             # The embedded ledger of this test's clients (client_env's
             # MLOS_RUNTIME_DIR), never the node's /run/mlos.
             "--ledger-dir", str(self.dir),
             # The policies and their host from this build (an installed
             # mlosd finds them under its prefix).
             # (absolute: mlosd refuses relative paths there, and
             # MLOS_BUILD_DIR may be relative, as in the sanitizer run).
             "--policy-dir", str(Path(self.policy_dir).resolve()),
             "--policy-host", str((build_dir() / "bin" / "mlos-policyhost").resolve())]
        # Node-wide confinement moves every unmanaged process of the machine
        # (other tests' included): off unless a test asks (confine=None
        # leaves it to the test's config file).
        if self.confine is not None:
            a += ["--confine", self.confine]
        if self.base:
            a += ["--cgroup-base", self.base]
        return a + self.extra_args

    def start(self, timeout=60):
        """Starts mlosd and waits until it says ready: a bound, not a
        measurement (a TCG guest on a loaded host took over 10 s)."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        join = (lambda: (Path(self.start_in) / "cgroup.procs").write_text(str(os.getpid()))) if self.start_in else None
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=join,
                                     stderr=open(self.log, "a"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"mlosd exited {self.proc.returncode}: {self.log.read_text()}")
            if "ready on" in self.log.read_text()[offset:]:
                return self
            time.sleep(0.02)
        raise AssertionError(f"mlosd not ready: {self.log.read_text()}")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)

    def client(self):
        return Client(self.socket)

    def status(self):
        c = self.client()
        try:
            r = c.call("status")
            assert r["ok"], r
            return r
        finally:
            c.close()

    def client_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
        env.update(MLOS_MODE="daemon", MLOS_DAEMON_SOCKET=str(self.socket), MLOS_RUNTIME_DIR=str(self.dir),
                   MLOS_TUNE_DIR=str(self.dir / "tune"))
        return env

    def cgroup_dir(self, controller, job=None):
        """The job's cgroup (or the base) in `controller`'s hierarchy; on v2
        every controller shares one directory."""
        d = CGROUP_ROOT / self.base if self.cgroups == "v2" else CGROUP_ROOT / controller / self.base
        return d / job if job else d

    def cpu_weight(self, job) -> int:
        """The job cgroup's CPU weight on the v2 scale (v1: cpu.shares =
        weight * 1024 / 100)."""
        if self.cgroups == "v2":
            return int((self.cgroup_dir("cpu", job) / "cpu.weight").read_text())
        return int((self.cgroup_dir("cpu", job) / "cpu.shares").read_text()) * 100 // 1024

    def remove_cgroups(self):
        """Gives back what confinement narrowed (a killed mlosd leaves it),
        moves leftovers to the root and removes this test's cgroup base."""
        if not self.base:
            return
        self.restore_narrowed()
        roots = [CGROUP_ROOT] if self.cgroups == "v2" else [CGROUP_ROOT / ctl for ctl in V1_HIERARCHIES]
        for root in roots:
            base = root / self.base
            if not base.is_dir():
                continue
            # Deepest first: v2 job cgroups may have children of their own.
            for child in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                empty_and_remove(child, root)
            empty_and_remove(base, root)


    def restore_narrowed(self):
        """Other cgroups that node confinement narrowed, back to the CPUs
        they had (from mlosd's confinement.json), shallowest first."""
        state = self.state_dir / "confinement.json"
        try:
            narrowed = json.loads(state.read_text())["payload"]["narrowed"]
        except (OSError, ValueError, KeyError):
            return
        for cgroup in sorted(narrowed, key=lambda c: c.count("/")):
            try:
                (Path("/sys/fs/cgroup/cpuset") / cgroup / "cpuset.cpus").write_text(narrowed[cgroup])
            except OSError:
                pass


def cgroup_of(pid, controller="cpuset") -> str:
    """The path of `pid`'s cgroup in `controller`'s v1 hierarchy, or in
    the unified one (the "0::" line) when no v1 hierarchy has it."""
    unified = None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hid, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
        if hid == "0" and controllers == "":
            unified = path
    if unified is None:
        raise AssertionError(f"pid {pid} has no {controller} cgroup")
    return unified


def real_cgroups_usable() -> str:
    """'' if this machine's cgroup hierarchy (v2 with cpuset, cpu and
    memory, else v1's) can hold test daemons' jobs, else why not."""
    if real_hierarchy() == "v2":
        return "" if os.geteuid() == 0 else "needs root to create cgroups"
    return v1_cgroups_usable()


def v1_cgroups_usable() -> str:
    """'' if the v1 cpuset/cpu/memory hierarchies are mounted and writable, else why not."""
    for ctl in ("cpuset", "cpu", "memory"):
        if not (Path("/sys/fs/cgroup") / ctl / "cgroup.procs").exists():
            return f"cgroup v1 {ctl} controller not mounted at /sys/fs/cgroup/{ctl}"
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    return ""


def start_job_client(daemon: Daemon, cpus=1, exclusive=True, label="job"):
    """Starts tests/daemon/daemon_job_client and waits for its GRANTED line."""
    binary = str(build_dir() / "bin" / "mlos_daemon_job_client")
    p = subprocess.Popen([binary, str(cpus), "1" if exclusive else "0", label], env=daemon.client_env(),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("GRANTED"), f"client: {line!r} {p.stderr.read() if p.poll() is not None else ''}"
    fields = dict(f.split("=", 1) for f in line.split()[1:])
    p.claim = int(fields["claim"])
    p.cpus = fields["cpus"]
    return p


def allowed_cpus(pid) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[1]
    raise AssertionError("no Cpus_allowed_list")


def wait_for(predicate, timeout=5.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def empty_and_remove(cgroup: Path, root: Path, tries: int = 50):
    """Moves the processes of `cgroup` to `root` and removes it. Retried:
    a process in it may fork meanwhile (node confinement puts every process
    of the machine in <base>/shared), and its child lands there too."""
    for attempt in range(tries):
        for pid in (cgroup / "cgroup.procs").read_text().split():
            try:
                (root / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # exited meanwhile
        try:
            cgroup.rmdir()
            return
        except OSError as e:
            if e.errno != errno.EBUSY or attempt == tries - 1:
                raise
            time.sleep(0.02)


class Started:
    """What a test started (Daemons, Popen processes), stopped whatever its
    outcome: call it on each thing, and stop_all() at teardown."""

    def __init__(self):
        self.things = []

    def __call__(self, thing):
        self.things.append(thing)
        return thing

    def stop_all(self):
        while self.things:
            thing = self.things.pop()
            try:
                if isinstance(thing, Daemon):
                    if thing.proc and thing.proc.poll() is None:
                        # SIGTERM first: a stopping mlosd gives the node
                        # back itself (a killed one leaves every process of
                        # the machine in <base>/shared for remove_cgroups).
                        try:
                            thing.stop()
                        except subprocess.TimeoutExpired:
                            thing.proc.kill()
                            thing.proc.wait(10)
                    thing.remove_cgroups()
                elif thing.poll() is None:
                    thing.kill()
                    thing.wait(10)
            except Exception:  # noqa: BLE001 - cleanup must reach every item
                pass
