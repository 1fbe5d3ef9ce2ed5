// SPDX-License-Identifier: Apache-2.0
// Checkpoint writer benchmark (not a test): how long the training loop is
// stalled per checkpoint, and the writer's throughput against the disk's own
// sequential write rate, all measured in the same run.
//
// For each size, interleaved repetitions (the order of the methods rotates
// each round), medians:
//   plain      open + write() in 64 MiB calls + fsync + close, no mlOS: the
//              disk's sequential write rate with fsync, and the stall a
//              hand-written synchronous save costs
//   sync       mlos_checkpoint_save (tmp file, fdatasync, rename, dir fsync)
//   async      mlos_checkpoint_save_async: the stall is the copy into locked
//              staging memory; the throughput is from the call to the end of
//              mlos_checkpoint_wait
// Each size has its own writer (prefix), keep_last 1, as a training job
// saving same-size checkpoints would: every timed save also deletes the
// previous checkpoint of its size. Staging memory is allocated (and locked)
// by one warm-up save per writer before timing; that one-time cost is
// printed separately.
//
// Run: build/bin/mlos_checkpoint_bench [DIR] [REPS] [SIZES_MIB...]
//      (MLOS_CHECKPOINT_BENCH_KEEP_LAST=N: keep N checkpoints per size, not 1)
//      (defaults: a new directory under the current one, 5, 16 64 256)
#include <fcntl.h>
#include <mlos/checkpoint.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMiB = 1 << 20;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void check(int rc, const char* what) {
  if (rc != MLOS_OK) {
    std::fprintf(stderr, "%s: %s (%s)\n", what, mlos_strerror(rc), mlos_last_error_message());
    std::exit(1);
  }
}

// The baseline: what an application would write by hand.
double plain_write_fsync(const std::string& path, const unsigned char* data, size_t size) {
  const auto t0 = Clock::now();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::exit(1);
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, std::min<size_t>(64 * kMiB, size - done));
    if (n <= 0) std::exit(1);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) std::exit(1);
  const double s = seconds_since(t0);
  unlink(path.c_str());
  return s;
}

struct Samples {
  std::vector<double> plain, sync, async_stall, async_total;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<size_t> sizes_mib;
  for (int i = 3; i < argc; ++i) sizes_mib.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes_mib.empty()) sizes_mib = {16, 64, 256};
  bool made_dir = false;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::current_path() / "mlos-ckpt-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
    made_dir = true;
  }
  const size_t max_size = *std::max_element(sizes_mib.begin(), sizes_mib.end()) * kMiB;
  std::vector<unsigned char> data(max_size);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 2654435761u >> 13);

  // MLOS_CHECKPOINT_BENCH_KEEP_LAST=N keeps more files, to see what deleting
  // the previous checkpoint costs a synchronous save.
  const char* keep_env = getenv("MLOS_CHECKPOINT_BENCH_KEEP_LAST");
  const uint32_t keep_last = keep_env != nullptr ? static_cast<uint32_t>(std::atoi(keep_env)) : 1;
  std::vector<mlos_checkpoint_writer_t*> writers;
  std::vector<double> first_stalls;
  mlos_checkpoint_writer_info_t info{};
  uint64_t ticket = 0;
  auto t0 = Clock::now();
  for (size_t mib : sizes_mib) {
    const std::string prefix = "bench" + std::to_string(mib);
    mlos_checkpoint_options_t o{};
    o.struct_size = sizeof o;
    o.keep_last = keep_last;
    o.prefix = prefix.c_str();
    mlos_checkpoint_writer_t* w = nullptr;
    check(mlos_checkpoint_writer_open(dir.c_str(), &o, &w), "open");
    t0 = Clock::now();
    check(mlos_checkpoint_save_async(w, data.data(), mib * kMiB, &ticket), "warm-up save_async");
    first_stalls.push_back(seconds_since(t0));
    check(mlos_checkpoint_wait(w, ticket, -1), "warm-up wait");
    info.struct_size = sizeof info;
    check(mlos_checkpoint_writer_get_info(w, &info), "info");
    writers.push_back(w);
  }

  std::vector<Samples> samples(sizes_mib.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t s = 0; s < sizes_mib.size(); ++s) {
      const size_t size = sizes_mib[s] * kMiB;
      mlos_checkpoint_writer_t* w = writers[s];
      for (int k = 0; k < 3; ++k) {
        switch ((k + rep) % 3) {
          case 0:
            samples[s].plain.push_back(plain_write_fsync(dir + "/plain.bin", data.data(), size));
            break;
          case 1: {
            t0 = Clock::now();
            check(mlos_checkpoint_save(w, data.data(), size, nullptr), "save");
            samples[s].sync.push_back(seconds_since(t0));
            break;
          }
          case 2: {
            t0 = Clock::now();
            check(mlos_checkpoint_save_async(w, data.data(), size, &ticket), "save_async");
            samples[s].async_stall.push_back(seconds_since(t0));
            check(mlos_checkpoint_wait(w, ticket, -1), "wait");
            samples[s].async_total.push_back(seconds_since(t0));
            break;
          }
        }
      }
    }
  }
  for (auto* w : writers) check(mlos_checkpoint_writer_close(w), "close");
  if (made_dir) std::filesystem::remove_all(dir);

  std::printf("staging %s; async thread at CHECKPOINT I/O priority: %s\n",
              info.staging_locked ? "locked" : "NOT locked", info.io_priority_applied ? "yes" : "no");
  for (size_t s = 0; s < sizes_mib.size(); ++s) {
    std::printf("first save_async of %zu MiB (allocates + locks staging): %.1f ms\n", sizes_mib[s],
                first_stalls[s] * 1e3);
  }
  std::printf("medians of %d interleaved repetitions\n\n", reps);
  std::printf("| size | stall: plain write+fsync | stall: mlos save | stall: mlos save_async | "
              "async stall / plain | disk write+fsync | mlos save | mlos async (end to end) | save / disk |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < sizes_mib.size(); ++s) {
    const double mib = static_cast<double>(sizes_mib[s]);
    const double plain = median(samples[s].plain), sync = median(samples[s].sync);
    const double stall = median(samples[s].async_stall), total = median(samples[s].async_total);
    std::printf("| %zu MiB | %.1f ms | %.1f ms | %.2f ms | %.3f | %.0f MiB/s | %.0f MiB/s | %.0f MiB/s | %.2f |\n",
                sizes_mib[s], plain * 1e3, sync * 1e3, stall * 1e3, stall / plain, mib / plain, mib / sync,
                mib / total, plain / sync);
  }
  return 0;
}
