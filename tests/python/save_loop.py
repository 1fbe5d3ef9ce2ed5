# SPDX-License-Identifier: Apache-2.0
"""Saves a 24 MB state to argv[1] forever, with a growing version; argv[2]
"1": inside mlos_checkpoint (atomic), "0": plain torch.save. Prints
"saved" after the first complete save."""
import sys

import torch

from mlos_training.pytorch import mlos_checkpoint

path, durable = sys.argv[1], sys.argv[2] == "1"
w = torch.zeros(6 << 20)
version = 0
while True:
    version += 1
    w.fill_(version)
    state = {"w": w, "version": version}
    if durable:
        with mlos_checkpoint():
            torch.save(state, path)
    else:
        torch.save(state, path)
    if version == 1:
        print("saved", flush=True)
