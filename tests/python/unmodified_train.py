# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch training script with no mlOS in it: the zero-code-change
test runs it under `mlos run`. Prints one JSON line of what it saw."""
import json
import os
import sys

import torch


class Samples(torch.utils.data.Dataset):
    """Runs a module in the worker processes, as torchvision transforms do:
    the zero-code mode's global module hooks fire there too."""

    transform = torch.nn.Identity()

    def __len__(self):
        return 24

    def __getitem__(self, i):
        with open(f"/proc/{os.getpid()}/status") as f:
            allowed = f.read().split("Cpus_allowed_list:")[1].split()[0]
        return self.transform(torch.full((4,), float(i))), torch.tensor(float(i % 2)), os.getpid(), allowed


model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
workers = {}
steps = 0
for x, y, pids, allowed in torch.utils.data.DataLoader(Samples(), batch_size=4, num_workers=2):
    loss = ((model(x).squeeze(1) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
    workers.update(zip(pids.tolist(), allowed))
with open("/proc/self/status") as f:
    main_allowed = f.read().split("Cpus_allowed_list:")[1].split()[0]
print(json.dumps({"steps": steps, "threads": torch.get_num_threads(), "main_allowed": main_allowed,
                  "workers": workers, "hooked": "mlos_training.autostart" in sys.modules}), flush=True)
