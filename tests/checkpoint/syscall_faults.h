/* SPDX-License-Identifier: Apache-2.0 */
// Fault injection for the checkpoint writer's system calls, by symbol
// interposition: this test executable defines write, pwrite, fsync,
// fdatasync, rename and renameat itself (it is linked with -rdynamic), so
// libmlos.so's calls resolve here first and reach the C library through
// dlsym(RTLD_NEXT). Unarmed, every call is forwarded unchanged.
//
// Only calls on files under the watched directory (decided from
// /proc/self/fd/N for descriptors, from the path for renames) are counted,
// logged or failed.
#pragma once

#include <string>
#include <vector>

namespace faults {

enum class Op { kWrite, kFsync, kFdatasync, kRename };
enum class Target {
  kFileInDir,      // a file inside the watched directory
  kDirectoryItself // the watched directory's own descriptor (its fsync)
};

struct Call {
  Op op;
  std::string path;  // the file (for renames: the source path)
};

// Starts watching `dir` (absolute, no trailing slash) and clears the log.
void watch(const std::string& dir);
// Stops watching and disarms everything.
void reset();

// The `nth` (1-based, counted from now) call of `op` on `target` fails with
// `err` without reaching the kernel. Fires once.
void fail_nth(Op op, Target target, int nth, int err);
// The `nth` write to a file in the directory writes only half its bytes (a
// short write), once.
void short_write_nth(int nth);
// Every `op` call on `target` blocks until release_gate().
void gate(Op op, Target target);
void release_gate();
// Whether a call is blocked at the gate now.
bool gate_holds_a_call();

// Calls on the watched directory since watch(), in order.
std::vector<Call> calls();
bool fired();  // the armed failure has happened

}  // namespace faults
