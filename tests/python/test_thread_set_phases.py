# SPDX-License-Identifier: Apache-2.0
"""Phases reach every thread of a torch job, not only the bound one
(docs/phases.md): torch's intra-op pool, created after the job's request,
takes each phase's nice, read from /proc/self/task/<tid>/stat. Run in a
fresh interpreter so that the pool is born inside the job."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import clean_env

CHILD = textwrap.dedent("""
    import json, os
    import torch
    import mlos_training as m

    def nices():
        out = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                comm = open(f"/proc/self/task/{tid}/comm").read().strip()
                fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            if not comm.startswith("mlos-"):  # the library's own threads keep theirs
                out[tid] = int(fields[16])  # field 19, nice
        return out

    base = os.getpriority(os.PRIO_PROCESS, 0)
    before = set(nices())
    seen = {"base": base}
    with m.MLOSTrainingContext(num_cpus=2, exclusive_cpus=False) as ctx:
        torch.set_num_threads(2)
        a = torch.randn(1024, 1024)
        (a @ a).sum()  # the intra-op pool starts now, inside the job
        seen["pool"] = sorted(set(nices()) - before)
        for name in ("BACKWARD", "IDLE", "CHECKPOINT", "FORWARD"):
            ctx.set_phase(getattr(m, "PHASE_" + name))
            (a @ a).sum()
            seen[name] = nices()
    seen["released"] = nices()
    print(json.dumps(seen))
""")


def test_every_thread_of_a_torch_job_follows_the_phase(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs for a 2-thread intra-op pool")
    if os.geteuid() != 0:
        pytest.skip("raising priority (BACKWARD, CHECKPOINT) needs CAP_SYS_NICE")
    r = subprocess.run([sys.executable, "-c", CHILD], env=clean_env(tmp_path), capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["pool"], "torch started no thread inside the job: nothing to check"
    base = seen["base"]
    want = {"BACKWARD": base - 5, "IDLE": base + 10, "CHECKPOINT": base - 10, "FORWARD": base}
    for phase, nice in want.items():
        threads = seen[phase]
        assert all(t in threads for t in seen["pool"]), (phase, threads)
        assert set(threads.values()) == {max(-20, min(19, nice))}, (phase, threads)
    # Released: every thread back where it was.
    assert set(seen["released"].values()) == {base}, seen["released"]
