# SPDX-License-Identifier: Apache-2.0
# The interpreter of the end-to-end tests (tests/e2e, run by ctest): the
# first of python3 on PATH and Debian's /usr/bin/python3 that imports pytest
# and jsonschema (scripts/setup.sh installs Debian's python3-pytest and
# python3-jsonschema: never anything into the system Python). Detected at
# each configure unless MLOS_TEST_PYTHON is given. Sets MLOS_TEST_PYTHON.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(MLOS_TEST_PYTHON "" CACHE FILEPATH
    "Interpreter of the end-to-end tests, with pytest and jsonschema (default: detected)")
if(NOT MLOS_TEST_PYTHON)
  foreach(candidate IN ITEMS "${Python3_EXECUTABLE}" /usr/bin/python3)
    if(EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import pytest, jsonschema"
                      RESULT_VARIABLE _mlos_rc OUTPUT_QUIET ERROR_QUIET)
      if(_mlos_rc EQUAL 0)
        set(MLOS_TEST_PYTHON "${candidate}")
        break()
      endif()
    endif()
  endforeach()
  if(NOT MLOS_TEST_PYTHON)
    message(WARNING "no python3 with pytest and jsonschema (${Python3_EXECUTABLE}, /usr/bin/python3): the "
                    "end-to-end tests will fail; scripts/setup.sh installs python3-pytest and python3-jsonschema")
    set(MLOS_TEST_PYTHON "${Python3_EXECUTABLE}")
  endif()
endif()
message(STATUS "end-to-end tests run with ${MLOS_TEST_PYTHON}")
