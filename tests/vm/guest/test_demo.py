# SPDX-License-Identifier: Apache-2.0
"""README's first command's steps (scripts/lib/demo_steps.sh) on what a
chroot of Debian 12 cannot show (tests/packaging/readme_in_chroot.sh shares
the host's kernel): cgroup v2 only, systemd as init, two NUMA nodes. Run
on the build's binaries, as scripts/demo.sh runs them after its build."""
import re

from vm_helpers import BUILD, REPO, run


def test_the_demos_steps_pass_on_two_nodes_and_cgroup_v2():
    r = run(["bash", str(REPO / "scripts" / "lib" / "demo_steps.sh"), str(BUILD / "bin")], timeout=300)
    out = r.stdout
    # mlos topo sees the guest's two nodes.
    assert re.search(r"NUMA nodes: 2,", out), out
    # The training loop asks for every CPU (nproc: 4), which no single node
    # has: it got all four, across both nodes, ran its 300 steps and
    # printed its phase profile.
    assert re.search(r"4 CPU\(s\) on NUMA node \d", out), out
    cpus = re.search(r"^  CPUs: ([\d ]+)$", out, re.M).group(1).split()
    assert sorted(cpus) == ["0", "1", "2", "3"], out
    assert "step  300" in out and "phase profile" in out, out
    # mlos run confined the unmodified child to one CPU.
    child = re.search(r"child sees CPUs (\S+), OMP_NUM_THREADS = (\d+)", out)
    assert child and re.fullmatch(r"\d", child.group(1)) and child.group(2) == "1", out
