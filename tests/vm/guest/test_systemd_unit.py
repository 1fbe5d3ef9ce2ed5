# SPDX-License-Identifier: Apache-2.0
"""The installed mlosd unit under a real systemd (PID 1 in the guest):
it starts (its sandboxing, capabilities and system-call filter let mlosd
do its work), `systemctl restart` keeps a running job with its CPUs and
the new mlosd adopts it, `systemctl stop` leaves it running (KillMode),
an exclusive job keeps systemd's own slices off its CPUs through cgroup v2
cpusets (node confinement), still after a restart, and a mlosd started
after the job ended while it was down gives them their CPUs back. Type=notify
readiness and status, the watchdog, journald's fields, and `systemctl
reload` with a good and a bad config, for real."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from vm_helpers import CGROUP, MLOS, run
from cli_helpers import parse_cpu_list
from daemon_helpers import cgroup_of, wait_for

UNIT = Path("/usr/local/lib/systemd/system/mlosd.service")
CONFIG = Path("/etc/mlos/mlosd.json")
SLICES = ("system.slice", "user.slice", "init.scope")


def systemctl(*args, check=True):
    return run(["systemctl", *args], check=check, timeout=60)


def active():
    """Active and answering (Type=notify: active once mlosd said READY=1,
    after its socket listens; checked by answering too)."""
    if systemctl("is-active", "mlosd", check=False).stdout.strip() != "active":
        return False
    return run([MLOS, "status", "--source", "daemon"], check=False).returncode == 0


def status():
    r = run([MLOS, "status", "--source", "daemon", "--json"])
    return json.loads(r.stdout)


def affinity(pid):
    text = Path(f"/proc/{pid}/status").read_text()
    return parse_cpu_list(re.search(r"Cpus_allowed_list:\s+(\S+)", text).group(1))


def slice_cpus(name):
    return parse_cpu_list((CGROUP / name / "cpuset.cpus.effective").read_text())


@pytest.fixture
def mlosd_unit():
    assert UNIT.exists(), "cmake --install put no unit there"
    CONFIG.parent.mkdir(exist_ok=True)
    shutil.copy("/usr/local/share/mlos/examples/mlosd.json", CONFIG)
    systemctl("daemon-reload")
    systemctl("start", "mlosd")
    try:
        assert wait_for(lambda: active() and Path("/run/mlos/mlosd.sock").exists(), timeout=60), \
            run(["journalctl", "-u", "mlosd", "--no-pager"], check=False).stdout
        yield
    finally:
        journal = run(["journalctl", "-u", "mlosd", "--no-pager", "-o", "cat"], check=False).stdout
        print(journal)
        # A process the unit's system-call filter killed shows here
        # (audit type=1326, syscall=N).
        print(run(["sh", "-c", "journalctl -k --no-pager | grep 'type=1326' | tail -5"], check=False).stdout)
        systemctl("stop", "mlosd", check=False)


def test_the_unit_starts_restarts_and_stops_without_touching_a_running_job(mlosd_unit):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env["MLOS_MODE"] = "daemon"
    before = {s: slice_cpus(s) for s in SLICES}
    job = subprocess.Popen([MLOS, "run", "--cpus", "1", "--exclusive", "--no-tune", "--label", "held", "--",
                            "sleep", "600"], env=env)
    try:
        jobs = wait_for(lambda: [j for j in status()["jobs"] if j["label"] == "held"], timeout=30)
        assert jobs, status()
        cpus = parse_cpu_list(jobs[0]["cpus"])
        assert wait_for(lambda: affinity(job.pid) == cpus, timeout=10)
        assert cgroup_of(job.pid).startswith("/mlos/job-")
        # Exclusive means exclusive: systemd's slices are kept off its CPUs
        # through their v2 cpusets.
        for s in SLICES:
            assert wait_for(lambda: not (slice_cpus(s) & cpus), timeout=10), (s, slice_cpus(s), cpus)

        systemctl("restart", "mlosd")
        assert wait_for(active, timeout=60)
        assert job.poll() is None, job.returncode
        adopted = wait_for(lambda: [j for j in status()["jobs"] if j["label"] == "held"], timeout=30)
        assert adopted and parse_cpu_list(adopted[0]["cpus"]) == cpus
        assert affinity(job.pid) == cpus
        for s in SLICES:
            assert not (slice_cpus(s) & cpus), (s, slice_cpus(s))

        systemctl("stop", "mlosd")
        time.sleep(1)
        assert job.poll() is None, "KillMode=process: stopping mlosd never kills a job"
        assert affinity(job.pid) == cpus
    finally:
        # The job ends while mlosd is down...
        job.send_signal(signal.SIGTERM)
        job.wait(30)
    # ...and the next mlosd finds it gone and gives the slices their CPUs back.
    systemctl("start", "mlosd")
    assert wait_for(active, timeout=60)
    for s in SLICES:
        assert wait_for(lambda: slice_cpus(s) == before[s], timeout=20), (s, slice_cpus(s), before[s], status())
    assert status()["jobs"] == []


def show(prop):
    return systemctl("show", "mlosd", "-p", prop, "--value").stdout.strip()


def journal(*match):
    r = run(["journalctl", "-u", "mlosd", "--no-pager", "-o", "json", *match], check=False)
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_notify_readiness_watchdog_journal_fields_and_reload(mlosd_unit):
    # Type=notify with its status line, and the watchdog armed.
    assert show("Type") == "notify"
    assert "ready on /run/mlos/mlosd.sock" in show("StatusText"), show("StatusText")
    assert show("WatchdogUSec") not in ("", "0", "infinity"), show("WatchdogUSec")
    main_pid = show("MainPID")
    # Events reach the journal through the native protocol, with fields.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env["MLOS_MODE"] = "daemon"
    run([MLOS, "run", "--cpus", "1", "--no-tune", "--label", "journaled", "--", "true"], env=env)
    granted = wait_for(lambda: [e for e in journal("MLOS_EVENT=granted") if e.get("LABEL") == "journaled"], timeout=30)
    assert granted, run(["journalctl", "-u", "mlosd", "--no-pager", "-o", "verbose"], check=False).stdout
    g = granted[-1]
    assert g["PRIORITY"] == "6" and g["SYSLOG_IDENTIFIER"] == "mlosd" and g["JOB_ID"] and g["UID"] == "0", g
    ended = wait_for(lambda: [e for e in journal("MLOS_EVENT=ended", f"JOB_ID={g['JOB_ID']}")], timeout=30)
    assert ended, journal()
    # A good reload: applied, same process, still ready.
    config = json.loads(CONFIG.read_text())
    config.setdefault("policies", {})["defaults"] = ["thread-governor"]
    CONFIG.write_text("// reloaded by the VM test\n" + json.dumps(config))
    systemctl("reload", "mlosd")
    assert wait_for(lambda: "changed: policies.defaults" in show("StatusText"), timeout=30), show("StatusText")
    assert show("MainPID") == main_pid and show("ActiveState") == "active"
    assert [e for e in journal("MLOS_EVENT=reloaded")], journal()
    # A bad one: refused whole, at priority err, and mlosd keeps running.
    CONFIG.write_text('{"policies": {"defaults": [}}')
    systemctl("reload", "mlosd", check=False)
    assert wait_for(lambda: "reload refused" in show("StatusText"), timeout=30), show("StatusText")
    refused = journal("MLOS_EVENT=reload-refused")
    assert refused and refused[-1]["PRIORITY"] == "3" and f"{CONFIG}:1:" in refused[-1]["MESSAGE"], refused
    assert show("MainPID") == main_pid and active()
