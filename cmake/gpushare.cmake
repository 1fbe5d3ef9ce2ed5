# SPDX-License-Identifier: Apache-2.0
# libmlos-gpushare.so, the CUDA driver API interposer that `mlos run
# --gpu-memory/--gpu-share` preloads (src/gpushare, docs/gpu.md "Sharing a
# GPU"). It needs cuda.h (the CUDA toolkit: the driver API's types) and
# nvml.h (found by find_nvml_header.cmake); it links neither the driver nor
# NVML, which it loads at run time. Without the headers it is not built and
# mlos run says sharing is unsupported.
#
# mlos_gpushare_core: the parts without CUDA types (the share file, the
# memory books, the launch limiter, the configuration), a library of its
# own so that tests link them without a driver.
find_path(MLOS_CUDA_INCLUDE_DIR cuda.h
  HINTS /usr/local/cuda/include
  DOC "Directory of cuda.h (the CUDA toolkit); NOTFOUND builds mlOS without the GPU sharing interposer")
add_library(mlos_gpushare_core STATIC
  src/gpushare/share_file.cpp
  src/gpushare/job_share.cpp
  src/gpushare/launch_limiter.cpp
  src/gpushare/share_config.cpp
  src/gpushare/mps_detect.cpp)
target_include_directories(mlos_gpushare_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(mlos_gpushare_core PUBLIC Threads::Threads)
set_target_properties(mlos_gpushare_core PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

if(MLOS_CUDA_INCLUDE_DIR AND MLOS_NVML_INCLUDE_DIR)
  message(STATUS "cuda.h: ${MLOS_CUDA_INCLUDE_DIR}; building libmlos-gpushare.so")
  set(MLOS_GPUSHARE_BUILT ON)
  add_library(mlos-gpushare SHARED
    src/gpushare/driver_hooks.cpp
    src/gpushare/real_driver.cpp
    src/gpushare/utilization_watch.cpp)
  # The CUDA headers directory holds many headers: after ours, as system
  # headers; nvml.h from its directory of its own.
  target_include_directories(mlos-gpushare SYSTEM PRIVATE ${MLOS_CUDA_INCLUDE_DIR} ${MLOS_NVML_HEADER_DIR})
  target_link_libraries(mlos-gpushare PRIVATE mlos_gpushare_core ${CMAKE_DL_LIBS})
  set_target_properties(mlos-gpushare PROPERTIES OUTPUT_NAME mlos-gpushare
                        LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpushare.map)
  target_link_options(mlos-gpushare PRIVATE "-Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpushare.map"
                                            "-Wl,--no-undefined")
  # Preloaded into programs built elsewhere (the host's python3 and its
  # libstdc++): C++'s runtime goes inside, so only glibc (2.34+) is asked of
  # the host.
  if(NOT MLOS_SANITIZE)
    target_link_options(mlos-gpushare PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  install(TARGETS mlos-gpushare LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/mlos COMPONENT mlos)
else()
  message(STATUS "cuda.h or nvml.h not found: no GPU sharing interposer")
endif()
