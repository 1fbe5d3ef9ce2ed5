# SPDX-License-Identifier: Apache-2.0
"""Multi-NUMA on a real kernel (the guest: node 0 with CPUs 0-1 and 2 GiB,
node 1 with CPUs 2-3 and 1 GiB): placement picks the node that fits,
`--numa N --strict-mem` binds the job's memory there (numa_maps shows its
pages on that node), `--numa N` alone prefers it, a job too big for one
node spans both unless `--single-node`, and under mlosd the job's v2
cgroup gets the node's CPUs and memory."""
import json
import os
import sys

import pytest

from vm_helpers import MLOS, run

# Touches 48 MiB of fresh anonymous memory and reports, for that mapping,
# its numa_maps policy and pages per node, and the process's affinity.
TOUCH = r"""
import json, mmap, re
size = 48 << 20
m = mmap.mmap(-1, size)
for i in range(0, size, 4096):
    m[i] = 1
maps = open("/proc/self/numa_maps").read().splitlines()
pages = lambda l: sum(int(c) for c in re.findall(r" N\d+=(\d+)", l))
best = max(maps, key=pages)  # the 48 MiB mapping (shared anonymous: no "anon=")
nodes = {int(n): int(c) for n, c in re.findall(r" N(\d+)=(\d+)", best)}
status = open("/proc/self/status").read()
print(json.dumps({"policy": best.split()[1], "nodes": nodes,
                  "cpus": re.search(r"Cpus_allowed_list:\s+(\S+)", status).group(1)}))
"""


def placed(*args):
    r = run([MLOS, "run", *args, "--dry-run", "--json"])
    return json.loads(r.stdout)["placement"]


def touched(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(tmp_path), MLOS_TUNE_DIR=str(tmp_path / "tune"))
    r = run([MLOS, "run", *args, "--no-tune", "--", sys.executable, "-c", TOUCH], env=env)
    t = json.loads(r.stdout.strip().splitlines()[-1])
    t["nodes"] = {int(n): c for n, c in t["nodes"].items()}
    return t


def test_topology_shows_both_nodes_with_their_memory():
    topo = json.loads(run([MLOS, "topo", "--json"]).stdout)
    nodes = {n["os_index"]: n for n in topo["nodes"]}
    assert sorted(nodes) == [0, 1]
    assert nodes[0]["cpus"] == "0-1" and nodes[1]["cpus"] == "2-3"
    assert nodes[0]["memory_bytes"] > 1.5 * nodes[1]["memory_bytes"]


def test_placement_picks_the_node_whose_memory_fits():
    # 1.4 GiB fits only node 0; a small job on node 1 when asked.
    assert placed("--cpus", "2", "--mem", "1400M")["numa_nodes"] == [0]
    assert placed("--cpus", "2", "--numa", "1")["cpus"] == "2-3"
    r = run([MLOS, "run", "--cpus", "2", "--mem", "1400M", "--numa", "1", "--strict-mem", "--dry-run"], check=False)
    assert r.returncode != 0 and "memory" in (r.stderr + r.stdout).lower(), r


def test_a_job_larger_than_a_node_spans_both_unless_single_node():
    p = placed("--cpus", "3")
    assert p["numa_nodes"] == [0, 1], p
    r = run([MLOS, "run", "--cpus", "3", "--single-node", "--dry-run"], check=False)
    assert r.returncode != 0, r


@pytest.mark.parametrize("node", [0, 1])
def test_strict_mem_binds_the_jobs_pages_to_the_node(tmp_path, node):
    t = touched(tmp_path, "--cpus", "1", "--numa", str(node), "--mem", "64M", "--strict-mem")
    assert t["policy"] == f"bind:{node}", t
    assert sum(t["nodes"].values()) >= (48 << 20) // 4096 * 0.9, t
    assert set(t["nodes"]) == {node}, t  # every page on the node
    assert t["cpus"] in (["0", "1"] if node == 0 else ["2", "3"]), t


def test_numa_without_strict_mem_prefers_the_node(tmp_path):
    t = touched(tmp_path, "--cpus", "1", "--numa", "1")
    assert t["policy"] == "prefer:1", t
    assert max(t["nodes"], key=t["nodes"].get) == 1, t


def test_under_mlosd_the_jobs_cgroup_gets_the_nodes_cpus_and_memory(tmp_path):
    from daemon_helpers import Daemon

    d = Daemon(tmp_path, cgroups="v2").start()
    try:
        r = run([MLOS, "run", "--cpus", "1", "--numa", "1", "--strict-mem", "--no-tune", "--",
                 sys.executable, "-c",
                 "import pathlib; cg = open('/proc/self/cgroup').read().split('::')[1].strip(); "
                 "d = pathlib.Path('/sys/fs/cgroup' + cg); "
                 "print(cg, d.joinpath('cpuset.cpus').read_text().strip(), d.joinpath('cpuset.mems').read_text().strip())"],
                env=d.client_env())
        cgroup, cpus, mems = r.stdout.split()
        assert cgroup.startswith(f"/{d.base}/job-"), r.stdout
        assert cpus in ("2", "3") and mems == "1", r.stdout
    finally:
        d.stop()
        d.remove_cgroups()
