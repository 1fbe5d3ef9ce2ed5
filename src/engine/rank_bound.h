/* SPDX-License-Identifier: Apache-2.0 */
// The outer bound of this process's requests, and the local-rank split that
// narrows it when the process is one of N local ranks of a launcher
// (torchrun sets LOCAL_RANK and LOCAL_WORLD_SIZE) started inside `mlos run`.
// Without the split every rank would see all of mlos run's CPUs and size its
// thread pools to all of them (docs/placement.md#local-ranks).
//
// Both engines take the process's affinity as its bound, so the split is
// applied as affinity before the first engine is created: the embedded
// ledger and mlosd then place inside the share without knowing about ranks.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <vector>

#include "core/cpu_set.h"
#include "core/rank_share.h"
#include "core/status.h"
#include "core/topology.h"
#include "os/kernel.h"

namespace mlos {

struct RankSplit {
  int local_rank = 0;
  int local_world_size = 1;
  CpuSet envelope;  // mlos run's CPUs (MLOS_CPUS), which every local rank starts with
  RankShare share;
};

// getenv, or a map in tests: nullptr when the variable is not set.
using EnvLookup = std::function<const char*(const char*)>;

// Whether a process with this `affinity` (its main thread's mask) is a rank
// to split, and its share. It is one when LOCAL_WORLD_SIZE > 1, MLOS_CPUS is
// set (it runs inside `mlos run`), its affinity is exactly MLOS_CPUS (nobody
// placed it yet: not numactl or torchrun --numa-binding, taskset, Slurm, nor
// an earlier split its parent made), and MLOS_RANK_SPLIT is not "0".
// Errors, INVALID_ARGUMENT naming the variable: LOCAL_WORLD_SIZE or
// LOCAL_RANK not a decimal integer, LOCAL_RANK missing or outside
// [0, LOCAL_WORLD_SIZE), MLOS_CPUS not a CPU list.
Result<std::optional<RankSplit>> decide_rank_split(const Topology& topology, const CpuSet& affinity,
                                                   const EnvLookup& env);

// Moves each thread in `tids` whose mask is still split.envelope into the
// share; threads bound elsewhere keep their mask, threads that exited
// meanwhile are skipped. Errors: those of the kernel's set_affinity.
Status apply_rank_split(os::Kernel& kernel, const RankSplit& split, const std::vector<pid_t>& tids);

struct ProcessBound {
  CpuSet cpus;                     // outer bound of every request of this process
  int recommended_threads = 1;     // physical cores in cpus, at least 1
  std::optional<RankSplit> split;  // set when cpus is a rank share mlOS made
};

// This process's bound, decided (and a split applied) once, at the first
// request or mlos_training_get_allowed_cpus; later calls return the same
// value, errors included. On a described machine (MLOS_TOPOLOGY) the bound
// is MLOS_ALLOWED_CPUS or every CPU, and nothing is split.
Result<ProcessBound> process_bound();

}  // namespace mlos
