"""The C++ tests that need what only the guest has, run on its kernel:
the cgroup v2 driver (limits, delegation, release, a per-job PSI trigger
firing) and PSI windows under 2 s with CAP_SYS_RESOURCE. They skip on the
development machines (cgroup v1, no CAP_SYS_RESOURCE); here every one must
run and pass."""
from vm_helpers import gtest


def test_the_v2_driver_and_privileged_psi_run_and_pass(tmp_path):
    results = gtest("mlos_os_integration_tests", "CgroupV2Driver.*:PsiTrigger.*", tmp_path)
    assert len(results) == 4, results
    not_run = {name: r for name, r in results.items() if r != "RUN"}
    assert not not_run, "\n\n".join(f"{name}: {r}" for name, r in not_run.items())
