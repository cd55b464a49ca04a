"""The devices ptxsim.cuda presents: a B200 (sm_100a) by default, and a B300 (sm_103a) and an RTX
5090 (sm_120a) on request (`ptxsim.cuda.configure(devices=...)` or PTXSIM_CUDA_DEVICES=b200,rtx5090).

Limits that decide whether a launch is legal (threads, grid, shared memory, registers, cluster
sizes, compute capability) are the CUDA C++ Programming Guide's "Technical Specifications per
Compute Capability" values; the product figures that no launch depends on (clocks, memory size,
L2, SM count of the B300 / RTX 5090, PCI ids) are the published ones, not measured here.
cuDeviceGetAttribute answers every attribute of cuda.h: texture / surface sizes and the other
graphics or interop features that ptxsim does not model are 0 ("not supported").
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.cuda.enums import DEVICE_ATTRIBUTE


@dataclass(frozen=True)
class DeviceSpec:
    key: str
    name: str
    cc: tuple[int, int]
    target: str                     # the PTX target a launch runs as
    sms: int
    total_mem: int
    smem_per_sm: int
    smem_per_block_optin: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    clock_khz: int
    memory_clock_khz: int
    bus_width: int
    l2_bytes: int
    cluster_portable: int = 8
    cluster_nonportable: int = 16
    pci_device_id: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def attributes(self) -> dict[str, int]:
        a = {k: 0 for k in DEVICE_ATTRIBUTE}
        a.update({
            "MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024,
            "MAX_BLOCK_DIM_Z": 64, "MAX_GRID_DIM_X": 2**31 - 1, "MAX_GRID_DIM_Y": 65535,
            "MAX_GRID_DIM_Z": 65535, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
            "TOTAL_CONSTANT_MEMORY": 65536, "WARP_SIZE": 32, "MAX_PITCH": 2**31 - 1,
            "MAX_REGISTERS_PER_BLOCK": 65536, "CLOCK_RATE": self.clock_khz,
            "TEXTURE_ALIGNMENT": 512, "GPU_OVERLAP": 1, "MULTIPROCESSOR_COUNT": self.sms,
            "CAN_MAP_HOST_MEMORY": 1, "CONCURRENT_KERNELS": 1, "ECC_ENABLED": 1,
            "PCI_BUS_ID": 0x1B, "PCI_DEVICE_ID": 0, "MEMORY_CLOCK_RATE": self.memory_clock_khz,
            "GLOBAL_MEMORY_BUS_WIDTH": self.bus_width, "L2_CACHE_SIZE": self.l2_bytes,
            "MAX_THREADS_PER_MULTIPROCESSOR": self.max_threads_per_sm, "ASYNC_ENGINE_COUNT": 4,
            "UNIFIED_ADDRESSING": 1, "COMPUTE_CAPABILITY_MAJOR": self.cc[0],
            "COMPUTE_CAPABILITY_MINOR": self.cc[1], "STREAM_PRIORITIES_SUPPORTED": 1,
            "GLOBAL_L1_CACHE_SUPPORTED": 1, "LOCAL_L1_CACHE_SUPPORTED": 1,
            "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": self.smem_per_sm,
            "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MANAGED_MEMORY": 1,
            "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO": 2, "CONCURRENT_MANAGED_ACCESS": 1,
            "COMPUTE_PREEMPTION_SUPPORTED": 1, "COOPERATIVE_LAUNCH": 1,
            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": self.smem_per_block_optin,
            "HOST_REGISTER_SUPPORTED": 1, "MAX_BLOCKS_PER_MULTIPROCESSOR": self.max_blocks_per_sm,
            "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024, "MEMORY_POOLS_SUPPORTED": 1,
            "CLUSTER_LAUNCH": 1, "MEM_SYNC_DOMAIN_COUNT": 4, "TENSOR_MAP_ACCESS_SUPPORTED": 1,
            "UNIFIED_FUNCTION_POINTERS": 1, "MULTICAST_SUPPORTED": 0,
            "GPU_PCI_DEVICE_ID": self.pci_device_id, "NUMA_ID": -1, "HOST_NUMA_ID": -1,
        })
        a.update(self.extra)
        return a


# B200: 148 SMs, 228 KiB shared memory per SM (227 KiB per block opt-in), 2,048 threads and 32
# CTAs per SM, clusters of 8 (16 non-portable): Programming Guide, compute capability 10.0.
DEVICES: dict[str, DeviceSpec] = {
    "b200": DeviceSpec("b200", "NVIDIA B200", (10, 0), "sm_100a", 148, 183359 << 20,
                       233472, 232448, 2048, 32, 1965000, 3996000, 8192, 126 << 20,
                       pci_device_id=0x2901),
    "b300": DeviceSpec("b300", "NVIDIA B300", (10, 3), "sm_103a", 148, 275040 << 20,
                       233472, 232448, 2048, 32, 2032000, 3996000, 8192, 126 << 20,
                       pci_device_id=0x3182),
    # compute capability 12.0: 100 KiB shared memory per SM (99 KiB per block), 1,536 threads per
    # SM; clusters of at most 8 (no non-portable sizes)
    "rtx5090": DeviceSpec("rtx5090", "NVIDIA GeForce RTX 5090", (12, 0), "sm_120a", 170,
                          32607 << 20, 102400, 101376, 1536, 32, 2407000, 14001000, 512,
                          96 << 20, cluster_nonportable=8, pci_device_id=0x2B85),
    # the GPU the driver's behaviour was measured on (hardware/tensormap): compute capability
    # 9.0, 132 SMs, 228 KiB shared memory per SM (227 KiB per block)
    "h200": DeviceSpec("h200", "NVIDIA H200", (9, 0), "sm_90a", 132, 143771 << 20, 233472,
                       232448, 2048, 32, 1980000, 3201000, 6144, 60 << 20,
                       pci_device_id=0x2335),
}
ALIASES = {"sm_100": "b200", "sm_100a": "b200", "sm_103": "b300", "sm_103a": "b300",
           "sm_120": "rtx5090", "sm_120a": "rtx5090", "5090": "rtx5090", "sm_90": "h200",
           "sm_90a": "h200", "h100": "h200"}


def spec(name: str) -> DeviceSpec:
    key = name.lower().replace(" ", "").replace("-", "")
    key = ALIASES.get(key, key)
    if key not in DEVICES:
        from ptxsim.errors import OperandError
        raise OperandError(f"unknown device '{name}' (ptxsim.cuda models: "
                           f"{', '.join(DEVICES)}; or a target: {', '.join(ALIASES)})")
    return DEVICES[key]
