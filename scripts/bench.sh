#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark suite in one command: install, build, install the Python
# package, then run bench/suite/run.py (arguments passed on, e.g. --quick,
# --out DIR). The full suite takes about 13.5 minutes on 2 cores; run it on an
# otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
venv="${MLOS_VENV:-/opt/mlos/venv}"
# From the checkout (pyproject.toml at the root), with ImageLoader's helper,
# which the released wheel leaves out (docs/python.md, "Installing").
CMAKE_BUILD_PARALLEL_LEVEL=2 "$venv/bin/python" -m pip install --quiet --no-build-isolation \
  -Ccmake.define.MLOS_BUILD_DATALOAD=ON .
exec "$venv/bin/python" bench/suite/run.py "$@"
