# SPDX-License-Identifier: Apache-2.0
"""The set-up scripts' first check (scripts/lib/platform_check.sh): they go
on only as root on Debian 12 or a derivative built on bookworm, and say
plainly why not otherwise (exit 2), before anything is installed. The
machine's /etc/os-release is replaced by fixtures (MLOS_OS_RELEASE)."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT, fixtures_dir

CHECK = REPO_ROOT / "scripts" / "lib" / "platform_check.sh"


def check(release: str, env_extra=None, prefix=(), script=CHECK, release_dir=None):
    release_file = (release_dir or fixtures_dir() / "os-release") / release
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MLOS_OS_RELEASE": str(release_file)}
    env.update(env_extra or {})
    return subprocess.run([*prefix, "bash", "-c", f"source {script}; require_root_on_debian12 setup; echo passed"],
                          env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("release", ["debian-12", "raspios-bookworm", "lmde-6"])
def test_debian_12_and_its_bookworm_derivatives_pass(release):
    if os.geteuid() != 0:
        pytest.skip("the check passes only as root")
    r = check(release)
    assert r.returncode == 0 and r.stdout == "passed\n" and r.stderr == "", r


@pytest.mark.parametrize("release,named", [("ubuntu-24.04", "Ubuntu 24.04.1 LTS"), ("debian-11", "bullseye"),
                                           ("fedora-40", "Fedora Linux 40")])
def test_another_system_is_refused_naming_it_and_what_to_do(release, named):
    if os.geteuid() != 0:
        pytest.skip("as another user the root check answers first")
    r = check(release)
    assert r.returncode == 2 and "passed" not in r.stdout, r
    assert named in r.stderr and "Debian 12 (bookworm)" in r.stderr and "MLOS_SETUP_ANY_DISTRO=1" in r.stderr, r.stderr
    # Asked to, it only warns.
    r = check(release, {"MLOS_SETUP_ANY_DISTRO": "1"})
    assert r.returncode == 0 and r.stdout == "passed\n" and "warning" in r.stderr and named in r.stderr, r


def test_a_user_other_than_root_is_told_to_use_root():
    prefix, script, release_dir = (), CHECK, None
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is needed to run the check as nobody")
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")
        # Copies nobody can read: the checkout may be in root's 0700 home.
        release_dir = Path(tempfile.mkdtemp(prefix="mlos-setup-check-"))
        os.chmod(release_dir, 0o755)
        script = release_dir / CHECK.name
        shutil.copy2(CHECK, script)
        shutil.copy2(fixtures_dir() / "os-release" / "debian-12", release_dir / "debian-12")
        for f in (script, release_dir / "debian-12"):
            os.chmod(f, 0o644)
    try:
        r = check("debian-12", prefix=prefix, script=script, release_dir=release_dir)
    finally:
        if release_dir is not None:
            shutil.rmtree(release_dir, ignore_errors=True)
    assert r.returncode == 2 and "passed" not in r.stdout, r
    assert "must run as root" in r.stderr, r.stderr
