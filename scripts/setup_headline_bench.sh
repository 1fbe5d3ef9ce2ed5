#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the headline comparison (bench/suite/headline.py) needs beyond
# scripts/setup.sh, as root: the anchor at its best. PyTorch's CPU launcher
# (torch.backends.xeon.run_cpu) preloads libiomp5.so, libtcmalloc.so and
# libjemalloc.so only from $CONDA_PREFIX/lib, $VIRTUAL_ENV/lib, ~/.local/lib,
# /usr/local/lib or /usr/lib, under those names; Debian has the allocators
# under their sonames in the multiarch directory, and no Intel OpenMP. This
# makes a prefix, /opt/mlos/anchor-prefix (MLOS_ANCHOR_PREFIX), holding
# Intel OpenMP from PyPI (intel-openmp, pinned) and links to the allocators;
# headline.py hands it to the launcher as CONDA_PREFIX. Kept out of setup.sh
# so that the test run (CI) does not download it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
prefix="${MLOS_ANCHOR_PREFIX:-/opt/mlos/anchor-prefix}"
venv="${MLOS_VENV:-/opt/mlos/venv}"
if [[ ! -e "$prefix/lib/libiomp5.so" ]]; then
  echo "setup_headline_bench: installing intel-openmp into $prefix"
  "$venv/bin/python" -m pip install --quiet --no-deps --prefix "$prefix" intel-openmp==2026.2.0
fi
multiarch="/usr/lib/$(gcc -print-multiarch)"
ln -sfn "$multiarch/libtcmalloc_minimal.so.4" "$prefix/lib/libtcmalloc.so"
ln -sfn "$multiarch/libjemalloc.so.2" "$prefix/lib/libjemalloc.so"
echo "setup_headline_bench: $prefix/lib has $(cd "$prefix/lib" && ls libiomp5.so libtcmalloc.so libjemalloc.so | tr '\n' ' ')"
