# SPDX-License-Identifier: Apache-2.0
"""The benchmark suite's plots (bench/suite/report.py), read back through
matplotlib's objects, not pixels: a legend naming every kind of bar, each
bar's median written on it with its unit, the better direction, the commit
and machine in the corner, and the expert's pick marked, or its absence
said, in every scenario. Synthetic results: nothing is measured."""
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite"
sys.path.insert(0, str(SUITE))
import report  # noqa: E402
from scenarios import EXPERT, GENERIC, MLOS  # noqa: E402

sys.path.remove(str(SUITE))

MACHINE = {"cpu_model": "Test(R) CPU Model 9", "cpus": 8, "allowed_cpus": 8, "memory_gib": 31.3,
           "kernel": "6.1.0-test", "mlos_commit": "abc1234-dirty"}


def train(*per_rep):
    return [{"train": {"samples_per_s": x}} for x in per_rep]


def pair(*per_rep):
    return [{"train#0": {"samples_per_s": a}, "train#1": {"samples_per_s": b}} for a, b in per_rep]


def infer(*per_rep):
    return [{"infer": {"p50_ms": p99 / 2, "p99_ms": p99}} for p99 in per_rep]


def scenario(name, kind, runs, baseline=GENERIC):
    return {"name": name, "title": f"title of {name}", "kind": kind, "baseline": baseline, "neighbour": None,
            "commands": {}, "runs": runs}


# (scenario, its expert's pick or None, the value label of each bar)
CASES = [
    (scenario("tp", "throughput", {GENERIC: train(100, 110, 120), MLOS: train(300, 310, 305),
                                   EXPERT + "a": train(200, 250, 240), EXPERT + "b": train(90, 95, 99)}),
     EXPERT + "a", {GENERIC: "110 samples/s", MLOS: "305 samples/s", EXPERT + "a": "240 samples/s",
                    EXPERT + "b": "95 samples/s"}),
    # The defaults beat every candidate: the expert keeps them.
    (scenario("tp-defaults", "throughput", {GENERIC: train(500, 510, 490), MLOS: train(400, 410, 405),
                                            EXPERT + "a": train(200, 210, 220)}),
     GENERIC, {GENERIC: "500 samples/s", MLOS: "405 samples/s", EXPERT + "a": "210 samples/s"}),
    (scenario("tp-no-expert", "throughput", {GENERIC: train(100, 101, 102), MLOS: train(150, 151, 152)}),
     None, {GENERIC: "101 samples/s", MLOS: "151 samples/s"}),
    (scenario("co", "colocated", {"alone": train(180, 181, 182), GENERIC: pair((20, 30), (25, 35), (22, 28)),
                                  EXPERT + "pinned": pair((160, 170), (165, 175), (150, 155)),
                                  MLOS: pair((150, 160), (155, 165), (140, 145))}, baseline="alone"),
     EXPERT + "pinned", {"alone": "181 samples/s", GENERIC: "26 samples/s", EXPERT + "pinned": "162 samples/s",
                         MLOS: "152 samples/s"}),
    (scenario("inf", "inference", {"alone": infer(1.1, 1.2, 1.3), GENERIC: infer(70.0, 74.1, 80.0),
                                   EXPERT + "pinned": infer(4.4, 4.58, 4.9), MLOS: infer(3.7, 3.94, 4.6)},
              baseline="alone"),
     EXPERT + "pinned", {"alone": "1.20 ms", GENERIC: "74.1 ms", EXPERT + "pinned": "4.58 ms", MLOS: "3.94 ms"}),
]


def results(machine=MACHINE):
    return {"machine": machine, "quick": False, "reps": 3, "started": "2026-01-02T03:04:05+00:00",
            "scenarios": [sc for sc, _, _ in CASES]}


@pytest.fixture
def rendered():
    """Each case's figure, closed afterwards."""
    plt = report.pyplot()
    res = results()
    figs = [report.figure(res, sc) for sc, _, _ in CASES]
    yield figs
    for f in figs:
        plt.close(f)


def bars_by_name(ax):
    """Bar -> the y tick label it stands on."""
    ticks = {round(t): label.get_text() for t, label in zip(ax.get_yticks(), ax.get_yticklabels())}
    return {ticks[round(b.get_y() + b.get_height() / 2)]: b for b in ax.patches}


def legend_texts(fig):
    legends = list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend()]
    return [t.get_text() for lg in legends for t in lg.get_texts()]


@pytest.mark.parametrize("i", range(len(CASES)), ids=[sc["name"] for sc, _, _ in CASES])
def test_every_plot_has_legend_values_direction_corner_and_pick(rendered, i):
    sc, pick, labels = CASES[i]
    fig = rendered[i]
    ax = fig.axes[0]
    bars = bars_by_name(ax)
    assert sorted(bars) == sorted(sc["runs"])

    legend = legend_texts(fig)
    assert any(t.startswith("generic Linux") for t in legend)
    assert any(t.startswith("mlOS") for t in legend)
    if any(n.startswith(EXPERT) for n in sc["runs"]):
        assert any(t.startswith("expert hand tuning") for t in legend)
    if sc["baseline"] != GENERIC:
        assert f"reference: {sc['baseline']}" in legend

    # Each bar's median, with its unit, written in line with the bar.
    written = {t.get_text(): t.get_position()[1] for t in ax.texts}
    for name, label in labels.items():
        assert label in written, (label, sorted(written))
        bar = bars[name]
        assert written[label] == pytest.approx(bar.get_y() + bar.get_height() / 2)

    better = "lower is better" if sc["kind"] == "inference" else "higher is better"
    worse = "higher is better" if better == "lower is better" else "lower is better"
    assert better in ax.get_xlabel() and worse not in ax.get_xlabel()

    corner = [t for t in fig.texts if "abc1234-dirty" in t.get_text()]
    assert len(corner) == 1
    assert "Test CPU Model 9, 8 CPUs, 31.3 GiB, Linux 6.1.0-test" in corner[0].get_text()
    assert corner[0].get_fontsize() < ax.xaxis.label.get_fontsize()

    hatched = [n for n, b in bars.items() if b.get_hatch()]
    picks = [t for t in legend if t.startswith("expert's pick")]
    assert len(picks) == 1
    if pick is None:
        assert hatched == []
        assert "none" in picks[0]
    else:
        assert hatched == [pick]
        assert "none" not in picks[0]


def test_pick_matches_the_markdown_table():
    """The hatched bar is the configuration results.md tags as the pick."""
    res = {**results(), "scenarios": [CASES[0][0], CASES[1][0]]}
    md = report.markdown({**res, "machine": {**MACHINE, "memory_gib": 1, "python": "3", "versions": {},
                                             "stress_ng": "-", "cgroup": "v2"},
                          "seconds": 1, "warmup": 0, "wall_seconds": 1, "extras": {}})
    for sc, pick, _ in CASES[:2]:
        assert f"| {pick} (expert's pick) |" in md
        assert report.expert_pick(sc, report.plotted(sc)) == pick


def test_unrecorded_commit_and_machine_are_said_not_invented():
    assert report.provenance({"machine": {}}) == "commit: not recorded · machine: not recorded"
    line = report.provenance({"machine": {k: v for k, v in MACHINE.items() if k != "mlos_commit"}, "quick": True})
    assert line.startswith("commit: not recorded · Test CPU Model 9")
    assert "--quick" in line


def test_plots_writes_one_png_per_scenario(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results()))
    written = report.plots(json.loads(path.read_text()), tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{sc['name']}.png" for sc, _, _ in CASES)
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
