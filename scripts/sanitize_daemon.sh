#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds mlosd, the CLI, libmlos and the daemon test clients with sanitizers
# and runs the end-to-end tests that involve mlosd (tests/e2e/test_daemon*.py,
# the daemon-mode memory-pressure scenario, one book and node confinement)
# against that build, as root. Nothing else runs meanwhile in scripts/test.sh,
# so node confinement (which moves the machine's unmanaged processes) may.
#   bash scripts/sanitize_daemon.sh address,undefined   # ASan + UBSan (CI runs this)
#   bash scripts/sanitize_daemon.sh thread              # TSan
# A sanitizer report makes the sanitized process exit non-zero, which the
# tests see (a daemon that fails to start or stop cleanly, a client that
# does not exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=${1:-address,undefined}
case "$sanitizers" in
  address,undefined) dir=build-asan ;;  # shared with scripts/test.sh's sanitizer run
  thread) dir=build-tsan ;;
  *) dir=build-$(echo "$sanitizers" | tr ',' '-') ;;
esac
MLOS_BUILD_DIR=$dir MLOS_BUILD_TARGETS="mlosd mlos_cli mlos mlos-demo mlos_daemon_job_client mlos_two_jobs_client mlos_pressure_trainer mlos_memory_hog mlos_dataload_job_client" \
  bash scripts/build.sh -DMLOS_SANITIZE="$sanitizers" -DMLOS_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
# hwloc's PCI plugin leaks about 1 KB per process (see scripts/test.sh).
export HWLOC_COMPONENTS=-pci
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
# The sanitized library starts the optimised build's data-loading helper
# (sanitizer runtimes do not survive its seccomp filter; see scripts/test.sh).
export MLOS_DATALOAD_HELPER=${MLOS_DATALOAD_HELPER:-$PWD/build/bin/mlos-dataload}
# shellcheck source=scripts/lib/test_python.sh
source scripts/lib/test_python.sh
MLOS_BUILD_DIR=$dir "$(test_python)" -m pytest -q -p no:cacheprovider tests/e2e -k "daemon or one_book or node_confinement"
