// SPDX-License-Identifier: Apache-2.0
// What the GPU sharing interposer adds to each driver call (docs/gpu.md,
// "Sharing a GPU"; docs/benchmarks.md, "GPU sharing"). Both sides call the
// same driver, in one process and one run: directly, through libcuda.so.1's
// own entry points, and through libmlos-gpushare.so's hooks, resolved from
// it with dlsym as LD_PRELOAD would put them first. The driver is the fake
// one (tests/gpu/fake_cuda.cpp, its calls cost a mutex), so the difference
// is the hook's own cost; against a real driver's microseconds per launch
// it is the same nanoseconds.
//
//   LD_LIBRARY_PATH=build/tests/gpu-fixtures/cuda MLOS_FAKE_NVML=gpus.json
//   build/bin/mlos_gpushare_bench --interposer build/lib/libmlos-gpushare.so
//
// MLOS_GPU_MEMORY_LIMIT / MLOS_GPU_SHARE / MLOS_GPUSHARE_STATE set which
// checks the hooks make (the script bench/gpushare_overhead.sh runs the
// configurations).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda.h>

namespace {

using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
using MemFree = CUresult (*)(CUdeviceptr);
using MemInfo = CUresult (*)(size_t*, size_t*);
using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void**, void**);

struct Calls {
  MemAlloc alloc = nullptr;
  MemFree free = nullptr;
  MemInfo info = nullptr;
  Launch launch = nullptr;
};

Calls direct, hooked;

Calls resolve(void* lib) {
  Calls c;
  c.alloc = reinterpret_cast<MemAlloc>(dlsym(lib, "cuMemAlloc_v2"));
  c.free = reinterpret_cast<MemFree>(dlsym(lib, "cuMemFree_v2"));
  c.info = reinterpret_cast<MemInfo>(dlsym(lib, "cuMemGetInfo_v2"));
  c.launch = reinterpret_cast<Launch>(dlsym(lib, "cuLaunchKernel"));
  return c;
}

void alloc_free(benchmark::State& state, const Calls& c) {
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (c.alloc(&p, 1 << 20) != CUDA_SUCCESS || c.free(p) != CUDA_SUCCESS) state.SkipWithError("alloc/free failed");
  }
}

void mem_info(benchmark::State& state, const Calls& c) {
  for (auto _ : state) {
    size_t f = 0, t = 0;
    benchmark::DoNotOptimize(c.info(&f, &t));
  }
}

void launch(benchmark::State& state, const Calls& c) {
  for (auto _ : state) benchmark::DoNotOptimize(c.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  std::string interposer;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--interposer") == 0) interposer = argv[i + 1];
  }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* share = interposer.empty() ? nullptr : dlopen(interposer.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr || share == nullptr) {
    std::fprintf(stderr, "mlos_gpushare_bench: needs libcuda.so.1 and --interposer PATH (%s)\n", dlerror());
    return 2;
  }
  direct = resolve(cuda);
  hooked = resolve(share);
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(cuda, "cuInit"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(cuda, "cuCtxSetCurrent"));
  CUcontext ctx = nullptr;
  if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "mlos_gpushare_bench: no (fake) GPU: set MLOS_FAKE_NVML\n");
    return 2;
  }
  benchmark::RegisterBenchmark("alloc_free/direct", alloc_free, direct);
  benchmark::RegisterBenchmark("alloc_free/interposed", alloc_free, hooked);
  benchmark::RegisterBenchmark("mem_get_info/direct", mem_info, direct);
  benchmark::RegisterBenchmark("mem_get_info/interposed", mem_info, hooked);
  benchmark::RegisterBenchmark("launch/direct", launch, direct);
  benchmark::RegisterBenchmark("launch/interposed", launch, hooked);
  // --interposer is ours; Google Benchmark refuses flags it does not know.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--interposer") == 0) {
      ++i;
      continue;
    }
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
