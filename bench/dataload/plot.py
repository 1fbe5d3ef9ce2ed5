# SPDX-License-Identifier: Apache-2.0
"""Plots a data-loading run: loader images/s (baselines.py --json) and, if
given, training samples/s (train_cnn.py --json), medians with min-max bars.

    python bench/dataload/plot.py LOADERS.json [TRAINING.json] --out dataload.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"mlos": "mlOS ImageLoader", "dataloader-tv": "DataLoader + decode_jpeg", "dataloader-pil": "DataLoader + PIL",
         "webdataset-tv": "WebDataset", "spdl": "SPDL", "dali": "DALI (CPU)", "dali-fused": "DALI (CPU, ROI decode)",
         "decode-tv": "decode only (ceiling)", "decode-pil": "decode only, PIL", "synthetic": "no loading (compute)"}


def bars(ax, rows, title, unit):
    labels = [NAMES.get(k, k) for k, _, _, _ in rows]
    med = [m for _, m, _, _ in rows]
    err = [[m - lo for _, m, lo, _ in rows], [hi - m for _, m, _, hi in rows]]
    colours = ["tab:red" if k == "mlos" else "tab:gray" if k in ("synthetic", "decode-tv", "decode-pil")
               else "tab:blue" for k, _, _, _ in rows]
    ax.barh(labels, med, xerr=err, color=colours, capsize=3)
    for y, (_, m, _, hi) in enumerate(rows):
        ax.text(hi, y, f"  {m:.0f}", va="center")  # past the bar's max
    ax.invert_yaxis()
    ax.set_xlim(0, max(hi for _, _, _, hi in rows) * 1.15)
    ax.set_xlabel(unit)
    ax.set_title(title)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("loaders")
    ap.add_argument("training", nargs="?")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    load = json.load(open(a.loaders))
    rows = [(k, e["images_per_s"], e["images_per_s_min"], e["images_per_s_max"]) for k, e in load["experts"].items()]
    rows.sort(key=lambda r: -r[1])
    panels = 2 if a.training else 1
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3 + 2.2 * panels), squeeze=False)
    bars(axes[0][0], rows, f"Training transform at 224, batch {load['batch']}, CPUs {load['cpus']} (best setting each)",
         "images/s")
    if a.training:
        train = json.load(open(a.training))
        trows = [(r["kind"], r["summary"]["samples_per_s"], r["summary"]["samples_per_s_min"],
                  r["summary"]["samples_per_s_max"]) for r in train["results"]]
        trows.sort(key=lambda r: -r[1])
        bars(axes[1][0], trows, f"Data-bound training ({train['model']}), CPUs {train['cpus']}", "samples/s")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
