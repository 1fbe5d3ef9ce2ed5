/* SPDX-License-Identifier: Apache-2.0 */
// The C API's versioned structs (training.h, "versioned extension
// structs"): one table of each struct's first-version size (its public
// MLOS_<STRUCT>_SIZE_V1) and one check of a caller's struct_size, used to
// read input structs and to fill output structs. A caller compiled against
// any version from the first on is served; the library never reads or
// writes past the smaller of the caller's struct_size and its own sizeof.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "api/last_error.h"
#include "core/status.h"
#include "mlos/checkpoint.h"
#include "mlos/collectives.h"
#include "mlos/dataload.h"
#include "mlos/tmm.h"
#include "mlos/training.h"

namespace mlos::api {

// VersionedStruct<T>::kFirstSize and kName for each versioned struct of the
// C API whose struct_size is its first field.
template <class T>
struct VersionedStruct;

#define MLOS_VERSIONED_STRUCT(T, FIRST_SIZE)                                          \
  template <>                                                                         \
  struct VersionedStruct<T> {                                                         \
    static constexpr size_t kFirstSize = FIRST_SIZE;                                  \
    static constexpr const char* kName = #T;                                          \
    static_assert(offsetof(T, struct_size) == 0, #T ": struct_size is not first");    \
    static_assert(FIRST_SIZE <= sizeof(T), #T ": the first version outgrows today's"); \
  };
MLOS_VERSIONED_STRUCT(mlos_training_request_options_t, MLOS_TRAINING_REQUEST_OPTIONS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_memory_thresholds_t, MLOS_MEMORY_THRESHOLDS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_memory_pressure_info_t, MLOS_MEMORY_PRESSURE_INFO_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_training_placement_t, MLOS_TRAINING_PLACEMENT_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_training_phase_profile_t, MLOS_TRAINING_PHASE_PROFILE_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_training_advice_t, MLOS_TRAINING_ADVICE_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_checkpoint_options_t, MLOS_CHECKPOINT_OPTIONS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_checkpoint_writer_info_t, MLOS_CHECKPOINT_WRITER_INFO_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_collective_store_t, MLOS_COLLECTIVE_STORE_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_collective_options_t, MLOS_COLLECTIVE_OPTIONS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_dataload_options_t, MLOS_DATALOAD_OPTIONS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_dataload_info_t, MLOS_DATALOAD_INFO_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_dataload_stats_t, MLOS_DATALOAD_STATS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_tmm_pool_options_t, MLOS_TMM_POOL_OPTIONS_SIZE_V1)
MLOS_VERSIONED_STRUCT(mlos_tmm_stats_t, MLOS_TMM_STATS_SIZE_V1)
#undef MLOS_VERSIONED_STRUCT

// VERSION_MISMATCH naming the struct when `struct_size` is below its first
// version's size.
template <class T>
Status check_struct_size(uint32_t struct_size) {
  using V = VersionedStruct<T>;
  if (struct_size >= V::kFirstSize) return Status::Ok();
  return make_error(MLOS_ERR_VERSION_MISMATCH, std::string(V::kName) + ".struct_size is " +
                                                   std::to_string(struct_size) + ", smaller than its first version (" +
                                                   std::to_string(V::kFirstSize) + "); set it to sizeof the struct");
}

// A caller's input struct as this library's version of it: the caller's
// prefix, and zero in every field past it (a field the caller's version
// lacks reads as its zero default). Bytes past sizeof(T) are never read.
template <class T>
Result<T> read_versioned(const T* in) {
  if (Status s = check_struct_size<T>(in->struct_size); !s) return s.error();
  T ours{};
  std::memcpy(static_cast<void*>(&ours), in, std::min<size_t>(in->struct_size, sizeof(T)));
  ours.struct_size = sizeof(T);
  return ours;
}

// Copies `ours` into a caller's output struct, honouring both sizes: an
// older caller gets the prefix it asked for, a newer one gets what this
// library knows and nothing more. Bytes past sizeof(T) are never written:
// struct_size is a claim the library cannot check, and a wrong one (too
// big, or UINT32_MAX) must not let it write past the caller's object. A
// newer caller zero-initialises its struct to tell unknown fields apart.
// Records the error and returns its code on a struct_size too small.
template <class T>
int fill_versioned(T* out, const T& ours) {
  if (Status s = check_struct_size<T>(out->struct_size); !s) return record_error(s.error());
  const size_t n = std::min<size_t>(out->struct_size, sizeof(T));
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(uint32_t), reinterpret_cast<const char*>(&ours) + sizeof(uint32_t),
              n - sizeof(uint32_t));
  return MLOS_OK;
}

}  // namespace mlos::api
