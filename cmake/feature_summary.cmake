# SPDX-License-Identifier: Apache-2.0
# One line per optional part, found or left out, printed at the end of the
# configure step (scripts/build.sh shows these lines): a build that lacks a
# header says so instead of quietly building without the feature.
function(mlos_feature_line name built why_not)
  if(built)
    message(STATUS "mlOS feature: ${name}: built")
  else()
    message(STATUS "mlOS feature: ${name}: not built (${why_not})")
  endif()
endfunction()
mlos_feature_line("mlosd, the node daemon" "${MLOS_BUILD_DAEMON}" "MLOS_BUILD_DAEMON=OFF")
mlos_feature_line("mlos-dataload, data loading off the trainer" "${MLOS_BUILD_DATALOAD}" "MLOS_BUILD_DATALOAD=OFF")
mlos_feature_line("GPU manager (NVML, loaded at run time)" "${MLOS_NVML_INCLUDE_DIR}"
                  "no nvml.h: pip's nvidia-nvml-dev, which scripts/setup.sh puts in the venv")
mlos_feature_line("GPU sharing (libmlos-gpushare.so)" "${MLOS_GPUSHARE_BUILT}"
                  "no cuda.h and nvml.h: the CUDA toolkit and nvidia-nvml-dev")
mlos_feature_line("collectives on GPU buffers (NCCL)" "${MLOS_DEVICE_COLLECTIVES_BUILT}"
                  "no cuda.h and nccl.h: the CUDA toolkit with NCCL")
mlos_feature_line("man pages" "${HELP2MAN}" "no help2man")
mlos_feature_line("tests" "${MLOS_BUILD_TESTS}" "MLOS_BUILD_TESTS=OFF")
