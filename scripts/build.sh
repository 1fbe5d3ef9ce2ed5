#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds mlOS into ./build (or $MLOS_BUILD_DIR).
#
#   bash scripts/build.sh [CMAKE-ARGS...]          # everything: library, CLI, mlosd,
#                                                  # data loading, tests, benchmarks
#   bash scripts/build.sh --demo [CMAKE-ARGS...]   # what scripts/demo.sh runs: libmlos,
#                                                  # mlos, mlos-policyhost, the default
#                                                  # policy and mlos-demo
#
# Each mode names every part it switches and its build type (the demo's
# is Quick: -O1, no debug information; the full mode's RelWithDebInfo with
# full debug information, or line tables only with MLOS_DEBUG_INFO=lines in
# the environment, as scripts/test.sh builds), so a full build after a demo
# build in the same directory turns the rest on and recompiles the rest at
# RelWithDebInfo. Extra arguments go to the CMake configure step (a
# later -DCMAKE_BUILD_TYPE wins); MLOS_BUILD_TARGETS (space-separated)
# limits what the full mode builds. Prints the optional features the
# configure step found or left out.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${MLOS_BUILD_DIR:-build}
mode=full
if [[ "${1:-}" == --demo ]]; then
  mode=demo
  shift
fi
if [[ $mode == demo ]]; then
  # Quick (-O1, no debug information; CMakeLists.txt): the demo is for
  # trying mlOS out, not for measuring it.
  parts=(-DCMAKE_BUILD_TYPE=Quick -DMLOS_BUILD_TESTS=OFF -DMLOS_BUILD_BENCH=OFF -DMLOS_BUILD_DAEMON=OFF
         -DMLOS_BUILD_DATALOAD=OFF -DMLOS_BUILD_DEMO=ON)
  targets=(mlos_cli mlos-demo mlos-policyhost mlos-policy-thread-governor)
else
  parts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLOS_DEBUG_INFO="${MLOS_DEBUG_INFO:-full}" -DMLOS_BUILD_TESTS=ON -DMLOS_BUILD_BENCH=ON
         -DMLOS_BUILD_DAEMON=ON -DMLOS_BUILD_DATALOAD=ON -DMLOS_BUILD_DEMO=ON)
  # shellcheck disable=SC2206
  targets=(${MLOS_BUILD_TARGETS:-})
fi
mkdir -p "$build_dir"
# Ninja when it is there (set-up installs it: about 8 % faster than make
# here), unless the directory was configured with another generator.
generator=()
if command -v ninja > /dev/null && { [[ ! -f "$build_dir/CMakeCache.txt" ]] ||
     grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build_dir/CMakeCache.txt"; }; then
  generator=(-G Ninja)
fi
cmake -S . -B "$build_dir" "${generator[@]}" "${parts[@]}" "$@" > "$build_dir/configure.log" ||
  { cat "$build_dir/configure.log"; exit 1; }
# What an optional part needs is in docs/gpu.md (GPU manager, sharing,
# device collectives) and cmake/feature_summary.cmake.
grep '^-- mlOS feature: ' "$build_dir/configure.log" | sed 's/^-- mlOS feature: /build: /' || true
cmake --build "$build_dir" -j"$(nproc)" ${targets[@]+--target "${targets[@]}"}
