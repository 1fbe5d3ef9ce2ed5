#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The VM test bed: boots Debian 12's kernel under QEMU with 4 vCPUs in 2
# NUMA nodes of unequal memory, cgroup v2 only and systemd as init, installs
# this build in it and runs tests/vm/guest (pytest) there as root with every
# capability. See docs/testing.md ("The VM test bed").
#
#   bash tests/vm/run.sh [PYTEST ARGS...]
#
# By default: tests/vm/guest (what only the VM can show) and the daemon's
# end-to-end tests that use real cgroups (tests/e2e, on v2 there).
#
# MLOS_VM_ACCEL   tcg (default), kvm, or auto (KVM only if a probe boot
#                 prints its first console line within 20 s)
# MLOS_VM_TIMEOUT seconds for the whole guest run (default 1200); the VM is
#                 killed then, and at exit whatever happens
# MLOS_VM_RUN_DIR where the run's results go (default build/vm-run)
# Exit status: pytest's in the guest; 124 on timeout; 3 if the guest could
# not set up.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${MLOS_BUILD_DIR:-$repo/build}"
build="$(cd "$build" && pwd)"
run="${MLOS_VM_RUN_DIR:-$build/vm-run}"
timeout_s="${MLOS_VM_TIMEOUT:-1200}"
accel="${MLOS_VM_ACCEL:-tcg}"
log() { echo "vm: $*" >&2; }

bash "$here/setup.sh"
image="$(bash "$here/build_image.sh")"

rm -rf "$run"
mkdir -p "$run"
# The build, installed as users install it, for the guest to copy into /.
DESTDIR="$run/stage" cmake --install "$build" --prefix /usr/local > "$run/install.log"
cp "$here/guest/harness.sh" "$run/harness.sh"
default_tests=(tests/vm/guest tests/e2e/test_daemon.py tests/e2e/test_dataload_daemon.py tests/e2e/test_memory_pressure.py)
(($#)) || set -- "${default_tests[@]}"
printf '%s\n' "$@" > "$run/pytest_args"

qemu_pid=""
cleanup() { if [[ -n "$qemu_pid" ]]; then kill -9 "$qemu_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

# Whether QEMU still runs (a child that exited stays a zombie until waited
# for, and kill -0 would still find it).
alive() {
  local state
  state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

# Waits until FILE has a line matching PATTERN (0), QEMU exits (1) or
# SECONDS pass (2).
wait_for_line() {
  local file="$1" pattern="$2" seconds="$3" deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    grep -q "$pattern" "$file" 2>/dev/null && return 0
    alive "$qemu_pid" || return 1
    sleep 0.5
  done
  return 2
}

if [[ "$accel" == auto ]]; then
  accel=tcg
  if [[ -w /dev/kvm ]]; then
    qemu-system-x86_64 -accel kvm -cpu host -m 512 -nographic -no-reboot -nic none -serial "file:$run/kvm-probe.log" \
      -monitor none -kernel "$image/vmlinuz" -append "console=ttyS0 panic=-1" > /dev/null 2>&1 &
    qemu_pid=$!
    if wait_for_line "$run/kvm-probe.log" "Linux version" 20; then accel=kvm; fi
    kill -9 "$qemu_pid" 2>/dev/null; wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=""
    log "KVM probe: $([[ $accel == kvm ]] && echo "booted, using KVM" || echo "no console line in 20 s, using TCG")"
  else
    log "no writable /dev/kvm, using TCG"
  fi
fi
case "$accel" in
  kvm) accel_args=(-accel kvm -cpu host) ;;
  tcg) accel_args=(-accel tcg,thread=multi -cpu max) ;;
  *) log "MLOS_VM_ACCEL must be tcg, kvm or auto"; exit 2 ;;
esac

# 4 vCPUs, 2 per node; node 0 has 2 GiB, node 1 has 1 GiB; SLIT distance 21
# between them (as two-socket machines report). No network: the host's
# files reach the guest over 9p only (repo read-only, the run folder
# writable).
log "booting ($accel), results in $run"
start=$SECONDS
qemu-system-x86_64 "${accel_args[@]}" -machine q35 -smp 4,sockets=2,cores=2,threads=1 -m 3G \
  -object memory-backend-ram,id=mem0,size=2G -object memory-backend-ram,id=mem1,size=1G \
  -numa node,nodeid=0,cpus=0-1,memdev=mem0 -numa node,nodeid=1,cpus=2-3,memdev=mem1 \
  -numa dist,src=0,dst=1,val=21 \
  -nographic -monitor none -serial "file:$run/console.log" -no-reboot -nic none \
  -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
  -append "console=ttyS0 root=LABEL=mlosroot rw panic=-1 systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all mlos.repo=$repo" \
  -drive "file=$image/root.img,if=virtio,format=raw,snapshot=on" \
  -virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
  -virtfs "local,path=$run,mount_tag=out,security_model=none,multidevs=remap" > "$run/qemu.log" 2>&1 &
qemu_pid=$!

rc=0
wait_for_line "$run/console.log" "harness: started" 300 && ready=0 || ready=$?
if ((ready == 0)); then
  log "guest ready after $((SECONDS - start)) s (guest uptime $(cat "$run/ready_uptime" 2>/dev/null) s)"
  deadline=$((start + timeout_s))
  while alive "$qemu_pid" && ((SECONDS < deadline)); do sleep 1; done
  if alive "$qemu_pid"; then
    log "timed out after $timeout_s s; killing the VM"
    rc=124
  else
    rc="$(cat "$run/rc" 2>/dev/null || echo 3)"
  fi
elif ((ready == 1)); then
  log "QEMU exited before the guest reached the harness:"
  tail -30 "$run/qemu.log" "$run/console.log" >&2 2>/dev/null || true
  rc=3
else
  log "the guest did not reach the harness within 300 s; console tail:"
  tail -30 "$run/console.log" >&2 2>/dev/null || true
  rc=124
fi
cleanup
qemu_pid=""
[[ -f "$run/facts.txt" ]] && sed 's/^/vm: guest /' "$run/facts.txt" >&2
tail -15 "$run/guest.log" 2>/dev/null >&2 || true
log "done in $((SECONDS - start)) s, status $rc ($accel)"
exit "$rc"
