# SPDX-License-Identifier: Apache-2.0
"""Barrier and all-reduce on Gloo, through the published C API: ranks as
processes on this host (tests/collectives/collective_rank.c), rendezvous in
a FileStore directory. Correctness of every op against a reference computed
here; clear errors for a bad rank, a missing store, a rank that never
arrives and a rank killed in the middle of a loop of all-reduces."""
import json
import os
import signal
import subprocess
import time
from functools import reduce

import pytest

from conftest import build_dir

ERR_INVALID_ARGUMENT, ERR_TIMEOUT, ERR_IO, ERR_PEER_LOST = -1, -17, -19, -22
OPS = {0: "sum", 1: "prod", 2: "min", 3: "max", 4: "avg"}


def rank_env(tmp_path, rank, world, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_") and k not in ("RANK", "WORLD_SIZE")}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), MLOS_STORE=f"file:{tmp_path / 'store'}",
               MLOS_RUNTIME_DIR=str(tmp_path / "runtime"), MLOS_MODE="embedded",
               MLOS_COLLECTIVE_HOST="127.0.0.1", MLOS_COLLECTIVE_TIMEOUT_MS="10000")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(tmp_path, rank, world, mode, **extra):
    (tmp_path / "runtime").mkdir(exist_ok=True)
    return subprocess.Popen([str(build_dir() / "bin" / "mlos_collective_rank"), mode],
                            env=rank_env(tmp_path, rank, world, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


DTYPES = {0: ("float32", 1e-6), 1: ("float64", 1e-12), 2: ("float16", 2e-3), 3: ("bfloat16", 2e-2),
          4: ("int32", 0), 5: ("int64", 0)}


def typed_expected(dtype, op, count, world):
    """Element i of rank r: (r+1) + (i%5)*0.5 for floats, (r+1)*(i%5+1) for
    integers; integer AVG truncates toward zero."""
    def value(i):
        if dtype >= 4:
            xs = [(r + 1) * (i % 5 + 1) for r in range(world)]
        else:
            xs = [(r + 1) + (i % 5) * 0.5 for r in range(world)]
        if op == 0:
            return sum(xs)
        if op == 1:
            return reduce(lambda a, b: a * b, xs)
        if op == 2:
            return min(xs)
        if op == 3:
            return max(xs)
        return int(sum(xs) / world) if dtype >= 4 else sum(xs) / world
    return [value(i) for i in range(count)]


def assert_typed_results(outs, world):
    """The ranks' outputs of the typed (or device) mode agree and match the
    reference for every dtype, op and size."""
    results = [lines(o) for o in outs]
    assert all(r == results[0] for r in results), "ranks disagree"
    assert len(results[0]) == 6 * 5 * 4
    for case in results[0]:
        ref = typed_expected(case["dtype"], case["op"], case["count"], world)
        name, rel = DTYPES[case["dtype"]]
        assert case["first"] == pytest.approx(ref[:5], rel=rel, abs=rel), (name, case)
        assert case["sum"] == pytest.approx(sum(ref), rel=rel, abs=rel), (name, case)


def expected(op, count, world):
    """What every rank must hold after a float32 all-reduce."""
    return typed_expected(0, op, count, world)


@pytest.mark.parametrize("world", [2, 4, 8])
def test_every_op_gives_the_reference_result_on_every_rank(tmp_path, world):
    procs = [start(tmp_path, r, world, "check") for r in range(world)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    results = [lines(o) for o in outs]
    assert all(r == results[0] for r in results), "ranks disagree"
    assert len(results[0]) == 5 * 5
    for case in results[0]:
        ref = expected(case["op"], case["count"], world)
        assert case["sum"] == pytest.approx(sum(ref), rel=1e-5), case
        assert case["first"] == pytest.approx(ref[:5], rel=1e-6), case
        assert case["last"] == pytest.approx(ref[-1] if ref else 0, rel=1e-6), case


def test_a_rank_outside_the_world_and_a_missing_store_are_refused(tmp_path):
    p = start(tmp_path, 2, 2, "check")
    out = p.communicate(timeout=30)[0]
    assert p.returncode == 3
    err = lines(out)[-1]
    assert err["code"] == ERR_INVALID_ARGUMENT and "rank" in err["message"]

    env = rank_env(tmp_path, 0, 2)
    del env["MLOS_STORE"]
    q = subprocess.run([str(build_dir() / "bin" / "mlos_collective_rank"), "check"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert q.returncode == 3
    err = lines(q.stdout)[-1]
    assert err["code"] == ERR_INVALID_ARGUMENT and "MLOS_STORE" in err["message"]


def test_ranks_given_different_world_sizes_are_told_so(tmp_path):
    """Rank 0 told the world has 2 ranks, rank 1 told 3: both get
    INVALID_ARGUMENT naming the mismatch, well before the timeout."""
    t0 = time.monotonic()
    procs = [start(tmp_path, 0, 2, "check"), start(tmp_path, 1, 3, "check")]
    errors = [lines(p.communicate(timeout=60)[0])[-1] for p in procs]
    assert [p.returncode for p in procs] == [3, 3], errors
    for e in errors:
        assert e["code"] == ERR_INVALID_ARGUMENT and "world size mismatch" in e["message"], e
    assert time.monotonic() - t0 < 5  # the timeout is 10 s


def test_a_rank_that_never_arrives_is_a_timeout_not_a_hang(tmp_path):
    t0 = time.monotonic()
    p = start(tmp_path, 0, 2, "check", MLOS_COLLECTIVE_TIMEOUT_MS=1500)
    out = p.communicate(timeout=60)[0]
    waited = time.monotonic() - t0
    assert p.returncode == 3, out
    assert lines(out)[-1]["code"] == ERR_TIMEOUT, out
    assert 1.4 < waited < 15, waited
    print(f"rendezvous gave up after {waited:.2f} s (timeout 1.5 s)")


def test_killing_a_rank_mid_loop_fails_the_others_within_the_timeout(tmp_path):
    timeout_ms = 3000
    procs = [start(tmp_path, r, 3, "loop", MLOS_COLLECTIVE_TIMEOUT_MS=timeout_ms) for r in range(3)]
    for p in procs:
        ready = p.stdout.readline()
        assert '"ready"' in ready, ready + p.stdout.read()
    time.sleep(0.2)
    killed_ns = time.monotonic_ns()
    procs[2].send_signal(signal.SIGKILL)
    procs[2].wait(10)
    for p in procs[:2]:
        out = p.communicate(timeout=60)[0]
        assert p.returncode == 3, out
        err = lines(out)[-1]
        assert err["code"] in (ERR_PEER_LOST, ERR_TIMEOUT), err
        delay_ms = (err["t_ns"] - killed_ns) / 1e6
        assert delay_ms < timeout_ms + 2000, delay_ms
        print(f"survivor saw {err['code']} {delay_ms:.0f} ms after the kill: {err['message'][:120]}")


def test_a_rank_given_to_two_processes_is_refused_and_freed_when_its_holder_dies(tmp_path):
    """FileStore: ranks 0 and 1 run; a second process given rank 1 is
    refused at once with INVALID_ARGUMENT (the first holds the rank's lock
    in the store's directory) and the running ranks go on. Once they are
    gone the lock dies with them: a new process given rank 1 in the same
    group and directory is not refused (alone, it then waits for rank 0 and
    times out)."""
    procs = [start(tmp_path, r, 2, "loop") for r in range(2)]
    try:
        for p in procs:
            ready = p.stdout.readline()
            assert '"ready"' in ready, ready + p.stdout.read()
        twin = start(tmp_path, 1, 2, "check")
        out = twin.communicate(timeout=60)[0]
        assert twin.returncode == 3, out
        err = lines(out)[-1]
        assert err["code"] == ERR_INVALID_ARGUMENT and "rank 1 is already taken" in err["message"], err
        assert all(p.poll() is None for p in procs), "the running ranks stopped"
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    again = start(tmp_path, 1, 2, "check", MLOS_COLLECTIVE_TIMEOUT_MS=1500)
    out = again.communicate(timeout=60)[0]
    err = lines(out)[-1]
    assert err["code"] != ERR_INVALID_ARGUMENT and "already taken" not in err["message"], err


def test_typed_allreduce_for_every_dtype_and_op(tmp_path):
    world = 3
    procs = [start(tmp_path, r, world, "typed") for r in range(world)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    assert_typed_results(outs, world)


def fnv(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return f"{h:016x}"


def pattern(rank, n):
    return bytes((31 * rank + i) & 0xFF for i in range(n))


@pytest.mark.parametrize("world", [2, 3])
def test_broadcast_allgather_alltoall_gather_and_scatter_move_every_byte(tmp_path, world):
    """Broadcast from every root and all-gather (input apart and in place)
    over 0, 1, 13 and 300000 bytes: every rank holds the root's bytes, or
    every rank's in rank order (checked through a hash of what it holds);
    an uneven all-to-all of about as many bytes per chunk, checked byte for
    byte by each rank, and refused over overlapping buffers; gather to and
    scatter from every root, checked byte for byte by each rank (the root's
    buffer untouched on the others)."""
    procs = [start(tmp_path, r, world, "moves") for r in range(world)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    results = [lines(o) for o in outs]
    assert all(r == results[0] for r in results), "ranks disagree"
    cases = results[0]
    assert len(cases) == 4 * (3 * world + 3)
    for c in cases:
        n = c["bytes"]
        if c["op"] in ("alltoall", "gather", "scatter"):  # checked byte for byte by each rank
            assert c["checked"] is True, c
        elif c["op"] == "broadcast":
            assert c["fnv"] == fnv(pattern(c["root"], n)), c
        else:
            assert c["fnv"] == fnv(b"".join(pattern(r, n) for r in range(world))), c


@pytest.mark.parametrize("world", [2, 3])
def test_point_to_point_transfers_arrive_in_order_and_beside_a_collective(tmp_path, world):
    """A ring of sends and receives over 0, 1, 13 and 300000 bytes, checked
    byte for byte by each receiver; between ranks 0 and 1: three sends of
    one tag arrive in posting order, a receive from any rank names its
    sender, a send completes while an all-reduce of the same handle waits
    on another thread (posting it must not queue behind the collective, or
    both ranks would wait out the timeout); bad arguments are refused."""
    procs = [start(tmp_path, r, world, "transfers") for r in range(world)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    for rank, out in enumerate(outs):
        cases = lines(out)
        rings = [c for c in cases if c["op"] == "ring"]
        assert [c["bytes"] for c in rings] == [0, 1, 13, 300000], out
        assert all(c["checked"] and c["peer"] == (rank - 1) % world for c in rings), out
        by_op = {c["op"]: c for c in cases}
        assert by_op["refusals"]["checked"] is True, out
        if rank <= 1:
            assert by_op["ordered"]["checked"] is True, out
            assert by_op["beside_collective"]["checked"] is True, out
            assert by_op["any_source"]["value"] == 4242, out
            assert by_op["any_source"]["peer"] == 1 - rank, out


def test_group_threads_run_on_the_allocation_and_communication_is_profiled(tmp_path):
    """The ranks never bind their own thread (it may run on every CPU), yet
    the thread Gloo starts for the group must be confined to the
    allocation's CPUs, as seen in /proc; and the phase profile must count
    the barrier and the three all-reduces of 4000 bytes, with their time."""
    world = 2
    procs = [start(tmp_path, r, world, "placement") for r in range(world)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * world, outs
    for out in outs:
        report = lines(out)[-1]
        cpus = set(report["cpus"])
        assert report["threads"], "the group started no thread: " + out
        for t in report["threads"]:
            assert parse_cpu_list(t["allowed"]) <= cpus, (t, cpus)
        prof = report["profile"]
        assert prof["collective_calls"] == 4 and prof["collective_bytes"] == 3 * 4000, prof
        assert 0 < prof["communication_seconds"] < 30, prof


def parse_cpu_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus
