#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the photo mlos_dataload_decode_bench decodes: scikit-image's
coffee photo resized to 500x375 (ImageNet's most common size), JPEG q90
4:2:0 as PIL saves it. Usage: PYTHONPATH=.pydeps python3 this.py OUT.jpg"""
import sys

from PIL import Image
from skimage import data

Image.fromarray(data.coffee()).resize((500, 375), Image.LANCZOS).save(sys.argv[1], quality=90)
