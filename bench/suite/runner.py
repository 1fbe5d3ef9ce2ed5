# SPDX-License-Identifier: Apache-2.0
"""Launching measured processes: jobs started together (optionally next to
a neighbour process that is not measured), each printing one JSON line."""
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "workloads"


@dataclass
class Job:
    """One measured process: a workload with its arguments, launched
    through `prefix` (nothing, taskset, mlos run ...)."""
    role: str  # "train", "infer": the key of its result
    workload: str  # file in workloads/
    args: list = field(default_factory=list)
    prefix: list = field(default_factory=list)

    def argv(self):
        return [*self.prefix, sys.executable, str(WORKLOADS / self.workload), *map(str, self.args)]


class Failed(RuntimeError):
    pass


def run_together(jobs, env, neighbour=None, timeout=300):
    """Starts the neighbour (if any), lets it get going, starts every job at
    once, waits for all; returns {role: parsed JSON line} (roles made unique
    with #2, #3 ...). The neighbour is killed afterwards, whatever happens."""
    nb = None
    if neighbour:
        nb = subprocess.Popen(neighbour, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                              start_new_session=True)
        time.sleep(0.5)
    try:
        procs = [(job, subprocess.Popen(job.argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
                 for job in jobs]
        results = {}
        for job, p in procs:
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if p.returncode != 0 or not lines:
                raise Failed(f"{' '.join(job.argv())} exited {p.returncode}: {err[-2000:]}")
            role, n = job.role, 2
            while role in results:
                role, n = f"{job.role}#{n}", n + 1
            results[role] = json.loads(lines[-1])
        return results
    finally:
        if nb is not None:
            os.killpg(nb.pid, signal.SIGKILL)
            nb.wait()
