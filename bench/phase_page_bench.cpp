// SPDX-License-Identifier: Apache-2.0
// Cost of publishing a phase through the shared phase page (the daemon-mode
// phase hint), next to the cheapest possible publication, one relaxed atomic
// store, and next to a system call, measured in the same run.
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "core/phase_page.h"
#include "os/shared_page.h"

namespace {

void BM_PhasePagePublish(benchmark::State& state) {
  auto page = mlos::os::SharedPage::create("bench-phase-page");
  if (!page) return state.SkipWithError(page.error().describe().c_str());
  mlos::PhasePageWriter w(page->data(), 0);
  uint64_t t = 0;
  for (auto _ : state) {
    ++t;
    w.publish((t & 1) ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_BACKWARD, t);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_PhasePagePublish);

void BM_PhasePageRead(benchmark::State& state) {
  auto page = mlos::os::SharedPage::create("bench-phase-page");
  if (!page) return state.SkipWithError(page.error().describe().c_str());
  mlos::PhasePageWriter w(page->data(), 0);
  mlos::PhasePageReader r(page->data());
  for (auto _ : state) benchmark::DoNotOptimize(r.read());
}
BENCHMARK(BM_PhasePageRead);

void BM_RelaxedStore(benchmark::State& state) {
  std::atomic<uint64_t> slot{0};
  uint64_t t = 0;
  for (auto _ : state) {
    slot.store(++t, std::memory_order_relaxed);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RelaxedStore);

void BM_RawGetpid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getpid));
}
BENCHMARK(BM_RawGetpid);

}  // namespace

BENCHMARK_MAIN();
