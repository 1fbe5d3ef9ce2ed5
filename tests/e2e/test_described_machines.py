# SPDX-License-Identifier: Apache-2.0
"""Planning on machines described by MLOS_TOPOLOGY (hwloc synthetic and XML):
`mlos topo` and `mlos run --dry-run`."""
import json
import re
import pytest
from conftest import fixtures_dir

from cli_helpers import *  # noqa: F401,F403


def test_synthetic_topo(mlos, synthetic_topo):
    j, pu_core, pu_node = synthetic_topo
    assert j["schema_version"] == 1
    assert j["source"] == SYNTHETIC
    assert len(j["nodes"]) == 4
    assert len(j["cores"]) == 32
    assert len(pu_core) == 64
    assert j["allowed_cpus"] == "0-63"
    assert [n["os_index"] for n in j["nodes"]] == [0, 1, 2, 3]
    for n in j["nodes"]:
        assert n["cores"] == 8
        assert len(parse_cpu_list(n["cpus"])) == 16
        assert n["allowed_cpus"] == n["cpus"]
    assert all(len(c["pus"]) == 2 for c in j["cores"])
    assert {c["package"] for c in j["cores"]} == {0, 1}
    assert j["gpus"] == []


def test_synthetic_allowed_cpus_env(mlos):
    j = mlos.json("topo", "--json", env={"MLOS_TOPOLOGY": SYNTHETIC, "MLOS_ALLOWED_CPUS": "0-3"})
    assert j["allowed_cpus"] == "0-3"
    assert [n["allowed_cpus"] for n in j["nodes"]] == ["0-3", "", "", ""]
    # CPUs the described machine does not have cannot be allowed.
    j = mlos.json("topo", "--json", env={"MLOS_TOPOLOGY": SYNTHETIC, "MLOS_ALLOWED_CPUS": "60-200"})
    assert j["allowed_cpus"] == "60-63"
    r = mlos.run("topo", env={"MLOS_TOPOLOGY": SYNTHETIC, "MLOS_ALLOWED_CPUS": "60-200"})
    assert r.returncode == 0, mlos.describe(r)
    assert "allowed CPUs: 60-63 (4 of 64)" in r.stdout
    r = mlos.run("topo", env={"MLOS_TOPOLOGY": SYNTHETIC, "MLOS_ALLOWED_CPUS": "nonsense"})
    assert r.returncode == 1, mlos.describe(r)


def check_placement(p, pu_core, pu_node):
    cpus = parse_cpu_list(p["cpus"])
    assert sorted(p["cpu_order"]) == sorted(cpus)
    assert len(p["cpu_order"]) == len(cpus)
    assert sorted({pu_node[c] for c in cpus}) == sorted(p["numa_nodes"])
    assert p["primary_node"] in p["numa_nodes"]
    assert p["recommended_threads"] == len({pu_core[c] for c in cpus})
    assert p["claim_id"] == 0
    return cpus


def test_dry_run_one_node(mlos, synthetic_topo):
    _, pu_core, pu_node = synthetic_topo
    j = dry_run(mlos, "--cpus", "8")
    assert j["schema_version"] == 1
    assert j["dry_run"] is True
    assert j["topology"] == SYNTHETIC
    p = j["placement"]
    cpus = check_placement(p, pu_core, pu_node)
    assert len(cpus) == 8
    assert len(p["numa_nodes"]) == 1
    assert p["primary_node"] == p["numa_nodes"][0]
    assert len({pu_core[c] for c in cpus}) == 8  # whole cores, no SMT siblings
    assert p["recommended_threads"] == 8
    assert p["memory_policy"] == "preferred"
    # A dry run claims nothing.
    assert not mlos.ledger.exists()


def test_dry_run_numa_preference(mlos, synthetic_topo):
    _, pu_core, pu_node = synthetic_topo
    p = dry_run(mlos, "--cpus", "8", "--numa", "3")["placement"]
    cpus = check_placement(p, pu_core, pu_node)
    assert p["numa_nodes"] == [3]
    assert p["primary_node"] == 3
    assert {pu_node[c] for c in cpus} == {3}
    assert p["recommended_threads"] == 8


def test_dry_run_spans_nodes(mlos, synthetic_topo):
    _, pu_core, pu_node = synthetic_topo
    p = dry_run(mlos, "--cpus", "20")["placement"]
    cpus = check_placement(p, pu_core, pu_node)
    assert len(cpus) == 20
    assert len(p["numa_nodes"]) == 2
    assert p["memory_policy"] == "interleave"
    p = dry_run(mlos, "--cpus", "20", "--strict-mem")["placement"]
    assert len(p["numa_nodes"]) == 2
    assert p["memory_policy"] == "bind"
    j = dry_run(mlos, "--cpus", "20", "--single-node", expect_rc=EXIT_RUN_FAILED)
    assert j["error"]["code"] == error_codes()["MLOS_ERR_INSUFFICIENT_CPUS"]


def test_dry_run_respects_allowed_cpus(mlos):
    r = mlos.run("run", "--dry-run", "--json", "--cpus", "8", "--", "true",
                 env={"MLOS_TOPOLOGY": SYNTHETIC, "MLOS_ALLOWED_CPUS": "0-3"})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "not enough CPUs" in r.stderr
    assert json.loads(r.stdout)["error"]["code"] == error_codes()["MLOS_ERR_INSUFFICIENT_CPUS"]
    p = dry_run(mlos, "--cpus", "4", env={"MLOS_ALLOWED_CPUS": "0-3"})["placement"]
    assert p["cpus"] == "0-3"
    assert p["recommended_threads"] == 2


def test_dry_run_human_output(mlos):
    r = mlos.run("run", "--dry-run", "--cpus", "8", "--numa", "1", env={"MLOS_TOPOLOGY": SYNTHETIC})
    assert r.returncode == 0, mlos.describe(r)
    assert re.fullmatch(r"would run on CPUs \S+ \(NUMA node\(s\) \[1\]\), 8 thread\(s\) per pool\n", r.stdout), r.stdout


def test_run_on_described_machine_is_unsupported(mlos):
    marker = mlos.runtime / "ran"
    r = mlos.run("run", "--cpus", "1", "--json", "--", "touch", str(marker), env={"MLOS_TOPOLOGY": SYNTHETIC})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "not supported" in r.stderr
    assert "--dry-run" in r.stderr
    assert run_json_error(r)["error"]["code"] == error_codes()["MLOS_ERR_UNSUPPORTED"]
    assert not marker.exists()
    assert not mlos.ledger.exists()


def test_xml_fixture_gpu_on_node1(mlos):
    xml = fixtures_dir() / "two_nodes_gpu_on_node1.xml"
    if not xml.is_file():
        pytest.skip(f"fixture {xml} not present")
    j = mlos.json("topo", "--json", env={"MLOS_TOPOLOGY": f"xml:{xml}"})
    assert j["source"] == f"xml:{xml}"
    assert len(j["nodes"]) == 2
    assert len(j["gpus"]) == 1, j["gpus"]
    assert j["gpus"][0]["numa_node"] == 1
    assert j["gpus"][0]["pci_busid"] != ""
