# SPDX-License-Identifier: Apache-2.0
"""Tests of the installed mlos_training package (scripts/test_wheel.sh builds the wheel).

Run with the interpreter the package is installed in (scripts/test.sh uses
/opt/mlos/venv). Every test gets its own MLOS_RUNTIME_DIR, MLOS_TUNE_DIR and the embedded
engine, so no daemon or earlier claim is involved."""
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def mlos_cli():
    """The mlos CLI of the build (MLOS_BUILD_DIR, default build/)."""
    path = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build") / "bin" / "mlos"
    if not path.exists():
        pytest.fail(f"{path} not found: build the CLI, or set MLOS_BUILD_DIR")
    return str(path)


def clean_env(tmp_path, **extra):
    """This process's environment without mlOS or launcher variables, with
    a private runtime directory and tuning store (mlos run's choices are
    learnt per test, not across tests) and the embedded engine."""
    drop = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLOS_", "TORCHELASTIC_")) and k not in drop}
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    env.update(MLOS_RUNTIME_DIR=str(runtime), MLOS_TUNE_DIR=str(tmp_path / "tune"), MLOS_MODE="embedded",
               MLOS_COLLECTIVE_HOST="127.0.0.1")
    helper = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build") / "bin" / "mlos-dataload"
    if helper.exists():  # the wheel does not ship ImageLoader's helper (docs/python.md, "Installing")
        env["MLOS_DATALOAD_HELPER"] = str(helper)
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(autouse=True)
def private_runtime(tmp_path, monkeypatch):
    for k, v in clean_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    for k in [k for k in os.environ if k.startswith("MLOS_STORE")]:
        monkeypatch.delenv(k)


@pytest.fixture
def python():
    return sys.executable
