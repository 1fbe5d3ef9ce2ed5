# SPDX-License-Identifier: Apache-2.0
"""A daemon-mode job's data loader: the library starts the helper for the
job, and it lands where mlosd put the job, checked from outside: in the
job's own cgroups (cpuset, cpu, memory: its decoding counts against the
job's CPU shares and memory limit), on the job's CPUs, as the job's user;
and gone when the job stops it."""
import os
import shutil
import subprocess
from pathlib import Path

from conftest import build_dir
from daemon_helpers import allowed_cpus, cgroup_of, wait_for
from test_daemon import cgroup_daemon  # noqa: F401 (a fixture)

IMAGES = Path(__file__).resolve().parents[1] / "fixtures" / "images"


def test_a_daemon_jobs_helper_runs_in_the_jobs_cgroups_on_its_cpus(cgroup_daemon, tmp_path):
    d = cgroup_daemon.start()
    data = tmp_path / "data"
    for cls, files in {"a": ["jpeg_420.jpg", "photo_420.jpg"], "b": ["png_rgb.png", "jpeg_444.jpg"]}.items():
        (data / cls).mkdir(parents=True)
        for name in files:
            shutil.copy(IMAGES / name, data / cls / name)
    env = d.client_env()
    if "MLOS_DATALOAD_HELPER" in os.environ:  # a sanitized build runs the optimised helper
        env["MLOS_DATALOAD_HELPER"] = os.environ["MLOS_DATALOAD_HELPER"]
    client = subprocess.Popen([str(build_dir() / "bin" / "mlos_dataload_job_client"), "1", str(data)],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = client.stdout.readline()
        assert line.startswith("LOADING"), f"{line!r} {client.stderr.read() if client.poll() is not None else ''}"
        fields = dict(f.split("=", 1) for f in line.split()[1:])
        helper, job = int(fields["helper"]), f"job-{fields['claim']}"
        assert fields["samples"] == "4" and fields["batches"] == "1"
        for controller in ("cpuset", "cpu", "memory"):
            expected = f"/{d.base}/{job}"
            assert cgroup_of(client.pid, controller) == expected, controller
            assert cgroup_of(helper, controller) == expected, controller
            assert str(helper) in (d.cgroup_dir(controller, job) / "cgroup.procs").read_text().split()
        job_cpus = (d.cgroup_dir("cpuset", job) / "cpuset.cpus").read_text().strip()
        assert allowed_cpus(helper) == job_cpus
        status = Path(f"/proc/{helper}/status").read_text()
        assert "\nSeccomp:\t2" in status
        uid = [l.split()[1] for l in status.splitlines() if l.startswith("Uid:")][0]
        assert uid == str(os.getuid())
        client.terminate()
        assert client.wait(20) == 0
        assert wait_for(lambda: not Path(f"/proc/{helper}").exists(), timeout=5)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
