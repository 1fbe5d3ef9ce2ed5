# SPDX-License-Identifier: Apache-2.0
"""`mlos status`: listing claims, and a corrupt ledger that is reported and
left untouched."""
import json

from cli_helpers import *  # noqa: F401,F403


def test_status_json_empty(mlos):
    j = mlos.status()
    assert j["schema_version"] == 1
    assert j["claims"] == []
    assert j["ledger"] == str(mlos.ledger)
    r = mlos.run("status")
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout == f"ledger: {mlos.ledger}\nno claims\n"


def test_status_corrupt_ledger(mlos):
    garbage = b"garbage{{ \x00 not a ledger\n"
    mlos.ledger.write_bytes(garbage)
    r = mlos.run("status")
    assert r.returncode == 1, mlos.describe(r)
    assert str(mlos.ledger) in r.stderr
    assert "persistent state corrupt" in r.stderr
    assert "To recover, move the file aside" in r.stderr
    assert mlos.ledger.read_bytes() == garbage

    r = mlos.run("status", "--json")
    assert r.returncode == 1, mlos.describe(r)
    j = json.loads(r.stdout)
    assert j["schema_version"] == 1
    assert j["error"]["code"] == error_codes()["MLOS_ERR_STATE_CORRUPT"]
    assert str(mlos.ledger) in j["error"]["message"]

    # run refuses too (it cannot tell which CPUs are claimed), and keeps the file.
    marker = mlos.runtime / "ran"
    r = mlos.run("run", "--cpus", "1", "--", "touch", str(marker))
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert str(mlos.ledger) in r.stderr
    assert not marker.exists()
    r = mlos.run("run", "--cpus", "1", "--dry-run")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert mlos.ledger.read_bytes() == garbage
    assert sorted(p.name for p in mlos.runtime.iterdir()) == ["claims.json", "claims.lock"]

    # Recovery as the message says: move it aside.
    mlos.ledger.rename(mlos.runtime / "claims.json.bad")
    assert mlos.status()["claims"] == []
    r = mlos.run("run", "--cpus", "1", "--", "true")
    assert r.returncode == 0, mlos.describe(r)
