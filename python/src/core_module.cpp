// SPDX-License-Identifier: Apache-2.0
// mlos_training._core: a thin binding of libmlos's public C ABI. Each
// function returns the C call's code (and its outputs); the Python layer
// (mlos_training/__init__.py) turns negative codes into MLOSError with
// last_error_message(). Handles travel as integers: the library checks
// every handle against its registry, so a stale or made-up one is
// INVALID_HANDLE, never a dereference. Calls that can block (collectives)
// release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <pthread.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <mlos/checkpoint.h>
#include <mlos/collectives.h>
#include <mlos/errors.h>
#include <mlos/training.h>
#include <mlos/version.h>

#include "caller_store.h"
#include "checkpoint_binding.h"
#include "locked_memory.h"
#include "memory_callbacks.h"
#include "policy_binding.h"
#include "dataload_binding.h"
#include "text_out.h"
#include "tmm_binding.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

mlos_training_resources_t* handle(uintptr_t h) { return reinterpret_cast<mlos_training_resources_t*>(h); }

// GPUs through the options extension (docs/gpu.md); gpu_uuids is the
// comma-separated list the C API takes ("" = any).
std::pair<int, uintptr_t> request_resources(int num_cpus, size_t memory_bytes, int numa_preference,
                                            bool exclusive_cpus, int priority, int num_gpus,
                                            const std::string& gpu_uuids, bool shared_gpus) {
  mlos_training_resource_request_t req{};
  req.num_cpus = num_cpus;
  req.memory_bytes = memory_bytes;
  req.numa_node_preference = numa_preference;
  req.priority = priority;
  req.exclusive_cpus = exclusive_cpus;
  mlos_training_request_options_t options{};
  options.struct_size = sizeof options;
  options.flags = shared_gpus ? MLOS_REQUEST_SHARED_GPUS : 0;
  options.num_gpus = num_gpus;
  options.gpu_uuids = gpu_uuids.empty() ? nullptr : gpu_uuids.c_str();
  mlos_training_resources_t* res = nullptr;
  int rc;
  {
    nb::gil_scoped_release unlocked;  // may talk to mlosd
    rc = mlos_training_request_resources_ex(&req, &options, &res);
  }
  return {rc, reinterpret_cast<uintptr_t>(res)};
}

std::pair<int, std::vector<int>> get_cpus(uintptr_t h) {
  size_t count = 0;
  int rc = mlos_training_get_cpus(handle(h), nullptr, 0, &count);
  if (rc != MLOS_OK && rc != MLOS_ERR_BUFFER_TOO_SMALL) return {rc, {}};
  std::vector<int> cpus(count);
  rc = mlos_training_get_cpus(handle(h), cpus.data(), cpus.size(), &count);
  cpus.resize(rc == MLOS_OK ? count : 0);
  return {rc, cpus};
}

// (rc, cpus, recommended threads) of mlos_training_get_allowed_cpus.
std::tuple<int, std::vector<int>, int> allowed_cpus() {
  size_t count = 0;
  int threads = 0;
  int rc = mlos_training_get_allowed_cpus(nullptr, 0, &count, &threads);
  if (rc != MLOS_OK && rc != MLOS_ERR_BUFFER_TOO_SMALL) return {rc, {}, 0};
  std::vector<int> cpus(count);
  rc = mlos_training_get_allowed_cpus(cpus.data(), cpus.size(), &count, &threads);
  cpus.resize(rc == MLOS_OK ? count : 0);
  return {rc, cpus, threads};
}

std::pair<int, nb::dict> phase_profile(uintptr_t h) {
  mlos_training_phase_profile_t p{};
  p.struct_size = sizeof p;
  const int rc = mlos_training_get_phase_profile(handle(h), &p);
  nb::dict d;
  if (rc != MLOS_OK) return {rc, d};
  nb::list seconds, entries;
  for (int i = 0; i < MLOS_TRAINING_PHASE_COUNT; ++i) {
    seconds.append(p.seconds[i]);
    entries.append(p.entries[i]);
  }
  d["current_phase"] = static_cast<int>(p.current_phase);
  d["seconds"] = seconds;
  d["entries"] = entries;
  d["set_phase_calls"] = p.set_phase_calls;
  d["os_updates"] = p.os_updates;
  d["communication_seconds"] = p.communication_seconds;
  d["collective_calls"] = p.collective_calls;
  d["collective_bytes"] = p.collective_bytes;
  return {rc, d};
}

int set_store(uintptr_t h, nb::object store) {
  if (store.is_none()) return mlos_training_set_collective_store(handle(h), nullptr);
  mlos_collective_store_t s = mlos_python::caller_store(std::move(store));
  const int rc = mlos_training_set_collective_store(handle(h), &s);
  if (rc != MLOS_OK) s.release(s.user_data);  // not taken: drop our reference
  return rc;
}

std::pair<int, nb::dict> placement(uintptr_t h) {
  mlos_training_placement_t p{};
  p.struct_size = sizeof p;
  const int rc = mlos_training_get_placement(handle(h), &p);
  nb::dict d;
  if (rc != MLOS_OK) return {rc, d};
  d["num_cpus"] = p.num_cpus;
  d["numa_node"] = p.numa_node;
  d["num_numa_nodes"] = p.num_numa_nodes;
  d["exclusive"] = p.exclusive;
  d["recommended_threads"] = p.recommended_threads;
  d["memory_bytes"] = p.memory_bytes;
  d["phase"] = static_cast<int>(p.phase);
  d["degraded_effects"] = p.degraded_effects;
  d["claim_id"] = p.claim_id;
  d["bound_threads"] = p.bound_threads;
  return {rc, d};
}

// Any object with the buffer protocol (bytes, memoryview of a BytesIO...),
// written without a copy and with the GIL released. `path` is bytes
// (os.fsencode'd by the package, so file names that are not UTF-8 work).
// The package refuses a NUL byte first (MLOSError); this ValueError only
// guards direct callers of _core, since the C string would end at the NUL.
int write_file(nb::bytes path_bytes, nb::handle data) {
  const std::string path(path_bytes.c_str(), path_bytes.size());
  if (path.find('\0') != std::string::npos) throw nb::value_error("path contains a NUL byte");
  Py_buffer view;
  if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
  int rc;
  {
    nb::gil_scoped_release unlocked;
    rc = mlos_checkpoint_write_file(path.c_str(), view.buf, static_cast<size_t>(view.len));
  }
  PyBuffer_Release(&view);
  return rc;
}

int set_options(uintptr_t h, int64_t timeout_ms, const std::string& group) {
  mlos_collective_options_t o{};
  o.struct_size = sizeof o;
  o.timeout_ms = timeout_ms;
  o.group = group.empty() ? nullptr : group.c_str();
  return mlos_training_set_collective_options(handle(h), &o);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Thin binding of libmlos's C ABI; use the mlos_training package, not this module.";
  m.attr("VERSION") = MLOS_VERSION_STRING;
  m.attr("PHASE_COUNT") = MLOS_TRAINING_PHASE_COUNT;
  m.attr("SIZE_MAX") = static_cast<uint64_t>(SIZE_MAX);  // the largest size_t (memory_bytes)

  m.def("request_resources", &request_resources, "num_cpus"_a, "memory_bytes"_a, "numa_preference"_a,
        "exclusive_cpus"_a, "priority"_a, "num_gpus"_a = 0, "gpu_uuids"_a = "", "shared_gpus"_a = false);
  m.def("gpus", [](uintptr_t h) { return mlos_python::text_out(&mlos_training_get_gpus, h); });
  m.def("release_resources", [](uintptr_t h) {
    nb::gil_scoped_release unlocked;  // waits for a collective in flight on the handle
    return mlos_training_release_resources(handle(h));
  });
  m.def("bind_current_thread", [](uintptr_t h, int cpu_index) {
    return mlos_training_bind_thread(handle(h), pthread_self(), cpu_index);
  });
  m.def("set_phase", [](uintptr_t h, int phase) {
    return mlos_training_set_phase(handle(h), static_cast<mlos_training_phase_t>(phase));
  });
  m.def("get_cpus", &get_cpus);
  m.def("allowed_cpus", &allowed_cpus);
  m.def("recommended_threads", [](uintptr_t h) { return mlos_training_recommended_threads(handle(h)); });
  m.def("phase_profile", &phase_profile);
  m.def("phase_name", [](int phase) { return std::string(mlos_training_phase_name(static_cast<mlos_training_phase_t>(phase))); });

  m.def("barrier", [](uintptr_t h, int rank, int world_size) {
    nb::gil_scoped_release unlocked;
    return mlos_training_barrier(handle(h), rank, world_size);
  });
  // data: the address of `count` contiguous elements of `dtype`, kept alive
  // and unmoved by the caller for the duration of the call.
  m.def("allreduce", [](uintptr_t h, uintptr_t data, size_t count, int dtype, int op) {
    nb::gil_scoped_release unlocked;
    return mlos_training_allreduce_typed(handle(h), reinterpret_cast<void*>(data), count,
                                         static_cast<mlos_dtype_t>(dtype), static_cast<mlos_reduce_op_t>(op));
  });
  // Bytes at host addresses, kept alive and unmoved by the caller.
  m.def("broadcast", [](uintptr_t h, uintptr_t data, size_t bytes, int root, int world_size) {
    nb::gil_scoped_release unlocked;
    return mlos_training_broadcast(handle(h), reinterpret_cast<void*>(data), bytes, root, world_size);
  });
  m.def("allgather", [](uintptr_t h, uintptr_t input, uintptr_t output, size_t bytes, int world_size) {
    nb::gil_scoped_release unlocked;
    return mlos_training_allgather(handle(h), reinterpret_cast<const void*>(input), reinterpret_cast<void*>(output),
                                   bytes, world_size);
  });
  // output (gather) or input (scatter): the root's world_size * bytes; 0 elsewhere.
  m.def("gather", [](uintptr_t h, uintptr_t input, uintptr_t output, size_t bytes, int root, int world_size) {
    nb::gil_scoped_release unlocked;
    return mlos_training_gather(handle(h), reinterpret_cast<const void*>(input), reinterpret_cast<void*>(output),
                                bytes, root, world_size);
  });
  m.def("scatter", [](uintptr_t h, uintptr_t input, uintptr_t output, size_t bytes, int root, int world_size) {
    nb::gil_scoped_release unlocked;
    return mlos_training_scatter(handle(h), reinterpret_cast<const void*>(input), reinterpret_cast<void*>(output),
                                 bytes, root, world_size);
  });
  // send_bytes/recv_bytes: world_size counts each.
  m.def("alltoall", [](uintptr_t h, uintptr_t input, const std::vector<size_t>& send_bytes, uintptr_t output,
                       const std::vector<size_t>& recv_bytes) {
    if (send_bytes.size() != recv_bytes.size() || send_bytes.empty()) {
      throw std::invalid_argument("alltoall: send_bytes and recv_bytes need world_size counts each");
    }
    nb::gil_scoped_release unlocked;
    return mlos_training_alltoall(handle(h), reinterpret_cast<const void*>(input), send_bytes.data(),
                                  reinterpret_cast<void*>(output), recv_bytes.data(),
                                  static_cast<int>(send_bytes.size()));
  });
  // Point-to-point: posting returns (code, transfer address); the buffer
  // stays alive and unmoved until wait_transfer(transfer) returns
  // (code, peer rank), which frees the transfer. Call it exactly once.
  m.def("isend", [](uintptr_t h, uintptr_t data, size_t bytes, int dst, uint32_t tag, int world_size) {
    mlos_transfer_t* t = nullptr;
    int rc = 0;
    {
      nb::gil_scoped_release unlocked;  // the first call may create the group
      rc = mlos_training_isend(handle(h), reinterpret_cast<const void*>(data), bytes, dst, tag, world_size, &t);
    }
    return std::make_pair(rc, reinterpret_cast<uintptr_t>(t));
  });
  m.def("irecv", [](uintptr_t h, uintptr_t data, size_t bytes, int src, uint32_t tag, int world_size) {
    mlos_transfer_t* t = nullptr;
    int rc = 0;
    {
      nb::gil_scoped_release unlocked;
      rc = mlos_training_irecv(handle(h), reinterpret_cast<void*>(data), bytes, src, tag, world_size, &t);
    }
    return std::make_pair(rc, reinterpret_cast<uintptr_t>(t));
  });
  m.def("wait_transfer", [](uintptr_t transfer) {
    int peer = -1;
    int rc = 0;
    {
      nb::gil_scoped_release unlocked;
      rc = mlos_training_wait_transfer(reinterpret_cast<mlos_transfer_t*>(transfer), &peer);
    }
    return std::make_pair(rc, peer);
  });
  m.def("placement", &placement);
  m.def("write_file", &write_file, "path"_a, "data"_a);
  m.def("register_memory_callback", &mlos_python::register_memory_callback);
  m.def("unregister_memory_callback", &mlos_python::unregister_memory_callback);
  m.def("memory_pressure", &mlos_python::memory_pressure);
  m.def("set_collective_store", &set_store);
  m.def("set_collective_options", &set_options, "handle"_a, "timeout_ms"_a, "group"_a);

  mlos_python::bind_locked_memory(m);
  mlos_python::bind_checkpoint(m);
  mlos_python::bind_policies(m);
  mlos_python::bind_tmm(m);
  mlos_python::bind_dataload(m);

  m.def("last_error_message", [] { return std::string(mlos_last_error_message()); });
  m.def("strerror", [](int code) { return std::string(mlos_strerror(code)); });
}
