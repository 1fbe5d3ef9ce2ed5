# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch loop with no mlOS in it that pauses `argv[1]` seconds
after each optimizer step (logging, a sleep): the zero-code test runs it
under `mlos run --profile` and compares OPTIMIZER time with and without
the pause."""
import sys
import time

import torch

pause = float(sys.argv[1])
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 16), torch.randn(8, 1)
for _ in range(60):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(pause)
