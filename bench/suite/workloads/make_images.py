# SPDX-License-Identifier: Apache-2.0
"""Writes N JPEG images into a directory, deterministically.

    python make_images.py DIR [N] [--photo]

The default (64x64 squares on noise) is the data pipeline scenario's small
dataset. photo=True writes photo-sized pictures (500x375, ImageNet's most
common size): smooth colour fields with shapes and sensor-like grain, at
quality 90, which gives files of about 40-70 KB; the JPEG decode then costs
what it costs on real photographs, not on thumbnails."""
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter


def _small(rng, size):
    im = Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8))
    d = ImageDraw.Draw(im)
    for _ in range(3):
        x0, y0 = rng.integers(0, size - 16, 2)
        d.rectangle([int(x0), int(y0), int(x0) + 16, int(y0) + 16], fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    return im


def _photo(rng, w=500, h=375):
    field = Image.fromarray(rng.integers(0, 255, (6, 8, 3), dtype=np.uint8)).resize((w, h), Image.BICUBIC)
    d = ImageDraw.Draw(field)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w - 60)), int(rng.integers(0, h - 60))
        x1, y1 = x0 + int(rng.integers(20, 160)), y0 + int(rng.integers(20, 160))
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        (d.ellipse if rng.integers(2) else d.rectangle)([x0, y0, x1, y1], fill=colour)
    px = np.asarray(field.filter(ImageFilter.GaussianBlur(1.5)), dtype=np.int16)
    px = px + rng.normal(0, 6, px.shape).astype(np.int16)
    return Image.fromarray(np.clip(px, 0, 255).astype(np.uint8))


def make_images(directory, count=1024, size=64, seed=0, photo=False):
    os.makedirs(directory, exist_ok=True)
    if len([f for f in os.listdir(directory) if f.endswith(".jpg")]) == count:
        return directory
    rng = np.random.default_rng(seed)
    for i in range(count):
        im = _photo(rng) if photo else _small(rng, size)
        im.save(os.path.join(directory, f"{i:05d}.jpg"), quality=90)
    return directory


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--photo"]
    make_images(args[0], int(args[1]) if len(args) > 1 else 1024, photo="--photo" in sys.argv)
