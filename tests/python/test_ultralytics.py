# SPDX-License-Identifier: Apache-2.0
"""The Ultralytics integration, on real (short, offline) YOLOv8n training
runs in subprocesses (yolo_train.py): phases counted, torch's threads and
DataLoader workers' CPUs read from the training process and /proc, last.pt
replaced atomically between epochs (a descriptor held on the old file keeps
its bytes) where plain Ultralytics overwrites it in place, and everything
put back on success, on an exception mid-training and on a bad dataset."""
import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, clean_env, mlos_cli

pytest.importorskip("ultralytics")

import mlos_training  # noqa: E402
from mlos_training.cpu_list import parse_cpu_list  # noqa: E402

needs_two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                    reason="needs 2 CPUs to tell mlOS's thread count from Ultralytics' (cpus - 1)")
ALL_RESTORED = {"write_bytes": True, "seed_worker": True, "strip_optimizer": True}


def train(tmp_path, mode, prefix=()):
    # The thread governor is off: these tests check how the integration
    # sizes torch's pool from the allocation, and the governor would resize
    # it to whatever else runs on a shared machine (its own tests are in
    # test_thread_governor.py).
    env = dict(clean_env(tmp_path), MLOS_ADAPT_THREADS="0")
    r = subprocess.run([*prefix, sys.executable, str(HERE / "yolo_train.py"), str(tmp_path / "out"), mode],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def phase(name):
    return mlos_training.PHASE_NAMES.index(name)


def test_a_run_on_a_given_context_is_phase_marked_and_its_checkpoints_atomic(tmp_path):
    seen, _ = train(tmp_path, "explicit")
    assert seen["error"] is None
    [report] = seen["reports"]
    entries = report["phase_profile"]["entries"]
    assert report["batches"] == 8  # 2 epochs x 4 batches
    assert entries[phase("BACKWARD")] == report["batches"]  # one backward per batch, from the hook on the loss
    assert entries[phase("FORWARD")] >= report["batches"]
    assert entries[phase("DATA_LOADING")] >= report["batches"]
    assert entries[phase("OPTIMIZER")] == report["optimizer_steps"] >= 1  # the optimizer_step event fires
    assert entries[phase("CHECKPOINT")] >= 2 + 1  # a save per epoch, the final strip
    # The trainer ran on the context's CPU; its workers on the node's CPUs,
    # not the one CPU they would inherit from the bound main thread.
    assert seen["main_cpus"] == [str(c) for c in seen["ctx"]["cpus"]]
    assert seen["torch_threads"] == [seen["ctx"]["recommended_threads"]]
    assert seen["workers"], "workers=1 was not restored (Ultralytics forces 0 on CPU)"
    assert {frozenset(parse_cpu_list(c)) for c in seen["workers"].values()} == {frozenset(report["worker_cpus"])}
    assert len(report["worker_cpus"]) > len(seen["ctx"]["cpus"]) or len(os.sched_getaffinity(0)) == 1
    # last.pt was replaced by rename: the file held open after epoch 1 is
    # unlinked and still holds epoch 1's bytes.
    assert seen["last_pt"] == {"held_links": 0, "held_unchanged": True, "same_inode": False}
    assert [w["path"].rsplit("/", 1)[1] for w in report["atomic_writes"]].count("last.pt") == 2
    assert seen["last_pt_epoch"] == -1  # the final strip wrote a loadable, stripped checkpoint
    assert seen["restored"] == ALL_RESTORED


def test_plain_ultralytics_overwrites_last_pt_in_place_and_uses_one_thread(tmp_path):
    """The control for the test above: what the integration changes."""
    seen, _ = train(tmp_path, "baseline")
    assert seen["last_pt"] == {"held_links": 1, "held_unchanged": False, "same_inode": True}
    assert seen["torch_threads"] == [seen["ultralytics_threads"]]
    assert seen["workers"] == {}


@needs_two_cpus
def test_without_a_context_the_integration_allocates_sizes_threads_and_releases(tmp_path):
    seen, _ = train(tmp_path, "owned")
    [report] = seen["reports"]
    assert len(report["cpus"]) >= 2
    assert seen["torch_threads"] == [report["torch_threads"]] != [seen["ultralytics_threads"]]
    assert seen["live_allocations"] == 0
    assert seen["restored"] == ALL_RESTORED


def test_an_exception_mid_training_releases_and_restores(tmp_path):
    seen, _ = train(tmp_path, "fail")
    assert seen["error"] == "RuntimeError: failing on purpose at the second batch"
    [report] = seen["reports"]  # written by the teardown callback
    assert report["batches"] == 1 and report["phase_profile"] is not None
    assert seen["live_allocations"] == 0
    assert seen["restored"] == ALL_RESTORED


def test_a_bad_dataset_fails_before_anything_is_taken(tmp_path):
    seen, _ = train(tmp_path, "bad-data")
    assert "does not exist" in seen["error"]
    assert seen["reports"] == [] and seen["live_allocations"] == 0
    assert seen["restored"] == ALL_RESTORED


@needs_two_cpus
def test_zero_code_mode_gives_an_unmodified_yolo_run_the_callbacks(tmp_path):
    seen, stderr = train(tmp_path, "plain", prefix=(mlos_cli(), "run", "--cpus", "2", "--profile", "--"))
    assert seen["error"] is None
    assert seen["torch_threads"] == [2] != [seen["ultralytics_threads"]]
    assert seen["last_pt"]["held_links"] == 0 and seen["last_pt"]["held_unchanged"]
    assert "CHECKPOINT" in stderr and "BACKWARD" in stderr  # the profile printed at exit
