# SPDX-License-Identifier: Apache-2.0
"""A short, offline Ultralytics YOLOv8n training run for the integration
tests. Prints one JSON line of what it observed from outside the
integration: torch threads and main-thread CPUs during training, the
DataLoader worker processes' CPUs (from /proc), what happened to last.pt
between epochs, the integration's report, and whether everything patched
was put back.

usage: yolo_train.py OUT MODE
  explicit   MLOSTrainingContext(num_cpus=1) + add_mlos_callbacks(model, ctx, workers=1)
  owned      add_mlos_callbacks(model): the integration allocates every CPU itself
  fail       as owned, and a callback raises at the second batch
  bad-data   as owned, with a data file that does not exist
  baseline   plain Ultralytics, no mlOS
  plain      no mlOS code at all (for `mlos run`, the zero-code mode)
"""
import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "yolo_showcase"))
from make_dataset import make_dataset  # noqa: E402
from showcase import configure_offline, configure_settings  # noqa: E402

out, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
configure_offline(out / "config")  # before Ultralytics is imported
data = make_dataset(out / "dataset", images=40, imgsz=64, seed=0)
if mode == "bad-data":
    data = out / "missing.yaml"

import torch  # noqa: E402
import ultralytics.data.build as build  # noqa: E402
import ultralytics.engine.trainer as engine  # noqa: E402
from ultralytics import YOLO  # noqa: E402

configure_settings(out)
originals = {"write_bytes": pathlib.Path.write_bytes, "seed_worker": build.seed_worker,
             "strip_optimizer": engine.strip_optimizer}
seen = {"torch_threads": set(), "main_cpus": set(), "workers": {}, "held": None, "error": None}


def cpus_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return f.read().split("Cpus_allowed_list:")[1].split()[0]


def on_train_batch_start(trainer):
    seen["torch_threads"].add(torch.get_num_threads())
    seen["main_cpus"].add(cpus_of(f"self/task/{os.getpid()}"))
    batch, trainer.test_batches = getattr(trainer, "test_batches", 0), getattr(trainer, "test_batches", 0) + 1
    if mode == "fail" and batch == 1:
        raise RuntimeError("failing on purpose at the second batch")


def on_train_batch_end(trainer):
    with open(f"/proc/self/task/{os.getpid()}/children") as f:
        for pid in f.read().split():
            seen["workers"][pid] = cpus_of(pid)


def on_model_save(trainer):
    """After epoch 1: hold last.pt open. After epoch 2: did the held file
    get replaced (atomic rename: the held inode is unlinked and still has
    epoch 1's bytes) or overwritten in place?"""
    if seen["held"] is None:
        f = open(trainer.last, "rb")
        seen["held"] = (f, f.read())
        return
    f, before = seen["held"]
    f.seek(0)
    seen["last_pt"] = {"held_links": os.fstat(f.fileno()).st_nlink, "held_unchanged": f.read() == before,
                       "same_inode": os.fstat(f.fileno()).st_ino == os.stat(trainer.last).st_ino}


model = YOLO("yolov8n.yaml")
mlos = None
ctx = None
if mode in ("explicit", "owned", "fail", "bad-data"):
    import mlos_training
    from mlos_training.integrations.ultralytics import add_mlos_callbacks
    if mode == "explicit":
        ctx = mlos_training.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False).start()
        mlos = add_mlos_callbacks(model, ctx, workers=1)
    else:
        mlos = add_mlos_callbacks(model, workers=1)
model.add_callback("on_train_batch_start", on_train_batch_start)
model.add_callback("on_train_batch_end", on_train_batch_end)
model.add_callback("on_model_save", on_model_save)
try:
    model.train(data=str(data), epochs=2, imgsz=64, batch=8, device="cpu", workers=1, pretrained=False, amp=False,
                plots=False, seed=0, project=str(out / "runs"), name="train", exist_ok=True, verbose=False)
except Exception as e:  # noqa: BLE001  (reported to the test)
    seen["error"] = f"{type(e).__name__}: {e}"

result = {
    "mode": mode, "error": seen["error"], "torch_threads": sorted(seen["torch_threads"]),
    "main_cpus": sorted(seen["main_cpus"]), "workers": seen["workers"], "last_pt": seen.get("last_pt"),
    "restored": {"write_bytes": pathlib.Path.write_bytes is originals["write_bytes"],
                 "seed_worker": build.seed_worker is originals["seed_worker"],
                 "strip_optimizer": engine.strip_optimizer is originals["strip_optimizer"]},
    "reports": mlos.reports if mlos else [],
    "ultralytics_threads": __import__("ultralytics.utils", fromlist=["NUM_THREADS"]).NUM_THREADS,
}
if ctx is not None:
    result["ctx"] = {"cpus": list(ctx.cpus), "recommended_threads": ctx.resources.recommended_threads}
    ctx.close()
if mode != "baseline" and mode != "plain":
    import mlos_training
    result["live_allocations"] = len(mlos_training._live)
if seen["error"] is None and (out / "runs/train/weights/last.pt").exists():
    ckpt = torch.load(out / "runs/train/weights/last.pt", map_location="cpu", weights_only=False)
    result["last_pt_epoch"] = ckpt.get("epoch")
print(json.dumps(result, default=str))
