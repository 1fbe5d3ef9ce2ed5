// SPDX-License-Identifier: Apache-2.0
// See checkpoint_binding.h. Paths arrive as bytes (os.fsencode'd by the
// package, which refuses NUL bytes first).
#include "checkpoint_binding.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <tuple>

#include <mlos/checkpoint.h>
#include <mlos/errors.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace mlos_python {
namespace {

mlos_checkpoint_writer_t* writer(uintptr_t w) { return reinterpret_cast<mlos_checkpoint_writer_t*>(w); }

std::string c_path(const nb::bytes& b) {
  std::string s(b.c_str(), b.size());
  if (s.find('\0') != std::string::npos) throw nb::value_error("path contains a NUL byte");
  return s;
}

// A read-only view of `data` for the duration of a call.
struct BufferView {
  Py_buffer view{};
  explicit BufferView(nb::handle data) {
    if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
  }
  ~BufferView() { PyBuffer_Release(&view); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
};

std::tuple<int, uintptr_t> open_writer(nb::bytes dir, nb::object prefix, uint32_t keep_last, uintptr_t resources,
                                       uint32_t flags) {
  const std::string d = c_path(dir);
  std::string p;
  if (!prefix.is_none()) p = nb::cast<std::string>(prefix);
  mlos_checkpoint_options_t o{};
  o.struct_size = sizeof o;
  o.keep_last = keep_last;
  o.prefix = prefix.is_none() ? nullptr : p.c_str();
  o.resources = reinterpret_cast<mlos_training_resources_t*>(resources);
  o.flags = flags;
  mlos_checkpoint_writer_t* w = nullptr;
  const int rc = mlos_checkpoint_writer_open(d.c_str(), &o, &w);
  return {rc, reinterpret_cast<uintptr_t>(w)};
}

std::tuple<int, uint64_t> save(uintptr_t w, nb::handle data) {
  BufferView v(data);
  uint64_t seq = 0;
  int rc;
  {
    nb::gil_scoped_release unlocked;
    rc = mlos_checkpoint_save(writer(w), v.view.buf, static_cast<size_t>(v.view.len), &seq);
  }
  return {rc, seq};
}

std::tuple<int, uint64_t> save_async(uintptr_t w, nb::handle data) {
  BufferView v(data);
  uint64_t ticket = 0;
  int rc;
  {
    nb::gil_scoped_release unlocked;  // waits for the previous async save first
    rc = mlos_checkpoint_save_async(writer(w), v.view.buf, static_cast<size_t>(v.view.len), &ticket);
  }
  return {rc, ticket};
}

std::tuple<int, nb::dict> info(uintptr_t w) {
  mlos_checkpoint_writer_info_t i{};
  i.struct_size = sizeof i;
  const int rc = mlos_checkpoint_writer_get_info(writer(w), &i);
  nb::dict d;
  if (rc != MLOS_OK) return {rc, d};
  d["next_sequence"] = i.next_sequence;
  d["last_saved_sequence"] = i.last_saved_sequence;
  d["saves_succeeded"] = i.saves_succeeded;
  d["saves_failed"] = i.saves_failed;
  d["retention_deleted"] = i.retention_deleted;
  d["staging_bytes"] = i.staging_bytes;
  d["staging_locked"] = i.staging_locked;
  d["io_priority_applied"] = i.io_priority_applied;
  return {rc, d};
}

// (rc, payload bytes or None, sequence, damaged_skipped).
std::tuple<int, nb::object, uint64_t, uint32_t> load_latest(nb::bytes dir, nb::object prefix) {
  const std::string d = c_path(dir);
  std::string p;
  if (!prefix.is_none()) p = nb::cast<std::string>(prefix);
  void* data = nullptr;
  size_t size = 0;
  uint64_t seq = 0;
  uint32_t skipped = 0;
  int rc;
  {
    nb::gil_scoped_release unlocked;
    rc = mlos_checkpoint_load_latest(d.c_str(), prefix.is_none() ? nullptr : p.c_str(), &data, &size, &seq, &skipped);
  }
  if (rc != MLOS_OK) return {rc, nb::none(), 0, skipped};
  nb::bytes out(static_cast<const char*>(data), size);
  mlos_checkpoint_free_data(data);
  return {rc, out, seq, skipped};
}

std::tuple<int, uint64_t, size_t> verify_file(nb::bytes path) {
  const std::string p = c_path(path);
  uint64_t seq = 0;
  size_t size = 0;
  int rc;
  {
    nb::gil_scoped_release unlocked;
    rc = mlos_checkpoint_verify_file(p.c_str(), &seq, &size);
  }
  return {rc, seq, size};
}

// The calling thread's I/O priority to the CHECKPOINT phase's (best-effort,
// level 0), as the C writer's own background thread has it. 0 or -errno.
int set_checkpoint_io_priority() {
  constexpr int kWhoProcess = 1, kClassBestEffort = 2, kClassShift = 13;
  if (syscall(SYS_ioprio_set, kWhoProcess, 0, (kClassBestEffort << kClassShift) | 0) != 0) return -errno;
  return 0;
}

}  // namespace

void bind_checkpoint(nb::module_& m) {
  m.def("checkpoint_writer_open", &open_writer, "dir"_a, "prefix"_a, "keep_last"_a, "resources"_a, "flags"_a);
  m.def("checkpoint_writer_close", [](uintptr_t w) {
    nb::gil_scoped_release unlocked;  // waits for a save in flight
    return mlos_checkpoint_writer_close(writer(w));
  });
  m.def("checkpoint_save", &save);
  m.def("checkpoint_save_async", &save_async);
  m.def("checkpoint_wait", [](uintptr_t w, uint64_t ticket, int timeout_ms) {
    nb::gil_scoped_release unlocked;
    return mlos_checkpoint_wait(writer(w), ticket, timeout_ms);
  });
  m.def("checkpoint_writer_info", &info);
  m.def("checkpoint_load_latest", &load_latest);
  m.def("checkpoint_verify_file", &verify_file);
  m.def("set_checkpoint_io_priority", &set_checkpoint_io_priority);
  m.attr("CHECKPOINT_ALLOW_UNLOCKED_STAGING") = static_cast<uint32_t>(MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING);
  m.attr("BUFFER_GRADIENT") = static_cast<int>(MLOS_BUFFER_GRADIENT);
}

}  // namespace mlos_python
