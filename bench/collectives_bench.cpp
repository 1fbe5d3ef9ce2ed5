// SPDX-License-Identifier: Apache-2.0
// Collectives benchmark (not a test): one rank of a barrier / all-reduce
// sweep, through mlOS's published API or through raw Gloo, printing JSON
// lines. bench/collectives_report.py starts the ranks (and the
// torch.distributed equivalent, bench/collectives_bench_torch.py),
// interleaves the implementations and prints the comparison.
//
//   mlos_collectives_bench --impl mlos|gloo|gloo-pin [--sizes B,B,...] [--iters N]
//                          [--min-iters N] [--target-bytes B] [--warmup N]
//                          [--barrier-iters N]
//
// Rank and world size come from RANK and WORLD_SIZE.
//   --impl mlos  mlos_training_request_resources, then mlos_training_barrier
//                and mlos_training_allreduce(..., MLOS_REDUCE_SUM): the
//                library reads MLOS_STORE, MLOS_COLLECTIVE_HOST, MLOS_MODE,
//                MLOS_RUNTIME_DIR from the environment as any job would.
//   --impl gloo  what a program written against Gloo alone does: a FileStore
//                in the directory of MLOS_STORE=file:DIR, a TCP device on
//                MLOS_COLLECTIVE_HOST (default 127.0.0.1), connectFullMesh,
//                then gloo::barrier and gloo::allreduce on float32 with
//                gloo::sum<float>, the default algorithm (ring), a fresh tag
//                per call. No handle lookup, no locks, no error wrapping.
//   --impl gloo-pin  the same, with Gloo's event-loop thread confined to one
//                CPU (the rank-th, modulo, of the CPUs the process may use),
//                as mlOS confines it to the job's claimed CPUs; the caller's
//                thread is left unbound, as under mlOS. This isolates the
//                cost of the mlOS call path from the effect of placement.
//
// Per size (bytes, float32 elements = bytes / 4): a barrier, warm-up calls,
// a barrier, then `iters` timed calls, each timed on its own
// (steady_clock). iters = clamp(target-bytes / size, min-iters, iters), so
// large sizes run fewer calls. The buffer is allocated and touched once, at
// the largest size, before anything is timed; it holds zeros (sums stay
// zero: no overflow or denormals creeping into the timing). A correctness
// check (1000 elements, rank r contributes r + 1) runs first.
//
// Output, one JSON object per line:
//   {"impl":..,"world":..,"rank":..,"op":"setup","connect_ms":..}
//   {"impl":..,"world":..,"rank":..,"op":"check","ok":true}
//   {"impl":..,"world":..,"rank":..,"op":"barrier"|"allreduce","bytes":..,
//    "iters":..,"median_us":..,"p90_us":..,"min_us":..,"mean_us":..,
//    "algbw_GBps":..}          (algbw = bytes / median time, 1 GB = 1e9 B)
// Exit 0 on success, 3 when a collective failed, 2 on misuse.
#include <mlos/training.h>
#include <sched.h>
#include <sys/stat.h>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string impl;
  std::vector<size_t> sizes = {8, 64, 512, 4096, 32768, 65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  size_t iters = 500;
  size_t min_iters = 3;
  size_t target_bytes = size_t{1} << 30;
  size_t warmup = 20;
  size_t barrier_iters = 500;
};

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  std::fprintf(stderr,
               "%s\nusage: %s --impl mlos|gloo|gloo-pin [--sizes B,B,...] [--iters N] [--min-iters N] "
               "[--target-bytes B] [--warmup N] [--barrier-iters N]\n",
               why.c_str(), argv0);
  std::exit(2);
}

size_t parse_size(const std::string& s) {
  size_t pos = 0;
  const unsigned long long v = std::stoull(s, &pos);
  std::string unit = s.substr(pos);
  if (unit.empty() || unit == "B") return v;
  if (unit == "K" || unit == "KiB") return v << 10;
  if (unit == "M" || unit == "MiB") return v << 20;
  if (unit == "G" || unit == "GiB") return v << 30;
  throw std::invalid_argument("unit " + unit);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0], a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--impl") {
        o.impl = value();
      } else if (a == "--sizes") {
        o.sizes.clear();
        std::stringstream ss(value());
        for (std::string item; std::getline(ss, item, ',');) o.sizes.push_back(parse_size(item));
      } else if (a == "--iters") {
        o.iters = parse_size(value());
      } else if (a == "--min-iters") {
        o.min_iters = parse_size(value());
      } else if (a == "--target-bytes") {
        o.target_bytes = parse_size(value());
      } else if (a == "--warmup") {
        o.warmup = parse_size(value());
      } else if (a == "--barrier-iters") {
        o.barrier_iters = parse_size(value());
      } else {
        usage(argv[0], "unknown argument " + a);
      }
    } catch (const std::exception&) {
      usage(argv[0], "bad value for " + a);
    }
  }
  if (o.impl != "mlos" && o.impl != "gloo" && o.impl != "gloo-pin") {
    usage(argv[0], "--impl must be mlos, gloo or gloo-pin");
  }
  for (size_t s : o.sizes) {
    if (s < 4 || s % 4 != 0) usage(argv[0], "sizes must be multiples of 4 bytes (float32)");
  }
  if (o.iters < 1 || o.min_iters < 1) usage(argv[0], "iterations must be >= 1");
  return o;
}

// One rank's collectives. Both implementations throw on failure.
class Impl {
 public:
  virtual ~Impl() = default;
  virtual void barrier() = 0;
  virtual void allreduce(float* data, size_t count) = 0;
};

class MlosImpl final : public Impl {
 public:
  MlosImpl(int rank, int world) : rank_(rank), world_(world) {
    mlos_training_resource_request_t req{};
    req.num_cpus = 1;
    req.numa_node_preference = -1;
    check("mlos_training_request_resources", mlos_training_request_resources(&req, &res_));
    barrier();  // the first collective call on a handle does the rendezvous
  }
  ~MlosImpl() override {
    if (res_) mlos_training_release_resources(res_);
  }
  void barrier() override { check("mlos_training_barrier", mlos_training_barrier(res_, rank_, world_)); }
  void allreduce(float* data, size_t count) override {
    check("mlos_training_allreduce", mlos_training_allreduce(res_, data, count, MLOS_REDUCE_SUM));
  }

 private:
  static void check(const char* what, int rc) {
    if (rc != MLOS_OK) {
      throw std::runtime_error(std::string(what) + ": " + std::to_string(rc) + " " + mlos_last_error_message());
    }
  }
  int rank_, world_;
  mlos_training_resources_t* res_ = nullptr;
};

class GlooImpl final : public Impl {
 public:
  GlooImpl(int rank, int world, bool pin_loop) {
    const char* store = std::getenv("MLOS_STORE");
    if (!store || std::strncmp(store, "file:", 5) != 0) throw std::runtime_error("--impl gloo needs MLOS_STORE=file:DIR");
    mkdir(store + 5, 0700);  // FileStore wants an existing directory (mlOS creates it too)
    gloo::rendezvous::FileStore fs(store + 5);
    gloo::transport::tcp::attr attr;
    const char* host = std::getenv("MLOS_COLLECTIVE_HOST");
    attr.hostname = host && *host ? host : "127.0.0.1";
    // The TCP device starts its event-loop thread here; it inherits the
    // affinity of the creating thread.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) throw std::runtime_error("sched_getaffinity");
    if (pin_loop) {
      std::vector<int> cpus;
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
      }
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[rank % cpus.size()], &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) throw std::runtime_error("sched_setaffinity");
    }
    auto device = gloo::transport::tcp::CreateDevice(attr);
    if (pin_loop && sched_setaffinity(0, sizeof allowed, &allowed) != 0) {
      throw std::runtime_error("sched_setaffinity (restore)");
    }
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
    context->connectFullMesh(fs, device);
    context_ = std::move(context);
  }
  void barrier() override {
    gloo::BarrierOptions o(context_);
    o.setTag(tag_++);
    gloo::barrier(o);
  }
  void allreduce(float* data, size_t count) override {
    gloo::AllreduceOptions o(context_);
    o.setOutput(data, count);
    o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    o.setTag(tag_++);
    gloo::allreduce(o);
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
};

struct Stats {
  double median_us, p90_us, min_us, mean_us;
};

Stats stats(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * (us.size() - 1) + 0.5))]; };
  double sum = 0;
  for (double v : us) sum += v;
  const size_t n = us.size();
  const double median = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  return {median, at(0.9), us.front(), sum / n};
}

template <class F>
std::vector<double> time_each(size_t iters, F&& f) {
  std::vector<double> us;
  us.reserve(iters);
  for (size_t i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    f();
    const auto t1 = Clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* r = std::getenv("RANK");
  const char* w = std::getenv("WORLD_SIZE");
  const int rank = r ? std::atoi(r) : 0, world = w ? std::atoi(w) : 1;
  if (world < 1 || rank < 0 || rank >= world) usage(argv[0], "need RANK and WORLD_SIZE, 0 <= RANK < WORLD_SIZE");
  char head[128];
  std::snprintf(head, sizeof head, "{\"impl\":\"%s\",\"world\":%d,\"rank\":%d", opt.impl.c_str(), world, rank);

  try {
    const auto t0 = Clock::now();
    std::unique_ptr<Impl> impl;
    if (opt.impl == "mlos") {
      impl = std::make_unique<MlosImpl>(rank, world);
    } else {
      impl = std::make_unique<GlooImpl>(rank, world, opt.impl == "gloo-pin");
    }
    std::printf("%s,\"op\":\"setup\",\"connect_ms\":%.3f}\n", head,
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());

    // Correctness: every rank must end with 1 + 2 + ... + world.
    std::vector<float> check(1000, static_cast<float>(rank + 1));
    impl->allreduce(check.data(), check.size());
    const float want = static_cast<float>(world * (world + 1) / 2);
    const bool ok = std::all_of(check.begin(), check.end(), [&](float v) { return v == want; });
    std::printf("%s,\"op\":\"check\",\"ok\":%s}\n", head, ok ? "true" : "false");
    if (!ok) return 3;

    const size_t max_bytes = opt.sizes.empty() ? 4 : *std::max_element(opt.sizes.begin(), opt.sizes.end());
    std::vector<float> buf(max_bytes / 4, 0.0f);  // value-initialised: every page touched

    auto emit = [&](const char* op, size_t bytes, size_t iters, const Stats& s) {
      std::printf(
          "%s,\"op\":\"%s\",\"bytes\":%zu,\"iters\":%zu,\"median_us\":%.3f,\"p90_us\":%.3f,\"min_us\":%.3f,"
          "\"mean_us\":%.3f,\"algbw_GBps\":%.4f}\n",
          head, op, bytes, iters, s.median_us, s.p90_us, s.min_us, s.mean_us,
          bytes ? bytes / (s.median_us * 1e3) : 0.0);
    };

    if (opt.barrier_iters > 0) {
      for (size_t i = 0; i < opt.warmup; ++i) impl->barrier();
      emit("barrier", 0, opt.barrier_iters, stats(time_each(opt.barrier_iters, [&] { impl->barrier(); })));
    }
    for (size_t bytes : opt.sizes) {
      const size_t count = bytes / 4;
      const size_t iters = std::clamp(opt.target_bytes / bytes, opt.min_iters, std::max(opt.min_iters, opt.iters));
      const size_t warm = std::min(opt.warmup, std::max<size_t>(1, iters / 4));
      impl->barrier();
      for (size_t i = 0; i < warm; ++i) impl->allreduce(buf.data(), count);
      impl->barrier();
      emit("allreduce", bytes, iters, stats(time_each(iters, [&] { impl->allreduce(buf.data(), count); })));
    }
    impl->barrier();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg) {
      if (c == '"' || c == '\\' || c == '\n') c = ' ';
    }
    std::printf("%s,\"op\":\"error\",\"message\":\"%s\"}\n", head, msg.c_str());
    return 3;
  }
  return 0;
}
