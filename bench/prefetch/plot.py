# SPDX-License-Identifier: Apache-2.0
"""Plots prefetch_bench.py's result: per order, each variant's epoch time
split into read stall and the rest, per epoch (medians), with the hit rate
above each bar.

    python bench/prefetch/plot.py prefetch.json --out prefetch.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"linux": "tab:gray", "plan": "tab:blue", "learned": "tab:red"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("result")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    r = json.load(open(args.result))
    orders = list(r["median"])
    fig, axes = plt.subplots(1, len(orders), figsize=(6 * len(orders), 4), sharey=True, squeeze=False)
    for ax, order in zip(axes[0], orders):
        variants = r["median"][order]
        width = 0.8 / len(variants)
        for k, (name, epochs) in enumerate(variants.items()):
            xs = [e + k * width for e in range(len(epochs))]
            stall = [ep["stall_seconds"] for ep in epochs]
            rest = [ep["seconds"] - ep["stall_seconds"] for ep in epochs]
            ax.bar(xs, rest, width, color=COLOURS.get(name, "tab:green"), label=name)
            ax.bar(xs, stall, width, bottom=rest, color=COLOURS.get(name, "tab:green"), alpha=0.4, hatch="//")
            for x, ep in zip(xs, epochs):
                ax.text(x, ep["seconds"], f"{ep['hit_rate']:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks([e + 0.4 - width / 2 for e in range(r["epochs"])])
        ax.set_xticklabels([f"epoch {e + 1}" for e in range(r["epochs"])])
        ax.set_title(f"{order}: {r['dataset_bytes'] >> 20} MiB read per epoch, limit {r['limit_bytes'] >> 20} MiB")
        ax.set_ylabel("seconds (hatched: read stall; label: hit rate)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
