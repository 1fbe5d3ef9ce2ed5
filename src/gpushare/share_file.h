/* SPDX-License-Identifier: Apache-2.0 */
// The GPU share file: one small file per job, mapped shared by every process
// of the job that loads the interposer (libmlos-gpushare.so), and read by
// mlosd for the job's accounting. It holds the job's limits (device memory
// per GPU, compute share) and, per process, what that process allocated on
// each GPU through the interposer and how long its launches waited.
//
// Who writes what: the creator (mlos run, or mlosd for its jobs) writes the
// header once; processes of the job write only their own slot, under the
// file's process-shared robust mutex. Readers outside the job (mlosd, mlos
// status) copy the file and validate it (ShareFileView): the job's own
// processes can write anything into it, so nothing in it is trusted beyond
// "what the job says about itself".
//
// The layout is fixed-size and versioned (magic, version, size): a file of
// another version is refused, never misread.
#pragma once

#include <pthread.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlos::gpushare {

inline constexpr uint32_t kShareFileMagic = 0x53474c4d;  // "MLGS"
inline constexpr uint32_t kShareFileVersion = 1;
inline constexpr int kMaxShareDevices = 16;
inline constexpr int kMaxShareProcesses = 128;
inline constexpr size_t kShareUuidSize = 48;  // "GPU-" + 36 + NUL, with room

struct ShareDevice {
  char uuid[kShareUuidSize];  // as NVML writes it: "GPU-xxxxxxxx-...", "" = unused
};

struct ShareSlot {
  int32_t pid;          // 0 = free
  uint32_t reserved;
  uint64_t start_time;  // /proc/<pid>/stat field 22: tells a reused pid apart
  uint64_t used[kMaxShareDevices];  // bytes held through the interposer, per device entry
  uint64_t refused;       // allocations refused by the memory cap
  uint64_t launches;      // kernel and graph launches
  uint64_t throttled_ns;  // time launches waited for the compute share
};

struct ShareHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t size;            // sizeof(ShareFileLayout)
  uint32_t share_percent;   // compute share per GPU, 1..100; 0 = none
  uint64_t memory_limit;    // bytes per GPU; 0 = no cap
  char mechanism[32];       // what enforces the share: "throttle", "mps", "" = not yet started
  char utilization_source[48];  // the throttle's figure: "nvml-process", "nvml-device", "none: <why>"
};

struct ShareFileLayout {
  ShareHeader header;
  pthread_mutex_t lock;  // process-shared, robust; guards devices and slots
  ShareDevice devices[kMaxShareDevices];
  ShareSlot slots[kMaxShareProcesses];
};

struct ShareLimits {
  uint64_t memory_limit = 0;  // bytes per GPU; 0 = none
  int share_percent = 0;      // 1..100; 0 = none
};

// Creates `path` (O_EXCL, mode 0600, owned by `uid`/`gid` when they are not
// -1) holding `limits` and no processes. Empty string on success, else why.
std::string create_share_file(const std::string& path, const ShareLimits& limits, int uid = -1, int gid = -1);

// Whether the job's own process may trust the share file `st` describes
// (fstat of the descriptor it is about to map): a regular file with one
// link, of the layout's size, owned by `user` or root and writable by
// neither group nor others. The file holds the job's limits and the
// mutex whose robust-list pointers glibc writes through, so a file
// another user could have made or can write is never mapped. "" when
// trusted, else why, naming `path`.
std::string untrusted_share_file_reason(const std::string& path, const struct stat& st, uid_t user);

// A validated copy of a share file, as readers outside the job see it.
struct ShareUsage {
  std::string uuid;
  uint64_t used = 0;  // bytes, summed over the live processes
};
struct ShareFileView {
  ShareLimits limits;
  std::string mechanism;
  std::string utilization_source;
  std::vector<ShareUsage> devices;  // those with a UUID
  int processes = 0;                // slots in use
  uint64_t refused = 0;
  uint64_t launches = 0;
  uint64_t throttled_ns = 0;
};
// Reads and validates `path` (O_NOFOLLOW, a regular file of exactly the
// layout's size, this magic and version). Counts only slots whose process
// `alive(pid, start_time)` says is alive; a value out of range (a device
// index, a share over 100) makes the whole file invalid. nullopt with
// `*why` set when the file cannot be used.
// With `owner_uid` >= 0 the file must belong to that uid. mlosd reads as
// root a path a client named, which the client may not be able to reach:
// a path that names no such file of that uid's, whether missing, a link,
// not a regular file, of another size or another user's, gets one answer,
// "<path>: not a GPU share file of the job's user", which tells nothing
// of what is there. Only a file of that uid's says more (its format).
std::optional<ShareFileView> read_share_file(const std::string& path, std::string* why,
                                             bool (*alive)(int pid, uint64_t start_time), int owner_uid = -1);

}  // namespace mlos::gpushare
