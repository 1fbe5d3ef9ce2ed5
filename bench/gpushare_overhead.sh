#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU sharing interposer's cost per driver call (docs/benchmarks.md,
# "GPU sharing"), in the configurations mlos run sets up: a memory cap in
# private books; a memory cap in the job's share file, made by
# `mlos run --gpus 1 --gpu-memory` itself (LD_PRELOAD is then dropped: the
# benchmark loads the interposer itself, to call both sides); and a compute
# share that does not bind (every launch still asks the limiter). Medians of
# randomly interleaved repetitions, direct and interposed calls in the same
# run, on the fake driver. Usage: bench/gpushare_overhead.sh [BUILD_DIR]
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/gpus.json" <<JSON
{"gpus": [{"uuid": "GPU-11111111-2222-3333-4444-555555555555", "memory_total": 85899345920,
           "pci": {"bus": 1}, "cpu_affinity": "0"}]}
JSON
export LD_LIBRARY_PATH="$build/tests/gpu-fixtures/cuda" MLOS_FAKE_NVML="$work/gpus.json"
export MLOS_NVML_LIBRARY="$build/tests/gpu-fixtures/libfake-nvml.so" MLOS_MODE=embedded MLOS_RUNTIME_DIR="$work/rt"
bench=("$build/bin/mlos_gpushare_bench" --interposer "$build/lib/libmlos-gpushare.so" --benchmark_repetitions=9
       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true)
show() { grep -E "_median" | awk '{printf "  %-32s %8s %s\n", $1, $2, $3}'; }
echo "== memory cap, private books (MLOS_GPU_MEMORY_LIMIT only)"
MLOS_GPU_MEMORY_LIMIT=80000000000 "${bench[@]}" 2>/dev/null | show
echo "== memory cap in the job's share file (mlos run --gpus 1 --gpu-memory 80G)"
"$build/bin/mlos" run --gpus 1 --gpu-memory 80G -- env -u LD_PRELOAD "${bench[@]}" 2>/dev/null | show
echo "== memory cap and a compute share that does not bind (--gpu-share 90)"
"$build/bin/mlos" run --gpus 1 --gpu-memory 80G --gpu-share 90 -- env -u LD_PRELOAD "${bench[@]}" 2>/dev/null | show
