"""ptxsim.cuda shaped like cuda-python (`cuda.bindings.driver` / `cuda.bindings.runtime`):
every call returns `(CUresult, outputs...)` with cuda-python's own enum and handle types, so
code written against cuda-python runs on the emulated device.

`install()` puts these functions into the imported `cuda.bindings.driver` and
`cuda.bindings.runtime` modules (the types, enums and structs stay cuda-python's: they need no
GPU); `uninstall()` restores the originals. `ptxsim cute` and `ptxsim.cuda.dsl.install()` call it.
"""
from __future__ import annotations

import ctypes
import inspect
import types

import numpy as np

from ptxsim.cuda import driver as D
from ptxsim.errors import CudaError

_SAVED: dict = {}


def _drv():
    import cuda.bindings.driver as drv
    return drv


def _rt():
    import cuda.bindings.runtime as rt
    return rt


# our handle class -> the cuda-python type it becomes
_HANDLE_TYPES = {"Context": "CUcontext", "Module": "CUmodule", "Function": "CUfunction",
                 "Library": "CUlibrary", "Kernel": "CUkernel", "Stream": "CUstream",
                 "Event": "CUevent"}
_POINTER_RESULTS = {"cuMemAlloc", "cuMemAllocManaged", "cuMemAllocAsync",
                    "cuMemHostGetDevicePointer", "cuModuleGetGlobal", "cuLibraryGetGlobal",
                    "cuMemGetAddressRange", "cuMemAllocPitch"}


def _convert(name: str, value):
    drv = _drv()
    if isinstance(value, D.Handle):
        return getattr(drv, _HANDLE_TYPES[type(value).__name__])(int(value))
    if isinstance(value, D.CUtensorMap):
        m = drv.CUtensorMap()
        m.opaque = list(value.opaque)
        return m
    if isinstance(value, str) and name in ("cuDeviceGetName", "cuGetErrorName",
                                           "cuGetErrorString", "cuFuncGetName",
                                           "cuKernelGetName", "cuDeviceGetPCIBusId"):
        return value.encode()
    if isinstance(value, list):
        return [_convert(name, v) for v in value]
    return value


def _arity(fn) -> int:
    ret = inspect.signature(fn).return_annotation
    text = str(ret)
    if text in ("None", "<class 'NoneType'>"):
        return 0
    if text.startswith("tuple["):
        return text.count(",") + 1
    return 1


def _kernel_params_arg(value):
    """cuda-python's kernelParams forms: None / 0, an int address of void*[], a ctypes array,
    a numpy array of pointers, or ((values...), (ctypes types or None...))."""
    if value is None or isinstance(value, (int, np.integer)):
        return value
    if isinstance(value, np.ndarray):
        return int(value.ctypes.data)
    if isinstance(value, ctypes.Array):
        return ctypes.addressof(value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (tuple, list))
                                                            for v in value):
        vals, tys = value
        out = []
        for v, t in zip(vals, tys):
            if t is None:                            # a cuda-python object: its own storage
                if hasattr(v, "getPtr"):
                    out.append(_PtrRef(int(v.getPtr())))
                else:
                    out.append(v)
            else:
                out.append(bytes(t(v) if not isinstance(v, t) else v))
        return out
    return value


class _PtrRef:
    """A parameter given as the address of its bytes (cuda-python objects with getPtr())."""

    def __init__(self, address: int):
        self.address = address


def _params_to_bytes(fn_handle, params):
    """Resolve _PtrRef entries once the parameter sizes are known."""
    if not isinstance(params, list) or not any(isinstance(p, _PtrRef) for p in params):
        return params
    f = D._func(fn_handle)
    return [ctypes.string_at(p.address, size) if isinstance(p, _PtrRef) else p
            for p, (size, _) in zip(params, f.decls)]


def _wrap_driver(name: str, fn):
    n_out = _arity(fn)

    def call(*args, **kwargs):
        drv = _drv()
        try:
            args = list(args)
            if name in ("cuLaunchKernel", "cuLaunchCooperativeKernel") and len(args) >= 10:
                args[9] = _params_to_bytes(args[0], _kernel_params_arg(args[9]))
            elif name == "cuLaunchKernelEx" and len(args) >= 3:
                args[2] = _params_to_bytes(args[1], _kernel_params_arg(args[2]))
            out = fn(*args, **kwargs)
        except CudaError as e:
            return (drv.CUresult(e.code),) + (None,) * n_out
        ok = drv.CUresult.CUDA_SUCCESS
        if n_out == 0:
            return (ok,)
        if n_out == 1:
            out = _convert(name, out)
            if name in _POINTER_RESULTS:
                out = drv.CUdeviceptr(int(out))
            return ok, out
        out = tuple(_convert(name, v) for v in out)
        if name in _POINTER_RESULTS:
            out = (drv.CUdeviceptr(int(out[0])),) + out[1:]
        return (ok,) + out
    call.__name__ = name
    call.__doc__ = f"ptxsim.cuda.{name}, cuda-python calling convention."
    call.ptxsim = True
    return call


# --- cuda.bindings.runtime: the calls CuTe DSL and the examples make --------------------------
def _rt_call(fn, n_out: int = 0):
    def call(*args):
        rt = _rt()
        try:
            out = fn(*args)
        except CudaError as e:
            return (rt.cudaError_t(e.code),) + (None,) * n_out
        ok = rt.cudaError_t.cudaSuccess
        if n_out == 0:
            return (ok,)
        return (ok, out) if n_out == 1 else (ok,) + tuple(out)
    call.ptxsim = True
    return call


def _ensure_context():
    """The runtime API's implicit primary context on the current device."""
    if not D.DRIVER.initialized:
        D.cuInit(0)
    if D.DRIVER.current() is None:
        D.cuCtxSetCurrent(D.cuDevicePrimaryCtxRetain(0))


def _rt_functions() -> dict:
    def props(dev):
        _ensure_context()
        s = D.DRIVER.devices[D._int(dev, "device")].spec
        a = s.attributes
        return types.SimpleNamespace(
            name=s.name.encode(), major=s.cc[0], minor=s.cc[1], multiProcessorCount=s.sms,
            totalGlobalMem=s.total_mem, sharedMemPerBlock=49152,
            sharedMemPerBlockOptin=s.smem_per_block_optin,
            sharedMemPerMultiprocessor=s.smem_per_sm, regsPerBlock=65536, warpSize=32,
            maxThreadsPerBlock=1024, maxThreadsDim=[1024, 1024, 64],
            maxGridSize=[2**31 - 1, 65535, 65535], clockRate=s.clock_khz,
            l2CacheSize=s.l2_bytes, maxThreadsPerMultiProcessor=s.max_threads_per_sm,
            memoryBusWidth=s.bus_width, totalConstMem=65536,
            maxBlocksPerMultiProcessor=s.max_blocks_per_sm,
            clusterLaunch=a["CLUSTER_LAUNCH"], pciDeviceID=0, pciBusID=0x1B)

    def get_count():
        _ensure_context()
        return D.cuDeviceGetCount()

    def get_device():
        _ensure_context()
        return D.DRIVER.current().device.ordinal

    def set_device(dev):
        _ensure_context()
        D.cuCtxSetCurrent(D.cuDevicePrimaryCtxRetain(dev))

    def sync(*_):
        _ensure_context()
        D.cuCtxSynchronize()

    def malloc(n):
        _ensure_context()
        return D.cuMemAlloc(n)

    def memcpy(dst, src, n, kind=None):
        _ensure_context()
        D.cuMemcpy(dst, src, n)

    def memset(dst, value, n):
        _ensure_context()
        D.cuMemsetD8(dst, value, n)

    def library_unload(lib):
        D.cuLibraryUnload(lib)

    def attr(attr_, dev):
        _ensure_context()
        return D.cuDeviceGetAttribute(attr_, dev)

    def err_name(e):
        try:
            return _rt().cudaError_t(int(e)).name.encode()
        except ValueError:
            return D.cuGetErrorName(int(e)).encode()

    def err_string(e):
        return D.cuGetErrorString(int(e)).encode()

    def stream_create(*_):
        _ensure_context()
        return _drv().CUstream(int(D.cuStreamCreate(0)))

    def event_create(*_):
        _ensure_context()
        return _drv().CUevent(int(D.cuEventCreate(0)))

    return {
        "cudaGetDeviceCount": _rt_call(get_count, 1), "cudaGetDevice": _rt_call(get_device, 1),
        "cudaSetDevice": _rt_call(set_device), "cudaDeviceSynchronize": _rt_call(sync),
        "cudaStreamSynchronize": _rt_call(sync), "cudaGetDeviceProperties": _rt_call(props, 1),
        "cudaMalloc": _rt_call(malloc, 1), "cudaFree": _rt_call(lambda p: D.cuMemFree(p)),
        "cudaMemcpy": _rt_call(memcpy), "cudaMemset": _rt_call(memset),
        "cudaLibraryUnload": _rt_call(library_unload),
        "cudaDeviceGetAttribute": _rt_call(attr, 1),
        "cudaDriverGetVersion": _rt_call(lambda: D.DRIVER_VERSION, 1),
        "cudaRuntimeGetVersion": _rt_call(lambda: D.DRIVER_VERSION, 1),
        "cudaGetErrorName": _rt_call(err_name, 1), "cudaGetErrorString": _rt_call(err_string, 1),
        "cudaStreamCreate": _rt_call(stream_create, 1),
        "cudaStreamDestroy": _rt_call(lambda s: D.cuStreamDestroy(s)),
        "cudaEventCreate": _rt_call(event_create, 1),
        "cudaEventRecord": _rt_call(lambda e, s=0: D.cuEventRecord(e, s)),
        "cudaEventSynchronize": _rt_call(lambda e: D.cuEventSynchronize(e)),
        "cudaEventElapsedTime": _rt_call(lambda a, b: D.cuEventElapsedTime(a, b), 1),
        "cudaEventDestroy": _rt_call(lambda e: D.cuEventDestroy(e)),
    }


def _unsupported(name: str, err):
    def call(*args, **kwargs):
        import warnings
        warnings.warn(f"ptxsim.cuda does not model {name}: it returns NOT_SUPPORTED",
                      stacklevel=2)
        return (err(), None)
    call.__name__ = name
    call.ptxsim = True
    return call


def install() -> None:
    """Route cuda-python's driver and runtime calls to ptxsim.cuda (idempotent)."""
    if _SAVED:
        return
    drv, rt = _drv(), _rt()
    for name in D.__dict__:
        fn = getattr(D, name)
        if getattr(fn, "cuda_api", False) and hasattr(drv, name):
            _SAVED[(drv, name)] = getattr(drv, name)
            setattr(drv, name, _wrap_driver(name, fn))
    for name, fn in _rt_functions().items():
        if hasattr(rt, name):
            _SAVED[(rt, name)] = getattr(rt, name)
            setattr(rt, name, fn)
    # every other call answers "not supported" by name instead of looking for a real driver
    for mod, prefix, err in ((drv, "cu", lambda: drv.CUresult.CUDA_ERROR_NOT_SUPPORTED),
                             (rt, "cuda", lambda: rt.cudaError_t.cudaErrorNotSupported)):
        for name in dir(mod):
            fn = getattr(mod, name)
            if (name.startswith(prefix) and name[len(prefix):len(prefix) + 1].isupper()
                    and callable(fn) and (mod, name) not in _SAVED
                    and not isinstance(fn, type)):
                _SAVED[(mod, name)] = fn
                setattr(mod, name, _unsupported(name, err))


def uninstall() -> None:
    for (mod, name), fn in _SAVED.items():
        setattr(mod, name, fn)
    _SAVED.clear()


def installed() -> bool:
    return bool(_SAVED)
