# SPDX-License-Identifier: Apache-2.0
"""Policy modules from the client side, against a real mlosd that uses this
build's policies and host (Daemon passes --policy-dir build/policies and
--policy-host build/bin/mlos-policyhost): the C calls (through
tests/daemon/policy_client.c), `mlos run --policy`, `mlos policy
list|info|load|unload`, and the POLICIES of `mlos status`. Most daemons
here attach no default policies (config policies.defaults = []), so every
piece of advice a test reads comes from the policy it asked for; the tests
of the defaults use mlosd's own configuration.

The Python calls under mlosd (ctx.request_policy, ctx.advice, the thread
governor following advice) are in tests/python/test_policies.py: they need
the interpreter the mlos_training package is installed in."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cli_helpers import EXIT_RUN_FAILED, error_codes, ledger_claims, run_json_error, runnable_by_nobody
from conftest import build_dir
from daemon_helpers import Daemon, start_job_client, wait_for

ERR = error_codes()
POLICY_DIR = build_dir() / "policies"
# The sanitizer run (scripts/sanitize_daemon.sh) builds mlosd and its
# clients only: no policy host, no policies.
pytestmark = pytest.mark.skipif(not (build_dir() / "bin" / "mlos-policyhost").exists() or not POLICY_DIR.is_dir(),
                                reason="this build has no policy host or policies (a sanitizer build)")


def no_defaults_config(tmp_path: Path) -> Path:
    path = tmp_path / "mlosd.json"
    path.write_text(json.dumps({"policies": {"defaults": []}}))
    return path


@pytest.fixture
def daemon(tmp_path):
    """mlosd without default policies."""
    d = Daemon(tmp_path, cgroups="none", extra_args=["-c", str(no_defaults_config(tmp_path))]).start()
    yield d
    d.stop()


@pytest.fixture
def daemon_with_defaults(tmp_path):
    """mlosd with its built-in default policies (phase-weights, thread-governor)."""
    d = Daemon(tmp_path, cgroups="none").start()
    yield d
    d.stop()


def policy_client(daemon, name, config="-"):
    """Runs tests/daemon/policy_client.c; returns (CompletedProcess, its JSON line)."""
    r = subprocess.run([str(build_dir() / "bin" / "mlos_policy_client"), name, config], env=daemon.client_env(),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip(), f"rc={r.returncode} stderr={r.stderr}"
    return r, json.loads(r.stdout.strip().splitlines()[-1])


def daemon_env(daemon):
    """Environment of an mlos command that must use `daemon`."""
    return {"MLOS_MODE": "daemon", "MLOS_DAEMON_SOCKET": str(daemon.socket)}


# -- the C API ------------------------------------------------------------

def test_c_client_gets_the_example_policys_thread_advice(daemon):
    r, out = policy_client(daemon, "example", '{"threads": 1}')
    assert r.returncode == 0, (out, r.stderr)
    assert out["request"] == 0 and out["advice"] == 0, out
    # Advised by the policy (the grant's own count would say threads_advised 0).
    assert out["threads"] == 1 and out["threads_advised"] == 1, out
    assert out["policies"] == 1 and out["policies_failed"] == 0, out
    assert out["release"] == 0, out
    # The job released its resources: mlosd holds nothing for it any more.
    assert wait_for(lambda: daemon.status()["jobs"] == []), daemon.status()["jobs"]


def test_advice_without_policies_is_the_grants_thread_count(daemon):
    """No policy attached: the advice is the grant's count, not advised."""
    c = daemon.client()
    try:
        granted = c.call("request", num_cpus=1, exclusive=False)
        assert granted["ok"], granted
        advice = c.call("advice", job=granted["job"])
    finally:
        c.close()
    assert advice["ok"], advice
    a = advice["advice"]
    assert a["threads_advised"] is False and a["threads"] == max(1, granted["physical_cores"]), a
    assert a["policies"] == [] and a["failed_policies"] == [] and a["threads_by"] is None, a


def test_unknown_policy_is_not_found_naming_the_directory(daemon):
    r, out = policy_client(daemon, "no-such-policy", "{}")
    assert r.returncode == 1
    assert out["request"] == ERR["MLOS_ERR_NOT_FOUND"], out
    assert str(POLICY_DIR) in out["request_error"] and "no-such-policy" in out["request_error"], out
    assert out["advice"] == 0 and out["policies"] == 0, out  # the job itself is fine


def test_bad_config_is_invalid_argument_naming_the_key(daemon):
    r, out = policy_client(daemon, "example", '{"bogus": 1}')
    assert out["request"] == ERR["MLOS_ERR_INVALID_ARGUMENT"], out
    assert "bogus" in out["request_error"], out
    r, out = policy_client(daemon, "example", '{"threads": 0}')
    assert out["request"] == ERR["MLOS_ERR_INVALID_ARGUMENT"], out
    assert '"threads"' in out["request_error"], out
    assert out["policies"] == 0, out  # refused: not attached


def test_a_config_that_is_not_an_object_is_refused_by_the_library(daemon):
    r, out = policy_client(daemon, "example", "[1, 2]")
    assert out["request"] == ERR["MLOS_ERR_INVALID_ARGUMENT"], out
    assert "not a JSON object" in out["request_error"], out
    assert "mlosd:" not in out["request_error"], out  # never sent


# -- embedded mode (no mlosd): the library's own policy hosts, found next
# to this build's libmlos (build/bin/mlos-policyhost, build/policies) ------

def embedded_client(tmp_path, name, config, *more, **extra):
    """policy_client in embedded mode (`more`: its CPUS [THREADS]); returns
    (CompletedProcess, its JSON line)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(runtime), MLOS_DEFAULT_POLICIES="", **extra)
    r = subprocess.run([str(build_dir() / "bin" / "mlos_policy_client"), name, config, *more], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90)
    assert r.stdout.strip(), f"rc={r.returncode} stderr={r.stderr}"
    return r, json.loads(r.stdout.strip().splitlines()[-1])


def test_embedded_mode_serves_the_c_clients_policy_itself(tmp_path):
    r, out = embedded_client(tmp_path, "example", '{"threads": 1}')
    assert r.returncode == 0, (out, r.stderr)
    assert out["threads"] == 1 and out["threads_advised"] == 1, out
    assert out["policies"] == 1 and out["policies_failed"] == 0 and out["release"] == 0, out


def test_embedded_mode_refuses_unknown_policies_and_says_when_no_host_is_installed(tmp_path):
    r, out = embedded_client(tmp_path, "no-such-policy", "{}")
    assert out["request"] == ERR["MLOS_ERR_NOT_FOUND"] and str(POLICY_DIR) in out["request_error"], out
    r, out = embedded_client(tmp_path, "example", "{}", MLOS_POLICY_HOST="/nonexistent/mlos-policyhost")
    assert out["request"] == ERR["MLOS_ERR_UNSUPPORTED"], out
    assert "/nonexistent/mlos-policyhost" in out["request_error"], out
    assert out["advice"] == ERR["MLOS_ERR_UNSUPPORTED"], out  # the job itself was granted


def test_embedded_thread_governor_advises_a_c_program_fewer_threads_next_to_a_cpu_hog(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) != 2:
        pytest.skip("written for 2 CPUs: the job asks for all of them")
    hog = subprocess.Popen(["taskset", "-c", str(cpus[0]), sys.executable, "-c", "while True: pass"])
    try:
        # Whatever else loads the machine, a CPU taken by the hog leaves at
        # most one CPU to the job, and the policy must say so.
        r, out = embedded_client(tmp_path, "thread-governor", "-", "2", "1")
    finally:
        hog.kill()
        hog.wait()
    assert out["request"] == 0 and out["advice"] == 0, out
    assert out["threads"] == 1 and out["threads_advised"] == 1, out


# -- mlos run --policy ------------------------------------------------------

# Reads the advice of the job `mlos run` claimed (MLOS_CLAIM_ID) over the
# socket (anyone may), until the policy advised threads, and prints it.
ADVICE_PROBE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from daemon_helpers import Client
c = Client(os.environ["MLOS_DAEMON_SOCKET"])
job = int(os.environ["MLOS_CLAIM_ID"])
deadline = time.monotonic() + 10
while True:
    r = c.call("advice", job=job)
    if not r["ok"] or r["advice"]["threads_advised"] or time.monotonic() > deadline:
        break
    time.sleep(0.05)
print(json.dumps({"job": job, "engine": os.environ["MLOS_ENGINE"], "reply": r}))
"""


def test_mlos_run_policy_attaches_it_to_the_run(mlos, daemon):
    here = str(Path(__file__).parent)
    r = mlos.run("run", "--cpus", "1", "--json", "--policy", 'example={"threads":1}', "--",
                 sys.executable, "-c", ADVICE_PROBE, here, env=daemon_env(daemon))
    assert r.returncode == 0, mlos.describe(r)
    out = json.loads(r.stdout)
    assert out["engine"] == "daemon"
    reply = out["reply"]
    assert reply["ok"], reply
    a = reply["advice"]
    assert a["threads"] == 1 and a["threads_advised"] is True and a["threads_by"] == "example", a
    assert a["policies"] == ["example"] and a["failed_policies"] == [], a
    placement = json.loads(r.stderr.strip().splitlines()[0])  # --json: the placement line before CMD
    assert placement["policies"] == ["example"], placement


def test_mlos_run_with_an_unknown_policy_fails_and_grants_nothing(mlos, daemon):
    r = mlos.run("run", "--cpus", "1", "--json", "--policy", "no-such-policy", "--", "true", env=daemon_env(daemon))
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    err = run_json_error(r)["error"]
    assert err["code"] == ERR["MLOS_ERR_NOT_FOUND"] and str(POLICY_DIR) in err["message"], err
    assert daemon.status()["jobs"] == []


def test_mlos_run_policy_config_must_be_a_json_object(mlos, daemon):
    for spec in ("example=[1]", "example={", "=1"):
        r = mlos.run("run", "--cpus", "1", "--policy", spec, "--", "true", env=daemon_env(daemon))
        assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
        assert "INVALID_ARGUMENT" in r.stderr or "invalid argument" in r.stderr.lower(), mlos.describe(r)
    assert daemon.status()["jobs"] == []


def test_mlos_run_policy_in_embedded_mode_reaches_the_commands_jobs(mlos):
    # The command's own job gets example from mlos run (MLOS_JOB_POLICIES)
    # and asks for phase-weights itself.
    env = {"MLOS_MODE": "embedded", "MLOS_DEFAULT_POLICIES": ""}
    r = mlos.run("run", "--cpus", "1", "--verbose", "--policy", 'example={"threads":1}', "--",
                 str(build_dir() / "bin" / "mlos_policy_client"), "phase-weights", "-", env=env)
    assert r.returncode == 0, mlos.describe(r)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["request"] == 0 and out["policies"] == 2, out
    assert out["threads"] == 1 and out["threads_advised"] == 1, out  # example's advice
    assert "(embedded), 1 thread(s), policies example" in r.stderr, mlos.describe(r)


def test_mlos_run_policy_in_embedded_mode_refuses_unknown_names_before_claiming(mlos):
    r = mlos.run("run", "--cpus", "1", "--json", "--policy", "no-such-policy", "--", "true",
                 env={"MLOS_MODE": "embedded"})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    err = run_json_error(r)["error"]
    assert err["code"] == ERR["MLOS_ERR_NOT_FOUND"] and str(POLICY_DIR) in err["message"], err
    assert ledger_claims(mlos) == []  # nothing was claimed
    r = mlos.run("run", "--dry-run", "--cpus", "1", "--policy", "example", env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0, mlos.describe(r)


# -- mlos policy ------------------------------------------------------------

def test_policy_list_shows_the_catalog_defaults_and_loaded_policies(mlos, daemon_with_defaults):
    d = daemon_with_defaults
    sock = ["--socket", str(d.socket)]
    j = mlos.json("policy", "list", "--json", *sock)
    assert j["schema_version"] == 1 and j["command"] == "policy list" and j["source"] == "mlosd"
    assert j["dir"] == str(POLICY_DIR)
    names = {p["name"]: p["path"] for p in j["available"]}
    assert {"example", "phase-weights", "thread-governor"} <= set(names), j["available"]
    assert names["example"] == str(POLICY_DIR / "example.so")
    assert j["defaults"] == ["phase-weights", "thread-governor"]
    assert isinstance(j["skipped"], list)
    job = start_job_client(d, exclusive=False, label="with-defaults")
    try:
        def loaded():
            l = {p["name"]: p for p in mlos.json("policy", "list", "--json", *sock)["loaded"]}
            return l if all(job.claim in l.get(n, {}).get("jobs", []) for n in j["defaults"]) else None
        l = wait_for(loaded, timeout=15)
        assert l, mlos.json("policy", "list", "--json", *sock)
        for name in j["defaults"]:
            assert l[name]["state"] == "running" and l[name]["failures"] == 0, l[name]
        r = mlos.run("policy", "list", *sock)
        assert r.returncode == 0, mlos.describe(r)
        lines = r.stdout.splitlines()
        assert lines[0] == f"policy directory {POLICY_DIR}; defaults: phase-weights, thread-governor"
        assert lines[1].split() == ["NAME", "STATE", "JOBS", "FAILURES", "RESTARTS", "DEFAULT", "PATH"]
        rows = {cols[0]: cols for cols in (l.split() for l in lines[2:]) if cols}
        assert rows["phase-weights"][1] == "running" and str(job.claim) in rows["phase-weights"][2].split(",")
        assert rows["phase-weights"][5] == "yes" and rows["example"][5] == "no" and rows["example"][1] == "-"
    finally:
        job.terminate()
        job.wait(10)


def test_status_shows_each_jobs_policies_and_advice(mlos, daemon_with_defaults):
    d = daemon_with_defaults
    job = start_job_client(d, exclusive=False, label="policies")
    try:
        def entry():
            jobs = mlos.json("status", "--json", "--socket", str(d.socket))["jobs"]
            mine = [x for x in jobs if x["job"] == job.claim]
            return mine[0] if mine and len(mine[0].get("policies", [])) == 2 else None
        mine = wait_for(entry, timeout=15)
        assert mine, mlos.json("status", "--json", "--socket", str(d.socket))
        assert sorted(mine["policies"]) == ["phase-weights", "thread-governor"]
        a = mine["advice"]
        assert sorted(a["policies"]) == ["phase-weights", "thread-governor"] and a["failed_policies"] == [], a
        assert a["threads"] >= 1 and isinstance(a["threads_advised"], bool), a
        r = mlos.run("status", "--socket", str(d.socket))
        assert r.returncode == 0, mlos.describe(r)
        lines = r.stdout.splitlines()
        header = next(i for i, l in enumerate(lines) if l.split()[:1] == ["JOB"])
        assert lines[header].split()[-1] == "POLICIES"
        row = next(l.split() for l in lines[header + 1:] if l.split()[:1] == [str(job.claim)])
        assert sorted(row[-1].split(",")) == ["phase-weights", "thread-governor"], row
        r = mlos.run("top", "--batch", "--iterations", "1", "--socket", str(d.socket))
        assert r.returncode == 0, mlos.describe(r)
        top_header = next(l for l in r.stdout.splitlines() if l.split()[:1] == ["JOB"])
        assert top_header.split()[-1] == "POLICIES"
    finally:
        job.terminate()
        job.wait(10)


def test_policy_info_describes_the_policy_from_its_file(mlos):
    j = mlos.json("policy", "info", "example", "--dir", str(POLICY_DIR), "--json")
    assert j["command"] == "policy info" and j["path"] == str(POLICY_DIR / "example.so")
    p = j["policy"]
    assert p["name"] == "example" and "thread" in p["description"], p
    schema = json.loads(p["config_schema"])
    assert schema["properties"]["threads"]["type"] == "integer", schema
    r = mlos.run("policy", "info", "example", "--dir", str(POLICY_DIR))
    assert r.returncode == 0, mlos.describe(r)
    assert r.stdout.splitlines()[0] == f"example ({POLICY_DIR / 'example.so'})"
    assert "config schema:" in r.stdout and '"threads"' in r.stdout
    r = mlos.run("policy", "info", "no-such-policy", "--dir", str(POLICY_DIR), "--json")
    assert r.returncode == 1, mlos.describe(r)
    err = json.loads(r.stdout)["error"]
    assert err["code"] == ERR["MLOS_ERR_NOT_FOUND"] and str(POLICY_DIR) in err["message"], err


def test_policy_info_without_mlosd_uses_the_policies_beside_mlos(mlos, tmp_path):
    # No daemon answers: the build tree's policies (build/bin/../policies),
    # as the wheel's mlos finds its own (tests/wheel/smoke.py).
    j = mlos.json("policy", "info", "example", "--json", "--socket", str(tmp_path / "none.sock"))
    assert j["dir"] == str(POLICY_DIR) and j["path"] == str(POLICY_DIR / "example.so"), j


def test_policy_info_uses_mlosds_directory(mlos, daemon):
    j = mlos.json("policy", "info", "thread-governor", "--json", "--socket", str(daemon.socket))
    assert j["dir"] == str(POLICY_DIR) and j["policy"]["name"] == "thread-governor", j


def test_policy_load_and_unload_are_for_root(mlos, tmp_path):
    # A socket directory others may enter, for the unprivileged client.
    sockdir = Path(tempfile.mkdtemp(prefix="mlosd-pol-"))
    os.chmod(sockdir, 0o755)
    d = Daemon(tmp_path, cgroups="none", extra_args=["-c", str(no_defaults_config(tmp_path))])
    d.socket = sockdir / "mlosd.sock"
    d.start()
    sock = ["--socket", str(d.socket)]
    try:
        if os.geteuid() == 0:
            j = mlos.json("policy", "load", "example", "--json", *sock)
            assert j["command"] == "policy load" and j["loaded"] is True
            loaded = {p["name"]: p for p in mlos.json("policy", "list", "--json", *sock)["loaded"]}
            assert loaded["example"]["pinned"] is True and loaded["example"]["jobs"] == [], loaded
            assert loaded["example"]["state"] in ("starting", "running"), loaded
            r = mlos.run("policy", "unload", "example", *sock)
            assert r.returncode == 0 and r.stdout == "unloaded example\n", mlos.describe(r)
            assert "example" not in {p["name"] for p in mlos.json("policy", "list", "--json", *sock)["loaded"]}
            unprivileged = {"preexec_fn": drop_to_nobody}
        else:
            unprivileged = {}
        binary = runnable_by_nobody(mlos.binary, sockdir) if unprivileged else mlos.binary
        r = subprocess.run([binary, "policy", "load", "example", "--json", *sock], env=mlos.env(),
                           capture_output=True, text=True, timeout=60, **unprivileged)
        assert r.returncode == 1, mlos.describe(r)
        assert json.loads(r.stdout)["error"]["code"] == ERR["MLOS_ERR_PERMISSION"], r.stdout
        assert mlos.json("policy", "list", "--json", *sock)["loaded"] == []
    finally:
        d.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


def drop_to_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
