// SPDX-License-Identifier: Apache-2.0
#include "tune/launch_candidates.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mlos::tune {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// argv0 as execvp would find it ("" if not found).
std::string resolve(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string candidate = (d.empty() ? "." : d) + "/" + argv0;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool shebang_names_python(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char head[2] = {};
  if (!in.read(head, 2) || head[0] != '#' || head[1] != '!') return false;
  std::string line;
  std::getline(in, line);
  return line.size() < 512 && line.find("python") != std::string::npos;
}

const LaunchCandidate kGlibc{"glibc", "", {}};
const LaunchCandidate kTcmalloc{"tcmalloc", "tcmalloc", {}};
// glibc's malloc, kept from giving memory back: by default it serves
// blocks over 128 KiB (raised as they are freed, up to 32 MiB) with mmap and
// returns them with munmap, so a training step that frees and reallocates
// its activations pays fresh zeroed pages, one fault per 4 KiB, every
// step. The largest threshold glibc accepts, and no trimming of the heap
// top, keep them in the heap for reuse.
const LaunchCandidate kGlibcRetain{
    "glibc-retain", "", {{"GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"}}};
// tcmalloc, and OpenMP threads that sleep at once when a parallel region
// ends instead of spinning for it (libgomp spins up to 300,000 rounds,
// Intel's runtime 200 ms). Spinning wins when nothing else wants the CPUs
// (the small CNN on tensors lost 25 % without it here) and loses when
// DataLoader workers decode on the same CPUs (the same CNN fed from JPEGs
// gained 12-20 %), which only the command's own runs can tell apart.
const LaunchCandidate kTcmallocOmpPassive{"tcmalloc+omp-passive", "tcmalloc", {{"OMP_WAIT_POLICY", "passive"}}};
// The options PyTorch's CPU launcher gives jemalloc
// (torch.backends.xeon.run_cpu): large allocations in their own extents,
// purging on a background thread, metadata on huge pages.
const LaunchCandidate kJemalloc{
    "jemalloc", "jemalloc", {{"MALLOC_CONF", "oversize_threshold:1,background_thread:true,metadata_thp:auto"}}};

}  // namespace

CommandKind classify_command(const std::vector<std::string>& argv) {
  if (argv.empty()) return CommandKind::kOther;
  const std::string name = base_name(argv.front());
  if (name.rfind("python", 0) == 0 || name == "torchrun" || name == "yolo") return CommandKind::kPython;
  const std::string file = resolve(argv.front());
  return !file.empty() && shebang_names_python(file) ? CommandKind::kPython : CommandKind::kOther;
}

const char* command_kind_name(CommandKind kind) { return kind == CommandKind::kPython ? "Python" : "other"; }

std::vector<LaunchCandidate> candidates_for(CommandKind kind) {
  if (kind == CommandKind::kPython) return {kTcmalloc, kTcmallocOmpPassive, kGlibcRetain, kGlibc, kJemalloc};
  return {kGlibc, kTcmalloc, kGlibcRetain};
}

}  // namespace mlos::tune
