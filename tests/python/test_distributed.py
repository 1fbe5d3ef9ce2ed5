# SPDX-License-Identifier: Apache-2.0
"""MLOSProcessGroup: ranks as processes (pg_rank.py), checked against
references computed here; the group used next to torch.distributed (its
default store) and under torchrun (MASTER_ADDR/MASTER_PORT, no MLOS_STORE);
a killed rank is an MLOSError, not a hang."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from functools import reduce
from pathlib import Path

import pytest

from conftest import HERE, REPO, clean_env

ERR_INVALID_ARGUMENT, ERR_UNSUPPORTED, ERR_TIMEOUT, ERR_PEER_LOST = -1, -9, -17, -22


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp_path, rank, world, mode, **extra):
    return subprocess.Popen([sys.executable, str(HERE / "pg_rank.py"), mode],
                            env=clean_env(tmp_path, RANK=rank, WORLD_SIZE=world, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results(procs, timeout=180):
    """Each rank's JSON lines (ranks print little: a full pipe would stall
    a rank while another is being read)."""
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, out + err
        outs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    return outs


def reference(op, n, world):
    def one(i):
        xs = [(r + 1) * (i % 5 + 1) for r in range(world)]
        return {"SUM": sum(xs), "PROD": reduce(lambda a, b: a * b, xs), "MIN": min(xs), "MAX": max(xs),
                "AVG": sum(xs) / world}[op]
    return [one(i) for i in range(n)]


@pytest.mark.parametrize("world", [2, 4])
def test_every_dtype_and_op_on_torch_tensors(tmp_path, world):
    procs = [start(tmp_path, r, world, "ops", MLOS_STORE=f"file:{tmp_path / 'store'}") for r in range(world)]
    outs = results(procs)
    assert all(o == outs[0] for o in outs), "ranks disagree"
    cases = [c for c in outs[0] if "dtype" in c]
    assert len(cases) == 6 * 5 * 4
    for c in cases:
        ref = reference(c["op"], c["n"], world)
        if "int" in c["dtype"] and c["op"] == "AVG":
            ref = [int(x) for x in ref]  # integer AVG truncates
        rel = {"torch.float16": 2e-3, "torch.bfloat16": 1e-2}.get(c["dtype"], 1e-9)
        assert c["first"] == pytest.approx(ref[:7], rel=rel), c
        assert c["sum"] == pytest.approx(sum(ref), rel=rel), c
    by_case = {c["case"]: c for c in outs[0] if "case" in c}
    noncontig = [(r + 1) * (i % 5 + 1) for r in range(world) for i in range(12)]
    expect = [sum((r + 1) * (i % 5 + 1) for r in range(world)) for i in range(12)]
    expect = [expect[j * 4 + i] for i in range(4) for j in range(3)]  # the transposed view, flattened
    assert noncontig and by_case["noncontiguous"]["values"] == pytest.approx(expect)
    assert by_case["numpy"]["values"] == [world] * 5
    prof = by_case["profile"]
    assert prof["collective_calls"] == 1 + 6 * 5 * 4 + 2  # the rendezvous barrier, the cases, two more
    assert prof["collective_bytes"] > 0


def test_cuda_tensors_are_reduced_by_the_library_on_either_path(tmp_path):
    """CUDA tensors go to the library as device pointers after their
    stream is synchronised (docs/gpu.md, "Collectives on device buffers").
    Without a GPU here, stand-ins for CUDA tensors hold memory of the fake
    CUDA driver: on distinct GPUs the fake NCCL reduces them, on one shared
    GPU they are staged through host memory; both give the reference."""
    fixtures = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build") / "tests" / "gpu-fixtures"
    if not (fixtures / "nccl" / "libnccl.so.2").exists():
        pytest.skip("this build has no fake CUDA driver or NCCL (no cuda.h or nccl.h)")
    config = tmp_path / "gpus.json"
    config.write_text(json.dumps({"gpus": [{"uuid": f"GPU-{d * 8}-1111-2222-3333-444444444444",
                                            "memory_total": 1 << 30} for d in "ab"]}))
    for devices, path in ((["0", "1"], "NCCL"), (["1", "1"], "staged through host memory")):
        store = tmp_path / f"store-{path[0]}"
        procs = [start(tmp_path, r, 2, "device", MLOS_STORE=f"file:{store}", MLOS_FAKE_NVML=config,
                       LD_LIBRARY_PATH=fixtures / "cuda", MLOS_NCCL_LIBRARY=fixtures / "nccl" / "libnccl.so.2",
                       MLOS_LOG_LEVEL="info", CUDA_VISIBLE_DEVICES=d) for r, d in enumerate(devices)]
        errs = []
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0, out + err
            outs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
            errs.append(err)
        assert all(f"rank {r}: {path}" in err for r, err in enumerate(errs)), errs
        assert all(o == outs[0] for o in outs), "ranks disagree"
        cases = [c for c in outs[0] if "dtype" in c]
        assert len(cases) == 6 * 5
        for c in cases:
            ref = reference(c["op"], c["n"], 2)
            if "int" in c["dtype"] and c["op"] == "AVG":
                ref = [int(x) for x in ref]
            assert c["first"] == pytest.approx(ref[:7], rel=1e-2), c
            assert c["sum"] == pytest.approx(sum(ref), rel=1e-2), c
        assert [c for c in outs[0] if "streams" in c][0]["streams"] == ["cuda:0"] * 6 * 5


def test_next_to_torch_distributed_in_its_default_store(tmp_path):
    """torch.distributed initialised first (gloo, env://); MLOSProcessGroup
    without MLOS_STORE meets in torch's store and agrees with dist.all_reduce."""
    port = free_port()
    procs = [start(tmp_path, r, 2, "with-torch", MASTER_ADDR="127.0.0.1", MASTER_PORT=port) for r in range(2)]
    for out in results(procs):
        agree = [c for c in out if c.get("case") == "agree"][0]
        assert agree["equal"], agree
        assert agree["first"] == [3.0, 6.0, 9.0]


def test_under_torchrun_through_master_addr(tmp_path):
    """`torchrun --standalone` sets RANK, WORLD_SIZE, MASTER_ADDR/PORT and
    serves the store; the unmodified rank program finds it with no
    MLOS_STORE."""
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--log-dir", str(logs), "--redirects", "1", str(HERE / "pg_rank.py"), "ops"]
    r = subprocess.run(cmd, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    outs = sorted(logs.rglob("stdout.log"))
    assert len(outs) == 2, outs
    for out in outs:
        lines = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
        assert len([c for c in lines if "dtype" in c]) == 6 * 5 * 4, out


def test_a_killed_rank_is_an_error_on_the_others_within_the_timeout(tmp_path):
    store = f"file:{tmp_path / 'store'}"
    procs = [start(tmp_path, r, 3, "loop", MLOS_STORE=store, PG_TIMEOUT=3) for r in range(3)]
    for p in procs:
        line = p.stdout.readline()
        assert '"ready"' in line, line + p.stderr.read()
    killed = time.monotonic_ns()
    procs[2].send_signal(signal.SIGKILL)
    for p in procs[:2]:
        out, err = p.communicate(timeout=30)
        assert p.returncode == 3, out + err
        event = json.loads(out.splitlines()[-1])
        assert event["code"] in (ERR_PEER_LOST, ERR_TIMEOUT), event
        delay_ms = (event["t_ns"] - killed) / 1e6
        assert delay_ms < 3000 + 2000, delay_ms
        print(f"survivor: {event['message'][:80]} after {delay_ms:.0f} ms")


def test_refusals_are_mlos_errors(tmp_path):
    import mlos_training
    from mlos_training.distributed import MLOSProcessGroup
    with pytest.raises(mlos_training.MLOSError) as e:
        MLOSProcessGroup(2, 2)
    assert e.value.code == ERR_INVALID_ARGUMENT
    with pytest.raises(mlos_training.MLOSError) as e:  # no store anywhere
        MLOSProcessGroup(0, 2)
    assert e.value.code == ERR_INVALID_ARGUMENT and "MLOS_STORE" in str(e.value)


def test_a_missing_rank_is_a_timeout_and_a_single_rank_group_works(tmp_path, monkeypatch):
    import torch
    import mlos_training
    from mlos_training.distributed import MLOSProcessGroup
    monkeypatch.setenv("MLOS_STORE", f"file:{tmp_path / 'store'}")
    t0 = time.monotonic()
    with pytest.raises(mlos_training.MLOSError) as e:
        MLOSProcessGroup(0, 2, timeout=1.0, group_name="lonely")
    assert e.value.code == ERR_TIMEOUT and 0.9 < time.monotonic() - t0 < 10
    with MLOSProcessGroup(0, 1, group_name="solo") as pg:
        t = torch.arange(4, dtype=torch.float32)
        assert pg.all_reduce(t, op=mlos_training.AVG).tolist() == [0, 1, 2, 3]
        with pytest.raises(mlos_training.MLOSError) as e:
            pg.all_reduce(torch.zeros(2, dtype=torch.complex64))
        assert e.value.code == ERR_INVALID_ARGUMENT

        with pytest.raises(mlos_training.MLOSError) as e:  # neither CPU nor CUDA
            pg.all_reduce(torch.zeros(2, device="meta"))
        assert e.value.code == ERR_UNSUPPORTED and "meta" in str(e.value)
        with pytest.raises(mlos_training.MLOSError):
            pg.all_reduce(t, op="XOR")


def test_a_rank_given_to_two_processes_is_refused_through_torchs_store(tmp_path):
    """Ranks meet in a torch TCPStore (MASTER_ADDR/MASTER_PORT, rank 0
    serves it), reached through the caller-store callbacks: a second
    process given rank 1 is refused with INVALID_ARGUMENT by the claim the
    library makes with the store's compare_set; the running ranks go on."""
    port = free_port()
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "PG_TIMEOUT": 60}
    procs = [start(tmp_path, r, 2, "loop", **env) for r in range(2)]
    try:
        for p in procs:
            ready = p.stdout.readline()
            assert '"ready"' in ready, ready + p.stdout.read() + p.stderr.read()
        twin = start(tmp_path, 1, 2, "loop", **env)
        out, err = twin.communicate(timeout=90)
        assert twin.returncode == 3, out + err
        error = json.loads(out.splitlines()[-1])
        assert error["code"] == ERR_INVALID_ARGUMENT and "rank 1 is already taken" in error["message"], error
        assert all(p.poll() is None for p in procs), "the running ranks stopped"
    finally:
        for p in procs:
            p.kill()
            p.communicate()


def test_with_a_store_secret_the_library_serves_master_addr_and_torch_clients_are_refused(tmp_path):
    """MLOS_STORE_SECRET with MASTER_ADDR/MASTER_PORT: rank 0 does not create
    torch's TCPStore (which takes no secret); the library serves the store,
    the ranks meet through it, and torch's own client is refused."""
    import datetime

    import torch.distributed as dist
    port = free_port()
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "PG_TIMEOUT": 60,
           "MLOS_STORE_SECRET": "0123456789abcdef-pytest"}
    procs = [start(tmp_path, r, 2, "loop", **env) for r in range(2)]
    try:
        for p in procs:
            ready = p.stdout.readline()
            assert '"ready"' in ready, ready + p.stdout.read() + p.stderr.read()
        with pytest.raises(Exception):
            intruder = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                                     timeout=datetime.timedelta(seconds=5))
            intruder.list_keys()
        assert all(p.poll() is None for p in procs), "the running ranks stopped"
    finally:
        for p in procs:
            p.kill()
            p.communicate()


@pytest.mark.parametrize("value,agent", [("True", True), ("true", True), ("TRUE", True), ("1", True),
                                         ("", False), ("0", False), ("False", False), ("yes", False)])
def test_torchruns_agent_store_flag_is_read_as_the_c_library_reads_it(value, agent):
    # src/collectives/group_config.cpp may_serve_tcp_store: "true" in any
    # case or "1"; the Python group and the C library must agree on who serves.
    from mlos_training.distributed import _agent_serves_store
    assert _agent_serves_store(value) is agent
