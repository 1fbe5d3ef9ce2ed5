# SPDX-License-Identifier: Apache-2.0
"""A torchrun worker for test_torchrun_ranks.py: after a matmul (so torch's
intra-op pool exists), writes what this rank runs on, read from /proc, to
OUTDIR/rank<LOCAL_RANK>.json. Unmodified with respect to mlOS: everything it
sees comes from `mlos run` and the zero-code hook."""
import json
import os
import sys

import torch


def allowed(path):
    with open(path) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return ""


a = torch.randn(512, 512)
for _ in range(4):
    a = torch.tanh(a @ a)  # runs on the intra-op pool
tasks = sorted(os.listdir("/proc/self/task"), key=int)
seen = {
    "local_rank": int(os.environ["LOCAL_RANK"]),
    "torch_threads": torch.get_num_threads(),
    "main_allowed": allowed(f"/proc/self/task/{os.getpid()}/status"),
    "threads_allowed": {t: allowed(f"/proc/self/task/{t}/status") for t in tasks},
    "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    "mlos_cpus": os.environ.get("MLOS_CPUS"),
    "hooked": "mlos_training.autostart" in sys.modules,
}
with open(os.path.join(sys.argv[1], f"rank{seen['local_rank']}.json"), "w") as f:
    json.dump(seen, f)
