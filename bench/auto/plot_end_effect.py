#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots what bench/auto/end_effect.py wrote: per scenario, each policy
set's repetitions as points and its median as a bar, relative to the best
hand-picked set's median (above 1: better, for latency too).

    python3 bench/auto/plot_end_effect.py RESULT.json [...] --out FILE.png"""
import argparse
import json
import statistics


def relative(values, reference, higher):
    """Each value against `reference`, oriented so that above 1 is better."""
    return [(v / reference if higher else reference / v) for v in values if v]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = []  # (label, {set: [relative values]})
    for path in a.results:
        with open(path) as f:
            r = json.load(f)
        for name, s in r["summary"].items():
            best = s["median"][s["best_hand_picked"]]
            rows.append((f"{name}\n({r['reps']} reps)", {k: relative(v, best, s["higher_is_better"])
                                                        for k, v in r["results"][name].items()}))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sets = ["none", "defaults", "prefetch", "exclusive", "auto"]
    colours = {"none": "tab:gray", "defaults": "tab:blue", "prefetch": "tab:cyan", "exclusive": "tab:purple",
               "auto": "tab:green"}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.16
    for i, (label, by_set) in enumerate(rows):
        for j, s in enumerate(sets):
            vals = by_set.get(s, [])
            if not vals:
                continue
            x = i + (j - 2) * width
            ax.bar(x, statistics.median(vals), width, color=colours[s], label=s if i == 0 else None, alpha=0.8)
            ax.plot([x] * len(vals), vals, "k.", markersize=3)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.95, color="tab:red", linewidth=0.8, linestyle="--", label="0.95 of the best")
    ax.set_xticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    ax.set_ylabel("relative to the best hand-picked set's median\n(above 1: better)", fontsize=8)
    ax.set_ylim(0, 1.4)
    ax.legend(fontsize=7, ncol=6, loc="upper center")
    ax.set_title("mlos run --policy auto against hand-picked policy sets (2 CPUs; bars: medians, points: "
                 "repetitions)", fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
