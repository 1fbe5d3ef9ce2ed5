# SPDX-License-Identifier: Apache-2.0
# Sourced by the test scripts: test_python prints the interpreter of the
# end-to-end tests, the first of python3 on PATH and Debian's
# /usr/bin/python3 that imports pytest and jsonschema (what
# cmake/find_test_python.cmake picks for ctest); python3 when none does.
test_python() {
  local candidate
  for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [[ -x "$candidate" ]] && "$candidate" -c 'import pytest, jsonschema' 2> /dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  echo python3
}
