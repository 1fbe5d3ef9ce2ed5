# SPDX-License-Identifier: Apache-2.0
"""End-to-end test of the YOLOv8n showcase, reduced preset (--quick): about 10 s on 2 CPU cores.

Runs showcase.py in a subprocess (Ultralytics must be imported with the offline environment that the script sets
up itself) on the embedded mlOS engine with a private runtime directory, and checks its results.json: exports
verified, the training run phase-marked by mlOS and its checkpoints written atomically. Run by scripts/test.sh;
skipped when ultralytics / onnxruntime are not installed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ultralytics")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

SCRIPT = Path(__file__).resolve().parent / "showcase.py"


def test_showcase_quick(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env.update(MLOS_MODE="embedded", MLOS_RUNTIME_DIR=str(tmp_path / "runtime"))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    res = json.loads((out / "results.json").read_text())
    assert res["ok"] is True
    assert res["network_attempts"] == []
    assert "Downloading" not in log and "BLOCKED network access" not in log
    assert [m["model"] for m in res["models"]] == ["fp32", "fp16", "int8"]
    imgsz = res["config"]["imgsz"]
    anchors = sum((imgsz // s) ** 2 for s in (8, 16, 32))
    for m in res["models"]:
        assert m["shape"] == [1, 4 + 3, anchors] and m["shape_ok"] and m["pass"], m
        assert Path(m["file"]).stat().st_size > 0
    sizes = {m["model"]: m["size_mb"] for m in res["models"]}
    assert sizes["int8"] < sizes["fp16"] < sizes["fp32"]
    assert len(res["epochs"]) == res["config"]["epochs"] and res["epochs"][0]["batches"] > 0
    report = (out / "report.md").read_text()
    assert "| ONNX INT8 |" in report and "| BACKWARD |" in report
    run = res["mlos"]
    names = ["IDLE", "DATA_LOADING", "FORWARD", "BACKWARD", "OPTIMIZER", "CHECKPOINT"]
    entries = dict(zip(names, run["phase_profile"]["entries"]))
    assert entries["BACKWARD"] == run["batches"] == sum(e["batches"] for e in res["epochs"])
    assert entries["OPTIMIZER"] == run["optimizer_steps"] >= 1
    assert entries["CHECKPOINT"] >= res["config"]["epochs"]
    assert any(w["path"].endswith("/last.pt") for w in run["atomic_writes"])
