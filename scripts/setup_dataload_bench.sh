#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the data-loading benchmark (bench/dataload/) needs beyond
# scripts/setup.sh, as root: FFmpeg 5.1's shared libraries (SPDL dlopens
# them), fusepy (the slow-storage view) and the baseline loaders and dataset tools pinned in
# bench/dataload/requirements.txt (scikit-image, webdataset, SPDL, DALI; about
# 1 GB), installed into the mlOS venv. Kept out of setup.sh so that the test
# run (CI) does not download them. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck source=scripts/lib/apt_packages.sh
source scripts/lib/apt_packages.sh
# FFmpeg for SPDL; fusepy and libfuse2 for bench/dataload/slow_storage.py.
apt_install_missing setup_dataload_bench libavcodec59 libavformat59 libavfilter8 libavutil57 libswscale6 \
  libswresample4 libavdevice59 python3-fusepy libfuse2
venv="${MLOS_VENV:-/opt/mlos/venv}"
if ! "$venv/bin/python" -c 'import skimage, webdataset, spdl.io, nvidia.dali' 2>/dev/null; then
  echo "setup_dataload_bench: installing bench/dataload/requirements.txt into $venv"
  "$venv/bin/python" -m pip install --quiet -r bench/dataload/requirements.txt
fi
