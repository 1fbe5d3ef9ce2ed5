/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA driver calls that collectives on device buffers need, from the
// libcuda.so.1 the process has already loaded. A process that has not
// loaded the driver holds no device memory, so libmlos never loads it (or
// initialises CUDA) by itself: a CPU-only program pays one dlopen(RTLD_NOLOAD)
// per call until it does.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <cuda.h>

#include "collectives/device_buffer.h"
#include "core/status.h"

namespace mlos::collectives {

class CudaDriver {
 public:
  // The process's driver, or null while it has loaded none. Never fails
  // otherwise: a driver lacking a function answers "host memory" below.
  static const CudaDriver* loaded();

  // find_device_buffer's answer, from this driver.
  std::optional<DeviceBuffer> device_buffer(const void* data) const;

  // Synchronous copies (they follow earlier work on the legacy default
  // stream, as cuMemcpy does). Errors: SYSTEM with the driver's message.
  Status copy_to_host(void* host, const void* device, size_t bytes) const;
  Status copy_to_device(void* device, const void* host, size_t bytes) const;
  // Registers host memory as pinned (portable), so the copies above are
  // DMA from it. UNSUPPORTED with the driver's reason when refused.
  Status register_host(void* host, size_t bytes) const;
  void unregister_host(void* host) const;

  // Makes `context` current on this thread until the scope ends.
  class ScopedContext {
   public:
    ScopedContext(const CudaDriver& driver, void* context);
    ~ScopedContext();
    ScopedContext(const ScopedContext&) = delete;
    ScopedContext& operator=(const ScopedContext&) = delete;
    const Status& status() const { return status_; }

   private:
    const CudaDriver& driver_;
    Status status_;
  };

  // An event recorded on the legacy default stream after the work issued
  // so far; done() polls it (true, false, or the driver's error).
  class Marker {
   public:
    explicit Marker(const CudaDriver& driver);
    ~Marker();
    Marker(const Marker&) = delete;
    Marker& operator=(const Marker&) = delete;
    Status record();
    Result<bool> done() const;

   private:
    const CudaDriver& driver_;
    CUevent event_ = nullptr;
  };

  Error error(CUresult r, const std::string& what) const;

 private:
  CudaDriver() = default;
  bool load(void* library);

  CUresult (*init_)(unsigned) = nullptr;
  CUresult (*get_error_string_)(CUresult, const char**) = nullptr;
  CUresult (*pointer_attribute_)(void*, CUpointer_attribute, CUdeviceptr) = nullptr;
  CUresult (*device_get_)(CUdevice*, int) = nullptr;
  CUresult (*device_uuid_)(CUuuid*, CUdevice) = nullptr;
  CUresult (*copy_dtoh_)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*copy_htod_)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*host_register_)(void*, size_t, unsigned) = nullptr;
  CUresult (*host_unregister_)(void*) = nullptr;
  CUresult (*push_)(CUcontext) = nullptr;
  CUresult (*pop_)(CUcontext*) = nullptr;
  CUresult (*event_create_)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record_)(CUevent, CUstream) = nullptr;
  CUresult (*event_query_)(CUevent) = nullptr;
  CUresult (*event_destroy_)(CUevent) = nullptr;
};

}  // namespace mlos::collectives
