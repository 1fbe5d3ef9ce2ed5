# SPDX-License-Identifier: Apache-2.0
"""Issue 47, finding 6: a GPU share file is trusted only when the job's user
alone can have made it. A user without XDG_RUNTIME_DIR (cron, su, batch
steps, containers) keeps the runtime directory at /tmp/mlos-<uid>, a name
anyone can take first; `mlos run --gpu-memory` refuses one another user
made, and the interposer refuses to map a share file another user owns or
may write, whoever names it (docs/gpu.md, docs/security.md)."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from cli_helpers import EXIT_RUN_FAILED, error_codes
from daemon_helpers import Daemon
from test_gpu_sharing import CLIENT, INTERPOSER, OOM, client, gpus, ops  # noqa: F401 (gpus: a fixture)

ERR = error_codes()
pytestmark = pytest.mark.skipif(not (CLIENT.exists() and INTERPOSER.exists()),
                                reason="this build has no GPU sharing interposer or fakes (no cuda.h or nvml.h)")
VICTIM = 47006  # a uid of no one's: its runtime directory is /tmp/mlos-47006
ATTACKER = 65534  # nobody, who made that directory first


def reachable_by_others(path: Path) -> bool:
    return all(os.stat(d).st_mode & 0o001 for d in path.resolve().parents)


@pytest.fixture(params=["embedded", "daemon"])
def victim(request, mlos, gpus, tmp_path):  # noqa: F811
    """Runs mlos as VICTIM with no XDG_RUNTIME_DIR nor MLOS_RUNTIME_DIR, so
    that it picks /tmp/mlos-VICTIM; yields that path and the runner. With
    mlosd (a root one, its socket where VICTIM reaches it), no ledger in
    the runtime directory stands in the way: only the share file uses it."""
    if os.geteuid() != 0:
        pytest.skip("running as another uid needs root")
    if not (reachable_by_others(Path(mlos.binary)) and reachable_by_others(INTERPOSER)):
        pytest.skip("the build tree is closed to other users")
    runtime = Path(f"/tmp/mlos-{VICTIM}")
    shutil.rmtree(runtime, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix="mlos-victim-"))
    os.chmod(scratch, 0o755)
    shutil.copy(gpus["MLOS_FAKE_NVML"], scratch / "gpus.json")
    (scratch / "home").mkdir()
    os.chown(scratch / "home", VICTIM, VICTIM)
    env = mlos.env({"MLOS_MODE": "embedded", "MLOS_FAKE_NVML": str(scratch / "gpus.json"),
                    "MLOS_TUNE_DIR": str(scratch / "home" / "tune")})
    for name in ("MLOS_RUNTIME_DIR", "XDG_RUNTIME_DIR", "MLOS_FAKE_GPU_CLOCK"):
        env.pop(name, None)
    daemon = None
    if request.param == "daemon":
        daemon = Daemon(tmp_path)
        daemon.socket = scratch / "mlosd.sock"
        daemon.start()
        env.update(MLOS_MODE="daemon", MLOS_DAEMON_SOCKET=str(daemon.socket))

    def run(*args):
        return subprocess.run([mlos.binary, *args], env=env, user=VICTIM, group=VICTIM, extra_groups=[],
                              cwd=scratch / "home", stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)

    yield runtime, run
    if daemon:
        daemon.stop()
    shutil.rmtree(runtime, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def tree(root: Path) -> dict:
    """Every path under root with its owner, mode and contents."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = os.lstat(p)
        out[str(p)] = (st.st_uid, st.st_mode, p.read_bytes() if p.is_file() else None)
    return out


def test_a_runtime_dir_another_user_made_first_is_refused(victim):
    runtime, run_as_victim = victim
    # Made by the attacker, open for the victim to write in, holding a share
    # file of the attacker's.
    (runtime / "gpushare").mkdir(parents=True)
    planted = runtime / "gpushare" / "planted.share"
    planted.write_bytes(b"\0" * 4096)
    for p, mode in ((runtime, 0o777), (runtime / "gpushare", 0o777), (planted, 0o666)):
        os.chown(p, ATTACKER, ATTACKER)
        os.chmod(p, mode)
    before = tree(runtime)
    r = run_as_victim("run", "--json", "--gpus", "1", "--gpu-memory", "100M", "--", "echo", "ran")
    assert r.returncode == EXIT_RUN_FAILED, r.stderr
    assert "ran" not in r.stdout
    err = json.loads(r.stderr.strip().splitlines()[-1])["error"]
    assert err["code"] == ERR["MLOS_ERR_PERMISSION"], err
    assert err["message"] == (f"runtime directory {runtime} belongs to uid {ATTACKER}, "
                              "neither this user nor root; refusing to use it"), err
    assert tree(runtime) == before, "nothing in it was removed, created or changed"


def test_a_runtime_dir_of_the_users_own_is_made_and_used(victim):
    runtime, run_as_victim = victim
    r = run_as_victim("run", "--gpus", "1", "--gpu-memory", "100M", "--", "sh", "-c",
                      'echo "state=$MLOS_GPUSHARE_STATE"')
    assert r.returncode == 0, r.stderr
    state = Path(r.stdout.split("state=", 1)[1].strip())
    assert state.parent == runtime / "gpushare", r.stdout
    for d in (runtime, runtime / "gpushare"):
        st = os.lstat(d)
        assert (st.st_uid, stat.S_ISDIR(st.st_mode), stat.S_IMODE(st.st_mode)) == (VICTIM, True, 0o700), d


def test_the_interposer_maps_no_share_file_another_user_owns_or_may_write(mlos, gpus, tmp_path):  # noqa: F811
    # A genuine share file (limits 100 MiB, no process), as mlos run made it.
    planted = tmp_path / "planted.share"
    r = mlos.run("run", "--gpus", "1", "--gpu-memory", "100M", "--", "sh", "-c",
                 f'cp "$MLOS_GPUSHARE_STATE" {planted}', env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0, mlos.describe(r)
    os.chmod(planted, 0o666)
    reason = "is writable by group or others"
    if os.geteuid() == 0:
        os.chown(planted, ATTACKER, ATTACKER)
        reason = f"belongs to uid {ATTACKER}, neither this user nor root"
    before = planted.read_bytes()
    env = mlos.env({"LD_PRELOAD": str(INTERPOSER), "MLOS_GPUSHARE_STATE": str(planted)})
    r = subprocess.run([*client("dlsym"), "alloc:1048576"], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # Refused, not run unshared: the job's limits are unknown.
    assert ops(r.stdout)[0]["result"] == OOM, r.stdout
    assert (f"mlos-gpushare: GPU share file {planted} {reason}; refusing to map it; "
            "GPU allocations are refused") in r.stderr, r.stderr
    assert planted.read_bytes() == before, "no slot was taken in it"
