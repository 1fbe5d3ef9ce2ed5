#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real-GPU check (docs/gpu.md, "Checking on a real GPU"): what mlOS
# builds for GPUs today, held against the driver's own view on a machine
# with an NVIDIA GPU. About 3 minutes on one GPU; changes none of the
# device's settings (no MIG, compute-mode or clock changes, no resets).
#
#   here:             bash scripts/build.sh && bash scripts/gpu_bundle.sh
#   on the GPU host:  bash scripts/gpu_check.sh [BUNDLE]   (default build-gpu/bundle)
#
# The bundle's binaries run through its own loader (no build dependency is
# needed there); the commands mlos run starts use the host's python3, its
# libcuda.so.1 and its PyTorch when it has one. Results: one line per check
# (PASS, FAIL, SKIP or PENDING, with the figures), in $OUT/gpu-check.txt
# when $OUT is set. Exit status 1 if any check failed, 0 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="$(realpath "${1:-build-gpu/bundle}")"
work="$(mktemp -d /tmp/mlos-gpu-check.XXXXXX)"
report="${OUT:-$work}/gpu-check.txt"
: > "$report"
failed=0
say() { echo "$*" | tee -a "$report"; }
pass() { say "PASS $1: $2"; }
fail() { say "FAIL $1: $2"; failed=1; }
loader=("$bundle/lib/ld-linux-x86-64.so.2" --library-path "$bundle/lib")
mlos() { "${loader[@]}" "$bundle/bin/mlos" "$@"; }
mlosd_pid=""
holder_pid=""
load_pid=""
cleanup() {
  [[ -n "$holder_pid" ]] && kill "$holder_pid" 2>/dev/null
  [[ -n "$load_pid" ]] && kill "$load_pid" 2>/dev/null
  [[ -n "$mlosd_pid" ]] && kill "$mlosd_pid" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

[[ -x "$bundle/bin/mlos" ]] || { echo "gpu_check: no bundle at $bundle (scripts/gpu_bundle.sh makes it)" >&2; exit 2; }
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  say "SKIP all: nvidia-smi lists no GPU here"
  exit 0
fi

# What the machine is (for the note): GPUs, driver, CPUs and nodes, Python
# and whether it has PyTorch.
say "host: $(nproc) CPUs, $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA node(s), kernel $(uname -r)"
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,compute_mode,mig.mode.current \
  --format=csv,noheader | sed 's/^/nvidia-smi: /' | tee -a "$report"
torch_version="$(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || echo none)"
say "python3: $(python3 --version 2>&1); torch: $torch_version"

# 1. Discovery: NVML through mlOS against nvidia-smi, GPU by GPU.
mlos topo --json > "$work/topo.json" 2> "$work/topo.err" || fail discovery "mlos topo failed: $(cat "$work/topo.err")"
nvidia-smi --query-gpu=uuid,pci.bus_id,memory.total --format=csv,noheader,nounits > "$work/smi.csv"
python3 - "$work/topo.json" "$work/smi.csv" > "$work/discovery.txt" <<'PY'
import json, sys
nvml = json.load(open(sys.argv[1]))["nvml"]
smi = {}
for line in open(sys.argv[2]):
    uuid, bus, mib = [f.strip() for f in line.split(",")]
    smi[uuid] = (bus.lower()[-12:], int(mib))  # nvidia-smi writes 00000000:3B:00.0
ours = {g["uuid"]: (g["pci_busid"].lower(), g["memory_total_bytes"] // (1 << 20), g["numa_node"]) for g in nvml["gpus"]}
bad = [u for u in smi if u not in ours or ours[u][:2] != smi[u]] + [u for u in ours if u not in smi]
print("ok" if not bad and smi else "bad", len(smi), json.dumps({"mlos": ours, "nvidia-smi": smi, "differ": bad}))
PY
read -r verdict count rest < "$work/discovery.txt"
[[ "$verdict" == ok ]] && pass discovery "$count GPU(s), UUID, bus id and memory equal nvidia-smi's" ||
  fail discovery "$rest"

# 2. NUMA: each GPU's node as mlOS has it against the kernel's for its PCI
# device.
python3 - "$work/topo.json" > "$work/numa.txt" <<'PY'
import json, sys
bad = []
for g in json.load(open(sys.argv[1]))["nvml"]["gpus"]:
    try:
        kernel = int(open(f"/sys/bus/pci/devices/{g['pci_busid'].lower()}/numa_node").read())
    except OSError as e:
        bad.append(f"{g['uuid']}: {e}")
        continue
    if kernel != g["numa_node"]:
        bad.append(f"{g['uuid']}: mlos {g['numa_node']}, sysfs {kernel}")
print("ok" if not bad else "bad", "; ".join(bad) or "nodes equal sysfs")
PY
read -r verdict rest < "$work/numa.txt"
[[ "$verdict" == ok ]] && pass numa "$rest" || fail numa "$rest"

# 3. mlos run --gpus 1: the command sees exactly the GPU granted (the
# driver API through ctypes, and torch when there is one), on CPUs of the
# GPU's node.
cat > "$work/probe.py" <<'PY'
import ctypes, json, os
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
n = ctypes.c_int()
cuda.cuDeviceGetCount(ctypes.byref(n))
uuids = []
for i in range(n.value):
    dev, raw = ctypes.c_int(), (ctypes.c_ubyte * 16)()
    cuda.cuDeviceGet(ctypes.byref(dev), i)
    cuda.cuDeviceGetUuid(raw, dev)
    h = bytes(raw).hex()
    uuids.append(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
torch_count = None
try:
    import torch
    torch_count = torch.cuda.device_count()
except ImportError:
    pass
cpus = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Cpus_allowed_list")][0]
print(json.dumps({"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "cuda_uuids": uuids, "torch": torch_count,
                  "cpus": cpus}))
PY
export MLOS_RUNTIME_DIR="$work/runtime" MLOS_MODE=embedded MLOS_TUNE_DIR="$work/tune"
mkdir -p "$MLOS_RUNTIME_DIR"
run_check() {  # $1: name (engine)
  if ! mlos run --no-tune --gpus 1 --cpus 1 -- python3 "$work/probe.py" > "$work/probe.json" 2> "$work/probe.err"; then
    fail "run-gpus-1 ($1)" "$(cat "$work/probe.err")"
    return
  fi
  python3 - "$work/probe.json" "$work/topo.json" > "$work/run.txt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
gpus = {g["uuid"]: g for g in json.load(open(sys.argv[2]))["nvml"]["gpus"]}
g = gpus.get(p["visible"])
problems = []
if g is None: problems.append(f"CUDA_VISIBLE_DEVICES={p['visible']!r} is not one GPU's UUID")
if p["cuda_uuids"] != [p["visible"]]: problems.append(f"CUDA sees {p['cuda_uuids']}")
if p["torch"] not in (None, 1): problems.append(f"torch sees {p['torch']} GPUs")
if g and g["numa_node"] >= 0:
    cpulist = open(f"/sys/devices/system/node/node{g['numa_node']}/cpulist").read().strip()
    def expand(s):
        out = set()
        for part in s.split(","):
            a, _, b = part.partition("-")
            out |= set(range(int(a), int(b or a) + 1))
        return out
    if not expand(p["cpus"]) <= expand(cpulist):
        problems.append(f"CPUs {p['cpus']} not on the GPU's node {g['numa_node']} ({cpulist})")
print("ok" if not problems else "bad", "; ".join(problems) or json.dumps(p))
PY
  read -r verdict rest < "$work/run.txt"
  [[ "$verdict" == ok ]] && pass "run-gpus-1 ($1)" "$rest" || fail "run-gpus-1 ($1)" "$rest"
}
busy_check() {  # $1: name; every GPU held exclusively, then one more asked for
  local all
  all=$(wc -l < "$work/smi.csv")
  # Not through the function: $! must be the process that becomes sleep.
  "${loader[@]}" "$bundle/bin/mlos" run --no-tune --gpus "$all" --cpus 1 -- sleep 60 > /dev/null 2> "$work/holder.err" &
  holder_pid=$!
  for _ in $(seq 100); do [[ "$(cat /proc/$holder_pid/comm 2>/dev/null)" == sleep ]] && break; sleep 0.1; done
  mlos run --no-tune --json --gpus 1 --cpus 1 -- true > /dev/null 2> "$work/busy.err"
  local rc=$?
  kill "$holder_pid" 2>/dev/null
  wait "$holder_pid" 2>/dev/null
  holder_pid=""
  if [[ $rc == 125 ]] && grep -q '"code":-27' "$work/busy.err"; then
    pass "exclusive ($1)" "a second claim while $all GPU(s) are held: GPUS_BUSY"
  else
    fail "exclusive ($1)" "rc $rc: $(cat "$work/busy.err" "$work/holder.err")"
  fi
}
# Per-job figures (mlosd): a job that holds 1 GiB of device memory (torch
# running matmuls when it is there, else the driver API's cuMemAlloc, idle)
# against nvidia-smi's per-process memory and GPU utilization, read while
# it runs.
cat > "$work/load.py" <<'PY'
import ctypes, sys, time
try:
    import torch
    assert torch.cuda.is_available(), "torch without CUDA"
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    a = torch.randn(4096, 4096, device="cuda")
    print("torch", flush=True)
    end = time.time() + 20
    while time.time() < end:
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
except Exception:  # no torch, a CPU-only torch, or torch's CUDA refused: the driver API alone
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx, ptr = ctypes.c_void_p(), ctypes.c_uint64()
    cuda.cuInit(0)
    dev = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev)
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 30)) == 0
    print("driver", flush=True)
    time.sleep(20)
PY
figures_check() {
  "${loader[@]}" "$bundle/bin/mlos" run --no-tune --gpus 1 --cpus 1 --label gpu-load -- python3 "$work/load.py" \
    > "$work/load.out" 2> "$work/load.err" &
  load_pid=$!
  local load=$load_pid
  for _ in $(seq 200); do [[ -s "$work/load.out" ]] && break; sleep 0.1; done
  sleep 5  # a few metrics updates while it runs
  mlos status --json > "$work/status.json"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits > "$work/apps.csv"
  nvidia-smi --query-gpu=uuid,utilization.gpu --format=csv,noheader,nounits > "$work/util.csv"
  wait "$load"
  load_pid=""
  python3 - "$work/status.json" "$work/apps.csv" "$work/util.csv" "$load" "$(cat "$work/load.out")" > "$work/fig.txt" <<'PY'
import json, sys
st, apps, util, pid, how = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
job = [j for j in st["jobs"] if j["label"] == "gpu-load"]
def number(text):  # nvidia-smi writes [N/A], [Not Supported], ... for what it cannot give
    text = text.strip()
    return int(text) if text.isdigit() else None
smi_mib = {int(p): number(m) for p, m in (l.split(",") for l in open(apps) if l.strip())}
smi_util = {u.strip(): number(x) for u, x in (l.split(",") for l in open(util) if l.strip())}
if not job or "gpu" not in job[0]:
    print("bad", "no GPU figures for the job in mlos status:", json.dumps(job)); sys.exit()
g, uuid = job[0]["gpu"], job[0]["gpus"][0]
ours_mib = (g["memory_bytes"] or 0) / 2**20
theirs = smi_mib.get(pid)
problems = []
if theirs is None:
    problems.append(f"nvidia-smi gives no memory for pid {pid} (MIG, or another pid namespace?)")
elif abs(ours_mib - theirs) > max(64, 0.05 * theirs):
    problems.append(f"memory {ours_mib:.0f} MiB, nvidia-smi {theirs} MiB for pid {pid}")
if how == "torch" and (g["utilization_percent"] or 0) < 50 <= (smi_util.get(uuid) or 0):
    problems.append(f"utilization {g['utilization_percent']} %, nvidia-smi {smi_util.get(uuid)} %")
print("ok" if not problems else "bad", "; ".join(problems) or
      f"{how}: memory {ours_mib:.0f} MiB (nvidia-smi {theirs}), utilization {g['utilization_percent']} % "
      f"(nvidia-smi {smi_util.get(uuid)} %), data stall {g['data_stall_seconds']} s")
PY
  read -r verdict rest < "$work/fig.txt"
  [[ "$verdict" == ok ]] && pass "per-job-figures" "$rest" || fail "per-job-figures" "$rest $(cat "$work/load.err")"
}

run_check embedded
busy_check embedded

# 4. The same through mlosd (no cgroups: nothing of the host is changed).
"${loader[@]}" "$bundle/bin/mlosd" \
  --socket "$work/mlosd.sock" --state-dir "$work/state" --ledger-dir "$MLOS_RUNTIME_DIR" --cgroups none \
  --metrics-listen 127.0.0.1:0 --policy-dir "$work/no-policies" > /dev/null 2> "$work/mlosd.log" &
mlosd_pid=$!
for _ in $(seq 100); do grep -q "ready on" "$work/mlosd.log" 2>/dev/null && break; sleep 0.1; done
if grep -q "ready on" "$work/mlosd.log"; then
  say "mlosd: $(grep -o 'GPUs jobs can claim: .*\|no GPU can be claimed: .*' "$work/mlosd.log" | head -1)"
  export MLOS_MODE=daemon MLOS_DAEMON_SOCKET="$work/mlosd.sock"
  run_check daemon
  busy_check daemon
  figures_check
else
  fail mlosd "did not start: $(tail -5 "$work/mlosd.log")"
fi

# 5. Sharing one GPU (docs/gpu.md, "Sharing a GPU"), embedded: the
# interposer preloaded into the host's python3.
export MLOS_MODE=embedded MLOS_GPUSHARE_LIBRARY="$bundle/preload/libmlos-gpushare.so"
unset MLOS_DAEMON_SOCKET
first_gpu=$(head -1 "$work/smi.csv" | cut -d, -f1)
# The cap: CUDA reports it as the GPU's size, 1 GiB fits, 1.5 GiB more is
# refused cleanly (torch.OutOfMemoryError, else CUDA_ERROR_OUT_OF_MEMORY).
cat > "$work/cap.py" <<'PY'
import ctypes, json
GIB = 1 << 30
try:
    import torch
    assert torch.cuda.is_available()
    free, total = torch.cuda.mem_get_info()
    x = torch.empty(GIB // 4, dtype=torch.float32, device="cuda")
    try:
        y = torch.empty(3 * GIB // 8, dtype=torch.float32, device="cuda")
        refused = False
    except torch.OutOfMemoryError:
        refused = True
    print(json.dumps({"how": "torch", "total": total, "free": free, "first": True, "refused": refused}))
except (ImportError, AssertionError):
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx, dev, a, b = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_uint64(), ctypes.c_uint64()
    cuda.cuInit(0); cuda.cuDeviceGet(ctypes.byref(dev), 0); cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    first = cuda.cuMemAlloc_v2(ctypes.byref(a), ctypes.c_size_t(GIB)) == 0
    refused = cuda.cuMemAlloc_v2(ctypes.byref(b), ctypes.c_size_t(3 * GIB // 2)) == 2
    print(json.dumps({"how": "driver", "total": total.value, "free": free.value, "first": first, "refused": refused}))
PY
if mlos run --no-tune --gpus "$first_gpu" --shared-gpus --cpus 1 --gpu-memory 2G -- python3 "$work/cap.py" \
     > "$work/cap.json" 2> "$work/cap.err"; then
  python3 - "$work/cap.json" > "$work/cap.txt" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
ok = c["total"] == 2 << 30 and c["first"] and c["refused"]
print("ok" if ok else "bad", json.dumps(c))
PY
  read -r verdict rest < "$work/cap.txt"
  [[ "$verdict" == ok ]] && pass sharing-cap "--gpu-memory 2G: $rest" || fail sharing-cap "$rest $(cat "$work/cap.err")"
else
  fail sharing-cap "$(cat "$work/cap.err")"
fi
# The shares: a greedy job (large matmuls) alone, then two of them at 50 %
# each, then two small training jobs (an MLP, batch 64: they leave the GPU
# idle between kernels) alone and together. Steps per second from each.
cat > "$work/train.py" <<'PY'
import json, sys, time
import torch
kind, seconds = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
if kind == "greedy":
    a = torch.randn(8192, 8192, device="cuda")
    step = lambda: torch.mm(a, a, out=b)
    b = torch.empty_like(a)
else:
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 512, device="cuda"), torch.randint(0, 10, (64,), device="cuda")
    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
for _ in range(20):
    step()
torch.cuda.synchronize()
n, start = 0, time.time()
while time.time() - start < seconds:
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    n += 10
print(json.dumps({"steps_per_s": n / (time.time() - start)}))
PY
if [[ "$torch_version" == none ]] || ! python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
  say "SKIP sharing-shares: needs PyTorch with CUDA on this host ($torch_version)"
else
  rate() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["steps_per_s"], 2))' "$1" 2>/dev/null || echo 0; }
  pair() {  # $1 kind, $2 and $3 the two jobs' share args ("" = none): both at once; their step rates
    local a b
    mlos run --no-tune --gpus "$first_gpu" --shared-gpus --cpus 1 $2 -- python3 "$work/train.py" "$1" 20 > "$work/a.json" 2>> "$work/share.err" &
    a=$!
    mlos run --no-tune --gpus "$first_gpu" --shared-gpus --cpus 1 $3 -- python3 "$work/train.py" "$1" 20 > "$work/b.json" 2>> "$work/share.err" &
    b=$!
    wait $a $b
    echo "$(rate "$work/a.json") $(rate "$work/b.json")"
  }
  for kind in greedy small; do
    mlos run --no-tune --gpus "$first_gpu" --shared-gpus --cpus 1 -- python3 "$work/train.py" "$kind" 20 \
      > "$work/alone.json" 2>> "$work/share.err"
    alone=$(rate "$work/alone.json")
    read -r a b <<< "$(pair "$kind" "--gpu-share 50" "--gpu-share 50")"
    # Greedy jobs only: one held to 25 % next to one unlimited (an even
    # split would be what time-slicing gives anyway, share or not).
    read -r c d <<< "$([[ $kind == greedy ]] && pair "$kind" "--gpu-share 25" "" || echo "-1 -1")"
    python3 - "$kind" "$alone" "$a" "$b" "$c" "$d" > "$work/shares.txt" <<'PY'
import sys
kind, alone, a, b, c, d = sys.argv[1], *map(float, sys.argv[2:])
if alone <= 0 or a <= 0 or b <= 0 or c == 0:
    print("bad", kind, f"a run failed (alone {alone}, shared {a}, {b}, {c}, {d} steps/s)"); sys.exit()
sa, sb, sc = a / alone, b / alone, c / alone
# Greedy jobs fill the GPU: at 50/50 each must get half of what it got
# alone, at 25 a quarter (within 10 points). Small ones leave it idle: the
# pair together against one alone is the utilization gain.
ok = kind != "greedy" or (abs(sa - 0.5) <= 0.1 and abs(sb - 0.5) <= 0.1 and abs(sc - 0.25) <= 0.1)
print("ok" if ok else "bad", kind, f"alone {alone} steps/s; at 50/50: {a} and {b} steps/s = {sa:.2f} and {sb:.2f} "
      f"of alone, together {sa + sb:.2f}x one job alone" +
      (f"; at 25 next to an unlimited job: {sc:.2f} of alone (the other {d / alone:.2f})" if c > 0 else ""))
PY
    read -r verdict rest < "$work/shares.txt"
    [[ "$verdict" == ok ]] && pass sharing-shares "$rest" || fail sharing-shares "$rest $(tail -3 "$work/share.err")"
  done
fi
# 6. Collectives on CUDA tensors: two ranks on the one GPU, through the
# bundled wheel when the host's Python can install it. Ranks that share a
# GPU cannot use NCCL: the library must stage through pinned host memory,
# say so, and not warn that the staging memory is unpinned.
staged_check() {
  local wheel
  wheel=$(ls "$bundle"/wheel/*.whl 2>/dev/null | head -1)
  if [[ -z "$wheel" ]]; then say "SKIP staged-collectives: no wheel in the bundle"; return; fi
  if ! python3 -m pip install --quiet --no-deps --target "$work/py" "$wheel" > "$work/pip.err" 2>&1; then
    say "SKIP staged-collectives: the host's $(python3 --version 2>&1) cannot install $(basename "$wheel")"
    return
  fi
  cat > "$work/staged.py" <<'PY'
import json, os, sys
import torch
from mlos_training.distributed import MLOSProcessGroup
rank = int(os.environ["RANK"])
pg = MLOSProcessGroup(rank, 2, timeout=60)
t = torch.full((1 << 20,), float(rank + 1), device="cuda")
pg.all_reduce(t)
print(json.dumps({"values": [float(t[0]), float(t[-1])], "device": str(t.device)}))
pg.close()
PY
  local a b
  PYTHONPATH="$work/py" MLOS_STORE="file:$work/staged-store" MLOS_LOG_LEVEL=info RANK=0 python3 "$work/staged.py" > "$work/r0.json" 2> "$work/r0.err" &
  a=$!
  PYTHONPATH="$work/py" MLOS_STORE="file:$work/staged-store" MLOS_LOG_LEVEL=info RANK=1 python3 "$work/staged.py" > "$work/r1.json" 2> "$work/r1.err" &
  b=$!
  wait $a $b
  if python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rs = [json.loads((open(f"{work}/r{r}.json").read().strip().splitlines() or ["{}"])[-1]) for r in (0, 1)]
errs = [open(f"{work}/r{r}.err").read() for r in (0, 1)]
staged = all("staged through host memory: ranks 0 and 1 share GPU-" in e for e in errs)
pinned = not any("is not pinned" in e for e in errs)
sys.exit(0 if staged and pinned and all(r.get("values") == [3.0, 3.0] and r.get("device") == "cuda:0" for r in rs) else 1)
PY
  then
    pass staged-collectives "all_reduce of CUDA tensors on 2 ranks sharing the GPU, staged through pinned memory: $(cat "$work/r0.json")"
  else
    fail staged-collectives "$(cat "$work/r0.json" "$work/r1.json"; tail -3 "$work/r0.err" "$work/r1.err")"
  fi
}
if [[ "$torch_version" == none ]]; then say "SKIP staged-collectives: no PyTorch here"; else staged_check; fi
say "PENDING nccl: collectives on device buffers across 2+ GPUs (one GPU here)"
exit $failed
