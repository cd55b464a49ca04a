"""The CUDA driver API model: the calls programs make (device query, contexts, memory, modules
and libraries from PTX, launches, function attributes, streams, events, tensor maps), with the
driver's arguments, results and failures. docs/cuda.md lists the calls and the CUresult of each
failure.

Conventions (Python):
- a call returns its output (a tuple when the C call has several), and raises `CudaError` with
  the CUresult name, the call and a sentence where the driver returns an error;
- handles (CUcontext, CUmodule, CUfunction, CUlibrary, CUkernel, CUstream, CUevent) are objects
  whose int() is a stable handle value; every call accepts the object or that int (what a native
  shim passes through);
- device pointers are ints; device memory lives in this process at the same address (arena.py),
  so memcpy is a checked copy;
- host pointers are ints (process addresses) or objects with the buffer protocol (numpy arrays,
  bytes, bytearray), or CPU torch tensors;
- work is synchronous: a launch runs to completion before the call returns (streams and events
  keep their order trivially). A kernel that faults raises at the launch, with ptxsim's finding
  (PTX line, thread) as the cause, and leaves the context in the driver's sticky error state:
  every later call in it returns the same error, as on a GPU.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import struct
import threading
from dataclasses import dataclass, field

import numpy as np

from ptxsim.cuda import enums
from ptxsim.cuda.arena import Arena
from ptxsim.cuda.devices import DeviceSpec, spec
from ptxsim.errors import CudaError, PtxsimError

DRIVER_VERSION = 13050                # CUDA 13.5: PTX ISA up to 9.5
PTX_ISA_MAX = (9, 5)

# -------------------------------------------------------------------------------------------------
# errors
# -------------------------------------------------------------------------------------------------
_call = threading.local()


def _fail(result: str, why: str, finding=None):
    raise CudaError(result, enums.CURESULT[result], getattr(_call, "text", "cuda"), why, finding)


def _fmt(v) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 4096:
        return hex(v)
    if isinstance(v, (bytes, bytearray)) and len(v) > 16:
        return f"<{len(v)} bytes>"
    if isinstance(v, str) and len(v) > 40:
        return repr(v[:37] + "...")
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


NO_INIT = {"cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString"}
NO_CONTEXT = NO_INIT | {"cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName", "cuDeviceGetUuid",
                        "cuDeviceTotalMem", "cuDeviceGetAttribute", "cuDeviceComputeCapability",
                        "cuDeviceGetPCIBusId", "cuDevicePrimaryCtxRetain",
                        "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset",
                        "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags", "cuCtxCreate",
                        "cuCtxDestroy", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxPushCurrent",
                        "cuCtxPopCurrent", "cuLibraryLoadData", "cuLibraryLoadFromFile",
                        "cuLibraryGetKernel", "cuLibraryUnload", "cuLibraryGetKernelCount",
                        "cuKernelGetAttribute", "cuKernelSetAttribute", "cuKernelGetName",
                        "cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col",
                        "cuTensorMapReplaceAddress", "cuMemHostRegister", "cuMemHostUnregister",
                        "cuMemAllocHost", "cuMemHostAlloc", "cuMemFreeHost",
                        "cuPointerGetAttribute"}


def api(fn):
    """A driver entry point: records the call for error messages; checks cuInit and, for calls
    that need one, a current context without a sticky error."""
    name = fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        outer = getattr(_call, "text", None)
        _call.text = f"{name}({', '.join([_fmt(a) for a in args] + [f'{k}={_fmt(v)}' for k, v in kwargs.items()])})"
        try:
            if name not in NO_INIT and not DRIVER.initialized:
                _fail("CUDA_ERROR_NOT_INITIALIZED", "call cuInit(0) first")
            if name not in NO_CONTEXT:
                ctx = DRIVER.current()
                if ctx is None:
                    _fail("CUDA_ERROR_INVALID_CONTEXT", "no context is current in this thread "
                          "(cuCtxCreate / cuDevicePrimaryCtxRetain + cuCtxSetCurrent)")
                if ctx.sticky is not None and name not in ("cuCtxDestroy", "cuGetErrorName"):
                    s = ctx.sticky
                    _fail(s.result, f"the context is unusable after an earlier kernel fault "
                          f"({s.why})", s.finding)
            return fn(*args, **kwargs)
        finally:
            _call.text = outer
    call.cuda_api = True
    return call


# -------------------------------------------------------------------------------------------------
# handles
# -------------------------------------------------------------------------------------------------
class Handle:
    kind = "handle"
    __slots__ = ("handle", "alive", "__weakref__")

    def __int__(self) -> int:
        return self.handle

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.handle:#x}>"

    def __eq__(self, other):
        try:
            return int(other) == self.handle
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.handle)


def _register(obj: Handle) -> Handle:
    DRIVER.next_handle += 0x40
    obj.handle = DRIVER.next_handle
    obj.alive = True
    DRIVER.handles[obj.handle] = obj
    return obj


def _resolve(value, cls, result: str = "CUDA_ERROR_INVALID_HANDLE", what: str | None = None):
    if isinstance(value, cls) and value.alive:
        return value
    try:
        h = int(value)                       # also cuda-python's handle types (int() = handle)
    except (TypeError, ValueError):
        h = None
    obj = DRIVER.handles.get(h)
    if isinstance(obj, cls) and obj.alive:
        return obj
    _fail(result, f"{_fmt(value)} is not a live {what or cls.__name__}")


def _int(value, what: str) -> int:
    """An integer argument (also cuda-python's CUdeviceptr / handle types: int() is the value)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what} must be an integer, got {_fmt(value)}")


# -------------------------------------------------------------------------------------------------
# driver state
# -------------------------------------------------------------------------------------------------
@dataclass
class Allocation:
    address: int
    size: int
    kind: str                          # device | host | managed | registered | module
    view: np.ndarray
    context: object = None
    flags: int = 0


_ARENA: list = []


def _arena() -> Arena:
    """One device-memory reservation per process (configure() starts a new driver state in the
    same reservation: addresses are never reused)."""
    if not _ARENA:
        _ARENA.append(Arena())
    return _ARENA[0]


class Device:
    def __init__(self, ordinal: int, spec_: DeviceSpec):
        self.ordinal, self.spec = ordinal, spec_
        self.primary: Context | None = None
        self.primary_refs = 0
        self.primary_flags = 0


class Driver:
    """The process-wide state behind the calls (what libcuda keeps)."""

    def __init__(self, devices=None, **options):
        names = devices or [d for d in os.environ.get("PTXSIM_CUDA_DEVICES", "b200").split(",")
                            if d.strip()]
        self.device_specs = [spec(n.strip()) for n in names]
        self.options = dict(options)
        self.initialized = False
        self.devices: list[Device] = []
        self.handles: dict[int, Handle] = {}
        self.next_handle = 0x5C00_0000
        self.local = threading.local()
        self.arena = _arena()
        from ptxsim.machine.memory import GlobalMemory
        self.gmem = GlobalMemory()
        self.gmem.resolver = self._resolve
        self.host_resolvers: list = []            # addr -> (uint8 view, base, name) or None
        self.allocs: dict[int, Allocation] = {}
        self.freed: set[int] = set()
        self.clock_ns = 0
        self.images: dict[bytes, str] = {}          # binary image (cubin) -> its PTX
        self.image_readers: list = []               # callables: bytes -> PTX text or None
        self.launches = 0
        self.last_launch = None
        self.findings: list = []       # (kernel name, Findings) of each launch that had any

    # -- contexts ----------------------------------------------------------------------------
    def stack(self) -> list:
        s = getattr(self.local, "stack", None)
        if s is None:
            s = self.local.stack = []
        return s

    def current(self):
        s = self.stack()
        while s and not s[-1].alive:
            s.pop()
        return s[-1] if s else None

    # -- memory ------------------------------------------------------------------------------
    def _resolve(self, address: int, size: int) -> bool:
        """Map host memory a resolver knows at `address` (a kernel touched it first)."""
        for r in self.host_resolvers:
            hit = r(address)
            if hit is None:
                continue
            view, base, name = hit
            if self.gmem.buffer_at(base) is not None:
                return False
            self.gmem.map(view, name, address=base)
            self.allocs[base] = Allocation(base, view.size, "registered", view, self.current())
            return base <= address and address + size <= base + view.size
        return False

    def allocate(self, nbytes: int, kind: str, ctx=None, flags: int = 0) -> Allocation:
        got = self.arena.allocate(nbytes)
        if got is None:
            _fail("CUDA_ERROR_OUT_OF_MEMORY", f"{nbytes} bytes do not fit in the device "
                  "memory ptxsim reserved")
        addr, view = got
        self.gmem.map(view, f"{kind} allocation {addr:#x} ({nbytes} bytes)", address=addr)
        a = Allocation(addr, int(nbytes), kind, view, ctx, flags)
        self.allocs[addr] = a
        self.freed.discard(addr)
        return a

    def release(self, a: Allocation) -> None:
        self.gmem.unmap(a.address)
        del self.allocs[a.address]
        if a.kind != "registered":
            self.arena.free(a.address)
        self.freed.add(a.address)

    def find(self, address: int) -> Allocation | None:
        b = self.gmem.buffer_at(address)
        return None if b is None else self.allocs.get(b.base)


DRIVER = Driver()


def configure(devices=None, **options) -> None:
    """Start over with these devices (names from ptxsim.cuda.devices: "b200", "b300",
    "rtx5090", or targets "sm_100a" ...) and launch options (step_limit, progress, ...: those
    of ptxsim.launch). Every handle and allocation of the previous state becomes invalid."""
    global DRIVER
    DRIVER = Driver(devices, **options)


def reset() -> None:
    """Forget every context, module and allocation (the device list stays)."""
    configure([s.key for s in DRIVER.device_specs], **DRIVER.options)


def state() -> Driver:
    return DRIVER


# -------------------------------------------------------------------------------------------------
# initialisation, devices
# -------------------------------------------------------------------------------------------------
@api
def cuInit(flags: int = 0) -> None:
    if _int(flags, "Flags") != 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "Flags must be 0")
    if not DRIVER.initialized:
        DRIVER.devices = [Device(i, s) for i, s in enumerate(DRIVER.device_specs)]
        DRIVER.initialized = True


@api
def cuDriverGetVersion() -> int:
    return DRIVER_VERSION


@api
def cuGetErrorName(error) -> str:
    try:
        return enums.lookup(enums.CURESULT, error, "CUresult")[0]
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(error)} is not a CUresult")


@api
def cuGetErrorString(error) -> str:
    name = cuGetErrorName(error)
    return enums.ERROR_STRING.get(name, name.removeprefix("CUDA_ERROR_").lower()
                                  .replace("_", " "))


def _device(dev) -> Device:
    n = _int(dev, "device")
    if not 0 <= n < len(DRIVER.devices):
        _fail("CUDA_ERROR_INVALID_DEVICE", f"device {n} does not exist "
              f"({len(DRIVER.devices)} device(s))")
    return DRIVER.devices[n]


@api
def cuDeviceGetCount() -> int:
    return len(DRIVER.devices)


@api
def cuDeviceGet(ordinal) -> int:
    return _device(ordinal).ordinal


@api
def cuDeviceGetName(length, dev=None) -> str:
    if dev is None:                                  # cuDeviceGetName(dev)
        length, dev = 256, length
    return _device(dev).spec.name[:max(0, _int(length, "len") - 1)]


@api
def cuDeviceGetUuid(dev) -> bytes:
    d = _device(dev)
    return struct.pack("<4sIQ", b"PTXS", d.ordinal, hash(d.spec.key) & (2**64 - 1))


@api
def cuDeviceTotalMem(dev) -> int:
    return _device(dev).spec.total_mem


@api
def cuDeviceGetAttribute(attrib, dev) -> int:
    d = _device(dev)
    try:
        name, _ = enums.lookup(enums.DEVICE_ATTRIBUTE, attrib, "CUdevice_attribute")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(attrib)} is not a CUdevice_attribute")
    if name == "PCI_DEVICE_ID":
        return d.ordinal
    return d.spec.attributes[name]


@api
def cuDeviceComputeCapability(dev) -> tuple[int, int]:
    return _device(dev).spec.cc


@api
def cuDeviceGetPCIBusId(length, dev) -> str:
    return f"0000:{0x1B + _device(dev).ordinal:02x}:00.0"[:max(0, _int(length, "len") - 1)]


# -------------------------------------------------------------------------------------------------
# contexts
# -------------------------------------------------------------------------------------------------
class Context(Handle):
    __slots__ = ("device", "flags", "primary", "sticky", "limits", "streams")

    def __init__(self, device: Device, flags: int, primary: bool):
        self.device, self.flags, self.primary = device, flags, primary
        self.sticky: CudaError | None = None
        self.limits = {"STACK_SIZE": 1024, "PRINTF_FIFO_SIZE": 1 << 20,
                       "MALLOC_HEAP_SIZE": 8 << 20, "DEV_RUNTIME_SYNC_DEPTH": 2,
                       "DEV_RUNTIME_PENDING_LAUNCH_COUNT": 2048, "MAX_L2_FETCH_GRANULARITY": 64,
                       "PERSISTING_L2_CACHE_SIZE": 0}
        self.streams: set = set()


def _ctx(value) -> Context:
    return _resolve(value, Context, "CUDA_ERROR_INVALID_CONTEXT", "context")


@api
def cuCtxCreate(*args) -> Context:
    """cuCtxCreate(flags, dev) or, as in CUDA 13, cuCtxCreate(ctxCreateParams, flags, dev)."""
    if len(args) == 3:
        args = args[1:]
    if len(args) != 2:
        _fail("CUDA_ERROR_INVALID_VALUE", "expected (flags, dev) or (params, flags, dev)")
    flags, dev = args
    ctx = _register(Context(_device(dev), _int(flags, "flags"), False))
    DRIVER.stack().append(ctx)
    return ctx


def _destroy_ctx(ctx: Context) -> None:
    ctx.alive = False
    for a in [a for a in DRIVER.allocs.values() if a.context is ctx and a.kind != "registered"]:
        DRIVER.release(a)
    for s in list(ctx.streams):
        s.alive = False


@api
def cuCtxDestroy(ctx) -> None:
    c = _ctx(ctx)
    if c.primary:
        _fail("CUDA_ERROR_INVALID_CONTEXT", "a primary context is released with "
              "cuDevicePrimaryCtxRelease, not destroyed")
    _destroy_ctx(c)


@api
def cuCtxGetCurrent():
    return DRIVER.current()


@api
def cuCtxSetCurrent(ctx) -> None:
    s = DRIVER.stack()
    if ctx is None or _int(ctx, "ctx") == 0:
        if s:
            s.pop()
        return
    c = _ctx(ctx)
    if s:
        s[-1] = c
    else:
        s.append(c)


@api
def cuCtxPushCurrent(ctx) -> None:
    DRIVER.stack().append(_ctx(ctx))


@api
def cuCtxPopCurrent():
    c = DRIVER.current()
    if c is None:
        _fail("CUDA_ERROR_INVALID_CONTEXT", "no context is current")
    DRIVER.stack().pop()
    return c


@api
def cuCtxGetDevice() -> int:
    return DRIVER.current().device.ordinal


@api
def cuCtxSynchronize() -> None:
    return None


@api
def cuCtxGetApiVersion(ctx) -> int:
    _ctx(ctx)
    return 13050


@api
def cuCtxGetFlags() -> int:
    return DRIVER.current().flags


@api
def cuCtxGetLimit(limit) -> int:
    try:
        name, _ = enums.lookup(enums.LIMIT, limit, "CUlimit")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(limit)} is not a CUlimit")
    v = DRIVER.current().limits.get(name)
    if v is None:
        _fail("CUDA_ERROR_UNSUPPORTED_LIMIT", f"limit {name} is not supported")
    return v


@api
def cuCtxSetLimit(limit, value) -> None:
    try:
        name, _ = enums.lookup(enums.LIMIT, limit, "CUlimit")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(limit)} is not a CUlimit")
    lim = DRIVER.current().limits
    if name not in lim:
        _fail("CUDA_ERROR_UNSUPPORTED_LIMIT", f"limit {name} is not supported")
    lim[name] = _int(value, "value")


@api
def cuDevicePrimaryCtxRetain(dev) -> Context:
    d = _device(dev)
    if d.primary is None or not d.primary.alive:
        d.primary = _register(Context(d, d.primary_flags, True))
    d.primary_refs += 1
    return d.primary


@api
def cuDevicePrimaryCtxRelease(dev) -> None:
    d = _device(dev)
    if d.primary_refs <= 0:
        _fail("CUDA_ERROR_INVALID_CONTEXT", "the primary context is not retained")
    d.primary_refs -= 1
    if d.primary_refs == 0:
        _destroy_ctx(d.primary)
        d.primary = None


@api
def cuDevicePrimaryCtxReset(dev) -> None:
    d = _device(dev)
    if d.primary is not None:
        _destroy_ctx(d.primary)
    d.primary, d.primary_refs = None, 0


@api
def cuDevicePrimaryCtxGetState(dev) -> tuple[int, int]:
    d = _device(dev)
    return d.primary_flags, int(d.primary is not None and d.primary.alive)


@api
def cuDevicePrimaryCtxSetFlags(dev, flags) -> None:
    _device(dev).primary_flags = _int(flags, "flags")


# -------------------------------------------------------------------------------------------------
# memory
# -------------------------------------------------------------------------------------------------
def _host(ptr, nbytes: int, writable: bool, what: str) -> np.ndarray:
    """`nbytes` bytes of host memory as a uint8 array (a view)."""
    if type(ptr).__module__.startswith("torch"):
        if ptr.device.type != "cpu" or not ptr.is_contiguous():
            _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: a torch tensor must be a contiguous CPU "
                  "tensor")
        ptr = ptr.data_ptr() if ptr.numel() else bytearray()
    if isinstance(ptr, (int, np.integer)) or (hasattr(ptr, "getPtr") and
                                               not hasattr(ptr, "__buffer__")):
        p = _int(ptr, what)
        if p == 0:
            _fail("CUDA_ERROR_INVALID_VALUE", f"{what} is a null pointer")
        a = DRIVER.find(p)
        if a is not None:
            return _dev_range(p, nbytes, what)
        return np.ctypeslib.as_array((ctypes.c_uint8 * max(nbytes, 1)).from_address(p))[:nbytes]
    try:
        mv = memoryview(ptr)
    except TypeError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: {type(ptr).__name__} is neither a pointer "
              "nor a buffer")
    if writable and mv.readonly:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: the host buffer is read-only")
    if not mv.c_contiguous:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: the host buffer is not contiguous")
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, np.uint8)
    if arr.size < nbytes:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: the host buffer holds {arr.size} bytes, "
              f"{nbytes} are copied")
    return arr[:nbytes]


def _dev_range(dptr, nbytes: int, what: str) -> np.ndarray:
    p = _int(dptr, what)
    a = DRIVER.find(p)
    if a is None:
        was = " (it was freed)" if p in DRIVER.freed else ""
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what} {p:#x} is not in any allocation{was}: "
              f"{DRIVER.gmem.describe(p)}")
    off = p - a.address
    if off + nbytes > a.size:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: {nbytes} bytes at {p:#x} run past the end "
              f"of the {a.size}-byte allocation at {a.address:#x} (by {off + nbytes - a.size})")
    return a.view[off:off + nbytes]


def _size(n, what: str = "ByteCount") -> int:
    v = _int(n, what)
    if v < 0:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what} {v} is negative")
    return v


@api
def cuMemAlloc(bytesize) -> int:
    n = _size(bytesize, "bytesize")
    if n == 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "bytesize is 0")
    return DRIVER.allocate(n, "device", DRIVER.current()).address


@api
def cuMemAllocManaged(bytesize, flags=1) -> int:
    n = _size(bytesize, "bytesize")
    if n == 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "bytesize is 0")
    return DRIVER.allocate(n, "managed", DRIVER.current(), _int(flags, "flags")).address


@api
def cuMemAllocPitch(width, height, element_size) -> tuple[int, int]:
    w, h, e = _size(width, "WidthInBytes"), _size(height, "Height"), _int(element_size,
                                                                          "ElementSizeBytes")
    if e not in (4, 8, 16) or w == 0 or h == 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "ElementSizeBytes must be 4, 8 or 16 and the "
              "extent non-zero")
    pitch = -(-w // 512) * 512
    return DRIVER.allocate(pitch * h, "device", DRIVER.current()).address, pitch


@api
def cuMemAllocAsync(bytesize, stream) -> int:
    _stream(stream)
    return cuMemAlloc(bytesize)


@api
def cuMemFree(dptr) -> None:
    p = _int(dptr, "dptr")
    if p == 0:
        return                               # measured (H200): cuMemFree(0) succeeds
    a = DRIVER.allocs.get(p)
    if a is None or a.kind not in ("device", "managed"):
        why = ("it was already freed" if p in DRIVER.freed else
               "a host allocation is freed with cuMemFreeHost" if a is not None else
               "it is not the start of a device allocation")
        _fail("CUDA_ERROR_INVALID_VALUE", f"cannot free {p:#x}: {why}")
    DRIVER.release(a)


@api
def cuMemFreeAsync(dptr, stream) -> None:
    _stream(stream)
    cuMemFree(dptr)


@api
def cuMemAllocHost(bytesize) -> int:
    return cuMemHostAlloc(bytesize, 0)


@api
def cuMemHostAlloc(bytesize, flags=0) -> int:
    n = _size(bytesize, "bytesize")
    f = _int(flags, "Flags")
    if f & ~7:
        _fail("CUDA_ERROR_INVALID_VALUE", f"unknown cuMemHostAlloc flags {f:#x}")
    if n == 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "bytesize is 0")
    return DRIVER.allocate(n, "host", DRIVER.current(), f).address


@api
def cuMemFreeHost(p) -> None:
    a = DRIVER.allocs.get(_int(p, "p"))
    if a is None or a.kind != "host":
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(p)} is not a pointer cuMemHostAlloc returned"
              + (" (already freed)" if _int(p, "p") in DRIVER.freed else ""))
    DRIVER.release(a)


@api
def cuMemHostGetDevicePointer(p, flags=0) -> int:
    if _int(flags, "Flags") != 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "Flags must be 0")
    a = DRIVER.find(_int(p, "p"))
    if a is None or a.kind not in ("host", "registered"):
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(p)} is not in page-locked host memory "
              "(cuMemHostAlloc / cuMemHostRegister)")
    return _int(p, "p")


@api
def cuMemHostRegister(p, bytesize, flags=0) -> None:
    """Make existing host memory (an int address, or a numpy array / torch tensor / buffer)
    visible to kernels at its own address."""
    n = _size(bytesize, "bytesize")
    view = _host(p, n, True, "p") if not isinstance(p, (int, np.integer)) else \
        np.ctypeslib.as_array((ctypes.c_uint8 * max(n, 1)).from_address(int(p)))[:n]
    addr = view.ctypes.data
    if n == 0:
        _fail("CUDA_ERROR_INVALID_VALUE", "bytesize is 0")
    if DRIVER.gmem.buffer_at(addr) is not None or DRIVER.gmem.buffer_at(addr + n - 1):
        _fail("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", f"[{addr:#x}, {addr + n:#x}) "
              "overlaps memory already registered or allocated")
    try:
        DRIVER.gmem.map(view, f"registered host memory {addr:#x} ({n} bytes)", address=addr)
    except PtxsimError as e:
        _fail("CUDA_ERROR_INVALID_VALUE", str(e))
    DRIVER.allocs[addr] = Allocation(addr, n, "registered", view, DRIVER.current(),
                                     _int(flags, "Flags"))


@api
def cuMemHostUnregister(p) -> None:
    a = DRIVER.allocs.get(_int(p, "p") if isinstance(p, (int, np.integer)) else
                          _host(p, 0, False, "p").ctypes.data)
    if a is None or a.kind != "registered":
        _fail("CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", f"{_fmt(p)} was not registered with "
              "cuMemHostRegister")
    DRIVER.release(a)


@api
def cuMemGetInfo() -> tuple[int, int]:
    total = DRIVER.current().device.spec.total_mem
    used = sum(a.size for a in DRIVER.allocs.values() if a.kind in ("device", "managed"))
    return max(0, total - used), total


@api
def cuMemGetAddressRange(dptr) -> tuple[int, int]:
    a = DRIVER.find(_int(dptr, "dptr"))
    if a is None:
        _fail("CUDA_ERROR_NOT_FOUND", f"{_fmt(dptr)} is not in any allocation")
    return a.address, a.size


@api
def cuPointerGetAttribute(attribute, ptr):
    p = _int(ptr, "ptr")
    try:
        name, _ = enums.lookup(enums.POINTER_ATTRIBUTE, attribute, "CUpointer_attribute")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(attribute)} is not a CUpointer_attribute")
    a = DRIVER.find(p)
    if a is None:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{p:#x} is not memory the driver knows")
    ctx = a.context
    values = {"CONTEXT": ctx, "MEMORY_TYPE": enums.MEMORYTYPE["HOST" if a.kind in
                                                             ("host", "registered") else "DEVICE"],
              "DEVICE_POINTER": p, "HOST_POINTER": p, "IS_MANAGED": int(a.kind == "managed"),
              "DEVICE_ORDINAL": ctx.device.ordinal if ctx is not None else 0,
              "RANGE_START_ADDR": a.address, "RANGE_SIZE": a.size, "MAPPED": 1,
              "BUFFER_ID": a.address, "SYNC_MEMOPS": 1, "MAPPING_BASE_ADDR": a.address,
              "MAPPING_SIZE": a.size, "ACCESS_FLAGS": 3, "IS_LEGACY_CUDA_IPC_CAPABLE": 0,
              "IS_GPU_DIRECT_RDMA_CAPABLE": 0, "MEMORY_BLOCK_ID": a.address}
    if name not in values:
        _fail("CUDA_ERROR_NOT_SUPPORTED", f"pointer attribute {name} is not modelled")
    return values[name]


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    if dst.size:
        dst[:] = src


@api
def cuMemcpyHtoD(dst, src, nbytes) -> None:
    n = _size(nbytes)
    _copy(_dev_range(dst, n, "dstDevice"), _host(src, n, False, "srcHost"))


@api
def cuMemcpyDtoH(dst, src, nbytes) -> None:
    n = _size(nbytes)
    _copy(_host(dst, n, True, "dstHost"), _dev_range(src, n, "srcDevice"))


@api
def cuMemcpyDtoD(dst, src, nbytes) -> None:
    n = _size(nbytes)
    s = _dev_range(src, n, "srcDevice").copy()
    _copy(_dev_range(dst, n, "dstDevice"), s)


def _any(ptr, n: int, writable: bool, what: str) -> np.ndarray:
    if isinstance(ptr, (int, np.integer)) and DRIVER.find(int(ptr)) is not None:
        return _dev_range(ptr, n, what)
    return _host(ptr, n, writable, what)


@api
def cuMemcpy(dst, src, nbytes) -> None:
    """Unified addressing: each side is device or host memory by its address."""
    n = _size(nbytes)
    s = _any(src, n, False, "src").copy()
    _copy(_any(dst, n, True, "dst"), s)


@api
def cuMemcpyHtoDAsync(dst, src, nbytes, stream) -> None:
    _stream(stream)
    cuMemcpyHtoD(dst, src, nbytes)


@api
def cuMemcpyDtoHAsync(dst, src, nbytes, stream) -> None:
    _stream(stream)
    cuMemcpyDtoH(dst, src, nbytes)


@api
def cuMemcpyDtoDAsync(dst, src, nbytes, stream) -> None:
    _stream(stream)
    cuMemcpyDtoD(dst, src, nbytes)


@api
def cuMemcpyAsync(dst, src, nbytes, stream) -> None:
    _stream(stream)
    cuMemcpy(dst, src, nbytes)


def _memset(dst, value, count, width: int) -> None:
    n = _size(count, "N")
    v = _int(value, "value") & ((1 << 8 * width) - 1)
    view = _dev_range(dst, n * width, "dstDevice")
    if _int(dst, "dstDevice") % width:
        _fail("CUDA_ERROR_INVALID_VALUE", f"dstDevice {_int(dst, 'dst'):#x} is not "
              f"{width}-byte aligned")
    view.view({1: np.uint8, 2: "<u2", 4: "<u4"}[width])[:] = v


@api
def cuMemsetD8(dst, value, count) -> None:
    _memset(dst, value, count, 1)


@api
def cuMemsetD16(dst, value, count) -> None:
    _memset(dst, value, count, 2)


@api
def cuMemsetD32(dst, value, count) -> None:
    _memset(dst, value, count, 4)


@api
def cuMemsetD8Async(dst, value, count, stream) -> None:
    _stream(stream)
    _memset(dst, value, count, 1)


@api
def cuMemsetD16Async(dst, value, count, stream) -> None:
    _stream(stream)
    _memset(dst, value, count, 2)


@api
def cuMemsetD32Async(dst, value, count, stream) -> None:
    _stream(stream)
    _memset(dst, value, count, 4)


def _memset2d(dst, pitch, value, width, height, w: int) -> None:
    p, wd, h = _size(pitch, "dstPitch"), _size(width, "Width"), _size(height, "Height")
    if h and wd * w > p:
        _fail("CUDA_ERROR_INVALID_VALUE", f"Width {wd} x {w} bytes exceeds dstPitch {p}")
    base = _int(dst, "dstDevice")
    for r in range(h):
        _memset(base + r * p, value, wd, w)


@api
def cuMemsetD2D8(dst, pitch, value, width, height) -> None:
    _memset2d(dst, pitch, value, width, height, 1)


@api
def cuMemsetD2D16(dst, pitch, value, width, height) -> None:
    _memset2d(dst, pitch, value, width, height, 2)


@api
def cuMemsetD2D32(dst, pitch, value, width, height) -> None:
    _memset2d(dst, pitch, value, width, height, 4)


def device_array(dptr: int, shape, dtype) -> np.ndarray:
    """A numpy view of device memory (no copy): a convenience for Python callers."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) * dt.itemsize
    _call.text = f"device_array({_fmt(dptr)}, {shape}, {dt})"
    return _dev_range(dptr, n, "dptr").view(dt).reshape(shape)


# -------------------------------------------------------------------------------------------------
# modules and libraries
# -------------------------------------------------------------------------------------------------
ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = 0xBA55ED50


class Module(Handle):
    __slots__ = ("ptx", "parsed", "context", "functions", "globals", "consts", "const_alloc",
                 "allocations", "library")


class Function(Handle):
    __slots__ = ("module", "name", "fn", "decls", "offsets", "param_bytes", "static_shared",
                 "local_bytes", "const_bytes", "attrs")


class Library(Handle):
    __slots__ = ("module", "kernels")


class Kernel(Handle):
    __slots__ = ("library", "name", "function")


def register_image(binary: bytes, ptx: str) -> None:
    """Tell the driver which PTX a binary image (a cubin the program loads) was built from:
    ptxsim runs PTX, so a program that loads the cubin runs that PTX (CuTe DSL routing)."""
    DRIVER.images[bytes(binary)] = ptx


def _image_bytes(image) -> bytes:
    if isinstance(image, str):
        return image.encode()
    if isinstance(image, (int, np.integer)):
        p = _int(image, "image")
        if p == 0:
            _fail("CUDA_ERROR_INVALID_VALUE", "image is a null pointer")
        head = ctypes.string_at(p, 64)
        if head[:4] == ELF_MAGIC:
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
            return ctypes.string_at(p, shoff + shentsize * shnum)
        if struct.unpack_from("<I", head)[0] == FATBIN_MAGIC:
            size = 0                                   # containers follow one another
            while struct.unpack_from("<I", ctypes.string_at(p + size, 4))[0] == FATBIN_MAGIC:
                hsize, fsize = struct.unpack_from("<HQ", ctypes.string_at(p + size + 6, 10))
                size += hsize + fsize
            return ctypes.string_at(p, size)
        return ctypes.string_at(p)
    try:
        return bytes(memoryview(image).cast("B"))
    except TypeError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"image: {type(image).__name__} is not an image")


def _fatbin_ptx(raw: bytes) -> str | None:
    """The PTX of a fat binary that runs on the current device: of its PTX entries, the
    newest whose .target the device runs (`_target_ok`)."""
    from ptxsim.cuda import fatbin
    try:
        found = fatbin.ptx_entries(raw)
    except fatbin.FatbinError as e:
        _fail("CUDA_ERROR_INVALID_IMAGE", f"the fat binary cannot be read: {e}")
    cc = DRIVER.current().device.spec.cc if DRIVER.current() else (10, 0)
    ok = [e for e in found if _target_ok(e.target, cc)]
    return max(ok, key=lambda e: e.arch).text if ok else None


def _image_ptx(image) -> str:
    raw = _image_bytes(image)
    if raw[:4] == ELF_MAGIC or (len(raw) >= 4 and struct.unpack_from("<I", raw)[0]
                                == FATBIN_MAGIC):
        ptx = DRIVER.images.get(raw)
        for reader in DRIVER.image_readers:
            if ptx is None:
                ptx = reader(raw)
        if ptx is None and raw[:4] != ELF_MAGIC:
            ptx = _fatbin_ptx(raw)
        if ptx is None:
            if raw[:4] == ELF_MAGIC:
                kind = "cubin (SASS only)"
            else:
                from ptxsim.cuda import fatbin
                kind = f"fat binary without PTX for this device (it holds {fatbin.describe(raw)})"
            _fail("CUDA_ERROR_NO_BINARY_FOR_GPU", f"the image is a {kind}: ptxsim runs PTX, so "
                  "build with PTX in the binary (nvcc -gencode arch=compute_100a,code=compute_100a)"
                  " or load the .ptx")
        return ptx
    text = raw.split(b"\0", 1)[0]
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        _fail("CUDA_ERROR_INVALID_IMAGE", "the image is neither PTX text, a cubin nor a fatbin")


def _target_ok(target: str | None, cc: tuple[int, int]) -> bool:
    """PTX .target compatibility (CUDA C++ Programming Guide, "Feature availability"): sm_XY
    runs on compute capability >= X.Y; sm_XYa only on X.Y; sm_XYf on X.Z with Z >= Y."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)([af]?)", target or "sm_52")
    if not m:
        return False
    major, minor, suffix = int(m[1]), int(m[2]), m[3]
    if suffix == "a":
        return cc == (major, minor)
    if suffix == "f":
        return cc[0] == major and cc[1] >= minor
    return cc >= (major, minor)


def _load_module(image, ctx: Context) -> Module:
    from ptxsim.machine.executor import module_storage
    from ptxsim.ptx import parse_module
    ptx = _image_ptx(image)
    try:
        parsed = parse_module(ptx)
    except PtxsimError as e:
        _fail("CUDA_ERROR_INVALID_PTX", f"the PTX does not parse: {e}", e)
    # a PTX ISA newer than the driver is its own error, before any other check
    if parsed.version:
        v = tuple(int(x) for x in parsed.version.split("."))
        if v > PTX_ISA_MAX:
            _fail("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", f"PTX ISA {parsed.version} is newer than "
                  f"this driver's {PTX_ISA_MAX[0]}.{PTX_ISA_MAX[1]}")
    if DRIVER.options.get("validate", True):
        from ptxsim.ptx import errors_of, validate
        errs = errors_of(validate(parsed))
        if errs:
            more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
            _fail("CUDA_ERROR_INVALID_PTX", f"{errs[0]}{more}")
    dev = ctx.device.spec
    if not _target_ok(parsed.target, dev.cc):
        # measured (H200): PTX for sm_100a fails to JIT with CUDA_ERROR_INVALID_PTX
        _fail("CUDA_ERROR_INVALID_PTX", f"PTX for .target {parsed.target} cannot run on "
              f"{dev.name} (compute capability {dev.cc[0]}.{dev.cc[1]})")
    mod = Module()
    mod.ptx, mod.parsed, mod.context, mod.library = ptx, parsed, ctx, None
    mod.functions, mod.globals, mod.consts, mod.allocations = {}, {}, {}, []
    consts, bank, globals_ = module_storage(parsed)
    for name, init in globals_.items():
        if not init:
            continue
        a = DRIVER.allocate(len(init), "module", ctx)
        a.view[:] = np.frombuffer(init, np.uint8)
        mod.allocations.append(a)
        mod.globals[name] = (a.address, len(init))
    mod.const_alloc = None
    if bank:
        a = DRIVER.allocate(len(bank), "module", ctx)
        a.view[:] = np.frombuffer(bank, np.uint8)
        mod.allocations.append(a)
        mod.const_alloc = a
        mod.consts = {n: (a.address + off, size) for n, (off, size) in consts.items()}
    return _register(mod)


@api
def cuModuleLoadData(image) -> Module:
    return _load_module(image, DRIVER.current())


@api
def cuModuleLoadDataEx(image, num_options=0, options=None, option_values=None) -> Module:
    return _load_module(image, DRIVER.current())


@api
def cuModuleLoadFatBinary(image) -> Module:
    return _load_module(image, DRIVER.current())


@api
def cuModuleLoad(fname) -> Module:
    path = os.fsdecode(fname)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        _fail("CUDA_ERROR_FILE_NOT_FOUND", f"cannot read {path}")
    return _load_module(data, DRIVER.current())


def _module(value) -> Module:
    return _resolve(value, Module, what="module")


def _unload(mod: Module) -> None:
    for a in mod.allocations:
        if a.address in DRIVER.allocs:
            DRIVER.release(a)
    for f in mod.functions.values():
        f.alive = False
    mod.alive = False


@api
def cuModuleUnload(hmod) -> None:
    m = _module(hmod)
    if m.library is not None:
        _fail("CUDA_ERROR_INVALID_HANDLE", "the module belongs to a library: cuLibraryUnload")
    _unload(m)


def _function(mod: Module, name: str) -> Function:
    from ptxsim.machine.executor import layout_variables, param_decls
    from ptxsim.machine.memory import GlobalMemory
    from ptxsim.machine.params import param_offsets
    from ptxsim.machine.program import Program
    f = mod.functions.get(name)
    if f is not None:
        return f
    entry = next((fn for fn in mod.parsed.entries if fn.name == name and fn.body is not None),
                 None)
    if entry is None:
        _fail("CUDA_ERROR_NOT_FOUND", f"no kernel (.entry) named '{name}' in the module (kernels: "
              f"{', '.join(e.name for e in mod.parsed.entries) or 'none'})")
    f = Function()
    f.module, f.name, f.fn = mod, name, entry
    f.decls = param_decls(entry)
    f.offsets, f.param_bytes = param_offsets(f.decls)
    prog = Program.build(mod.parsed, name)
    _, f.static_shared, f.local_bytes, const = layout_variables(
        prog, GlobalMemory(), {v.name: 0 for v in prog.variables if v.space == ".global"})
    f.const_bytes = len(const)
    d = entry.directives
    req = tuple(int(x) for x in d.get(".reqnctapercluster", ())) or None
    spec_ = mod.context.device.spec
    f.attrs = {"MAX_DYNAMIC_SHARED_SIZE_BYTES": max(0, 49152 - f.static_shared),
               "PREFERRED_SHARED_MEMORY_CARVEOUT": -1,
               "NON_PORTABLE_CLUSTER_SIZE_ALLOWED": 0,
               "CLUSTER_SCHEDULING_POLICY_PREFERENCE": 0,
               "REQUIRED_CLUSTER": req,
               "CLUSTER_SIZE_MUST_BE_SET": int(".explicitcluster" in d or req is not None),
               "max_threads": _max_threads(entry), "spec": spec_}
    mod.functions[name] = _register(f)
    return f


def _max_threads(entry) -> int:
    d = entry.directives
    for key in (".reqntid", ".maxntid"):
        if key in d:
            n = 1
            for x in d[key]:
                n *= int(x)
            return min(n, 1024)
    return 1024


@api
def cuModuleGetFunction(hmod, name) -> Function:
    return _function(_module(hmod), _name(name))


def _name(name) -> str:
    if isinstance(name, (bytes, bytearray)):
        return bytes(name).split(b"\0", 1)[0].decode()
    if isinstance(name, (int, np.integer)):
        return ctypes.string_at(int(name)).decode()
    return str(name)


@api
def cuModuleGetGlobal(hmod, name) -> tuple[int, int]:
    m, n = _module(hmod), _name(name)
    hit = m.globals.get(n) or m.consts.get(n)
    if hit is None:
        _fail("CUDA_ERROR_NOT_FOUND", f"no .global or .const variable named '{n}' in the module")
    return hit


@api
def cuModuleGetFunctionCount(hmod) -> int:
    return len([e for e in _module(hmod).parsed.entries if e.body is not None])


@api
def cuModuleEnumerateFunctions(num, hmod) -> list:
    m = _module(hmod)
    return [_function(m, e.name) for e in m.parsed.entries if e.body is not None][:_int(num, "n")]


@api
def cuLibraryLoadData(code, jit_options=None, jit_option_values=None, num_jit_options=0,
                      library_options=None, library_option_values=None,
                      num_library_options=0) -> Library:
    ctx = DRIVER.current()
    if ctx is None:                                    # libraries load into the primary context
        ctx = cuDevicePrimaryCtxRetain(0)
    lib = Library()
    lib.module = _load_module(code, ctx)
    lib.kernels = {}
    _register(lib)
    lib.module.library = lib
    return lib


@api
def cuLibraryLoadFromFile(fname, *rest) -> Library:
    try:
        with open(os.fsdecode(fname), "rb") as f:
            data = f.read()
    except OSError:
        _fail("CUDA_ERROR_FILE_NOT_FOUND", f"cannot read {os.fsdecode(fname)}")
    return cuLibraryLoadData(data)


def _library(value) -> Library:
    return _resolve(value, Library, what="library")


@api
def cuLibraryUnload(library) -> None:
    lib = _library(library)
    _unload(lib.module)
    for k in lib.kernels.values():
        k.alive = False
    lib.alive = False


@api
def cuLibraryGetKernel(library, name) -> Kernel:
    lib, n = _library(library), _name(name)
    k = lib.kernels.get(n)
    if k is None:
        f = _function(lib.module, n)
        k = Kernel()
        k.library, k.name, k.function = lib, n, f
        lib.kernels[n] = _register(k)
    return k


@api
def cuLibraryGetKernelCount(library) -> int:
    return len([e for e in _library(library).module.parsed.entries if e.body is not None])


@api
def cuLibraryEnumerateKernels(num, library) -> list:
    lib = _library(library)
    return [cuLibraryGetKernel(lib, e.name) for e in lib.module.parsed.entries
            if e.body is not None][:_int(num, "n")]


@api
def cuLibraryGetModule(library) -> Module:
    return _library(library).module


@api
def cuLibraryGetGlobal(library, name) -> tuple[int, int]:
    return cuModuleGetGlobal(_library(library).module, name)


def _kernel(value) -> Kernel:
    return _resolve(value, Kernel, what="kernel")


@api
def cuKernelGetFunction(kernel) -> Function:
    return _kernel(kernel).function


@api
def cuKernelGetName(kernel) -> str:
    return _kernel(kernel).name


@api
def cuKernelGetAttribute(attrib, kernel, dev=0) -> int:
    _device(dev)
    return _get_attr(_kernel(kernel).function, attrib)


@api
def cuKernelSetAttribute(attrib, value, kernel, dev=0) -> None:
    _device(dev)
    _set_attr(_kernel(kernel).function, attrib, value)


@api
def cuKernelGetLibrary(kernel) -> Library:
    return _kernel(kernel).library


# -------------------------------------------------------------------------------------------------
# function attributes
# -------------------------------------------------------------------------------------------------
def _func(value) -> Function:
    obj = value if isinstance(value, Handle) else DRIVER.handles.get(_int(value, "f"))
    if isinstance(obj, Kernel) and obj.alive:        # a CUkernel passed where CUfunction goes
        return obj.function
    return _resolve(value, Function, what="function")


def _get_attr(f: Function, attrib) -> int:
    try:
        name, _ = enums.lookup(enums.FUNCTION_ATTRIBUTE, attrib, "CUfunction_attribute")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(attrib)} is not a CUfunction_attribute")
    a = f.attrs
    req = a["REQUIRED_CLUSTER"] or (0, 0, 0)
    version = f.module.parsed.version or "0.0"
    major, minor = (int(x) for x in version.split("."))
    cc = a["spec"].cc
    values = {"MAX_THREADS_PER_BLOCK": a["max_threads"], "SHARED_SIZE_BYTES": f.static_shared,
              "CONST_SIZE_BYTES": f.const_bytes, "LOCAL_SIZE_BYTES": f.local_bytes,
              "NUM_REGS": _num_regs(f), "PTX_VERSION": major * 10 + minor,
              "BINARY_VERSION": cc[0] * 10 + cc[1], "CACHE_MODE_CA": 0,
              "MAX_DYNAMIC_SHARED_SIZE_BYTES": a["MAX_DYNAMIC_SHARED_SIZE_BYTES"],
              "PREFERRED_SHARED_MEMORY_CARVEOUT": a["PREFERRED_SHARED_MEMORY_CARVEOUT"],
              "CLUSTER_SIZE_MUST_BE_SET": a["CLUSTER_SIZE_MUST_BE_SET"],
              "REQUIRED_CLUSTER_WIDTH": req[0], "REQUIRED_CLUSTER_HEIGHT": req[1],
              "REQUIRED_CLUSTER_DEPTH": req[2],
              "NON_PORTABLE_CLUSTER_SIZE_ALLOWED": a["NON_PORTABLE_CLUSTER_SIZE_ALLOWED"],
              "CLUSTER_SCHEDULING_POLICY_PREFERENCE": a["CLUSTER_SCHEDULING_POLICY_PREFERENCE"],
              "DEVICE_NODE_UPDATE_SUPPORTED": 0, "SHARED_MEMORY_MODE": 0}
    return values[name]


def _num_regs(f: Function) -> int:
    # ptxsim allocates no registers: .maxnreg when the kernel gives one, else 32 (documented)
    v = f.fn.directives.get(".maxnreg")
    return int(v[0]) if v else 32


def _set_attr(f: Function, attrib, value) -> None:
    try:
        name, _ = enums.lookup(enums.FUNCTION_ATTRIBUTE, attrib, "CUfunction_attribute")
    except KeyError:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(attrib)} is not a CUfunction_attribute")
    v = _int(value, "value")
    s = f.attrs["spec"]
    if name == "MAX_DYNAMIC_SHARED_SIZE_BYTES":
        if v < 0 or v + f.static_shared > s.smem_per_block_optin:
            _fail("CUDA_ERROR_INVALID_VALUE", f"{v} bytes of dynamic shared memory + "
                  f"{f.static_shared} static exceed the {s.smem_per_block_optin} bytes a block "
                  f"can have on {s.name}")
    elif name == "PREFERRED_SHARED_MEMORY_CARVEOUT":
        if not (v == -1 or 0 <= v <= 100):
            _fail("CUDA_ERROR_INVALID_VALUE", "the carveout is a percentage 0..100 or -1")
    elif name == "NON_PORTABLE_CLUSTER_SIZE_ALLOWED":
        if v not in (0, 1):
            _fail("CUDA_ERROR_INVALID_VALUE", "NON_PORTABLE_CLUSTER_SIZE_ALLOWED is 0 or 1")
    elif name == "CLUSTER_SCHEDULING_POLICY_PREFERENCE":
        if v not in enums.CLUSTER_SCHEDULING_POLICY.values():
            _fail("CUDA_ERROR_INVALID_VALUE", f"{v} is not a CUclusterSchedulingPolicy")
    elif name in ("REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT", "REQUIRED_CLUSTER_DEPTH"):
        if f.fn.directives.get(".reqnctapercluster"):
            _fail("CUDA_ERROR_NOT_PERMITTED", "the kernel's cluster dimensions are fixed at "
                  "compile time (.reqnctapercluster)")
        req = list(f.attrs["REQUIRED_CLUSTER"] or (1, 1, 1))
        req[["REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT",
             "REQUIRED_CLUSTER_DEPTH"].index(name)] = v
        f.attrs["REQUIRED_CLUSTER"] = tuple(req)
        f.attrs["CLUSTER_SIZE_MUST_BE_SET"] = 1
        return
    else:
        _fail("CUDA_ERROR_INVALID_VALUE", f"function attribute {name} is read-only")
    f.attrs[name] = v


@api
def cuFuncGetAttribute(attrib, hfunc) -> int:
    return _get_attr(_func(hfunc), attrib)


@api
def cuFuncSetAttribute(hfunc, attrib, value) -> None:
    _set_attr(_func(hfunc), attrib, value)


@api
def cuFuncSetCacheConfig(hfunc, config) -> None:
    _func(hfunc)


@api
def cuFuncGetName(hfunc) -> str:
    return _func(hfunc).name


@api
def cuFuncGetModule(hfunc) -> Module:
    return _func(hfunc).module


@api
def cuFuncGetParamInfo(hfunc, index) -> tuple[int, int]:
    """(offset, size) of kernel parameter `index` in the parameter buffer."""
    f = _func(hfunc)
    i = _int(index, "paramIndex")
    if not 0 <= i < len(f.decls):
        _fail("CUDA_ERROR_INVALID_VALUE", f"the kernel has {len(f.decls)} parameters")
    return f.offsets[i], f.decls[i][0]


@api
def cuFuncGetParamCount(hfunc) -> int:
    return len(_func(hfunc).decls)


@api
def cuFuncIsLoaded(hfunc) -> int:
    _func(hfunc)
    return 1


@api
def cuFuncLoad(hfunc) -> None:
    _func(hfunc)


# -------------------------------------------------------------------------------------------------
# streams and events
# -------------------------------------------------------------------------------------------------
class Stream(Handle):
    __slots__ = ("context", "flags", "priority")


class Event(Handle):
    __slots__ = ("context", "flags", "time")


def _stream(value):
    """None / 0 / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD or a live stream of the context."""
    if value is None:
        return None
    h = _int(value, "hStream")
    if h in (0, enums.STREAM_LEGACY, enums.STREAM_PER_THREAD):
        return None
    return _resolve(value, Stream, what="stream")


@api
def cuStreamCreate(flags=0) -> Stream:
    return cuStreamCreateWithPriority(flags, 0)


@api
def cuStreamCreateWithPriority(flags, priority) -> Stream:
    f = _int(flags, "Flags")
    if f & ~1:
        _fail("CUDA_ERROR_INVALID_VALUE", f"unknown stream flags {f:#x}")
    s = Stream()
    s.context, s.flags, s.priority = DRIVER.current(), f, max(-5, min(0, _int(priority, "p")))
    s.context.streams.add(_register(s))
    return s


@api
def cuStreamDestroy(stream) -> None:
    s = _stream(stream)
    if s is None:
        _fail("CUDA_ERROR_INVALID_HANDLE", "the NULL stream cannot be destroyed")
    s.alive = False
    s.context.streams.discard(s)


@api
def cuStreamSynchronize(stream) -> None:
    _stream(stream)


@api
def cuStreamQuery(stream) -> None:
    _stream(stream)


@api
def cuStreamWaitEvent(stream, event, flags=0) -> None:
    _stream(stream)
    _event(event)


@api
def cuStreamGetPriority(stream) -> int:
    s = _stream(stream)
    return 0 if s is None else s.priority


@api
def cuStreamGetFlags(stream) -> int:
    s = _stream(stream)
    return 0 if s is None else s.flags


@api
def cuStreamGetCtx(stream) -> Context:
    s = _stream(stream)
    return DRIVER.current() if s is None else s.context


@api
def cuCtxGetStreamPriorityRange() -> tuple[int, int]:
    return 0, -5


@api
def cuLaunchHostFunc(stream, fn, user_data) -> None:
    _stream(stream)
    fn(user_data)


@api
def cuStreamAddCallback(stream, callback, user_data, flags=0) -> None:
    _stream(stream)
    callback(stream, enums.CURESULT["CUDA_SUCCESS"], user_data)


def _event(value) -> Event:
    return _resolve(value, Event, what="event")


@api
def cuEventCreate(flags=0) -> Event:
    f = _int(flags, "Flags")
    if f & ~0xF:
        _fail("CUDA_ERROR_INVALID_VALUE", f"unknown event flags {f:#x}")
    e = Event()
    e.context, e.flags, e.time = DRIVER.current(), f, None
    return _register(e)


@api
def cuEventDestroy(event) -> None:
    _event(event).alive = False


@api
def cuEventRecord(event, stream=0) -> None:
    _stream(stream)
    _event(event).time = DRIVER.clock_ns


@api
def cuEventRecordWithFlags(event, stream=0, flags=0) -> None:
    cuEventRecord(event, stream)


@api
def cuEventQuery(event) -> None:
    _event(event)


@api
def cuEventSynchronize(event) -> None:
    _event(event)


@api
def cuEventElapsedTime(start, end) -> float:
    """Milliseconds between two recorded events on ptxsim's clock: each launch advances it by
    its executed warp instructions, one nanosecond each (docs/cuda.md)."""
    a, b = _event(start), _event(end)
    for e in (a, b):
        if e.flags & enums.EVENT_DISABLE_TIMING:
            _fail("CUDA_ERROR_INVALID_HANDLE", f"{e!r} was created with "
                  "CU_EVENT_DISABLE_TIMING")
        if e.time is None:
            _fail("CUDA_ERROR_INVALID_HANDLE", f"{e!r} has not been recorded")
    return (b.time - a.time) / 1e6


# -------------------------------------------------------------------------------------------------
# launches
# -------------------------------------------------------------------------------------------------
@dataclass
class LaunchConfig:
    """cuLaunchKernelEx's CUlaunchConfig: `attrs` maps a CUlaunchAttributeID (name or number)
    to its value: CLUSTER_DIMENSION (x, y, z), CLUSTER_SCHEDULING_POLICY_PREFERENCE int,
    PROGRAMMATIC_STREAM_SERIALIZATION 0/1, COOPERATIVE 0/1, PROGRAMMATIC_EVENT /
    LAUNCH_COMPLETION_EVENT an event, ... (cuda-python's CUlaunchConfig is accepted as is)."""
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    shared: int = 0
    stream: object = 0
    attrs: dict = field(default_factory=dict)


def _dim(v) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), 1, 1
    if hasattr(v, "x"):
        return int(v.x), int(v.y), int(v.z)
    t = tuple(int(x) for x in v)
    return t + (1,) * (3 - len(t))


def _config_attrs(config) -> list[tuple[str, object]]:
    """[(CUlaunchAttributeID name, value)] of a LaunchConfig or a cuda-python CUlaunchConfig."""
    out = []
    if isinstance(config, LaunchConfig):
        items = list(config.attrs.items())
    else:
        n = int(getattr(config, "numAttrs", 0) or 0)
        items = [(a.id, a.value) for a in list(getattr(config, "attrs", []) or [])[:n]]
    for k, v in items:
        try:
            name, _ = enums.lookup(enums.LAUNCH_ATTRIBUTE, k, "CUlaunchAttributeID")
        except KeyError:
            _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(k)} is not a CUlaunchAttributeID")
        out.append((name, v))
    return out


_ATTR_FIELD = {"CLUSTER_DIMENSION": "clusterDim",
               "CLUSTER_SCHEDULING_POLICY_PREFERENCE": "clusterSchedulingPolicyPreference",
               "PROGRAMMATIC_STREAM_SERIALIZATION": "programmaticStreamSerializationAllowed",
               "COOPERATIVE": "cooperative", "PRIORITY": "priority",
               "PROGRAMMATIC_EVENT": "programmaticEvent",
               "LAUNCH_COMPLETION_EVENT": "launchCompletionEvent",
               "PREFERRED_CLUSTER_DIMENSION": "preferredClusterDim",
               "MEM_SYNC_DOMAIN": "memSyncDomain",
               "PREFERRED_SHARED_MEMORY_CARVEOUT": "sharedMemCarveout"}


def _attr_value(name: str, v):
    fld = _ATTR_FIELD.get(name)
    if fld and hasattr(v, fld) and not isinstance(v, (int, tuple, list)):
        v = getattr(v, fld)
    return v


def kernel_params(f: Function, params, extra=None) -> bytes:
    """The parameter bytes of a launch. `params`: one value per kernel parameter (bytes of the
    parameter's size, ints, floats, numpy scalars, ctypes objects, objects with int() for
    pointers, CUtensorMap / TensorMap for a 128-byte map), or an int: the address of the C
    `void *kernelParams[]`. `extra`: bytes of the packed buffer, or the C list
    [CU_LAUNCH_PARAM_BUFFER_POINTER, ptr, CU_LAUNCH_PARAM_BUFFER_SIZE, size_ptr, CU_LAUNCH_PARAM_END]."""
    have_params = params is not None and not (isinstance(params, (int, np.integer))
                                              and int(params) == 0)
    have_extra = extra is not None and not (isinstance(extra, (int, np.integer))
                                            and int(extra) == 0)
    if have_params and have_extra:
        _fail("CUDA_ERROR_INVALID_VALUE", "both kernelParams and extra are given")
    if have_extra:
        return _extra_buffer(f, extra)
    n = len(f.decls)
    if not have_params:
        if n:
            _fail("CUDA_ERROR_INVALID_VALUE", f"kernel '{f.name}' takes {n} parameters and "
                  "neither kernelParams nor extra is given")
        return b""
    image = bytearray(f.param_bytes)
    if isinstance(params, (int, np.integer)):
        ptrs = (ctypes.c_void_p * n).from_address(int(params)) if n else []
        for i, ((size, _), off) in enumerate(zip(f.decls, f.offsets)):
            if not ptrs[i]:
                _fail("CUDA_ERROR_INVALID_VALUE", f"kernelParams[{i}] is a null pointer")
            image[off:off + size] = ctypes.string_at(ptrs[i], size)
        return bytes(image)
    params = list(params)
    if len(params) != n:
        _fail("CUDA_ERROR_INVALID_VALUE", f"kernel '{f.name}' takes {n} parameters, "
              f"{len(params)} given")
    for i, (v, (size, _), off) in enumerate(zip(params, f.decls, f.offsets)):
        image[off:off + size] = _param_bytes(v, size, i)
    return bytes(image)


def _param_bytes(v, size: int, i: int) -> bytes:
    what = f"kernelParams[{i}]"
    if isinstance(v, (bytes, bytearray, memoryview)):
        raw = bytes(v)
    elif isinstance(v, ctypes._SimpleCData) or isinstance(v, (ctypes.Structure, ctypes.Array)):
        raw = bytes(v)
    elif isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, np.generic):
        raw = np.asarray(v).tobytes()
    elif isinstance(v, bool) or isinstance(v, (int, np.integer)):
        x = int(v)
        if not -(1 << (8 * size - 1)) <= x < (1 << 8 * size):
            _fail("CUDA_ERROR_INVALID_VALUE", f"{what} = {x} does not fit the kernel's "
                  f"{size}-byte parameter")
        raw = (x % (1 << 8 * size)).to_bytes(size, "little")
    elif isinstance(v, float):
        if size not in (2, 4, 8):
            _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: a float for a {size}-byte parameter")
        raw = np.array(v, {2: "<f2", 4: "<f4", 8: "<f8"}[size]).tobytes()
    elif hasattr(v, "to_bytes") and callable(v.to_bytes) and not isinstance(v, int):
        raw = v.to_bytes()                                     # ptxsim TensorMap
    elif isinstance(v, np.ndarray) or type(v).__module__.startswith("torch"):
        ptr = v.ctypes.data if isinstance(v, np.ndarray) else v.data_ptr()
        if DRIVER.find(ptr) is None:
            _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: this host array is not device memory; "
                  "allocate with cuMemAlloc or register it with cuMemHostRegister")
        raw = int(ptr).to_bytes(8, "little")
    elif hasattr(v, "__int__"):
        raw = (_int(v, what) % (1 << 64)).to_bytes(8, "little")[:size]
    else:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: cannot pass a {type(v).__name__}")
    if len(raw) != size:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{what}: {len(raw)} bytes given for a {size}-byte "
              "parameter")
    return raw


def _extra_buffer(f: Function, extra) -> bytes:
    if isinstance(extra, (bytes, bytearray, memoryview)):
        buf = bytes(extra)
    else:
        items = list(extra) if not isinstance(extra, (int, np.integer)) else None
        if items is None:                                      # C array of void*
            arr = ctypes.cast(int(extra), ctypes.POINTER(ctypes.c_void_p))
            items, i = [], 0
            while True:
                items.append(arr[i] or 0)
                if items[-1] == enums.LAUNCH_PARAM_END or i > 16:
                    break
                i += 1
        ptr = size = None
        for k in range(0, len(items) - 1, 2):
            key = _int(items[k], "extra key")
            if key == enums.LAUNCH_PARAM_END:
                break
            if key == enums.LAUNCH_PARAM_BUFFER_POINTER:
                ptr = items[k + 1]
            elif key == enums.LAUNCH_PARAM_BUFFER_SIZE:
                s = items[k + 1]
                size = (ctypes.c_size_t.from_address(_int(s, "size")).value
                        if isinstance(s, (int, np.integer)) else _int(s, "size"))
            else:
                _fail("CUDA_ERROR_INVALID_VALUE", f"unknown extra key {key}")
        if ptr is None or size is None:
            _fail("CUDA_ERROR_INVALID_VALUE", "extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and "
                  "CU_LAUNCH_PARAM_BUFFER_SIZE")
        buf = (bytes(ptr)[:size] if isinstance(ptr, (bytes, bytearray))
               else ctypes.string_at(_int(ptr, "buffer"), size))
    if len(buf) < f.param_bytes:
        _fail("CUDA_ERROR_INVALID_VALUE", f"the parameter buffer holds {len(buf)} bytes, the "
              f"kernel's parameters take {f.param_bytes}")
    return buf[:f.param_bytes]


# how a kernel fault reaches the host (the CUresult the next synchronising call returns on a GPU)
def _fault_result(e: BaseException) -> tuple[str, bool]:
    from ptxsim import errors as E
    res = getattr(e, "cuda_result", None)
    if res:
        return res, True
    table = [(E.MisalignedAddress, "CUDA_ERROR_MISALIGNED_ADDRESS"),
             (E.MemoryAccessError, "CUDA_ERROR_ILLEGAL_ADDRESS"),
             (E.IllegalInstructionError, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
             (E.TrapError, "CUDA_ERROR_LAUNCH_FAILED"),
             (E.DeadlockError, "CUDA_ERROR_LAUNCH_TIMEOUT"),
             (E.StepLimitExceeded, "CUDA_ERROR_LAUNCH_TIMEOUT"),
             (E.UnsupportedFeature, "CUDA_ERROR_NOT_SUPPORTED")]
    for cls, res in table:
        if isinstance(e, cls):
            return res, res != "CUDA_ERROR_NOT_SUPPORTED"
    return "CUDA_ERROR_LAUNCH_FAILED", True


def _launch(f: Function, grid, block, shared, stream, params, extra, attrs) -> None:
    ctx = DRIVER.current()
    s = f.attrs["spec"]
    if f.module.context.device is not ctx.device:
        _fail("CUDA_ERROR_INVALID_CONTEXT", f"the function's module was loaded on device "
              f"{f.module.context.device.ordinal}, the current context is on device "
              f"{ctx.device.ordinal}")
    _stream(stream)
    g, b = _dim(grid), _dim(block)
    a = s.attributes
    lim_g = (a["MAX_GRID_DIM_X"], a["MAX_GRID_DIM_Y"], a["MAX_GRID_DIM_Z"])
    lim_b = (a["MAX_BLOCK_DIM_X"], a["MAX_BLOCK_DIM_Y"], a["MAX_BLOCK_DIM_Z"])
    for i, n in enumerate("xyz"):
        if not 1 <= g[i] <= lim_g[i]:
            _fail("CUDA_ERROR_INVALID_VALUE", f"gridDim.{n} = {g[i]} is outside 1..{lim_g[i]}")
        if not 1 <= b[i] <= lim_b[i]:
            _fail("CUDA_ERROR_INVALID_VALUE", f"blockDim.{n} = {b[i]} is outside 1..{lim_b[i]}")
    threads = b[0] * b[1] * b[2]
    if threads > f.attrs["max_threads"]:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{threads} threads per block exceed the kernel's "
              f"limit of {f.attrs['max_threads']} (.maxntid / .reqntid or 1024)")
    reqntid = f.fn.directives.get(".reqntid")
    if reqntid and tuple(int(x) for x in reqntid) + (1,) * (3 - len(reqntid)) != b:
        _fail("CUDA_ERROR_INVALID_VALUE", f"the kernel requires blockDim {tuple(reqntid)} "
              f"(.reqntid), launched with {b}")
    dyn = _size(shared, "sharedMemBytes")
    if dyn > f.attrs["MAX_DYNAMIC_SHARED_SIZE_BYTES"]:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{dyn} bytes of dynamic shared memory exceed the "
              f"kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES of "
              f"{f.attrs['MAX_DYNAMIC_SHARED_SIZE_BYTES']} (raise it with cuFuncSetAttribute)")
    if dyn + f.static_shared > s.smem_per_block_optin:
        _fail("CUDA_ERROR_INVALID_VALUE", f"{dyn} dynamic + {f.static_shared} static bytes of "
              f"shared memory exceed {s.smem_per_block_optin}")
    # launch attributes
    cluster = None
    cooperative = False
    events = []
    for name, v in attrs:
        v = _attr_value(name, v)
        if name == "CLUSTER_DIMENSION":
            cluster = _dim(v)
        elif name == "CLUSTER_SCHEDULING_POLICY_PREFERENCE":
            if int(v) not in enums.CLUSTER_SCHEDULING_POLICY.values():
                _fail("CUDA_ERROR_INVALID_VALUE", f"{_fmt(v)} is not a CUclusterSchedulingPolicy")
        elif name == "COOPERATIVE":
            cooperative = bool(int(v))
        elif name in ("PROGRAMMATIC_EVENT", "LAUNCH_COMPLETION_EVENT"):
            ev = getattr(v, "event", v)
            events.append(_event(ev))
        elif name in ("PROGRAMMATIC_STREAM_SERIALIZATION", "PRIORITY", "MEM_SYNC_DOMAIN",
                      "MEM_SYNC_DOMAIN_MAP", "ACCESS_POLICY_WINDOW", "IGNORE",
                      "SYNCHRONIZATION_POLICY", "PREFERRED_SHARED_MEMORY_CARVEOUT",
                      "PREFERRED_CLUSTER_DIMENSION", "DEVICE_UPDATABLE_KERNEL_NODE",
                      "NVLINK_UTIL_CENTRIC_SCHEDULING", "PORTABLE_CLUSTER_SIZE_MODE",
                      "SHARED_MEMORY_MODE"):
            pass          # no effect on a synchronous, in-order machine (docs/cuda.md)
    req = f.attrs["REQUIRED_CLUSTER"]
    if cluster is not None and req is not None and cluster != req:
        _fail("CUDA_ERROR_INVALID_CLUSTER_SIZE", f"cluster {cluster} differs from the kernel's "
              f"required cluster {req}")
    cluster = cluster or req
    if cluster is None and f.attrs["CLUSTER_SIZE_MUST_BE_SET"]:
        _fail("CUDA_ERROR_INVALID_CLUSTER_SIZE", "the kernel needs a cluster dimension "
              "(.explicitcluster): launch with cuLaunchKernelEx and CLUSTER_DIMENSION")
    nonportable = bool(f.attrs["NON_PORTABLE_CLUSTER_SIZE_ALLOWED"])
    if cluster is not None:
        size = cluster[0] * cluster[1] * cluster[2]
        limit = s.cluster_nonportable if nonportable else s.cluster_portable
        if min(cluster) < 1 or size > limit:
            _fail("CUDA_ERROR_INVALID_CLUSTER_SIZE", f"cluster {cluster} has {size} CTAs; at most "
                  f"{limit}" + ("" if nonportable else " without "
                                "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED"))
        for i, n in enumerate("xyz"):
            if g[i] % cluster[i]:
                _fail("CUDA_ERROR_INVALID_CLUSTER_SIZE", f"gridDim.{n} = {g[i]} is not a "
                      f"multiple of the cluster's {cluster[i]}")
    if cooperative:
        per_sm = _occupancy(f, threads, dyn)
        if g[0] * g[1] * g[2] > per_sm * s.sms:
            _fail("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", f"{g[0] * g[1] * g[2]} CTAs cannot "
                  f"all be resident ({per_sm} per SM x {s.sms} SMs)")
    image = kernel_params(f, params, extra)
    _run(f, g, b, cluster, dyn, image, nonportable)
    for ev in events:
        ev.time = DRIVER.clock_ns


def _ptx_location(e: BaseException) -> str:
    """' at PTX line N (instruction)' of the instruction that was executing when `e` was raised
    (the executor's step loop frame), or ''."""
    tb = e.__traceback__
    found = ""
    while tb is not None:
        fr = tb.tb_frame
        if fr.f_code.co_name == "run" and "p" in fr.f_locals and "self" in fr.f_locals:
            wave, p = fr.f_locals["self"], fr.f_locals["p"]
            prog = getattr(wave, "program", None)
            if prog is not None and isinstance(p, int) and 0 <= p < len(prog.instructions):
                inst = prog.instructions[p]
                found = f" at PTX line {inst.loc.line} ({str(inst).strip()[:120]})"
        tb = tb.tb_next
    return found


def _run(f: Function, g, b, cluster, dyn: int, image: bytes, nonportable: bool) -> None:
    from ptxsim.machine.executor import Launch
    mod = f.module
    const = bytes(mod.const_alloc.view) if mod.const_alloc is not None else None
    opts = {k: v for k, v in DRIVER.options.items()
            if k in ("step_limit", "progress", "max_resident_ctas", "sanitize", "schedule")}
    ctx = DRIVER.current()
    try:
        launch = Launch(mod.parsed, f.name, g, b, cluster, (), target=f.attrs["spec"].target,
                        dynamic_shared=dyn, gmem=DRIVER.gmem,
                        module_globals={n: a for n, (a, _) in mod.globals.items()},
                        const_image=const, param_image=image, nonportable_cluster=nonportable,
                        **opts)
        _run_launch(launch)
    except CudaError:
        raise
    except PtxsimError as e:
        result, sticky = _fault_result(e)
        where = _ptx_location(e)
        err = CudaError(result, enums.CURESULT[result], getattr(_call, "text", "launch"),
                        f"kernel '{f.name}' {'faulted' if sticky else 'stopped'}{where}: {e}", e)
        if sticky:
            ctx.sticky = err
        raise err from e
    DRIVER.launches += 1
    DRIVER.last_launch = launch
    if len(launch.findings):
        DRIVER.findings.append((f.name, launch.findings))
    DRIVER.clock_ns += int(launch.steps)


def _run_launch(launch) -> None:
    """Run a built launch: in this process, or split by waves over local worker processes
    when the driver is configured with workers=N (ptxsim.distributed; the device memory is
    shared with the workers copy-on-write and their changed bytes merged back)."""
    workers = DRIVER.options.get("workers")
    if workers is None or workers == 1:
        launch.run()
        return
    from ptxsim.distributed.launch import resolve_workers, run_launch
    from ptxsim.errors import UnsupportedFeature
    backend, n, _ = resolve_workers(workers)
    if backend == "ray":
        raise UnsupportedFeature("ptxsim.cuda splits launches over worker processes on this "
                                 "machine (workers=N); Ray would need the device memory on "
                                 "every node")
    run_launch(launch, backend, n,
               allow_order_dependent=DRIVER.options.get("allow_order_dependent", False))


@api
def cuLaunchKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes=0,
                   stream=0, kernel_params=None, extra=None) -> None:
    _launch(_func(f), (_int(grid_x, "gridDimX"), _int(grid_y, "gridDimY"),
                       _int(grid_z, "gridDimZ")),
            (_int(block_x, "blockDimX"), _int(block_y, "blockDimY"), _int(block_z, "blockDimZ")),
            shared_mem_bytes, stream, kernel_params, extra, [])


@api
def cuLaunchKernelEx(config, f, kernel_params=None, extra=None) -> None:
    if isinstance(config, LaunchConfig):
        grid, block, shared, stream = config.grid, config.block, config.shared, config.stream
    else:
        grid = (config.gridDimX, config.gridDimY, config.gridDimZ)
        block = (config.blockDimX, config.blockDimY, config.blockDimZ)
        shared, stream = config.sharedMemBytes, config.hStream
    _launch(_func(f), _dim(grid), _dim(block), shared, stream, kernel_params, extra,
            _config_attrs(config))


@api
def cuLaunchCooperativeKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                              shared_mem_bytes, stream, kernel_params) -> None:
    _launch(_func(f), (grid_x, grid_y, grid_z), (block_x, block_y, block_z), shared_mem_bytes,
            stream, kernel_params, None, [("COOPERATIVE", 1)])


# -------------------------------------------------------------------------------------------------
# occupancy
# -------------------------------------------------------------------------------------------------
def _occupancy(f: Function, block: int, dyn: int) -> int:
    s = f.attrs["spec"]
    warps = -(-block // 32)
    n = min(s.max_blocks_per_sm, s.max_threads_per_sm // (warps * 32))
    smem = f.static_shared + dyn
    if smem:
        n = min(n, s.smem_per_sm // (smem + 1024))
    regs = _num_regs(f) * warps * 32
    if regs:
        n = min(n, 65536 // regs)
    return max(n, 0)


@api
def cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block_size, dynamic_smem) -> int:
    return _occupancy(_func(func), _int(block_size, "blockSize"), _size(dynamic_smem))


@api
def cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(func, block_size, dynamic_smem,
                                                         flags=0) -> int:
    return _occupancy(_func(func), _int(block_size, "blockSize"), _size(dynamic_smem))


@api
def cuOccupancyAvailableDynamicSMemPerBlock(func, num_blocks, block_size) -> int:
    """Dynamic shared memory per block when `num_blocks` blocks share an SM (1 KiB of each
    block's shared memory is reserved by the system)."""
    f = _func(func)
    s = f.attrs["spec"]
    n = max(1, _int(num_blocks, "numBlocks"))
    return max(0, min(s.smem_per_sm // n - 1024, s.smem_per_block_optin) - f.static_shared)


@api
def cuOccupancyMaxPotentialClusterSize(func, config) -> int:
    f = _func(func)
    return (f.attrs["spec"].cluster_nonportable if f.attrs["NON_PORTABLE_CLUSTER_SIZE_ALLOWED"]
            else f.attrs["spec"].cluster_portable)


@api
def cuOccupancyMaxActiveClusters(func, config) -> int:
    f = _func(func)
    if isinstance(config, LaunchConfig):
        block, shared, attrs = _dim(config.block), config.shared, _config_attrs(config)
    else:
        block = (config.blockDimX, config.blockDimY, config.blockDimZ)
        shared, attrs = config.sharedMemBytes, _config_attrs(config)
    cl = next((_dim(_attr_value(n, v)) for n, v in attrs if n == "CLUSTER_DIMENSION"),
              f.attrs["REQUIRED_CLUSTER"] or (1, 1, 1))
    per_sm = _occupancy(f, int(np.prod(block)), _size(shared))
    return per_sm * f.attrs["spec"].sms // (cl[0] * cl[1] * cl[2])


# -------------------------------------------------------------------------------------------------
# tensor maps
# -------------------------------------------------------------------------------------------------
class CUtensorMap(bytearray):
    """The 128-byte CUtensorMap (the driver's byte format): bytes(m) is the map; `opaque` its 16
    64-bit words, as cuda-python shows them."""

    @property
    def opaque(self) -> list[int]:
        return list(struct.unpack("<16Q", bytes(self)))

    def getPtr(self) -> int:
        return ctypes.addressof(ctypes.c_char.from_buffer(self))


def _cc() -> tuple[int, int]:
    """The compute capability the encoder checks against: the current context's device (the
    driver refuses sm_100 features on an sm_90 device), else the first device."""
    ctx = DRIVER.current()
    dev = ctx.device if ctx is not None else (DRIVER.devices or [None])[0]
    return dev.spec.cc if dev is not None else (10, 0)


def _tm_call(fn, *args):
    from ptxsim.errors import TensorMapError, UnsupportedFeature
    try:
        return CUtensorMap(fn(*args))
    except TensorMapError as e:
        _fail("CUDA_ERROR_INVALID_VALUE", str(e))
    except UnsupportedFeature as e:            # a map ptxsim cannot write the driver's bytes of
        _fail("CUDA_ERROR_NOT_SUPPORTED", f"ptxsim cannot encode this map: {e}")


@api
def cuTensorMapEncodeTiled(data_type, rank, global_address, global_dim, global_strides, box_dim,
                           element_strides, interleave, swizzle, l2_promotion, oob_fill
                           ) -> CUtensorMap:
    from ptxsim.machine import tensormap as tm
    return _tm_call(tm.encode_tiled_bytes, data_type, _int(rank, "tensorRank"),
                    _int(global_address, "globalAddress"), global_dim, global_strides, box_dim,
                    element_strides, interleave, swizzle, l2_promotion, oob_fill, _cc())


@api
def cuTensorMapEncodeIm2col(data_type, rank, global_address, global_dim, global_strides,
                            lower_corner, upper_corner, channels_per_pixel, pixels_per_column,
                            element_strides, interleave, swizzle, l2_promotion, oob_fill
                            ) -> CUtensorMap:
    from ptxsim.machine import tensormap as tm
    return _tm_call(tm.encode_im2col_bytes, data_type, _int(rank, "tensorRank"),
                    _int(global_address, "globalAddress"), global_dim, global_strides,
                    lower_corner, upper_corner, _int(channels_per_pixel, "channelsPerPixel"),
                    _int(pixels_per_column, "pixelsPerColumn"), element_strides, interleave,
                    swizzle, l2_promotion, oob_fill, _cc())


@api
def cuTensorMapReplaceAddress(tensor_map, global_address) -> None:
    """Replace the address in a map (a CUtensorMap / bytearray, changed in place)."""
    from ptxsim.machine import tensormap as tm
    if not isinstance(tensor_map, bytearray) or len(tensor_map) != 128:
        _fail("CUDA_ERROR_INVALID_VALUE", "tensorMap must be a 128-byte CUtensorMap")
    try:
        tensor_map[:] = tm.replace_address_bytes(bytes(tensor_map),
                                                 _int(global_address, "globalAddress"))
    except PtxsimError as e:
        _fail("CUDA_ERROR_INVALID_VALUE", str(e))
