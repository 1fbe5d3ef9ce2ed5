# SPDX-License-Identifier: Apache-2.0
"""Smoke test of an installed mlos-training wheel, run by scripts/test_wheel.sh
with the python of a fresh venv (no torch, no numpy, nothing from the
source tree on sys.path):

    python tests/wheel/smoke.py VERSION_FILE

Prints one line per check and "N passed, 0 failed"; exits 1 on the first
failure. The environment names a private MLOS_RUNTIME_DIR and MLOS_MODE=embedded."""
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

passed = 0


def check(what, ok, detail=""):
    global passed
    if not ok:
        print(f"FAILED: {what} {detail}", flush=True)
        print(f"{passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok: {what}", flush=True)


version = Path(sys.argv[1]).read_text().strip()
import mlos_training as m  # noqa: E402
from mlos_training.enums import Phase  # noqa: E402

pkg = Path(m.__file__).parent
check("imported from site-packages", "site-packages" in str(pkg) and "torch" not in sys.modules, str(pkg))
check("version is VERSION's", m.__version__ == version == importlib.metadata.version("mlos-training"),
      f"{m.__version__} {importlib.metadata.version('mlos-training')} {version}")
check("py.typed and stubs shipped", (pkg / "py.typed").exists() and (pkg / "_core.pyi").exists())
libs = sorted(p.name for p in pkg.glob("libmlos.so*"))
check("one libmlos", libs == ["libmlos.so.0"], str(libs))

with m.request_resources(num_cpus=1, exclusive_cpus=False) as res:
    m.set_phase(res, "forward")
    m.set_phase(res, "BACKWARD")
    m.set_phase(res, Phase.FORWARD)
    prof = res.phase_profile()
    check("phases by name", prof["entries"][m.PHASE_FORWARD] == 2 and prof["current_phase"] == Phase.FORWARD, str(prof))
    try:
        m.set_phase(res, "sideways")
        check("an unknown phase name is refused", False)
    except ValueError as e:
        check("an unknown phase name lists the phases", isinstance(e, m.MLOSInvalidArgumentError)
              and "DATA_LOADING (1)" in str(e), str(e))
try:
    m.set_phase(res, "IDLE")
    check("a released handle is refused", False)
except m.MLOSError as e:
    check("a real failure raises its family", type(e) is m.MLOSInvalidArgumentError and e.name == "INVALID_HANDLE"
          and isinstance(e, ValueError), repr(e))
try:
    m.request_resources(num_cpus=(os.cpu_count() or 1) + 1)
    check("too many CPUs are refused", False)
except m.MLOSResourceError as e:
    check("INSUFFICIENT_CPUS is an MLOSResourceError", e.name == "INSUFFICIENT_CPUS", repr(e))

# The console script, not the binary: what `pip install` put on PATH.
mlos = shutil.which("mlos", path=str(Path(sys.executable).parent))
check("mlos console script installed", mlos is not None)
out = subprocess.run([mlos, "--version"], capture_output=True, text=True)
check("mlos --version", out.returncode == 0 and version in out.stdout.split(), out.stdout + out.stderr)
out = subprocess.run([mlos, "topo"], capture_output=True, text=True)
check("mlos topo", out.returncode == 0 and "allowed CPUs:" in out.stdout, out.stdout + out.stderr)
out = subprocess.run([mlos, "run", "--cpus", "1", "--", sys.executable, "-c",
                      "import os; print(len(os.sched_getaffinity(0)))"], capture_output=True, text=True)
check("mlos run confines a command", out.returncode == 0 and out.stdout.strip() == "1", out.stdout + out.stderr)

# Embedded mode: libmlos starts the bundled policy host on the bundled policies.
check("no policy host from the environment", not os.environ.get("MLOS_POLICY_HOST") and not os.environ.get("MLOS_POLICY_DIR"))
check("bundled policy host", os.access(pkg / "mlos" / "mlos-policyhost", os.X_OK))
with m.MLOSTrainingContext(num_cpus=1, exclusive_cpus=False, policies={"example": {"threads": 1}}) as ctx:
    advice = ctx.advice
    check("a policy module loads in embedded mode",
          advice["policies"] == 2 and advice["policies_failed"] == 0 and advice["threads_advised"] is True
          and advice["threads"] == 1, str(advice))
    try:
        ctx.request_policy("no-such-policy")
        check("an unknown policy is refused", False)
    except m.MLOSNotFoundError as e:
        check("an unknown policy is MLOSNotFoundError, naming the bundled directory",
              str(pkg / "mlos" / "policies") in str(e) or "mlos/policies" in str(e), str(e))
# The CLI finds the bundled policies without mlosd (none runs here): next to
# itself in the package, not in the build machine's install prefix.
out = subprocess.run([mlos, "policy", "info", "example", "--json"], capture_output=True, text=True,
                     env={**os.environ, "MLOS_DAEMON_SOCKET": os.path.join(os.environ.get("MLOS_RUNTIME_DIR", "/nonexistent"), "no-mlosd.sock")})
check("mlos policy info finds the bundled policy", out.returncode == 0 and
      str(pkg / "mlos" / "policies") in json.loads(out.stdout).get("dir", ""), out.stdout + out.stderr)
print(f"{passed} passed, 0 failed")
