#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installed-tree consumer test: installs BUILD_DIR into WORK_DIR/prefix, then
# builds tests/consumer/consumer.c against the installed tree twice, through
# pkg-config and through find_package(mlos), and runs both.
#
# Usage: run_consumer_test.sh BUILD_DIR WORK_DIR
# WORK_DIR is wiped and recreated. Exits non-zero on any failure.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=$(cd "$1" && pwd)
work_dir=$2
rm -rf "$work_dir"
mkdir -p "$work_dir"
work_dir=$(cd "$work_dir" && pwd)
prefix=$work_dir/prefix

passed=0
failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
finish() {
  echo "consumer test: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

# A fresh ledger directory: the consumers must not see other claims.
export MLOS_RUNTIME_DIR=$work_dir/runtime
mkdir -p "$MLOS_RUNTIME_DIR"
unset MLOS_TOPOLOGY MLOS_ALLOWED_CPUS MLOS_MODE || true

# ------------------------------------------------------------------ install
if cmake --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log" 2>&1; then
  pass "cmake --install into $prefix"
else
  cat "$work_dir/install.log" >&2
  fail "cmake --install $build_dir --prefix $prefix"
  finish
  exit 1
fi

libdir=
for d in lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu; do
  if [[ -e $prefix/$d/libmlos.so ]]; then
    libdir=$prefix/$d
    break
  fi
done
if [[ -z $libdir ]]; then
  # Any other multiarch directory.
  found=$(find "$prefix" -name libmlos.so -print -quit)
  [[ -n $found ]] && libdir=$(dirname "$found")
fi
if [[ -z $libdir ]]; then
  fail "no libmlos.so installed under $prefix"
  finish
  exit 1
fi
pass "library directory: ${libdir#"$prefix"/}"

# ------------------------------------------------------------------ layout
if [[ -f $prefix/include/mlos/training.h ]]; then
  pass "include/mlos/training.h installed"
else
  fail "include/mlos/training.h missing"
fi
for h in errors.h export.h log.h version.h; do
  [[ -f $prefix/include/mlos/$h ]] || fail "include/mlos/$h missing"
done

if [[ -L $libdir/libmlos.so.0 && -e $libdir/libmlos.so.0 ]]; then
  pass "SONAME symlink libmlos.so.0"
else
  fail "libmlos.so.0 is not a symlink to an installed file"
fi
soname=$(objdump -p "$libdir/libmlos.so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }' || true)
if [[ -z $soname ]] && command -v readelf > /dev/null; then
  soname=$(readelf -d "$libdir/libmlos.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
fi
if [[ $soname == libmlos.so.0 ]]; then
  pass "SONAME is libmlos.so.0"
else
  fail "SONAME is \"$soname\", expected libmlos.so.0"
fi

if [[ -f $libdir/cmake/mlos/mlosConfig.cmake ]]; then
  pass "cmake/mlos/mlosConfig.cmake installed"
else
  fail "${libdir#"$prefix"/}/cmake/mlos/mlosConfig.cmake missing"
fi
if [[ -f $libdir/pkgconfig/mlos.pc ]]; then
  pass "pkgconfig/mlos.pc installed"
else
  fail "pkgconfig/mlos.pc missing"
fi

# Only the public headers: every file under include/ is one of the source
# tree's include/ files, unchanged, and no file from src/ was installed
# anywhere (compared by content, so a renamed copy is caught too).
src_root=$(cd "$here/../.." && pwd)
leaked=0
while IFS= read -r -d '' f; do
  rel=${f#"$prefix"/include/}
  if ! cmp -s "$f" "$src_root/include/$rel"; then
    fail "installed header $rel is not the public header include/$rel"
    leaked=1
  fi
done < <(find "$prefix/include" -type f -print0)
internal_sums=$(find "$src_root/src" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.hh' \) -print0 |
  xargs -0 sha256sum | awk '{ print $1 }' | sort -u)
while read -r sum path; do
  if grep -qx "$sum" <<< "$internal_sums"; then
    fail "internal header installed: ${path#"$prefix"/}"
    leaked=1
  fi
done < <(find "$prefix" -type f -print0 | xargs -0 sha256sum)
[[ $leaked -eq 0 ]] && pass "no internal headers installed"

# Only mlos_* symbols are exported.
if command -v nm > /dev/null; then
  bad=$(nm -D --defined-only "$libdir/libmlos.so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sed 's/@.*//' |
    grep -v '^mlos_' | grep -v '^_init$\|^_fini$\|^_edata$\|^_end$\|^__bss_start$\|^MLOS_' || true)
  if [[ -z $bad ]]; then
    pass "only mlos_* symbols exported"
  else
    fail "unexpected exported symbols: $(echo "$bad" | head -5 | tr '\n' ' ')"
  fi
fi

# ------------------------------------------------------------------ pkg-config
if ! pc_flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs mlos); then
  fail "pkg-config --cflags --libs mlos (PKG_CONFIG_PATH=$libdir/pkgconfig)"
  pc_flags="-I$prefix/include -L$libdir -lmlos"
fi
pc_version=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion mlos || true)
header_version=$(sed -n 's/^#define MLOS_VERSION_STRING "\(.*\)"/\1/p' "$prefix/include/mlos/version.h")
if [[ $pc_version == "$header_version" ]]; then
  pass "pkg-config version $pc_version"
else
  fail "pkg-config version $pc_version, headers say $header_version"
fi
# The -I/-L paths must lead into the prefix, not into the build or source tree.
real_prefix=$(cd "$prefix" && pwd -P)
for flag in $pc_flags; do
  case $flag in
    -I* | -L*)
      dir=${flag:2}
      real=$(cd "$dir" 2> /dev/null && pwd -P || echo "$dir")
      [[ $real == "$real_prefix"/* ]] || fail "pkg-config flag $flag is outside the prefix"
      ;;
  esac
done

# shellcheck disable=SC2086  # pc_flags is a list of flags
if cc -std=c11 -Wall -Wextra -Werror -pedantic -pthread -o "$work_dir/consumer-pkgconfig" \
  "$here/consumer.c" $pc_flags 2> "$work_dir/pkgconfig-build.log"; then
  pass "consumer.c builds with pkg-config ($pc_flags)"
  if out=$(LD_LIBRARY_PATH=$libdir "$work_dir/consumer-pkgconfig" 2>&1); then
    pass "pkg-config consumer runs: $out"
  else
    fail "pkg-config consumer failed: $out"
  fi
  # It really ran against the installed library.
  if ldd_out=$(LD_LIBRARY_PATH=$libdir ldd "$work_dir/consumer-pkgconfig" 2> /dev/null); then
    if grep -q "libmlos.so.0 => $libdir/libmlos.so.0" <<< "$ldd_out"; then
      pass "resolves the installed libmlos.so.0"
    else
      fail "libmlos.so.0 not resolved from $libdir: $ldd_out"
    fi
  fi
else
  fail "consumer.c does not build with pkg-config: $(cat "$work_dir/pkgconfig-build.log")"
fi

# ------------------------------------------------------------------ find_package
if cmake -S "$here/cmake_project" -B "$work_dir/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work_dir/cmake-configure.log" 2>&1; then
  pass "find_package(mlos) configures"
  if cmake --build "$work_dir/cmake-build" > "$work_dir/cmake-build.log" 2>&1; then
    pass "cmake consumer builds"
    if grep -q "mlos_DIR:PATH=$libdir/cmake/mlos" "$work_dir/cmake-build/CMakeCache.txt"; then
      pass "mlos found in the prefix"
    else
      fail "mlos found elsewhere: $(grep mlos_DIR "$work_dir/cmake-build/CMakeCache.txt")"
    fi
    # The imported target carries the runtime path only if the consumer
    # asks; use LD_LIBRARY_PATH like a user of a non-system prefix would.
    if out=$(LD_LIBRARY_PATH=$libdir "$work_dir/cmake-build/app" 2>&1); then
      pass "cmake consumer runs: $out"
    else
      fail "cmake consumer failed: $out"
    fi
  else
    fail "cmake consumer does not build: $(tail -30 "$work_dir/cmake-build.log")"
  fi
else
  fail "find_package(mlos) does not configure: $(tail -30 "$work_dir/cmake-configure.log")"
fi

# Released claims leave nothing behind.
if [[ -f $MLOS_RUNTIME_DIR/claims.json ]] && ! grep -q '"claims": *\[\]' "$MLOS_RUNTIME_DIR/claims.json"; then
  fail "claims left in the ledger: $(cat "$MLOS_RUNTIME_DIR/claims.json")"
fi

finish
