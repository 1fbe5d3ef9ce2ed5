# SPDX-License-Identifier: Apache-2.0
"""What a process's cgroups allow is the outer bound: CPUs of its cpuset and
memory left under its memory limit, checked with real cgroups (v1 here, or
v2 with the controller enabled) that the tests create and remove."""
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cli_helpers import *  # noqa: F401,F403


def cpuset_root():
    v1 = Path("/sys/fs/cgroup/cpuset")
    if (v1 / "cpuset.cpus").exists():
        return v1, "cpuset.cpus", "cpuset.mems"
    control = Path("/sys/fs/cgroup/cgroup.subtree_control")
    if control.exists() and "cpuset" in control.read_text().split():
        return control.parent, "cpuset.cpus", "cpuset.mems"
    return None


def remove_cgroup(cg: Path) -> None:
    for _ in range(50):  # the last process may take a moment to leave
        try:
            cg.rmdir()
            return
        except OSError:
            time.sleep(0.1)


@pytest.fixture
def one_cpu_cgroup():
    found = cpuset_root()
    if found is None or not os.access(found[0], os.W_OK):
        pytest.skip("no writable cpuset cgroup controller here")
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs 2 allowed CPUs")
    root, cpus_file, mems_file = found
    cg = root / f"mlos-test-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    try:
        (cg / cpus_file).write_text(str(allowed[-1]))
        (cg / mems_file).write_text((root / mems_file).read_text().strip() or "0")
        yield cg, allowed[-1]
    finally:
        remove_cgroup(cg)


def in_cgroup(cg, *argv):
    """argv, started from a shell that first moves itself into `cg`."""
    return ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *argv]


def test_cgroup_cpuset_bounds_topo_and_run(mlos, one_cpu_cgroup):
    cg, cpu = one_cpu_cgroup
    j = json.loads(subprocess.run(in_cgroup(cg, mlos.binary, "topo", "--json"), env=mlos.env(), capture_output=True,
                                  text=True, timeout=60, check=True).stdout)
    assert j["allowed_cpus"] == str(cpu)

    r = subprocess.run(in_cgroup(cg, mlos.binary, "run", "--cpus", "2", "--", "true"), env=mlos.env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "may use 1" in r.stderr

    r = subprocess.run(in_cgroup(cg, mlos.binary, "run", "--cpus", "1", "--", sys.executable, "-c", PROBE),
                       env=mlos.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, mlos.describe(r)
    assert json.loads(r.stdout)["cpus_allowed_list"] == str(cpu)


@pytest.fixture
def memory_cgroup_256m():
    v1 = Path("/sys/fs/cgroup/memory")
    v2 = Path("/sys/fs/cgroup")
    if (v1 / "memory.limit_in_bytes").exists() and os.access(v1, os.W_OK):
        root, limit_file = v1, "memory.limit_in_bytes"
    elif (v2 / "cgroup.subtree_control").exists() and "memory" in (v2 / "cgroup.subtree_control").read_text().split():
        root, limit_file = v2, "memory.max"
    else:
        pytest.skip("no writable memory cgroup controller here")
    cg = root / f"mlos-test-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    try:
        (cg / limit_file).write_text(str(256 << 20))
        yield cg
    finally:
        remove_cgroup(cg)


def test_memory_cgroup_limit_bounds_mem_requests(mlos, memory_cgroup_256m):
    cg = memory_cgroup_256m
    r = subprocess.run(in_cgroup(cg, mlos.binary, "run", "--cpus", "1", "--mem", "512M", "--", "true"),
                       env=mlos.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "not enough memory" in r.stderr
    r = subprocess.run(in_cgroup(cg, mlos.binary, "run", "--cpus", "1", "--mem", "64M", "--", "true"),
                       env=mlos.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, mlos.describe(r)
