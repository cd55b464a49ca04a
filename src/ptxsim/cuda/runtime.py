"""The CUDA runtime API's model: what libcudart adds to the driver (docs/cudacpp.md), as a thin
layer over ptxsim.cuda's driver model, which does every check and runs every kernel.

- **the device and its primary context**: a runtime call uses the calling thread's device
  (cudaSetDevice, default 0) and makes that device's primary context current on first use, as
  libcudart does;
- **what nvcc registers**: the fat binaries (`__cudaRegisterFatBinary`), their kernels
  (`__cudaRegisterFunction`: host stub address -> kernel name) and variables
  (`__cudaRegisterVar`: host shadow address -> name); a fat binary's PTX is loaded as a module
  per context the first time one of its kernels or variables is used;
- **launches**: the `<<<>>>` configuration stack (`__cudaPushCallConfiguration` /
  `__cudaPopCallConfiguration`), a kernel named by its host stub (`cudaLaunchKernel`) or by the
  handle `__cudaGetKernel` gave (`__cudaLaunchKernel`), with the launch attributes of
  `cudaLaunchKernelExC`;
- **error state**: the thread's last error (cudaGetLastError / cudaPeekAtLastError) is kept by
  the C ABI layer (ptxsim.cuda.shim); a kernel fault is the driver context's sticky error, which
  the next call returns, as on a GPU.

Functions take Python ints for pointers and raise `ptxsim.errors.CudaError`: its `result` is a
CUresult name for what the driver refuses, or a cudaError_t name (`cudaErrorInvalidDeviceFunction`)
for what only the runtime knows.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field

from ptxsim.cuda import driver as drv
from ptxsim.cuda.runtime_enums import CUDA_ERRORS
from ptxsim.errors import CudaError

WRAPPER_MAGIC = 0x466243B1            # __fatBinC_Wrapper_t: magic, version, data, filename


def fail(name: str, why: str, call: str = "cuda runtime") -> None:
    """Raise a runtime-only error (a cudaError_t name)."""
    raise CudaError(name, CUDA_ERRORS[name][0], call, why)


@dataclass
class FatBinary:
    handle: int
    data: int                          # address of the fat binary (0xBA55ED50 ...)
    kernels: dict = field(default_factory=dict)      # host stub address -> kernel name
    variables: dict = field(default_factory=dict)    # host shadow address -> (name, size)
    modules: dict = field(default_factory=dict)      # context handle -> driver Module
    managed: dict = field(default_factory=dict)      # host pointer slot -> variable name


@dataclass
class Config:
    grid: tuple
    block: tuple
    shared: int
    stream: int


class Runtime:
    """libcudart's process-wide state."""

    def __init__(self):
        self.binaries: dict[int, FatBinary] = {}
        self.kernels: dict[int, FatBinary] = {}      # host stub -> its fat binary
        self.variables: dict[int, FatBinary] = {}    # host shadow -> its fat binary
        self.next_handle = 0x5C10_0000
        self.local = threading.local()
        self.device_flags = 0

    # -- the calling thread's device and context ------------------------------------------
    @property
    def device(self) -> int:
        return getattr(self.local, "device", 0)

    @device.setter
    def device(self, d: int) -> None:
        self.local.device = d

    def configs(self) -> list:
        c = getattr(self.local, "configs", None)
        if c is None:
            c = self.local.configs = []
        return c

    def context(self):
        """The current context; the device's primary context, made current, if there is none
        (or the current one is another device's)."""
        if not drv.DRIVER.initialized:
            drv.cuInit(0)
        ctx = drv.DRIVER.current()
        if ctx is None or ctx.device.ordinal != self.device:
            ctx = drv.cuDevicePrimaryCtxRetain(self.device)
            drv.cuCtxSetCurrent(ctx)
        return ctx

    # -- registration ------------------------------------------------------------------------
    def register_fatbinary(self, wrapper: int) -> int:
        magic, _version = ctypes.c_uint32.from_address(wrapper).value, 0
        if magic != WRAPPER_MAGIC:
            fail("cudaErrorInvalidKernelImage", f"__cudaRegisterFatBinary: {wrapper:#x} is not "
                 "nvcc's fat binary wrapper (magic 0x466243B1)")
        data = ctypes.c_void_p.from_address(wrapper + 8).value
        self.next_handle += 0x40
        self.binaries[self.next_handle] = FatBinary(self.next_handle, data)
        return self.next_handle

    def binary(self, handle: int) -> FatBinary:
        fb = self.binaries.get(handle)
        if fb is None:
            fail("cudaErrorInvalidResourceHandle", f"{handle:#x} is not a registered fat binary")
        return fb

    def register_function(self, handle: int, host_fun: int, name: str) -> None:
        fb = self.binary(handle)
        fb.kernels[host_fun] = name
        self.kernels[host_fun] = fb

    def register_var(self, handle: int, host_var: int, name: str, size: int) -> None:
        fb = self.binary(handle)
        fb.variables[host_var] = (name, size)
        self.variables[host_var] = fb

    def register_managed_var(self, handle: int, slot: int, name: str, size: int) -> None:
        """A __managed__ variable: nvcc's host code reads it through the pointer at `slot`, which
        must hold the variable's address before main runs (set at __cudaRegisterFatBinaryEnd:
        the module is loaded then). Device memory is host memory here, so the host's loads and
        stores through it are the device's."""
        self.register_var(handle, slot, name, size)
        self.binary(handle).managed[slot] = name

    def end_registration(self, handle: int) -> None:
        fb = self.binary(handle)
        if fb.managed:
            mod = self.module(fb)
            for slot, name in fb.managed.items():
                ctypes.c_uint64.from_address(slot).value = drv.cuModuleGetGlobal(mod, name)[0]

    def unregister(self, handle: int) -> None:
        fb = self.binaries.pop(handle, None)
        if fb is None:
            return
        for h in fb.kernels:
            self.kernels.pop(h, None)
        for h in fb.variables:
            self.variables.pop(h, None)

    def module(self, fb: FatBinary):
        ctx = self.context()
        mod = fb.modules.get(int(ctx))
        if mod is None or not mod.alive:
            mod = fb.modules[int(ctx)] = drv.cuModuleLoadFatBinary(fb.data)
        return mod

    def function(self, host_fun: int):
        """The driver Function of a kernel named by its host stub (or __cudaGetKernel handle)."""
        fb = self.kernels.get(host_fun)
        if fb is None:
            fail("cudaErrorInvalidDeviceFunction", f"{host_fun:#x} is not the host stub of a "
                 "registered kernel")
        return drv.cuModuleGetFunction(self.module(fb), fb.kernels[host_fun])

    def symbol(self, host_var: int) -> tuple[int, int]:
        """(device address, size) of a __device__ / __constant__ variable named by its host
        shadow."""
        fb = self.variables.get(host_var)
        if fb is None:
            fail("cudaErrorInvalidSymbol", f"{host_var:#x} is not a registered __device__ or "
                 "__constant__ variable")
        name, _ = fb.variables[host_var]
        return drv.cuModuleGetGlobal(self.module(fb), name)

    # -- launches ------------------------------------------------------------------------------
    def push_config(self, grid, block, shared: int, stream: int) -> None:
        self.configs().append(Config(grid, block, shared, stream))

    def pop_config(self) -> Config:
        c = self.configs()
        if not c:
            fail("cudaErrorMissingConfiguration", "__cudaPopCallConfiguration without a "
                 "<<<...>>> configuration")
        return c.pop()

    def launch(self, host_fun: int, grid, block, args: int, shared: int, stream: int,
               attrs=()) -> None:
        f = self.function(host_fun)
        cfg = drv.LaunchConfig(grid=grid, block=block, shared=shared, stream=stream,
                               attrs=dict(attrs))
        drv.cuLaunchKernelEx(cfg, f, args if args else None, None)


RUNTIME = Runtime()


def reset() -> None:
    """Forget every registration (tests)."""
    global RUNTIME
    RUNTIME = Runtime()
