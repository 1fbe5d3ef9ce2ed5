#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Smoke test of the Debian packages (scripts/build_debs.sh) in a Debian 12
# chroot, never on this machine's own system: install the four packages with
# apt (dependencies from the mirror), run mlosd from them and a job through
# it, fetch /metrics, verify the unit, build a C program against
# libmlos-dev, then purge them and check that no file of theirs is left.
#
#   bash tests/packaging/smoke_in_chroot.sh [DEBS_DIR]   # default build-deb/debs
#   bash tests/packaging/smoke_in_chroot.sh --prepare-base  # only build (or find) the cached base
#
# The chroot's base (debootstrap --variant=minbase plus the tools this test
# uses) is cached in $MLOS_CHROOT_CACHE (default /var/cache/mlos/chroot)
# under a key hashed from its recipe below, as tests/vm/build_image.sh
# caches its image. Each run works on an overlay of that base (a copy where
# overlayfs is missing), so the cache stays as debootstrap left it. Needs
# root, debootstrap and Debian's mirror ($MLOS_CHROOT_MIRROR, else
# $MLOS_VM_MIRROR, else deb.debian.org). Logs go to $MLOS_SMOKE_LOG_DIR
# (default DEBS_DIR/../packaging-smoke). Exit status 0 only if every check
# passed; each failure says what it was.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
prepare_only=0
if [[ "${1:-}" == --prepare-base ]]; then
  prepare_only=1
  shift
fi
debs_dir="$(cd "${1:-$repo/build-deb/debs}" 2>/dev/null && pwd)" || ((prepare_only)) ||
  { echo "smoke: no packages directory ${1:-$repo/build-deb/debs} (run scripts/build_debs.sh)" >&2; exit 2; }
# shellcheck source=tests/packaging/lib/chroot_base.sh
source "$here/lib/chroot_base.sh"
log_dir="${MLOS_SMOKE_LOG_DIR:-$(dirname "${debs_dir:-$repo/build-deb/debs}")/packaging-smoke}"
packages=(libmlos0 libmlos-dev mlosd mlos)
version="$(head -1 "$repo/VERSION")"

t0=$SECONDS
log() { echo "smoke [$((SECONDS - t0)) s]: $*" >&2; }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

debs=()
((prepare_only)) || for p in "${packages[@]}"; do
  mapfile -t found < <(find "$debs_dir" -maxdepth 1 -name "${p}_*.deb" | sort)
  ((${#found[@]} == 1)) || fail "expected one ${p}_*.deb in $debs_dir, found ${#found[@]}"
  debs+=("${found[0]}")
done

# --- The cached base --------------------------------------------------------
# What the test itself uses beyond the packages' own dependencies: a C
# compiler and pkg-config (the libmlos-dev check), curl (/metrics), systemd
# (systemd-analyze; it is not running in the chroot, as in an image build)
# and man-db (systemd-analyze checks the unit's man:mlosd(8) with man).
# A change to this recipe makes a new key, hence a new base.
base_packages=(gcc libc6-dev pkg-config curl systemd man-db)
chroot_base_prepare smoke "${base_packages[@]}"
((prepare_only == 0)) || exit 0

# --- This run's root: an overlay over the base --------------------------------
mkdir -p "$log_dir"
rm -f "$log_dir"/*.log
mlosd_pid=""
stop_mlosd() {
  if [[ -n "$mlosd_pid" ]] && kill -0 "$mlosd_pid" 2>/dev/null; then
    kill -TERM "$mlosd_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$mlosd_pid" 2>/dev/null || break; sleep 0.1; done
  fi
}
chroot_exit_hooks+=(stop_mlosd)
chroot_run_root
chroot_mount "$root/proc" -t proc -o nosuid,nodev,noexec proc
# A read-only sysfs of its own (topology for hwloc): no cgroup hierarchy is
# mounted in it, so nothing in the chroot can change this machine's cgroups.
chroot_mount "$root/sys" -t sysfs -o ro,nosuid,nodev,noexec sysfs
chroot_mount "$root/dev/pts" -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts
chroot_mount "$root/dev/shm" -t tmpfs -o nosuid,nodev,mode=1777 tmpfs
chroot_mount "$root/run" -t tmpfs -o nosuid,nodev,mode=0755 tmpfs
# Dependencies downloaded once, kept between runs (apt still resolves them
# against the mirror's index, fetched anew each run).
mkdir -p "$cache_root/archives/partial"
chroot_mount "$root/var/cache/apt/archives" --bind "$cache_root/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# No service of any dependency starts in the chroot (policy-rc.d: 101).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"

in_root() {  # a command in the chroot, with a clean environment
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"
}

# --- Install ------------------------------------------------------------------
step=$SECONDS
in_root apt-get update -q > "$log_dir/apt-update.log" 2>&1 ||
  { tail -20 "$log_dir/apt-update.log" >&2; fail "apt-get update in the chroot"; }
mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
in_chroot_debs=()
for deb in "${debs[@]}"; do in_chroot_debs+=("/tmp/debs/${deb##*/}"); done
in_root apt-get install -y -q "${in_chroot_debs[@]}" > "$log_dir/apt-install.log" 2>&1 ||
  { tail -30 "$log_dir/apt-install.log" >&2; fail "apt-get install of the packages"; }
log "installed ${packages[*]} with their dependencies in $((SECONDS - step)) s"
for p in "${packages[@]}"; do
  got="$(in_root dpkg-query -W -f='${Status} ${Version}' "$p")"
  [[ "$got" == "install ok installed $version-"* ]] || fail "$p is '$got', not installed at $version"
done
# What the packages own, for the purge check.
for p in "${packages[@]}"; do in_root dpkg -L "$p"; done | sort -u > "$log_dir/package-paths.txt"
log "$(wc -l < "$log_dir/package-paths.txt") paths owned by the packages"

# --- The installed system -------------------------------------------------------
[[ "$(in_root mlosd --version)" == "mlosd $version "* ]] || fail "mlosd --version: $(in_root mlosd --version 2>&1)"
[[ "$(in_root mlos --version)" == *"$version"* ]] || fail "mlos --version: $(in_root mlos --version 2>&1)"
log "mlosd --version: $(in_root mlosd --version)"
in_root dpkg-query -W -f='${Conffiles}\n' mlosd | grep -q '^ /etc/mlos/mlosd.json ' ||
  fail "/etc/mlos/mlosd.json is not a conffile of mlosd"
# (with the flags mlosd runs with below: "cgroups": "auto" finds no
# hierarchy in this chroot, which --check-config rightly refuses)
in_root mlosd --check-config --config /etc/mlos/mlosd.json --cgroups none --confine off \
  > "$log_dir/check-config.log" 2>&1 ||
  fail "mlosd --check-config rejects the packaged /etc/mlos/mlosd.json (log: $log_dir/check-config.log)"
# Enabled (deb-systemd-helper works without a running systemd), not started.
[[ -L "$root/etc/systemd/system/multi-user.target.wants/mlosd.service" ]] ||
  fail "the postinst did not enable mlosd.service"
[[ -z "$(chroot_pids)" ]] || fail "installing started processes in the chroot: $(chroot_pids | tr '\n' ' ')"
if [[ -x "$root/usr/bin/systemd-analyze" ]]; then
  in_root systemd-analyze verify /lib/systemd/system/mlosd.service > "$log_dir/systemd-analyze.log" 2>&1 ||
    { cat "$log_dir/systemd-analyze.log" >&2; fail "systemd-analyze verify mlosd.service"; }
  # It exits 0 on some findings; anything it says about the unit is one.
  ! grep -i 'mlosd' "$log_dir/systemd-analyze.log" >&2 || fail "systemd-analyze verify complained about mlosd.service"
  log "systemd-analyze verify mlosd.service: clean"
else
  log "no systemd-analyze in the chroot: unit not verified"
fi

# --- mlosd and a job through it ---------------------------------------------------
# The packaged config, with the flags a chroot needs: no cgroups (none are
# mounted here), no node confinement, /metrics on a free port. The
# directories the unit has systemd make (RuntimeDirectory=mlos,
# StateDirectory=mlos) are made here with its modes.
install -d -m 0755 "$root/run/mlos"
install -d -m 0700 "$root/var/lib/mlos"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  /usr/sbin/mlosd --config /etc/mlos/mlosd.json --cgroups none --confine off \
  --metrics-listen 127.0.0.1:0 --log stderr > "$log_dir/mlosd.log" 2>&1 &
mlosd_pid=$!
for _ in $(seq 600); do
  grep -q 'ready on' "$log_dir/mlosd.log" && break
  kill -0 "$mlosd_pid" 2>/dev/null || { cat "$log_dir/mlosd.log" >&2; fail "mlosd exited before it was ready"; }
  sleep 0.1
done
grep -q 'ready on /run/mlos/mlosd.sock' "$log_dir/mlosd.log" ||
  { cat "$log_dir/mlosd.log" >&2; fail "mlosd not ready on /run/mlos/mlosd.sock within 60 s"; }
log "mlosd: $(grep -o 'ready on.*' "$log_dir/mlosd.log" | head -1)"

# MLOS_MODE=daemon: the job goes through mlosd or fails (no embedded fallback).
in_root MLOS_MODE=daemon mlos run --cpus 1 --label pkg-smoke -- true > "$log_dir/mlos-run.log" 2>&1 ||
  { cat "$log_dir/mlos-run.log" >&2; fail "mlos run --cpus 1 -- true through mlosd"; }
in_root MLOS_MODE=daemon mlos run --cpus 1 --label pkg-smoke-status -- mlos status --source daemon \
  > "$log_dir/mlos-status.log" 2>&1 ||
  { cat "$log_dir/mlos-status.log" >&2; fail "mlos status --source daemon inside a job"; }
grep -q 'pkg-smoke-status' "$log_dir/mlos-status.log" ||
  { cat "$log_dir/mlos-status.log" >&2; fail "mlos status did not list the running job pkg-smoke-status"; }
for _ in $(seq 100); do grep -q '(pkg-smoke) ended' "$log_dir/mlosd.log" && break; sleep 0.1; done
grep -q 'granted job [0-9]* (pkg-smoke) CPUs' "$log_dir/mlosd.log" || fail "mlosd's log has no grant for pkg-smoke"
# mlos run execs the command, so its job ends with that process.
grep -q '(pkg-smoke) ended: \(owner gone\|released\)' "$log_dir/mlosd.log" || fail "mlosd's log has no end of pkg-smoke"
log "job pkg-smoke granted and ended in mlosd's log; mlos status listed pkg-smoke-status"

port="$(grep -o 'metrics on http://127.0.0.1:[0-9]*/metrics' "$log_dir/mlosd.log" | head -1 | sed 's/.*:\([0-9]*\)\/metrics/\1/')"
[[ -n "$port" ]] || fail "mlosd did not say where /metrics is"
in_root curl -fsS --max-time 10 "http://127.0.0.1:$port/metrics" > "$log_dir/metrics.txt" ||
  fail "GET /metrics on port $port"
grep -q '^mlos_' "$log_dir/metrics.txt" || fail "/metrics has no mlos_ series"
log "/metrics: $(grep -c '^mlos_' "$log_dir/metrics.txt") mlos_ samples"

# --- libmlos-dev: pkg-config and a C program ----------------------------------------
[[ "$(in_root pkg-config --modversion mlos)" == "$version" ]] ||
  fail "pkg-config --modversion mlos: '$(in_root pkg-config --modversion mlos 2>&1)', not $version"
cat > "$root/tmp/smoke.c" <<'EOF'
/* Built against libmlos-dev; asks mlosd for a CPU through libmlos. */
#include <mlos/errors.h>
#include <mlos/training.h>
#include <mlos/version.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (strcmp(mlos_version_string(), MLOS_VERSION_STRING) != 0) {
    printf("library %s, headers %s\n", mlos_version_string(), MLOS_VERSION_STRING);
    return 1;
  }
  mlos_training_resource_request_t req = {.num_cpus = 1, .numa_node_preference = -1};
  mlos_training_resources_t* res = NULL;
  int rc = mlos_training_request_resources(&req, &res);
  if (rc != 0) {
    printf("request: %s: %s\n", mlos_strerror(rc), mlos_last_error_message());
    return 1;
  }
  rc = mlos_training_release_resources(res);
  printf("libmlos %s: request and release %s\n", mlos_version_string(), rc == 0 ? "ok" : mlos_strerror(rc));
  return rc == 0 ? 0 : 1;
}
EOF
in_root sh -c 'cc -std=c11 -Wall -Werror -o /tmp/smoke /tmp/smoke.c $(pkg-config --cflags --libs mlos)' \
  > "$log_dir/cc.log" 2>&1 || { cat "$log_dir/cc.log" >&2; fail "compiling a C program against libmlos-dev"; }
in_root MLOS_MODE=daemon /tmp/smoke > "$log_dir/c-program.log" 2>&1 ||
  { cat "$log_dir/c-program.log" >&2; fail "the C program against libmlos (through mlosd)"; }
log "C program: $(cat "$log_dir/c-program.log")"

kill -TERM "$mlosd_pid"
wait "$mlosd_pid" || fail "mlosd exited with status $? on SIGTERM (log: $log_dir/mlosd.log)"
mlosd_pid=""
[[ -z "$(chroot_pids)" ]] || fail "processes left in the chroot after mlosd stopped: $(chroot_pids | tr '\n' ' ')"

# --- Purge ------------------------------------------------------------------------
step=$SECONDS
in_root apt-get purge -y -q "${packages[@]}" > "$log_dir/apt-purge.log" 2>&1 ||
  { tail -30 "$log_dir/apt-purge.log" >&2; fail "apt-get purge of the packages"; }
for p in "${packages[@]}"; do
  got="$(in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  [[ -z "$got" || "$got" == *" not-installed" ]] || fail "$p is '$got' after purge, not gone"
done
left=()
while read -r path; do
  [[ "$path" != /. ]] || continue
  [[ -e "$root$path" || -L "$root$path" ]] || continue
  # What was there before the install (/usr, /lib -> usr/lib, ...) stays,
  # and so does a directory another package still owns (a dependency's).
  [[ -e "$base/root$path" || -L "$base/root$path" ]] && continue
  [[ -d "$root$path" && ! -L "$root$path" ]] && in_root dpkg-query -S "$path" > /dev/null 2>&1 && continue
  left+=("$path")
done < "$log_dir/package-paths.txt"
((${#left[@]} == 0)) || fail "left after purge: ${left[*]}"
for path in /etc/mlos /var/lib/mlos /etc/systemd/system/multi-user.target.wants/mlosd.service \
            /etc/systemd/system/mlosd.service /var/lib/systemd/deb-systemd-helper-enabled/mlosd.service.dsh-also; do
  [[ ! -e "$root$path" && ! -L "$root$path" ]] || fail "$path left after purge"
done
log "purged in $((SECONDS - step)) s; none of the $(wc -l < "$log_dir/package-paths.txt") paths left, nor /etc/mlos, /var/lib/mlos or the unit's enablement"
log "PASSED in $((SECONDS - t0)) s (logs: $log_dir)"
