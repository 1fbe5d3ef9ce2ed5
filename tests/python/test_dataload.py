# SPDX-License-Identifier: Apache-2.0
"""ImageLoader from Python: where a torch DataLoader goes, batches as
tensors on the loader's shared slots (no copy), every sample once per
epoch, set_epoch, sharding, bad files reported, a helper's death raised,
refused values."""
import gc
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

from mlos_training.data import ImageLoader
from mlos_training.errors import CODES, MLOSError

IMAGES = Path(__file__).resolve().parents[1] / "fixtures" / "images"
CLASSES = {"cat": ["jpeg_420.jpg", "jpeg_444.jpg", "photo_420.jpg", "jpeg_progressive.jpg"],
           "dog": ["jpeg_gray.jpg", "jpeg_422.jpg", "png_rgb.png"]}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "data"
    for cls, files in CLASSES.items():
        (root / cls).mkdir(parents=True)
        for i, name in enumerate(files):
            shutil.copy(IMAGES / name, root / cls / f"{i}_{name}")
    return root


def test_batches_are_tensors_in_the_loaders_memory(folder):
    loader = ImageLoader(folder, batch_size=3, size=32, seed=1, workers=2)
    assert len(loader) == 3 and loader.info["samples"] == 7 and loader.info["classes"] == 2
    labels = []
    for images, y in loader:
        assert images.dtype == torch.float32 and images.shape[1:] == (3, 32, 32)
        assert y.dtype == torch.int64 and y.shape == (images.shape[0],)
        assert torch.isfinite(images).all()
        # No copy: the tensor's memory is the loader's shared slot.
        with open("/proc/self/maps") as maps:
            ranges = [tuple(int(x, 16) for x in line.split()[0].split("-"))
                      for line in maps if "mlos-tmm:dataload" in line]
        assert any(start <= images.data_ptr() < end for start, end in ranges)
        labels += y.tolist()
        del images, y
    assert sorted(labels) == [0] * 4 + [1] * 3


def test_epochs_reshuffle_and_set_epoch_repeats(folder):
    loader = ImageLoader(folder, batch_size=7, size=16, layout="uint8_hwc", seed=5)
    first = [x.clone() for x, _ in loader]
    second = [x.clone() for x, _ in loader]       # the next epoch
    assert not torch.equal(first[0], second[0])
    loader.set_epoch(0)
    assert torch.equal([x.clone() for x, _ in loader][0], first[0])
    assert first[0].dtype == torch.uint8 and first[0].shape == (7, 16, 16, 3)


def test_ranks_split_an_epoch(folder):
    seen = []
    for rank in range(2):
        loader = ImageLoader(folder, batch_size=2, size=16, rank=rank, world_size=2, shuffle=False)
        assert loader.info["samples_per_epoch"] == 4  # 7 padded to 8, as DistributedSampler
        seen += [y for _, ys in loader for y in ys.tolist()]
    assert sorted(seen) == [0] * 5 + [1] * 3  # sample 0 (a cat) twice: the padding


def test_bad_files_are_skipped_and_named(folder):
    (folder / "dog" / "broken.jpg").write_bytes(b"not a jpeg at all")
    loader = ImageLoader(folder, batch_size=4, size=16)
    labels = [y for _, ys in loader for y in ys.tolist()]
    assert len(labels) == 7 and loader.skipped == 1
    assert any("broken.jpg" in e for e in loader.errors)
    strict = ImageLoader(folder, batch_size=4, size=16, strict=True)
    with pytest.raises(MLOSError) as e:
        for _ in strict:
            pass
    assert e.value.code == CODES["INVALID_ARGUMENT"] and "broken.jpg" in str(e.value)


def test_held_batches_keep_their_memory_and_free_it_after(folder):
    loader = ImageLoader(folder, batch_size=2, size=16, prefetch=2, seed=3)
    kept = []
    for images, labels in loader:  # more batches than slots: each is released when dropped
        kept.append(images.clone())
    assert len(kept) == 4
    del images, labels
    it = iter(loader)
    held = next(it)
    copy = held[0].clone()
    next(it)  # dropped at once: its slot is reused
    third = next(it)
    assert torch.equal(held[0], copy)  # not overwritten while held
    with pytest.raises(MLOSError) as e:  # both slots held: nothing can come
        next(it)
    assert e.value.code == CODES["BUSY"]
    del held, third, it
    gc.collect()


def test_a_dead_helper_raises_peer_lost(folder):
    loader = ImageLoader(folder, batch_size=2, size=16)
    os.kill(loader.info["helper_pid"], signal.SIGKILL)
    with pytest.raises(MLOSError) as e:
        for _ in loader:
            pass
    assert e.value.code == CODES["PEER_LOST"]


def test_bad_values_are_refused(folder):
    with pytest.raises(MLOSError) as e:
        ImageLoader(folder / "missing")
    assert e.value.code == CODES["NOT_FOUND"]
    for kwargs in ({"batch_size": 0}, {"size": 4}, {"transform": "random"}, {"layout": "f16"},
                   {"rank": 3, "world_size": 2}, {"workers": -1}):
        with pytest.raises(MLOSError) as e:
            ImageLoader(folder, **kwargs)
        assert e.value.code == CODES["INVALID_ARGUMENT"], kwargs
    with pytest.raises(TypeError):
        ImageLoader(42)


def test_webdataset_shards_and_a_file_list(tmp_path):
    import io
    import tarfile
    names = [n for files in CLASSES.values() for n in files]
    labels = [label for label, files in enumerate(CLASSES.values()) for _ in files]
    for shard in range(2):  # two shards, a brace pattern over them
        with tarfile.open(tmp_path / f"train-{shard:06d}.tar", "w") as tar:
            for i, (name, label) in enumerate(zip(names, labels)):
                if i % 2 != shard:
                    continue
                key = f"s{i:04d}"
                for member, data in ((f"{key}.{name.rsplit('.', 1)[1]}", (IMAGES / name).read_bytes()),
                                     (f"{key}.cls", str(label).encode())):
                    info = tarfile.TarInfo(member)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    loader = ImageLoader(str(tmp_path / "train-{000000..000001}.tar"), batch_size=3, size=16, seed=2)
    assert loader.info["samples"] == 7
    assert sorted(y for _, ys in loader for y in ys.tolist()) == sorted(labels)
    lines = "".join(f"{IMAGES / n}\t{label}\n" for n, label in zip(names, labels))
    (tmp_path / "files.txt").write_text("# path<TAB>label\n" + lines)
    listed = ImageLoader(tmp_path / "files.txt", batch_size=4, size=16, transform="val", layout="uint8_chw")
    batches = [(x.clone(), ys.tolist()) for x, ys in listed]
    assert sorted(y for _, ys in batches for y in ys) == sorted(labels)
    assert batches[0][0].dtype == torch.uint8 and batches[0][0].shape[1:] == (3, 16, 16)


def test_the_reader_is_chosen_reported_and_gives_the_same_pixels(folder):
    auto = ImageLoader(folder, batch_size=7, size=16, layout="uint8_hwc", seed=3, in_order=True, workers=2)
    pread = ImageLoader(folder, batch_size=7, size=16, layout="uint8_hwc", seed=3, in_order=True, workers=2,
                        reader="pread")
    with open("/proc/sys/kernel/io_uring_disabled") as f:
        uring_allowed = f.read().strip() == "0"
    stats = auto.stats()
    assert stats["reader"] == ("io_uring" if uring_allowed else "pread"), auto.notes
    assert stats["workers"] == 2 and stats["read_ahead_bytes"] > 0 and stats["batches"] == 0
    assert any(line.startswith("reader: ") for line in auto.notes)
    assert pread.stats()["reader"] == "pread" and "MLOS_DATALOAD_PREAD" in pread.notes[0]
    a = [x.clone() for x, _ in auto]
    b = [x.clone() for x, _ in pread]
    assert len(a) == 1 and torch.equal(a[0], b[0])
    assert auto.stats()["batches"] == 1 and auto.stats()["wait_seconds"] >= 0
    with pytest.raises(MLOSError) as e:
        ImageLoader(folder, reader="mmap")
    assert e.value.code == CODES["INVALID_ARGUMENT"]


def test_without_a_helper_the_error_says_why(folder, monkeypatch):
    # As in the wheel, which leaves mlos-dataload out (docs/python.md, "Installing").
    monkeypatch.setenv("MLOS_DATALOAD_HELPER", str(folder / "no-helper"))
    with pytest.raises(MLOSError) as e:
        ImageLoader(folder, batch_size=2, size=16)
    assert e.value.code == CODES["UNSUPPORTED"] and "does not ship" in str(e.value)
    assert str(folder / "no-helper") in str(e.value) and "MLOSDataLoader" in str(e.value)
