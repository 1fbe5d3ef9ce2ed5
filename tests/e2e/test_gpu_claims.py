# SPDX-License-Identifier: Apache-2.0
"""GPU claims (docs/gpu.md) from outside, against a fake NVML
(tests/gpu/fake_nvml.cpp named by MLOS_NVML_LIBRARY): `mlos run --gpus`
hands CMD its GPUs in CUDA_VISIBLE_DEVICES (read from /proc/PID/environ),
places its CPUs on the GPUs' NUMA node (a described two-node machine),
and an exclusive GPU is never granted twice: not by the embedded ledger,
not by mlosd, not across users, not across the two books."""
import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from cli_helpers import error_codes
from conftest import build_dir
from daemon_helpers import Daemon, Started, v1_cgroups_usable, wait_for

FAKE_NVML = build_dir() / "tests" / "gpu-fixtures" / "libfake-nvml.so"
pytestmark = pytest.mark.skipif(not FAKE_NVML.exists(),
                                reason="this build has no fake NVML (built without nvml.h, or a sanitizer build)")
ERR = error_codes()
EXIT_RUN_FAILED = 125
A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
started = Started()


@pytest.fixture(autouse=True)
def _stop_what_was_started():
    yield
    started.stop_all()


def gpu(uuid, bus, cpus):
    return {"uuid": uuid, "name": "NVIDIA H200", "memory_total": 150754820096, "memory_used": 0,
            "pci": {"domain": 0, "bus": bus, "device": 0}, "cpu_affinity": cpus}


@pytest.fixture
def nvml(tmp_path, monkeypatch):
    """Two fake GPUs; the environment (this process's too, so that a mlosd
    started by the test inherits it) that makes mlOS load them."""
    config = tmp_path / "nvml.json"
    config.write_text(json.dumps({"driver_version": "550.54.15", "gpus": [gpu(A, 0x3b, "0-3"), gpu(B, 0xbb, "4-7")]}))
    env = {"MLOS_NVML_LIBRARY": str(FAKE_NVML), "MLOS_FAKE_NVML": str(config)}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return env


def environ_of(pid) -> dict:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def exec_done(proc, comm="sleep"):
    try:
        return Path(f"/proc/{proc.pid}/comm").read_text().strip() == comm
    except OSError:
        return False


def holder(mlos_or_env, *args, binary=None):
    """`mlos run ARGS -- sleep 60`, once it has exec'd (claim made)."""
    env = mlos_or_env.env() if hasattr(mlos_or_env, "env") else mlos_or_env
    p = started(subprocess.Popen([binary or str(build_dir() / "bin" / "mlos"), "run", *args, "--", "sleep", "60"],
                                 env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True))
    assert wait_for(lambda: exec_done(p) or p.poll() is not None, timeout=20) and p.poll() is None, p.stderr.read()
    return p


def test_dry_run_places_cpus_on_the_node_of_the_gpu(mlos, nvml):
    env = {"MLOS_TOPOLOGY": "synthetic:node:2 core:4 pu:1", "MLOS_MODE": "embedded"}
    plan = mlos.json("run", "--dry-run", "--json", "--gpus", "1", "--cpus", "2", env=env)["placement"]
    assert (plan["gpus"], plan["numa_nodes"], plan["cpus"]) == ([A], [0], "0-1")
    plan = mlos.json("run", "--dry-run", "--json", "--gpus", "GPU-bbbb", "--cpus", "2", env=env)["placement"]
    assert (plan["gpus"], plan["numa_nodes"], plan["cpus"]) == ([B], [1], "4-5")
    # --numa names the node: it wins over the GPU's.
    plan = mlos.json("run", "--dry-run", "--json", "--gpus", B, "--numa", "0", "--cpus", "1", env=env)["placement"]
    assert (plan["gpus"], plan["numa_nodes"]) == ([B], [0])
    # More CPUs than the GPU's node has: they spill, and it says so.
    plan = mlos.json("run", "--dry-run", "--json", "--gpus", "1", "--cpus", "6", env=env)["placement"]
    assert plan["gpus"] == [A] and len(plan["cpu_order"]) == 6 and "not on the GPUs' NUMA node 0" in plan["gpu_note"]
    # CUDA_VISIBLE_DEVICES bounds what mlos run may claim, as it bounds CUDA.
    plan = mlos.json("run", "--dry-run", "--json", "--gpus", "1", env={**env, "CUDA_VISIBLE_DEVICES": "1"})
    assert plan["placement"]["gpus"] == [B]


@pytest.mark.parametrize("args, env, code, words", [
    (("--gpus", "3"), {}, "INSUFFICIENT_GPUS", "requested 3 GPU(s); this machine has 2"),
    (("--gpus", "2"), {"CUDA_VISIBLE_DEVICES": A}, "INSUFFICIENT_GPUS", "this process may use 1"),
    (("--gpus", "GPU-cccc"), {}, "NOT_FOUND", 'no GPU has UUID "GPU-cccc"'),
    (("--gpus", "GPU-"), {}, "NOT_FOUND", "matches several GPUs"),
    (("--gpus", "0"), {}, "INVALID_ARGUMENT", "--gpus must be a count >= 1"),
    (("--gpus", ","), {}, "INVALID_ARGUMENT", "names no GPU"),
    (("--shared-gpus",), {}, "INVALID_ARGUMENT", "--shared-gpus needs --gpus"),
    (("--gpus", "1"), {"MLOS_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}, "INSUFFICIENT_GPUS",
     "no GPU can be claimed: "),
])
def test_bad_gpu_requests_fail_with_their_code_and_claim_nothing(mlos, nvml, args, env, code, words):
    r = mlos.run("run", "--json", *args, "--", "true", env={"MLOS_MODE": "embedded", **env})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    err = json.loads(r.stderr.splitlines()[-1])["error"]
    assert err["code"] == ERR[f"MLOS_ERR_{code}"] and words in err["message"], err
    assert not mlos.ledger.exists() or json.loads(mlos.ledger.read_text())["claims"] == []


def test_embedded_exclusive_gpu_is_granted_once_and_freed_with_its_process(mlos, nvml):
    env = mlos.env({"MLOS_MODE": "embedded"})
    first = holder(env, "--gpus", "1", "--cpus", "1")
    seen = environ_of(first.pid)
    assert seen["CUDA_VISIBLE_DEVICES"] == A and seen["MLOS_GPUS"] == A
    claim = json.loads(mlos.ledger.read_text())["claims"][0]
    assert (claim["gpus"], claim["gpus_exclusive"]) == ([A], True)
    # The other GPU is still there; then none is.
    second = holder(env, "--gpus", "1", "--cpus", "1")
    assert environ_of(second.pid)["CUDA_VISIBLE_DEVICES"] == B
    r = mlos.run("run", "--gpus", "1", "--shared-gpus", "--", "true", env={"MLOS_MODE": "embedded"})
    assert r.returncode == EXIT_RUN_FAILED and "GPUs claimed by other jobs" in r.stderr, mlos.describe(r)
    st = mlos.run("status", env={"MLOS_MODE": "embedded"})
    assert "aaaaaaaa" in st.stdout and "bbbbbbbb" in st.stdout, st.stdout
    first.kill()
    first.wait(10)
    # Its GPU is free once its process is gone (dead owners are pruned).
    r = mlos.run("run", "--gpus", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES", env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0 and r.stdout.strip() == A, mlos.describe(r)


def test_shared_gpus_overlap_each_other_never_an_exclusive_one(mlos, nvml):
    env = mlos.env({"MLOS_MODE": "embedded"})
    holder(env, "--gpus", A, "--shared-gpus", "--cpus", "1")
    second = holder(env, "--gpus", A, "--shared-gpus", "--cpus", "1")
    assert environ_of(second.pid)["CUDA_VISIBLE_DEVICES"] == A
    r = mlos.run("run", "--json", "--gpus", A, "--", "true", env={"MLOS_MODE": "embedded"})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    err = json.loads(r.stderr.splitlines()[-1])["error"]
    assert err["code"] == ERR["MLOS_ERR_GPUS_BUSY"] and "shared by 2 other claim(s)" in err["message"], err


@pytest.fixture
def daemon(tmp_path, nvml):
    d = Daemon(tmp_path)
    # A socket other users can reach (tmp_path's parents are root's only).
    sockdir = Path(tempfile.mkdtemp(prefix="mlosd-gpu-"))
    os.chmod(sockdir, 0o755)
    d.socket = sockdir / "mlosd.sock"
    return started(d).start()


def run_env(daemon, mode="daemon"):
    env = daemon.client_env()  # without MLOS_*: the fake NVML goes back in for embedded runs
    env.update(MLOS_MODE=mode, MLOS_NVML_LIBRARY=os.environ["MLOS_NVML_LIBRARY"],
               MLOS_FAKE_NVML=os.environ["MLOS_FAKE_NVML"])
    return env


def test_mlosd_grants_an_exclusive_gpu_once_across_processes_and_users(daemon):
    assert f"GPUs jobs can claim: {A} (node 0), {B} (node 0)" in daemon.log.read_text()
    p = holder(run_env(daemon), "--gpus", "2", "--cpus", "1", "--label", "trainer")
    assert environ_of(p.pid)["CUDA_VISIBLE_DEVICES"] == f"{A},{B}"
    st = daemon.status()
    job = [j for j in st["jobs"] if j["label"] == "trainer"][0]
    assert (job["gpus"], job["gpus_exclusive"]) == ([A, B], True)
    assert [(g["uuid"], g["exclusive"]) for g in st["gpus"]] == [(A, True), (B, True)]
    text = subprocess.run([str(build_dir() / "bin" / "mlos"), "status"], env=run_env(daemon), capture_output=True,
                          text=True, timeout=30).stdout
    assert f"GPU 0 {A} (node 0): exclusive" in text and "aaaaaaaa,~" in text, text
    # Prometheus: one series per GPU held, joinable on dcgm-exporter's UUID
    # (the series follow the jobs at the next metrics update).
    port = st["daemon"]["metrics_port"]

    def scrape():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as m:
            return m.read().decode()

    wanted = [f'mlos_job_gpu_info{{UUID="{u}",exclusive="true",job_id="{job["job"]}",label="trainer",uid="{os.geteuid()}"}} 1'
              for u in (A, B)]
    assert wait_for(lambda: all(w in scrape() for w in wanted), timeout=30), scrape()
    # Another user's process asks mlosd directly, even for a shared GPU:
    # refused.
    if os.geteuid() == 0:
        script = f"""
import json, os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from daemon_helpers import Client
os.setgroups([]); os.setgid(65534); os.setuid(65534)
print(json.dumps(Client({str(daemon.socket)!r}).call("request", num_cpus=1, num_gpus=1, exclusive_gpus=False)))
"""
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        reply = json.loads(r.stdout)
        assert reply["ok"] is False and reply["error"]["code"] == ERR["MLOS_ERR_GPUS_BUSY"], reply
    # A mlosd killed and started again recovers the claim from its state.
    daemon.kill9()
    daemon.start()
    assert [(g["uuid"], g["exclusive"]) for g in daemon.status()["gpus"]] == [(A, True), (B, True)]
    r = subprocess.run([str(build_dir() / "bin" / "mlos"), "run", "--gpus", "1", "--", "true"], env=run_env(daemon),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == EXIT_RUN_FAILED and "GPUs claimed by other jobs" in r.stderr, r.stderr
    p.kill()
    p.wait(10)
    assert wait_for(lambda: all(not g["exclusive"] for g in daemon.status()["gpus"]), timeout=10)


def test_a_request_inside_mlos_run_gets_gpus_from_its_envelope(daemon):
    """The command's own request nests in mlos run's job: its GPUs come from
    the envelope's (here the raw protocol, as the library would send it)."""
    script = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from daemon_helpers import Client
c = Client({str(daemon.socket)!r})
print(json.dumps([c.call("request", num_cpus=1, num_gpus=n, label=f"inner{{n}}") for n in (1, 2)]))
"""
    r = subprocess.run([str(build_dir() / "bin" / "mlos"), "run", "--gpus", B, "--cpus", "1", "--",
                        sys.executable, "-c", script], env=run_env(daemon), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    one, two = json.loads(r.stdout)
    assert one["ok"] and one["gpus"] == [B], one
    assert not two["ok"] and two["error"]["code"] == ERR["MLOS_ERR_INSUFFICIENT_GPUS"], two


def test_one_book_a_gpu_claimed_while_mlosd_was_down_stays_claimed(tmp_path, nvml):
    d = started(Daemon(tmp_path))
    p = holder(run_env(d, mode="embedded"), "--gpus", A, "--cpus", "1")
    d.start()
    assert wait_for(lambda: any(j["gpus"] == [A] for j in d.status()["jobs"]), timeout=10), d.status()["jobs"]
    r = subprocess.run([str(build_dir() / "bin" / "mlos"), "run", "--json", "--gpus", A, "--", "true"],
                       env=run_env(d), capture_output=True, text=True, timeout=30)
    assert r.returncode == EXIT_RUN_FAILED and json.loads(r.stderr.splitlines()[-1])["error"]["code"] == ERR["MLOS_ERR_GPUS_BUSY"], r.stderr
    p.kill()
    p.wait(10)


@pytest.mark.parametrize("mode", ["embedded", "daemon"])
def test_a_run_inside_a_run_takes_gpus_only_from_its_envelope(tmp_path, nvml, mode):
    """Both books bound a nested request by its envelope's GPUs, not only by
    CUDA_VISIBLE_DEVICES (removed here): none without --gpus outside, and
    the envelope's one, not the free first GPU, with it."""
    d = started(Daemon(tmp_path))
    if mode == "daemon":
        d.start()
    mlos = str(build_dir() / "bin" / "mlos")
    inner = ["env", "-u", "CUDA_VISIBLE_DEVICES", mlos, "run", "--json", "--gpus", "1", "--", "sh", "-c",
             "echo $CUDA_VISIBLE_DEVICES"]
    r = subprocess.run([mlos, "run", "--cpus", "1", "--", *inner], env=run_env(d, mode), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == EXIT_RUN_FAILED, r.stdout + r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["error"]["code"] == ERR["MLOS_ERR_INSUFFICIENT_GPUS"], r.stderr
    r = subprocess.run([mlos, "run", "--gpus", B, "--cpus", "1", "--", *inner], env=run_env(d, mode),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == B, r.stdout + r.stderr


def test_mlosd_shows_each_job_s_gpu_memory_and_its_gpus_figures(tmp_path, nvml):
    """NVML's per-process memory lands on the job whose process uses it, the
    held GPU's utilization on the job, and the GPUs' own series carry
    dcgm-exporter's labels (fake NVML: its figures are fixed)."""
    d = started(Daemon(tmp_path))
    p = holder(run_env(d, mode="embedded"), "--gpus", A, "--cpus", "1", "--label", "user-of-a")
    busy = gpu(A, 0x3b, "0-3")
    busy.update(utilization=[88, 40], power_mw=412000, temperature=55, memory_used=3 << 30,
                processes=[{"pid": p.pid, "used": 1 << 30}, {"pid": 1, "used": 5 << 20}])
    Path(os.environ["MLOS_FAKE_NVML"]).write_text(json.dumps({"gpus": [busy, gpu(B, 0xbb, "4-7")]}))
    d.start()  # reads NVML (the file above) from now on, and adopts the ledger's claim

    def figures():
        jobs = [j for j in d.status()["jobs"] if j["label"] == "user-of-a"]
        return jobs[0].get("gpu") if jobs else None

    # Memory and utilization from the first reading; the stall's figures
    # once time was sampled (from the second).
    f = wait_for(lambda: (figures() or {}).get("sampled_seconds") and figures(), timeout=30)
    assert f and f["memory_bytes"] == 1 << 30 and f["utilization_percent"] == 88, d.status()["jobs"]
    assert f["data_stall_seconds"] == 0 and f["data_stall_share"] == 0  # never in DATA_LOADING
    mlos = str(build_dir() / "bin" / "mlos")
    for args in (["status"], ["top", "--batch", "-n", "1"]):
        out = subprocess.run([mlos, *args, "--socket", str(d.socket)], capture_output=True, text=True, timeout=30)
        row = [line for line in out.stdout.splitlines() if "user-of-a" in line]
        assert row and "aaaaaaaa" in row[0] and "88% 1.0 GiB" in row[0], out.stdout + out.stderr
    port = d.status()["daemon"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as m:
        scrape = m.read().decode()
    labels = f'{{UUID="{A}",device="nvidia0",gpu="0",modelName="NVIDIA H200",pci_bus_id="0000:3b:00.0"}}'
    assert f"mlos_gpu_utilization_percent{labels} 88" in scrape, scrape
    assert f"mlos_gpu_power_watts{labels} 412" in scrape and f"mlos_gpu_temperature_celsius{labels} 55" in scrape
    assert f"mlos_gpu_memory_used_bytes{labels} {3 << 30}" in scrape
    mine = [line for line in scrape.splitlines()
            if line.startswith("mlos_job_gpu_memory_bytes{") and 'label="user-of-a"' in line]
    assert len(mine) == 1 and mine[0].endswith(f"}} {1 << 30}"), scrape


def test_under_v1_cgroups_a_job_opens_only_its_own_gpus_device_files(tmp_path, nvml):
    """mlosd with cgroups: a job that claimed GPU A (minor 0) gets the
    devices controller's rule, so /dev/nvidia1 (GPU B) is EPERM for its
    processes while /dev/nvidia0 reaches the (absent) driver: ENXIO. Device
    files made with mknod stand in for the driver's."""
    why = v1_cgroups_usable()
    if why:
        pytest.skip(why)
    if not Path("/sys/fs/cgroup/devices/cgroup.procs").exists():
        pytest.skip("the v1 devices controller is not mounted")
    devdir = tmp_path / "dev"
    devdir.mkdir()
    for minor in (0, 1):
        os.mknod(devdir / f"nvidia{minor}", 0o600 | stat.S_IFCHR, os.makedev(195, minor))
    d = started(Daemon(tmp_path, cgroups="v1")).start()
    probe = ("import errno, os, sys\n"
             "for p in sys.argv[1:]:\n"
             "    try: os.close(os.open(p, os.O_RDWR)); print('ok')\n"
             "    except OSError as e: print(errno.errorcode[e.errno])\n")
    r = subprocess.run([str(build_dir() / "bin" / "mlos"), "run", "--gpus", A, "--cpus", "1", "--", sys.executable,
                        "-c", probe, str(devdir / "nvidia0"), str(devdir / "nvidia1")],
                       env=run_env(d), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ENXIO", "EPERM"], r.stdout + r.stderr
    # Outside any job, both reach the driver.
    for minor in (0, 1):
        with pytest.raises(OSError) as e:
            os.open(devdir / f"nvidia{minor}", os.O_RDWR)
        assert e.value.errno == errno.ENXIO
