# SPDX-License-Identifier: Apache-2.0
"""`mlos topo`'s NVIDIA GPUs (docs/gpu.md) from outside: the CLI loads a
fake NVML (tests/gpu/fake_nvml.cpp, named by MLOS_NVML_LIBRARY) serving
GPUs described in JSON, and shows every figure, null where NVML did not
give one; without NVML it shows none and why, and exits 0."""
import json

import pytest

from conftest import build_dir

FAKE_NVML = build_dir() / "tests" / "gpu-fixtures" / "libfake-nvml.so"
needs_fake = pytest.mark.skipif(not FAKE_NVML.exists(),
                                reason="this build has no fake NVML (built without nvml.h, or a sanitizer build)")


def gpu(uuid: str, bus: int, cpus: str) -> dict:
    return {"uuid": uuid, "name": "NVIDIA H200", "memory_total": 150754820096, "memory_used": 2 << 30,
            "pci": {"domain": 0, "bus": bus, "device": 0}, "cpu_affinity": cpus, "mig": 0,
            "utilization": [88, 40], "power_mw": 412000, "temperature": 55, "clock_event_reasons": 0,
            "processes": [{"pid": 777, "used": 1 << 30}]}


@needs_fake
def test_topo_lists_the_gpus_nvml_serves_with_unknown_figures_as_null(mlos, tmp_path):
    broken = gpu("GPU-22222222-0000-0000-0000-000000000002", 0xd8, "1")
    broken["errors"] = {"nvmlDeviceGetPowerUsage": 4}
    lost = gpu("GPU-33333333-0000-0000-0000-000000000003", 0xe0, "0")
    lost["errors"] = {"nvmlDeviceGetPciInfo_v3": 15}
    config = tmp_path / "nvml.json"
    config.write_text(json.dumps({"driver_version": "550.54.15",
                                  "gpus": [gpu("GPU-11111111-0000-0000-0000-000000000001", 0x3b, "0"), broken, lost]}))
    env = {"MLOS_NVML_LIBRARY": str(FAKE_NVML), "MLOS_FAKE_NVML": str(config)}
    j = mlos.json("topo", "--json", env=env)["nvml"]
    assert j["driver_version"] == "550.54.15" and j["absent_reason"] == "" and j["library"] == str(FAKE_NVML)
    assert [g["uuid"] for g in j["gpus"]] == ["GPU-11111111-0000-0000-0000-000000000001",
                                              "GPU-22222222-0000-0000-0000-000000000002"]
    a, b = j["gpus"]
    assert a["pci_busid"] == "0000:3b:00.0" and a["cpu_affinity"] == "0" and a["mig_enabled"] is False
    assert a["memory_total_bytes"] == 150754820096 and a["memory_free_bytes"] == 150754820096 - (2 << 30)
    assert a["utilization_percent"] == 88 and a["power_milliwatts"] == 412000 and a["temperature_celsius"] == 55
    assert a["processes"] == [{"pid": 777, "used_bytes": 1 << 30}]
    # No such PCI device in this machine's sysfs: where it hangs is unknown.
    assert a["numa_node"] == -1 and any(n.startswith("numa_node: ") for n in a["notes"]), a
    assert b["power_milliwatts"] is None
    assert "power: nvmlDeviceGetPowerUsage: Insufficient Permissions (NVML error 4)" in b["notes"]
    assert j["skipped"] == ["GPU 2: nvmlDeviceGetPciInfo_v3: GPU is lost (NVML error 15)"]

    r = mlos.run("topo", env=env)
    assert r.returncode == 0, mlos.describe(r)
    assert "NVIDIA GPUs (NVML, driver 550.54.15): 2" in r.stdout
    assert "GPU 0: NVIDIA H200 GPU-11111111-0000-0000-0000-000000000001 at 0000:3b:00.0" in r.stdout
    assert "skipped: GPU 2: nvmlDeviceGetPciInfo_v3" in r.stdout


@needs_fake
def test_topo_says_why_when_the_driver_is_not_loaded(mlos, tmp_path):
    config = tmp_path / "nvml.json"
    config.write_text(json.dumps({"init_error": 9}))
    j = mlos.json("topo", "--json", env={"MLOS_NVML_LIBRARY": str(FAKE_NVML), "MLOS_FAKE_NVML": str(config)})
    assert j["nvml"]["gpus"] == []
    assert "nvmlInit_v2: Driver Not Loaded (NVML error 9)" in j["nvml"]["absent_reason"], j["nvml"]


def test_topo_without_nvml_has_no_gpus_says_why_and_succeeds(mlos):
    env = {"MLOS_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}
    j = mlos.json("topo", "--json", env=env)["nvml"]
    assert j["gpus"] == [] and j["skipped"] == []
    # Built with nvml.h: the library is missing; built without: the build says so.
    assert ("NVML could not be loaded (/nonexistent/libnvidia-ml.so.1" in j["absent_reason"]
            or "built without NVML's header" in j["absent_reason"]), j
    r = mlos.run("topo", env=env)
    assert r.returncode == 0, mlos.describe(r)
    assert "NVIDIA GPUs: none (" in r.stdout
