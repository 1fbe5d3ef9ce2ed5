# SPDX-License-Identifier: Apache-2.0
"""`mlos topo`: what the library sees, checked against /proc."""
import json
import re
import pytest

from cli_helpers import *  # noqa: F401,F403


def test_topo_json_matches_proc(mlos):
    j = mlos.json("topo", "--json")
    assert j["schema_version"] == 1
    assert j["command"] == "topo"
    assert j["source"] == "this machine"
    seen = probe_plain(mlos)
    assert j["allowed_cpus"] == seen["cpus_allowed_list"]
    assert parse_cpu_list(j["allowed_cpus"]) == allowed_cpus()
    # Every allowed CPU belongs to exactly one core and one node.
    all_pus = [pu for c in j["cores"] for pu in c["pus"]]
    assert len(all_pus) == len(set(all_pus))
    node_cpus = set()
    for n in j["nodes"]:
        cpus = parse_cpu_list(n["cpus"])
        assert not (cpus & node_cpus)
        node_cpus |= cpus
        assert parse_cpu_list(n["allowed_cpus"]) == cpus & allowed_cpus()
        assert n["cores"] == sum(1 for c in j["cores"] if c["numa_node"] == n["os_index"])
    assert allowed_cpus() <= node_cpus
    assert node_cpus == set(all_pus)
    assert len(j["cores"]) == len({c["index"] for c in j["cores"]})


def test_topo_follows_taskset(mlos):
    need_cpus(2)
    if 0 not in allowed_cpus():
        pytest.skip("CPU 0 is not allowed to this process")
    prefix = ("taskset", "-c", "0")
    j = mlos.json("topo", "--json", prefix=prefix)
    assert j["allowed_cpus"] == "0"
    assert probe_plain(mlos, prefix=prefix)["cpus_allowed_list"] == "0"
    # The per-node view is restricted too.
    assert [n["allowed_cpus"] for n in j["nodes"] if n["allowed_cpus"]] == ["0"]


def test_topo_human_output(mlos):
    r = mlos.run("topo")
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout.startswith("topology: this machine\n")
    n = len(allowed_cpus())
    assert re.search(rf"^allowed CPUs: \S+ \({n} of \d+\)$", r.stdout, re.M), r.stdout


def test_topo_bad_topology_source(mlos):
    r = mlos.run("topo", "--json", env={"MLOS_TOPOLOGY": "garbage"})
    assert r.returncode == 1, mlos.describe(r)
    j = json.loads(r.stdout)
    assert j["error"]["code"] == error_codes()["MLOS_ERR_INVALID_ARGUMENT"]
    assert "garbage" in r.stderr
    r = mlos.run("topo", env={"MLOS_TOPOLOGY": "xml:/nonexistent/topology.xml"})
    assert r.returncode == 1, mlos.describe(r)
    assert "/nonexistent/topology.xml" in r.stderr
