# SPDX-License-Identifier: Apache-2.0
"""YOLOv8n trained with Ultralytics on the showcase's generated dataset, as
a user would write it (no mlOS code): the showcase's settings (320 px,
batch 16, one DataLoader worker, random init from yolov8n.yaml, CPU), its
offline measures, one epoch, timed after its first --warmup-batches.

    python train_yolo.py --dataset DIR [--images N] [--warmup-batches 2] [--threads N]

DIR holds the showcase's dataset (made there on first use, from
examples/yolo_showcase/make_dataset.py; 200 images give 10 training
batches). Prints the suite's JSON line: samples_per_s is the images of the
batches after the warm-up over their wall time (callbacks
on_train_batch_end and on_train_epoch_end: training; the run ends there,
before Ultralytics validates).
On the CPU, Ultralytics trains with torch.set_num_threads(cpu_count - 1)
and no DataLoader workers, whatever it is told; --threads (an expert's
hand setting) sets torch's threads again when training starts."""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from process_facts import runtime_libraries

SHOWCASE = Path(__file__).resolve().parents[3] / "examples" / "yolo_showcase"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--images", type=int, default=200, help="train+val images, 20%% val (default 200)")
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--warmup-batches", type=int, default=2)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads when training starts")
    a = ap.parse_args()
    if a.warmup_batches < 1:
        ap.error("--warmup-batches must be at least 1")
    sys.path.insert(0, str(SHOWCASE))
    from make_dataset import make_dataset
    from showcase import configure_offline, configure_settings

    work = Path(tempfile.mkdtemp(prefix="yolo-run-"))  # settings, font, weights: removed at exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    configure_offline(work / "config")
    data_yaml = a.dataset / "data.yaml"
    if not data_yaml.exists():
        data_yaml = make_dataset(a.dataset, images=a.images, imgsz=a.imgsz, seed=0)
    import torch
    from ultralytics import YOLO

    configure_settings(work)
    model = YOLO("yolov8n.yaml")
    batch_ends, threads = [], []

    def set_threads(trainer):
        if a.threads:
            torch.set_num_threads(a.threads)

    def batch_ended(trainer):
        batch_ends.append(time.perf_counter())
        threads.append(torch.get_num_threads())

    def epoch_ended(trainer):
        """Reports and ends the run here: the validation and final
        evaluation that follow are not training, and would double a
        run's length. SystemExit unwinds normally, so exit handlers run
        (mlOS's zero-code mode records its step times in one)."""
        batch_ends.append(time.perf_counter())
        report(len(trainer.train_loader.dataset))
        raise SystemExit(0)

    def report(images):
        steps = len(batch_ends) - 1 - a.warmup_batches
        if steps < 1:
            sys.exit(f"train_yolo: {len(batch_ends) - 1} batches, not more than --warmup-batches {a.warmup_batches}")
        timed_images = images - a.warmup_batches * a.batch
        seconds = batch_ends[-1] - batch_ends[a.warmup_batches - 1]
        print(json.dumps({"samples_per_s": timed_images / seconds, "epoch_images": images, "steps": steps,
                          "seconds": seconds, "threads": threads[-1], "cpus": sorted(os.sched_getaffinity(0)),
                          **runtime_libraries()}), flush=True)

    model.add_callback("on_pretrain_routine_start", set_threads)
    model.add_callback("on_train_batch_end", batch_ended)
    model.add_callback("on_train_epoch_end", epoch_ended)
    model.train(data=str(data_yaml), epochs=1, imgsz=a.imgsz, batch=a.batch, device="cpu", workers=a.workers,
                pretrained=False, amp=False, plots=False, val=False, seed=0, deterministic=True,
                project=str(work / "runs"), name="train", exist_ok=True, verbose=False)


if __name__ == "__main__":
    main()
