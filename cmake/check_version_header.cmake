# SPDX-License-Identifier: Apache-2.0
# include/mlos/version.h stays a plain source header (installed as is, read
# by C consumers and policies without a build step), so it is checked here
# against VERSION, the one version source: a release bumps both, and a
# mismatch stops the configure instead of shipping two versions.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/mlos/version.h _mlos_version_lines REGEX "^#define MLOS_VERSION_")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX MATCH "#define MLOS_VERSION_${_part} ([0-9]+)" _ "${_mlos_version_lines}")
  if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION_${_part})
    message(FATAL_ERROR "include/mlos/version.h: MLOS_VERSION_${_part} is '${CMAKE_MATCH_1}', "
                        "VERSION says ${PROJECT_VERSION}; change both")
  endif()
endforeach()
string(REGEX MATCH "#define MLOS_VERSION_STRING \"([^\"]*)\"" _ "${_mlos_version_lines}")
if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "include/mlos/version.h: MLOS_VERSION_STRING is \"${CMAKE_MATCH_1}\", "
                      "VERSION says ${PROJECT_VERSION}; change both")
endif()
