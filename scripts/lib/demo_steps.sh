#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo's steps on built binaries (scripts/demo.sh after its set-up and
# build; the VM bed runs them on cgroup v2, two NUMA nodes and systemd,
# tests/vm/guest/test_demo.py):
#
#   bash scripts/lib/demo_steps.sh BIN_DIR   # BIN_DIR holds mlos and mlos-demo
#
# What it writes (runtime directory, tuning store) lives in a temporary
# directory removed at the end. Exit status: the first step that failed.
set -euo pipefail
bin="${1:?usage: demo_steps.sh BIN_DIR}"
scratch=$(mktemp -d /tmp/mlos-demo-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -m 0700 "$scratch/run" "$scratch/tune"
export MLOS_RUNTIME_DIR="$scratch/run" MLOS_TUNE_DIR="$scratch/tune"

echo "== mlos topo"
"$bin/mlos" topo
echo
echo "== training loop on the published C API ($bin/mlos-demo)"
"$bin/mlos-demo" 300 "$(nproc)"
echo
echo "== mlos run --cpus 1 -- an unmodified program"
"$bin/mlos" run --cpus 1 --verbose -- sh -c \
  'echo "child sees CPUs $(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status), OMP_NUM_THREADS = $OMP_NUM_THREADS"'
