# SPDX-License-Identifier: Apache-2.0
"""The C++ tests that need what only the guest has, run on its kernel.
They skip on the development machines (cgroup v1, one NUMA node, no
CAP_SYS_RESOURCE); here every one must run and pass."""
from vm_helpers import gtest


def ran_and_passed(results, count):
    assert len(results) == count, results
    not_run = {name: r for name, r in results.items() if r != "RUN"}
    assert not not_run, "\n\n".join(f"{name}: {r}" for name, r in not_run.items())


def test_the_v2_driver_and_privileged_psi_windows(tmp_path):
    # Limits, delegation, release to the origin, a per-job PSI trigger with
    # a 500 ms window firing; PSI windows under 2 s accepted for root.
    ran_and_passed(gtest("mlos_os_integration_tests", "CgroupV2Driver.*:PsiTrigger.*", tmp_path), 4)


def test_the_tensor_pools_node_binding_on_the_second_node(tmp_path):
    # move_pages(2) finds every page of a pool bound (or preferred) to node 1
    # on node 1, and the pool's stats count no remote page.
    ran_and_passed(gtest("mlos_integration_tests", "TensorPool.*Node*", tmp_path), 4)
