# SPDX-License-Identifier: Apache-2.0
"""GPU claims from Python (docs/gpu.md): request_resources(num_gpus=...,
gpu_uuids=..., shared_gpus=...) and Resources.gpus, against the fake NVML
the build makes (tests/gpu/fake_nvml.cpp). In a child interpreter: the
library reads NVML once per process."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, clean_env

FAKE_NVML = Path(os.environ.get("MLOS_BUILD_DIR") or REPO / "build") / "tests" / "gpu-fixtures" / "libfake-nvml.so"
A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"

SCRIPT = r"""
import json, os
import mlos_training as m
out = {}
def attempt(name, **kw):
    try:
        r = m.request_resources(num_cpus=1, exclusive_cpus=False, **kw)
        out[name] = r.gpus
        return r
    except m.MLOSError as e:
        out[name] = [type(e).__name__, e.name, e.message]
held = attempt("one", num_gpus=1)
attempt("busy", num_gpus=2)
attempt("named", gpu_uuids=["GPU-bbbb"], shared_gpus=True)
attempt("shared_again", gpu_uuids=["GPU-bbbb"], shared_gpus=True)
attempt("one_string", gpu_uuids="GPU-bbbb")
attempt("negative", num_gpus=-1)
attempt("none")
m.release_resources(held)
attempt("after_release", num_gpus=1)
print(json.dumps(out))
"""


@pytest.mark.skipif(not FAKE_NVML.exists(), reason="this build has no fake NVML (built without nvml.h)")
def test_gpus_are_claimed_named_and_refused_from_python(tmp_path):
    config = tmp_path / "nvml.json"
    gpus = [{"uuid": u, "name": "NVIDIA H200", "memory_total": 1 << 34, "memory_used": 0,
             "pci": {"domain": 0, "bus": bus, "device": 0}, "cpu_affinity": "0"} for u, bus in ((A, 0x3b), (B, 0xbb))]
    config.write_text(json.dumps({"gpus": gpus}))
    env = clean_env(tmp_path, MLOS_NVML_LIBRARY=FAKE_NVML, MLOS_FAKE_NVML=config)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["one"] == [A]
    assert out["busy"][:2] == ["MLOSResourceError", "GPUS_BUSY"], out["busy"]
    assert out["named"] == [B] and out["shared_again"] == [B]
    assert out["one_string"][:2] == ["MLOSInvalidArgumentError", "INVALID_ARGUMENT"], out["one_string"]
    assert out["negative"][:2] == ["MLOSInvalidArgumentError", "INVALID_ARGUMENT"], out["negative"]
    assert out["none"] == []
    assert out["after_release"] == [A]
