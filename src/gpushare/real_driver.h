/* SPDX-License-Identifier: Apache-2.0 */
// The real CUDA driver behind the interposer: libcuda.so.1 as the program
// itself loads it (the same soname search, so a test's fake driver on
// LD_LIBRARY_PATH is found the same way), and glibc's own dlsym, since the
// interposer replaces the program's.
#pragma once

namespace mlos::gpushare {

// glibc's dlsym (the interposer exports its own).
void* real_dlsym(void* handle, const char* symbol);
// `name` exactly as libcuda.so.1 exports it (cuMemAlloc_v2, cuLaunchKernel_ptsz);
// nullptr when the driver cannot be loaded or lacks it.
void* real_driver_symbol(const char* name);
// glibc's dlsym's address (what the interposer's dlsym trampoline jumps to).
void* glibc_dlsym_address();

}  // namespace mlos::gpushare
