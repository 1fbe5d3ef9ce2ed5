#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs what scripts/gpu_check.sh needs on a GPU machine that has none of
# the build's dependencies: mlos, mlosd and mlos-policyhost (stripped), every
# shared library they load, and this machine's dynamic loader, into
# build-gpu/bundle (default; or $1). The check runs them through that loader
# (ld-linux --library-path), so the GPU machine's own glibc and libraries
# are never mixed in, and the commands mlos run starts (python3, torch) use
# the GPU machine's, untouched. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${MLOS_BUILD_DIR:-build}"
out="${1:-build-gpu/bundle}"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for b in mlos mlosd mlos-policyhost; do
  [[ -x "$build/bin/$b" ]] || { echo "gpu_bundle: $build/bin/$b missing: run scripts/build.sh first" >&2; exit 1; }
  strip -o "$out/bin/$b" "$build/bin/$b"
done
# Every library the binaries load, resolved on this machine, and the loader.
ldd "$build"/bin/mlos "$build"/bin/mlosd "$build"/bin/mlos-policyhost |
  awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | sort -u |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
[[ -e "$out/lib/ld-linux-x86-64.so.2" ]] || { echo "gpu_bundle: no ld-linux-x86-64.so.2 found" >&2; exit 1; }
# The GPU sharing interposer, preloaded into the host's own programs (its
# python3): it needs only the host's glibc (2.34+), so it goes apart from
# the libraries above, which only the bundle's loader may load.
if [[ -e "$build/lib/libmlos-gpushare.so" ]]; then
  mkdir -p "$out/preload"
  strip -o "$out/preload/libmlos-gpushare.so" "$build/lib/libmlos-gpushare.so"
fi
# The Python package (scripts/test_wheel.sh builds it), for the staged
# collectives check: installed on the host only if its Python matches.
if compgen -G "build-wheel/dist/*.whl" > /dev/null; then
  mkdir -p "$out/wheel"
  cp build-wheel/dist/*.whl "$out/wheel/"
fi
size=$(du -sm "$out" | cut -f1)
echo "gpu_bundle: $out, ${size} MiB ($(ls "$out/lib" | wc -l) libraries)"
# The device tool carries at most 64 MiB of ignored build output.
(( size < 60 )) || { echo "gpu_bundle: ${size} MiB is too big to carry (64 MiB at most)" >&2; exit 1; }
