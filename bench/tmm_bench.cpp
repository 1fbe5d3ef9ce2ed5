// SPDX-License-Identifier: Apache-2.0
// Tensor pool acquire/release against malloc/free of the same sizes, one
// thread and every allowed CPU's thread, in the same run. Each round of a
// thread acquires a buffer, writes its first byte (a buffer a training step
// would use) and releases it. Repetitions interleave the allocators; the
// report gives medians over them.
//
//   mlos_tmm_bench [--reps N] [--ops N] > tmm.json
//
// Output (JSON): per allocator, size and thread count: pairs_per_s (one
// acquire + one release), ops_per_s (= 2 x pairs), and per-call latency
// percentiles (acquire and release timed separately, each from batches of
// 32 calls, so a clock read costs under a nanosecond per call).
#include <mlos/tmm.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 32;

struct Allocator {
  const char* name;
  std::function<void*(size_t)> acquire;
  std::function<void(void*)> release;
};

struct Sample {
  double pairs_per_s;
  std::vector<double> acquire_ns, release_ns;  // per call, one entry per batch
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One thread's rounds: batches of kBatch acquires, then kBatch releases.
Sample run_thread(const Allocator& a, size_t size, long ops) {
  Sample s;
  void* held[kBatch];
  const auto start = Clock::now();
  for (long done = 0; done < ops; done += kBatch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      held[i] = a.acquire(size);
      static_cast<volatile char*>(held[i])[0] = 1;
    }
    const auto t1 = Clock::now();
    for (int i = 0; i < kBatch; ++i) a.release(held[i]);
    const auto t2 = Clock::now();
    s.acquire_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
    s.release_ns.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / kBatch);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  s.pairs_per_s = static_cast<double>(ops) / secs;
  return s;
}

// `threads` threads at once; pairs/s summed, latencies pooled.
Sample run(const Allocator& a, size_t size, long ops, int threads) {
  std::vector<Sample> per(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { per[t] = run_thread(a, size, ops); });
  for (auto& t : ts) t.join();
  Sample all{0, {}, {}};
  for (auto& s : per) {
    all.pairs_per_s += s.pairs_per_s;
    all.acquire_ns.insert(all.acquire_ns.end(), s.acquire_ns.begin(), s.acquire_ns.end());
    all.release_ns.insert(all.release_ns.end(), s.release_ns.begin(), s.release_ns.end());
  }
  return all;
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  long ops = 200000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ops")) ops = std::atol(argv[i + 1]);
  }
  ops = std::max<long>(kBatch, ops / kBatch * kBatch);
  const std::vector<size_t> sizes = {4096, 64 << 10, 1 << 20, 16 << 20};
  const int cpus = allowed_cpus();

  mlos_tmm_pool_options_t o{};
  o.struct_size = sizeof o;
  o.capacity_bytes = uint64_t{2} << 30;  // room for every thread's batch of the largest size
  o.numa_node = MLOS_TMM_NODE_AUTO;
  o.name = "bench";
  mlos_tmm_pool_t* pool = nullptr;
  if (mlos_tmm_pool_create(nullptr, &o, &pool) != MLOS_OK) {
    std::fprintf(stderr, "pool: %s\n", mlos_last_error_message());
    return 1;
  }
  const Allocator tmm{"mlos_tmm",
                      [pool](size_t n) {
                        mlos_tmm_buffer_t b;
                        if (mlos_tmm_acquire(pool, n, &b) != MLOS_OK) {
                          std::fprintf(stderr, "acquire: %s\n", mlos_last_error_message());
                          std::abort();
                        }
                        return b.data;
                      },
                      [pool](void* p) { mlos_tmm_release(pool, p); }};
  const Allocator libc{"malloc", [](size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); }};
  const std::vector<const Allocator*> allocators = {&tmm, &libc};

  std::printf("{\n  \"cpus\": %d, \"reps\": %d, \"pairs_per_rep\": %ld,\n  \"results\": [", cpus, reps, ops);
  bool first = true;
  for (size_t size : sizes) {
    for (int threads : {1, cpus}) {
      std::vector<std::vector<Sample>> samples(allocators.size());
      for (int r = 0; r < reps; ++r) {  // interleaved: A B A B ...
        for (size_t a = 0; a < allocators.size(); ++a) samples[a].push_back(run(*allocators[a], size, ops, threads));
      }
      for (size_t a = 0; a < allocators.size(); ++a) {
        std::vector<double> rate, acq, rel;
        for (const Sample& s : samples[a]) {
          rate.push_back(s.pairs_per_s);
          acq.insert(acq.end(), s.acquire_ns.begin(), s.acquire_ns.end());
          rel.insert(rel.end(), s.release_ns.begin(), s.release_ns.end());
        }
        std::printf("%s\n    {\"allocator\": \"%s\", \"bytes\": %zu, \"threads\": %d, \"pairs_per_s\": %.0f, "
                    "\"ops_per_s\": %.0f, \"acquire_ns_p50\": %.1f, \"acquire_ns_p99\": %.1f, "
                    "\"release_ns_p50\": %.1f, \"release_ns_p99\": %.1f}",
                    first ? "" : ",", allocators[a]->name, size, threads, median(rate), 2 * median(rate),
                    percentile(acq, 0.5), percentile(acq, 0.99), percentile(rel, 0.5), percentile(rel, 0.99));
        first = false;
      }
      if (cpus == 1) break;
    }
  }
  mlos_tmm_stats_t st{};
  st.struct_size = sizeof st;
  mlos_tmm_get_stats(pool, &st);
  std::printf("\n  ],\n  \"pool\": {\"acquires\": %llu, \"reuse_hits\": %llu, \"high_water_bytes\": %llu}\n}\n",
              static_cast<unsigned long long>(st.acquires), static_cast<unsigned long long>(st.reuse_hits),
              static_cast<unsigned long long>(st.high_water_bytes));
  mlos_tmm_pool_destroy(pool);
  return 0;
}
