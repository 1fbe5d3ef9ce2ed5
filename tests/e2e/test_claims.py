# SPDX-License-Identifier: Apache-2.0
"""Claims between `mlos run` instances: exclusivity, kill -9 reclamation,
nesting inside an envelope."""
import json
import os
import re
import signal
import sys

from cli_helpers import *  # noqa: F401,F403


def test_exclusive_claim_blocks_and_is_reclaimed(mlos):
    allowed = need_cpus(2)
    n = len(allowed)
    sleeper = mlos.popen("run", "--cpus", "1", "--exclusive", "--", "sleep", "30")
    try:
        wait_for_exec(sleeper, "sleep")
        claims = mlos.status()["claims"]
        assert len(claims) == 1, claims
        c = claims[0]
        assert c["pid"] == sleeper.pid
        assert c["exclusive"] is True
        assert c["envelope"] is True
        assert c["num_cpus"] == 1
        assert c["label"] == "sleep"
        assert c["uid"] == os.geteuid()
        assert c["memory_bytes"] == 0
        held = parse_cpu_list(c["cpus"])
        assert len(held) == 1 and held <= allowed
        # The claim is what the kernel enforces on the sleeper.
        assert proc_pid_field(sleeper.pid, "Cpus_allowed_list") == c["cpus"]

        human = mlos.run("status")
        assert human.returncode == 0, mlos.describe(human)
        assert re.search(rf"^\s+{c['id']}\s+{sleeper.pid}\s+\S+\s+{re.escape(c['cpus'])}\s+run,excl\s", human.stdout,
                         re.M), human.stdout

        # All CPUs, exclusive or shared: one of them is taken.
        for extra in (("--exclusive",), ()):
            r = mlos.run("run", "--cpus", str(n), *extra, "--json", "--", "true")
            assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
            assert "CPUs claimed by other jobs" in r.stderr
            assert run_json_error(r)["error"]["code"] == error_codes()["MLOS_ERR_CPUS_BUSY"]

        # The rest is free.
        seen, _ = probe(mlos, "--cpus", str(n - 1), "--exclusive")
        got = parse_cpu_list(seen["cpus_allowed_list"])
        assert got == allowed - held
        assert seen["env"]["MLOS_CPUS"] == seen["cpus_allowed_list"]

        # Only the sleeper's claim is left.
        assert [c["pid"] for c in mlos.status()["claims"]] == [sleeper.pid]
    finally:
        kill_and_reap(sleeper)
    assert sleeper.returncode == -signal.SIGKILL

    assert mlos.status()["claims"] == []
    r = mlos.run("run", "--cpus", str(n), "--exclusive", "--", "true")
    assert r.returncode == 0, mlos.describe(r)
    assert mlos.status()["claims"] == []


def test_nested_run_stays_inside_envelope(mlos):
    # The inner mlos has the same PID as the outer one (exec), so it nests in
    # the outer envelope instead of competing with it.
    r = mlos.run("run", "--cpus", "1", "--exclusive", "--json", "--",
                 mlos.binary, "run", "--cpus", "1", "--exclusive", "--",
                 sys.executable, "-c", PROBE)
    assert r.returncode == 0, mlos.describe(r)
    outer = json.loads(r.stderr.strip().splitlines()[0])["placement"]
    seen = json.loads(r.stdout)
    assert len(parse_cpu_list(seen["cpus_allowed_list"])) == 1
    assert seen["cpus_allowed_list"] == outer["cpus"]
    assert seen["env"]["MLOS_CPUS"] == outer["cpus"]
    assert seen["env"]["MLOS_CLAIM_ID"] != str(outer["claim_id"])
    assert mlos.status()["claims"] == []


def test_nested_claims_share_owner(mlos):
    p = mlos.popen("run", "--cpus", "1", "--exclusive", "--label", "outer job", "--",
                   mlos.binary, "run", "--cpus", "1", "--exclusive", "--", "sleep", "30")
    try:
        wait_for_exec(p, "sleep")
        claims = mlos.status()["claims"]
        assert len(claims) == 2, claims
        assert {c["pid"] for c in claims} == {p.pid}
        assert len({c["id"] for c in claims}) == 2
        assert len({c["cpus"] for c in claims}) == 1
        assert proc_pid_field(p.pid, "Cpus_allowed_list") == claims[0]["cpus"]
        assert all(c["exclusive"] and c["envelope"] for c in claims)
        assert sorted(c["label"] for c in claims) == ["outer job", "sleep"]
        human = mlos.run("status")
        assert re.search(rf"^\s+\d+\s+{p.pid}\s.*\s+outer job$", human.stdout, re.M), human.stdout
        # Inside, only one CPU is allowed: asking for more fails.
        r = mlos.run("run", "--cpus", "2", "--", "true", prefix=("taskset", "-c", claims[0]["cpus"]))
        assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
        assert "not enough CPUs" in r.stderr
    finally:
        kill_and_reap(p)
    assert mlos.status()["claims"] == []


def test_child_of_run_nests(mlos):
    # A process started by the command (not exec'ed) also nests: its parent
    # owns the envelope.
    r = mlos.run("run", "--cpus", "1", "--exclusive", "--", "sh", "-c",
                 f'"{mlos.binary}" run --cpus 1 --exclusive -- sh -c \'echo "$MLOS_CPUS"\'; exit $?')
    assert r.returncode == 0, mlos.describe(r)
    assert len(parse_cpu_list(r.stdout.strip())) == 1
