// SPDX-License-Identifier: Apache-2.0
// What phase hints buy, on their own: two jobs share one CPU. A trainer
// computes (FORWARD, BACKWARD, OPTIMIZER steps, in a thread it creates after
// its request, as torch creates its intra-op pool); next to it a second job
// loads data (reads a file from disk and decodes it: DATA_LOADING) and then
// checkpoints (serialises, writes, fdatasync: CHECKPOINT). Neither binds a
// thread: the phases reach their threads as the job's whole thread set.
//
// Configurations, interleaved per repetition with the order rotated:
//   ignored   both programs run the same code without calling set_phase;
//   honoured  both call set_phase (the default phase table);
//   literal   as honoured, but the loader's DATA_LOADING is the API page's
//             literal "Low priority I/O": normal CPU (it marks FORWARD) and
//             the lowest best-effort I/O level (set by hand, ioprio_set).
// Reported per configuration (medians over repetitions): the trainer's
// steps/s while the other job loads and while it checkpoints, and how long
// the load and the checkpoint took. Ratios are taken against "ignored".
//
//   mlos_phase_scenario [--quick] [--reps N] [--dir DIR]   (JSON on stdout)
// --quick: tiny amounts, one repetition, for CI (numbers meaningless).
#include <fcntl.h>
#include <mlos/training.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Amounts {
  int step_units;   // one training step = 3.5x this
  int load_units;   // decode work of the whole load
  int ckpt_units;   // serialise work of the checkpoint
  size_t io_bytes;  // read by the load, written by the checkpoint
};

constexpr int kMaxSteps = 1 << 16;

// Shared between the parent and both children (MAP_SHARED before fork).
struct Shared {
  std::atomic<int> trainer_ready, go, stop, loader_done;
  std::atomic<int> steps;
  uint64_t step_end_ns[kMaxSteps];
  uint64_t load_start_ns, load_end_ns, ckpt_end_ns;
};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}

// CPU work that the compiler cannot remove: `units` x 200k xorshift rounds.
uint64_t work(int units, uint64_t seed = 88172645463325252ull) {
  uint64_t x = seed | 1;
  for (long i = 0; i < long(units) * 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

enum class Config { kIgnored, kHonoured, kLiteral };
const char* name(Config c) { return c == Config::kIgnored ? "ignored" : c == Config::kHonoured ? "honoured" : "literal"; }

void pin_process(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

mlos_training_resources_t* request() {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) {
    fprintf(stderr, "request: %s\n", mlos_last_error_message());
    _exit(3);
  }
  return res;
}

struct Ctx {
  Shared* sh;
  mlos_training_resources_t* res;
  Config config;
  Amounts a;
  std::string data, ckpt;
  uint64_t sink;
};

void mark(Ctx* c, mlos_training_phase_t p) {
  if (c->config != Config::kIgnored) mlos_training_set_phase(c->res, p);
}

void* trainer_thread(void* arg) {
  auto* c = static_cast<Ctx*>(arg);
  c->sh->trainer_ready = 1;
  while (!c->sh->stop) {
    mark(c, MLOS_TRAINING_PHASE_FORWARD);
    c->sink += work(c->a.step_units);
    mark(c, MLOS_TRAINING_PHASE_BACKWARD);
    c->sink += work(2 * c->a.step_units);
    mark(c, MLOS_TRAINING_PHASE_OPTIMIZER);
    c->sink += work((c->a.step_units + 1) / 2);
    int n = c->sh->steps.load();
    if (n < kMaxSteps) {
      c->sh->step_end_ns[n] = now_ns();
      c->sh->steps = n + 1;
    }
  }
  return nullptr;
}

void* loader_thread(void* arg) {
  auto* c = static_cast<Ctx*>(arg);
  while (!c->sh->go) usleep(1000);
  std::vector<char> buf(1 << 20);
  c->sh->load_start_ns = now_ns();
  if (c->config == Config::kLiteral) {
    mark(c, MLOS_TRAINING_PHASE_FORWARD);  // normal CPU
    syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 7);  // best effort, lowest level
  } else {
    mark(c, MLOS_TRAINING_PHASE_DATA_LOADING);
  }
  int fd = open(c->data.c_str(), O_RDONLY);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // read from the disk, not the page cache
  const int chunks = int(c->a.io_bytes / buf.size());
  for (int i = 0; i < chunks; ++i) {
    if (read(fd, buf.data(), buf.size()) <= 0) break;
    c->sink += work(c->a.load_units / chunks, uint64_t(buf[i % buf.size()]));  // "decode"
  }
  close(fd);
  c->sh->load_end_ns = now_ns();
  mark(c, MLOS_TRAINING_PHASE_CHECKPOINT);
  fd = open(c->ckpt.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  for (int i = 0; i < chunks; ++i) {
    c->sink += work(c->a.ckpt_units / chunks, c->sink);  // "serialise"
    memset(buf.data(), int(c->sink), buf.size());
    if (write(fd, buf.data(), buf.size()) < 0) break;
  }
  fdatasync(fd);
  close(fd);
  c->sh->ckpt_end_ns = now_ns();
  mark(c, MLOS_TRAINING_PHASE_IDLE);
  c->sh->loader_done = 1;
  return nullptr;
}

// One child: pins itself to `cpu`, requests, starts its working thread
// after the request, waits for it.
pid_t spawn(Shared* sh, int cpu, Config config, const Amounts& a, bool trainer, const std::string& dir) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  pin_process(cpu);
  Ctx c{sh, request(), config, a, dir + "/data", dir + "/ckpt", 0};
  pthread_t t;
  pthread_create(&t, nullptr, trainer ? trainer_thread : loader_thread, &c);
  pthread_join(t, nullptr);
  mlos_training_release_resources(c.res);
  _exit(c.sink == 42 ? 1 : 0);
}

struct Run {
  double load_steps_per_s, ckpt_steps_per_s, load_s, ckpt_s;
};

Run run_pair(Config config, const Amounts& a, int cpu, const std::string& dir) {
  auto* sh = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t trainer = spawn(sh, cpu, config, a, true, dir);
  while (!sh->trainer_ready) usleep(1000);
  pid_t loader = spawn(sh, cpu, config, a, false, dir);
  usleep(20000);  // the trainer runs a few steps alone first
  sh->go = 1;
  while (!sh->loader_done) usleep(1000);
  sh->stop = 1;
  waitpid(loader, nullptr, 0);
  waitpid(trainer, nullptr, 0);
  auto rate = [&](uint64_t from, uint64_t to) {
    int n = 0;
    for (int i = 0; i < sh->steps; ++i) n += sh->step_end_ns[i] > from && sh->step_end_ns[i] <= to;
    return n / ((to - from) / 1e9);
  };
  Run r{rate(sh->load_start_ns, sh->load_end_ns), rate(sh->load_end_ns, sh->ckpt_end_ns),
        (sh->load_end_ns - sh->load_start_ns) / 1e9, (sh->ckpt_end_ns - sh->load_end_ns) / 1e9};
  munmap(sh, sizeof(Shared));
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The I/O scheduler of the disk under `dir`: I/O priorities act only under
// bfq (and, by class only, mq-deadline); "none" ignores them.
std::string io_scheduler(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return "?";
  std::string base = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  for (const char* rel : {"/queue/scheduler", "/../queue/scheduler"}) {
    std::ifstream in(base + rel);
    std::string line;
    if (std::getline(in, line)) {
      auto l = line.find('['), r = line.find(']');
      return l != std::string::npos && r != std::string::npos ? line.substr(l + 1, r - l - 1) : line;
    }
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 5;
  std::string dir = ".";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true, reps = 1;
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, atoi(argv[++i]));
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--quick] [--reps N] [--dir DIR]\n", argv[0]);
      return 2;
    }
  }
  const Amounts a = quick ? Amounts{1, 8, 4, 1 << 20} : Amounts{10, 1500, 750, size_t(64) << 20};
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpu = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) if (CPU_ISSET(c, &allowed)) cpu = c;
  {
    std::vector<char> chunk(1 << 20, 'x');
    int fd = open((dir + "/data").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
      fprintf(stderr, "cannot write %s/data: %s\n", dir.c_str(), strerror(errno));
      return 1;
    }
    for (size_t w = 0; w < a.io_bytes; w += chunk.size()) (void)!write(fd, chunk.data(), chunk.size());
    fsync(fd);
    close(fd);
  }
  const Config configs[] = {Config::kIgnored, Config::kHonoured, Config::kLiteral};
  std::vector<Run> runs[3];
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < 3; ++k) {
      int i = (k + rep) % 3;  // interleaved, order rotated
      runs[i].push_back(run_pair(configs[i], a, cpu, dir));
      fprintf(stderr, "rep %d %s: load %.3f s, ckpt %.3f s, trainer %.1f / %.1f steps/s\n", rep + 1,
              name(configs[i]), runs[i].back().load_s, runs[i].back().ckpt_s, runs[i].back().load_steps_per_s,
              runs[i].back().ckpt_steps_per_s);
    }
  }
  unlink((dir + "/data").c_str());
  unlink((dir + "/ckpt").c_str());
  printf("{\"quick\": %s, \"reps\": %d, \"shared_cpu\": %d, \"io_scheduler\": \"%s\", \"io_mib\": %zu,\n",
         quick ? "true" : "false", reps, cpu, io_scheduler(dir).c_str(), a.io_bytes >> 20);
  printf(" \"configs\": {");
  double base[4] = {};
  for (int i = 0; i < 3; ++i) {
    auto col = [&](double Run::*f) {
      std::vector<double> v;
      for (const Run& r : runs[i]) v.push_back(r.*f);
      return v;
    };
    double m[4] = {median(col(&Run::load_steps_per_s)), median(col(&Run::ckpt_steps_per_s)),
                   median(col(&Run::load_s)), median(col(&Run::ckpt_s))};
    if (i == 0) std::copy(m, m + 4, base);
    auto list = [&](double Run::*f) {
      std::string s = "[";
      for (double x : col(f)) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
      return s + "]";
    };
    printf("%s\n  \"%s\": {\"trainer_steps_per_s_during_load\": %s, \"trainer_steps_per_s_during_checkpoint\": %s, "
           "\"load_s\": %s, \"checkpoint_s\": %s,\n   \"median\": {\"trainer_steps_per_s_during_load\": %.3f, "
           "\"trainer_steps_per_s_during_checkpoint\": %.3f, \"load_s\": %.4f, \"checkpoint_s\": %.4f},\n"
           "   \"ratio_to_ignored\": {\"trainer_steps_per_s_during_load\": %.3f, "
           "\"trainer_steps_per_s_during_checkpoint\": %.3f, \"load_s\": %.3f, \"checkpoint_s\": %.3f}}",
           i ? "," : "", name(configs[i]), list(&Run::load_steps_per_s).c_str(),
           list(&Run::ckpt_steps_per_s).c_str(), list(&Run::load_s).c_str(), list(&Run::ckpt_s).c_str(), m[0], m[1],
           m[2], m[3], base[0] ? m[0] / base[0] : 0, base[1] ? m[1] / base[1] : 0, m[2] / base[2], m[3] / base[3]);
  }
  printf("}}\n");
  return 0;
}
