#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: install, build, and run the main job on the embedded
# engine: a small training loop that shows its placement, its phases and its
# phase profile; then `mlos` confining an unmodified program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export MLOS_RUNTIME_DIR=${MLOS_RUNTIME_DIR:-$(mktemp -d /tmp/mlos-demo-XXXXXX)}

echo "== mlos topo"
./build/bin/mlos topo
echo
echo "== training loop on the published C API (build/bin/mlos-demo)"
./build/bin/mlos-demo 300 "$(nproc)"
echo
echo "== mlos run --cpus 1 -- an unmodified program"
./build/bin/mlos run --cpus 1 --verbose -- python3 -c \
  'import os; print("child sees CPUs", sorted(os.sched_getaffinity(0)), "OMP_NUM_THREADS =", os.environ["OMP_NUM_THREADS"])'
