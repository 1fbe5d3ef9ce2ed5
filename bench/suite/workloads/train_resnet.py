# SPDX-License-Identifier: Apache-2.0
"""ResNet-18 (torchvision, random initialisation) trained on synthetic
tensors: the compute-bound image model, as a user would write it (no mlOS
code). Batch 32 at 224 px by default; --size 112 is the smaller variant.

    python train_resnet.py [--size 224] [--batch 32] [--seconds S]"""
import argparse

import torch
import torchvision
from torch import nn

from timed_steps import parse_args, run, training_step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=32)
    a = parse_args(ap, warmup=4.0, seconds=12.0)
    net = torchvision.models.resnet18(weights=None, num_classes=1000)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(a.batch, 3, a.size, a.size), torch.randint(0, 1000, (a.batch,))
    run(training_step(opt, lambda: loss_fn(net(x), y)), a.batch, a.warmup, a.seconds)


if __name__ == "__main__":
    main()
