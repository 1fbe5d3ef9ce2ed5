// SPDX-License-Identifier: Apache-2.0
#include "collectives/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace mlos::collectives {

std::optional<DeviceBuffer> find_device_buffer(const void* data) {
  const CudaDriver* cuda = CudaDriver::loaded();
  return cuda ? cuda->device_buffer(data) : std::nullopt;
}

const CudaDriver* CudaDriver::loaded() {
  static std::mutex mu;
  static CudaDriver* driver = nullptr;  // never destroyed: used until exit
  std::lock_guard lock(mu);
  if (driver != nullptr) return driver;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  auto* candidate = new CudaDriver;
  if (!candidate->load(library)) {
    // A driver without the calls below (not a CUDA driver we know):
    // every buffer is then host memory, as before this file existed.
    candidate->pointer_attribute_ = nullptr;
  }
  driver = candidate;
  return driver;
}

bool CudaDriver::load(void* library) {
  auto bind = [library](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library, name));
    return fn != nullptr;
  };
  // The _v2 names are the ABI cuda.h's macros select since CUDA 3.2/4.0.
  const bool all = bind(init_, "cuInit") & bind(get_error_string_, "cuGetErrorString") &
                   bind(pointer_attribute_, "cuPointerGetAttribute") & bind(device_get_, "cuDeviceGet") &
                   bind(device_uuid_, "cuDeviceGetUuid_v2") & bind(copy_dtoh_, "cuMemcpyDtoH_v2") &
                   bind(copy_htod_, "cuMemcpyHtoD_v2") & bind(host_register_, "cuMemHostRegister_v2") &
                   bind(host_unregister_, "cuMemHostUnregister") & bind(push_, "cuCtxPushCurrent_v2") &
                   bind(pop_, "cuCtxPopCurrent_v2") & bind(event_create_, "cuEventCreate") &
                   bind(event_record_, "cuEventRecord") & bind(event_query_, "cuEventQuery") &
                   bind(event_destroy_, "cuEventDestroy_v2");
  return all && init_(0) == CUDA_SUCCESS;
}

Error CudaDriver::error(CUresult r, const std::string& what) const {
  const char* text = nullptr;
  if (get_error_string_ == nullptr || get_error_string_(r, &text) != CUDA_SUCCESS || text == nullptr) text = "?";
  return make_error(MLOS_ERR_SYSTEM, what + " failed with CUDA error " + std::to_string(static_cast<int>(r)) + " (" +
                                         text + ")");
}

std::optional<DeviceBuffer> CudaDriver::device_buffer(const void* data) const {
  if (pointer_attribute_ == nullptr || data == nullptr) return std::nullopt;
  const auto address = reinterpret_cast<CUdeviceptr>(data);
  unsigned type = 0;
  // Memory the driver does not know (plain host memory) is an error here.
  if (pointer_attribute_(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) != CUDA_SUCCESS) return std::nullopt;
  if (type != CU_MEMORYTYPE_DEVICE) return std::nullopt;
  int managed = 0;
  if (pointer_attribute_(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address) == CUDA_SUCCESS && managed) {
    return std::nullopt;
  }
  DeviceBuffer where;
  CUdevice device = 0;
  CUuuid uuid{};
  CUcontext context = nullptr;
  if (pointer_attribute_(&context, CU_POINTER_ATTRIBUTE_CONTEXT, address) == CUDA_SUCCESS) where.context = context;
  if (pointer_attribute_(&where.ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address) != CUDA_SUCCESS ||
      device_get_(&device, where.ordinal) != CUDA_SUCCESS || device_uuid_(&uuid, device) != CUDA_SUCCESS) {
    // Device memory whose device cannot be named: reduced through the
    // host like any other that cannot take the NCCL path.
    where.ordinal = -1;
  }
  for (size_t i = 0; i < where.uuid.size(); ++i) where.uuid[i] = static_cast<unsigned char>(uuid.bytes[i]);
  return where;
}

Status CudaDriver::copy_to_host(void* host, const void* device, size_t bytes) const {
  const CUresult r = copy_dtoh_(host, reinterpret_cast<CUdeviceptr>(device), bytes);
  return r == CUDA_SUCCESS ? Status::Ok() : Status(error(r, "cuMemcpyDtoH"));
}

Status CudaDriver::copy_to_device(void* device, const void* host, size_t bytes) const {
  const CUresult r = copy_htod_(reinterpret_cast<CUdeviceptr>(device), host, bytes);
  return r == CUDA_SUCCESS ? Status::Ok() : Status(error(r, "cuMemcpyHtoD"));
}

Status CudaDriver::register_host(void* host, size_t bytes) const {
  const CUresult r = host_register_(host, bytes, CU_MEMHOSTREGISTER_PORTABLE);
  if (r == CUDA_SUCCESS) return Status::Ok();
  Error e = error(r, "cuMemHostRegister");
  e.code = MLOS_ERR_UNSUPPORTED;
  return e;
}

void CudaDriver::unregister_host(void* host) const { (void)host_unregister_(host); }

CudaDriver::ScopedContext::ScopedContext(const CudaDriver& driver, void* context) : driver_(driver) {
  const CUresult r = driver_.push_(static_cast<CUcontext>(context));
  if (r != CUDA_SUCCESS) status_ = driver_.error(r, "cuCtxPushCurrent");
}

CudaDriver::ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  if (status_) (void)driver_.pop_(&popped);
}

CudaDriver::Marker::Marker(const CudaDriver& driver) : driver_(driver) {}

CudaDriver::Marker::~Marker() {
  if (event_ != nullptr) (void)driver_.event_destroy_(event_);
}

Status CudaDriver::Marker::record() {
  if (event_ == nullptr) {
    const CUresult r = driver_.event_create_(&event_, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
      event_ = nullptr;
      return driver_.error(r, "cuEventCreate");
    }
  }
  const CUresult r = driver_.event_record_(event_, nullptr);  // the legacy default stream
  return r == CUDA_SUCCESS ? Status::Ok() : Status(driver_.error(r, "cuEventRecord"));
}

Result<bool> CudaDriver::Marker::done() const {
  const CUresult r = driver_.event_query_(event_);
  if (r == CUDA_SUCCESS) return true;
  if (r == CUDA_ERROR_NOT_READY) return false;
  return driver_.error(r, "cuEventQuery");
}

}  // namespace mlos::collectives
