# SPDX-License-Identifier: Apache-2.0
"""Locked memory from Python (issue 15 point 8): checkpoint buffers as
tensors without a copy, registered gradient storage locked per phase, and
the LOCK_LIMIT and budget errors, all checked in /proc/self/status."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import mlos_training as m
from mlos_training import MLOSError

from conftest import clean_env

MIB = 1 << 20


def vm_lck_kb():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmLck:")[1].split()[0])


def test_a_locked_buffer_is_in_vmlck_and_its_tensor_is_the_same_memory():
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        before = vm_lck_kb()
        buf = ctx.resources.alloc_checkpoint_buffer(8 * MIB)
        assert vm_lck_kb() - before >= 8 * 1024
        t = buf.tensor(torch.float32)
        assert t.data_ptr() == buf.address and t.numel() == 2 * MIB
        view = buf.memoryview()
        t[5] = 3.5  # written through the tensor, seen through the buffer
        assert view[20:24].cast("f")[0] == 3.5
        view[0:4] = torch.tensor([1.25]).numpy().tobytes()  # and the other way
        assert t[0].item() == 1.25
        with pytest.raises(MLOSError) as e:  # would leave t pointing at unmapped memory
            buf.free()
        assert e.value.name == "INVALID_ARGUMENT" and "in use" in str(e.value)
        assert vm_lck_kb() - before >= 8 * 1024
        del t
        view.release()
        buf.free()
        assert vm_lck_kb() - before < 8 * 1024
        with pytest.raises(MLOSError) as e:
            buf.free()
        assert e.value.name == "INVALID_HANDLE"


def test_a_tensor_outliving_the_allocation_stays_valid_memory():
    ctx = m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False).start()
    before = vm_lck_kb()
    t = ctx.resources.alloc_checkpoint_buffer(4 * MIB).tensor()
    t.fill_(7)
    ctx.close()  # the library unlocks and unmaps the buffer
    assert vm_lck_kb() - before < 4 * 1024
    t.fill_(1)  # ordinary memory at the same address now: no crash
    assert int(t.sum()) == 4 * MIB


def test_the_buffer_counts_against_the_jobs_memory_bytes():
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, memory_bytes=16 * MIB) as ctx:
        with pytest.raises(MLOSError) as e:
            ctx.resources.alloc_checkpoint_buffer(32 * MIB)
        assert e.value.name == "INSUFFICIENT_MEMORY"
        first = ctx.resources.alloc_checkpoint_buffer(10 * MIB)
        with pytest.raises(MLOSError) as e:  # 10 + 10 MiB > 16 MiB
            ctx.resources.alloc_checkpoint_buffer(10 * MIB)
        assert e.value.name == "INSUFFICIENT_MEMORY"
        first.free()
        ctx.resources.alloc_checkpoint_buffer(10 * MIB).free()  # its bytes came back
        for bad in (0, -1):
            with pytest.raises(MLOSError) as e:
                ctx.resources.alloc_checkpoint_buffer(bad)
            assert e.value.name == "INVALID_ARGUMENT"


def test_registered_storage_is_locked_from_backward_until_idle():
    grads = torch.zeros(4 * MIB // 4)
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        before = vm_lck_kb()
        ctx.resources.register_buffer(grads[1:])  # a view: its whole storage is registered
        ctx.set_phase(m.PHASE_FORWARD)
        assert vm_lck_kb() - before < 4 * 1024
        ctx.set_phase(m.PHASE_BACKWARD)
        assert vm_lck_kb() - before >= 4 * 1024
        ctx.set_phase(m.PHASE_OPTIMIZER)
        ctx.set_phase(m.PHASE_DATA_LOADING)
        assert vm_lck_kb() - before >= 4 * 1024  # kept until IDLE
        ctx.set_phase(m.PHASE_IDLE)
        assert vm_lck_kb() - before < 4 * 1024
        ctx.set_phase(m.PHASE_BACKWARD)
        assert vm_lck_kb() - before >= 4 * 1024
        with pytest.raises(MLOSError) as e:
            ctx.resources.register_buffer(grads)  # overlaps
        assert e.value.name == "INVALID_ARGUMENT"
        ctx.resources.unregister_buffer(grads)
        assert vm_lck_kb() - before < 4 * 1024
        with pytest.raises(MLOSError) as e:
            ctx.resources.unregister_buffer(grads)
        assert e.value.name == "INVALID_ARGUMENT"
        with pytest.raises(TypeError):
            ctx.resources.register_buffer(bytearray(10))


def test_gradients_are_locked_while_autograd_runs_backward():
    model = torch.nn.Linear(1024, 2048)  # an 8 MiB weight gradient
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 1024)
    model(x).sum().backward()  # creates .grad; zero_grad(set_to_none=False) keeps it
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, model=model, optimizer=opt) as ctx:
        ctx.resources.register_buffer(model.weight.grad)
        ctx.set_phase(m.PHASE_IDLE)
        before = vm_lck_kb()
        seen = []
        x.requires_grad_(True)
        x.register_hook(lambda g: seen.append(vm_lck_kb()))  # runs late in backward
        opt.zero_grad(set_to_none=False)
        model(x).sum().backward()
        assert seen and seen[0] - before >= 8 * 1024
        opt.step()  # OPTIMIZER, then DATA_LOADING when the step returns: still locked (no munlock per step)
        assert vm_lck_kb() - before >= 8 * 1024
        ctx.set_phase(m.PHASE_IDLE)  # not training: unlocked
        assert vm_lck_kb() - before < 8 * 1024


CHILD = textwrap.dedent("""
    import json, os, resource, sys, warnings
    import torch
    import mlos_training as m
    from mlos_training.pytorch import AsyncCheckpointer, load_checkpoint
    def vm_lck_kb():
        with open("/proc/self/status") as f:
            return int(f.read().split("VmLck:")[1].split()[0])
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (1 << 20, 1 << 20))
    ckpt = sys.argv[1]
    out = {}
    with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, memory_bytes=24 << 20) as ctx:
        try:
            ctx.resources.alloc_checkpoint_buffer(8 << 20)
            out["buffer"] = "ok"
        except m.MLOSError as e:
            out["buffer"] = [e.name, str(e)]
        before = vm_lck_kb()
        buf = ctx.resources.alloc_checkpoint_buffer(8 << 20, allow_unlocked=True)
        out["unlocked_buffer"] = {"locked": buf.locked, "vmlck_kb": vm_lck_kb() - before}
        try:  # 8 MiB held + 20 MiB more: over the 24 MiB budget although unlocked
            ctx.resources.alloc_checkpoint_buffer(20 << 20, allow_unlocked=True)
            out["over_budget"] = "ok"
        except m.MLOSError as e:
            out["over_budget"] = e.name
        buf.free()
        try:
            AsyncCheckpointer(ckpt, ctx, prefix="strict", allow_unlocked_staging=False).save({"w": torch.zeros(2 << 20)})
            out["strict_save"] = "ok"
        except m.MLOSError as e:
            out["strict_save"] = e.name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            saver = AsyncCheckpointer(ckpt, ctx)
            saver.save({"w": torch.arange(2 << 20, dtype=torch.float32)}).wait()
            saver.save({"w": torch.ones(2 << 20)}).wait()
            out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
            out["staging_locked"] = saver.staging_locked
            saver.close()
        state, seq = load_checkpoint(ckpt)
        out["loaded"] = [seq, float(state["w"].sum())]
    out["files"] = sorted(os.listdir(ckpt))
    print(json.dumps(out))
""")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop CAP_IPC_LOCK")
def test_past_rlimit_memlock_without_cap_ipc_lock_buffers_refuse_and_async_saves_stage_unlocked(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    r = subprocess.run(["setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--", sys.executable,
                        "-c", CHILD, str(ckpt)], env=clean_env(tmp_path), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # The published call never hands out an unlocked buffer.
    assert out["buffer"][0] == "LOCK_LIMIT" and "RLIMIT_MEMLOCK" in out["buffer"][1], out
    # Asked for, the fallback is unlocked (nothing in VmLck) and still counted against memory_bytes.
    assert out["unlocked_buffer"] == {"locked": False, "vmlck_kb": 0}, out
    assert out["over_budget"] == "INSUFFICIENT_MEMORY", out
    # AsyncCheckpointer: strict refuses; the default stages unlocked, warns once, and saves for real.
    assert out["strict_save"] == "LOCK_LIMIT", out
    assert len(out["warnings"]) == 1 and "RLIMIT_MEMLOCK" in out["warnings"][0], out
    assert out["staging_locked"] is False, out
    assert out["loaded"] == [2, float(2 << 20)], out
    assert [f for f in out["files"] if f.startswith("strict-")] == [], out
