# SPDX-License-Identifier: Apache-2.0
"""One rank of a torch.distributed test; prints JSON lines.

  ddp_rank.py ddp BACKEND   DistributedDataParallel over BACKEND ("gloo" or
                            "mlos"): a small CNN from seed 0 (rank 1 and up
                            perturb their copy first: DDP's initial broadcast
                            must undo it), 20 SGD steps on rank-specific
                            batches; prints the final parameters
  ddp_rank.py fsdp BACKEND  FSDP2 (fully_shard) over BACKEND: a small MLP
                            sharded over the ranks, 10 SGD steps; prints the
                            gathered parameters, the elements this rank
                            holds, an unsharded reference's parameters and
                            how far training moved them
  ddp_rank.py ops           every operation the mlos backend has, through the
                            torch.distributed API (sends and receives too),
                            results printed for the test to check; then the
                            refusals, the profile, and the CPUs of the
                            backend's threads (started from a thread
                            confined to one CPU)
  ddp_rank.py die           all-reduces until a failure; rank 1 exits after
                            the third; prints the survivor's error and time
Rank, world size and the store from torch's environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), as torchrun sets them. PG_TIMEOUT: the group's
timeout in seconds (default 60)."""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import mlos_training.distributed  # noqa: F401  (registers "mlos")


def emit(**kw):
    print(json.dumps(kw), flush=True)


def init(backend):
    timeout = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "60")))
    dist.init_process_group(backend, timeout=timeout)
    return dist.get_rank(), dist.get_world_size()


def ddp(backend):
    rank, world = init(backend)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    if rank > 0:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)  # several buckets
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)
    for _ in range(20):
        x = torch.randn(8, 1, 8, 8, generator=data)
        y = torch.randint(0, 3, (8,), generator=data)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    emit(rank=rank, params=params.tolist())
    # Every rank done before any tears its group down: a gloo rank whose
    # peer closed its pairs first aborted at exit once in CI ("terminate
    # called without an active exception", 4 ranks on 2 CPUs).
    dist.barrier()
    dist.destroy_process_group()


def fsdp(backend):
    """FSDP2 (fully_shard) over BACKEND: a small MLP sharded over the ranks,
    each Linear its own unit, 10 SGD steps on rank-specific batches; and on
    every rank an unsharded copy trained on the mean of all ranks' losses
    (what sharded data parallelism must compute). Prints both."""
    from torch.distributed.fsdp import fully_shard
    rank, world = init(backend)

    def build():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 3))
    sharded, reference = build(), build()
    for layer in sharded:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(sharded)
    opt = torch.optim.SGD(sharded.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    data = [torch.Generator().manual_seed(100 + r) for r in range(world)]
    for _ in range(10):
        batches = [(torch.randn(5, 6, generator=g), torch.randint(0, 3, (5,), generator=g)) for g in data]
        opt.zero_grad()
        nn.functional.cross_entropy(sharded(batches[rank][0]), batches[rank][1]).backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(nn.functional.cross_entropy(reference(x), y) for x, y in batches) / world).backward()
        ref_opt.step()
    full = torch.cat([p.full_tensor().detach().reshape(-1) for p in sharded.parameters()])
    local = sum(p.to_local().numel() for p in sharded.parameters())
    ref = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    initial = torch.cat([p.detach().reshape(-1) for p in build().parameters()])
    emit(rank=rank, params=full.tolist(), local_elements=local, reference=ref.tolist(),
         moved=float((ref - initial).abs().max()))
    dist.destroy_process_group()


def ops():
    rank, world = init("mlos")
    emit(case="backend", name=str(dist.get_backend()))
    # The backend's threads start at the first operation, from a thread
    # confined to one CPU here: they must still get the job's CPUs.
    job_cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(job_cpus)})
    for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
        t = torch.arange(6, dtype=torch.float64) + rank + 1
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        emit(case="all_reduce", op=op, values=t.tolist())
    t = torch.full((2, 3), rank + 1, dtype=torch.int64).t()  # non-contiguous
    dist.all_reduce(t)
    emit(case="all_reduce_noncontiguous", values=t.reshape(-1).tolist())
    t = torch.ones(4)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    emit(case="async", done=work.get_future().done(), values=t.tolist())
    for root in range(world):
        b = torch.full((5,), float(rank * 10), dtype=torch.bfloat16)
        dist.broadcast(b, src=root)
        emit(case="broadcast", root=root, values=b.float().tolist())
    outs = [torch.zeros(3, dtype=torch.int32) for _ in range(world)]
    dist.all_gather(outs, torch.tensor([rank, rank * 2, rank * 3], dtype=torch.int32))
    emit(case="all_gather", values=[o.tolist() for o in outs])
    flat = torch.zeros(world * 2)
    dist.all_gather_into_tensor(flat, torch.tensor([rank + 0.5, -rank - 0.5]))
    emit(case="all_gather_into_tensor", values=flat.tolist())
    for root in range(world):
        t = torch.arange(4, dtype=torch.float32) + rank
        dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
        emit(case="reduce", root=root, values=t.tolist())
    outs = torch.zeros(2, dtype=torch.int64)
    dist.reduce_scatter(outs, [torch.full((2,), 10 * rank + r, dtype=torch.int64) for r in range(world)])
    emit(case="reduce_scatter", values=outs.tolist())
    out = torch.zeros(3)
    dist.reduce_scatter_tensor(out, torch.arange(3 * world, dtype=torch.float32) * (rank + 1),
                               op=dist.ReduceOp.MAX)
    emit(case="reduce_scatter_tensor", values=out.tolist())
    # Rank r sends r + i + 1 values r * 100 + i to rank i.
    sends = [torch.full((rank + i + 1,), rank * 100 + i, dtype=torch.int32) for i in range(world)]
    recvs = [torch.zeros(r + rank + 1, dtype=torch.int32) for r in range(world)]
    dist.all_to_all(recvs, sends)
    emit(case="all_to_all", values=[t.tolist() for t in recvs])
    out = torch.zeros(world, 2)
    dist.all_to_all_single(out, torch.stack([torch.tensor([rank, i], dtype=torch.float32) for i in range(world)]))
    emit(case="all_to_all_single", values=out.tolist())
    out = torch.zeros(sum(r + 1 for r in range(world)), dtype=torch.float64)
    dist.all_to_all_single(out, torch.full((world * (rank + 1),), float(rank), dtype=torch.float64),
                           output_split_sizes=[r + 1 for r in range(world)],
                           input_split_sizes=[rank + 1] * world)
    emit(case="all_to_all_single_uneven", values=out.tolist())
    for root in (0, world - 1):
        outs = [torch.zeros(2, dtype=torch.float64) for _ in range(world)] if rank == root else None
        dist.gather(torch.tensor([rank, rank * 10.0], dtype=torch.float64), outs, dst=root)
        emit(case="gather", root=root, values=[o.tolist() for o in outs] if outs else None)
        got = torch.zeros(3, dtype=torch.int32)
        ins = [torch.full((3,), root * 100 + r, dtype=torch.int32) for r in range(world)] if rank == root else None
        dist.scatter(got, ins, src=root)
        emit(case="scatter", root=root, values=got.tolist())
    dist.barrier()
    # Point-to-point: a ring through batch_isend_irecv (each rank sends
    # its rank to the next), then tags matched out of posting order and a
    # blocking send into a non-contiguous receive between ranks 0 and 1.
    right, left = (rank + 1) % world, (rank - 1) % world
    got = torch.zeros(3, dtype=torch.int64)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, left),
                                     dist.P2POp(dist.isend, torch.full((3,), rank, dtype=torch.int64), right)]):
        w.wait()
    emit(case="ring", values=got.tolist())
    if rank == 0:
        works = [dist.isend(torch.tensor([5.0]), 1, tag=5), dist.isend(torch.tensor([6.0]), 1, tag=6)]
        dist.send(torch.arange(6, dtype=torch.float32).reshape(2, 3), 1)
        for w in works:
            w.wait()
    elif rank == 1:
        six, five = torch.zeros(1), torch.zeros(1)
        six_work = dist.irecv(six, 0, tag=6)  # posted first, matched by tag
        dist.recv(five, 0, tag=5)
        six_work.wait()
        t = torch.zeros(3, 2).t()  # non-contiguous: received through a copy
        dist.recv(t, 0)
        emit(case="tags", five=five.item(), six=six.item(), values=t.tolist())
    sub = dist.new_group(list(range(world - 1, -1, -1)))  # every rank, its own group
    t = torch.ones(3) * (rank + 1)
    dist.all_reduce(t, group=sub)
    emit(case="new_group", values=t.tolist())
    for name, call in (("BAND", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.BAND)),
                       ("short output", lambda: dist.all_gather_into_tensor(torch.zeros(1), torch.ones(1)))):
        try:
            call()
            emit(case="refused", what=name, error=None)
        except Exception as e:  # noqa: BLE001: the test reads the type
            emit(case="refused", what=name, type=type(e).__name__, error=str(e)[:300])
    prof = mlos_training_profile()
    emit(case="profile", **prof)
    backend = default_backend()
    emit(case="threads", job_cpus=sorted(job_cpus), starter_cpus=sorted(os.sched_getaffinity(0)),
         threads=thread_cpus(backend.thread_ids))
    os.sched_setaffinity(0, job_cpus)
    dist.destroy_process_group()


def default_backend():
    return dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))


def mlos_training_profile():
    """The communication counters of the default group's allocation."""
    return {k: v for k, v in default_backend()._group.resources.phase_profile().items() if "collective" in k}


def thread_cpus(tids):
    """{"name/tid": Cpus_allowed_list} of these threads of this process, as
    /proc shows them."""
    found = {}
    for tid in tids:
        with open(f"/proc/self/task/{tid}/comm") as f:
            name = f.read().strip()
        with open(f"/proc/self/task/{tid}/status") as f:
            found[f"{name}/{tid}"] = next(line.split()[1] for line in f if line.startswith("Cpus_allowed_list"))
    return found


def die():
    rank, _ = init("mlos")
    t = torch.ones(1000)
    for i in range(1, 10**9):
        try:
            dist.all_reduce(t)
        except Exception as e:  # noqa: BLE001: the test reads the type
            emit(event="error", type=type(e).__name__, t_ns=time.monotonic_ns(), message=str(e)[:300])
            sys.exit(3)
        if i == 3:
            emit(event="ready", t_ns=time.monotonic_ns())
            if rank == 1:
                os._exit(0)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "ddp":
        ddp(sys.argv[2])
    elif mode == "fsdp":
        fsdp(sys.argv[2])
    elif mode == "ops":
        ops()
    else:
        die()
