# SPDX-License-Identifier: Apache-2.0
"""`mlos run` and the CLI: exit codes and error messages as documented in
docs/cli.md."""
import json
import re
import signal
import pytest
from conftest import REPO_ROOT

from cli_helpers import *  # noqa: F401,F403


def test_exit_status_passthrough(mlos):
    r = mlos.run("run", "--cpus", "1", "--", "sh", "-c", "exit 7")
    assert r.returncode == 7, mlos.describe(r)
    assert r.stderr == ""
    r = mlos.run("run", "--cpus", "1", "--", "true")
    assert r.returncode == 0, mlos.describe(r)


def test_signal_death_is_seen_by_parent(mlos):
    # The command replaced mlos (exec), so the parent sees the signal itself.
    r = mlos.run("run", "--cpus", "1", "--", "sh", "-c", "kill -9 $$")
    assert r.returncode == -signal.SIGKILL, mlos.describe(r)


def test_command_not_found(mlos):
    r = mlos.run("run", "--cpus", "1", "--", "mlos-e2e-no-such-command")
    assert r.returncode == EXIT_NOT_FOUND, mlos.describe(r)
    assert "mlos-e2e-no-such-command" in r.stderr
    # The claim was dropped, not left for the pruner: the file says so.
    assert mlos.ledger.exists()
    assert ledger_claims(mlos) == []


def test_command_not_executable(mlos, tmp_path):
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    r = mlos.run("run", "--cpus", "1", "--", str(script))
    assert r.returncode == EXIT_CANNOT_EXEC, mlos.describe(r)
    assert str(script) in r.stderr
    assert mlos.ledger.exists()
    assert ledger_claims(mlos) == []
    # A directory is not executable either.
    r = mlos.run("run", "--cpus", "1", "--", str(tmp_path))
    assert r.returncode == EXIT_CANNOT_EXEC, mlos.describe(r)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--cpus", "1"), id="no-command"),
        pytest.param(("--cpus", "1", "--"), id="empty-command"),
    ],
)
def test_no_command(mlos, args):
    r = mlos.run("run", *args)
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "no command given" in r.stderr
    assert not mlos.ledger.exists()


def test_cpus_zero_is_usage_error(mlos):
    r = mlos.run("run", "--cpus", "0", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "--cpus" in r.stderr
    # The range in the message is the real one (>= 1).
    assert re.search(r"\b0 not in range 1 to 2147483647\b", r.stderr), r.stderr
    assert r.stdout == ""
    assert not mlos.ledger.exists()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--cpu-list",), id="cpu-list-without-value"),
        pytest.param(("--cpus", "1", "--cpu-list", "0"), id="cpus-and-cpu-list"),
        pytest.param(("--cpus", "x"), id="cpus-not-a-number"),
        pytest.param(("--cpus", "1", "--bogus"), id="unknown-option"),
    ],
)
def test_run_parse_errors(mlos, args):
    r = mlos.run("run", *args, "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert r.stderr.strip() != ""


def test_cpus_too_many(mlos):
    r = mlos.run("run", "--cpus", "999", "--json", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "not enough CPUs" in r.stderr
    assert f"may use {len(allowed_cpus())} " in r.stderr
    j = run_json_error(r)
    assert j["schema_version"] == 1
    assert j["command"] == "run"
    assert sorted(j["error"]) == ["code", "message", "name"]
    assert j["error"]["code"] == error_codes()["MLOS_ERR_INSUFFICIENT_CPUS"]
    # The documented format: "mlos <command>: <error name>: <details>".
    assert r.stderr.splitlines()[0] == f"mlos run: {j['error']['name']}: {j['error']['message']}"
    assert r.stdout == ""


def test_numa_node_does_not_exist(mlos):
    topo = mlos.json("topo", "--json")
    missing = max(7, max(n["os_index"] for n in topo["nodes"]) + 1)
    r = mlos.run("run", "--cpus", "1", "--numa", str(missing), "--json", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "invalid NUMA node" in r.stderr
    assert f"NUMA node {missing} does not exist" in r.stderr
    assert run_json_error(r)["error"]["code"] == error_codes()["MLOS_ERR_INVALID_NUMA_NODE"]


@pytest.mark.parametrize("value", ["x", "-1", "1x", ""])
def test_numa_not_an_index(mlos, value):
    r = mlos.run("run", "--cpus", "1", "--numa", value, "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "--numa" in r.stderr


def test_mem_too_much(mlos):
    r = mlos.run("run", "--cpus", "1", "--mem", "1000T", "--json", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "not enough memory" in r.stderr
    assert run_json_error(r)["error"]["code"] == error_codes()["MLOS_ERR_INSUFFICIENT_MEMORY"]
    assert ledger_claims(mlos) == []


@pytest.mark.parametrize("value", ["12Q", "G", "-1G", "1.5G", "99999999999T"])
def test_mem_bad_size(mlos, value):
    r = mlos.run("run", "--cpus", "1", "--mem", value, "--json", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert f'size "{value}"' in r.stderr
    assert run_json_error(r)["error"]["code"] == error_codes()["MLOS_ERR_INVALID_ARGUMENT"]


def test_no_subcommand_is_usage_error(mlos):
    r = mlos.run()
    assert r.returncode == EXIT_USAGE, mlos.describe(r)
    assert "subcommand" in r.stderr.lower()


@pytest.mark.parametrize("args", [("frobnicate",), ("topo", "--bogus"), ("status", "extra")])
def test_unknown_arguments_are_usage_errors(mlos, args):
    r = mlos.run(*args)
    assert r.returncode == EXIT_USAGE, mlos.describe(r)


def test_help_mentions_exit_codes(mlos):
    r = mlos.run("--help")
    assert r.returncode == 0, mlos.describe(r)
    for text in ("Exit codes", "125", "126", "127", "run", "topo", "status", "MLOS_RUNTIME_DIR"):
        assert text in r.stdout, text
    for sub in ("run", "topo", "status"):
        r = mlos.run(sub, "--help")
        assert r.returncode == 0, mlos.describe(r)


def test_version(mlos):
    text = (REPO_ROOT / "include" / "mlos" / "version.h").read_text()
    version = re.search(r'#define MLOS_VERSION_STRING "([^"]+)"', text).group(1)
    r = mlos.run("--version")
    assert r.returncode == 0, mlos.describe(r)
    # "mlos VERSION (commit C)": test_cli_usability.py checks C.
    assert r.stdout.startswith(f"mlos {version} (commit ")
