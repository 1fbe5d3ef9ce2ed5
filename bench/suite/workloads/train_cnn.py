# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch training job, as a user would write it (no mlOS code):
a small CNN trained on 32x32 images, either synthetic tensors (compute
only) or JPEG files decoded and augmented in DataLoader workers.

    python train_cnn.py [--data synthetic|jpeg] [--images DIR] [--seconds S]

Trains for --warmup seconds, then counts samples for --seconds, and prints
one JSON line: samples_per_s, steps, torch threads, the main thread's CPUs.
torch's thread count and the workers are left at what the script says
(torch's default unless --threads), so whoever launches it decides the rest
(taskset, OMP_NUM_THREADS, mlos run)."""
import argparse
import json
import os
import time

import torch
from torch import nn

from process_facts import runtime_libraries


def model():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))


class Jpegs(torch.utils.data.Dataset):
    """Decode + random crop + flip + normalise, per sample, in the workers."""

    def __init__(self, directory):
        from torchvision import transforms
        self.files = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".jpg"))
        self.transform = transforms.Compose([
            transforms.RandomResizedCrop(32, scale=(0.5, 1.0)), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.files[i]) as im:
            return self.transform(im.convert("RGB")), i % 10


def synthetic_batches(batch):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64 * batch, 3, 32, 32, generator=g), torch.randint(0, 10, (64 * batch,), generator=g)
    while True:
        for i in range(64):
            yield x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]


def jpeg_batches(directory, batch, workers):
    loader = torch.utils.data.DataLoader(Jpegs(directory), batch_size=batch, shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0, drop_last=True)
    while True:
        yield from loader


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", choices=("synthetic", "jpeg"), default="synthetic")
    ap.add_argument("--images", help="directory of .jpg files (--data jpeg)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers (--data jpeg; default 2)")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own choice)")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--seconds", type=float, default=8.0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = synthetic_batches(a.batch) if a.data == "synthetic" else jpeg_batches(a.images, a.batch, a.workers)
    start = time.perf_counter()
    t0, samples, steps = None, 0, 0
    for x, y in batches:
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.perf_counter()
        if t0 is None:
            if now - start >= a.warmup:
                t0 = now
            continue
        samples += len(y)
        steps += 1
        if now - t0 >= a.seconds:
            break
    print(json.dumps({"samples_per_s": samples / (now - t0), "steps": steps, "seconds": now - t0,
                      "threads": torch.get_num_threads(), "cpus": sorted(os.sched_getaffinity(0)),
                      **runtime_libraries()}), flush=True)


if __name__ == "__main__":
    main()
