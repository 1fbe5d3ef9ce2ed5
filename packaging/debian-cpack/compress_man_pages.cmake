# SPDX-License-Identifier: Apache-2.0
# CPACK_PRE_BUILD_SCRIPTS (cmake/packaging.cmake): runs after CPack staged
# each component's files and before it builds the packages. Compresses the
# staged man pages with gzip -9n, as Debian policy 12.1 wants (the build
# tree keeps them plain: tests read them there).
if(NOT IS_DIRECTORY "${CPACK_TEMPORARY_DIRECTORY}")
  message(FATAL_ERROR "compress_man_pages: no staging directory '${CPACK_TEMPORARY_DIRECTORY}'")
endif()
file(GLOB_RECURSE mlos_staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_DIRECTORY}/*")
set(mlos_compressed 0)
foreach(page IN LISTS mlos_staged)
  if(NOT page MATCHES "/share/man/man[0-9]/[^/]+\\.[0-9]$" OR IS_SYMLINK "${page}")
    continue()
  endif()
  execute_process(COMMAND gzip -9nf "${page}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${page} failed (${status})")
  endif()
  math(EXPR mlos_compressed "${mlos_compressed} + 1")
endforeach()
message(STATUS "compress_man_pages: ${mlos_compressed} man pages compressed under ${CPACK_TEMPORARY_DIRECTORY}")
