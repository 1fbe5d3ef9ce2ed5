# SPDX-License-Identifier: Apache-2.0
"""The guest is what the test bed promises: a misbuilt VM must fail here,
never let the other tests pass by skipping. cgroup v2 only with the
controllers mlosd needs, systemd as PID 1, two NUMA nodes with unequal
memory and a distance matrix, and root with every capability."""
import re
from pathlib import Path

from vm_helpers import CGROUP


def test_cgroup_v2_only_with_the_controllers_mlosd_uses():
    mounts = Path("/proc/self/mountinfo").read_text()
    assert re.search(r" /sys/fs/cgroup .* - cgroup2 ", mounts), mounts
    assert " - cgroup " not in mounts  # no v1 hierarchy at all
    assert {"cpuset", "cpu", "memory"} <= set((CGROUP / "cgroup.controllers").read_text().split())


def test_systemd_is_init():
    assert Path("/proc/1/comm").read_text().strip() == "systemd"


def test_two_numa_nodes_with_unequal_memory_and_distances():
    nodes = sorted(Path("/sys/devices/system/node").glob("node[0-9]*"))
    assert [n.name for n in nodes] == ["node0", "node1"]
    assert [n.joinpath("cpulist").read_text().strip() for n in nodes] == ["0-1", "2-3"]
    total = [int(re.search(r"MemTotal:\s+(\d+)", n.joinpath("meminfo").read_text()).group(1)) for n in nodes]
    assert total[0] > 1.5 * total[1], total
    assert [n.joinpath("distance").read_text().split() for n in nodes] == [["10", "21"], ["21", "10"]]


def test_root_has_cap_sys_resource():
    eff = int(re.search(r"CapEff:\s+([0-9a-f]+)", Path("/proc/self/status").read_text()).group(1), 16)
    assert eff >> 24 & 1
