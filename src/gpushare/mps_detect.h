/* SPDX-License-Identifier: Apache-2.0 */
// Whether an MPS (CUDA Multi-Process Service) control daemon serves this
// machine's clients: CUDA programs connect to the control socket in the
// pipe directory ($CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps) when
// they initialise, and then run as MPS clients, whose share of the GPU's
// SMs CUDA_MPS_ACTIVE_THREAD_PERCENTAGE sets. mlOS never starts one (that
// would change how every CUDA program on the machine runs); it uses one
// that an administrator started.
#pragma once

#include <string>

namespace mlos::gpushare {

struct MpsState {
  bool running = false;
  std::string pipe_directory;
  std::string why;  // when not running: what was looked at
};

// Connects to <pipe_directory>/control (`pipe_directory` "" = the
// environment's, else the default).
MpsState detect_mps(const std::string& pipe_directory = "");

}  // namespace mlos::gpushare
