# SPDX-License-Identifier: Apache-2.0
"""The scenarios of the training-workload comparison: generic Linux (the
program started plainly, with the defaults a user has), expert hand tuning
(taskset pinning and thread counts; every candidate is measured and the best
median is the expert's result) and mlOS (`mlos run` in its zero-code mode:
no information the others lack, no extra flags beyond the CPU count a user
gives the job)."""
from dataclasses import dataclass

from runner import Job

MLOS = "mlOS"
GENERIC = "generic"
EXPERT = "expert: "  # prefix of the expert candidates


def plain():
    return []


def pinned(cpus):
    return ["taskset", "-c", cpus]


def mlos_run(cli, cpus, exclusive=False):
    return [cli, "run", "--cpus", str(cpus), *(["--exclusive"] if exclusive else []), "--"]


@dataclass
class Scenario:
    name: str
    title: str
    kind: str  # throughput | colocated | inference
    configs: dict  # config name -> [Job]
    neighbour: list = None  # argv of the unmeasured neighbour process
    baseline: str = GENERIC  # the config ratios are taken against


def build(cli, ncpu, images, seconds, warmup):
    """Every scenario for a machine with `ncpu` CPUs (the suite is written
    for 2; with more, jobs still take 1 CPU each where the scenario says so)."""
    t = ["--seconds", seconds, "--warmup", warmup]
    last = str(ncpu - 1)  # a one-CPU share
    first = "0"

    def train(prefix, *extra, data="synthetic"):
        img = ["--images", images] if data == "jpeg" else []
        return Job("train", "train_cnn.py", ["--data", data, *img, *t, *extra], prefix)

    def infer(prefix, *extra):
        return Job("infer", "infer_loop.py", [*t, *extra], prefix)

    def single(data):
        c = {GENERIC: [train(plain(), data=data)],
             MLOS: [train(mlos_run(cli, ncpu), data=data)],
             EXPERT + f"pinned {last}, 1 thread": [train(pinned(last), "--threads", 1, data=data)],
             EXPERT + "1 thread": [train(plain(), "--threads", 1, data=data)]}
        if data == "jpeg":
            c[EXPERT + "1 thread, 1 worker"] = [train(plain(), "--threads", 1, "--workers", 1, data=data)]
            c[EXPERT + f"{ncpu} threads, 1 worker"] = [train(plain(), "--threads", ncpu, "--workers", 1, data=data)]
        return c

    return [
        Scenario("solo", "1a. solo: small CNN on synthetic tensors", "throughput", single("synthetic")),
        Scenario("solo-jpeg", "1b. solo: the same CNN fed by JPEG decode + augmentation in 2 DataLoader workers",
                 "throughput", single("jpeg")),
        Scenario("noisy-cpu", "2a. noisy neighbour: 1a next to a CPU-bound process (stress-ng --cpu 1)",
                 "throughput", single("synthetic"), neighbour=["stress-ng", "--cpu", "1", "--quiet"]),
        Scenario("noisy-membw", "2b. noisy neighbour: 1a next to a memory-bandwidth-bound process "
                 "(stress-ng --stream 1)", "throughput", single("synthetic"),
                 neighbour=["stress-ng", "--stream", "1", "--quiet"]),
        Scenario("colocated", "3. co-located training: two 1a jobs at once", "colocated", {
            "alone on 1 CPU": [train(pinned(last), "--threads", 1)],
            GENERIC: [train(plain()), train(plain())],
            EXPERT + f"pinned {first} and {last}, 1 thread each": [train(pinned(first), "--threads", 1),
                                                                  train(pinned(last), "--threads", 1)],
            MLOS: [train(mlos_run(cli, 1, exclusive=True)), train(mlos_run(cli, 1, exclusive=True))],
        }, baseline="alone on 1 CPU"),
        Scenario("train+infer", "4. training next to a latency-sensitive inference loop (batch 8 every 10 ms)",
                 "inference", {
                     "inference alone": [infer(plain())],
                     GENERIC: [train(plain()), infer(plain())],
                     EXPERT + f"inference pinned {first}, training pinned {last}, 1 thread each": [
                         train(pinned(last), "--threads", 1), infer(pinned(first), "--threads", 1)],
                     MLOS: [train(mlos_run(cli, 1, exclusive=True)), infer(mlos_run(cli, 1, exclusive=True))],
                 }, baseline="inference alone"),
    ]
