#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package as it is released, tested the way a user gets it:
#  1. the sdist, then the wheel built from that sdist (python -m build does
#     both, in that order: this proves the sdist builds);
#  2. the wheel repaired by auditwheel for manylinux_2_35 (the lowest tag
#     this Debian 12 toolchain allows, docs/python.md "Installing"): the
#     external libraries are vendored into mlos_training.libs/;
#  3. a fresh venv (no torch, no numpy), the repaired wheel installed from
#     the file alone, and tests/wheel/smoke.py run from outside the tree.
# Leaves the repaired wheel in build-wheel/dist/ (scripts/test.sh installs
# that one into /opt/mlos/venv: one build). Uses the venv of setup.sh for
# the build tools (build, scikit-build-core, nanobind, auditwheel).
# --reuse: repair and test the wheel already in build-wheel/raw (no build).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MLOS_VENV:-/opt/mlos/venv}"
plat="${MLOS_WHEEL_PLAT:-manylinux_2_35_x86_64}"
out=build-wheel
rm -rf "$out/dist" "$out/smoke-venv"
mkdir -p "$out"
if [[ "${1:-}" != --reuse ]]; then
  rm -rf "$out/raw"
  start=$SECONDS
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/python" -m build --no-isolation --outdir "$out/raw" . > "$out/build.log" 2>&1 ||
    { tail -n 60 "$out/build.log"; exit 1; }
  echo "test_wheel: sdist and wheel built in $((SECONDS - start)) s: $(cd "$out/raw" && echo *)"
fi
"$venv/bin/auditwheel" show "$out"/raw/*.whl
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --plat "$plat" --wheel-dir "$out/dist" "$out"/raw/*.whl
wheel=$(echo "$out"/dist/*.whl)
# What was vendored, and that nothing of the daemon or of OpenCV came along.
"$venv/bin/python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
vendored = sorted(n.split("/", 1)[1] for n in names if n.startswith("mlos_training.libs/"))
print("test_wheel: vendored:", " ".join(vendored))
bad = [n for n in names if any(s in n for s in ("prometheus", "opencv", "libsystemd"))]
assert not bad, f"the wheel carries what it must not: {bad}"
PY
echo "test_wheel: $(du -k "$wheel" | cut -f1) KiB: $wheel"

"$venv/bin/python" -m venv "$out/smoke-venv"
"$out/smoke-venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel"
root=$PWD
runtime=$(mktemp -d)
trap 'rm -rf "$runtime"' EXIT
mkdir -p "$runtime/run" "$runtime/tune"
(cd "$runtime" && env -u MLOS_POLICY_HOST -u MLOS_POLICY_DIR -u MLOS_DATALOAD_HELPER -u PYTHONPATH \
   MLOS_RUNTIME_DIR="$runtime/run" MLOS_TUNE_DIR="$runtime/tune" MLOS_MODE=embedded \
   "$root/$out/smoke-venv/bin/python" "$root/tests/wheel/smoke.py" "$root/VERSION")
