# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the CLI end-to-end tests: run mlos, probe what a child
sees in /proc, read the ledger."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
import pytest
from conftest import REPO_ROOT

SYNTHETIC = "synthetic:pack:2 numa:2 core:8 pu:2"  # 2 packages x 2 nodes x 8 cores x 2 PUs
EXIT_RUN_FAILED = 125
EXIT_CANNOT_EXEC = 126
EXIT_NOT_FOUND = 127
EXIT_USAGE = 2

def error_codes() -> dict:
    """MLOS_ERR_* values from the public header (one source of truth)."""
    text = (REPO_ROOT / "include" / "mlos" / "errors.h").read_text()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\b(MLOS_ERR_[A-Z_]+)\s*=\s*(-?\d+)", text)}


def runnable_by_nobody(binary, scratch: Path) -> str:
    """`binary` if user nobody may run it where it is, else a copy in
    `scratch` (a directory nobody can reach): a build tree in root's 0700
    home, as on a stock Debian, is closed to nobody. Only for a program
    that needs nothing beside itself (the mlos CLI)."""
    path = Path(binary).resolve()
    if all(os.stat(d).st_mode & 0o001 for d in path.parents) and os.stat(path).st_mode & 0o001:
        return str(path)
    copy = Path(scratch) / path.name
    shutil.copy2(path, copy)
    os.chmod(copy, 0o755)
    return str(copy)


def parse_cpu_list(text: str) -> set:
    cpus = set()
    text = text.strip()
    if not text:
        return cpus
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return cpus


def ledger_claims(mlos) -> list:
    """Claims in the raw ledger file, dead owners included ([] if no file)."""
    if not mlos.ledger.exists():
        return []
    return json.loads(mlos.ledger.read_text())["claims"]


def allowed_cpus() -> set:
    return set(os.sched_getaffinity(0))


def proc_status_field(text: str, field: str) -> str:
    m = re.search(rf"^{re.escape(field)}:\s*(.*)$", text, re.M)
    assert m, f"{field} not in /proc status:\n{text}"
    return m.group(1).strip()


def proc_pid_field(pid: int, field: str) -> str:
    return proc_status_field(Path(f"/proc/{pid}/status").read_text(), field)


def kill_and_reap(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def wait_for_exec(proc: subprocess.Popen, comm: str, timeout: float = 15.0) -> None:
    """Waits until `proc` (started as mlos) has exec()ed into `comm`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"{proc.args!r} exited early with {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}")
        try:
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == comm:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    pytest.fail(f"{proc.args!r} did not exec {comm} within {timeout}s")


# A child that reports what it sees, as JSON on stdout.
PROBE = r"""
import json, os, re
status = open("/proc/self/status").read()
def field(name):
    return re.search(r"^" + name + r":\s*(.*)$", status, re.M).group(1).strip()
with open("/proc/self/numa_maps") as f:
    first_map = f.readline().strip()
print(json.dumps({
    "cpus_allowed_list": field("Cpus_allowed_list"),
    "mems_allowed_list": field("Mems_allowed_list"),
    "numa_maps_first": first_map,
    "env": {k: v for k, v in os.environ.items() if k.startswith("MLOS_") or k.endswith("_THREADS")},
    "pid": os.getpid(),
}))
"""


def probe(mlos, *run_args, env=None, prefix=()):
    """`mlos run RUN_ARGS -- python PROBE`; returns (json, CompletedProcess)."""
    r = mlos.run("run", *run_args, "--", sys.executable, "-c", PROBE, env=env, prefix=prefix)
    assert r.returncode == 0, mlos.describe(r)
    return json.loads(r.stdout), r


def probe_plain(mlos, env=None, prefix=()):
    """The probe started the same way but without mlos."""
    r = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE],
        env=mlos.env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, mlos.describe(r)
    return json.loads(r.stdout)


def need_cpus(n: int) -> set:
    cpus = allowed_cpus()
    if len(cpus) < n:
        pytest.skip(f"needs at least {n} allowed CPUs, this process may use {len(cpus)}")
    return cpus


def dry_run(mlos, *args, env=None, expect_rc=0):
    e = {"MLOS_TOPOLOGY": SYNTHETIC}
    e.update(env or {})
    return mlos.json("run", "--dry-run", "--json", *args, "--", "true", env=e, expect_rc=expect_rc)


def run_json_error(r: subprocess.CompletedProcess) -> dict:
    """The JSON error object of a real `mlos run --json` (stdout belongs to
    CMD, so it is the last line of stderr)."""
    return json.loads(r.stderr.strip().splitlines()[-1])
