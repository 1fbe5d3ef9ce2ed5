# SPDX-License-Identifier: Apache-2.0
"""Checks of the data-loading benchmark's pieces (no timing):

    PYTHONPATH=<where scikit-image, spdl, dali live> python -m pytest -q bench/dataload

Loaders whose package is not importable are skipped, saying which."""
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import loaders  # noqa: E402


def have(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("w,h", [(500, 375), (375, 500), (300, 300), (500, 20)])
def test_rrc_params_stay_inside_the_image_and_in_torchvision_ranges(w, h):
    rnd = random.Random(1)
    for _ in range(500):
        x, y, cw, ch = loaders.rrc_params(w, h, rnd)
        assert 0 <= x and x + cw <= w and 0 <= y and y + ch <= h and cw > 0 and ch > 0
        if (w, h) != (500, 20):  # 25:1 never fits 3/4..4/3: the fallback (centre, clamped ratio)
            # rounding of w and h to integers moves area and ratio a little
            assert 0.08 * w * h * 0.9 <= cw * ch <= w * h
            assert 0.7 <= cw / ch <= 1.4
    assert loaders.rrc_params(500, 20, random.Random(0)) == ((500 - 27) // 2, 0, 27, 20)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    if not have("skimage"):
        pytest.skip("scikit-image not importable (bench/dataload/requirements.txt)")
    out = tmp_path_factory.mktemp("ds")
    subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--out", str(out), "--count", "140",
                    "--classes", "7", "--shard-size", "50", "--workers", "2"], check=True, capture_output=True)
    return out


def test_dataset_has_tree_shards_and_list_that_agree(dataset):
    lines = (dataset / "files.txt").read_text().splitlines()
    assert len(lines) == 140
    assert len(list((dataset / "train").glob("c*/*.jpg"))) == 140
    assert sorted(p.name for p in (dataset / "shards").iterdir()) == [f"shard-00000{i}.tar" for i in range(3)]
    check = subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--out", str(dataset), "--check"],
                           check=True, capture_output=True, text=True)
    report = json.loads(check.stdout)
    assert report["count"] == 140 and report["shard_jpegs"] == 140 and report["classes"] == 7
    w, h = (float(v) for v in report["mean_wxh"].split("x"))
    assert 300 <= w <= 500 and 300 <= h <= 500
    assert 30_000 < report["mean_bytes"] < 200_000


def test_sample_depends_only_on_seed_and_index(dataset, tmp_path):
    subprocess.run([sys.executable, str(HERE / "make_dataset.py"), "--out", str(tmp_path), "--count", "5",
                    "--classes", "7", "--workers", "1"], check=True, capture_output=True)
    for rel in (l.split("\t")[0] for l in (tmp_path / "files.txt").read_text().splitlines()):
        assert (tmp_path / rel).read_bytes() == (dataset / rel).read_bytes(), rel


@pytest.mark.parametrize("kind,module", [("dataloader-tv", "torchvision"), ("dataloader-pil", "torchvision"),
                                         ("webdataset-tv", "webdataset"), ("spdl", "spdl.io"),
                                         ("dali", "nvidia.dali"), ("dali-fused", "nvidia.dali")])
def test_loader_yields_normalised_float_batches(dataset, kind, module):
    if not have(module):
        pytest.skip(f"{module} not importable")
    import torch
    it = loaders.batches(kind, str(dataset), 8, 1, seed=0)
    seen = set()
    for _ in range(3):
        x, y = next(it)
        assert x.shape == (8, 3, 224, 224) and x.dtype == torch.float32
        assert y.dtype == torch.int64 and int(y.min()) >= 0 and int(y.max()) < 7
        # Normalised: [0, 1] maps to [-2.12, 2.64]; unnormalised input would
        # stay >= 0. (The batch mean is left free: 8 dark images are possible.)
        assert -2.2 < float(x.min()) < 0 and 0.5 < float(x.max()) < 2.7 and 0.3 < float(x.std()) < 1.6
        seen.update(y.tolist())
    assert len(seen) > 1


def test_the_mlos_loader_refuses_a_missing_dataset():
    from mlos_training.errors import MLOSError
    with pytest.raises(MLOSError, match="/nonexistent"):
        loaders.mlos_loader("/nonexistent", [0], 64)
