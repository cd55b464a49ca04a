"""ptxsim's Triton driver: the device is a simulated sm_100a / sm_103a / sm_120a / sm_90a GPU,
memory is the host's (CPU torch tensors and numpy arrays), and a launch runs the kernel's PTX
on ptxsim (ptxsim.triton.launcher).

Active when `ptxsim.triton.use(...)` selected it, or by itself in a process where no other
Triton driver is (no GPU): then installing ptxsim is enough for `@triton.jit` kernels to run.
`PTXSIM_TRITON=0` keeps it inactive unless use() is called."""
from __future__ import annotations

import os

from triton.backends.driver import DriverBase as _DriverBase

from ptxsim.triton._state import BY_ORDINAL, ORDINALS, STATE, ptxsim_active


def _others_active() -> bool:
    """Whether another installed Triton driver (a real GPU's) is active."""
    from triton.backends import backends
    for name, b in backends.items():
        if b.driver.__module__ == __name__:
            continue
        try:
            if b.driver.is_active():
                return True
        except Exception:                     # noqa: BLE001 - a broken driver is not active
            continue
    return False


def _step_aside() -> None:
    """Triton's NVIDIA compiler claims the "cuda" target only while ptxsim is not the active
    driver (Triton requires exactly one compiler per target)."""
    import triton.backends.nvidia.compiler as nv

    if getattr(nv.CUDABackend, "_ptxsim_aside", False):
        return
    original = nv.CUDABackend.__dict__["supports_target"].__func__

    def supports_target(target):
        return original(target) and not ptxsim_active()
    nv.CUDABackend.supports_target = staticmethod(supports_target)
    nv.CUDABackend._ptxsim_aside = True


class PtxsimUtils:
    """The subset of the NVIDIA driver's `utils` that Triton's runtime calls. One for the
    process (as the NVIDIA driver's CudaUtils): a compiled kernel keeps the handle it was
    loaded with, whichever PtxsimDriver instance launches it later (use() / use(None) /
    Triton's default driver)."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.modules = {}
            cls._instance._next = 1
        return cls._instance

    def load_binary(self, name, kernel, shared, device):
        """(module, function, n_regs, n_spills, n_max_threads) of a compiled kernel; the
        'binary' is the PTX with what ptxas reported (compiler.ptxas_info). Without ptxas the
        register count is unknown and reported as 255 (the most a thread may use), so that
        occupancy arithmetic stays conservative."""
        from ptxsim.triton.launcher import load_module
        handle = self._next
        self._next += 1
        k = self.modules[handle] = load_module(name, kernel)
        regs = k.ptxas.get("n_regs") or 255
        return handle, handle, regs, k.ptxas.get("n_spills", 0), 1024

    def unload_module(self, module):
        self.modules.pop(module, None)

    def get_device_properties(self, device):
        d = STATE.device() if device not in BY_ORDINAL else _device(device)
        return {"max_shared_mem": d.max_shared_mem, "max_num_regs": d.max_num_regs,
                "multiprocessor_count": d.multiprocessor_count, "warpSize": d.warp_size,
                "sm_clock_rate": d.sm_clock_rate, "mem_clock_rate": d.mem_clock_rate,
                "mem_bus_width": d.mem_bus_width}

    def get_current_device(self):
        return ORDINALS[STATE.device().name]

    def set_current_device(self, device):
        pass

    def get_default_stream(self, device):
        return 0

    def is_stream_capturing(self, stream):
        return False

    def get_device_capability(self, device):
        a = _device(device).arch
        return a // 10, a % 10

    def set_printf_fifo_size(self, size):
        pass

    def cuOccupancyMaxActiveClusters(self, *args):
        return STATE.device().multiprocessor_count


def _device(ordinal):
    from ptxsim.triton._state import DEVICES
    return DEVICES[BY_ORDINAL.get(ordinal, STATE.device().name)]


class PtxsimDriver(_DriverBase):
    """Triton driver whose device is ptxsim."""
    is_ptxsim = True                  # what _state.ptxsim_active looks for

    def __init__(self):
        super().__init__()
        _step_aside()
        from ptxsim.triton._host import install_numpy_specialization
        install_numpy_specialization()
        from ptxsim.triton.launcher import PtxsimLauncher
        self.utils = PtxsimUtils()
        self.launcher_cls = PtxsimLauncher

    @classmethod
    def is_active(cls):
        if STATE.selected:
            return True
        if os.environ.get("PTXSIM_TRITON", "1") in ("0", "off", "no"):
            return False
        return not _others_active()

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", STATE.device().arch, 32)

    def get_current_device(self):
        return ORDINALS[STATE.device().name]

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_device_interface(self):
        from ptxsim.triton.launcher import DeviceInterface
        return DeviceInterface

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp
        return ty_to_cpp(ty)

    def get_benchmarker(self):
        from ptxsim.triton.launcher import bench
        return bench

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(0, dtype=torch.int32)

    def clear_cache(self, cache):
        pass

    def allocate_default_profile_scratch(self, size, alignment, stream):
        import torch
        return torch.zeros(size, dtype=torch.int8)
