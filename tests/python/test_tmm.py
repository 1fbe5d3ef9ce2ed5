# SPDX-License-Identifier: Apache-2.0
"""Tensor pools from Python: torch and numpy views without a copy (the
data pointer lies in the pool's mapping), lifetimes (a view keeps its
buffer; release twice or after close is an error, never a crash), the
job's memory budget, VmLck, the sealed descriptor, and refused values."""
import gc
import mmap
import os

import numpy as np
import pytest
import torch

import mlos_training
from mlos_training.errors import CODES, MLOSError
from mlos_training.tmm import PoolBuffer, TensorPool

MiB = 1 << 20


def arena_range(pool):
    """[start, end) of the pool's arena in /proc/self/maps, found by its
    memfd name: what the kernel says, not what the library reports."""
    fd = pool.fileno()
    target = os.readlink(f"/proc/self/fd/{fd}")  # "/memfd:mlos-tmm:NAME (deleted)"
    with open("/proc/self/maps") as maps:
        for line in maps:
            if target.split(" ")[0] in line:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                return start, end
    raise AssertionError(f"{target} not mapped")


def vm_locked_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    raise AssertionError("no VmLck")


def test_tensor_and_array_share_the_pool_memory():
    pool = TensorPool("16MiB", name="views")
    start, end = arena_range(pool)
    buf = pool.acquire(MiB)
    t = buf.as_tensor(torch.float32, (512, 512))
    a = buf.as_numpy(np.float32, (512, 512))
    assert start <= t.data_ptr() < end and t.data_ptr() + MiB <= end
    assert t.data_ptr() == a.ctypes.data == buf.address
    assert a.flags.writeable
    a[3, 4] = 2.5
    assert t[3, 4].item() == 2.5  # one memory
    raw = torch.from_dlpack(buf)  # the DLPack protocol itself
    assert raw.dtype == torch.uint8 and raw.numel() == buf.capacity and raw.data_ptr() == buf.address
    del t, a, raw
    buf.release()


def test_a_view_keeps_its_buffer_until_it_goes():
    pool = TensorPool("8MiB")
    buf = pool.acquire(64 << 10)
    t = buf.as_tensor(torch.int32)
    buf.release()
    assert pool.stats()["buffers_in_use"] == 1  # the tensor still holds it
    t.fill_(7)
    assert int(t.sum()) == 7 * t.numel()
    del t
    gc.collect()
    stats = pool.stats()
    assert stats["buffers_in_use"] == 0 and stats["bytes_cached"] == 64 << 10


def test_pool_tensor_returns_its_buffer_for_reuse():
    pool = TensorPool("32MiB")
    x = pool.tensor((16, 3, 64, 64))
    first = x.data_ptr()
    assert x.shape == (16, 3, 64, 64) and x.dtype == torch.float32
    del x
    y = pool.tensor((16, 3, 64, 64))
    assert y.data_ptr() == first
    assert pool.stats()["reuse_hits"] == 1
    z = pool.numpy((10, 10), "int64")
    assert z.dtype == np.int64 and z.shape == (10, 10)


def test_release_twice_or_after_close_raises():
    pool = TensorPool("4MiB")
    a, b = pool.acquire(4096), pool.acquire(4096)
    a.release()
    with pytest.raises(MLOSError) as e:
        a.release()
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    with pytest.raises(MLOSError):
        a.as_tensor()
    t = b.as_tensor()
    pool.close()
    with pytest.raises(MLOSError) as e:
        b.release()
    assert e.value.code == CODES["INVALID_HANDLE"]
    with pytest.raises(MLOSError) as e:
        pool.acquire(10)
    assert e.value.code == CODES["INVALID_HANDLE"]
    t.fill_(1)  # still valid memory after close
    assert int(t.sum()) == t.numel()
    del t, b
    gc.collect()  # the arena goes now; nothing crashes


def test_a_full_pool_raises_no_memory_and_changes_nothing():
    pool = TensorPool(MiB)
    held = [pool.acquire(256 << 10) for _ in range(4)]
    with pytest.raises(MLOSError) as e:
        pool.acquire(4096)
    assert e.value.code == CODES["NO_MEMORY"]
    stats = pool.stats()
    assert stats["buffers_in_use"] == 4 and stats["failed_acquires"] == 1
    for b in held:
        b.release()


def test_bad_values_raise_documented_errors():
    with pytest.raises(MLOSError) as e:
        TensorPool(0)
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    with pytest.raises(MLOSError) as e:
        TensorPool("12 furlongs")
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    with pytest.raises(MLOSError) as e:
        TensorPool(-1)
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    with pytest.raises(MLOSError) as e:
        TensorPool(MiB, numa_node=5000)
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    with pytest.raises(TypeError):
        TensorPool(MiB, name=3)
    pool = TensorPool(MiB)
    with pytest.raises(MLOSError) as e:
        pool.acquire(2 * MiB)
    assert e.value.code == CODES["INVALID_ARGUMENT"]
    buf = pool.acquire(4096)
    with pytest.raises(MLOSError):
        buf.as_tensor(torch.float32, (2000,))  # 8000 bytes > 4096
    with pytest.raises(BufferError):
        buf.__dlpack__(copy=True)


def test_a_jobs_pools_count_against_its_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("MLOS_RUNTIME_DIR", str(tmp_path))
    res = mlos_training.request_resources(num_cpus=1, memory_bytes=8 * MiB, exclusive_cpus=False)
    try:
        first = TensorPool("6MiB", resources=res)
        with pytest.raises(MLOSError) as e:
            TensorPool("4MiB", resources=res)
        assert e.value.code == CODES["INSUFFICIENT_MEMORY"]
        first.close()
        del first
        gc.collect()
        TensorPool("4MiB", resources=res).close()
    finally:
        mlos_training.release_resources(res)
    with pytest.raises(MLOSError) as e:
        TensorPool(MiB, resources=res)
    assert e.value.code == CODES["INVALID_HANDLE"]


def test_a_locked_pool_shows_in_vmlck():
    before = vm_locked_kb()
    try:
        pool = TensorPool("8MiB", locked=True)
    except MLOSError as e:
        if e.code == CODES["LOCK_LIMIT"]:
            pytest.skip(f"cannot lock 8 MiB here: {e}")
        raise
    assert vm_locked_kb() - before == 8 * 1024
    assert pool.stats()["locked_bytes"] == 8 * MiB
    pool.close()
    del pool
    gc.collect()
    assert vm_locked_kb() == before


def test_the_descriptor_maps_the_same_memory_elsewhere():
    pool = TensorPool("4MiB", name="shared")
    buf = pool.acquire(MiB)
    arr = buf.as_numpy(np.uint8)
    arr[:] = 0
    # Another mapping of the descriptor (what a loader process does) writes;
    # the trainer's view sees it.
    fd = os.dup(pool.fileno())
    with mmap.mmap(fd, 4 * MiB) as other:
        other[buf.offset:buf.offset + 4] = b"mlos"
    os.close(fd)
    assert bytes(arr[:4]) == b"mlos"
    with pytest.raises(MLOSError) as e:
        TensorPool(MiB, private=True).fileno()
    assert e.value.code == CODES["UNSUPPORTED"]


def test_prewarm_trim_and_notes():
    pool = TensorPool("32MiB", huge_pages=True)
    pool.prewarm("4MiB", 2)
    stats = pool.stats()
    assert stats["resident_bytes"] == 8 * MiB and stats["bytes_cached"] == 8 * MiB
    assert pool.trim() == 8 * MiB
    assert pool.stats()["resident_bytes"] == 0
    notes = pool.notes()
    assert (stats["huge_pages"] == "none") == ("huge_pages:" in notes)
    assert isinstance(PoolBuffer, type)
