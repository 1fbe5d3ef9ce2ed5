# SPDX-License-Identifier: Apache-2.0
# Sourced by the chroot tests (smoke_in_chroot.sh, readme_in_chroot.sh): a
# Debian 12 minbase chroot, cached, and one run's root over it.
#
#   chroot_base_prepare TAG PACKAGE...   # sets $base: the cached base of
#                                        # debootstrap --variant=minbase
#                                        # bookworm plus PACKAGE...
#   chroot_run_root TAG                  # sets $run and $root: an overlay
#                                        # over $base (a copy without
#                                        # overlayfs), removed at exit with
#                                        # every mount and process in it
#   chroot_mount TARGET ARGS...          # mounts ARGS at TARGET, unmounted at exit
#   chroot_pids                          # processes whose root is $root
#
# The cache is $MLOS_CHROOT_CACHE (default /var/cache/mlos/chroot): one base
# per recipe (suite, variant, packages; keyed by their hash), the newest two
# kept, built under a lock so that runs share a finished base read-only.
# Needs root and Debian's mirror (debootstrap is installed when missing) ($MLOS_CHROOT_MIRROR, else
# $MLOS_VM_MIRROR, else deb.debian.org). The caller defines log and fail.
cache_root="${MLOS_CHROOT_CACHE:-/var/cache/mlos/chroot}"
suite=bookworm
mirror="${MLOS_CHROOT_MIRROR:-${MLOS_VM_MIRROR:-http://deb.debian.org/debian}}"
security_mirror="${MLOS_CHROOT_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
chroot_mounts=()   # mount points, unmounted in reverse order at exit
chroot_exit_hooks=()  # commands run first at exit (stopping what the caller started)

chroot_base_prepare() {
  local tag="$1"
  shift
  [[ $EUID -eq 0 ]] || { echo "$tag: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
  if ! command -v debootstrap > /dev/null; then
    # shellcheck source=scripts/lib/apt_packages.sh
    source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/apt_packages.sh"
    apt_install_missing "$tag" debootstrap
  fi
  local recipe key
  recipe="$(printf '%s\n' "recipe 1" "$suite" minbase "$@")"
  key="$(printf '%s' "$recipe" | sha256sum | cut -c1-16)"
  base="$cache_root/$key"
  mkdir -p "$cache_root"
  exec 9> "$cache_root/.lock"
  flock 9  # one builder at a time; runs share the finished base read-only
  if [[ -f "$base/complete" ]]; then
    log "cached base $base ($(cat "$base/complete"))"
  else
    log "building base $base: debootstrap $suite from $mirror"
    local build_start=$SECONDS work include=""
    work="$(mktemp -d "$cache_root/.build-XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    (($# == 0)) || include="--include=$(IFS=,; echo "$*")"
    debootstrap --variant=minbase ${include:+"$include"} "$suite" "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
    # The point releases' and security updates too, as a Debian 12 installed
    # today has them.
    cat > "$work/root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
    rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*
    echo "$(date -u +%FT%TZ), built in $((SECONDS - build_start)) s" > "$work/complete"
    rm -rf "$base"
    mv "$work" "$base"
    trap - EXIT
    # Older bases (other keys) go, but the one before this. (Keys are 16 hex
    # digits: archives/ and the runs' folders are not bases.)
    find "$cache_root" -mindepth 1 -maxdepth 1 -type d -regextype egrep -regex '.*/[0-9a-f]{16}' -printf '%T@ %p\n' |
      sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -rf
    log "built base in $((SECONDS - build_start)) s"
  fi
  flock -u 9
}

chroot_pids() {
  local p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/root" 2>/dev/null)" == "$root" ]] && echo "${p#/proc/}"
  done
  return 0
}

chroot_cleanup() {
  local status=$? pid m i hook
  for hook in "${chroot_exit_hooks[@]}"; do eval "$hook" || true; done
  for pid in $(chroot_pids); do kill -KILL "$pid" 2>/dev/null || true; done
  for ((i = ${#chroot_mounts[@]} - 1; i >= 0; i--)); do
    m="${chroot_mounts[i]}"
    umount -R "$m" 2>/dev/null || umount -lR "$m" 2>/dev/null || echo "chroot: could not unmount $m" >&2
  done
  if ! findmnt -rn -o TARGET | grep -q "^$run"; then
    rm -rf "$run"
  else
    echo "chroot: mounts left under $run; not removing it" >&2
  fi
  exit "$status"
}

chroot_mount() {
  local target="$1"
  shift
  mkdir -p "$target"
  mount "$@" "$target" || return 1
  chroot_mounts+=("$target")
}

chroot_run_root() {
  run="$(mktemp -d "$cache_root/.run-XXXXXX")"
  root="$run/root"
  trap chroot_cleanup EXIT INT TERM
  mkdir -p "$run/upper" "$run/work" "$root"
  if chroot_mount "$root" -t overlay overlay -o "lowerdir=$base/root,upperdir=$run/upper,workdir=$run/work" 2>/dev/null; then
    log "run root $root (overlay on the base)"
  else
    log "no overlayfs here: copying the base"
    cp -a "$base/root/." "$root/"
  fi
  [[ "$root" != / && -x "$root/usr/bin/apt-get" ]] || fail "the chroot at $root is not a Debian root"
}
