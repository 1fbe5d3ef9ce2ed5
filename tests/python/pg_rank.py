# SPDX-License-Identifier: Apache-2.0
"""One rank of a Python process-group test; prints one JSON line per result.

  pg_rank.py ops        every dtype and op over sizes 0, 1, 7, 1000 (torch
                        tensors), a non-contiguous tensor and a numpy array
  pg_rank.py with-torch torch.distributed (gloo) initialised first; this
                        group then meets in torch's default store; the same
                        all-reduce through both must agree
  pg_rank.py loop       all-reduces until one fails; prints ready, then the
                        error's code and time
  pg_rank.py device     all_reduce of CUDA tensors as MLOSProcessGroup
                        sees them, over the fake CUDA driver (found as
                        libcuda.so.1 on LD_LIBRARY_PATH): stand-ins with a
                        cuda device and a device pointer (torch here has no
                        GPU), torch.cuda.current_stream recorded; device 0
                        of CUDA_VISIBLE_DEVICES
Rank and world size from RANK/WORLD_SIZE."""
import json
import os
import sys
import time
import types

import torch

import mlos_training
from mlos_training.distributed import MLOSProcessGroup

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]
OPS = {"SUM": mlos_training.SUM, "PROD": mlos_training.PROD, "MIN": mlos_training.MIN,
       "MAX": mlos_training.MAX, "AVG": mlos_training.AVG}


def values(rank, n, dtype):
    """Element i of rank r: (r+1)*(i%5+1), exact in every dtype."""
    i = torch.arange(n, dtype=torch.float64)
    return ((rank + 1) * (i % 5 + 1)).to(dtype)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def ops(pg, rank):
    for dtype in DTYPES:
        for name, op in OPS.items():
            for n in (0, 1, 7, 1000):
                t = values(rank, n, dtype)
                pg.all_reduce(t, op=op)
                as_double = t.to(torch.float64)
                emit(dtype=str(dtype), op=name, n=n, first=as_double[:7].tolist(), sum=float(as_double.sum()))
    t = values(rank, 12, torch.float32).reshape(3, 4).t()  # non-contiguous view
    pg.all_reduce(t, op=mlos_training.SUM)
    emit(case="noncontiguous", values=t.reshape(-1).tolist())
    import numpy as np
    a = np.full(5, rank + 1, dtype=np.int64)
    pg.all_reduce(a, op=mlos_training.MAX)
    emit(case="numpy", values=a.tolist())
    emit(case="profile", **{k: v for k, v in pg.resources.phase_profile().items() if "collective" in k})


class FakeCuda:
    """The fake driver's calls device mode makes; its context current."""

    def __init__(self):
        import ctypes
        self.lib = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        for call in (lambda: self.lib.cuInit(0), lambda: self.lib.cuDeviceGet(ctypes.byref(dev), 0),
                     lambda: self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                     lambda: self.lib.cuCtxSetCurrent(ctx)):
            assert call() == 0, "the fake CUDA driver refused a call"

    def upload(self, host):
        import ctypes
        ptr = ctypes.c_uint64()
        assert self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(host.numel() * host.element_size())) == 0
        assert self.lib.cuMemcpyHtoD_v2(ptr, ctypes.c_void_p(host.data_ptr()),
                                        ctypes.c_size_t(host.numel() * host.element_size())) == 0
        return ptr.value

    def download(self, ptr, host):
        import ctypes
        assert self.lib.cuMemcpyDtoH_v2(ctypes.c_void_p(host.data_ptr()), ctypes.c_uint64(ptr),
                                        ctypes.c_size_t(host.numel() * host.element_size())) == 0
        assert self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)) == 0


class DeviceTensor:
    """What MLOSProcessGroup.all_reduce reads of a contiguous CUDA tensor."""
    is_cuda = True
    device = torch.device("cuda", 0)

    def __init__(self, ptr, n, dtype):
        self.ptr, self.n, self.dtype = ptr, n, dtype

    def is_contiguous(self):
        return True

    def numel(self):
        return self.n

    def data_ptr(self):
        return self.ptr


def on_device(pg, rank):
    cuda = FakeCuda()
    synced = []
    torch.cuda.current_stream = lambda device=None: types.SimpleNamespace(
        synchronize=lambda: synced.append(str(device)))
    for dtype in DTYPES:
        for name, op in OPS.items():
            host = values(rank, 1000, dtype)
            ptr = cuda.upload(host)
            pg.all_reduce(DeviceTensor(ptr, host.numel(), host.dtype), op=op)
            cuda.download(ptr, host)
            as_double = host.to(torch.float64)
            emit(dtype=str(dtype), op=name, n=1000, first=as_double[:7].tolist(), sum=float(as_double.sum()))
    emit(case="synchronized", streams=synced)


def with_torch(pg_factory, rank, world):
    import torch.distributed as dist
    dist.init_process_group("gloo", rank=rank, world_size=world)
    pg = pg_factory()
    a = values(rank, 1000, torch.float32)
    b = a.clone()
    dist.all_reduce(a, op=dist.ReduceOp.SUM)
    pg.all_reduce(b, op=dist.ReduceOp.SUM)  # torch's op names are accepted too
    emit(case="agree", equal=bool(torch.equal(a, b)), first=b[:3].tolist())
    dist.destroy_process_group()
    return pg


def main():
    mode = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = float(os.environ.get("PG_TIMEOUT", "20"))
    factory = lambda: MLOSProcessGroup(rank, world, timeout=timeout)  # noqa: E731
    try:
        if mode == "with-torch":
            pg = with_torch(factory, rank, world)
        else:
            pg = factory()
        if mode == "ops":
            ops(pg, rank)
        elif mode == "device":
            on_device(pg, rank)
        elif mode == "loop":
            t = torch.ones(1000)
            pg.all_reduce(t)
            emit(event="ready")
            while True:
                pg.all_reduce(t)
        pg.close()
    except mlos_training.MLOSError as e:
        emit(event="error", code=e.code, t_ns=time.monotonic_ns(), message=str(e)[:300])
        sys.exit(3)


if __name__ == "__main__":
    main()
