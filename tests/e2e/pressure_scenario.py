# SPDX-License-Identifier: Apache-2.0
"""The memory-pressure scenario shared by tests/e2e/test_memory_pressure.py
and bench/memory_pressure_report.py.

A v1 memory cgroup with a hard limit holds a training-like loop
(mlos_pressure_trainer: a dataset cache plus a working buffer) and, started
a moment later, a steady allocator (mlos_memory_hog) that pushes the cgroup
over its limit unless the trainer gives memory back. The kernel's OOM
killer then picks the largest process: the trainer.
"""
import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from daemon_helpers import CGROUP_ROOT, cgroup_of

V1_MEMORY = Path("/sys/fs/cgroup/memory")
MIB = 1 << 20

LIMIT_MB = 320
CACHE_MB = 160
WORK_MB = 16
HOG_STEP_MB, HOG_INTERVAL_MS, HOG_TARGET_MB, HOG_HOLD_MS = 4, 20, 180, 3000
TRAIN_SECONDS = 8
# The default thresholds (docs/memory-pressure.md): MODERATE at 20 %
# headroom, CRITICAL at 8 %.
MODERATE_AT = int(LIMIT_MB * MIB * 0.80)
CRITICAL_AT = int(LIMIT_MB * MIB * 0.92)


def v1_memory_unavailable_reason():
    if os.geteuid() != 0:
        return "needs root to create a memory cgroup"
    if not (V1_MEMORY / "cgroup.event_control").exists():
        return "no cgroup v1 memory controller at /sys/fs/cgroup/memory (on v2 the daemon's scenario runs, in the VM test bed)"
    return None


@dataclass
class Outcome:
    trainer_rc: int
    trainer_exit_ns: int
    oom_kills: int
    trainer_events: list = field(default_factory=list)
    hog_events: list = field(default_factory=list)

    def of(self, events, kind):
        return [e for e in events if e.get("event") == kind]

    @property
    def callbacks(self):
        return self.of(self.trainer_events, "callback")

    def crossing_ns(self, bytes_):
        for e in self.of(self.hog_events, "cross"):
            if e["bytes"] == bytes_:
                return e["t_ns"]
        return None


def _parse(text):
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def _oom_kills(cg: Path) -> int:
    """OOM kills in cgroup `cg` (v1 memory.oom_control, v2 memory.events)."""
    name = "memory.oom_control" if (cg / "memory.oom_control").exists() else "memory.events"
    for line in (cg / name).read_text().splitlines():
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return 0


def _memory_cgroup_of(pid: int) -> Path:
    """`pid`'s memory cgroup directory: in the v1 memory hierarchy, else in
    the unified one (the VM test bed)."""
    path = cgroup_of(pid, "memory").lstrip("/")
    return V1_MEMORY / path if V1_MEMORY.is_dir() and (V1_MEMORY / "cgroup.procs").exists() else CGROUP_ROOT / path


def run(build_dir: Path, mode: str, runtime_dir: Path, daemon=None) -> Outcome:
    """Runs the scenario once with the trainer in `mode` (plain, observe,
    shed) and returns what happened.

    Embedded (daemon None): the test makes the limited cgroup and puts both
    processes in it; it is removed afterwards. Under mlosd (a started
    daemon_helpers.Daemon with real cgroups, v1 or v2): the trainer asks for
    LIMIT_MB as memory_bytes, mlosd makes the job's cgroup with that limit,
    and the hog joins the trainer's cgroup."""
    own_cg = None if daemon else V1_MEMORY / f"mlos-test-pressure-{uuid.uuid4().hex[:8]}"
    if own_cg:
        own_cg.mkdir()
    try:
        if own_cg:
            (own_cg / "memory.limit_in_bytes").write_text(str(LIMIT_MB * MIB))
            env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
            env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(runtime_dir))
        else:
            env = daemon.client_env()

        def join(cg):
            return lambda: (cg / "cgroup.procs").write_text(str(os.getpid()))

        trainer = subprocess.Popen(
            [str(build_dir / "bin" / "mlos_pressure_trainer"), mode, str(CACHE_MB), str(WORK_MB), str(TRAIN_SECONDS),
             str(0 if own_cg else LIMIT_MB)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            preexec_fn=join(own_cg) if own_cg else None)
        # The hog starts once the trainer holds its cache.
        ready = trainer.stdout.readline()
        assert '"ready"' in ready, f"trainer did not start: {ready!r} {trainer.stdout.read()}"
        cg = own_cg or _memory_cgroup_of(trainer.pid)
        assert cg not in (V1_MEMORY, CGROUP_ROOT), "mlosd did not put the trainer in a cgroup of its own"
        hog = subprocess.Popen(
            [str(build_dir / "bin" / "mlos_memory_hog"), str(HOG_STEP_MB), str(HOG_INTERVAL_MS), str(HOG_TARGET_MB),
             str(HOG_HOLD_MS), str(cg), str(MODERATE_AT), str(CRITICAL_AT)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=join(cg))
        rest = trainer.stdout.read()
        rc = trainer.wait(timeout=60)
        exit_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, as the programs print
        try:
            kills = _oom_kills(cg)
        except OSError:  # mlosd removed the dead owner's cgroup already
            kills = -1
        hog_out, _ = hog.communicate(timeout=60)
        return Outcome(rc, exit_ns, kills, _parse(ready + rest), _parse(hog_out))
    finally:
        for _ in range(50 if own_cg else 0):
            try:
                own_cg.rmdir()
                break
            except OSError:
                time.sleep(0.1)
