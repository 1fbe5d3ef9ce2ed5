# SPDX-License-Identifier: Apache-2.0
"""results.json -> markdown tables and PNG plots. Every figure is a median
over repetitions with its min-max range; ratios compare medians measured in
the same run."""
import statistics

from scenarios import EXPERT, GENERIC, MLOS


def brief(run):
    parts = []
    for role, r in run.items():
        if "samples_per_s" in r:
            parts.append(f"{role} {r['samples_per_s']:.0f}/s ({r['threads']} thr, cpus {r['cpus']})")
        if "p99_ms" in r:
            parts.append(f"{role} p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms")
    return "; ".join(parts)


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def rng(s, fmt="{:.0f}"):
    return f"{fmt.format(s['min'])}–{fmt.format(s['max'])}"


def throughput(runs, role="train"):
    """Per configuration: stats of samples/s of `role` (sum over jobs of
    that role when several run together)."""
    return {n: stats([sum(r["samples_per_s"] for k, r in run.items() if k.split("#")[0] == role) for run in rs])
            for n, rs in runs.items() if rs and any(k.startswith(role) for k in rs[0])}


def per_job(runs):
    """Per configuration: stats of each job's samples/s (all jobs pooled)."""
    return {n: stats([r["samples_per_s"] for run in rs for r in run.values() if "samples_per_s" in r])
            for n, rs in runs.items() if rs}


def expert_choice(table):
    """The expert's result: the best median among the candidates (the
    defaults count as one: an expert may keep them)."""
    cands = {n: s for n, s in table.items() if n.startswith(EXPERT) or n == GENERIC}
    best = max(cands, key=lambda n: cands[n]["median"])
    return best, cands[best]


def the_expert(runs):
    """The one expert configuration of a scenario that has a single one."""
    return next(n for n in runs if n.startswith(EXPERT))


def summarise(sc):
    """The scenario's headline numbers: generic, expert, mlOS and ratios."""
    runs = sc["runs"]
    if sc["kind"] == "throughput":
        t = throughput(runs)
        best, e = expert_choice(t)
        g, m = t[GENERIC], t[MLOS]
        return {"metric": "samples/s", "generic": g, "expert": e, "expert_config": best, "mlos": m,
                "mlos_vs_generic": m["median"] / g["median"], "mlos_vs_expert": m["median"] / e["median"],
                "expert_vs_generic": e["median"] / g["median"], "table": t}
    if sc["kind"] == "colocated":
        jobs = per_job(runs)
        alone = jobs[sc["baseline"]]["median"]
        total = throughput(runs)
        expert = the_expert(runs)
        out = {"metric": "samples/s per job", "alone": jobs[sc["baseline"]], "generic": jobs[GENERIC],
               "expert": jobs[expert], "expert_config": expert, "mlos": jobs[MLOS], "jobs": jobs, "aggregate": total}
        for k, n in (("generic", GENERIC), ("expert", expert), ("mlos", MLOS)):
            out[f"{k}_vs_alone"] = jobs[n]["median"] / alone
            out[f"{k}_overhead"] = 1 - jobs[n]["median"] / alone
        out["mlos_vs_generic"] = jobs[MLOS]["median"] / jobs[GENERIC]["median"]
        out["mlos_vs_expert"] = jobs[MLOS]["median"] / jobs[expert]["median"]
        out["expert_vs_generic"] = jobs[expert]["median"] / jobs[GENERIC]["median"]
        return out
    # inference
    expert = the_expert(runs)
    lat = {n: {q: stats([run["infer"][f"{q}_ms"] for run in rs]) for q in ("p50", "p99")}
           for n, rs in runs.items() if rs}
    t = throughput(runs)
    return {"metric": "inference p99 ms", "latency": lat, "train": t, "expert_config": expert,
            "generic": lat[GENERIC]["p99"], "expert": lat[expert]["p99"], "mlos": lat[MLOS]["p99"],
            "alone": lat[sc["baseline"]]["p99"],
            "mlos_vs_generic": lat[MLOS]["p99"]["median"] / lat[GENERIC]["p99"]["median"],
            "mlos_vs_expert": lat[MLOS]["p99"]["median"] / lat[expert]["p99"]["median"],
            "expert_vs_generic": lat[expert]["p99"]["median"] / lat[GENERIC]["p99"]["median"],
            "train_mlos_vs_generic": t[MLOS]["median"] / t[GENERIC]["median"],
            "train_mlos_vs_expert": t[MLOS]["median"] / t[expert]["median"]}


def markdown(res):
    m = res["machine"]
    lines = [f"# mlOS benchmark suite{' (--quick: numbers meaningless)' if res['quick'] else ''}", "",
             f"{m['cpu_model']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Linux {m['kernel']}, cgroup {m['cgroup']}; "
             f"Python {m['python']}, " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) +
             f"; {m['stress_ng']}; mlOS {m['mlos_commit']}. {res['reps']} interleaved repetitions of "
             f"{res['seconds']:g} s (after {res['warmup']:g} s warm-up) per configuration; medians, "
             f"[min–max] over repetitions. Suite wall time {res['wall_seconds']:.0f} s, started {res['started']}.",
             "", "## Summary", "",
             "| scenario | metric | generic | expert | mlOS | mlOS / generic | mlOS / expert |",
             "|---|---|---:|---:|---:|---:|---:|"]
    sums = [(sc, summarise(sc)) for sc in res["scenarios"]]
    for sc, s in sums:
        fmt = "{:.2f}" if sc["kind"] == "inference" else "{:.0f}"
        cell = lambda x: f"{fmt.format(x['median'])} [{rng(x, fmt)}]"  # noqa: E731
        better = "lower is better" if sc["kind"] == "inference" else "higher is better"
        lines.append(f"| {sc['title'].split(':')[0]} ({sc['name']}) | {s['metric']} ({better}) | {cell(s['generic'])} | "
                     f"{cell(s['expert'])} | {cell(s['mlos'])} | {s['mlos_vs_generic']:.2f} | "
                     f"{s['mlos_vs_expert']:.2f} |")
    behind = [(sc, s) for sc, s in sums
              if (s["mlos_vs_expert"] > 1 if sc["kind"] == "inference" else s["mlos_vs_expert"] < 1)]
    if behind:
        lines += ["", "mlOS behind the expert's best here: " + "; ".join(
            f"{sc['name']} ({s['mlos_vs_expert']:.2f} of the expert's {s['expert_config'].replace(EXPERT, '')})"
            for sc, s in behind) + ". What would close each gap: docs/benchmarks.md, 'Where mlOS loses to the "
            "expert'. Differences within the [min–max] ranges are not significant."]
    for sc, s in sums:
        lines += ["", f"## {sc['title']}", ""]
        if sc["neighbour"]:
            lines += [f"Neighbour (not measured): `{' '.join(sc['neighbour'])}`.", ""]
        if sc["kind"] == "throughput":
            lines += ["| configuration | samples/s | range | vs generic |", "|---|---:|---|---:|"]
            for n, x in s["table"].items():
                tag = " (expert's pick)" if n == s["expert_config"] else ""
                lines.append(f"| {n}{tag} | {x['median']:.0f} | {rng(x)} | "
                             f"{x['median'] / s['generic']['median']:.2f} |")
        elif sc["kind"] == "colocated":
            lines += ["| configuration | per job samples/s | range | vs alone on 1 CPU (overhead) | aggregate |",
                      "|---|---:|---|---:|---:|"]
            alone = s["alone"]["median"]
            for n, x in s["jobs"].items():
                agg = s["aggregate"][n]["median"]
                lines.append(f"| {n} | {x['median']:.0f} | {rng(x)} | {x['median'] / alone:.2f} "
                             f"({100 * (1 - x['median'] / alone):+.0f} %) | {agg:.0f} |")
        else:
            lines += ["| configuration | training samples/s | inference p50 ms | inference p99 ms | p99 vs alone |",
                      "|---|---:|---:|---:|---:|"]
            for n, lat in s["latency"].items():
                tr = s["train"].get(n)
                train_cell = f"{tr['median']:.0f} [{rng(tr)}]" if tr else "-"
                lines.append(f"| {n} | {train_cell} | "
                             f"{lat['p50']['median']:.2f} | {lat['p99']['median']:.2f} [{rng(lat['p99'], '{:.2f}')}] "
                             f"| {lat['p99']['median'] / s['alone']['median']:.2f} |")
        lines += ["", "Commands:", ""] + [f"- {n}: " + " & ".join(f"`{c}`" for c in cs)
                                          for n, cs in sc["commands"].items()]
    ex = res.get("extras") or {}
    if ex:
        lines += ["", "## 5. Memory pressure (bench/memory_pressure_report.py)", ""]
        mp = ex.get("memory_pressure", {})
        if "skipped" in mp:
            lines.append(f"Skipped: {mp['skipped']}")
        else:
            lines += ["| variant | survived | exit statuses |", "|---|---|---|"]
            for v, x in mp.items():
                lines.append(f"| {v} | {x['survived']}/{x['runs']} | {x['rc']} |")
        lines += ["", "## 6. Checkpoint stall (build/bin/mlos_checkpoint_bench)", ""]
        ck = ex.get("checkpoint", {})
        if "skipped" in ck:
            lines.append(f"Skipped: {ck['skipped']}")
        else:
            lines += ["| size | plain write + fsync | mlOS sync save | mlOS async save | async / plain |",
                      "|---|---:|---:|---:|---:|"]
            for size, x in ck["sizes"].items():
                lines.append(f"| {size} | {x['plain_ms']:.1f} ms | {x['mlos_sync_ms']:.1f} ms | "
                             f"{x['mlos_async_ms']:.2f} ms | {x['mlos_async_ms'] / x['plain_ms']:.2f} |")
        lines += ["", "## 7. Micro costs", "", "| measure | median |", "|---|---:|"]
        for k, v in (ex.get("micro") or {}).items():
            if isinstance(v, (int, float)):
                lines.append(f"| {k} | {v / 1e3:.2f} µs |" if v >= 1e3 else f"| {k} | {v:.0f} ns |")
            elif k == "phase_hint_ns":
                lines.append(f"| set_phase, embedded (mlos_daemon_load) | {v['embedded_median']:.0f} ns |")
                lines.append(f"| set_phase, daemon mode through the phase page | {v['daemon_median']:.0f} ns |")
        lines += ["", "## 8. Phase hints on their own (build/bin/mlos_phase_scenario)", ""]
        ph = ex.get("phase_hints", {})
        if "skipped" in ph or "configs" not in ph:
            lines.append(f"Skipped: {ph.get('skipped')}")
        else:
            lines += [f"One shared CPU; I/O scheduler `{ph['io_scheduler']}`; medians of {ph['reps']}, "
                      "ratio to ignored in brackets.", "",
                      "| config | trainer steps/s during load | during checkpoint | load s | checkpoint s |",
                      "|---|---:|---:|---:|---:|"]
            keys = ["trainer_steps_per_s_during_load", "trainer_steps_per_s_during_checkpoint", "load_s",
                    "checkpoint_s"]
            for n, c in ph["configs"].items():
                lines.append(f"| {n} | " + " | ".join(f"{c['median'][k]:.2f} ({c['ratio_to_ignored'][k]:.2f})"
                                                      for k in keys) + " |")
    return "\n".join(lines) + "\n"


# What a scenario's plot shows: the quantity per configuration, its unit,
# and which way is better.
PLOTTED = {"throughput": ("training samples/s", "samples/s", "higher"),
           "colocated": ("training samples/s per job, both jobs pooled", "samples/s", "higher"),
           "inference": ("inference p99 latency, ms", "ms", "lower")}


def plotted(sc):
    """Per configuration of a scenario: the stats its plot shows. Unlike
    summarise(), this needs no expert configuration."""
    runs = sc["runs"]
    if sc["kind"] == "throughput":
        return throughput(runs)
    if sc["kind"] == "colocated":
        return per_job(runs)
    return {n: stats([run["infer"]["p99_ms"] for run in rs]) for n, rs in runs.items() if rs}


def expert_pick(sc, table):
    """The configuration the expert settles on, as summarise() names it, or
    None where the scenario measured no expert candidate (the defaults alone
    are no pick: nobody tuned anything)."""
    if not any(n.startswith(EXPERT) for n in table):
        return None
    if sc["kind"] == "throughput":
        return expert_choice(table)[0]
    return next(n for n in table if n.startswith(EXPERT))


def provenance(res):
    """One line for a plot's corner: the mlOS commit and the machine, as
    results.json recorded them; what it lacks is said, not guessed."""
    m = res.get("machine") or {}
    commit = m.get("mlos_commit")
    parts = [f"mlOS commit {commit}" if commit else "commit: not recorded"]
    if m.get("cpu_model") or m.get("cpus"):
        cpu = (m.get("cpu_model") or "CPU ?").replace("(R)", "").replace("(TM)", "")
        cpus = m.get("cpus")
        allowed = m.get("allowed_cpus")
        count = f"{allowed} of {cpus} CPUs" if allowed and cpus and allowed != cpus else f"{cpus} CPUs"
        mem = f", {m['memory_gib']:g} GiB" if m.get("memory_gib") else ""
        kernel = f", Linux {m['kernel']}" if m.get("kernel") else ""
        parts.append(f"{' '.join(cpu.split())}, {count}{mem}{kernel}")
    else:
        parts.append("machine: not recorded")
    if res.get("started"):
        parts.append(res["started"][:10])
    if res.get("quick"):
        parts.append("--quick: numbers meaningless")
    return " · ".join(parts)


def value_label(x, unit):
    if unit == "ms":
        return f"{x:.2f} ms" if x < 10 else f"{x:.1f} ms" if x < 100 else f"{x:.0f} ms"
    return f"{x:.0f} {unit}"


def figure(res, sc):
    """The plot of one scenario: one bar per configuration at its median,
    whiskers at min and max, the median written at the end of each bar, the
    expert's pick hatched, a legend, the better direction on the axis and
    the commit and machine in the corner. The caller saves and closes it."""
    plt = pyplot()
    from matplotlib.patches import Patch

    quantity, unit, better = PLOTTED[sc["kind"]]
    table = plotted(sc)
    pick = expert_pick(sc, table)
    names = list(table)
    roles = {GENERIC: ("generic Linux: the command as written", "tab:gray"),
             MLOS: ("mlOS: mlos run, zero-code", "tab:green"),
             EXPERT: ("expert hand tuning: a candidate", "tab:blue"),
             "baseline": (f"reference: {sc.get('baseline')}", "tab:olive"),
             "other": ("other configuration", "tab:purple")}

    def role(n):
        if n.startswith(EXPERT):
            return EXPERT
        return n if n in (GENERIC, MLOS) else "baseline" if n == sc.get("baseline") else "other"

    height = 0.45 * len(names) + 2.4
    fig, ax = plt.subplots(figsize=(10, height), layout="constrained")
    # A strip at the top for the corner text, which the layout does not see
    # (an outside legend ignores a strip at the bottom).
    fig.get_layout_engine().set(rect=(0, 0, 1, 1 - 0.2 / height))
    med = [table[n]["median"] for n in names]
    err = [[table[n]["median"] - table[n]["min"] for n in names], [table[n]["max"] - table[n]["median"] for n in names]]
    bars = ax.barh(range(len(names)), med, xerr=err, capsize=3, color=[roles[role(n)][1] for n in names],
                   error_kw={"elinewidth": 1})
    for n, bar in zip(names, bars):
        if n == pick:
            bar.set(hatch="///", edgecolor="black", linewidth=1.5)
    top = max(table[n]["max"] for n in names)
    for i, n in enumerate(names):
        ax.text(table[n]["max"] + 0.015 * top, i, value_label(table[n]["median"], unit), va="center", fontsize=8)
    ax.set_xlim(0, 1.22 * top)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    arrow = "higher is better →" if better == "higher" else "← lower is better"
    ax.set_xlabel(f"{quantity}: median over {res.get('reps', '?')} repetitions, whiskers min–max   ({arrow})",
                  fontsize=9)
    ax.set_title(sc["title"], fontsize=9)

    seen = list(dict.fromkeys(role(n) for n in names))
    handles = [Patch(facecolor=roles[r][1], label=roles[r][0]) for r in seen]
    if pick is None:
        handles.append(Patch(facecolor="none", edgecolor="none",
                             label="expert's pick: none, no expert configuration measured"))
    else:
        what = "the defaults, generic" if pick == GENERIC else pick.replace(EXPERT, "")
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", linewidth=1.5,
                             label=f"expert's pick: {what}"))
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=7.5, frameon=False)
    fig.text(0.995, 0.995, provenance(res), ha="right", va="top", fontsize=6.5, color="gray")
    return fig


def pyplot():
    """matplotlib.pyplot on the Agg backend: plots are files, never windows."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plots(res, out):
    """One PNG per scenario in `out`, named after it; returns their paths."""
    plt = pyplot()
    paths = []
    for sc in res["scenarios"]:
        fig = figure(res, sc)
        paths.append(out / f"{sc['name']}.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths
