// SPDX-License-Identifier: Apache-2.0
#include <linux/capability.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "os/kernel.h"

namespace mlos::os {

namespace {

constexpr int kIoprioWhoProcess = 1;  // IOPRIO_WHO_PROCESS: a thread id
constexpr int kMaxNodeBits = 1024;    // node mask width we pass to the kernel

int code_for(int err) {
  switch (err) {
    case EPERM:
    case EACCES:
      return MLOS_ERR_PERMISSION;
    case ESRCH:
      return MLOS_ERR_NO_SUCH_THREAD;
    default:
      return MLOS_ERR_SYSTEM;
  }
}

Error fail(const std::string& what, pid_t tid) {
  int err = errno;
  return make_sys_error(err, what + " for thread " + std::to_string(tid), code_for(err));
}

class LinuxKernel final : public Kernel {
 public:
  Result<CpuSet> affinity(pid_t tid) override {
    for (int ncpu = 1024;; ncpu *= 2) {
      cpu_set_t* set = CPU_ALLOC(ncpu);
      size_t size = CPU_ALLOC_SIZE(ncpu);
      if (sched_getaffinity(tid, size, set) == 0) {
        CpuSet out;
        for (int c = 0; c < ncpu; ++c) {
          if (CPU_ISSET_S(c, size, set)) out.set(c);
        }
        CPU_FREE(set);
        return out;
      }
      int err = errno;
      CPU_FREE(set);
      if (err != EINVAL || ncpu >= (1 << 20)) {
        errno = err;
        return fail("sched_getaffinity", tid);
      }
    }
  }

  Status set_affinity(pid_t tid, const CpuSet& cpus) override {
    int ncpu = std::max(cpus.extent(), 1);
    cpu_set_t* set = CPU_ALLOC(ncpu);
    size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    for (int c : cpus.to_vector()) CPU_SET_S(c, size, set);
    int rc = sched_setaffinity(tid, size, set);
    int err = errno;
    CPU_FREE(set);
    if (rc != 0) {
      errno = err;
      return fail("sched_setaffinity(" + cpus.to_list() + ")", tid);
    }
    return Status::Ok();
  }

  Result<int> nice(pid_t tid) override {
    errno = 0;
    int n = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (n == -1 && errno != 0) return fail("getpriority", tid);
    return n;
  }

  Status set_nice(pid_t tid, int nice) override {
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0) {
      return fail("setpriority(nice " + std::to_string(nice) + ")", tid);
    }
    return Status::Ok();
  }

  Result<IoPriority> io_priority(pid_t tid) override {
    long raw = syscall(SYS_ioprio_get, kIoprioWhoProcess, tid);
    if (raw < 0) return fail("ioprio_get", tid);
    return IoPriority::decode(static_cast<int>(raw));
  }

  Status set_io_priority(pid_t tid, IoPriority prio) override {
    if (syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, prio.encode()) != 0) {
      return fail("ioprio_set(class " + std::to_string(prio.io_class) + " level " + std::to_string(prio.level) + ")",
                  tid);
    }
    return Status::Ok();
  }

  Result<std::vector<pid_t>> process_threads() override {
    DIR* dir = opendir("/proc/self/task");
    if (dir == nullptr) return make_sys_error(errno, "opendir /proc/self/task");
    std::vector<pid_t> out;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      out.push_back(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
    }
    closedir(dir);
    return out;
  }

  std::string thread_name(pid_t tid) override {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
  }

  Result<MemoryPolicy> memory_policy() override {
    std::vector<unsigned long> mask(kMaxNodeBits / (8 * sizeof(unsigned long)), 0);
    int mode = 0;
    if (syscall(SYS_get_mempolicy, &mode, mask.data(), kMaxNodeBits + 1, nullptr, 0) != 0) {
      return fail("get_mempolicy", current_tid());
    }
    MemoryPolicy p;
    p.mode = mode & ~(MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES);
    for (int n = 0; n < kMaxNodeBits; ++n) {
      if (mask[n / (8 * sizeof(unsigned long))] >> (n % (8 * sizeof(unsigned long))) & 1) p.nodes.set(n);
    }
    return p;
  }

  Status set_memory_policy(const MemoryPolicy& policy) override {
    std::vector<unsigned long> mask(kMaxNodeBits / (8 * sizeof(unsigned long)), 0);
    for (int n : policy.nodes.to_vector()) {
      if (n >= kMaxNodeBits) return make_error(MLOS_ERR_INVALID_ARGUMENT, "NUMA node index too large");
      mask[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
    }
    const bool no_nodes = policy.mode == MPOL_DEFAULT || policy.nodes.empty();
    if (syscall(SYS_set_mempolicy, policy.mode, no_nodes ? nullptr : mask.data(),
                no_nodes ? 0 : kMaxNodeBits + 1) != 0) {
      return fail("set_mempolicy(mode " + std::to_string(policy.mode) + ", nodes " + policy.nodes.to_list() + ")",
                  current_tid());
    }
    return Status::Ok();
  }

  Result<void*> map_prefaulted(size_t bytes) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      return make_sys_error(err, "mmap of " + std::to_string(bytes) + " bytes", MLOS_ERR_NO_MEMORY);
    }
    return p;
  }

  Result<void*> map_locked(size_t bytes) override {
    auto mapped = map_prefaulted(bytes);
    if (!mapped) return mapped;
    void* p = *mapped;
    Status locked = lock(p, bytes);
    if (!locked) {
      munmap(p, bytes);
      return locked.error();
    }
    return p;
  }

  Status unmap(void* addr, size_t bytes) override {
    if (munmap(addr, bytes) != 0) return make_sys_error(errno, "munmap");
    return Status::Ok();
  }

  Status lock(void* addr, size_t bytes) override {
    if (mlock(addr, bytes) != 0) {
      int err = errno;
      struct rlimit rl {};
      getrlimit(RLIMIT_MEMLOCK, &rl);
      std::string limit = rl.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(rl.rlim_cur) + " bytes";
      return make_sys_error(err,
                            "mlock of " + std::to_string(bytes) + " bytes (RLIMIT_MEMLOCK " + limit +
                                "; raise it or grant CAP_IPC_LOCK)",
                            (err == EPERM || err == ENOMEM || err == EAGAIN) ? MLOS_ERR_LOCK_LIMIT : MLOS_ERR_SYSTEM);
    }
    return Status::Ok();
  }

  Status unlock(void* addr, size_t bytes) override {
    if (munlock(addr, bytes) != 0) return make_sys_error(errno, "munlock");
    return Status::Ok();
  }

  int lowest_permitted_nice() override {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) == 0 && (data[0].effective & (1u << CAP_SYS_NICE))) return -20;
    struct rlimit rl {};
    if (getrlimit(RLIMIT_NICE, &rl) != 0) return 20;
    long lim = rl.rlim_cur == RLIM_INFINITY ? 40 : static_cast<long>(rl.rlim_cur);
    return static_cast<int>(std::max(-20L, 20 - std::min(lim, 40L)));
  }

  pid_t current_tid() override { return static_cast<pid_t>(syscall(SYS_gettid)); }
  size_t page_size() override { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
};

}  // namespace

MemoryPolicy memory_policy_for(mlos_memory_policy_t policy, const std::vector<int>& nodes) {
  MemoryPolicy p;
  p.mode = policy == MLOS_MEMPOLICY_BIND ? MPOL_BIND : policy == MLOS_MEMPOLICY_INTERLEAVE ? MPOL_INTERLEAVE : MPOL_PREFERRED;
  for (int n : nodes) p.nodes.set(n);
  return p;
}

Kernel& linux_kernel() {
  static LinuxKernel k;
  return k;
}

}  // namespace mlos::os
