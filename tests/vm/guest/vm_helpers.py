# SPDX-License-Identifier: Apache-2.0
"""What the guest tests share: the repository's paths, the e2e helpers
(tests/e2e, importable from here), and running a command with a bound."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

BUILD = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build")
# The installed build (tests/vm/run.sh stages `cmake --install` into /).
MLOS = "/usr/local/bin/mlos"
MLOSD = "/usr/local/sbin/mlosd"
CGROUP = Path("/sys/fs/cgroup")


def run(argv, timeout=120, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{argv} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def gtest(binary, filter_, tmp_path, timeout=600):
    """Runs a gtest binary of the build; returns {test name: "RUN" |
    "SKIPPED" | failure text} from its JSON report."""
    report = tmp_path / "gtest.json"
    r = subprocess.run([str(BUILD / "bin" / binary), f"--gtest_filter={filter_}", f"--gtest_output=json:{report}"],
                       capture_output=True, text=True, timeout=timeout)
    results = {}
    for suite in json.loads(report.read_text())["testsuites"]:
        for t in suite["testsuite"]:
            name = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                results[name] = "\n".join(f["failure"] for f in t["failures"])
            else:
                results[name] = "SKIPPED" if t.get("result") == "SKIPPED" else "RUN"
    assert results, r.stdout + r.stderr
    return results
