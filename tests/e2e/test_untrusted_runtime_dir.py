# SPDX-License-Identifier: Apache-2.0
"""A runtime directory others may write to is refused: shared runs go ahead
unrecorded with a warning (other claims still respected), exclusive ones
fail, and nothing is written into the directory."""
import os
import sys

from cli_helpers import *  # noqa: F401,F403


def test_world_writable_runtime_dir_is_not_used(mlos):
    mlos.runtime.mkdir(parents=True, exist_ok=True)
    os.chmod(mlos.runtime, 0o777)
    r = mlos.run("run", "--cpus", "1", "--", sys.executable, "-c", "print('ran')")
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout == "ran\n"
    assert "warning: claim not recorded" in r.stderr
    assert "writable by group or others" in r.stderr
    r = mlos.run("run", "--cpus", "1", "--exclusive", "--", "true")
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    assert "exclusive CPUs need the claim ledger" in r.stderr
    assert sorted(os.listdir(mlos.runtime)) == []
    r = mlos.run("status")
    assert r.returncode == 1, mlos.describe(r)
    assert "refusing to use it" in r.stderr
