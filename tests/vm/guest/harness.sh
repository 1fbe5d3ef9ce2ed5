#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The guest side of the VM test bed, run as root by mlos-vm-harness.service
# once systemd has reached multi-user.target. The host's run folder is
# mounted at /mnt/out; what is written there is the run's result:
#   guest.log  everything below printed      facts.txt  the guest's kernel, NUMA, cgroups
#   rc         pytest's exit status          junit.xml  per-test results
# The repository is mounted read-only at the host's path (mlos.repo= on the
# kernel command line) with a memory overlay, so tests and build paths work
# unchanged and nothing is written back to the host.
set -uo pipefail
out=/mnt/out
exec > >(tee "$out/guest.log") 2>&1
echo "harness: started at uptime $(cut -d' ' -f1 /proc/uptime) s"
cut -d' ' -f1 /proc/uptime > "$out/ready_uptime"

arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p"; }
repo="$(arg mlos.repo)"
finish() {
  echo "${1:-1}" > "$out/rc"
  sync
  systemctl poweroff --no-block
  exit 0
}

mkdir -p /mnt/repo-ro /mnt/rw "$repo"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro repo /mnt/repo-ro || finish 3
mount -t tmpfs -o size=1g tmpfs /mnt/rw && mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay overlay -o "lowerdir=/mnt/repo-ro,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work" "$repo" || finish 3

# The project's build, installed as a package would be (cmake --install of
# the host's build into $out/stage, prefix /usr/local).
cp -a "$out/stage/." / && ldconfig && systemctl daemon-reload || finish 3

{
  echo "kernel: $(uname -r)"
  echo "cpus: $(nproc)"
  for n in /sys/devices/system/node/node[0-9]*; do
    echo "$(basename "$n"): cpus $(cat "$n/cpulist"), $(awk '/MemTotal/ {print $4 " kB"}' "$n/meminfo"), distances $(cat "$n/distance")"
  done
  echo "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
  echo "init: $(cat /proc/1/comm) $(systemctl --version | head -1)"
  echo "capabilities: $(grep CapEff /proc/self/status)"
  echo "boot: $(systemd-analyze 2>/dev/null | head -1)"
} | tee "$out/facts.txt"

cd "$repo" || finish 3
export MLOS_VM_GUEST=1 MLOS_BUILD_DIR="$repo/build"
# Extra pytest arguments from the host (run.sh -k EXPR, or test paths).
mapfile -t extra < <(cat "$out/pytest_args" 2>/dev/null)
((${#extra[@]})) || extra=(tests/vm/guest)
python3 -m pytest -v -p no:cacheprovider -rs --junitxml="$out/junit.xml" "${extra[@]}"
finish $?
