#!/usr/bin/env bash
# Installs everything mlOS needs to build and test on Debian 12, as root.
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libhwloc-dev hwloc libhwloc-plugins  # topology (plugins: PCI devices, i.e. GPUs)
  libcli11-dev                  # CLI argument parsing
  nlohmann-json3-dev            # JSON (ledger, --json)
  zlib1g-dev                    # CRC-32 of state files
  libgloo-dev                   # collectives: barrier and all-reduce (TCP transport, rendezvous stores)
  libxxhash-dev                 # XXH3-64 checksums of checkpoint files
  prometheus-cpp-dev prometheus # daemon metrics; promtool checks them in tests
  libgtest-dev libgmock-dev     # tests
  libseccomp-dev                # tests: proving set_phase makes no system call
  libbenchmark-dev              # bench/
  util-linux                    # taskset, ionice (tests)
  redis-server iproute2         # tests: multi-host collectives (Redis store, network namespaces)
  libgl1 libglib2.0-0           # opencv (Ultralytics' image I/O) loads these
  stress-ng                     # bench suite: the noisy neighbours (CPU-bound, memory-bandwidth-bound)
  libavcodec59 libavformat59 libavfilter8 libavutil57 libswscale6 libswresample4 libavdevice59
                                # bench/dataload: SPDL (pip) dlopens FFmpeg 5.1's shared libraries
  python3 python3-pip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pytest drives the end-to-end tests. Use whichever python3 is first on PATH
# (the same one ctest will run).
if ! python3 -c 'import pytest' 2>/dev/null; then
  echo "setup: installing pytest"
  python3 -m pip install --quiet pytest 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pytest
fi

# The Python package (python/: nanobind, scikit-build-core) and what its
# tests run against (torch, numpy; Ultralytics and onnxruntime for the YOLO
# showcase, versions pinned in examples/yolo_showcase/requirements.txt) live
# in a virtual environment of their own, kept between runs: torch from PyPI
# is large. One resolver run, so Ultralytics' torchvision matches torch.
# The data-loading benchmark's baselines (scikit-image, webdataset, SPDL,
# DALI; pinned in bench/dataload/requirements.txt) join the same run.
# MLOS_VENV moves it.
venv="${MLOS_VENV:-/opt/mlos/venv}"
python_packages=(torch numpy pytest nanobind scikit-build-core -r "$(dirname "$0")/../examples/yolo_showcase/requirements.txt"
                 -r "$(dirname "$0")/../bench/dataload/requirements.txt")
if ! "$venv/bin/python" -c 'import torch, numpy, pytest, nanobind, scikit_build_core, ultralytics, onnx, onnxruntime, onnxslim, skimage, webdataset, spdl.io, nvidia.dali' 2>/dev/null; then
  echo "setup: creating $venv with ${python_packages[*]}"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "${python_packages[@]}"
fi
