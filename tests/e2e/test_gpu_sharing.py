# SPDX-License-Identifier: Apache-2.0
"""GPU sharing (docs/gpu.md, "Sharing a GPU") from outside: `mlos run --gpus
--gpu-memory --gpu-share` runs a CUDA program (tests/gpu/cuda_client.cpp)
over the fake CUDA driver (tests/gpu/fake_cuda.cpp, found as libcuda.so.1 on
LD_LIBRARY_PATH, as the real one is) with the interposer preloaded. The
program reaches the driver the three ways real ones do (linked, dlsym,
cuGetProcAddress as the CUDA runtime and PyTorch do), and what it sees is
checked: allocations past the job's cap fail as out of memory, the cap is
the GPU's size, the cap holds across the job's processes, launches are
slowed to the compute share on a simulated GPU timeline the fake NVML
reports utilization from, and mlosd shows the job's books."""
import json
import os
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from cli_helpers import error_codes
from conftest import build_dir
from daemon_helpers import Daemon, Started, wait_for

FIXTURES = build_dir() / "tests" / "gpu-fixtures"
FAKE_NVML = FIXTURES / "libfake-nvml.so"
CLIENT = FIXTURES / "mlos-cuda-client"
LINKED_CLIENT = FIXTURES / "mlos-cuda-client-linked"
INTERPOSER = build_dir() / "lib" / "libmlos-gpushare.so"
pytestmark = pytest.mark.skipif(not (CLIENT.exists() and INTERPOSER.exists() and FAKE_NVML.exists()),
                                reason="this build has no GPU sharing interposer or fakes (no cuda.h or nvml.h)")
ERR = error_codes()
EXIT_RUN_FAILED = 125
A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
GIB = 1 << 30
MIB = 1 << 20
OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY
KERNEL_US = 2000
started = Started()


@pytest.fixture(autouse=True)
def _stop_what_was_started():
    yield
    started.stop_all()


@pytest.fixture
def gpus(tmp_path, monkeypatch):
    """Two fake GPUs of 1 GiB; the fake driver found as libcuda.so.1; a
    simulated GPU timeline shared by the fake driver and NVML."""
    config = tmp_path / "gpus.json"
    config.write_text(json.dumps({"kernel_us": KERNEL_US, "gpus": [
        {"uuid": u, "name": "NVIDIA Fake", "memory_total": GIB, "pci": {"bus": bus}, "cpu_affinity": "0-1"}
        for u, bus in ((A, 0x3b), (B, 0xbb))]}))
    env = {"MLOS_NVML_LIBRARY": str(FAKE_NVML), "MLOS_FAKE_NVML": str(config),
           "MLOS_FAKE_GPU_CLOCK": str(tmp_path / "gpu-clock"), "LD_LIBRARY_PATH": str(FIXTURES / "cuda")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    return env


def ops(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def client(mode):
    return [str(LINKED_CLIENT if mode == "linked" else CLIENT), mode]


@pytest.mark.parametrize("mode, internal", [("linked", False), ("dlsym", False), ("procaddress", False),
                                            ("procaddress", True)])
def test_the_cap_holds_on_every_way_to_the_driver(mlos, gpus, mode, internal):
    env = {"MLOS_MODE": "embedded", "MLOS_FAKE_CUDA_INTERNAL_POINTERS": "1" if internal else "0"}
    r = mlos.run("run", "--gpus", "1", "--gpu-memory", "100M", "--", *client(mode), "info", "alloc:62914560",
                 "alloc:62914560", "free", "info", "create:31457280", "managed:31457280", "async:31457280",
                 "alloc:10485761", "info", "pitch:10000:1025", "info", "pitch:10000:1024", "info", env=env)
    assert r.returncode == 0, mlos.describe(r)
    o = ops(r.stdout)
    cap = 100 * MIB
    # The cap is the GPU's size as CUDA reports it, whichever call asks.
    assert (o[0]["total"], o[0]["free"], o[0]["device_total"]) == (cap, cap, cap), o[0]
    assert [x["result"] for x in o[1:3]] == [0, OOM], o  # 60 MiB fit, 60 more do not
    assert o[4]["free"] == cap, o[4]  # freed: the job holds nothing
    # Every allocation family counts: VMM, managed, stream-ordered; the
    # fourth would pass the cap by a byte.
    assert [x["result"] for x in o[5:9]] == [0, 0, 0, OOM], o
    assert o[9]["free"] == 10 * MIB, o[9]
    # A pitched allocation is charged its padded size: 10000-byte rows
    # padded to 10240 fit 1024 times in the 10 MiB left, not 1025 (whose
    # unpadded size would fit); the refusal gives back what it took.
    assert (o[10]["result"], o[10]["pitch"], o[11]["free"]) == (OOM, 10240, 10 * MIB), o[10:12]
    assert (o[12]["result"], o[13]["free"]) == (0, 0), o[12:]
    assert "the job's GPU memory cap is 104857600 bytes per GPU" in r.stderr, r.stderr


def test_the_cap_is_the_jobs_across_its_processes(mlos, gpus, tmp_path):
    """A forked child shares the parent's cap, and a second program of the
    same job too; a process killed with its memory held stops counting."""
    out = tmp_path / "holder.out"
    script = (f'{CLIENT} dlsym alloc:62914560 fork:52428800 fork:31457280 hold:60 > "$0" & holder=$!; '
              f'until [ "$(grep -c fork "$0")" = 2 ]; do sleep 0.05; done; '
              f"{CLIENT} dlsym alloc:52428800; kill -9 $holder; wait $holder; {CLIENT} dlsym alloc:52428800")
    r = mlos.run("run", "--gpus", "1", "--gpu-memory", "100M", "--", "sh", "-c", script, str(out),
                 env={"MLOS_MODE": "embedded"}, timeout=90)
    assert r.returncode == 0, mlos.describe(r)
    first = ops(out.read_text())
    assert [x["result"] for x in first[:3]] == [0, OOM, 0], first
    assert [x["result"] for x in ops(r.stdout)] == [OOM, 0], mlos.describe(r)


def test_other_lookups_are_glibcs_own(mlos, gpus):
    """The interposer's dlsym answers every name it does not hook as glibc
    would for the program: RTLD_NEXT from the program's object, a missing
    symbol NULL with dlerror() set."""
    r = mlos.run("run", "--gpus", "1", "--gpu-memory", "1G", "--", *client("dlsym"), "dlsym-next",
                 env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0 and ops(r.stdout) == [{"op": "dlsym-next", "result": 0}], mlos.describe(r)


def test_without_limits_nothing_is_preloaded(mlos, gpus):
    r = mlos.run("run", "--gpus", "1", "--", "sh", "-c", f'echo "preload=$LD_PRELOAD"; {CLIENT} procaddress info',
                 env={"MLOS_MODE": "embedded"})
    assert r.returncode == 0, mlos.describe(r)
    assert "preload=\n" in r.stdout and ops(r.stdout)[0]["total"] == GIB, r.stdout


@pytest.mark.parametrize("args, words", [
    (("--gpu-memory", "1G"), "--gpu-memory needs --gpus"),
    (("--gpu-share", "50"), "--gpu-share needs --gpus"),
    (("--gpus", "1", "--gpu-share", "0"), "--gpu-share must be a percentage from 1 to 100, got 0"),
    (("--gpus", "1", "--gpu-share", "101"), "got 101"),
    (("--gpus", "1", "--gpu-memory", "0"), "--gpu-memory must be more than 0 bytes"),
    (("--gpus", "1", "--gpu-memory", "lots"), "lots"),
])
def test_bad_limits_fail_before_anything_is_claimed(mlos, gpus, args, words):
    r = mlos.run("run", "--json", *args, "--", "true", env={"MLOS_MODE": "embedded"})
    assert r.returncode == EXIT_RUN_FAILED, mlos.describe(r)
    err = json.loads(r.stderr.splitlines()[-1])["error"]
    assert err["code"] == ERR["MLOS_ERR_INVALID_ARGUMENT"] and words in err["message"], err
    assert not mlos.ledger.exists() or json.loads(mlos.ledger.read_text())["claims"] == []
    assert not list((Path(mlos.runtime) / "gpushare").glob("*.share"))


def test_a_failed_claim_leaves_no_share_file(mlos, gpus):
    r = mlos.run("run", "--gpus", "3", "--gpu-memory", "1G", "--", "true", env={"MLOS_MODE": "embedded"})
    assert r.returncode == EXIT_RUN_FAILED and "INSUFFICIENT_GPUS" in r.stderr or "requested 3" in r.stderr, r.stderr
    assert not list((Path(mlos.runtime) / "gpushare").glob("*.share"))


def share_of_gpu(result, seconds):
    """The busy share of the simulated GPU a launch loop got."""
    return result["launches"] * KERNEL_US * 1e-6 / seconds


def test_the_compute_share_slows_launches_to_it(mlos, gpus):
    """On the simulated GPU (one kernel at a time, utilization from NVML's
    per-process samples), a job held to 25 % while another runs unlimited
    gets about a quarter; unthrottled, the two would split it evenly. The
    bounds are loose: the fake GPU's kernels are sleeps, so a busy machine
    delays the controller's samples, not the simulated GPU."""
    env = {"MLOS_MODE": "embedded"}
    seconds = 5
    limited = mlos.popen("run", "--gpus", A, "--shared-gpus", "--gpu-share", "25", "--verbose", "--",
                         *client("procaddress"), f"launch:{seconds}", env=env)
    free = mlos.popen("run", "--gpus", A, "--shared-gpus", "--", *client("procaddress"), f"launch:{seconds}", env=env)
    out_limited, err_limited = limited.communicate(timeout=60)
    out_free, _ = free.communicate(timeout=60)
    assert limited.returncode == 0 and free.returncode == 0, err_limited
    assert "25 % compute (throttle)" in err_limited, err_limited
    mine, theirs = share_of_gpu(ops(out_limited)[0], seconds), share_of_gpu(ops(out_free)[0], seconds)
    assert 0.08 < mine < 0.40 and theirs > mine * 1.5, (mine, theirs)


def test_an_mps_control_daemon_takes_over_the_compute_share(mlos, gpus, tmp_path):
    """With an MPS control daemon listening (a stand-in socket here), the
    share goes to MPS through CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and the
    interposer does not throttle; a stale socket is no daemon."""
    pipe_dir = tmp_path / "mps"
    pipe_dir.mkdir()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(pipe_dir / "control"))
    listener.listen(8)
    show = "echo $MLOS_GPU_SHARE_MECHANISM,$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,$MLOS_GPU_SHARE"
    env = {"MLOS_MODE": "embedded", "CUDA_MPS_PIPE_DIRECTORY": str(pipe_dir)}
    r = mlos.run("run", "--gpus", "1", "--gpu-share", "40", "--", "sh", "-c", show, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "mps,40,40", mlos.describe(r)
    listener.close()  # the socket file stays: a daemon that died
    r = mlos.run("run", "--gpus", "1", "--gpu-share", "40", "--", "sh", "-c", show, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "throttle,,40", mlos.describe(r)


def test_mlosd_shows_the_jobs_limits_and_what_its_processes_hold(tmp_path, gpus):
    d = started(Daemon(tmp_path)).start()
    env = d.client_env()
    env.update(gpus)
    p = started(subprocess.Popen(
        [str(build_dir() / "bin" / "mlos"), "run", "--gpus", "1", "--gpu-memory", "100M", "--gpu-share", "50",
         "--label", "capped", "--", *client("procaddress"), "alloc:62914560", "alloc:62914560", "hold:60"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))

    def share():
        jobs = [j for j in d.status()["jobs"] if j["label"] == "capped"]
        s = jobs[0].get("gpu", {}).get("share") if jobs else None
        return s if s and s["allocations_refused"] == 1 else None

    s = wait_for(share, timeout=30)
    assert s, d.status()["jobs"]
    assert (s["memory_limit_bytes"], s["share_percent"], s["processes"]) == (100 * MIB, 50, 1), s
    assert s["devices"] == [{"uuid": A, "used_bytes": 60 * MIB}], s
    port = d.status()["daemon"]["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as m:
        scrape = m.read().decode()
    series = {line.split("{")[0]: line.rsplit(" ", 1)[1] for line in scrape.splitlines()
              if 'label="capped"' in line and line.startswith("mlos_job_gpu_")}
    assert series.get("mlos_job_gpu_memory_limit_bytes") == str(100 * MIB), scrape
    assert series.get("mlos_job_gpu_share_percent") == "50"
    assert series.get("mlos_job_gpu_capped_memory_bytes") == str(60 * MIB)
    assert series.get("mlos_job_gpu_allocations_refused_total") == "1"
    p.kill()
    p.wait(10)
