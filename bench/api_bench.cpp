// SPDX-License-Identifier: Apache-2.0
// Micro-benchmarks of the C API's hot paths, each next to the raw system
// call it would otherwise cost, measured in the same run:
//   set_phase, settings unchanged   vs  getpid() (cheapest syscall)
//   set_phase, settings change      vs  setpriority() on the same thread; with
//                                   1, 8 and 32 threads in the process (a
//                                   change reaches every thread, docs/phases.md;
//                                   torch's intra-op pool is one per core)
//   request + release               (ledger round trip with fsync)
// Run: build/bin/mlos_api_bench --benchmark_repetitions=9
//        --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mlos/training.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace {

mlos_training_resources_t* bound_job() {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) return nullptr;
  mlos_training_bind_thread(res, pthread_self(), MLOS_CPU_INDEX_ALL);
  return res;
}

void BM_SetPhaseSameSettings(benchmark::State& state) {
  mlos_training_resources_t* res = bound_job();
  if (!res) return state.SkipWithError(mlos_last_error_message());
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  int i = 0;
  for (auto _ : state) {
    // FORWARD <-> OPTIMIZER: a phase change whose OS settings are equal.
    benchmark::DoNotOptimize(
        mlos_training_set_phase(res, (i++ & 1) ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_OPTIMIZER));
  }
  mlos_training_release_resources(res);
}
BENCHMARK(BM_SetPhaseSameSettings);

// Threads that exist and wait, as an idle intra-op pool's do, until the
// object is destroyed.
class ParkedThreads {
 public:
  explicit ParkedThreads(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return done_; });
      });
    }
  }
  ~ParkedThreads() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

void BM_SetPhaseSettingsChange(benchmark::State& state) {
  // The process's threads: this one and state.range(0) - 1 parked ones,
  // all in the job's thread set from the first change on.
  ParkedThreads pool(static_cast<int>(state.range(0)) - 1);
  mlos_training_resources_t* res = bound_job();
  if (!res) return state.SkipWithError(mlos_last_error_message());
  int i = 0;
  for (auto _ : state) {
    // FORWARD <-> BACKWARD: nice 0 <-> -5 on every thread of the process.
    benchmark::DoNotOptimize(
        mlos_training_set_phase(res, (i++ & 1) ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_BACKWARD));
  }
  mlos_training_release_resources(res);
}
BENCHMARK(BM_SetPhaseSettingsChange)->ArgName("threads")->Arg(1)->Arg(8)->Arg(32);

void BM_RawGetpid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getpid));
}
BENCHMARK(BM_RawGetpid);

void BM_RawSetpriority(benchmark::State& state) {
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(setpriority(PRIO_PROCESS, tid, (i++ & 1) ? 0 : 1));
  setpriority(PRIO_PROCESS, tid, 0);
}
BENCHMARK(BM_RawSetpriority);

void BM_RequestRelease(benchmark::State& state) {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  for (auto _ : state) {
    mlos_training_resources_t* res = nullptr;
    if (mlos_training_request_resources(&req, &res) != MLOS_OK) return state.SkipWithError(mlos_last_error_message());
    mlos_training_release_resources(res);
  }
}
BENCHMARK(BM_RequestRelease)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (getenv("MLOS_RUNTIME_DIR") == nullptr) {
    char dir[] = "/tmp/mlos-bench-XXXXXX";
    if (mkdtemp(dir) != nullptr) setenv("MLOS_RUNTIME_DIR", dir, 1);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
