#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds mlOS into ./build (or $MLOS_BUILD_DIR).
# Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${MLOS_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# MLOS_BUILD_TARGETS (space-separated) limits what is built; default: all.
# shellcheck disable=SC2086
cmake --build "$build_dir" -j"$(nproc)" ${MLOS_BUILD_TARGETS:+--target $MLOS_BUILD_TARGETS}
