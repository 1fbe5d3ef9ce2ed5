# SPDX-License-Identifier: Apache-2.0
"""mlos_training.pytorch with a real torch: thread pools sized to the
allocation, DataLoader workers placed (read from /proc), phases counted by
the automatic hooks, an atomic torch.save that survives SIGKILL mid-save,
release on exceptions, memory-pressure callbacks from Python."""
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

import mlos_training as m
from mlos_training.pytorch import MLOSDataLoader, MLOSTrainingContext, mlos_checkpoint

from conftest import HERE, clean_env


def proc_allowed(pid):
    with open(f"/proc/{pid}/status") as f:
        return f.read().split("Cpus_allowed_list:")[1].split()[0]


class WhereAmI(torch.utils.data.Dataset):
    """Each sample says which process produced it and where it may run."""

    def __len__(self):
        return 32

    def __getitem__(self, i):
        return torch.full((4,), float(i)), torch.tensor(float(i % 2)), os.getpid(), proc_allowed(os.getpid())


def cpu_list(cpus):
    cpus = sorted(cpus)
    return ",".join(str(c) for c in cpus) if len(cpus) < 2 or cpus[-1] - cpus[0] != len(cpus) - 1 \
        else f"{cpus[0]}-{cpus[-1]}"


def test_threads_are_sized_to_the_allocation_and_restored():
    before = torch.get_num_threads()
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        assert torch.get_num_threads() == ctx.resources.recommended_threads == 1
        assert proc_allowed(f"{os.getpid()}/task/{threading.get_native_id()}") == cpu_list(ctx.cpus)
    assert torch.get_num_threads() == before


def test_dataloader_workers_run_on_the_allocations_node_and_batches_are_data_loading():
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        loader = MLOSDataLoader(WhereAmI(), batch_size=4, num_workers=2)
        seen = {}
        for _, _, pids, allowed in loader:
            seen.update(zip(pids.tolist(), allowed))
        assert os.getpid() not in seen and len(seen) == 2, seen  # two worker processes
        assert set(seen.values()) == {cpu_list(loader.mlos_worker_cpus)}
        prof = ctx.phase_profile()
        assert prof["entries"][m.PHASE_DATA_LOADING] >= 1 and prof["seconds"][m.PHASE_DATA_LOADING] > 0


def test_automatic_hooks_mark_forward_backward_optimizer_once_per_step():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 5
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, model=model, optimizer=opt) as ctx:
        for x, y, _, _ in MLOSDataLoader(WhereAmI(), batch_size=32 // steps + 1, num_workers=0):
            loss = ((model(x).squeeze(1) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            model(torch.zeros(1, 4))  # evaluation: FORWARD, and no backward hook is left behind
        prof = ctx.phase_profile()
    e = prof["entries"]
    assert (e[m.PHASE_FORWARD], e[m.PHASE_BACKWARD], e[m.PHASE_OPTIMIZER]) == (steps + 1, steps, steps), e
    assert e[m.PHASE_DATA_LOADING] == steps + 1  # the fetch that ends the epoch too
    # The hooks are gone with the context: no more phases after it.
    model(torch.zeros(1, 4)).sum().backward()


def test_the_context_is_released_when_the_body_raises():
    with pytest.raises(ZeroDivisionError):
        with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
            res = ctx.resources
            1 / 0
    assert res.handle == 0
    with pytest.raises(m.MLOSError):
        m.set_phase(res, m.PHASE_IDLE)


def test_mlos_checkpoint_marks_the_phase_and_writes_a_loadable_file(tmp_path):
    state = {"w": torch.arange(1000, dtype=torch.float32)}
    tmp_path = tmp_path / "ckpt"
    tmp_path.mkdir()
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False) as ctx:
        ctx.set_phase(m.PHASE_OPTIMIZER)
        with mlos_checkpoint(ctx):
            torch.save(state, tmp_path / "a.pt")
            torch.save(state, str(tmp_path / "b.pt"))
        assert ctx.phase == m.PHASE_OPTIMIZER  # put back
        assert ctx.phase_profile()["entries"][m.PHASE_CHECKPOINT] == 1
    for name in ("a.pt", "b.pt"):
        assert torch.equal(torch.load(tmp_path / name)["w"], state["w"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt", "b.pt"]  # no temporaries
    with pytest.raises(m.MLOSError) as e, mlos_checkpoint():
        torch.save(state, tmp_path / "missing" / "c.pt")
    assert e.value.code == -21  # NOT_FOUND: the directory does not exist


@pytest.mark.parametrize("durable", [True, False])
def test_a_save_killed_midway_never_leaves_a_torn_file(tmp_path, durable):
    """A child saves a 24 MB state again and again (version counter inside);
    it is SIGKILLed at random moments. With mlos_checkpoint, the file loads
    after every kill and holds a version the child had reached. Plain
    torch.save is run the same way as a control: it is allowed to tear
    (and usually does), which shows the kill lands mid-save."""
    path = tmp_path / "state.pt"
    torn = 0
    rng = random.Random(7)
    for _ in range(6):
        child = subprocess.Popen([sys.executable, str(HERE / "save_loop.py"), str(path), "1" if durable else "0"],
                                 env=clean_env(tmp_path), stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "saved"  # at least one complete save exists
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        try:
            state = torch.load(path)
            assert state["w"].numel() == 6 << 20 and torch.all(state["w"] == state["version"])
        except Exception:
            torn += 1
    print(f"{'mlos_checkpoint' if durable else 'plain torch.save'}: {torn} torn files in 6 kills")
    if durable:
        assert torn == 0


def test_memory_pressure_callbacks_reach_python():
    """A job whose memory_bytes leaves little room above the anonymous
    memory this process already uses (what the job's budget is measured
    against), then allocates past it: the Python callback hears a level
    above NORMAL with the figures."""
    with open("/proc/self/status") as f:
        rss = int(f.read().split("RssAnon:")[1].split()[0]) << 10
    heard = []
    got = threading.Event()

    def on_pressure(level, info):
        heard.append((level, info))
        if level >= m.MEMORY_MODERATE:
            got.set()

    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, memory_bytes=rss + (96 << 20)) as ctx:
        ctx.resources.register_memory_callback(on_pressure)
        ballast = bytearray(160 << 20)  # touched: anonymous resident memory past the budget
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        assert got.wait(10), heard
        level, info = heard[-1]
        assert info["budget_bytes"] == rss + (96 << 20) and info["available_bytes"] < info["budget_bytes"] * 0.2
        assert ctx.resources.memory_pressure()["level"] >= m.MEMORY_MODERATE
        ctx.resources.unregister_memory_callback(on_pressure)
        with pytest.raises(m.MLOSError) as e:
            ctx.resources.unregister_memory_callback(on_pressure)  # not registered any more
        assert e.value.code == -1
        del ballast


class NamedFiles(torch.utils.data.Dataset):
    """A dataset that names its files as torchvision's ImageFolder does."""

    def __init__(self, n=12):
        self.samples = [(f"/data/img-{i:03d}.jpg", i % 3) for i in range(n)]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return torch.tensor(float(i))


def test_dataloader_announces_each_epochs_file_order_and_records_reads(monkeypatch):
    calls = []
    real_announce, real_record = m.Resources.announce_reads, m.Resources.record_read

    def announce(self, paths):
        calls.append(("plan", list(paths)))
        real_announce(self, paths)  # the real call too: embedded mode takes it

    def record(self, path, offset=0, length=0):
        calls.append(("read", path))
        real_record(self, path, offset, length)

    monkeypatch.setattr(m.Resources, "announce_reads", announce)
    monkeypatch.setattr(m.Resources, "record_read", record)
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False):
        loader = MLOSDataLoader(NamedFiles(), batch_size=4, shuffle=True, num_workers=0)
        assert loader.mlos_announcing is not None
        orders = []
        for epoch in range(2):
            calls.clear()
            seen = [int(i) for batch in loader for i in batch]
            plan = calls[0]
            assert plan[0] == "plan" and plan[1] == [f"/data/img-{i:03d}.jpg" for i in seen]
            assert [c[1] for c in calls[1:]] == plan[1]  # each index recorded as it goes out
            assert sorted(seen) == list(range(12))
            orders.append(seen)
        assert orders[0] != orders[1]  # shuffled anew, announced anew
        assert loader.sampler.num_samples == 12  # the wrapped RandomSampler's own attributes
        unnamed = MLOSDataLoader(WhereAmI(), batch_size=4, num_workers=0)
        assert unnamed.mlos_announcing is None  # nothing to announce
        off = MLOSDataLoader(NamedFiles(), batch_size=4, announce_reads=False, num_workers=0)
        assert off.mlos_announcing is None
        own = torch.utils.data.SequentialSampler(range(12))
        mine = MLOSDataLoader(NamedFiles(), batch_size=4, sampler=own, num_workers=0)
        assert mine.mlos_announcing is None and mine.sampler is own  # a caller's sampler is left alone


def test_a_path_the_library_refuses_stops_the_announcements_not_the_epoch():
    with MLOSTrainingContext(num_cpus=1, exclusive_cpus=False):
        data = NamedFiles(4)
        data.samples[2] = ("", 0)  # an empty path: INVALID_ARGUMENT from the library
        loader = MLOSDataLoader(data, batch_size=2, num_workers=0)
        with pytest.warns(RuntimeWarning, match="not announcing"):
            seen = [int(i) for batch in loader for i in batch]
        assert seen == [0, 1, 2, 3] and loader.mlos_announcing.enabled is False
