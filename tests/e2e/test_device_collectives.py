# SPDX-License-Identifier: Apache-2.0
"""All-reduce on buffers in GPU memory, through the published C API, over the
fake CUDA driver (tests/gpu/fake_cuda.cpp) and the fake NCCL
(tests/gpu/fake_nccl.cpp, loaded through MLOS_NCCL_LIBRARY): ranks on
distinct GPUs reduce through NCCL, ranks that share a GPU or lack a usable
NCCL stage through pinned host memory into Gloo, and every rank says which
path it took and why. Both paths must give the reference result for every
dtype and op; a failing or hanging NCCL call breaks the group with
PEER_LOST or TIMEOUT instead of hanging."""
import json
import re

import pytest

from conftest import build_dir
from test_collectives import ERR_PEER_LOST, ERR_TIMEOUT, assert_typed_results, lines, start

FIXTURES = build_dir() / "tests" / "gpu-fixtures"
FAKE_NCCL = FIXTURES / "nccl" / "libnccl.so.2"
FAKE_CUDA = FIXTURES / "cuda" / "libcuda.so.1"
pytestmark = pytest.mark.skipif(not (FAKE_NCCL.exists() and FAKE_CUDA.exists()),
                                reason="this build has no fake CUDA driver or NCCL (no cuda.h or nccl.h)")
GPUS = [f"GPU-{d * 8}-1111-2222-3333-444444444444" for d in "abc"]
NCCL_PATH = re.compile(r"collectives on GPU buffers in group \S+, rank (\d+): NCCL 2\.28\.3, one GPU per rank")
STAGED = "staged through host memory: "


@pytest.fixture
def gpus(tmp_path):
    """Three fake GPUs; what every rank's environment needs to find them,
    the fake driver and the fake NCCL."""
    config = tmp_path / "gpus.json"
    config.write_text(json.dumps({"gpus": [{"uuid": u, "memory_total": 1 << 30} for u in GPUS]}))
    return {"MLOS_FAKE_NVML": config, "LD_LIBRARY_PATH": FAKE_CUDA.parent, "MLOS_NCCL_LIBRARY": FAKE_NCCL,
            "MLOS_FAKE_NCCL_LOG": tmp_path / "nccl.log", "MLOS_LOG_LEVEL": "info"}


def run_ranks(tmp_path, env, devices, per_rank=None, timeout=180):
    """One rank per entry of devices (its CUDA_VISIBLE_DEVICES), in device
    mode; per_rank maps a rank to extra environment. Returns (return codes,
    outputs)."""
    per_rank = per_rank or {}
    procs = [start(tmp_path, r, len(devices), "device", **{**env, "CUDA_VISIBLE_DEVICES": d, **per_rank.get(r, {})})
             for r, d in enumerate(devices)]
    outs = [p.communicate(timeout=timeout)[0] for p in procs]
    return [p.returncode for p in procs], outs


def nccl_log(tmp_path):
    path = tmp_path / "nccl.log"
    return path.read_text().splitlines() if path.exists() else []


def staged_reason(out):
    found = [line.split(STAGED, 1)[1] for line in out.splitlines() if STAGED in line]
    assert len(found) == 1, out
    return found[0]


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_on_distinct_gpus_reduce_through_nccl(tmp_path, gpus, world):
    codes, outs = run_ranks(tmp_path, gpus, ["0", "1", "2"][:world])
    assert codes == [0] * world, outs
    for rank, out in enumerate(outs):
        assert [int(m.group(1)) for m in NCCL_PATH.finditer(out)] == [rank], out
        assert STAGED not in out, out
    assert_typed_results(outs, world)
    log = nccl_log(tmp_path)
    for rank in range(world):
        assert f"init {rank} {world}" in log, log
        assert f"destroy {rank}" in log, log
        # Every non-empty all-reduce went through NCCL: 6 dtypes x 5 ops x 3 sizes.
        assert sum(1 for line in log if line.startswith(f"allreduce {rank} ")) == 6 * 5 * 3, log


def test_ranks_sharing_a_gpu_stage_through_host_memory(tmp_path, gpus):
    """Then a buffer of 96 MiB, more than half of the first 64 MiB staging
    pool, is staged through a larger one."""
    large = 24 << 20
    codes, outs = run_ranks(tmp_path, dict(gpus, COLLECTIVE_LARGE_FLOATS=large), ["1", "1"])
    assert codes == [0, 0], outs
    for out in outs:
        assert staged_reason(out) == f"ranks 0 and 1 share {GPUS[1]} (NCCL needs one GPU per rank)"
        assert "not pinned" not in out, out  # the fake driver registers host memory
        assert lines(out)[-1] == {"case": "large", "count": large, "first": 3, "last": 3}, out
    assert_typed_results([o.rsplit("\n{\"case\"", 1)[0] for o in outs], 2)
    assert nccl_log(tmp_path) == []


def test_without_nccl_every_rank_stages_and_says_why(tmp_path, gpus):
    env = dict(gpus, MLOS_NCCL_LIBRARY=tmp_path / "no-such-libnccl.so.2")
    codes, outs = run_ranks(tmp_path, env, ["0", "1"])
    assert codes == [0, 0], outs
    for out in outs:
        reason = staged_reason(out)
        assert reason.startswith("rank 0 has no usable NCCL (this rank: "), reason
        assert "no-such-libnccl.so.2" in reason, reason
    assert_typed_results(outs, 2)


def test_one_rank_without_nccl_makes_every_rank_stage(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, gpus, ["0", "1"],
                            per_rank={1: {"MLOS_NCCL_LIBRARY": tmp_path / "no-such-libnccl.so.2"}})
    assert codes == [0, 0], outs
    assert staged_reason(outs[0]) == "rank 1 has no usable NCCL"
    assert staged_reason(outs[1]).startswith("rank 1 has no usable NCCL (this rank: ")
    assert_typed_results(outs, 2)
    assert nccl_log(tmp_path) == []


def test_an_nccl_older_than_supported_is_not_used(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, dict(gpus, MLOS_FAKE_NCCL_VERSION=21000), ["0", "1"])
    assert codes == [0, 0], outs
    for out in outs:
        reason = staged_reason(out)
        assert "2.10.0" in reason and "2.14" in reason, reason
    assert nccl_log(tmp_path) == []


def test_ranks_with_different_nccl_versions_stage(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, gpus, ["0", "1"], per_rank={1: {"MLOS_FAKE_NCCL_VERSION": 22700}})
    assert codes == [0, 0], outs
    for out in outs:
        assert staged_reason(out) == "ranks 0 and 1 load different NCCL versions"
    assert_typed_results(outs, 2)


def test_no_unique_id_on_rank_0_makes_every_rank_stage(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, gpus, ["0", "1"], per_rank={0: {"MLOS_FAKE_NCCL_FAIL": "unique_id"}})
    assert codes == [0, 0], outs
    for out in outs:
        reason = staged_reason(out)
        assert reason.startswith("rank 0: ncclGetUniqueId: "), reason
    assert_typed_results(outs, 2)
    assert not any(line.startswith("init") for line in nccl_log(tmp_path))


def test_a_failing_nccl_all_reduce_breaks_the_group_with_peer_lost(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, dict(gpus, MLOS_FAKE_NCCL_FAIL="allreduce"), ["0", "1"])
    assert codes == [3, 3], outs
    for out in outs:
        err = lines(out)[-1]
        assert err["code"] == ERR_PEER_LOST, out
        assert "ncclAllReduce" in err["message"] and "the group is broken" in err["message"], err
    log = nccl_log(tmp_path)
    assert "abort 0" in log and "abort 1" in log, log


def test_a_hanging_nccl_all_reduce_is_a_timeout(tmp_path, gpus):
    codes, outs = run_ranks(tmp_path, dict(gpus, MLOS_FAKE_NCCL_FAIL="hang", MLOS_COLLECTIVE_TIMEOUT_MS=1500),
                            ["0", "1"], timeout=60)
    assert codes == [3, 3], outs
    for out in outs:
        err = lines(out)[-1]
        assert err["code"] == ERR_TIMEOUT, out
        assert "did not complete within 1500 ms" in err["message"], err
    log = nccl_log(tmp_path)
    assert "abort 0" in log and "abort 1" in log, log


def test_host_memory_on_one_rank_and_device_memory_on_the_other_is_a_timeout(tmp_path, gpus):
    """The ranks must agree, call for call, on where the buffers are; a mix
    is not a wrong result or a hang but TIMEOUT, and on the rank whose peer
    gave up first, TIMEOUT or PEER_LOST (the peer closed the connection)."""
    env = dict(gpus, MLOS_COLLECTIVE_TIMEOUT_MS=1500)
    procs = [start(tmp_path, 0, 2, "typed", **env), start(tmp_path, 1, 2, "device", **env, CUDA_VISIBLE_DEVICES="1")]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [3, 3], outs
    codes = [lines(o)[-1]["code"] for o in outs]
    assert ERR_TIMEOUT in codes and set(codes) <= {ERR_TIMEOUT, ERR_PEER_LOST}, outs
