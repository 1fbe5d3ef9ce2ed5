# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboard and alert rules (packaging/grafana,
packaging/prometheus) against what a live mlosd exports: a daemon with one
job is scraped, and scripts/check_dashboard.py must find every metric the
dashboard and rules query in that scrape, with the labels they match on.
Also promtool's checks and unit tests of the alert rules (no daemon).

The checker needs promql-parser, which scripts/setup.sh installs into
/opt/mlos/venv (MLOS_VENV); it runs under this interpreter when that has
it, else under the venv's. tests/monitoring tests the checker itself."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO_ROOT, build_dir
from daemon_helpers import real_hierarchy, start_job_client, wait_for
from test_daemon import cgroup_daemon  # noqa: F401 (a fixture)

CHECKER = REPO_ROOT / "scripts" / "check_dashboard.py"
RULES = REPO_ROOT / "packaging" / "prometheus" / "mlos-alerts.yml"
RULE_TESTS = REPO_ROOT / "packaging" / "prometheus" / "mlos-alerts.test.yml"

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool not installed (Debian package prometheus)")

# mlos_ metrics a correct mlosd leaves out of this test's scrape, and why.
# Everything else the dashboard or the rules query must be there.
ABSENT_HERE = {
    # mlos_daemon_job_client asks for no memory (memory_bytes = 0): no
    # limit, hence no memory watch and no pressure level.
    "mlos_job_memory_limit_bytes": "the job has no memory limit",
    "mlos_job_memory_pressure_level": "only jobs with a memory watch",
    "mlos_job_memory_pressure_changes_total": "only jobs with a memory watch",
    # A series per (kind, outcome) a policy has asked for; none may have yet.
    "mlos_policy_actions_total": "no policy action yet",
}
if real_hierarchy() != "v2":
    ABSENT_HERE["mlos_job_memory_stall_seconds_total"] = "cgroup v1 has no per-cgroup PSI"
# The daemon sees one GPU (the fake NVML), which the job does not claim.
JOB_GPU_METRICS = ("mlos_job_gpu_info", "mlos_job_gpu_memory_bytes", "mlos_job_gpu_utilization_percent",
                   "mlos_job_gpu_data_loading_seconds_total", "mlos_job_gpu_data_stall_seconds_total")
ABSENT_HERE.update({name: "the job holds no GPU" for name in JOB_GPU_METRICS})
NODE_GPU_METRICS = ("mlos_gpu_utilization_percent", "mlos_gpu_memory_used_bytes", "mlos_gpu_memory_free_bytes",
                    "mlos_gpu_power_watts", "mlos_gpu_temperature_celsius")
FAKE_NVML = build_dir() / "tests" / "gpu-fixtures" / "libfake-nvml.so"
if not FAKE_NVML.exists():
    ABSENT_HERE.update({name: "this build has no NVML (no nvml.h), so no GPUs" for name in NODE_GPU_METRICS})


def python_with_promql_parser() -> str:
    candidates = [sys.executable, str(Path(os.environ.get("MLOS_VENV", "/opt/mlos/venv")) / "bin" / "python")]
    for python in candidates:
        if Path(python).exists() and subprocess.run([python, "-c", "import promql_parser, yaml"],
                                                    capture_output=True).returncode == 0:
            return python
    pytest.fail(f"no interpreter with promql-parser and PyYAML among {candidates}: run scripts/setup.sh")


def metrics_text(daemon):
    port = daemon.status()["daemon"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


@needs_promtool
def test_dashboard_and_rules_query_only_what_a_live_mlosd_exports(cgroup_daemon, tmp_path, monkeypatch):
    if FAKE_NVML.exists():
        nvml = tmp_path / "nvml.json"
        nvml.write_text(json.dumps({"gpus": [{
            "uuid": "GPU-d0d0d0d0-0000-0000-0000-000000000000", "name": "NVIDIA H200", "memory_total": 1 << 34,
            "memory_used": 1 << 30, "pci": {"domain": 0, "bus": 59, "device": 0}, "cpu_affinity": "0",
            "utilization": [12, 3], "power_mw": 90000, "temperature": 40}]}))
        monkeypatch.setenv("MLOS_NVML_LIBRARY", str(FAKE_NVML))
        monkeypatch.setenv("MLOS_FAKE_NVML", str(nvml))
    d = cgroup_daemon.start()
    job = start_job_client(d, cpus=1, exclusive=False, label="dash-check")
    try:
        # Metrics are refreshed once a second; the job's series and the
        # policy hosts (started by the first request) must both be in.
        def ready():
            t = metrics_text(d)
            return t if (re.search(r'^mlos_job_info\{[^}]*label="dash-check"', t, re.M)
                         and re.search(r"^mlos_job_phase_seconds_total\{", t, re.M)
                         and re.search(r"^mlos_policy_up\{", t, re.M)
                         and (not FAKE_NVML.exists() or re.search(r"^mlos_gpu_power_watts\{", t, re.M))) else ""
        text = wait_for(ready, timeout=15, interval=0.2)
        assert text, metrics_text(d)
        scrape = tmp_path / "metrics.prom"
        scrape.write_text(text)
        argv = [python_with_promql_parser(), str(CHECKER), "--exposition", str(scrape)]
        for name in ABSENT_HERE:
            argv += ["--allow-absent", name]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{r.stdout}{r.stderr}\n--- scrape ---\n{text}"
        assert "check_dashboard: ok:" in r.stdout, r.stdout
    finally:
        job.terminate()
        assert job.wait(10) == 0, job.stdout.read()


@needs_promtool
def test_alert_rules_pass_promtool_check_and_unit_tests():
    r = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"SUCCESS: (\d+) rules found", r.stdout)
    assert m and int(m.group(1)) >= 10, r.stdout
    r = subprocess.run(["promtool", "test", "rules", str(RULE_TESTS)], capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
