#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the fuzz targets (parsers, and mlosd's request handling) with clang + libFuzzer (and ASan/UBSan) and
# runs each for SECONDS (default 60), adding new interesting inputs to
# tests/fuzz/corpus/<target>/ (replayed by ctest as fuzz.<target>_corpus).
# Before committing a grown corpus, minimise it:
#   build-fuzz/bin/fuzz_T -merge=1 NEW_DIR tests/fuzz/corpus/T
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DMLOS_FUZZ=ON -DMLOS_BUILD_BENCH=OFF \
  -DMLOS_SANITIZE=address,undefined >/dev/null
for t in cpu_list claim_ledger proc_files frame request registry tar_index; do
  cmake --build build-fuzz -j"$(nproc)" --target "fuzz_$t" >/dev/null
  # Crashing inputs land in build-fuzz/; copy them into the corpus once fixed.
  ./build-fuzz/bin/"fuzz_$t" -max_total_time="$seconds" -max_len=4096 -artifact_prefix=build-fuzz/ \
    "tests/fuzz/corpus/$t"
done
