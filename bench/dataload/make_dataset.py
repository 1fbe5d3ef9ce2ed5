#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds an ImageNet-like JPEG dataset from real photographs, for the
data-loading benchmark (bench/dataload/baselines.py).

    python bench/dataload/make_dataset.py --out DIR [--count 10000] [--classes 100] [--seed 0] [--workers 2]
    python bench/dataload/make_dataset.py --out DIR --check

Sources: the colour photographs that ship inside the scikit-image wheel
(skimage.data; no download): astronaut, chelsea, coffee, rocket,
hubble_deep_field, immunohistochemistry, retina, motorcycle (left view of
stereo_motorcycle). Synthetic images (colorwheel, logo) and grey ones are
left out.

Each class is one source photograph, an anchor region of it and a colour
cast; each sample is a random crop around that anchor (scale, small
rotation, brightness/contrast/saturation jitter, flip), resized to an
ImageNet-like size (long side mostly 500, aspect 4:3 or 3:2, a few square,
a quarter portrait; both sides within 300..500), with camera-style
sharpening and luminance grain (the photographs are small and smooth:
without them a 500x375 view compresses to ~50 KB at quality 90, half of an
ImageNet JPEG; with them ~80 KB), encoded by PIL at quality 90.

Output, under DIR:
- train/cNNN/XXXXXXXX.jpg: a torchvision ImageFolder tree (class cNNN is
  label NNN, since ImageFolder sorts class names);
- shards/shard-NNNNNN.tar: WebDataset shards, <key>.jpg + <key>.cls (the
  label as decimal text), --shard-size samples each, samples in a seeded
  shuffled order so each shard mixes classes;
- files.txt: train/cNNN/XXXXXXXX.jpg<TAB>label, one line per sample, in
  index order;
- meta.json: the parameters, the sources, and the sizes measured.

Deterministic: sample i depends only on (--seed, i), not on --workers.
--check reads DIR back: count, mean bytes, mean WxH, shard members, and
(if the webdataset package is importable) one shard through webdataset."""
import argparse
import io
import json
import multiprocessing
import os
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance, ImageFilter

SOURCES = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
           "immunohistochemistry", "retina", "motorcycle")
QUALITY = 90
MAX_SOURCE_SHORT_SIDE = 640
GRAIN_SIGMA = 7.0  # luminance grain: Gaussian, same on R, G, B, in 0..255 units
# Camera-style sharpening after the resize (PIL UnsharpMask arguments).
SHARPEN = dict(radius=2, percent=250, threshold=2)

_photos = None  # per worker: name -> PIL RGB image
_classes = None  # per worker: list of class descriptions


def load_photos():
    from skimage import data
    out = {}
    for name in SOURCES:
        arr = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
        assert arr.ndim == 3 and arr.shape[2] == 3 and arr.dtype == np.uint8, (name, arr.shape, arr.dtype)
        img = Image.fromarray(arr, "RGB")
        # hubble_deep_field and retina are 872-1411 px: shrink once so a crop
        # never has to rotate a 2000 px patch (it costs more than the rest).
        scale = MAX_SOURCE_SHORT_SIDE / min(img.size)
        if scale < 1:
            img = img.resize((round(img.size[0] * scale), round(img.size[1] * scale)), Image.LANCZOS)
        out[name] = img
    return out


def class_table(n_classes, seed):
    """Class k: source photograph k mod len(SOURCES), an anchor (centre, in
    fractions of the photograph) and a colour cast (per-channel gains)."""
    rng = np.random.default_rng([seed, 0xC1A55])
    return [{"source": SOURCES[k % len(SOURCES)],
             "anchor": [float(v) for v in rng.uniform(0.3, 0.7, 2)],
             "cast": [float(v) for v in rng.uniform(0.85, 1.15, 3)]} for k in range(n_classes)]


def output_size(rng):
    """(width, height) like ImageNet's: mostly 500x375, some 500x333, a few
    square or smaller; a quarter portrait; both sides in 300..500."""
    long_side = 500 if rng.random() < 0.8 else int(rng.integers(400, 501))
    aspect = rng.choice([4 / 3, 3 / 2, 1.0], p=[0.7, 0.2, 0.1])
    short_side = max(300, min(500, round(long_side / aspect)))
    return (short_side, long_side) if rng.random() < 0.25 else (long_side, short_side)


def make_sample(i, n_classes, seed):
    """The JPEG bytes of sample i and its label; deterministic in (seed, i)."""
    rng = np.random.default_rng([seed, i])
    label = i % n_classes
    cls = _classes[label]
    photo = _photos[cls["source"]]
    pw, ph = photo.size
    out_w, out_h = output_size(rng)
    # Crop: a window of 55-100 % of the photograph's short side, the output's
    # aspect, centred near the class anchor. (Deeper zooms upscale the small
    # photographs into blur that compresses to a third of a camera JPEG.)
    side = min(pw, ph) * rng.uniform(0.55, 1.0)
    cw, ch = (side, side * out_h / out_w) if out_w >= out_h else (side * out_w / out_h, side)
    cw, ch = min(cw, pw), min(ch, ph)
    cx = np.clip(cls["anchor"][0] * pw + rng.normal(0, 0.08) * pw, cw / 2, pw - cw / 2)
    cy = np.clip(cls["anchor"][1] * ph + rng.normal(0, 0.08) * ph, ch / 2, ph - ch / 2)
    # Small rotation about the crop centre, of just the patch the rotated
    # window covers (rotating a whole 1411x1411 photograph would cost more
    # than the rest); corners outside the photograph take its corner colour.
    angle = rng.uniform(-10, 10)
    r = int(np.ceil(np.hypot(cw, ch) / 2)) + 2
    x0, y0 = int(cx) - r, int(cy) - r
    patch = photo.crop((x0, y0, x0 + 2 * r, y0 + 2 * r))  # zero-filled outside
    if x0 < 0 or y0 < 0 or x0 + 2 * r > pw or y0 + 2 * r > ph:
        fill = Image.new("RGB", patch.size, photo.getpixel((0, 0)))
        fill.paste(photo.crop((max(x0, 0), max(y0, 0), min(x0 + 2 * r, pw), min(y0 + 2 * r, ph))),
                   (max(-x0, 0), max(-y0, 0)))
        patch = fill
    pcx, pcy = cx - x0, cy - y0
    img = patch.rotate(angle, resample=Image.BILINEAR, center=(pcx, pcy), fillcolor=photo.getpixel((0, 0)))
    img = img.resize((out_w, out_h), Image.BICUBIC, box=(pcx - cw / 2, pcy - ch / 2, pcx + cw / 2, pcy + ch / 2))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    img = ImageEnhance.Brightness(img).enhance(rng.uniform(0.75, 1.25))
    img = ImageEnhance.Contrast(img).enhance(rng.uniform(0.8, 1.2))
    img = ImageEnhance.Color(img).enhance(rng.uniform(0.7, 1.3))
    img = img.filter(ImageFilter.UnsharpMask(**SHARPEN))
    arr = np.asarray(img, dtype=np.float32) * np.asarray(cls["cast"], dtype=np.float32)
    arr += rng.normal(0, GRAIN_SIGMA, arr.shape[:2]).astype(np.float32)[..., None]
    img = Image.fromarray(np.clip(arr + 0.5, 0, 255).astype(np.uint8), "RGB")
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=QUALITY)
    return buf.getvalue(), label, out_w, out_h


def rel_path(i, label):
    return f"train/c{label:03d}/{i:08d}.jpg"


def _init_worker(n_classes, seed):
    global _photos, _classes
    _photos, _classes = load_photos(), class_table(n_classes, seed)


def _write_sample(args):
    i, n_classes, seed, out = args
    data, label, w, h = make_sample(i, n_classes, seed)
    path = Path(out) / rel_path(i, label)
    path.write_bytes(data)
    return i, label, len(data), w, h


def _tar_add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))


def write_shards(out, labels, shard_size, seed):
    """WebDataset shards of the finished ImageFolder tree, in a seeded
    shuffled order; written atomically (.tmp then rename)."""
    order = np.random.default_rng([seed, 0x5A4D]).permutation(len(labels))
    shard_dir = out / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for s in range(0, len(order), shard_size):
        name = f"shard-{s // shard_size:06d}.tar"
        tmp = shard_dir / (name + ".tmp")
        with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in order[s:s + shard_size]:
                i = int(i)
                key = f"{i:08d}"
                _tar_add(tar, key + ".jpg", (out / rel_path(i, labels[i])).read_bytes())
                _tar_add(tar, key + ".cls", str(labels[i]).encode())
        tmp.rename(shard_dir / name)
        names.append(name)
    return names


def generate(a):
    out = Path(a.out)
    for k in range(a.classes):
        (out / f"train/c{k:03d}").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    jobs = [(i, a.classes, a.seed, str(out)) for i in range(a.count)]
    results = [None] * a.count
    with multiprocessing.Pool(a.workers, _init_worker, (a.classes, a.seed)) as pool:
        for done, r in enumerate(pool.imap_unordered(_write_sample, jobs, chunksize=16), 1):
            results[r[0]] = r
            if done % 1000 == 0:
                print(f"make_dataset: {done}/{a.count} images, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    t_images = time.perf_counter() - t0
    labels = [r[1] for r in results]
    with open(out / "files.txt.tmp", "w") as f:
        for i, label in enumerate(labels):
            f.write(f"{rel_path(i, label)}\t{label}\n")
    os.replace(out / "files.txt.tmp", out / "files.txt")
    shards = write_shards(out, labels, a.shard_size, a.seed)
    t_total = time.perf_counter() - t0
    sizes = np.array([r[2] for r in results])
    meta = {"count": a.count, "classes": a.classes, "seed": a.seed, "workers": a.workers,
            "shard_size": a.shard_size, "shards": len(shards), "jpeg_quality": QUALITY,
            "grain_sigma": GRAIN_SIGMA, "sources": list(SOURCES),
            "mean_bytes": float(sizes.mean()), "median_bytes": float(np.median(sizes)),
            "mean_width": float(np.mean([r[3] for r in results])),
            "mean_height": float(np.mean([r[4] for r in results])),
            "seconds_images": round(t_images, 2), "seconds_total": round(t_total, 2),
            "cpus": sorted(os.sched_getaffinity(0))}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta))


def check(a):
    """Reads the dataset back and prints what it finds; exit 1 on a
    mismatch between files.txt, the tree and the shards."""
    out = Path(a.out)
    lines = [l.split("\t") for l in (out / "files.txt").read_text().splitlines()]
    sizes, widths, heights = [], [], []
    for rel, _ in lines:
        p = out / rel
        sizes.append(p.stat().st_size)
        with Image.open(p) as im:
            widths.append(im.size[0])
            heights.append(im.size[1])
    shard_paths = sorted((out / "shards").glob("shard-*.tar"))
    members = 0
    for sp in shard_paths:
        with tarfile.open(sp) as tar:
            members += sum(1 for m in tar.getmembers() if m.name.endswith(".jpg"))
    report = {"count": len(lines), "classes": len({l for _, l in lines}),
              "mean_bytes": round(float(np.mean(sizes)), 1), "min_bytes": int(np.min(sizes)),
              "max_bytes": int(np.max(sizes)),
              "mean_wxh": f"{np.mean(widths):.1f}x{np.mean(heights):.1f}",
              "landscape_fraction": round(float(np.mean(np.array(widths) > np.array(heights))), 3),
              "shards": len(shard_paths), "shard_jpegs": members}
    try:
        import webdataset as wds
        ds = wds.WebDataset(str(shard_paths[0]), shardshuffle=False).decode("pil").to_tuple("jpg", "cls")
        first = [(im.size, cls) for im, cls in ds]
        report["webdataset_read"] = {"shard": shard_paths[0].name, "samples": len(first),
                                     "first": [list(first[0][0]), first[0][1]]}
    except ImportError:
        report["webdataset_read"] = "webdataset not importable; skipped"
    print(json.dumps(report))
    ok = members == len(lines) and (out / "train").is_dir()
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--shard-size", type=int, default=1000)
    ap.add_argument("--check", action="store_true", help="read DIR back and print count, mean bytes, mean WxH")
    a = ap.parse_args()
    if a.check:
        return check(a)
    generate(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
