# SPDX-License-Identifier: Apache-2.0
"""AsyncCheckpointer (issue 15 point 7): an asynchronous durable save of a
state dict through the job's locked staging and the C writer. Checked: the
file loads with torch.load and verifies with the library's checksum; the
staging is in VmLck and counted against memory_bytes; a failed write raises
on wait and loses nothing; a kill during the write leaves the previous
checkpoint; torch itself is not patched."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

import mlos_training as m
from mlos_training import MLOSError
from mlos_training.checkpoint import CheckpointWriter, load_latest, verify_file
from mlos_training.pytorch import AsyncCheckpointer, load_checkpoint

from conftest import clean_env
from test_pinned_memory import vm_lck_kb

MIB = 1 << 20


def state(seed, mib=4):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(mib * MIB // 4, generator=g), "step": torch.tensor(seed), "b": torch.arange(7)}


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def files(d):
    """The visible files of d but the tests' runtime directory (conftest)."""
    return sorted(p for p in os.listdir(d) if not p.startswith(".") and p != "runtime")


def test_the_file_loads_with_torch_and_verifies_with_the_librarys_checksum(tmp_path):
    original_save = torch.save
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        ckpt = AsyncCheckpointer(tmp_path, ctx, keep_last=2)
        before = vm_lck_kb()
        pending = ckpt.save(state(1))
        assert torch.save is original_save  # nothing of torch is patched
        assert ckpt.staging_bytes >= 4 * MIB and vm_lck_kb() - before >= 4 * 1024  # locked staging
        path = pending.wait()
        assert pending.done() and pending.io_priority_applied
        assert same(torch.load(path), state(1))  # the footer after the zip does not bother torch
        seq, size = verify_file(path)
        assert seq == pending.sequence == 1 and size == os.path.getsize(path) - 48
        for i in (2, 3):
            ckpt.save(state(i))
        assert ckpt.wait().endswith(f"ckpt-{3:020d}.mlosckpt")
        assert ctx.phase_profile()["entries"][m.PHASE_CHECKPOINT] == 3
        ckpt.close()
        assert vm_lck_kb() - before < 4 * 1024  # staging freed
    loaded, seq = load_checkpoint(tmp_path)
    assert seq == 3 and same(loaded, state(3))
    assert files(tmp_path) == [f"ckpt-{2:020d}.mlosckpt", f"ckpt-{3:020d}.mlosckpt"]  # keep_last


def test_a_damaged_newest_file_is_skipped_by_the_loader(tmp_path):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx, AsyncCheckpointer(tmp_path, ctx) as ckpt:
        ckpt.save(state(1)).wait()
        path = ckpt.save(state(2)).wait()
    with open(path, "r+b") as f:
        f.seek(1000)
        f.write(b"\xff" * 8)
    with pytest.raises(MLOSError) as e:
        verify_file(path)
    assert e.value.name == "CHECKPOINT_CORRUPT"
    loaded, seq = load_checkpoint(tmp_path)
    assert seq == 1 and same(loaded, state(1))


def test_the_staging_counts_against_memory_bytes_and_a_refusal_saves_nothing(tmp_path):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, memory_bytes=4 * MIB) as ctx:
        ckpt = AsyncCheckpointer(tmp_path, ctx)
        with pytest.raises(MLOSError) as e:
            ckpt.save(state(1, mib=8))
        assert e.value.name == "INSUFFICIENT_MEMORY"
        assert files(tmp_path) == []
        ckpt.save(state(1, mib=1)).wait()  # a smaller one fits, and takes sequence 1
        assert files(tmp_path) == [f"ckpt-{1:020d}.mlosckpt"]
        assert ctx.phase == m.PHASE_IDLE  # the phase before the save came back after the refusal


def test_without_a_job_it_is_refused(tmp_path):
    with pytest.raises(MLOSError) as e:
        AsyncCheckpointer(tmp_path)
    assert e.value.name == "INVALID_ARGUMENT"


def test_a_failed_write_raises_on_wait_and_loses_nothing(tmp_path):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx, AsyncCheckpointer(tmp_path, ctx) as ckpt:
        ckpt.save(state(1)).wait()
        (tmp_path / f"ckpt-{2:020d}.mlosckpt").mkdir()  # the rename onto it must fail
        pending = ckpt.save(state(2))
        with pytest.raises(MLOSError) as e:
            pending.wait()
        assert e.value.name == "IO"
        loaded, seq = load_checkpoint(tmp_path)
        assert seq == 1 and same(loaded, state(1))
        assert not any(p.endswith(".tmp") for p in os.listdir(tmp_path))
        assert ckpt.save(state(3)).wait().endswith(f"ckpt-{3:020d}.mlosckpt")  # still usable
    assert same(load_checkpoint(tmp_path)[0], state(3))


def test_the_async_save_is_also_loadable_through_the_low_level_writer(tmp_path):
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        with CheckpointWriter(tmp_path, prefix="raw", resources=ctx) as w:
            ticket = w.save_async(b"x" * 100000)
            assert w.wait(ticket).endswith(f"raw-{1:020d}.mlosckpt")
            assert w.info()["staging_locked"] and w.info()["io_priority_applied"]
            with pytest.raises(MLOSError) as e:
                w.wait(99)
            assert e.value.name == "INVALID_ARGUMENT"
    payload, seq, skipped = load_latest(tmp_path, "raw")
    assert (payload, seq, skipped) == (b"x" * 100000, 1, 0)


KILLED = textwrap.dedent("""
    import sys, time, torch
    import mlos_training as m
    from mlos_training.pytorch import AsyncCheckpointer
    sys.path.insert(0, sys.argv[2])
    from test_async_checkpoint import state
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        ckpt = AsyncCheckpointer(sys.argv[1], ctx)
        ckpt.save(state(1)).wait()
        ckpt.save(state(2, mib=256))
        print("writing", flush=True)
        time.sleep(60)
""")


def test_a_kill_during_the_background_write_leaves_the_previous_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(ckpt), os.path.dirname(__file__)],
                         env=clean_env(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "writing"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    for name in files(ckpt):
        if name.endswith(".mlosckpt"):
            verify_file(ckpt / name)  # every complete-named file verifies: none is torn
    loaded, seq = load_checkpoint(ckpt)
    assert (seq, same(loaded, state(1))) == (1, True) or (seq, same(loaded, state(2, mib=256))) == (2, True)
