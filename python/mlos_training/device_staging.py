# SPDX-License-Identifier: Apache-2.0
"""Collectives on device tensors through host memory (docs/gpu.md,
"Collectives on device buffers"): a CUDA tensor is copied into a staging
buffer of a TMM pool (tmm.TensorPool, registered with CUDA so the copies
are DMA from pinned pages), reduced there through libmlos's Gloo path like
any CPU tensor, and copied back.

This is the path for a group whose ranks share no NCCL communicator: one
GPU per job, or GPUs that NCCL cannot join. It costs two PCIe copies per
call; torch.distributed's nccl backend is the faster path where it runs.

One staging pool per group, grown (a new, larger pool) when a tensor does
not fit. The device's current stream is synchronised before the host
reduction (the copy-out must have landed) and after the copy back (the
buffer returns to the pool once the copy has read it)."""
from .errors import MLOSError, CODES

_MIN_POOL = 64 << 20


def _pool_size(nbytes):
    """The next power of two, at least _MIN_POOL, with room for the pool's
    own rounding of a buffer to its size class."""
    size = _MIN_POOL
    while size < 2 * nbytes:
        size *= 2
    return size


class DeviceStaging:
    """Host staging buffers for one group.

    resources: the job whose memory the pool counts against (and whose
        node it uses); pinned: register the pool with CUDA (when False,
        or when registration fails, the copies go through pageable memory:
        correct, slower; notes says which)."""

    def __init__(self, resources, pinned=True):
        self._resources = resources
        self._pinned = pinned
        self._pool = None
        self._capacity = 0
        self.notes = []

    def _pool_for(self, nbytes):
        from .tmm import TensorPool
        if self._pool is not None and nbytes * 2 <= self._capacity:
            return self._pool
        if self._pool is not None:
            self._pool.close()  # its buffers go with their last tensor
        self._capacity = _pool_size(nbytes)
        try:
            self._pool = TensorPool(self._capacity, resources=self._resources, cuda_pinned=self._pinned,
                                    name="mlos-device-staging")
        except MLOSError as e:
            if not self._pinned or e.code != CODES["UNSUPPORTED"]:
                raise
            self.notes.append(f"staging memory is not pinned: {e}")
            self._pinned = False
            self._pool = TensorPool(self._capacity, resources=self._resources, name="mlos-device-staging")
        return self._pool

    def reduce(self, tensor, reduce_host):
        """Runs reduce_host(host) on a host copy of `tensor` (contiguous,
        same dtype and shape) and copies the result back into `tensor`;
        returns `tensor`."""
        import torch
        nbytes = max(1, tensor.numel() * tensor.element_size())
        host = self._pool_for(nbytes).tensor(tuple(tensor.shape), tensor.dtype)
        on_cuda = tensor.device.type == "cuda"
        host.copy_(tensor, non_blocking=on_cuda and self._pinned)
        if on_cuda:
            torch.cuda.current_stream(tensor.device).synchronize()
        reduce_host(host)
        tensor.copy_(host, non_blocking=on_cuda and self._pinned)
        if on_cuda:
            torch.cuda.current_stream(tensor.device).synchronize()
        return tensor

    def close(self):
        if self._pool is not None:
            self._pool.close()
            self._pool = None


__all__ = ["DeviceStaging"]
