# SPDX-License-Identifier: Apache-2.0
"""Exclusive that means exclusive (docs/daemon.md, "Confinement"): while a
root job holds exclusive CPUs, every other process of the node, started
before or after, runs off them (read from /proc), comes back when the job
ends, and a mlosd killed with -9 restores or re-applies it when it comes
back. Real v1 cpuset hierarchy; this file runs alone (ctest RUN_SERIAL),
because it moves the machine's unmanaged processes, the test runner's
included."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import parse_cpu_list
from conftest import build_dir
from daemon_helpers import Daemon, Started, allowed_cpus, v1_cgroups_usable, wait_for

CPUSET = Path("/sys/fs/cgroup/cpuset")
# Stopped after each test; a daemon's cgroups are removed, which moves
# what is left in <base>/shared back to the root.
started = Started()


@pytest.fixture(autouse=True)
def _needs_v1_root_and_two_cpus():
    if os.geteuid() != 0 or v1_cgroups_usable():
        pytest.skip(v1_cgroups_usable() or "needs root to move processes between cgroups")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    yield
    started.stop_all()


def node_cpus():
    return set(parse_cpu_list((CPUSET / "cpuset.cpus").read_text().strip()))


def hog():
    """An unmanaged CPU-bound process, started like any other on the node."""
    return started(subprocess.Popen([sys.executable, "-c", "while True: pass"]))


def cpus_of(pid):
    return set(parse_cpu_list(allowed_cpus(pid)))


def mlos_run_exclusive(daemon, cpus=1, label="excl"):
    env = daemon.client_env()
    env["MLOS_MODE"] = "daemon"
    p = started(subprocess.Popen([str(build_dir() / "bin" / "mlos"), "run", "--cpus", str(cpus), "--exclusive",
                                  "--label", label, "--", "sleep", "120"], env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    assert wait_for(lambda: Path(f"/proc/{p.pid}/comm").read_text().strip() == "sleep" or p.poll() is not None,
                    timeout=20)
    assert p.poll() is None, p.stderr.read()
    return p


def confinement(daemon):
    return daemon.status()["confinement"]


def hog_kept_off_an_exclusive_job(tmp_path):
    """A confining mlosd, an unmanaged hog and a root exclusive job: returns
    them and the pool, once the hog runs there."""
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    other = hog()
    job = mlos_run_exclusive(d)
    pool = node_cpus() - cpus_of(job.pid)
    assert wait_for(lambda: cpus_of(other.pid) == pool, timeout=10)
    return d, other, job, pool


def test_unmanaged_processes_leave_exclusive_cpus_and_come_back(tmp_path):
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    before = hog()
    job = mlos_run_exclusive(d)
    mine = cpus_of(job.pid)
    pool = node_cpus() - mine
    assert wait_for(lambda: cpus_of(before.pid) == pool, timeout=10), (allowed_cpus(before.pid), mine)
    after = hog()  # started while the job runs (a child of a confined process)
    assert cpus_of(after.pid) == pool
    c = confinement(d)
    assert c["active"] and set(parse_cpu_list(c["pool"])) == pool, c
    assert c["confined_processes"] >= 2
    job_status = [j for j in d.status()["jobs"] if j["pid"] == job.pid][0]
    assert job_status["exclusive_scope"] == "node"
    # The job ends: everything is back on every CPU, out of <base>/shared.
    job.kill()
    job.wait(10)
    assert wait_for(lambda: cpus_of(before.pid) == node_cpus() and cpus_of(after.pid) == node_cpus(), timeout=10)
    assert not confinement(d)["active"]
    assert not (CPUSET / d.base / "shared").exists()


def test_a_process_that_can_run_only_on_the_exclusive_cpus_is_left_alone_and_reported(tmp_path):
    pinned = {cpu: started(subprocess.Popen(["taskset", "-c", str(cpu), "sleep", "120"])) for cpu in node_cpus()}
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    job = mlos_run_exclusive(d)
    (taken,) = cpus_of(job.pid)
    stuck = pinned[taken]
    c = wait_for(lambda: (lambda c: c if any(x["pid"] == stuck.pid for x in c["left_alone"]) else None)(
        confinement(d)), timeout=10)
    assert c, confinement(d)
    assert cpus_of(stuck.pid) == {taken}  # its own affinity, untouched
    assert f"/{d.base}/" not in Path(f"/proc/{stuck.pid}/cgroup").read_text()


def test_another_users_process_pinned_to_the_exclusive_cpu_first_does_not_keep_it(tmp_path):
    # Issue 47, finding 12: root's exclusive job shared its CPU with a
    # process a user had pinned there in advance.
    def as_nobody():
        os.setgid(65534)
        os.setuid(65534)
    pinned = {cpu: started(subprocess.Popen(["taskset", "-c", str(cpu), "sleep", "120"], preexec_fn=as_nobody))
              for cpu in node_cpus()}
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    job = mlos_run_exclusive(d)
    (taken,) = cpus_of(job.pid)
    users = pinned[taken]
    pool = node_cpus() - {taken}
    assert wait_for(lambda: cpus_of(users.pid) == pool, timeout=10), (allowed_cpus(users.pid), confinement(d))
    c = confinement(d)
    assert any(x["pid"] == users.pid and x["uid"] == 65534 for x in c["affinity_overridden"]), c
    assert not any(x["pid"] == users.pid for x in c["left_alone"]), c


def test_a_stopped_mlosd_gives_the_node_back_and_the_next_one_confines_again(tmp_path):
    # Issue 47, finding 8: a mlosd stopped while an exclusive job ran left
    # every process of the machine on the pool until another mlosd started.
    d, other, job, pool = hog_kept_off_an_exclusive_job(tmp_path)
    d.stop()
    assert cpus_of(other.pid) == node_cpus(), "given back at the stop, before mlosd exited"
    assert not (CPUSET / d.base / "shared").exists()
    assert "confinement undone" in d.log.read_text()
    d.start()  # the job still runs: confined again
    assert wait_for(lambda: cpus_of(other.pid) == pool, timeout=10), allowed_cpus(other.pid)


def test_give_back_node_undoes_what_a_killed_mlosd_left_and_is_refused_while_one_runs(tmp_path):
    d, other, job, pool = hog_kept_off_an_exclusive_job(tmp_path)
    give_back = [str(build_dir() / "bin" / "mlos"), "daemon", *d.argv()[1:], "--give-back-node"]
    running = subprocess.run(give_back, capture_output=True, text=True, timeout=60)
    assert running.returncode == 1 and "answers on" in running.stderr, running
    assert cpus_of(other.pid) == pool
    d.kill9()
    assert cpus_of(other.pid) == pool  # nobody undid it
    done = subprocess.run(give_back, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "gave the node back" in done.stdout, done
    assert cpus_of(other.pid) == node_cpus()
    assert not (CPUSET / d.base / "shared").exists()
    again = subprocess.run(give_back, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "nothing to give back" in again.stdout, again


def test_nothing_is_confined_while_every_cpu_is_exclusive(tmp_path):
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    other = hog()
    jobs = [mlos_run_exclusive(d, label=f"x{i}") for i in range(len(node_cpus()))]
    c = confinement(d)
    assert not c["active"] and "every CPU" in c["reason"], c
    assert cpus_of(other.pid) == node_cpus()
    jobs[0].kill()
    jobs[0].wait(10)
    # One CPU is free again: the others are kept on it.
    assert wait_for(lambda: confinement(d)["active"], timeout=10), confinement(d)
    assert wait_for(lambda: cpus_of(other.pid) == node_cpus() - cpus_of(jobs[1].pid), timeout=10)


def test_a_restarted_mlosd_restores_confinement_whose_job_ended_while_it_was_down(tmp_path):
    d, other, job, pool = hog_kept_off_an_exclusive_job(tmp_path)
    d.kill9()
    assert cpus_of(other.pid) == pool  # the kernel keeps it: nobody undid it
    job.kill()
    job.wait(10)
    d.start()
    assert wait_for(lambda: cpus_of(other.pid) == node_cpus(), timeout=10), allowed_cpus(other.pid)
    assert not confinement(d)["active"]


def test_a_restarted_mlosd_reapplies_confinement_to_processes_started_while_it_was_down(tmp_path):
    d = started(Daemon(tmp_path, cgroups="v1", confine="node")).start()
    job = mlos_run_exclusive(d)
    pool = node_cpus() - cpus_of(job.pid)
    d.kill9()
    newcomer = hog()
    (CPUSET / "cgroup.procs").write_text(str(newcomer.pid))  # in the root cgroup, on every CPU
    assert cpus_of(newcomer.pid) == node_cpus()
    d.start()
    assert wait_for(lambda: cpus_of(newcomer.pid) == pool, timeout=10), (allowed_cpus(newcomer.pid), d.status()["confinement"], Path(f"/proc/{newcomer.pid}/cgroup").read_text(), d.log.read_text())
    assert confinement(d)["active"]
