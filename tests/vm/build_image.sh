#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds (or finds cached) the VM test bed's guest: a Debian 12 root file
# system with systemd as init, Debian's own kernel and its initramfs, and the
# runtime libraries the project's build links against. Prints the cache
# directory holding vmlinuz, initrd.img and root.img.
#
# Cached in $MLOS_VM_CACHE (default /var/cache/mlos/vm) under a key hashed
# from this script, the guest's unit files, the package list and the Debian
# suite: a change to any of them builds a new image, nothing else does.
# Needs root (debootstrap, chroot), debootstrap and e2fsprogs
# (tests/vm/setup.sh installs them) and Debian's package mirror.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${MLOS_BUILD_DIR:-$repo/build}"
cache_root="${MLOS_VM_CACHE:-/var/cache/mlos/vm}"
suite=bookworm
mirror="${MLOS_VM_MIRROR:-http://deb.debian.org/debian}"

log() { echo "vm-image: $*" >&2; }

# What the guest needs besides the build: systemd as init (and udev, which
# loads the 9p and virtio modules), Debian's kernel, the tests' Python, and
# the tools the guest tests read the kernel with.
packages=(systemd systemd-sysv udev dbus kmod linux-image-amd64 initramfs-tools
  python3 python3-pytest procps util-linux iproute2 stress-ng)
# The runtime libraries of what was built, found the way the dynamic linker
# finds them, as Debian packages (so a new dependency rebuilds the image).
mapfile -t built < <(find "$build/bin" "$build/lib" "$build/policies" -maxdepth 1 -type f \
  \( -perm -u+x -o -name '*.so*' \) 2>/dev/null | sort)
((${#built[@]})) || { log "no build in $build (run scripts/build.sh first)"; exit 2; }
mapfile -t libpkgs < <(ldd "${built[@]}" 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
  xargs -r -n1 readlink -f | sort -u | xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | sort -u)
packages+=("${libpkgs[@]}")
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)

key="$( (cat "$0" "$here"/guest/*.service "$here"/guest/*.conf; printf '%s\n' "$suite" "${packages[@]}") |
  sha256sum | cut -c1-16)"
out="$cache_root/$key"
if [[ -f "$out/complete" ]]; then
  log "cached image $out"
  echo "$out"
  exit 0
fi

log "building $out (${#packages[@]} packages from $suite)"
mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.build-XXXXXX")"
trap 'umount -R "$work/root/proc" "$work/root/sys" "$work/root/dev" 2>/dev/null || true; rm -rf "$work"' EXIT
start=$SECONDS
include="$(IFS=,; echo "${packages[*]}")"
debootstrap --variant=minbase --include="$include" "$suite" "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }
log "debootstrap done in $((SECONDS - start)) s"

root="$work/root"
echo mlos-vm > "$root/etc/hostname"
printf '127.0.0.1 localhost mlos-vm\n' > "$root/etc/hosts"
: > "$root/etc/fstab"
# root without a password on the console (the guest has no network).
chroot "$root" passwd -d root > /dev/null
# The harness unit: mounts the shares the host passes and runs the guest
# script from the repository (so changing the tests never rebuilds this).
install -m 0644 "$here/guest/mlos-vm-harness.service" "$root/etc/systemd/system/"
install -D -m 0644 "$here/guest/journald.conf" "$root/etc/systemd/journald.conf.d/mlos-vm.conf"
ln -sf /etc/systemd/system/mlos-vm-harness.service "$root/etc/systemd/system/multi-user.target.wants/"
# Nothing that waits on a network or a clock the guest does not have.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service \
  getty@tty1.service serial-getty@ttyS0.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# The initramfs of the kernel inside, with the modules the root needs.
printf 'virtio_pci\nvirtio_blk\next4\n' >> "$root/etc/initramfs-tools/modules"
chroot "$root" update-initramfs -u -k all > "$work/initramfs.log" 2>&1 ||
  { tail -20 "$work/initramfs.log" >&2; log "update-initramfs failed"; exit 1; }
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*

mkdir -p "$work/out"
cp "$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)" "$work/out/vmlinuz"
cp "$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)" "$work/out/initrd.img"
used_mb=$(du -sm "$root" | cut -f1)
# (stdout is the cache path this script prints: mkfs talks to stderr)
mkfs.ext4 -q -F -L mlosroot -d "$root" "$work/out/root.img" "$((used_mb + 1536))M" >&2
printf '%s\n' "${packages[@]}" > "$work/out/packages.txt"
echo "$(date -u +%FT%TZ) $((SECONDS - start)) s" > "$work/out/complete"
rm -rf "$out"
mv "$work/out" "$out"
# Older images (other keys) go, but the one built before this: 2.5 GB each.
ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
log "built $out in $((SECONDS - start)) s ($(du -sh --apparent-size "$out/root.img" | cut -f1) image)"
echo "$out"
