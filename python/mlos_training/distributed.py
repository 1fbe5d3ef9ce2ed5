# SPDX-License-Identifier: Apache-2.0
"""MLOSProcessGroup: barrier and all-reduce through libmlos (Gloo inside).

    from mlos_training.distributed import MLOSProcessGroup
    pg = MLOSProcessGroup(rank, world_size)
    pg.barrier()
    pg.all_reduce(grad, op=mlos_training.SUM)   # in place; CPU or CUDA tensors

Where the ranks meet, in this order:
  1. `store=`: any object with torch.distributed.Store's set/get/wait
     (a TCPStore, FileStore, PrefixStore...);
  2. MLOS_STORE in the environment (file:/dir, redis://host:port, or
     tcp://host:port for a TCPStore in torch's protocol), read by the
     library;
  3. the default torch.distributed process group's store, when
     torch.distributed is initialised;
  4. MASTER_ADDR/MASTER_PORT (torchrun, Slurm scripts): a TCPStore there
     (torch's; the library's own client when torch is absent).
Constructing the group on rank 0 can open a listening socket at the
store's port:
  - in 4, rank 0 creates torch's TCPStore(..., is_master=True), on every
    address of the machine and with no authentication, unless torchrun's
    agent serves the store (TORCHELASTIC_USE_AGENT_STORE) or
    MLOS_STORE_SECRET is set;
  - with MLOS_STORE=tcp://, or in 4 without torch or with
    MLOS_STORE_SECRET, the library starts its own server, kept until the
    process exits, when the host is an address of this machine, no store
    answers there yet and the agent does not serve it. It listens on the
    address asked for (127.0.0.1: loopback only; a host name: every
    address) and, with MLOS_STORE_SECRET (`mlos run --store-secret`),
    serves only clients that send that secret.
To avoid it, pass `store=` or set MLOS_STORE to a file: or redis:// store
(docs/collectives.md).
Keys go under `group_name` (default "mlos"), so this group can share a
store with torch's own groups.

Errors are MLOSError: TIMEOUT when a rank never arrives or stops
answering, PEER_LOST when a peer's connection broke, INVALID_ARGUMENT for a
bad rank or world size. After an error the group is broken; every rank must
call again (the library then creates a new group) or exit.
"""
from ._process_group import MLOSProcessGroup, TorchStoreAdapter, _agent_serves_store, _op_code

__all__ = ["MLOSProcessGroup", "TorchStoreAdapter", "_agent_serves_store", "_op_code"]


def _register_torch_backend():
    """Importing this module makes "mlos" a torch.distributed backend
    (torch_backend.py) when torch with torch.distributed is installed."""
    try:
        import torch.distributed as dist
    except ImportError:
        return
    if dist.is_available():
        from .torch_backend import register
        register()


_register_torch_backend()
