#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README's two commands on a stranger's machine: a fresh clone in a stock
# Debian 12 (debootstrap --variant=minbase bookworm, with git to clone and
# nothing else: Debian's own /usr/bin/python3 is not even there), as root,
# each command timed from its start, downloads included.
#
#   bash tests/packaging/readme_in_chroot.sh [options]
#     --demo-only       run README's first command only (bash scripts/demo.sh)
#     --ref REF         clone this commit of this repository (default HEAD)
#     --before 'CMD'    run CMD in the clone first, timed apart (e.g. installing
#                       by hand what an older demo lacked)
#     --cold            empty download caches (apt's archives, pip's cache) for
#                       this run, so that every download counts; default:
#                       both kept between runs under the cache directory
#     --prepare-base    only build (or find) the cached base
#
# The chroot shares this machine's kernel, network and hardware: /proc, /sys
# (cgroups included) and /dev are bound in, the host's resolv.conf, hosts
# and CA bundle copied in. So it shows what a stock Debian 12 userland lacks (a
# package, a Python, a path), not what its kernel does: there is no systemd
# and the cgroups are the host's (v1 here), so the cgroup v2 and systemd paths
# are the VM bed's (tests/vm/run.sh). Needs root, Debian's
# mirror and PyPI. Logs and timings go to $MLOS_README_LOG_DIR (default
# build/readme-chroot); exit status 0 only if each command passed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
demo_only=0 cold=0 ref=HEAD before="" prepare_only=0
while (($#)); do
  case "$1" in
    --demo-only) demo_only=1 ;;
    --cold) cold=1 ;;
    --prepare-base) prepare_only=1 ;;
    --ref) ref="$2"; shift ;;
    --before) before="$2"; shift ;;
    -h|--help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "readme: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=tests/packaging/lib/chroot_base.sh
source "$here/lib/chroot_base.sh"
log_dir="${MLOS_README_LOG_DIR:-$repo/build/readme-chroot}"
commit="$(git -C "$repo" rev-parse --verify "$ref^{commit}")" || { echo "readme: no commit $ref" >&2; exit 2; }

t0=$SECONDS
log() { echo "readme [$((SECONDS - t0)) s]: $*" >&2; }
fail() { echo "readme: FAILED: $*" >&2; exit 1; }

# git: how a stranger gets the source (README's commands start in a clone).
chroot_base_prepare readme git ca-certificates
((prepare_only == 0)) || exit 0
mkdir -p "$log_dir"
rm -f "$log_dir"/*.log "$log_dir/timings.txt"
chroot_run_root
chroot_mount "$root/proc" -t proc -o nosuid,nodev,noexec proc
chroot_mount "$root/sys" --rbind /sys
mount --make-rslave "$root/sys"
chroot_mount "$root/dev" --rbind /dev
mount --make-rslave "$root/dev"
chroot_mount "$root/run" -t tmpfs -o nosuid,nodev,mode=0755 tmpfs
# What any installed Debian has and debootstrap leaves out: the machine's
# name resolving (/etc/hosts; collectives' default address is the host
# name's), and its DNS and CA bundle.
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp /etc/hosts "$root/etc/hosts" 2>/dev/null || true
if [[ -r /etc/ssl/certs/ca-certificates.crt ]]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
# Downloads kept between runs, unless --cold: apt's archives (indexes are
# fetched anew each run) and pip's cache.
if ((cold)); then
  downloads="$run/downloads"
else
  downloads="$cache_root/readme-downloads"
fi
mkdir -p "$downloads/archives/partial" "$downloads/pip"
chroot_mount "$root/var/cache/apt/archives" --bind "$downloads/archives"
chroot_mount "$root/root/.cache/pip" --bind "$downloads/pip"
# The source, read-only, to clone from.
chroot_mount "$root/mnt/source" --bind "$repo"
mount -o remount,bind,ro "$root/mnt/source"

in_root() {  # a login-like root shell's environment on a stock Debian 12
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb "$@"
}

in_root git config --global --add safe.directory '*'
in_root git clone --quiet --no-checkout /mnt/source /root/mlos > "$log_dir/clone.log" 2>&1 ||
  { cat "$log_dir/clone.log" >&2; fail "git clone"; }
in_root git -C /root/mlos checkout --quiet "$commit" > "$log_dir/clone.log" 2>&1 ||
  { cat "$log_dir/clone.log" >&2; fail "git checkout $commit"; }
log "cloned $commit into the chroot's /root/mlos ($(in_root sh -c 'command -v python3 || echo no python3'))"

# Runs `bash -c CMD` in the clone; each output line gets the seconds since
# its start. Sets $took and $first_line_at (seconds to the first line
# matching $1, or "-").
timed() {
  local marker="$1" name="$2" cmd="$3" status=0
  local start=$SECONDS
  set +e
  in_root bash -c "cd /root/mlos && $cmd" 2>&1 | while IFS= read -r line; do
    printf '%5d %s\n' "$((SECONDS - start))" "$line"
  done > "$log_dir/$name.log"
  status=${PIPESTATUS[0]}
  set -e
  took=$((SECONDS - start))
  first_line_at="$(grep -m1 -F -- "$marker" "$log_dir/$name.log" | awk '{print $1}')"
  first_line_at="${first_line_at:--}"
  echo "$name: exit $status in $took s; '$marker' at ${first_line_at} s" | tee -a "$log_dir/timings.txt" >&2
  return "$status"
}

if [[ -n "$before" ]]; then
  timed "" before "$before" || fail "--before '$before' (log: $log_dir/before.log)"
fi
# What came over the network so far (with --cold, all of it): apt's
# archives and pip's cache.
downloaded() {
  echo "$1: downloaded so far: apt $(du -sh "$downloads/archives" | cut -f1), pip $(du -sh "$downloads/pip" | cut -f1)" |
    tee -a "$log_dir/timings.txt" >&2
}
timed "== mlos topo" demo "bash scripts/demo.sh" || { tail -30 "$log_dir/demo.log" >&2; fail "README command 1 (log: $log_dir/demo.log)"; }
du -sh "$root/root/mlos/build" 2>/dev/null | awk '{print "demo: build tree " $1}' | tee -a "$log_dir/timings.txt" >&2
downloaded demo
if ((demo_only == 0)); then
  timed "test.sh: total" test "bash scripts/test.sh" || { tail -40 "$log_dir/test.log" >&2; fail "README command 2 (log: $log_dir/test.log)"; }
  grep 'test.sh: .*: [0-9]* s$' "$log_dir/test.log" | sed 's/^ *[0-9]* //' | tee -a "$log_dir/timings.txt" >&2 || true
  downloaded test
fi
du -sh --exclude=proc --exclude=sys --exclude=dev "$run/upper" 2>/dev/null | awk '{print "disk written in the chroot: " $1}' |
  tee -a "$log_dir/timings.txt" >&2 || true
log "PASSED in $((SECONDS - t0)) s (timings: $log_dir/timings.txt)"
