"""The CPUs a process's cgroup cpuset allows are the outer bound: checked
with a real cgroup v1 cpuset (or a v2 cgroup with the cpuset controller)
created by the test."""
import json
import os
import subprocess
import sys
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
        for _ in range(50):
            try:
                cg.rmdir()
                break
            except OSError:
                subprocess.run(["sleep", "0.1"])


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
