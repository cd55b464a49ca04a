"""ptxsim.machine: the kernel executor's machine components (see docs/machine.md).

memory      state spaces (global, shared::cta / ::cluster, local, param, const, generic) and
            vectorised ld / st
tensormap   TensorMap (cuTensorMapEncodeTiled), TMA tile loads / stores, bulk copies
mbarrier    mbarrier objects, named barriers (bar / barrier), barrier.cluster
grid        launch geometry and special registers
async_proxy the asynchronous-operation queue (tcgen05 pipelines, commit, wait, async-groups)
params      the kernel-parameter image of a launch (pack_params)
watchdog    deadlock report (DeadlockError listing every waiter) and the step guard
"""
from ptxsim.machine.async_proxy import AsyncOp, AsyncProxy
from ptxsim.machine.grid import LaunchGeometry
from ptxsim.machine.mbarrier import ClusterBarrier, Mbarriers, NamedBarriers, pending_count
from ptxsim.machine.memory import ATOMIC_OPS, GlobalMemory, Memory, SharedMemory
from ptxsim.machine.params import pack_params
from ptxsim.machine.tensormap import (TensorMap, bulk_global_to_shared, bulk_shared_to_global,
                                      bulk_shared_to_shared, multicast_ranks, tma_load_tile,
                                      tma_store_tile)
from ptxsim.machine.watchdog import StepGuard, Wait, deadlock_error

__all__ = ["AsyncOp", "AsyncProxy", "LaunchGeometry", "ClusterBarrier", "Mbarriers",
           "NamedBarriers", "pending_count", "ATOMIC_OPS", "GlobalMemory", "Memory", "SharedMemory",
           "pack_params",
           "TensorMap", "bulk_global_to_shared", "bulk_shared_to_global", "bulk_shared_to_shared",
           "multicast_ranks", "tma_load_tile", "tma_store_tile", "StepGuard", "Wait",
           "deadlock_error"]
