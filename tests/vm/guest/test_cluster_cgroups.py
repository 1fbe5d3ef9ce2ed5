# SPDX-License-Identifier: Apache-2.0
"""mlOS inside cgroups that another manager owns, on a real v2 kernel
under systemd: a cgroup shaped like a kubelet pod's container (systemd
driver, static CPU manager: a cpuset of its own) and one shaped like a
Slurm step (cgroup/v2 plugin). A job started there with `mlos run` under
mlosd is placed inside that cpuset, stays in that cgroup (so the pod's or
the step's limits and accounting keep covering it), and mlosd says so;
asking for more CPUs than the cgroup has fails. docs/cluster.md."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vm_helpers import CGROUP, MLOS
from cli_helpers import parse_cpu_list
from daemon_helpers import Daemon

SHAPES = {
    # kubepods.slice/kubepods-pod<uid>.slice/cri-containerd-<id>.scope
    "kubelet-pod": ("kubepods.slice/kubepods-podvmtest.slice/cri-containerd-vmtest.scope", "2-3"),
    # system.slice/slurmstepd.scope/job_<N>/step_<M>/user/task_<K>; the
    # step's cpuset spans both nodes.
    "slurm-step": ("system.slice/slurmstepd.scope/job_7/step_0/user/task_0", "1-2"),
}

# Runs in the managed cgroup: prints its cgroup and affinity as one JSON line.
WHERE = ("import json, re; s = open('/proc/self/status').read(); "
         "print(json.dumps({'cgroup': open('/proc/self/cgroup').read().split('::')[1].strip(), "
         "'cpus': re.search(r'Cpus_allowed_list:\\s+(\\S+)', s).group(1)}))")


def make_managed_cgroup(path, cpus):
    """Creates `path` with the cpuset controller enabled down to it and its
    cpuset set to `cpus` at the level the manager would set it; returns
    the directories made, deepest last."""
    made, here = [], CGROUP
    for part in path.split("/"):
        (here / "cgroup.subtree_control").write_text("+cpuset +cpu +memory")
        here = here / part
        if not here.exists():
            here.mkdir()
            made.append(here)
    # The level above the leaves holds the cpuset (the container scope, the
    # step); leaves inherit it as their effective cpuset.
    owner = here if path.startswith("kubepods") else CGROUP / "/".join(path.split("/")[:4])
    (owner / "cpuset.cpus").write_text(cpus)
    return made


def remove_cgroups(made):
    """Removes what make_managed_cgroup made, deepest first, moving any
    process left in them to the root."""
    for d in reversed(made):
        for pid in (d / "cgroup.procs").read_text().split():
            (CGROUP / "cgroup.procs").write_text(pid)
        d.rmdir()


def run_in(cgroup, argv, env):
    """Runs argv with its process placed in `cgroup` first (a shell moves
    itself, then execs)."""
    return subprocess.run(["sh", "-c", f'echo $$ > {CGROUP / cgroup}/cgroup.procs && exec "$@"', "sh", *argv],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, cgroups="v2").start()
    yield d
    d.stop()
    d.remove_cgroups()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_job_stays_in_its_managed_cgroup_and_inside_its_cpuset(daemon, shape):
    path, cpus = SHAPES[shape]
    made = make_managed_cgroup(path, cpus)
    try:
        env = daemon.client_env()
        r = run_in(path, [MLOS, "run", "--cpus", "2", "--exclusive", "--no-tune", "--", sys.executable, "-c", WHERE],
                   env)
        assert r.returncode == 0, r.stderr
        where = json.loads(r.stdout.strip().splitlines()[-1])
        assert where["cgroup"] == "/" + path  # not moved into mlosd's
        assert parse_cpu_list(where["cpus"]) == parse_cpu_list(cpus)
        # Too many for the cgroup: refused before the command starts.
        r = run_in(path, [MLOS, "run", "--cpus", "3", "--no-tune", "--", "true"], env)
        assert r.returncode == 125, r
        # A raw client that names no CPUs of its own: mlosd reads the
        # cgroup's cpuset from the kernel and places the job inside it.
        script = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parents[2] / 'e2e')!r}); "
                  f"from daemon_helpers import Client; c = Client({str(daemon.socket)!r}); "
                  "r = c.call('request', num_cpus=1, label='raw'); "
                  "s = c.call('status'); print(json.dumps({'reply': r, 'status': s}))")
        r = run_in(path, [sys.executable, "-c", script], env)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["reply"]["ok"], out
        assert parse_cpu_list(out["reply"]["cpus"]) <= parse_cpu_list(cpus), out
        job = [j for j in out["status"]["jobs"] if j["label"] == "raw"][0]
        assert any(f"stays in /{path}" in n for n in job["notes"]), job
    finally:
        remove_cgroups(made)


@pytest.mark.parametrize("node_cpus", ["affinity", "root-cgroup"])
def test_an_mlosd_kept_off_a_pods_cpus_serves_it_with_node_cpus_root_cgroup(tmp_path, node_cpus):
    """The kubelet's static CPU manager keeps a Burstable mlosd pod off the
    Guaranteed pods' CPUs. With node_cpus "affinity" mlosd manages only the
    CPUs it runs on and must refuse such a pod; with "root-cgroup" it
    manages every CPU of the node and places the pod's job on its own."""
    pod, pod_cpus = SHAPES["kubelet-pod"]  # CPUs 2-3
    daemon_cg = "mlosd-pod-vmtest"
    made = make_managed_cgroup(pod, pod_cpus)
    (CGROUP / daemon_cg).mkdir()
    (CGROUP / daemon_cg / "cpuset.cpus").write_text("0-1")  # the shared pool
    made.insert(0, CGROUP / daemon_cg)
    config = tmp_path / "mlosd.json"
    config.write_text(json.dumps({"node_cpus": node_cpus}))
    d = Daemon(tmp_path, cgroups="v2", extra_args=["--config", str(config)], start_in=CGROUP / daemon_cg)
    try:
        d.start()
        r = run_in(pod, [MLOS, "run", "--cpus", "2", "--no-tune", "--", sys.executable, "-c", WHERE], d.client_env())
        if node_cpus == "affinity":
            assert r.returncode == 125 and "none of which mlosd manages" in r.stderr, r
        else:
            assert r.returncode == 0, r.stderr
            where = json.loads(r.stdout.strip().splitlines()[-1])
            assert where["cgroup"] == "/" + pod
            assert parse_cpu_list(where["cpus"]) == parse_cpu_list(pod_cpus)
    finally:
        d.stop()
        d.remove_cgroups()
        remove_cgroups(made)
