# SPDX-License-Identifier: Apache-2.0
"""The `mlos` torch.distributed backend, in rank processes (ddp_rank.py):
DDP trains to gloo's parameters, FSDP to the unsharded model's, every
operation gives what it must, a
dead peer is torch's error within the timeout, and torchrun runs it."""
import json
import subprocess
import sys

import pytest

from conftest import HERE, clean_env
from mlos_training.cpu_list import parse_cpu_list
from test_distributed import free_port


def start(tmp_path, rank, world, *args, port, **extra):
    env = clean_env(tmp_path, RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=port, **extra)
    return subprocess.Popen([sys.executable, str(HERE / "ddp_rank.py"), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_world(tmp_path, world, *args, expect_rc=0, **extra):
    port = free_port()
    procs = [start(tmp_path, r, world, *args, port=port, **extra) for r in range(world)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        if expect_rc is not None:
            assert p.returncode == expect_rc, out + err
        outs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    return outs


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_over_mlos_trains_to_gloos_parameters(tmp_path, world):
    """20 steps from one seed, rank-specific data, ranks other than 0
    starting from perturbed weights: every rank ends with the same
    parameters (DDP's initial broadcast and its bucketed all-reduces), and
    those are gloo's up to floating-point reduction order."""
    import torch
    final = {}
    for backend in ("gloo", "mlos"):
        outs = run_world(tmp_path, world, "ddp", backend)
        params = [torch.tensor(o[-1]["params"]) for o in outs]
        for p in params[1:]:
            assert torch.equal(p, params[0]), f"{backend}: ranks disagree"
        final[backend] = params[0]
    assert torch.allclose(final["mlos"], final["gloo"], rtol=1e-5, atol=1e-6), \
        (final["mlos"] - final["gloo"]).abs().max()


def test_fsdp_over_mlos_matches_the_unsharded_model(tmp_path):
    """FSDP2 shards a small MLP over 2 ranks (each holds part of it) and
    trains 10 steps through all_gather_into_tensor and
    reduce_scatter_tensor: the parameters equal an unsharded model trained
    on the mean loss, and gloo's, up to reduction order."""
    import torch
    final = {}
    for backend in ("gloo", "mlos"):
        outs = run_world(tmp_path, 2, "fsdp", backend)
        last = [o[-1] for o in outs]
        params = [torch.tensor(o["params"]) for o in last]
        assert torch.equal(params[0], params[1]), f"{backend}: ranks disagree"
        assert all(0 < o["local_elements"] < len(o["params"]) for o in last), "not sharded"
        reference = torch.tensor(last[0]["reference"])
        assert last[0]["moved"] > 1e-3, "training did not move the parameters"
        assert torch.allclose(params[0], reference, rtol=1e-5, atol=1e-6), (params[0] - reference).abs().max()
        final[backend] = params[0]
    assert torch.allclose(final["mlos"], final["gloo"], rtol=1e-5, atol=1e-6)


def test_every_operation_through_the_torch_api(tmp_path):
    world = 3
    outs = run_world(tmp_path, world, "ops")
    for rank, out in enumerate(outs):
        cases = {}
        for c in out:
            cases.setdefault(c["case"], []).append(c)
        assert cases["backend"][0]["name"] == "mlos"
        reduced = {c["op"]: c["values"] for c in cases["all_reduce"]}
        xs = [[i + r + 1 for r in range(world)] for i in range(6)]
        assert reduced["SUM"] == [sum(x) for x in xs]
        assert reduced["PRODUCT"] == [x[0] * x[1] * x[2] for x in xs]
        assert reduced["MIN"] == [min(x) for x in xs]
        assert reduced["MAX"] == [max(x) for x in xs]
        assert reduced["AVG"] == pytest.approx([sum(x) / world for x in xs])
        assert cases["all_reduce_noncontiguous"][0]["values"] == [6] * 6
        assert cases["async"][0]["done"] is True and cases["async"][0]["values"] == [world] * 4
        assert [(c["root"], c["values"]) for c in cases["broadcast"]] == [(r, [r * 10.0] * 5) for r in range(world)]
        assert cases["all_gather"][0]["values"] == [[r, 2 * r, 3 * r] for r in range(world)]
        assert cases["all_gather_into_tensor"][0]["values"] == [v for r in range(world) for v in (r + 0.5, -r - 0.5)]
        assert [(c["root"], c["values"]) for c in cases["reduce"]] == \
            [(r, [float(sum(i + q for q in range(world))) for i in range(4)] if r == rank else
              [float(i + rank) for i in range(4)]) for r in range(world)]
        assert cases["reduce_scatter"][0]["values"] == [sum(10 * q + rank for q in range(world))] * 2
        assert cases["reduce_scatter_tensor"][0]["values"] == [float((3 * rank + i) * world) for i in range(3)]
        assert cases["all_to_all"][0]["values"] == [[r * 100 + rank] * (r + rank + 1) for r in range(world)]
        assert cases["all_to_all_single"][0]["values"] == [[float(r), float(rank)] for r in range(world)]
        assert cases["all_to_all_single_uneven"][0]["values"] == [float(r) for r in range(world) for _ in range(r + 1)]
        for c in cases["gather"]:
            assert c["values"] == ([[float(r), r * 10.0] for r in range(world)] if rank == c["root"] else None), c
        assert [(c["root"], c["values"]) for c in cases["scatter"]] == \
            [(root, [root * 100 + rank] * 3) for root in (0, world - 1)]
        assert cases["ring"][0]["values"] == [(rank - 1) % world] * 3
        if rank == 1:
            assert cases["tags"][0] == {"case": "tags", "five": 5.0, "six": 6.0,
                                        "values": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]}
        assert cases["new_group"][0]["values"] == [6.0] * 3
        refused = {c["what"]: c for c in cases["refused"]}
        assert refused["BAND"]["type"] == "DistBackendError" and "BAND" in refused["BAND"]["error"], refused
        assert refused["short output"]["type"] == "DistBackendError", refused
        assert "all_gather_into_tensor" in refused["short output"]["error"], refused
        # The worker thread (collectives) and the transfer thread run on the
        # job's CPUs, as /proc shows, though a thread confined to one CPU
        # started them (what would otherwise be inherited).
        threads = cases["threads"][0]
        assert len(threads["starter_cpus"]) == 1, threads
        assert {n.split("/")[0] for n in threads["threads"]} == {"mlos-c10d", "mlos-c10d-p2p"}, threads
        for name, allowed in threads["threads"].items():
            assert sorted(parse_cpu_list(allowed)) == threads["job_cpus"], (name, allowed, threads)
        prof = cases["profile"][0]
        assert prof["collective_calls"] >= 5 + 1 + 1 + world + 1 + 1 + world + 2 + 3 + 1 + 1, (rank, prof)
        assert prof["collective_bytes"] > 0


def test_a_dead_peer_is_torchs_error_within_the_timeout(tmp_path):
    outs = run_world(tmp_path, 2, "die", expect_rc=None, PG_TIMEOUT=3)
    ready = [e for e in outs[0] if e.get("event") == "ready"]
    error = [e for e in outs[0] if e.get("event") == "error"]
    assert ready and error, outs[0]
    assert error[0]["type"] == "DistBackendError", error
    # Never a hang: the 3 s timeout, with room for a busy machine.
    assert (error[0]["t_ns"] - ready[0]["t_ns"]) / 1e9 < 3 + 30, error


def test_under_torchrun(tmp_path):
    """torchrun --standalone serves the store and sets the environment; the
    rank program only names the backend."""
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--log-dir", str(logs), "--redirects", "1", str(HERE / "ddp_rank.py"), "ddp", "mlos"]
    p = subprocess.run(cmd, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    outs = sorted(logs.rglob("stdout.log"))
    assert len(outs) == 2, list(logs.rglob("*"))
    params = [json.loads([line for line in o.read_text().splitlines() if line.startswith("{")][-1])["params"]
              for o in outs]
    assert params[0] == params[1]


def test_oversubscription_advice():
    """The warning the backend gives at creation: 2 ranks of 2 threads on 2
    shared CPUs overfill them (what slows DDP here, docs/benchmarks.md);
    1 thread each fits; ranks a launcher confined to 1 CPU each fit with 1
    thread and not with 2; without LOCAL_WORLD_SIZE (0) nothing is said."""
    from mlos_training.torch_backend import oversubscription_advice
    advice = oversubscription_advice(2, 2, 2, 2)
    assert advice and "OMP_NUM_THREADS=1" in advice and "mlos run" in advice
    assert oversubscription_advice(2, 1, 2, 2) is None
    assert oversubscription_advice(2, 1, 1, 2) is None
    assert "OMP_NUM_THREADS=1" in oversubscription_advice(2, 2, 1, 2)
    assert oversubscription_advice(0, 8, 2, 2) is None
    assert oversubscription_advice(4, 4, 16, 16) is None
