# SPDX-License-Identifier: Apache-2.0
# Collectives on GPU buffers (src/collectives/device_collectives.h, docs/gpu.md
# "Collectives on device buffers"): the CUDA driver's and NCCL's types from
# cuda.h and nccl.h (the CUDA toolkit with NCCL, or NVIDIA's nccl wheel next
# to the toolkit), both loaded at run time, never linked. Without the
# headers libmlos treats every buffer as host memory and says so.
# Needs MLOS_CUDA_INCLUDE_DIR from gpushare.cmake.
find_path(MLOS_NCCL_INCLUDE_DIR nccl.h
  HINTS ${MLOS_CUDA_INCLUDE_DIR} /usr/local/cuda/include
  DOC "Directory of nccl.h; NOTFOUND builds libmlos without collectives on GPU buffers")
if(MLOS_CUDA_INCLUDE_DIR AND MLOS_NCCL_INCLUDE_DIR)
  message(STATUS "nccl.h: ${MLOS_NCCL_INCLUDE_DIR}; collectives on GPU buffers built")
  set(MLOS_DEVICE_COLLECTIVES_BUILT ON)
  target_sources(mlos_internal PRIVATE
    src/collectives/cuda_driver.cpp
    src/collectives/nccl_library.cpp
    src/collectives/device_collectives.cpp)
  # nccl.h includes the runtime's headers from the toolkit's directory.
  target_include_directories(mlos_internal SYSTEM PRIVATE ${MLOS_NCCL_INCLUDE_DIR} ${MLOS_CUDA_INCLUDE_DIR})
else()
  message(STATUS "cuda.h or nccl.h not found: collectives treat every buffer as host memory")
  target_sources(mlos_internal PRIVATE src/collectives/device_buffer_without_cuda.cpp)
endif()
