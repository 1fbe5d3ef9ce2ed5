from pathlib import Path
def test_cgroup2_only():
    assert "cpuset" in Path("/sys/fs/cgroup/cgroup.controllers").read_text()
