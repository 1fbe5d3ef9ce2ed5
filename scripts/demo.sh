#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: install what the demo needs (Debian 12, root), build
# only what it runs, and run the main job on the embedded engine: a small
# training loop that shows its placement, its phases and its phase
# profile; then `mlos` confining an unmodified program. No daemon, no
# Python, no services; what it writes (runtime directory, tuning store)
# lives in a temporary directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
bash scripts/build.sh --demo
scratch=$(mktemp -d /tmp/mlos-demo-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -m 0700 "$scratch/run" "$scratch/tune"
export MLOS_RUNTIME_DIR="$scratch/run" MLOS_TUNE_DIR="$scratch/tune"

echo "== mlos topo"
./build/bin/mlos topo
echo
echo "== training loop on the published C API (build/bin/mlos-demo)"
./build/bin/mlos-demo 300 "$(nproc)"
echo
echo "== mlos run --cpus 1 -- an unmodified program"
./build/bin/mlos run --cpus 1 --verbose -- sh -c \
  'echo "child sees CPUs $(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status), OMP_NUM_THREADS = $OMP_NUM_THREADS"'
