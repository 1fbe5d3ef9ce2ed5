#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages (libmlos0, libmlos-dev, mlosd, mlos and their
# -dbgsym .ddeb files) with CPack from a /usr-prefix RelWithDebInfo build,
# into $MLOS_DEB_BUILD_DIR/debs (default build-deb/debs). Tests are not
# built. Prints the package paths. Extra arguments go to cmake's configure
# step. tests/packaging/smoke_in_chroot.sh installs and tests the result;
# docs/releases.md describes both.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
build="${MLOS_DEB_BUILD_DIR:-build-deb}"
jobs="${MLOS_BUILD_JOBS:-$(nproc)}"

log() { echo "build_debs: $*" >&2; }

# Reproducible packages: file times and the Debian changelog's date are the
# commit's, not the build's.
if [[ -z "${SOURCE_DATE_EPOCH:-}" ]]; then
  SOURCE_DATE_EPOCH="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)"
fi
export SOURCE_DATE_EPOCH

# Debian's hardening flags (stack protector, _FORTIFY_SOURCE, format
# checks, full RELRO with immediate binding) and -ffile-prefix-map, as a
# Debian package build would use them. CMake reads neither CPPFLAGS nor the
# environment after its first run, so they are passed as cache values.
flags=()
if command -v dpkg-buildflags > /dev/null; then
  eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
  flags=("-DCMAKE_C_FLAGS=$CPPFLAGS $CFLAGS" "-DCMAKE_CXX_FLAGS=$CPPFLAGS $CXXFLAGS"
         "-DCMAKE_EXE_LINKER_FLAGS=$LDFLAGS" "-DCMAKE_SHARED_LINKER_FLAGS=$LDFLAGS"
         "-DCMAKE_MODULE_LINKER_FLAGS=$LDFLAGS")
fi

start=$SECONDS
mkdir -p "$build"
# The prefix is fixed: mlosd, the CLI and the unit have /usr paths compiled
# in (policies, policy host, data-loading helper, docs). The docs of mlosd
# go to its own package's directory.
cmake -S "$repo" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_DOCDIR=share/doc/mlosd \
  -DMLOS_BUILD_TESTS=OFF -DMLOS_BUILD_BENCH=OFF -DMLOS_BUILD_DEMO=OFF -DMLOS_BUILD_PYTHON=OFF \
  -DMLOS_BUILD_DAEMON=ON -DMLOS_BUILD_DATALOAD=ON -DMLOS_SANITIZE= "${flags[@]}" "$@" > "$build/configure.log" 2>&1 ||
  { tail -30 "$build/configure.log" >&2; log "configure failed (log: $build/configure.log)"; exit 1; }

# Every install() rule must name a component: one without lands in
# "Unspecified", which no package takes.
if grep -rl --include=cmake_install.cmake '"Unspecified"' "$build" > /dev/null; then
  log "install() rules without a COMPONENT (they would be packaged nowhere):"
  grep -rn --include=cmake_install.cmake -A3 '"Unspecified"' "$build" | grep -i 'file(INSTALL\|DESTINATION' >&2 || true
  exit 1
fi

nice cmake --build "$build" -j "$jobs"
rm -rf "$build/debs" "$build/_CPack_Packages"
(cd "$build" && cpack -G DEB --config CPackConfig.cmake > cpack.log 2>&1) ||
  { tail -40 "$build/cpack.log" >&2; log "cpack failed (log: $build/cpack.log)"; exit 1; }

mapfile -t debs < <(find "$build/debs" -maxdepth 1 -name '*.deb' | sort)
for want in libmlos0 libmlos-dev mlosd mlos; do
  printf '%s\n' "${debs[@]}" | grep -q "/${want}_" || { log "no $want package in $build/debs"; exit 1; }
done
log "built ${#debs[@]} packages in $((SECONDS - start)) s:"
find "$build/debs" -maxdepth 1 \( -name '*.deb' -o -name '*.ddeb' \) | sort
