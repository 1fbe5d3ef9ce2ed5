"""Writes N JPEG images (64x64, random shapes on noise) into a directory,
deterministically: the data pipeline scenario's dataset."""
import os
import sys

import numpy as np
from PIL import Image, ImageDraw


def make_images(directory, count=1024, size=64, seed=0):
    os.makedirs(directory, exist_ok=True)
    if len([f for f in os.listdir(directory) if f.endswith(".jpg")]) == count:
        return directory
    rng = np.random.default_rng(seed)
    for i in range(count):
        im = Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8))
        d = ImageDraw.Draw(im)
        for _ in range(3):
            x0, y0 = rng.integers(0, size - 16, 2)
            d.rectangle([int(x0), int(y0), int(x0) + 16, int(y0) + 16], fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
        im.save(os.path.join(directory, f"{i:05d}.jpg"), quality=90)
    return directory


if __name__ == "__main__":
    make_images(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1024)
