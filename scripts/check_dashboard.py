#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that mlOS's Grafana dashboard and Prometheus rules query metrics
that exist.

  check_dashboard.py (--exposition FILE | --names FILE)... [--dashboard FILE]...
                     [--rules FILE]... [--allow-absent NAME]... [--promtool PATH]

Every PromQL expression is taken from the dashboard (panel targets, rows'
nested panels, template variable queries) and from the rules files, and:

 1. parsed by Prometheus itself: promtool has no expression checker, so the
    expressions become recording rules of a temporary rules file that
    `promtool check rules` reads (the rules files are checked as they are,
    too);
 2. parsed by promql-parser (PyPI `promql-parser`, a port of Prometheus'
    parser) to list the vector selectors, hence the metric names, in it;
 3. each name must be exported: in the exposition (a /metrics scrape, the
    text format) or the names file, in NODE_EXPORTER_METRICS (what the
    dashboard takes from node_exporter), or in PROMETHEUS_SERIES. Nothing
    else outside mlos_* passes.
 4. with an exposition, the label names a selector matches on must be
    labels of that metric's samples (or the target labels Prometheus adds),
    which catches `job` written for `job_id`.

Grafana's variables are substituted before parsing: $__rate_interval and
the other interval built-ins become 5m (their _s/_ms forms 300), interval
variables 5m, any other declared variable the string "x" (so it must stand
inside a quoted label value); an undeclared variable is an error.
Template queries: label_values(SELECTOR, LABEL) and query_result(EXPR) are
checked, label_values(LABEL) names no metric; anything else is refused.

A names file lists one series name a line, optionally followed by its
type (`mlos_x_seconds histogram`); `#` starts a comment. A histogram family
NAME exports NAME_bucket, NAME_sum and NAME_count, a summary NAME (with
quantile), NAME_sum and NAME_count.

--allow-absent NAME: a metric the exporter only has in some states (a
job's memory limit exists only when it has one); it passes without being
in this scrape, and is listed as such.

Exit 0: every query parses and names exported metrics; 1: findings (each
line names the panel or rule and the metric); 2: could not check (bad
arguments, promtool or promql-parser missing, unreadable file)."""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DASHBOARDS = [REPO_ROOT / "packaging" / "grafana" / "mlos-node-dashboard.json"]
DEFAULT_RULES = [REPO_ROOT / "packaging" / "prometheus" / "mlos-alerts.yml"]

# Node pressure (PSI) comes from node_exporter's pressure collector, not
# from mlosd (docs/monitoring.md). These are the only node_exporter series
# the dashboard and rules may use; add one here, with the doc, when a
# panel needs it.
NODE_EXPORTER_METRICS = {
    "node_pressure_memory_waiting_seconds_total": "PSI memory 'some'",
    "node_pressure_memory_stalled_seconds_total": "PSI memory 'full'",
    "node_pressure_cpu_waiting_seconds_total": "PSI cpu 'some'",
}
# Series Prometheus writes itself for every target (no exporter has them):
# `up` is how an alert sees an mlosd that does not answer.
PROMETHEUS_SERIES = {
    "up": "1 if the last scrape of the target succeeded",
}
# Labels Prometheus attaches to every scraped series: selectors may match
# on them although no /metrics page shows them.
TARGET_LABELS = {"job", "instance"}

INTERVAL_BUILTINS = {"__rate_interval": "5m", "__interval": "5m", "__range": "5m",
                     "__interval_ms": "300000", "__range_s": "300", "__range_ms": "300000"}
VARIABLE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")


class CannotCheck(Exception):
    """The check could not run (exit 2), as opposed to a finding."""


@dataclass
class Query:
    where: str             # 'panel "CPU" (id 7) query A', 'rule MlosdDown in mlos-daemon'
    text: str              # as written
    promql: str = ""       # what is parsed: variables substituted ("" when it names no metric)
    label: str = ""        # label_values' second argument, checked against the metric
    names: list = field(default_factory=list)   # (metric, [matched label names])


# ---------------------------------------------------------------- extraction

def substitute(text: str, variables: dict) -> str:
    """`text` with Grafana's variables replaced (see the module doc).
    variables: name -> Grafana variable type. Raises ValueError naming an
    undeclared variable."""
    def one(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name in INTERVAL_BUILTINS:
            return INTERVAL_BUILTINS[name]
        if name not in variables:
            raise ValueError(f"uses ${name}, which the dashboard does not declare")
        return "5m" if variables[name] == "interval" else "x"
    return VARIABLE.sub(one, text)


def split_call(text: str, fn: str):
    """The arguments of `fn(...)` when `text` is exactly that call, split on
    top-level commas (not inside braces, parentheses or quotes); else None."""
    text = text.strip()
    if not (text.startswith(fn + "(") and text.endswith(")")):
        return None
    body, args, depth, quote, start = text[len(fn) + 1:-1], [], 0, None, 0
    i = 0
    while i < len(body):
        c = body[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(body[start:i].strip())
            start = i + 1
        i += 1
    args.append(body[start:].strip())
    return args


def template_query(where: str, text: str, variables: dict) -> Query:
    q = Query(where, text)
    args = split_call(text, "label_values")
    if args is not None:
        if len(args) == 1:          # label_values(label): all series, no metric
            return q
        if len(args) != 2:
            raise ValueError("label_values takes (label) or (selector, label)")
        q.promql, q.label = substitute(args[0], variables), args[1]
        return q
    args = split_call(text, "query_result")
    if args is not None:
        q.promql = substitute(",".join(args), variables)
        return q
    raise ValueError("a template query this checker does not know (label_values or query_result)")


def walk_panels(panels):
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))   # a collapsed row keeps its panels


def dashboard_queries(path: Path):
    """(queries, problems) of one dashboard file."""
    try:
        dash = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CannotCheck(f"{path}: {e}") from e
    dash = dash.get("dashboard", dash)   # an API export wraps it
    templating = dash.get("templating", {}).get("list", [])
    variables = {v.get("name"): v.get("type") for v in templating}
    queries, problems = [], []
    for v in templating:
        if v.get("type") != "query":
            continue
        where = f"{path.name}: template variable ${v.get('name')}"
        text = v.get("query")
        if isinstance(text, dict):          # newer Grafana: {"query": "...", "refId": ...}
            text = text.get("query")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: no query")
            continue
        try:
            queries.append(template_query(where, text, variables))
        except ValueError as e:
            problems.append(f"{where}: {e}: {text}")
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets") or []:
            expr = t.get("expr")
            if expr is None:
                continue
            where = f'{path.name}: panel "{p.get("title", "")}" (id {p.get("id")}) query {t.get("refId", "?")}'
            try:
                queries.append(Query(where, expr, substitute(expr, variables)))
            except ValueError as e:
                problems.append(f"{where}: {e}")
    return queries, problems


def rules_queries(path: Path):
    try:
        import yaml
    except ImportError as e:
        raise CannotCheck("PyYAML is missing (pip install pyyaml)") from e
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise CannotCheck(f"{path}: {e}") from e
    queries = []
    for group in (doc or {}).get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert") or rule.get("record")
            where = f"{path.name}: rule {name} in group {group.get('name')}"
            queries.append(Query(where, str(rule.get("expr", "")), str(rule.get("expr", ""))))
    return queries


# ---------------------------------------------------------------- validation

def promtool_check(promtool: str, rules_file: Path) -> str:
    """'' if `promtool check rules` accepts the file, else what it said."""
    try:
        r = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True)
    except OSError as e:
        raise CannotCheck(f"cannot run {promtool}: {e}") from e
    return "" if r.returncode == 0 else (r.stdout + r.stderr).strip()


def validate_with_promtool(promtool: str, queries) -> list:
    """Problems Prometheus' own parser finds in the queries: one run for
    all, and one per query only when that fails, to say which. A query
    Prometheus rejects is not looked at further (its promql is cleared)."""
    def check(qs) -> str:
        groups = [{"name": "check", "rules": [{"record": f"check:expr_{i}", "expr": q.promql}
                                              for i, q in enumerate(qs)]}]
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="check_dashboard_") as f:
            json.dump({"groups": groups}, f)   # JSON is YAML
            f.flush()
            return promtool_check(promtool, Path(f.name))

    qs = [q for q in queries if q.promql]
    if not check(qs):
        return []
    out = []
    for q in qs:
        said = check([q])
        if said:
            m = re.search(r"could not parse expression: (.*)", said)
            out.append(f"{q.where}: Prometheus does not parse it: {m.group(1) if m else said}\n    {q.promql}")
            q.promql = ""   # nothing more to learn from it
    return out


def selectors(promql: str):
    """(metric name or None, [(label, op, value)]) of every vector
    selector in `promql`, from promql-parser's syntax tree."""
    import promql_parser

    found = []

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector):
            matchers = [(m.name, m.op, m.value) for m in node.matchers.matchers]
            name = node.name
            if name is None:
                name = next((v for n, op, v in matchers if n == "__name__" and op == promql_parser.MatchOp.Equal), None)
            found.append((name, [n for n, _, _ in matchers if n != "__name__"]))
    promql_parser.walk(promql_parser.parse(promql), visit)
    return found


# ---------------------------------------------------------------- exported names

@dataclass
class Exported:
    types: dict = field(default_factory=dict)     # family -> type (from # TYPE or the names file)
    samples: dict = field(default_factory=dict)   # series name -> label names seen (None: unknown)

    def series_names(self):
        """Every series name a query may select."""
        names = set(self.samples)
        for family, kind in self.types.items():
            if kind == "histogram":
                names |= {family + "_bucket", family + "_sum", family + "_count"}
            elif kind == "summary":
                names |= {family, family + "_sum", family + "_count"}
            else:
                names.add(family)
        return names


def parse_labels(text: str, where: str) -> list:
    """Label names of a `{a="x",b="y"}` body (text format escapes: \\\\ \\" \\n)."""
    names, i = [], 0
    while i < len(text):
        m = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"').match(text, i)
        if not m:
            if text[i:].strip(" ,"):
                raise ValueError(f"{where}: bad label set {{{text}}}")
            break
        names.append(m.group(1))
        i = m.end()
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            raise ValueError(f"{where}: unterminated label value")
        i += 1
        while i < len(text) and text[i] in " ,":
            i += 1
    return names


def read_exposition(path: Path, into: Exported):
    """Families and series of a Prometheus text-format scrape."""
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                into.types[parts[2]] = parts[3].strip()
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{)?", line)
        if not m:
            raise ValueError(f"{path}:{n}: not a sample: {line}")
        labels = []
        if m.group(2):
            end = closing_brace(line, m.end())
            if end < 0:
                raise ValueError(f"{path}:{n}: unterminated label set")
            labels = parse_labels(line[m.end():end], f"{path}:{n}")
        seen = into.samples.setdefault(m.group(1), set())
        if seen is not None:
            seen.update(labels)


def closing_brace(line: str, i: int) -> int:
    quote = False
    while i < len(line):
        c = line[i]
        if quote and c == "\\":
            i += 2
            continue
        if c == '"':
            quote = not quote
        elif c == "}" and not quote:
            return i
        i += 1
    return -1


def read_names(path: Path, into: Exported):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2 or (len(words) == 2 and words[1] not in ("counter", "gauge", "histogram", "summary",
                                                                  "untyped")):
            raise ValueError(f"{path}:{n}: expected NAME [counter|gauge|histogram|summary|untyped]")
        if len(words) == 2:
            into.types[words[0]] = words[1]
        else:
            into.samples.setdefault(words[0], None)   # no label information


def name_problems(q: Query, exported: Exported, series: set, allow_absent: set) -> list:
    out, by_name = [], {}
    for name, labels in q.names:   # each metric once a query, with every label it is matched on
        by_name.setdefault(name, dict()).update(dict.fromkeys(labels))
    for name, labels in by_name.items():
        if name is None:
            out.append(f"{q.where}: a selector without a metric name (a __name__ regex) cannot be checked")
            continue
        if name in NODE_EXPORTER_METRICS or name in PROMETHEUS_SERIES:
            continue
        if name in allow_absent and name not in series:
            continue
        if not name.startswith("mlos_"):
            out.append(f"{q.where}: {name} is neither an mlos_ metric nor in the node_exporter allowlist "
                       f"({', '.join(sorted(NODE_EXPORTER_METRICS))})")
            continue
        if name not in series:
            hint = ""
            if exported.types.get(name) == "histogram":
                hint = f" ({name} is a histogram: select {name}_bucket, _sum or _count)"
            out.append(f"{q.where}: {name} is not exported{hint}")
            continue
        seen = exported.samples.get(name)
        if seen is None:
            continue
        for label in list(labels) + ([q.label] if q.label else []):
            if label not in seen and label not in TARGET_LABELS:
                out.append(f"{q.where}: {name} has no label {label!r} (it has: {', '.join(sorted(seen)) or 'none'})")
    return out


# ---------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dashboard", action="append", type=Path, help="Grafana dashboard JSON (default: mlOS's)")
    ap.add_argument("--rules", action="append", type=Path, help="Prometheus rules file (default: mlOS's alerts)")
    ap.add_argument("--exposition", action="append", type=Path, default=[], help="a /metrics scrape (text format)")
    ap.add_argument("--names", action="append", type=Path, default=[], help="exported names, one a line")
    ap.add_argument("--allow-absent", action="append", default=[], metavar="NAME",
                    help="an mlos_ metric that may be missing from this scrape (exported only in some states)")
    ap.add_argument("--promtool", default=shutil.which("promtool"), help="promtool (default: from PATH)")
    args = ap.parse_args(argv)
    if not args.exposition and not args.names:
        ap.error("give the exported metrics: --exposition FILE or --names FILE")
    try:
        return check(args)
    except CannotCheck as e:
        print(f"check_dashboard: cannot check: {e}", file=sys.stderr)
        return 2


def check(args) -> int:
    if not args.promtool:
        raise CannotCheck("promtool not found (Debian package prometheus; or --promtool PATH)")
    try:
        import promql_parser  # noqa: F401
    except ImportError as e:
        raise CannotCheck("the Python package promql-parser is missing: scripts/setup.sh installs it into "
                          "/opt/mlos/venv; run this script with /opt/mlos/venv/bin/python") from e
    exported = Exported()
    for path in args.exposition:
        try:
            read_exposition(path, exported)
        except (OSError, ValueError) as e:
            raise CannotCheck(str(e)) from e
    for path in args.names:
        try:
            read_names(path, exported)
        except (OSError, ValueError) as e:
            raise CannotCheck(str(e)) from e

    queries, problems = [], []
    for path in args.dashboard or DEFAULT_DASHBOARDS:
        qs, ps = dashboard_queries(path)
        queries += qs
        problems += ps
    for path in args.rules or DEFAULT_RULES:
        said = promtool_check(args.promtool, path)
        if said:
            problems.append(f"{path.name}: promtool check rules fails:\n    " + said.replace("\n", "\n    "))
        queries += rules_queries(path)

    problems += validate_with_promtool(args.promtool, queries)
    for q in queries:
        if not q.promql:
            continue
        try:
            q.names = selectors(q.promql)
        except ValueError as e:
            problems.append(f"{q.where}: promql-parser does not parse it ({e}): {q.promql}")

    series = exported.series_names()
    allow_absent = set(args.allow_absent)
    for q in queries:
        problems += name_problems(q, exported, series, allow_absent)

    used = {n for q in queries for n, _ in q.names if n}
    for name in sorted(used & allow_absent - series):
        print(f"note: {name} is not in this scrape; allowed (--allow-absent)")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print(f"check_dashboard: {len(problems)} problem(s) in {len(queries)} queries")
        return 1
    print(f"check_dashboard: ok: {len(queries)} queries, {len(used)} metric names, all exported "
          f"({len(used & set(NODE_EXPORTER_METRICS))} from node_exporter, "
          f"{len(used & set(PROMETHEUS_SERIES))} written by Prometheus)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
