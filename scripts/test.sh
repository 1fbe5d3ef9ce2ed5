#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2 (and CI): install, build, and run every test.
#  1. the normal build: unit, integration (real kernel), strict-C header,
#     installed-tree consumers (pkg-config, find_package) and CLI end-to-end;
#     then the Python package, pip-installed into the venv, and its tests;
#  2. an ASan+UBSan build of the unit, integration, C and checkpoint (fault
#     injection, crash loop) tests, compiled while step 1's tests run, and
#     mlosd's end-to-end tests against ASan+UBSan builds of mlosd and the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, printed as it ends and listed at the end: CI has
# a 30-minute budget (docs/testing.md, "CI time").
stage_start=$SECONDS
stage_times=()
stage_done() {
  stage_times+=("$1: $((SECONDS - stage_start)) s")
  echo "test.sh: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}
bash scripts/setup.sh
stage_done setup
# Every build here (normal, sanitizer, sanitize_daemon.sh's) with line
# tables only (-g1: backtraces and sanitizer reports keep file:line), which
# compiles the library in about four fifths of full -g's time.
export MLOS_DEBUG_INFO=lines
# Every tracked source file names its licence (docs/releases.md).
python3 scripts/add_spdx_headers.py --check

bash scripts/build.sh
stage_done build

# The sanitizer build (step 2) needs nothing from the stages between, so it
# compiles beside them, in the CPU time their tests leave idle (about half
# of the normal ctest's): those tests hold on a busy machine anyway
# (docs/testing.md). Only what the sanitizer runs execute, unoptimised
# (faster to build): this stage's tests and sanitize_daemon.sh's targets.
# Its own process group (setsid), ended with this script if a stage fails.
# The quick benchmark (below) runs in the background too, also in its own group.
asan_pid= bench_pid=
trap '[[ -n "$asan_pid" ]] && kill -- "-$asan_pid" 2>/dev/null; [[ -n "$bench_pid" ]] && kill -- "-$bench_pid" 2>/dev/null; true' EXIT
if [[ "${MLOS_SKIP_SANITIZERS:-0}" != 1 ]]; then
  mkdir -p build-asan
  MLOS_BUILD_DIR=build-asan MLOS_BUILD_TARGETS="mlos_unit_tests mlos_integration_tests mlos_os_integration_tests mlos_c_api_test mlos_abi_v1_test
    fuzz_cpu_list_replay fuzz_claim_ledger_replay fuzz_proc_files_replay fuzz_frame_replay fuzz_request_replay fuzz_registry_replay
    fuzz_policy_reply_replay fuzz_tar_index_replay mlos_dataload_tests mlos_gpu_tests mlos_tcp_store_tests
    mlos_checkpoint_fault_test mlos_checkpoint_crash_test mlos_checkpoint_crash_child
    mlosd mlos_cli mlos mlos-demo mlos_daemon_job_client mlos_two_jobs_client mlos_pressure_trainer mlos_memory_hog
    mlos_dataload_job_client" \
    setsid bash scripts/build.sh -DMLOS_SANITIZE=address,undefined -DMLOS_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
    > build-asan/build.log 2>&1 &
  asan_pid=$!
fi
rm -rf build/test-runtime
(cd build && ctest --output-on-failure -j2 --timeout 300)
stage_done ctest

# The Python package: sdist, wheel from it, auditwheel repair and a smoke
# test in a fresh venv (scripts/test_wheel.sh); that same repaired wheel
# installed into the venv, type-checked (py.typed, the generated _core
# stubs), and its tests (bindings, MLOSProcessGroup next to torch.distributed
# and under torchrun, the torch and Ultralytics integrations, the zero-code
# mode), then the reduced YOLOv8n showcase (1 epoch, 64 px, exports checked
# with onnxruntime). tests/monitoring: the Grafana dashboard's and the alert
# rules' queries against the metrics mlosd exports, and the rules' own tests.
venv="${MLOS_VENV:-/opt/mlos/venv}"
bash scripts/test_wheel.sh
stage_done wheel
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps build-wheel/dist/*.whl
"$venv/bin/python" -m mypy --config-file pyproject.toml -p mlos_training
"$venv/bin/python" -m mypy --config-file pyproject.toml tests/typing/api_usage.py
stage_done mypy
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python tests/monitoring examples/yolo_showcase
stage_done pytest
# The benchmark suite's quick mode: every scenario and tool runs once, for a
# fraction of a second (no timing is judged; scripts/bench.sh measures). It
# runs beside the sanitizer build's end and its ctest (the tests hold on a
# busy machine, and the benchmark judges nothing): in its own process group,
# ended with this script if a stage fails; waited for before mlosd's ASan
# run, which runs alone.
bench_log=build/bench-quick.log
setsid "$venv/bin/python" bench/suite/run.py --quick --out build/bench-quick > "$bench_log" 2>&1 &
bench_pid=$!
bench_done() {
  wait "$bench_pid" || { tail -n 40 "$bench_log"; echo "test.sh: the quick benchmark failed ($bench_log)"; exit 1; }
  bench_pid=
  stage_done "$1"
}

if [[ -n "$asan_pid" ]]; then
  wait "$asan_pid" || { tail -n 60 build-asan/build.log; echo "test.sh: the sanitizer build failed (build-asan/build.log)"; exit 1; }
  asan_pid=
  stage_done asan-build-wait
  rm -rf build-asan/test-runtime
  # hwloc's PCI plugin (through libpciaccess) leaks about 1 KB per process
  # and is unloaded before LeakSanitizer can name it; it only matters for GPU
  # discovery on real hardware, which this run does not exercise.
  # The sanitized library starts the optimised build's policy host and
  # data-loading helper (separate, unsanitized processes: sanitizer
  # runtimes do not survive their seccomp filters), so embedded policy
  # hosting and data loading run under ASan too.
  (cd build-asan && HWLOC_COMPONENTS=-pci UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     MLOS_POLICY_HOST="$PWD/../build/bin/mlos-policyhost" MLOS_POLICY_DIR="$PWD/../build/policies" \
     MLOS_DATALOAD_HELPER="$PWD/../build/bin/mlos-dataload" \
     ctest --output-on-failure -j2 --timeout 300 -R '^(unit|integration|os_integration|c_api|fuzz|checkpoint|dataload|gpu|tcp_store)\.')
  stage_done asan-ctest
  bench_done bench-quick-rest
  # mlosd, its clients and the CLI under ASan/UBSan, through the daemon
  # end-to-end tests (TSan: bash scripts/sanitize_daemon.sh thread).
  bash scripts/sanitize_daemon.sh address,undefined
  stage_done asan-daemon
else
  bench_done bench-quick
fi
printf 'test.sh: %s\n' "${stage_times[@]}" "total: $SECONDS s"
