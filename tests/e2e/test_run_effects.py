# SPDX-License-Identifier: Apache-2.0
"""`mlos run`: the child is confined, its memory policy and thread-pool
environment are set, and it keeps the PID (mlos execs it)."""
import json
import sys

from cli_helpers import *  # noqa: F401,F403


def test_run_one_cpu_affinity_threads_and_mempolicy(mlos):
    seen, r = probe(mlos, "--cpus", "1")
    cpus = parse_cpu_list(seen["cpus_allowed_list"])
    assert len(cpus) == 1
    assert cpus <= allowed_cpus()
    env = seen["env"]
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        assert env.get(name) == "1", (name, env)
    assert env["MLOS_CPUS"] == seen["cpus_allowed_list"]
    assert env["MLOS_RECOMMENDED_THREADS"] == "1"
    assert int(env["MLOS_CLAIM_ID"]) >= 1
    node = int(env["MLOS_NUMA_NODE"])
    # MPOL_PREFERRED on the node: the kernel prints "prefer:<node>" as the
    # policy of every mapping in numa_maps.
    assert seen["numa_maps_first"].split()[1] == f"prefer:{node}", seen["numa_maps_first"]
    # The chosen node holds the CPU.
    topo = mlos.json("topo", "--json")
    node_cpus = {n["os_index"]: parse_cpu_list(n["cpus"]) for n in topo["nodes"]}
    assert cpus <= node_cpus[node]
    assert r.stderr == ""


def test_run_without_mlos_has_default_policy(mlos):
    # Control for the test above: the probe itself does not see "prefer".
    seen = probe_plain(mlos)
    assert seen["numa_maps_first"].split()[1] == "default", seen["numa_maps_first"]
    assert "MLOS_CPUS" not in seen["env"]


def test_run_strict_mem_binds(mlos):
    seen, _ = probe(mlos, "--cpus", "1", "--strict-mem")
    node = int(seen["env"]["MLOS_NUMA_NODE"])
    assert seen["numa_maps_first"].split()[1] == f"bind:{node}", seen["numa_maps_first"]


def test_run_all_cpus_and_recommended_threads(mlos):
    n = len(allowed_cpus())
    topo = mlos.json("topo", "--json")
    cores = {c["index"] for c in topo["cores"] if set(c["pus"]) & allowed_cpus()}
    seen, _ = probe(mlos, "--cpus", str(n))
    assert parse_cpu_list(seen["cpus_allowed_list"]) == allowed_cpus()
    assert seen["env"]["OMP_NUM_THREADS"] == str(len(cores))
    assert seen["env"]["MLOS_RECOMMENDED_THREADS"] == str(len(cores))


def test_run_no_thread_env(mlos):
    seen, _ = probe(mlos, "--cpus", "1", "--no-thread-env", env={"OMP_NUM_THREADS": "13"})
    assert seen["env"]["OMP_NUM_THREADS"] == "13"  # left as the user set it
    assert "MKL_NUM_THREADS" not in seen["env"]
    assert "OPENBLAS_NUM_THREADS" not in seen["env"]
    assert seen["env"]["MLOS_RECOMMENDED_THREADS"] == "1"


def test_run_keeps_thread_counts_the_user_set(mlos):
    # The user sized the pools: none of the variables is set (torch would
    # take an MKL_NUM_THREADS of mlOS's over the user's OMP_NUM_THREADS),
    # and MLOS_THREAD_ENV, what a local rank may resize, lists none.
    seen, _ = probe(mlos, "--cpus", "1", env={"OMP_NUM_THREADS": "13"})
    assert seen["env"]["OMP_NUM_THREADS"] == "13"
    assert "MKL_NUM_THREADS" not in seen["env"]
    assert seen["env"]["MLOS_THREAD_ENV"] == ""
    plain, _ = probe(mlos, "--cpus", "1")
    assert len(plain["env"]["MLOS_THREAD_ENV"].split(",")) == 7


def test_nested_run_replaces_the_outer_runs_thread_counts(mlos):
    # A value an outer mlos run set is not the user's: the inner run sizes it.
    seen, _ = probe(mlos, "--cpus", "1", env={"OMP_NUM_THREADS": "13", "MLOS_THREAD_ENV": "OMP_NUM_THREADS"})
    assert seen["env"]["OMP_NUM_THREADS"] == "1"
    assert len(seen["env"]["MLOS_THREAD_ENV"].split(",")) == 7


def test_run_json_reports_placement_on_stderr(mlos):
    seen, r = probe(mlos, "--cpus", "1", "--json", "--label", "probe-job")
    j = json.loads(r.stderr.strip().splitlines()[0])
    assert j["schema_version"] == 1
    assert j["command"] == [sys.executable, "-c", PROBE]
    p = j["placement"]
    assert p["cpus"] == seen["cpus_allowed_list"]
    assert p["cpu_order"] == sorted(parse_cpu_list(seen["cpus_allowed_list"]))
    assert str(p["claim_id"]) == seen["env"]["MLOS_CLAIM_ID"]
    assert p["memory_policy"] == "preferred"
    assert p["recommended_threads"] == 1
    assert p["numa_nodes"] == [p["primary_node"]]
    assert str(p["primary_node"]) == seen["env"]["MLOS_NUMA_NODE"]


def test_run_verbose(mlos):
    r = mlos.run("run", "-v", "--cpus", "1", "--", "sh", "-c", 'echo "$MLOS_CPUS $MLOS_CLAIM_ID"')
    assert r.returncode == 0, mlos.describe(r)
    cpus, claim = r.stdout.split()
    assert r.stderr == f"mlos run: CPUs {cpus}, claim {claim} (embedded), 1 thread(s)\n"


def test_run_keeps_pid(mlos):
    # mlos exec()s the command: the child's PID is the one we started.
    p = mlos.popen("run", "--cpus", "1", "--", sys.executable, "-c", PROBE)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        kill_and_reap(p)
    assert p.returncode == 0, err
    assert json.loads(out)["pid"] == p.pid


def test_run_numa_0_and_mem(mlos):
    seen, _ = probe(mlos, "--cpus", "1", "--numa", "0", "--mem", "1M")
    assert seen["env"]["MLOS_NUMA_NODE"] == "0"


def test_arguments_after_dashes_reach_cmd_verbatim(mlos):
    args = ["[%s]", "[1,2]", "[]", "--", "-x", "a b"]
    r = mlos.run("run", "--cpus", "1", "--", sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))",
                 *args)
    assert r.returncode == 0, mlos.describe(r)
    assert json.loads(r.stdout) == args
