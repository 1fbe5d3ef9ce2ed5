# SPDX-License-Identifier: Apache-2.0
"""Policy modules from Python: argument errors; embedded mode, served by
the policy host and policies installed with the package
(mlos_training/mlos/); and, against a real mlosd from the build
(MLOS_BUILD_DIR) with its policies, ctx.request_policy, ctx.advice and
MLOSTrainingContext(policies=...)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import mlos_training as m
from conftest import REPO, mlos_cli
from mlos_training.errors import CODES

PACKAGE_POLICIES = Path(m.__file__).parent / "mlos" / "policies"


def build_dir():
    return Path(mlos_cli()).parent.parent


# -- embedded mode (the conftest's default) --------------------------------

def test_argument_errors_are_raised_before_anything_is_asked():
    with m.request_resources(num_cpus=1, exclusive_cpus=False) as res:
        with pytest.raises(TypeError):
            res.request_policy(42)
        with pytest.raises(TypeError):
            res.request_policy("example", config=[1])
        for bad in ("", "exa\0mple"):
            with pytest.raises(m.MLOSError) as e:
                res.request_policy(bad)
            assert e.value.code == CODES["INVALID_ARGUMENT"]
        with pytest.raises(m.MLOSError) as e:
            res.request_policy("example", {"threads": object()})
        assert e.value.code == CODES["INVALID_ARGUMENT"] and "'example'" in str(e.value)
        with pytest.raises(m.MLOSError) as e:
            res.request_policy("example", {"threads": float("nan")})
        assert e.value.code == CODES["INVALID_ARGUMENT"]
        with pytest.raises(m.MLOSError) as e:
            res.release_policy("")
        assert e.value.code == CODES["INVALID_ARGUMENT"]
        with pytest.raises(TypeError):
            m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, policies=["example"])


def wait_for_advice(ctx, timeout=10.0):
    deadline = time.monotonic() + timeout
    advice = ctx.advice
    while not advice["threads_advised"] and time.monotonic() < deadline:
        time.sleep(0.05)
        advice = ctx.advice
    return advice


def test_embedded_mode_serves_policies_from_the_packages_host():
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        before = ctx.advice  # the default policies (thread-governor) count too
        ctx.request_policy("example", threads=1)
        advice = wait_for_advice(ctx)
        assert advice["threads"] == 1 and advice["threads_advised"] is True, advice
        assert advice["policies"] == before["policies"] + 1 and advice["policies_failed"] == 0, advice
        ctx.release_policy("example")
        assert ctx.advice["policies"] == before["policies"]
        with pytest.raises(m.MLOSError) as e:
            ctx.release_policy("example")
        assert e.value.code == CODES["NOT_FOUND"]
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("no-such-policy")
        assert e.value.code == CODES["NOT_FOUND"] and str(PACKAGE_POLICIES) in str(e.value), str(e.value)
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("example", bogus=1)
        assert e.value.code == CODES["INVALID_ARGUMENT"] and "bogus" in str(e.value)
        assert ctx.cpus  # the allocation itself is unaffected


def test_a_context_whose_policy_cannot_be_attached_fails_and_releases_its_claim():
    ctx = m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=True, policies={"no-such-policy": {}})
    with pytest.raises(m.MLOSError) as e:
        ctx.start()
    assert e.value.code == CODES["NOT_FOUND"]
    assert ctx.resources is None
    # The exclusive CPU it took is free again: the same request succeeds.
    with m.MLOSTrainingContext(num_cpus=len(os.sched_getaffinity(0)), exclusive_cpus=True):
        pass


def embedded_child(code, **env):
    """Runs `code` in a fresh interpreter in embedded mode (the library
    reads its policy settings once per process); returns its JSON line."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    child_env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=tempfile.mkdtemp(prefix="mlos-py-pol-rt-"), **env)
    r = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


ADVICE_OR_ERROR = """
import json, mlos_training as m
with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
    try:
        print(json.dumps({"advice": ctx.advice}))
    except m.MLOSError as e:
        print(json.dumps({"code": e.code, "error": str(e)}))
"""


def test_an_embedded_job_records_reads_and_attaches_prefetch():
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        ctx.record_read("/data/a", 0, 4096)
        ctx.record_read(Path("relative/b"))
        ctx.announce_reads(["/data/a", Path("/data/b")])
        ctx.announce_reads([])
        with pytest.raises(ValueError):
            ctx.record_read("/data/a", -1)
        with pytest.raises(m.MLOSError) as e:
            ctx.record_read("")
        assert e.value.code == CODES["INVALID_ARGUMENT"]
        ctx.request_policy("prefetch", ahead_mb=8)
        assert ctx.advice["policies"] >= 1
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("prefetch", ahead=8)  # another config while attached
        assert e.value.code == CODES["INVALID_ARGUMENT"]
        ctx.release_policy("prefetch")


AUTO_OBSERVES = """
import json, os, subprocess, sys, time
from pathlib import Path
import mlos_training as m
with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False,
                           policies={"auto": {"act": False, "window_s": 1, "confirm": 1}}) as ctx:
    reports = Path(os.environ["MLOS_RUNTIME_DIR"]) / "policy-reports"
    deadline = time.monotonic() + 60
    report = None
    while time.monotonic() < deadline:
        ctx.mark(m.PHASE_DATA_LOADING)
        time.sleep(0.09)
        ctx.mark(m.PHASE_FORWARD)
        time.sleep(0.01)
        files = list(reports.glob("*.json"))
        if files:
            report = json.loads(files[0].read_text())
            if report["reports"].get("auto", {}).get("windows", 0) >= 2:
                break
    status = subprocess.run([sys.argv[1], "status", "--json"], capture_output=True, text=True, check=True).stdout
    text = subprocess.run([sys.argv[1], "status"], capture_output=True, text=True, check=True).stdout
    print(json.dumps({"pid": os.getpid(), "report": report, "status": json.loads(status), "text": text}))
"""


def test_auto_reports_what_it_sees_and_mlos_status_shows_it():
    """An embedded job marked DATA_LOADING most of the time: auto (observing
    only, one-second windows) reports its features in the job's report
    file, and `mlos status` shows them under the job's claim."""
    out = embedded_child(AUTO_OBSERVES.replace("sys.argv[1]", repr(mlos_cli())))
    report = out["report"]
    assert report is not None and report["pid"] == out["pid"], out
    auto = report["reports"]["auto"]
    assert auto["windows"] >= 2 and auto["acting"] is False and auto["attached"] == [], auto
    assert auto["features"]["data_loading_share"] > 0.5, auto
    assert auto["features"]["compute_share"] < 0.5, auto
    mine = [c for c in out["status"]["claims"] if c["pid"] == out["pid"]]
    assert mine and mine[0]["policy_report"]["reports"]["auto"]["windows"] >= 2, out["status"]
    assert "auto: " in out["text"] and "data_loading_share=" in out["text"], out["text"]


def test_without_an_installed_host_policies_are_unsupported_saying_where_it_looked():
    out = embedded_child(ADVICE_OR_ERROR, MLOS_POLICY_HOST="/nonexistent/mlos-policyhost")
    assert out["code"] == CODES["UNSUPPORTED"], out
    assert "/nonexistent/mlos-policyhost" in out["error"] and "MLOS_POLICY_HOST" in out["error"], out


def test_every_job_gets_the_default_thread_governor_unless_told_otherwise():
    assert embedded_child(ADVICE_OR_ERROR)["advice"]["policies"] == 1
    assert embedded_child(ADVICE_OR_ERROR, MLOS_DEFAULT_POLICIES="")["advice"]["policies"] == 0


# -- under mlosd ---------------------------------------------------------------

def compute_bound_model():
    """The built-in model's format and names, with one leaf: compute-bound."""
    model = json.loads((REPO / "policies" / "auto" / "model" / "auto-tree.json").read_text())
    model["nodes"] = [{"class": model["classes"].index("compute_bound"), "confidence": 1.0}]
    return model


class Mlosd:
    """mlosd from the build, without default policies, on a private socket.
    Its `auto` has a one-leaf model that calls every job compute-bound, so
    that what auto does under mlosd does not depend on the machine."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="mlos-py-pol-"))
        self.socket = self.dir / "mlosd.sock"
        config = self.dir / "mlosd.json"
        config.write_text(json.dumps({"policies": {"defaults": [], "config": {"auto": {"model": compute_bound_model()}}}}))
        b = build_dir()
        argv = [str(b / "bin" / "mlosd"), "-c", str(config), "--socket", str(self.socket), "--state-dir",
                str(self.dir / "state"), "--cgroups", "none", "--metrics-listen", "127.0.0.1:0", "--ledger-dir", str(self.dir),
                "--confine", "off", "--policy-dir", str(b / "policies"), "--policy-host",
                str(b / "bin" / "mlos-policyhost")]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
        self.log = open(self.dir / "mlosd.log", "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env)
        deadline = time.monotonic() + 15
        while not self.socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"mlosd did not start: {(self.dir / 'mlosd.log').read_text()}")
            time.sleep(0.02)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def module_mlosd():
    # One for the module: libmlos keeps its daemon connection (and socket
    # path) for the life of the process, as a training process would.
    d = Mlosd()
    yield d
    d.stop()


@pytest.fixture
def mlosd(module_mlosd, monkeypatch):
    monkeypatch.setenv("MLOS_MODE", "daemon")
    monkeypatch.setenv("MLOS_DAEMON_SOCKET", str(module_mlosd.socket))
    return module_mlosd


def test_request_policy_and_advice_under_mlosd(mlosd):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        before = ctx.advice
        assert set(before) == {"threads", "threads_advised", "cpu_weight", "policies", "policies_failed"}
        assert before["threads_advised"] is False and before["policies"] == 0 and before["threads"] >= 1
        ctx.request_policy("example", threads=1)
        advice = wait_for_advice(ctx)
        assert advice["threads"] == 1 and advice["threads_advised"] is True
        assert advice["policies"] == 1 and advice["policies_failed"] == 0
        ctx.release_policy("example")
        assert ctx.advice["policies"] == 0 and ctx.advice["threads_advised"] is False
        with pytest.raises(m.MLOSError) as e:
            ctx.release_policy("example")
        assert e.value.code == CODES["NOT_FOUND"]
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("no-such-policy")
        assert e.value.code == CODES["NOT_FOUND"] and str(build_dir() / "policies") in str(e.value)
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("example", bogus=1)
        assert e.value.code == CODES["INVALID_ARGUMENT"] and "bogus" in str(e.value)


def test_read_logs_are_unsupported_under_mlosd_and_prefetch_says_why(mlosd):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        with pytest.raises(m.MLOSError) as e:
            ctx.record_read("/data/a")
        assert e.value.code == CODES["UNSUPPORTED"] and "read log" in str(e.value)
        with pytest.raises(m.MLOSError) as e:
            ctx.request_policy("prefetch")
        assert e.value.code == CODES["UNSUPPORTED"] and "read log" in str(e.value)
        assert ctx.advice["policies"] == 0


def test_a_context_requests_its_policies_after_the_grant(mlosd):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, policies={"example": {"threads": 1}}) as ctx:
        advice = wait_for_advice(ctx)
        assert advice["policies"] == 1 and advice["threads"] == 1 and advice["threads_advised"] is True
    ctx = m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, policies={"no-such-policy": {}})
    with pytest.raises(m.MLOSError) as e:
        ctx.start()
    assert e.value.code == CODES["NOT_FOUND"] and ctx.resources is None  # released again


def test_the_thread_governor_takes_the_advised_count_under_mlosd(mlosd):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    cpus = min(2, len(os.sched_getaffinity(0)))
    with m.MLOSTrainingContext(num_cpus=cpus, exclusive_cpus=False, policies={"example": {"threads": 1}}) as ctx:
        assert wait_for_advice(ctx)["threads_advised"]
        g = ctx.governor
        assert g is not None and g.advice is not None
        deadline = time.monotonic() + 10
        while g.source != "advice" and time.monotonic() < deadline:
            time.sleep(g.interval)
            ctx.set_phase(m.PHASE_FORWARD)
        assert g.source == "advice" and g.threads == 1
        assert torch.get_num_threads() == 1 and ctx.torch_threads == 1
    assert torch.get_num_threads() == before


def test_auto_attaches_what_its_class_needs_under_mlosd_and_mlos_status_shows_why(mlosd):
    """auto (acting, one-second windows) calls the job compute-bound and has
    mlosd attach thread-governor for it; `mlos status`, run as another
    process against the same mlosd, shows the class and what auto attached;
    releasing auto takes thread-governor with it."""
    env = dict(os.environ, MLOS_DAEMON_SOCKET=str(mlosd.socket))
    config = {"act": True, "window_s": 1, "confirm": 1}
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, policies={"auto": config}) as ctx:
        job = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for phase in (m.PHASE_FORWARD, m.PHASE_BACKWARD):
                ctx.set_phase(phase)
                sum(i * i for i in range(20000))  # some CPU in each phase
            status = json.loads(subprocess.run([mlos_cli(), "status", "--json"], capture_output=True, text=True,
                                               check=True, env=env).stdout)
            job = next(j for j in status["jobs"] if j["pid"] == os.getpid())
            report = job["policy_report"] or {}
            if report.get("attached_by_policy"):
                break
            time.sleep(0.2)
        assert report["attached_by_policy"] == {"thread-governor": "auto"}, job
        assert report["reports"]["auto"]["class"] == "compute_bound", report
        assert sorted(job["policies"]) == ["auto", "thread-governor"], job
        text = subprocess.run([mlos_cli(), "status"], capture_output=True, text=True, check=True, env=env).stdout
        assert f"job {job['job']}: auto: compute_bound" in text, text
        ctx.release_policy("auto")
        deadline = time.monotonic() + 10
        while ctx.advice["policies"] != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ctx.advice["policies"] == 0, "what auto attached went with it"
