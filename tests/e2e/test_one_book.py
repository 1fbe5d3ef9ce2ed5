# SPDX-License-Identifier: Apache-2.0
"""One arbiter per node (docs/daemon.md, "One book"): with mlosd up,
`mlos run` claims through it, so its jobs show in `mlos status` with their
label, and exclusive CPUs are never granted twice whichever side asked
first; with mlosd down, `auto` falls back to the embedded ledger, and a
mlosd that comes back adopts the ledger's live claims (and forgets them
when they leave the ledger). Real processes, CPUs read from /proc."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cli_helpers import parse_cpu_list
from conftest import build_dir
from daemon_helpers import Daemon, Started, allowed_cpus, start_job_client, v1_cgroups_usable, wait_for

started = Started()  # daemons and processes to stop whatever a test's outcome


@pytest.fixture(autouse=True)
def _stop_what_was_started():
    yield
    started.stop_all()


def node_cpus():
    return len(os.sched_getaffinity(0))


def run_env(daemon: Daemon, mode="auto"):
    """`mlos run`'s environment next to `daemon` (which may be down)."""
    env = daemon.client_env()
    env["MLOS_MODE"] = mode
    return env


def mlos_run(daemon, *args, mode="auto", cmd=("sleep", "60"), session=False):
    binary = str(build_dir() / "bin" / "mlos")
    return started(subprocess.Popen([binary, "run", *args, "--", *cmd], env=run_env(daemon, mode),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=session))


class ProcessGroup:
    """A process started in a session of its own, stopped with everything
    it started (Started calls poll, kill and wait)."""

    def __init__(self, leader):
        self.leader = leader

    def poll(self):
        try:
            os.killpg(self.leader.pid, 0)
            return None
        except ProcessLookupError:
            return 0

    def kill(self):
        try:
            os.killpg(self.leader.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout=None):
        return self.leader.wait(timeout)


def jobs_of(daemon):
    return daemon.status()["jobs"]


def job_of_pid(daemon, pid):
    found = [j for j in jobs_of(daemon) if j["pid"] == pid and j["nested_in"] is None]
    return found[0] if found else None


def exec_done(proc, comm="sleep"):
    """True once `mlos run` has exec'd its command (the claim is made by then)."""
    try:
        return Path(f"/proc/{proc.pid}/comm").read_text().strip() == comm
    except OSError:
        return False


@pytest.fixture
def daemon(tmp_path):
    return started(Daemon(tmp_path)).start()


def test_mlos_run_claims_through_mlosd_and_keeps_its_label(daemon, mlos_bin):
    p = mlos_run(daemon, "--cpus", "1", "--label", "trainer-a")
    assert wait_for(lambda: exec_done(p), timeout=20), p.stderr.read() if p.poll() is not None else "no exec"
    job = job_of_pid(daemon, p.pid)
    assert job is not None, jobs_of(daemon)
    assert job["label"] == "trainer-a"
    assert job["envelope"] is True and job["source"] == "daemon"
    assert allowed_cpus(p.pid) == job["cpus"]
    # Nothing went into the embedded ledger.
    ledger = daemon.dir / "claims.json"
    assert not ledger.exists() or json.loads(ledger.read_text())["claims"] == []
    # The CLI's status (through mlosd) names it.
    st = subprocess.run([mlos_bin, "status"], env=daemon.client_env(), capture_output=True, text=True, timeout=30)
    assert st.returncode == 0 and "trainer-a" in st.stdout, st.stdout + st.stderr
    p.kill()
    p.wait(10)
    assert wait_for(lambda: job_of_pid(daemon, p.pid) is None, timeout=10), jobs_of(daemon)


def test_a_dry_run_is_planned_by_mlosd_and_grants_nothing(daemon, mlos_bin):
    if node_cpus() < 2:
        pytest.skip("needs 2 CPUs")
    excl = started(start_job_client(daemon, cpus=1, exclusive=True, label="holder"))
    r = subprocess.run([mlos_bin, "run", "--dry-run", "--json", "--cpus", "1", "--exclusive"],
                       env=run_env(daemon), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["engine"] == "daemon" and j["dry_run"] is True
    assert not (set(parse_cpu_list(j["placement"]["cpus"])) & set(parse_cpu_list(excl.cpus)))  # mlosd's book
    assert [x["label"] for x in jobs_of(daemon)] == ["holder"]


def test_the_command_s_own_requests_nest_in_its_mlos_run_envelope(daemon):
    client = str(build_dir() / "bin" / "mlos_daemon_job_client")
    p = mlos_run(daemon, "--cpus", "2", "--label", "outer", cmd=(client, "1", "1", "inner"))
    line = p.stdout.readline()
    assert line.startswith("GRANTED"), line + (p.stderr.read() if p.poll() is not None else "")
    jobs = jobs_of(daemon)
    outer = [j for j in jobs if j["label"] == "outer"][0]
    inner = [j for j in jobs if j["label"] == "inner"][0]
    # Same process (mlos run exec'd the client), yet nested: carved from
    # the envelope's CPUs instead of competing with them for the node's.
    assert inner["pid"] == outer["pid"] == p.pid
    assert inner["nested_in"] == outer["job"]
    assert set(parse_cpu_list(inner["cpus"])) <= set(parse_cpu_list(outer["cpus"]))
    assert daemon.status()["exclusive_cpus"] == ""  # the envelope is shared, the nested claim books inside it


def test_local_ranks_under_mlos_run_get_their_own_share_from_mlosd(daemon):
    """torchrun's ranks as C programs: each sees LOCAL_RANK of
    LOCAL_WORLD_SIZE=2 inside `mlos run --cpus 2`; the library takes the
    rank's share as its affinity and mlosd places the rank's job inside it
    (docs/placement.md, "Local ranks")."""
    if node_cpus() < 2:
        pytest.skip("needs 2 CPUs")
    client = str(build_dir() / "bin" / "mlos_daemon_job_client")
    script = (f"LOCAL_WORLD_SIZE=2 LOCAL_RANK=0 {client} 1 0 rank0 & "
              f"LOCAL_WORLD_SIZE=2 LOCAL_RANK=1 {client} 1 0 rank1 & wait")
    p = mlos_run(daemon, "--cpus", "2", "--label", "ranks", cmd=("sh", "-c", script), session=True)
    started(ProcessGroup(p))  # the ranks are the shell's children: stopped with it
    granted = []
    for _ in range(2):
        line = p.stdout.readline()
        assert line.startswith("GRANTED"), line + (p.stderr.read() if p.poll() is not None else "")
        granted.append(set(parse_cpu_list(dict(f.split("=", 1) for f in line.split()[1:])["cpus"])))
    assert all(len(g) == 1 for g in granted) and not (granted[0] & granted[1]), granted
    jobs = {j["label"]: j for j in jobs_of(daemon)}
    assert jobs["rank0"]["nested_in"] == jobs["ranks"]["job"] == jobs["rank1"]["nested_in"], jobs
    # Each rank inside its own share: the first CPU of the envelope for rank
    # 0, the second for rank 1 (contiguous shares, in rank order).
    first, second = sorted(parse_cpu_list(jobs["ranks"]["cpus"]))
    assert (jobs["rank0"]["cpus"], jobs["rank1"]["cpus"]) == (str(first), str(second)), jobs


@pytest.mark.parametrize("first", ["mlos_run", "library"])
def test_exclusive_run_and_exclusive_request_never_share_a_cpu(daemon, first):
    if node_cpus() < 2:
        pytest.skip("needs 2 CPUs")

    def run_side():
        p = mlos_run(daemon, "--cpus", "1", "--exclusive", "--label", "run-side")
        assert wait_for(lambda: exec_done(p), timeout=20), p.stderr.read() if p.poll() is not None else ""
        return set(parse_cpu_list(allowed_cpus(p.pid)))

    def library_side():
        c = started(start_job_client(daemon, cpus=1, exclusive=True, label="lib-side"))
        return set(parse_cpu_list(c.cpus))

    a = run_side() if first == "mlos_run" else library_side()
    b = library_side() if first == "mlos_run" else run_side()
    assert a and b and not (a & b), (a, b)
    st = daemon.status()
    assert set(parse_cpu_list(st["exclusive_cpus"])) == a | b


def test_fifty_racing_exclusive_claims_get_disjoint_cpus(daemon):
    """25 `mlos run --exclusive` and 25 library requests at once: at most
    one winner per CPU, the others refused, none sharing."""
    n = node_cpus()
    client = str(build_dir() / "bin" / "mlos_daemon_job_client")
    procs = []
    for i in range(50):
        if i % 2:
            procs.append(("run", mlos_run(daemon, "--cpus", "1", "--exclusive", "--label", f"r{i}")))
        else:
            procs.append(("lib", started(subprocess.Popen([client, "1", "1", f"l{i}"], env=daemon.client_env(),
                                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                          stderr=subprocess.PIPE, text=True))))
    winners = {}
    for kind, p in procs:
        if kind == "lib":
            line = p.stdout.readline()
            if line.startswith("GRANTED"):
                winners[p.pid] = set(parse_cpu_list(dict(f.split("=", 1) for f in line.split()[1:])["cpus"]))
            else:
                assert "FAILED" in line or p.wait(30) != 0, line
        else:
            # A refused `mlos run` exits 125; a granted one exec's sleep.
            # One still deciding is neither (its own affinity is no grant):
            # on a loaded machine it may take a while.
            assert wait_for(lambda: exec_done(p) or p.poll() is not None, timeout=120), \
                f"mlos run {p.pid} neither exec'd nor exited within 120 s"
            if p.poll() is None:
                winners[p.pid] = set(parse_cpu_list(allowed_cpus(p.pid)))
            else:
                assert p.returncode == 125, p.stderr.read()
    assert 1 <= len(winners) <= n, winners
    seen = set()
    for pid, cpus in winners.items():
        assert cpus and not (cpus & seen), winners
        seen |= cpus
    booked = [j for j in jobs_of(daemon) if j["exclusive"] and j["nested_in"] is None]
    assert len(booked) == len(winners)


def write_ledger(path: Path, claims):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"schema_version": 1, "next_id": 100, "boot_id": "", "claims": claims}))
    os.rename(tmp, path)


def start_time(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def test_mlosd_adopts_the_ledger_s_claims_when_it_comes_back(tmp_path):
    if node_cpus() < 2:
        pytest.skip("needs 2 CPUs")
    d = started(Daemon(tmp_path))  # not started yet: mlosd is down
    early = mlos_run(d, "--cpus", "1", "--exclusive", "--label", "early")
    assert wait_for(lambda: exec_done(early), timeout=20), early.stderr.read() if early.poll() is not None else ""
    ledger = json.loads((tmp_path / "claims.json").read_text())["claims"]
    assert [c["label"] for c in ledger] == ["early"]  # auto fell back to the embedded ledger
    early_cpus = set(parse_cpu_list(allowed_cpus(early.pid)))

    d.start()
    job = job_of_pid(d, early.pid)
    assert job is not None and job["source"] == "ledger" and job["label"] == "early", jobs_of(d)
    assert job["exclusive"] and set(parse_cpu_list(job["cpus"])) == early_cpus
    # mlosd now books those CPUs: its own exclusive grant avoids them.
    late = started(start_job_client(d, cpus=1, exclusive=True, label="late"))
    assert not (set(parse_cpu_list(late.cpus)) & early_cpus)
    # The early job ends with its process.
    early.kill()
    early.wait(10)
    assert wait_for(lambda: job_of_pid(d, early.pid) is None, timeout=10), jobs_of(d)


def test_a_claim_that_leaves_the_ledger_is_forgotten_while_its_process_lives(daemon):
    holder = started(subprocess.Popen(["sleep", "60"]))
    ledger = daemon.dir / "claims.json"
    claim = {"id": 7, "pid": holder.pid, "start_time": start_time(holder.pid), "uid": os.getuid(), "cpus": "0",
             "exclusive": True, "envelope": False, "numa_node": 0, "memory_bytes": 0, "label": "embedded-one",
             "created_unix": int(time.time())}
    write_ledger(ledger, [claim])
    assert wait_for(lambda: job_of_pid(daemon, holder.pid), timeout=10), jobs_of(daemon)
    assert job_of_pid(daemon, holder.pid)["label"] == "embedded-one"
    # A second exclusive claim on the same CPU (made behind mlosd's back) is
    # booked as shared, with a note: two exclusive bookings of one CPU could
    # not be undone one at a time.
    other = started(subprocess.Popen(["sleep", "60"]))
    write_ledger(ledger, [claim, dict(claim, id=8, pid=other.pid, start_time=start_time(other.pid), label="dup")])
    dup = wait_for(lambda: job_of_pid(daemon, other.pid), timeout=10)
    assert dup and not dup["exclusive"] and any("booked as shared" in n for n in dup["notes"]), dup
    write_ledger(ledger, [])
    assert wait_for(lambda: not any(j["source"] == "ledger" for j in jobs_of(daemon)), timeout=10), jobs_of(daemon)
    assert holder.poll() is None
    assert daemon.status()["exclusive_cpus"] == ""


def test_v1_mlos_run_puts_the_command_in_its_job_cgroup(tmp_path):
    if os.geteuid() != 0 or v1_cgroups_usable():
        pytest.skip(v1_cgroups_usable() or "needs root")
    d = started(Daemon(tmp_path, cgroups="v1")).start()
    p = mlos_run(d, "--cpus", "1", "--label", "in-cgroup")
    assert wait_for(lambda: exec_done(p), timeout=20), p.stderr.read() if p.poll() is not None else ""
    job = job_of_pid(d, p.pid)
    assert job and job["cgroup"] == f"job-{job['job']}"
    cg = Path(f"/proc/{p.pid}/cgroup").read_text()
    assert f"/{d.base}/job-{job['job']}" in cg, cg
