# SPDX-License-Identifier: Apache-2.0
"""packaging/mlosd.schema.json agrees with mlosd's own validation.

mlosd judges a config with `--check-config --config FILE --cgroups none`
(exit 0 valid, 2 invalid; `--cgroups none` so that only the file is judged,
not whether this machine has cgroups). The schema judges it with
jsonschema's Draft 2020-12 validator. Every config of the corpus
(tests/fixtures/mlosd_config_corpus/, README there) must get the same
verdict from both, and the verdict its name states.

Known differences, where the schema accepts what mlosd rejects (kept as
`known_difference.*` files and asserted as such, not hidden):
- an integer written as 100.0 or 1e9: JSON Schema's "integer" is a value,
  mlosd (nlohmann::json) goes by the notation;
- memory_pressure's rules across keys (critical < moderate headroom,
  moderate headroom + hysteresis < 100, PSI trigger stall < window) when both
  keys are given; the schema checks them only against the other key's
  default;
- metrics_listen's [IPV6]: inet_pton in mlosd, its characters in the schema.

Needs the Python package jsonschema (>= 4.0); skipped without it.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, build_dir, fixtures_dir

jsonschema = pytest.importorskip("jsonschema", reason="the Python package jsonschema is not installed")
if not hasattr(jsonschema, "Draft202012Validator"):
    pytest.skip("jsonschema before 4.0 has no Draft 2020-12 validator", allow_module_level=True)

SCHEMA = REPO_ROOT / "packaging" / "mlosd.schema.json"
SHIPPED_CONFIG = REPO_ROOT / "packaging" / "systemd" / "mlosd.json"
CORPUS = fixtures_dir() / "mlosd_config_corpus"
CASES = sorted(CORPUS.glob("*.json"))

# What --check-config prints beside the config's keys: the cgroup driver it
# found (tools/mlosd/main.cpp). Not a config key; the file may not hold it.
CHECKER_ONLY_KEYS = {"cgroup_driver"}

# Keys that memory-pressure validation (src/core/memory_pressure.cpp,
# validate()) names in prose rather than by their JSON name.
MLOSD_WORDING = {
    "moderate_headroom_percent": "moderate headroom",
    "critical_headroom_percent": "critical headroom",
    "hysteresis_percent": "hysteresis",
    "moderate_psi_some": "PSI thresholds",
    "critical_psi_full": "PSI thresholds",
}


@pytest.fixture(scope="session")
def schema() -> dict:
    return json.loads(SCHEMA.read_text())


@pytest.fixture(scope="session")
def validator(schema):
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="session")
def mlosd() -> str:
    path = build_dir() / "bin" / "mlosd"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"mlosd not found at {path}: build it, or set MLOS_BUILD_DIR to the build tree")
    return str(path)


def check_config(mlosd: str, path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLOS_")}
    env["LC_ALL"] = "C"
    r = subprocess.run([mlosd, "--check-config", "--config", str(path), "--cgroups", "none"],
                       env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode in (0, 2), f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def effective_config(r: subprocess.CompletedProcess) -> dict:
    out = json.loads(r.stdout)
    assert out.pop("cgroup_driver") == "none"
    return out


@pytest.fixture(scope="session")
def log_supported(mlosd, tmp_path_factory) -> bool:
    """Whether this mlosd knows the "log" key (added after the schema was
    written: an older build says "unknown key 'log'")."""
    probe = tmp_path_factory.mktemp("log-probe") / "log.json"
    probe.write_text('{"log": "auto"}')
    r = check_config(mlosd, probe)
    if r.returncode != 0:
        assert "log" in r.stderr, r.stderr
    return r.returncode == 0


def offending_key(error) -> str | None:
    """The key a schema error is about: the unexpected one for an unknown
    key, else the innermost key on its path (None at the top level)."""
    if error.validator == "additionalProperties":
        unexpected = set(error.instance) - set(error.schema.get("properties", {}))
        assert len(unexpected) == 1, error.message
        return unexpected.pop()
    keys = [p for p in error.absolute_path if isinstance(p, str)]
    return keys[-1] if keys else None


def test_the_schema_is_a_valid_draft_2020_12_schema(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_effective_config_of_an_empty_file_validates_and_holds_the_schemas_defaults(
        mlosd, schema, validator, tmp_path, log_supported):
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    r = check_config(mlosd, empty)
    assert r.returncode == 0, r.stderr
    out = effective_config(r)
    assert sorted(validator.iter_errors(out), key=str) == []

    # Every key the schema describes is one --check-config prints, and no other.
    props = schema["properties"]
    expected = set(props) - (set() if log_supported else {"log"})
    assert set(out) == expected
    for nested in ("quotas", "memory_pressure", "policies"):
        assert set(out[nested]) == set(props[nested]["properties"]), nested

    # The documented defaults are mlosd's. "cgroups" is "none" here: the flag.
    assert out["cgroups"] == "none"
    for key, spec in props.items():
        if key in out and "default" in spec and key != "cgroups":
            assert out[key] == spec["default"], key
    for nested in ("quotas", "memory_pressure", "policies"):
        for key, spec in props[nested]["properties"].items():
            if "default" in spec:
                assert out[nested][key] == spec["default"], f"{nested}.{key}"
            else:  # install-dependent (policies.dir, policies.host): still valid
                assert out[nested][key].startswith("/"), f"{nested}.{key}"


def test_the_shipped_config_validates_and_mlosd_accepts_it(mlosd, validator):
    assert [e.message for e in validator.iter_errors(json.loads(SHIPPED_CONFIG.read_text()))] == []
    r = check_config(mlosd, SHIPPED_CONFIG)
    assert r.returncode == 0, r.stderr


def test_the_corpus_covers_both_verdicts():
    kinds = [c.name.split(".")[0] for c in CASES]
    assert set(kinds) == {"valid", "invalid", "known_difference"}, sorted(set(kinds))
    assert kinds.count("valid") >= 10 and kinds.count("invalid") >= 25


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_mlosd_and_the_schema_give_the_same_verdict(case, mlosd, validator, log_supported):
    config = json.loads(case.read_text())
    if not log_supported and isinstance(config, dict) and "log" in config:
        pytest.skip('this mlosd predates the "log" key')
    kind = case.name.split(".")[0]
    r = check_config(mlosd, case)
    errors = list(validator.iter_errors(config))
    mlosd_accepts, schema_accepts = r.returncode == 0, not errors
    verdicts = (f"mlosd: {'accepts' if mlosd_accepts else 'rejects: ' + r.stderr.strip()}\n"
                f"schema: {'accepts' if schema_accepts else [e.message for e in errors]}")

    if kind == "known_difference":
        assert not mlosd_accepts and schema_accepts, verdicts
        return
    assert mlosd_accepts == schema_accepts, verdicts
    assert mlosd_accepts == (kind == "valid"), verdicts
    if kind == "valid":
        # What mlosd makes of it is a valid config too.
        assert [e.message for e in validator.iter_errors(effective_config(r))] == []
        return
    # Invalid for one reason, the same one: one schema error, and mlosd's
    # message names that key.
    assert len(errors) == 1, verdicts
    key = offending_key(errors[0])
    if key is not None:
        assert key in r.stderr or MLOSD_WORDING.get(key, key) in r.stderr, verdicts
