# SPDX-License-Identifier: Apache-2.0
# nvml.h, for NVML's types only (src/gpu loads libnvidia-ml.so.1 at run time
# and links nothing of the driver). It is not in the CUDA toolkit of Debian
# 12's machines; PyPI's nvidia-nvml-dev ships it, and scripts/setup.sh
# installs that into its venv. Searched: MLOS_NVML_INCLUDE_DIR (a cache
# variable), the Python that builds the wheel, that venv ($MLOS_VENV, else
# /opt/mlos/venv), then CUDA's include directories.
# Sets MLOS_NVML_INCLUDE_DIR and MLOS_NVML_HEADER_DIR, the include directory
# to use, which holds nvml.h alone (or leaves them unset/NOTFOUND: the GPU manager is then
# built without NVML and says so at run time, src/gpu/gpu_without_nvml.cpp).
set(_mlos_nvml_hints)
set(_mlos_nvml_prefixes "$ENV{MLOS_VENV}" /opt/mlos/venv)
# The Python building the wheel (scikit-build-core sets Python_EXECUTABLE):
# pip's isolated build environment holds nvidia-nvml-dev (a build
# requirement in pyproject.toml) on its own path, found through the import
# system rather than under the interpreter's prefix.
if(DEFINED Python_EXECUTABLE)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import glob, importlib.util, os; s = importlib.util.find_spec('nvidia'); print(';'.join(os.path.dirname(h) for d in (s.submodule_search_locations if s else []) for h in glob.glob(os.path.join(d, '*', 'include', 'nvml.h'))))"
    OUTPUT_VARIABLE _mlos_py_nvml OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  list(APPEND _mlos_nvml_hints ${_mlos_py_nvml})
endif()
foreach(prefix IN LISTS _mlos_nvml_prefixes)
  if(prefix)
    # nvidia-nvml-dev 13.x: nvidia/cu13/include; the -cu12 and -cu11 packages: nvidia/nvml_dev/include.
    file(GLOB _mlos_found "${prefix}/lib/python3*/site-packages/nvidia/*/include/nvml.h")
    foreach(header IN LISTS _mlos_found)
      get_filename_component(dir "${header}" DIRECTORY)
      list(APPEND _mlos_nvml_hints "${dir}")
    endforeach()
  endif()
endforeach()
find_path(MLOS_NVML_INCLUDE_DIR nvml.h
  HINTS ${_mlos_nvml_hints}
  PATHS /usr/local/cuda/include /usr/include/nvidia/gdk
  DOC "Directory of nvml.h (PyPI nvidia-nvml-dev); NOTFOUND builds the GPU manager without NVML")
if(MLOS_NVML_INCLUDE_DIR)
  message(STATUS "nvml.h: ${MLOS_NVML_INCLUDE_DIR}")
  # The header alone, in a directory of its own: the venv's directory also
  # holds the CUDA headers torch's wheels bring (math_functions.h,
  # host_config.h, ...), which must not shadow anything else.
  configure_file("${MLOS_NVML_INCLUDE_DIR}/nvml.h" "${CMAKE_BINARY_DIR}/nvml-include/nvml.h" COPYONLY)
  set(MLOS_NVML_HEADER_DIR "${CMAKE_BINARY_DIR}/nvml-include")
else()
  message(STATUS "nvml.h: not found; GPUs will be reported as unsupported (scripts/setup.sh installs nvidia-nvml-dev)")
endif()
