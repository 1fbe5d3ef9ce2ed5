# SPDX-License-Identifier: Apache-2.0
"""Hostile input to the CLI: text that is not UTF-8 on its way into JSON,
unknown subcommands and options. Each case ends in a documented exit code
and message (docs/cli.md), never in an abort (134) from an uncaught
exception.

Output is read as bytes: the plain-text messages on stderr keep the bytes
they were given, which are not UTF-8 here."""
import json
import os
import subprocess

import pytest

from cli_helpers import EXIT_RUN_FAILED, EXIT_USAGE, error_codes, ledger_claims

BAD = os.fsdecode(b"\xff")  # one byte that is never UTF-8, as argv/env text
FFFD = "\ufffd"


def run_bytes(mlos, *args, env=None):
    """mlos.run, without decoding stdout and stderr."""
    return subprocess.run(mlos.argv(args), env=mlos.env(env), stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60)


def describe(r):
    return f"argv={r.args!r} rc={r.returncode}\n--- stdout ---\n{r.stdout!r}\n--- stderr ---\n{r.stderr!r}"


def last_json_line(data: bytes) -> dict:
    return json.loads(data.strip().splitlines()[-1].decode("utf-8"))


# -- --label and CMD's path ---------------------------------------------------

def test_label_that_is_not_utf8_is_a_usage_error(mlos):
    r = run_bytes(mlos, "run", "--cpus", "1", "--label", "ok" + BAD, "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, describe(r)
    assert b"--label is not valid UTF-8 (byte 0xFF at offset 2)" in r.stderr, describe(r)
    assert ledger_claims(mlos) == []


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_label_that_is_not_utf8_with_json_gives_a_json_error(mlos, dry_run):
    args = ["run", "--cpus", "1", "--json", "--label", BAD] + (["--dry-run"] if dry_run else []) + ["--", "true"]
    r = run_bytes(mlos, *args)
    assert r.returncode == EXIT_RUN_FAILED, describe(r)
    # --dry-run prints the error on stdout, a real run as the last line of stderr.
    j = json.loads(r.stdout) if dry_run else last_json_line(r.stderr)
    assert j["command"] == "run"
    assert j["error"]["code"] == error_codes()["MLOS_ERR_INVALID_ARGUMENT"]
    assert "--label" in j["error"]["message"]


def test_command_path_that_is_not_utf8_runs_with_a_repaired_label(mlos, tmp_path):
    # A script under a name that is not UTF-8; it prints the ledger while
    # its claim is held, and the placement line --json printed before it.
    script = os.fsencode(tmp_path) + b"/train\xff.sh"
    with open(script, "wb") as f:
        f.write(b'#!/bin/sh\ncat "$MLOS_RUNTIME_DIR/claims.json"\n')
    os.chmod(script, 0o755)
    r = subprocess.run([mlos.binary, "run", "--cpus", "1", "--json", "--", script, b"arg\xfe"],
                       env=mlos.env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert r.returncode == 0, describe(r)
    claims = json.loads(r.stdout)["claims"]
    assert [c["label"] for c in claims] == [os.fsdecode(script).replace(BAD, FFFD)]
    placement = last_json_line(r.stderr)
    assert placement["command"] == [os.fsdecode(script).replace(BAD, FFFD), "arg" + FFFD]


# -- other outside text reaching --json ------------------------------------------

def test_json_error_quoting_bytes_that_are_not_utf8_still_parses(mlos):
    r = run_bytes(mlos, "run", "--cpus", "1", "--mem", "1" + BAD, "--json", "--dry-run")
    assert r.returncode == EXIT_RUN_FAILED, describe(r)
    j = json.loads(r.stdout)
    assert j["error"]["code"] == error_codes()["MLOS_ERR_INVALID_ARGUMENT"]
    assert f'size "1{FFFD}"' in j["error"]["message"]
    assert b'size "1\xff"' in r.stderr  # the text message keeps the bytes


def test_status_json_with_a_runtime_dir_that_is_not_utf8(mlos, tmp_path):
    runtime = os.fsencode(tmp_path) + b"/rt\xff"
    os.mkdir(runtime)
    r = run_bytes(mlos, "status", "--json", "--source", "ledger", env={"MLOS_RUNTIME_DIR": os.fsdecode(runtime)})
    assert r.returncode == 0, describe(r)
    j = json.loads(r.stdout)
    assert j["ledger"].startswith(os.fsdecode(runtime).replace(BAD, FFFD) + "/")
    assert j["claims"] == []


def test_status_json_error_naming_a_socket_that_is_not_utf8(mlos, tmp_path):
    socket = os.fsdecode(os.fsencode(tmp_path) + b"/no\xff.sock")
    r = run_bytes(mlos, "status", "--json", "--source", "daemon", "--socket", socket)
    assert r.returncode == 1, describe(r)
    j = json.loads(r.stdout)
    assert j["error"]["code"] == error_codes()["MLOS_ERR_DAEMON_UNAVAILABLE"]
    assert socket.replace(BAD, FFFD) in j["error"]["message"]


def test_topo_json_error_naming_a_topology_file_that_is_not_utf8(mlos, tmp_path):
    xml = os.fsdecode(os.fsencode(tmp_path) + b"/no\xff.xml")
    r = run_bytes(mlos, "topo", "--json", env={"MLOS_TOPOLOGY": "xml:" + xml})
    assert r.returncode == 1, describe(r)
    j = json.loads(r.stdout)
    assert j["command"] == "topo" and "error" in j


# -- unknown subcommands and options ---------------------------------------------

@pytest.mark.parametrize("word", ["nosuchcmd", "Run", "top0"])
def test_unknown_subcommand_is_named_and_the_valid_ones_listed(mlos, word):
    r = mlos.run(word, "--json")
    assert r.returncode == EXIT_USAGE, mlos.describe(r)
    assert f'unknown subcommand "{word}"' in r.stderr
    for sub in ("topo", "status", "top", "daemon", "run"):
        assert sub in r.stderr
    assert "A subcommand is required" not in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("args, rc", [
    (("topo", "--bad-flag"), EXIT_USAGE),
    (("status", "--bad-flag"), EXIT_USAGE),
    (("status", "--source"), EXIT_USAGE),              # missing value
    (("top", "--bad-flag"), EXIT_USAGE),
    (("top", "--interval", "0"), EXIT_USAGE),          # out of range (CLI11: 105)
    (("top", "--iterations", "x"), EXIT_USAGE),        # not a number
    (("run", "--bad-flag", "--cpus", "1", "--", "true"), EXIT_RUN_FAILED),
    (("run", "--cpus", "1", "--json", "--json=maybe", "--", "true"), EXIT_RUN_FAILED),
    (("--bad-flag",), EXIT_USAGE),
], ids=lambda v: v if isinstance(v, int) else "_".join(v))
def test_a_bad_option_exits_with_the_documented_usage_code(mlos, args, rc):
    r = mlos.run(*args)
    assert r.returncode == rc, mlos.describe(r)
    assert r.stderr.strip() != ""


def test_daemon_bad_option_exits_with_the_usage_code(mlos):
    r = mlos.run("daemon", "--bad-flag")
    assert r.returncode == EXIT_USAGE, mlos.describe(r)
