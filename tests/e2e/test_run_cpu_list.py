# SPDX-License-Identifier: Apache-2.0
"""`mlos run` without --cpus (every CPU the caller may use) and with
--cpu-list (exactly those CPUs, still claimed through the book: other
jobs' exclusive claims hold, in the embedded ledger and under mlosd)."""
import subprocess

import pytest

from cli_helpers import *  # noqa: F401,F403
from daemon_helpers import Daemon, Started, wait_for

ERR = error_codes()


def test_without_cpus_a_run_gets_every_cpu_it_may_use(mlos):
    seen, _ = probe(mlos)
    assert parse_cpu_list(seen["cpus_allowed_list"]) == allowed_cpus()
    assert parse_cpu_list(seen["env"]["MLOS_CPUS"]) == allowed_cpus()


def test_without_cpus_a_run_is_bounded_by_taskset(mlos):
    cpus = need_cpus(2)
    one = max(cpus)
    seen, _ = probe(mlos, prefix=("taskset", "-c", str(one)))
    assert seen["cpus_allowed_list"] == str(one)


def test_dry_run_defaults_and_cpu_list_on_a_described_machine(mlos):
    j = dry_run(mlos)
    assert len(parse_cpu_list(j["placement"]["cpus"])) == 64  # 2 x 2 x 8 x 2
    j = dry_run(mlos, env={"MLOS_ALLOWED_CPUS": "0-5"})
    assert j["placement"]["cpus"] == "0-5"
    j = dry_run(mlos, "--cpu-list", "0,2-3,40")
    assert j["placement"]["cpus"] == "0,2-3,40"
    j = dry_run(mlos, "--cpu-list", "9", expect_rc=EXIT_RUN_FAILED, env={"MLOS_ALLOWED_CPUS": "0-5"})
    assert j["error"]["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"]
    assert j["error"]["message"] == "--cpu-list 9: CPU(s) 9 not among the CPUs this process may use (0-5)"


def test_cpu_list_pins_the_command_to_exactly_those_cpus(mlos):
    cpus = need_cpus(2)
    chosen = sorted(cpus)[-1]
    seen, _ = probe(mlos, "--cpu-list", str(chosen))
    assert seen["cpus_allowed_list"] == str(chosen)
    assert seen["env"]["MLOS_CPUS"] == str(chosen)
    assert seen["env"]["MLOS_RECOMMENDED_THREADS"] == "1"


@pytest.mark.parametrize("value, message", [
    ("x", '--cpu-list "x" is not a CPU list such as 0,2-3'),
    ("3-1", '--cpu-list "3-1" is not a CPU list such as 0,2-3'),
    ("0,100000", "CPU(s) 100000 not among the CPUs this process may use"),
])
def test_cpu_list_errors(mlos, value, message):
    r = mlos.run("run", "--cpu-list", value, "--json", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert message in r.stderr
    assert run_json_error(r)["error"]["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"]
    assert not mlos.ledger.exists()


def hold_exclusively(mlos, cpu, env=None):
    p = mlos.popen("run", "--cpu-list", str(cpu), "--exclusive", "--", "sleep", "600", env=env)
    wait_for_exec(p, "sleep", timeout=60)
    return p


def test_cpu_list_honours_another_jobs_exclusive_claim_in_the_ledger(mlos):
    cpus = need_cpus(2)
    held = sorted(cpus)[-1]
    holder = hold_exclusively(mlos, held)
    try:
        r = mlos.run("run", "--cpu-list", str(held), "--json", "--", "true")
        assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
        assert run_json_error(r)["error"]["code"] == ERR["MLOS_ERR_CPUS_BUSY"]
        # Without a list, the default (every CPU) cannot be had either.
        r = mlos.run("run", "--json", "--", "true")
        assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
        assert run_json_error(r)["error"]["code"] == ERR["MLOS_ERR_CPUS_BUSY"]
        # The other CPUs are free.
        free = sorted(cpus - {held})[0]
        seen, _ = probe(mlos, "--cpu-list", str(free))
        assert seen["cpus_allowed_list"] == str(free)
    finally:
        kill_and_reap(holder)


def test_cpu_list_honours_another_jobs_exclusive_claim_under_mlosd(mlos, tmp_path):
    cpus = need_cpus(2)
    held = sorted(cpus)[-1]
    started = Started()
    try:
        daemon = started(Daemon(tmp_path, cgroups="none")).start()
        env = daemon.client_env()
        holder = started(hold_exclusively(mlos, held, env=env))
        job = wait_for(lambda: next((j for j in daemon.status()["jobs"] if j["pid"] == holder.pid), None), timeout=60)
        assert job and job["cpus"] == str(held) and job["exclusive"], daemon.status()
        r = mlos.run("run", "--cpu-list", str(held), "--json", "--", "true", env=env)
        assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
        assert run_json_error(r)["error"]["code"] == ERR["MLOS_ERR_CPUS_BUSY"]
        free = sorted(cpus - {held})[0]
        r = mlos.run("run", "--cpu-list", str(free), "-v", "--", "sh", "-c", 'echo "$MLOS_ENGINE $MLOS_CPUS"', env=env)
        assert r.returncode == 0, mlos.describe(r)
        assert r.stdout == f"daemon {free}\n"
    finally:
        started.stop_all()
