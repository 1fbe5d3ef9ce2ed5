# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures for the mlos CLI end-to-end tests.

MLOS_BUILD_DIR   build tree holding bin/mlos (default: <repo>/build)
MLOS_FIXTURES_DIR topology fixtures (default: <repo>/tests/fixtures)

Every test gets its own MLOS_RUNTIME_DIR and MLOS_TUNE_DIR under tmp_path,
so claims made and tuning learnt by one test are never seen by another.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# Variables that change what mlos does; tests set them explicitly when they
# want them, never inherit them from whoever runs pytest (or from an
# enclosing `mlos run`).
_MLOS_ENV = (
    "MLOS_TOPOLOGY",
    "MLOS_ALLOWED_CPUS",
    "MLOS_MODE",
    "MLOS_LOG_LEVEL",
    "MLOS_RUNTIME_DIR",
    "MLOS_CLAIM_ID",
    "MLOS_CPUS",
    "MLOS_NUMA_NODE",
    "MLOS_RECOMMENDED_THREADS",
    "MLOS_DAEMON_SOCKET",
    "MLOS_PYTHON_HOOKS",
    "MLOS_PROFILE",
    "MLOS_THREAD_ENV",
    "MLOS_RANK_SPLIT",
    "MLOS_TUNE_DIR",
    "MLOS_TUNE_CHOICE",
    "MLOS_TUNE_REASON",
    "MLOS_TUNE_EVIDENCE",
    "MLOS_ALLOCATOR_DIRS",
    "LD_PRELOAD",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
)
_THREAD_ENV = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
)

DEFAULT_TIMEOUT = 60


def build_dir() -> Path:
    return Path(os.environ.get("MLOS_BUILD_DIR") or REPO_ROOT / "build")


def fixtures_dir() -> Path:
    return Path(os.environ.get("MLOS_FIXTURES_DIR") or REPO_ROOT / "tests" / "fixtures")


@pytest.fixture(scope="session")
def mlos_bin() -> str:
    path = build_dir() / "bin" / "mlos"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"mlos CLI not found at {path}: build it, or set MLOS_BUILD_DIR to the build tree")
    return str(path)


@pytest.fixture
def runtime_dir(tmp_path) -> Path:
    d = tmp_path / "runtime"
    d.mkdir()
    return d


class Mlos:
    """Runs the CLI with a clean environment and this test's runtime dir."""

    def __init__(self, binary: str, runtime: Path):
        self.binary = binary
        self.runtime = runtime

    @property
    def ledger(self) -> Path:
        return self.runtime / "claims.json"

    def env(self, extra=None) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in _MLOS_ENV and k not in _THREAD_ENV}
        env["MLOS_RUNTIME_DIR"] = str(self.runtime)
        env["MLOS_TUNE_DIR"] = str(self.runtime.parent / "tune")
        env["LC_ALL"] = "C"
        if extra:
            env.update(extra)
        return env

    def argv(self, args, prefix=()):
        return [*prefix, self.binary, *args]

    def run(self, *args, env=None, prefix=(), timeout=DEFAULT_TIMEOUT) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.argv(args, prefix),
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, *args, env=None, prefix=()) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(args, prefix),
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def json(self, *args, env=None, expect_rc=0, **kw):
        r = self.run(*args, env=env, **kw)
        assert r.returncode == expect_rc, self.describe(r)
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError as e:
            raise AssertionError(f"stdout is not JSON ({e}): {self.describe(r)}") from e

    @staticmethod
    def describe(r: subprocess.CompletedProcess) -> str:
        return f"argv={r.args!r} rc={r.returncode}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"

    def status(self):
        j = self.json("status", "--json")
        assert j["schema_version"] == 1
        assert j["command"] == "status"
        return j


@pytest.fixture
def mlos(mlos_bin, runtime_dir) -> Mlos:
    return Mlos(mlos_bin, runtime_dir)


@pytest.fixture
def synthetic_topo(mlos):
    """`mlos topo --json` of the synthetic machine, with lookup tables."""
    j = mlos.json("topo", "--json", env={"MLOS_TOPOLOGY": "synthetic:pack:2 numa:2 core:8 pu:2"})
    pu_core = {pu: c["index"] for c in j["cores"] for pu in c["pus"]}
    pu_node = {pu: c["numa_node"] for c in j["cores"] for pu in c["pus"]}
    return j, pu_core, pu_node
