# SPDX-License-Identifier: Apache-2.0
"""The data loaders the mlOS loader is compared against, each as an endless
iterator of (images, labels) batches doing the standard ImageNet training
transform at 224: RandomResizedCrop(224, scale 0.08-1, ratio 3/4-4/3),
RandomHorizontalFlip, to float32, Normalize(ImageNet mean/std); images is a
float32 [batch, 3, 224, 224] torch tensor, labels an int64 [batch] tensor.

    batches(kind, data_dir, batch, parallel, seed) -> iterator

`kind` is one of KINDS; `parallel` is the loader's own knob (DataLoader
num_workers, SPDL/DALI threads). Everything runs in the calling process
and its children, so CPU affinity set before the call holds for all of it.
data_dir is a bench/dataload/make_dataset.py output directory.

What each kind is, and where it differs from torchvision's transform:
- dataloader-tv: torch DataLoader over torchvision ImageFolder, decode with
  torchvision.io.decode_jpeg (libjpeg-turbo), transforms.v2 on uint8
  tensors (bilinear, antialias on), per sample in the workers.
- dataloader-pil: the same with PIL decode (Image.open().convert("RGB"),
  libjpeg-turbo inside Pillow); v2's crop+resize then run on the PIL image.
- webdataset-tv: DataLoader over the WebDataset shards (webdataset
  package), decode_jpeg + the same v2 transform; shards split by worker.
- spdl: SPDL PipelineBuilder; per image: demux, RandomResizedCrop
  parameters (torchvision's algorithm) from the header size, one FFmpeg
  filter graph crop,scale=224:224:flags=bilinear[,hflip],format=rgb24;
  batch by convert_frames, then float/normalize in torch. Differs: FFmpeg's
  mjpeg decoder and swscale do the YUV->RGB conversion and resampling
  (swscale bilinear widens its kernel when downscaling, like antialias;
  chroma upsampling and rounding differ from libjpeg-turbo's), and crop
  offsets are rounded down to the 4:2:0 chroma grid (even x, y).
- dali / dali-fused: NVIDIA DALI CPU pipeline (device_id=None), readers.file
  on train/. dali: decoders.image + random_resized_crop +
  crop_mirror_normalize. dali-fused: decoders.image_random_crop (decodes
  only the crop's region) + resize + crop_mirror_normalize, as in DALI's
  ResNet-50 example. DALI draws crops with its own RNG and area/aspect
  sampling (same ranges).
"""
import io
import math
import os
import random
from pathlib import Path

import torch

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SIZE = 224
KINDS = ("dataloader-tv", "dataloader-pil", "webdataset-tv", "spdl", "dali", "dali-fused")


def read_file_list(data_dir):
    """[(absolute path, label)] from DIR/files.txt."""
    root = Path(data_dir)
    out = []
    for line in (root / "files.txt").read_text().splitlines():
        rel, label = line.split("\t")
        out.append((str(root / rel), int(label)))
    return out


def rrc_params(width, height, rnd, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params with a random.Random:
    (x, y, w, h) of the crop."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rnd.uniform(*scale)
        aspect = math.exp(rnd.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rnd.randint(0, width - w), rnd.randint(0, height - h), w, h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        h, w = height, int(round(height * ratio[1]))
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def v2_train_transform(pil_input):
    from torchvision.transforms import v2
    steps = [v2.RandomResizedCrop(SIZE, antialias=True), v2.RandomHorizontalFlip()]
    if pil_input:
        steps.append(v2.PILToTensor())
    steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]
    return v2.Compose(steps)


def _decode_tv(path):
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    return decode_jpeg(read_file(path), mode=ImageReadMode.RGB)


def _decode_pil(path):
    from PIL import Image
    with Image.open(path) as im:
        return im.convert("RGB")


def _epochs(make_iter):
    epoch = 0
    while True:
        yield from make_iter(epoch)
        epoch += 1


def _dataloader(dataset, batch, workers, seed, shuffle=True):
    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=shuffle, num_workers=workers,
                                       pin_memory=False, drop_last=True, generator=g,
                                       persistent_workers=workers > 0)


def dataloader_batches(data_dir, batch, workers, seed, decoder):
    from torchvision.datasets import ImageFolder
    ds = ImageFolder(str(Path(data_dir) / "train"), loader=_decode_tv if decoder == "tv" else _decode_pil,
                     transform=v2_train_transform(pil_input=decoder == "pil"))
    dl = _dataloader(ds, batch, workers, seed)
    return _epochs(lambda epoch: iter(dl))


class _WdsTransform:
    def __init__(self):
        self.t = v2_train_transform(pil_input=False)

    def __call__(self, sample):
        from torchvision.io import ImageReadMode, decode_jpeg
        data = torch.frombuffer(bytearray(sample["jpg"]), dtype=torch.uint8)
        return self.t(decode_jpeg(data, mode=ImageReadMode.RGB)), int(sample["cls"])


def webdataset_batches(data_dir, batch, workers, seed):
    import webdataset as wds
    shards = sorted(str(p) for p in (Path(data_dir) / "shards").glob("shard-*.tar"))
    ds = (wds.WebDataset(shards, shardshuffle=len(shards), seed=seed, empty_check=False)
          .shuffle(1000).map(_WdsTransform()))
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers, pin_memory=False,
                                     drop_last=True, persistent_workers=workers > 0)
    return _epochs(lambda epoch: iter(dl))


def spdl_batches(data_dir, batch, threads, seed):
    import spdl.io
    from spdl.pipeline import PipelineBuilder
    files = read_file_list(data_dir)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD).view(1, 3, 1, 1) * 255

    def load(item):
        i, epoch = item
        path, label = files[i]
        with open(path, "rb") as f:
            packets = spdl.io.demux_image(f.read())
        rnd = random.Random(seed * 1_000_003 + epoch * len(files) + i)
        x, y, w, h = rrc_params(packets.width, packets.height, rnd)
        flip = ",hflip" if rnd.random() < 0.5 else ""
        desc = f"crop={w}:{h}:{x}:{y},scale={SIZE}:{SIZE}:flags=bilinear{flip},format=rgb24"
        return spdl.io.decode_packets(packets, filter_desc=desc), label

    def collate(items):
        hwc = spdl.io.to_torch(spdl.io.convert_frames([f for f, _ in items]))  # [B, H, W, 3] uint8
        x = hwc.permute(0, 3, 1, 2).float().sub_(mean).div_(std).contiguous(memory_format=torch.contiguous_format)
        return x, torch.tensor([label for _, label in items], dtype=torch.int64)

    def one_epoch(epoch):
        order = list(range(len(files)))
        random.Random(seed + epoch).shuffle(order)
        pipeline = (PipelineBuilder()
                    .add_source([(i, epoch) for i in order])
                    .pipe(load, concurrency=threads)
                    .aggregate(batch, drop_last=True)
                    .pipe(collate)
                    .add_sink(3)
                    .build(num_threads=threads))
        with pipeline.auto_stop():
            yield from pipeline

    return _epochs(one_epoch)


def dali_batches(data_dir, batch, threads, seed, fused):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(Path(data_dir) / "train"), random_shuffle=True,
                                        name="Reader")
        if fused:
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                                   random_area=[0.08, 1.0], random_aspect_ratio=[3 / 4, 4 / 3])
            images = fn.resize(images, resize_x=SIZE, resize_y=SIZE, interp_type=types.INTERP_LINEAR,
                               antialias=True)
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=(SIZE, SIZE), random_area=[0.08, 1.0],
                                            random_aspect_ratio=[3 / 4, 4 / 3], interp_type=types.INTERP_LINEAR,
                                            antialias=True)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
                                          mirror=fn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()

    def gen():
        while True:
            images, labels = p.run()
            yield (torch.from_numpy(images.as_array()),
                   torch.from_numpy(labels.as_array()).reshape(-1).to(torch.int64))

    return gen()


def batches(kind, data_dir, batch, parallel, seed=0):
    if kind == "dataloader-tv":
        return dataloader_batches(data_dir, batch, parallel, seed, "tv")
    if kind == "dataloader-pil":
        return dataloader_batches(data_dir, batch, parallel, seed, "pil")
    if kind == "webdataset-tv":
        return webdataset_batches(data_dir, batch, parallel, seed)
    if kind == "spdl":
        return spdl_batches(data_dir, batch, parallel, seed)
    if kind in ("dali", "dali-fused"):
        return dali_batches(data_dir, batch, parallel, seed, fused=kind == "dali-fused")
    raise ValueError(f"unknown loader {kind!r}; known: {', '.join(KINDS)}")


class _EndlessEpochs:
    """An endless iterator over a loader's epochs (set_epoch 0, 1, ...);
    `.loader` is the loader (for its stats)."""

    def __init__(self, loader):
        self.loader = loader
        self._batches = self._epochs()

    def _epochs(self):
        epoch = 0
        while True:
            self.loader.set_epoch(epoch)
            yield from self.loader
            epoch += 1

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)


def mlos_loader(dataset, cpus, batch, reader="auto"):
    """The mlOS offloaded loader (mlos_training.data.ImageLoader): an endless
    iterator of (images, labels) batches, like batches(), whose `.loader` is
    the ImageLoader. `dataset` is the dataset directory (its train/
    ImageFolder is read); `cpus` the CPU budget (this process's affinity is
    already cpus, and the helper runs on them with one decoding thread per
    CPU). reader: "auto" (io_uring where the kernel allows) or "pread"."""
    from mlos_training.data import ImageLoader
    return _EndlessEpochs(ImageLoader(str(Path(dataset) / "train"), batch_size=batch, transform="train", size=224,
                                      seed=0, drop_last=True, workers=len(cpus), reader=reader))
