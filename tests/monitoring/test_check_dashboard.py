# SPDX-License-Identifier: Apache-2.0
"""scripts/check_dashboard.py against hand-written scrapes, and the shipped
dashboard and alert rules against what mlosd exports (no daemon needed).

fixtures/mlosd_metrics.prom is a hand-written /metrics page with one job
and one policy and every metric docs/monitoring.md lists; the failing cases
are made from it by removing or renaming one thing.

Run with the interpreter scripts/setup.sh fills (/opt/mlos/venv: it has
promql-parser and PyYAML); promtool comes from the Debian package
prometheus."""
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_dashboard.py"
DASHBOARD = REPO / "packaging" / "grafana" / "mlos-node-dashboard.json"
RULES = REPO / "packaging" / "prometheus" / "mlos-alerts.yml"
RULE_TESTS = REPO / "packaging" / "prometheus" / "mlos-alerts.test.yml"
SCRAPE = Path(__file__).resolve().parent / "fixtures" / "mlosd_metrics.prom"

if not shutil.which("promtool"):
    pytest.skip("promtool not installed (Debian package prometheus)", allow_module_level=True)

try:
    import promql_parser  # noqa: F401
    import yaml
except ImportError as e:  # a setup fault, not a reason to skip
    raise ImportError(f"{e}: run these tests with /opt/mlos/venv/bin/python (scripts/setup.sh installs "
                      "promql-parser and pyyaml there)") from e


def load_checker():
    spec = importlib.util.spec_from_file_location("check_dashboard", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checker = load_checker()


def run(*args):
    r = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def scrape_without(tmp_path, metric):
    """The fixture scrape with every line of `metric` removed."""
    lines = [line for line in SCRAPE.read_text().splitlines()
             if not re.match(rf"(# (HELP|TYPE) )?{metric}[ {{]", line)]
    assert len(lines) < len(SCRAPE.read_text().splitlines()), f"{metric} is not in the fixture"
    out = tmp_path / f"without_{metric}.prom"
    out.write_text("\n".join(lines) + "\n")
    return out


def dashboard(tmp_path, exprs, variables=()):
    """A minimal dashboard: one panel per expression, and query variables
    given as (name, query)."""
    templating = [{"type": "datasource", "name": "datasource", "query": "prometheus"}]
    templating += [{"type": "query", "name": n, "query": {"query": q, "refId": "V"}} for n, q in variables]
    panels = [{"type": "timeseries", "id": i + 1, "title": f"panel {i + 1}",
               "targets": [{"refId": "A", "expr": e}]} for i, e in enumerate(exprs)]
    path = tmp_path / "dash.json"
    path.write_text(json.dumps({"schemaVersion": 39, "templating": {"list": templating}, "panels": panels}))
    return path


@pytest.fixture
def no_rules(tmp_path):
    path = tmp_path / "none.yml"
    path.write_text("groups: []\n")
    return path


# ------------------------------------------------------------ the shipped files

def test_shipped_dashboard_and_rules_pass_against_the_full_scrape():
    rc, out = run("--exposition", SCRAPE)
    assert rc == 0, out
    m = re.search(r"ok: (\d+) queries, (\d+) metric names", out)
    assert m and int(m.group(1)) >= 40, out


def test_every_exported_mlos_metric_has_a_panel():
    """The dashboard shows everything mlosd exports (the fixture lists it)."""
    queries, problems = checker.dashboard_queries(DASHBOARD)
    assert not problems
    used = {name for q in queries if q.promql for name, _ in checker.selectors(q.promql)}
    exported = checker.Exported()
    checker.read_exposition(SCRAPE, exported)
    assert set(exported.types) - used == set()


def test_dashboard_is_importable_shape():
    d = json.loads(DASHBOARD.read_text())
    assert d["schemaVersion"] == 39 and d["uid"] == "mlos-node"
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert {"instance", "job_id", "label"} <= set(variables)
    ids = [p["id"] for p in checker.walk_panels(d["panels"])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in checker.walk_panels(d["panels"]):
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            # Prometheus' own `job` label is the scrape job, never an mlOS job.
            assert not re.search(r"\bjob\s*=~?\s*\"", t["expr"]), (p["title"], t["expr"])


def test_every_alert_is_tested_firing_and_not_firing():
    alerts = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r}
    firing, silent = set(), set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for t in case.get("alert_rule_test", []):
            (firing if t.get("exp_alerts") else silent).add(t["alertname"])
    assert alerts - firing == set(), "never seen firing"
    assert alerts - silent == set(), "never seen not firing"
    for g in yaml.safe_load(RULES.read_text())["groups"]:
        for r in g["rules"]:
            assert r["labels"]["severity"] in ("critical", "warning", "info"), r["alert"]
            assert r["annotations"]["summary"] and r["annotations"]["description"], r["alert"]


def test_alert_rules_pass_promtool():
    r = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(["promtool", "test", "rules", str(RULE_TESTS)], capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr


# ------------------------------------------------------------ what the checker catches

def test_a_missing_metric_fails_naming_each_panel_and_rule(tmp_path):
    rc, out = run("--exposition", scrape_without(tmp_path, "mlos_job_cpus"))
    assert rc == 1, out
    assert 'panel "Jobs" (id 2) query A: mlos_job_cpus is not exported' in out
    assert 'panel "CPU use per granted CPU"' in out
    assert all("mlos_job_cpus" in line for line in out.splitlines() if line.startswith("FAIL"))

    rc, out = run("--exposition", scrape_without(tmp_path, "mlos_job_memory_pressure_level"))
    assert rc == 1
    assert ("rule MlosJobMemoryPressureCritical in group mlos-jobs: mlos_job_memory_pressure_level is not exported"
            in out), out


def test_allow_absent_passes_a_metric_this_scrape_lacks_and_says_so(tmp_path):
    scrape = scrape_without(tmp_path, "mlos_job_memory_limit_bytes")
    rc, out = run("--exposition", scrape, "--allow-absent", "mlos_job_memory_limit_bytes")
    assert rc == 0, out
    assert "note: mlos_job_memory_limit_bytes is not in this scrape" in out


def test_job_written_for_job_id_is_caught_by_the_label_check(tmp_path):
    scrape = tmp_path / "job_label.prom"
    scrape.write_text(SCRAPE.read_text().replace('job_id="', 'job="'))
    rc, out = run("--exposition", scrape)
    assert rc == 1
    assert "mlos_job_cpus has no label 'job_id' (it has: job, label, uid)" in out, out


def test_only_allowlisted_metrics_outside_mlos(tmp_path, no_rules):
    ok = dashboard(tmp_path, ['rate(node_pressure_memory_waiting_seconds_total[5m])', 'up{job="mlosd"}'])
    rc, out = run("--exposition", SCRAPE, "--dashboard", ok, "--rules", no_rules)
    assert rc == 0, out
    bad = dashboard(tmp_path, ['rate(node_cpu_seconds_total[5m])'])
    rc, out = run("--exposition", SCRAPE, "--dashboard", bad, "--rules", no_rules)
    assert rc == 1
    assert 'panel "panel 1" (id 1) query A: node_cpu_seconds_total is neither an mlos_ metric' in out, out


def test_an_expression_prometheus_rejects_is_named(tmp_path, no_rules):
    bad = dashboard(tmp_path, ['mlos_daemon_clients', 'sum by (op) (rate(mlos_daemon_requests_total[5m])'])
    rc, out = run("--exposition", SCRAPE, "--dashboard", bad, "--rules", no_rules)
    assert rc == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and 'panel "panel 2" (id 2) query A: Prometheus does not parse it' in fails[0], out


def test_a_rules_file_promtool_rejects_fails(tmp_path):
    rules = tmp_path / "bad.yml"
    rules.write_text("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: mlos_daemon_clients >\n")
    rc, out = run("--exposition", SCRAPE, "--rules", rules)
    assert rc == 1 and "bad.yml: promtool check rules fails" in out, out


def test_grafana_variables_and_template_queries(tmp_path, no_rules):
    variables = [("instance", "label_values(mlos_build_info, instance)"), ("op", "label_values(op)"),
                 ("jobs", 'query_result(count by (job_id) (mlos_job_info{instance=~"$instance"}))')]
    ok = dashboard(tmp_path, ['rate(mlos_daemon_requests_total{instance=~"${instance:regex}", op=~"$op"}'
                              '[$__rate_interval])'], variables)
    rc, out = run("--exposition", SCRAPE, "--dashboard", ok, "--rules", no_rules)
    assert rc == 0, out

    bad = dashboard(tmp_path, ['mlos_daemon_clients{instance=~"$nowhere"}'],
                    [("m", "metrics(mlos_.*)"), ("l", "label_values(mlos_build_info, job_id)")])
    rc, out = run("--exposition", SCRAPE, "--dashboard", bad, "--rules", no_rules)
    assert rc == 1
    assert "template variable $m: a template query this checker does not know" in out, out
    assert "template variable $l: mlos_build_info has no label 'job_id'" in out, out
    assert "uses $nowhere, which the dashboard does not declare" in out, out


def test_histogram_families_export_bucket_sum_and_count(tmp_path, no_rules):
    names = tmp_path / "names.txt"
    names.write_text("# a names file\nmlos_daemon_request_seconds histogram\nmlos_daemon_clients\n")
    ok = dashboard(tmp_path, ['histogram_quantile(0.99, rate(mlos_daemon_request_seconds_bucket[5m]))',
                              'rate(mlos_daemon_request_seconds_sum[5m]) / rate(mlos_daemon_request_seconds_count[5m])',
                              'mlos_daemon_clients{job_id="anything: a names file has no labels"}'])
    rc, out = run("--names", names, "--dashboard", ok, "--rules", no_rules)
    assert rc == 0, out
    bad = dashboard(tmp_path, ['mlos_daemon_request_seconds'])
    rc, out = run("--names", names, "--dashboard", bad, "--rules", no_rules)
    assert rc == 1 and "is a histogram: select mlos_daemon_request_seconds_bucket" in out, out


def test_exposition_parsing_keeps_label_names_through_escapes(tmp_path):
    page = tmp_path / "p.prom"
    page.write_text('# HELP mlos_x_seconds a histogram\n# TYPE mlos_x_seconds histogram\n'
                    'mlos_x_seconds_bucket{le="0.1",label="a, \\"b\\" {c}\\\\"} 1\n'
                    'mlos_job_cpus{job_id="7",label="x=\\"y\\",z"} 4 1700000000000\n'
                    'mlos_daemon_clients 2\n')
    exported = checker.Exported()
    checker.read_exposition(page, exported)
    assert exported.samples == {"mlos_x_seconds_bucket": {"le", "label"}, "mlos_job_cpus": {"job_id", "label"},
                                "mlos_daemon_clients": set()}
    assert exported.types == {"mlos_x_seconds": "histogram"}
    assert {"mlos_x_seconds_sum", "mlos_x_seconds_count"} <= exported.series_names()
    assert "mlos_x_seconds" not in exported.series_names()


def test_cannot_check_without_promtool_exits_2(tmp_path):
    rc, out = run("--exposition", SCRAPE, "--promtool", tmp_path / "no-promtool")
    assert rc == 2, out
