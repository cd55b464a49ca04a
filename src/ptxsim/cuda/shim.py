"""The C side of ptxsim.cuda: what the native stand-ins for libcuda.so.1 and libcudart.so.13
(src/ptxsim/cuda/native/shim.c) call. Each C entry point passes its name and its argument
slots here; `dispatch` decodes them by the function's C signature (the table below), calls the
driver model (`ptxsim.cuda.driver`) or the runtime model over it (`ptxsim.cuda.runtime`),
writes the output parameters and returns the C result (CUresult / cudaError_t, or a pointer).

- An entry point with no row here is not modelled: it returns 801 (CUDA_ERROR_NOT_SUPPORTED /
  cudaErrorNotSupported) and says so on stderr, once per name, naming the API.
- The runtime keeps each thread's last error (cudaGetLastError / cudaPeekAtLastError); a kernel
  fault is sticky, as on a GPU: the launch returns cudaSuccess and the next call returns the
  fault.
- A kernel that faults prints a memcheck-style report on stderr (the access, the PTX line, the
  thread and block) and every launch goes to the `ptxsim exec` report (PTXSIM_EXEC_REPORT).

Argument slots (shim.c): 16 64-bit integers, argument k in slot k; a dim3 by value takes two
(x | y << 32, then z). Signature letters: p pointer, z size_t, q int64 / unsigned long long,
i int, u unsigned int, d dim3.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings

from ptxsim.cuda import driver as drv
from ptxsim.cuda import enums, runtime
from ptxsim.cuda.runtime_enums import CUDA_ERRORS, RUNTIME_VERSION
from ptxsim.errors import CudaError

NOT_SUPPORTED = 801

TABLE: dict[str, tuple] = {}          # C name -> (library, [letters], function, raw result)
_state = threading.local()
_unmodelled_seen: set[str] = set()
_strings: dict[str, ctypes.Array] = {}  # C strings handed out (kept alive)
_LIBC = ctypes.CDLL(None)
STARTED: set[str] = set()


def c(lib: str, name: str, sig: str = "", raw: bool = False):
    """Register the handler of C entry point `name` of library `lib` ("cuda" / "cudart")."""
    def deco(fn):
        for n in name.split():
            TABLE[n] = (lib, sig.split(), fn, raw)
        return fn
    return deco


# ------------------------------------------------------------------------------ start, output
class _CFile:
    """sys.stdout / sys.stderr of an embedded interpreter: writes through the C library's FILE
    (the host program's own stdout / stderr), so device printf output and the program's output
    share one buffer and keep their order, as on a GPU."""

    def __init__(self, name: str):
        self.fp = ctypes.c_void_p.in_dll(_LIBC, name).value
        self.name = name

    def write(self, text: str) -> int:
        _LIBC.fputs(ctypes.c_char_p(text.encode("utf-8", "replace")), ctypes.c_void_p(self.fp))
        return len(text)

    def flush(self) -> None:
        _LIBC.fflush(ctypes.c_void_p(self.fp))

    def isatty(self) -> bool:
        return False


def start(lib: str, embedded: int = 0) -> int:
    """Called once per native library when its first entry point runs."""
    if embedded and not STARTED:
        _LIBC.fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        _LIBC.fflush.argtypes = [ctypes.c_void_p]
        sys.stdout, sys.stderr = _CFile("stdout"), _CFile("stderr")
        opts = {}
        if os.environ.get("PTXSIM_STEP_LIMIT"):
            opts["step_limit"] = int(os.environ["PTXSIM_STEP_LIMIT"])
        if os.environ.get("PTXSIM_SANITIZE"):            # ptxsim exec --sanitize
            opts["sanitize"] = os.environ["PTXSIM_SANITIZE"]
        if opts:
            drv.DRIVER.options.update(opts)
    STARTED.add(lib)
    return 0


def _report(event: dict) -> None:
    path = os.environ.get("PTXSIM_EXEC_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(event) + "\n")


def _cstr(text: str) -> int:
    """The address of a NUL-terminated copy of text that stays valid."""
    buf = _strings.get(text)
    if buf is None:
        buf = _strings[text] = ctypes.create_string_buffer(text.encode())
    return ctypes.addressof(buf)


def _read_str(p: int) -> str:
    return ctypes.string_at(p).decode("utf-8", "replace") if p else ""


# ------------------------------------------------------------------------------- dispatching
def _decode(sig: list[str], slots) -> list:
    out, k = [], 0
    for t in sig:
        v = slots[k]
        k += 1
        if t in ("p", "z", "q"):
            out.append(v)
        elif t == "i":
            v &= 0xFFFFFFFF
            out.append(v - (1 << 32) if v >> 31 else v)
        elif t == "u":
            out.append(v & 0xFFFFFFFF)
        elif t == "d":
            z = slots[k] & 0xFFFFFFFF
            k += 1
            out.append((v & 0xFFFFFFFF, v >> 32 & 0xFFFFFFFF, z))
        else:
            raise ValueError(f"signature letter {t}")
    return out


def dispatch(name: str, *slots) -> int:
    entry = TABLE.get(name)
    if entry is None:
        return _unmodelled(name)
    lib, sig, fn, raw = entry
    args = _decode(sig, slots)
    if raw:
        return fn(*args) or 0
    if lib == "cuda":
        try:
            r = fn(*args)
        except CudaError as e:
            _error(name, e)
            return e.code
        return r or 0
    try:
        r = fn(*args)
    except CudaError as e:
        code = rt_code(e)
        if not _is_fault(e):
            _error(name, e)
        set_last_error(code)
        return code
    return r or 0


def _unmodelled(name: str) -> int:
    if name not in _unmodelled_seen:
        _unmodelled_seen.add(name)
        sys.stderr.write(f"ptxsim: {name} is not modelled by ptxsim (docs/cudacpp.md lists the "
                         f"CUDA calls it models); it returns error 801 "
                         f"({'CUDA_ERROR_NOT_SUPPORTED' if name.startswith('cu') and not name.startswith('cuda') else 'cudaErrorNotSupported'})\n")
        _report({"event": "unmodelled", "api": name})
    set_last_error(NOT_SUPPORTED)
    return NOT_SUPPORTED


def _is_fault(e: CudaError) -> bool:
    return e.finding is not None and getattr(e.finding, "ptx_line", None) is not None


def _error(name: str, e: CudaError) -> None:
    _report({"event": "error", "api": name, "result": e.result, "why": e.why})
    if os.environ.get("PTXSIM_EXEC_VERBOSE"):
        sys.stderr.write(f"ptxsim: {e}\n")


# ---------------------------------------------------------------------- runtime error codes
_CU_TO_RT = {
    "CUDA_ERROR_OUT_OF_MEMORY": "cudaErrorMemoryAllocation",
    "CUDA_ERROR_NOT_INITIALIZED": "cudaErrorInitializationError",
    "CUDA_ERROR_DEINITIALIZED": "cudaErrorCudartUnloading",
    "CUDA_ERROR_INVALID_CONTEXT": "cudaErrorDeviceUninitialized",
    "CUDA_ERROR_INVALID_HANDLE": "cudaErrorInvalidResourceHandle",
    "CUDA_ERROR_NOT_FOUND": "cudaErrorSymbolNotFound",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "cudaErrorNoKernelImageForDevice",
    "CUDA_ERROR_INVALID_IMAGE": "cudaErrorInvalidKernelImage",
    "CUDA_ERROR_LAUNCH_FAILED": "cudaErrorLaunchFailure",
    "CUDA_ERROR_NO_DEVICE": "cudaErrorNoDevice",
    "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND": "cudaErrorSharedObjectSymbolNotFound",
    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED": "cudaErrorSharedObjectInitFailed",
    "CUDA_ERROR_INVALID_SOURCE": "cudaErrorInvalidSource",
    "CUDA_ERROR_FILE_NOT_FOUND": "cudaErrorFileNotFound",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "cudaErrorECCUncorrectable",
    "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED": "cudaErrorPeerAccessUnsupported",
}


def rt_name(result: str) -> str:
    """The cudaError_t name of a CUresult name (the runtime's own names pass through)."""
    if result in CUDA_ERRORS:
        return result
    if result in _CU_TO_RT:
        return _CU_TO_RT[result]
    words = result.removeprefix("CUDA_ERROR_").split("_")
    camel = "cudaError" + "".join(w.capitalize() for w in words)
    return camel if camel in CUDA_ERRORS else "cudaErrorUnknown"


def rt_code(e: CudaError) -> int:
    return CUDA_ERRORS[rt_name(e.result)][0]


def _sticky() -> int:
    ctx = drv.DRIVER.current() if drv.DRIVER.initialized else None
    s = getattr(ctx, "sticky", None)
    return CUDA_ERRORS[rt_name(s.result)][0] if s is not None else 0


def set_last_error(code: int) -> None:
    if code:
        _state.last = code


def _last(reset: bool) -> int:
    code = getattr(_state, "last", 0)
    if reset:
        _state.last = 0
    return _sticky() or code


# ---------------------------------------------------------------------------- small helpers
def _put(ptr: int, ctype, value) -> None:
    if not ptr:
        raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "output", "an output pointer is NULL")
    ctype.from_address(ptr).value = value


def _u64(ptr, v):
    _put(ptr, ctypes.c_uint64, int(v))


def _i32(ptr, v):
    _put(ptr, ctypes.c_int32, int(v))


def _u32(ptr, v):
    _put(ptr, ctypes.c_uint32, int(v))


def _stream(s: int) -> int:
    """cudaStreamLegacy (1) and cudaStreamPerThread (2) are the default stream here."""
    return 0 if s in (1, 2) else s


def _launch_report(kernel: str, grid, block, cluster, shared: int, e: CudaError | None,
                   warned=()):
    ctx = drv.DRIVER.current()
    spec = ctx.device.spec if ctx is not None else None
    last = drv.DRIVER.last_launch
    ev = {"event": "launch", "kernel": kernel, "grid": list(grid), "block": list(block),
          "cluster": list(cluster) if cluster else None, "shared": shared,
          "device": spec.name if spec else None, "target": spec.target if spec else None,
          "steps": int(last.steps) if last is not None and e is None else None,
          "result": e.result if e is not None else "CUDA_SUCCESS", "warnings": list(warned)}
    # the sanitizer's findings (docs/sanitizer.md): of this launch, or those made before its
    # error stopped it
    found = getattr(e.finding, "findings", None) if e is not None else \
        (last.findings if last is not None else None)
    ev["sanitizer"] = [f.as_dict() for f in found] if found is not None else []
    if e is not None:
        f = e.finding
        ev["why"] = e.why
        if f is not None:
            ev["finding"] = {k: getattr(f, k, None) for k in (
                "ptx_line", "instruction", "ctaid", "tid", "access", "size", "address", "space")}
            ev["finding"]["error"] = type(f).__name__
            ev["finding"]["message"] = str(f)
        if _is_fault(e):
            sys.stderr.write(memcheck_text(kernel, e))
    _report(ev)


def demangle(name: str) -> str:
    tool = shutil.which("c++filt")
    if not tool or not name.startswith("_Z"):
        return name
    try:
        return subprocess.run([tool, name], capture_output=True, text=True,
                              timeout=5).stdout.strip() or name
    except (OSError, subprocess.SubprocessError):
        return name


def memcheck_text(kernel: str, e: CudaError) -> str:
    """A kernel fault in compute-sanitizer's memcheck layout, with the PTX line."""
    f = e.finding
    ctaid = ",".join(str(x) for x in (getattr(f, "ctaid", None) or ()))
    tid = ",".join(str(x) for x in (getattr(f, "tid", None) or ()))
    lines = ["========= ptxsim (memcheck-style report)"]
    access, addr = getattr(f, "access", None), getattr(f, "address", None)
    if access and addr is not None:
        space = getattr(f, "space", None) or "global"
        label = {"global": "__global__", "shared::cta": "__shared__",
                 "shared::cluster": "__shared__ (cluster)", "local": "__local__"}.get(space,
                                                                                     space)
        lines.append(f"========= Invalid {label} {access} of size {f.size} bytes")
    else:
        lines.append(f"========= {type(f).__name__}: {e.result}")
    # every finding the executor raises carries its line; the instruction text only some kinds
    lines.append(f"=========     at {demangle(kernel)} PTX line {getattr(f, 'ptx_line', '?')}: "
                 f"{getattr(f, 'instruction', None) or ''}".rstrip(": "))
    lines.append(f"=========     by thread ({tid}) in block ({ctaid})")
    why = getattr(f, "why", None) or str(f)
    if access and addr is not None:
        lines.append(f"=========     Address {addr:#x}: {why}")
    else:
        lines += [f"=========     {ln}" for ln in why.splitlines()]
    lines.append("=========")
    return "\n".join(lines) + "\n"


# =============================================================================== driver API
def _drv(name):
    return getattr(drv, name)


def _simple(cname: str, pyname: str, sig: str, outs: str = ""):
    """A driver call whose C form is (outputs..., inputs...) and whose Python form returns the
    outputs: `outs` letters say how to store each (q 64-bit, i 32-bit, u unsigned 32-bit)."""
    fn = _drv(pyname)
    n_out = len(outs)

    def handler(*a):
        r = fn(*a[n_out:])
        if n_out == 1:
            r = (r,)
        for ptr, kind, v in zip(a[:n_out], outs, r or ()):
            {"q": _u64, "i": _i32, "u": _u32}[kind](ptr, int(v))
    c("cuda", cname, sig)(handler)


for _cn, _pn, _sig, _outs in [
    ("cuInit", "cuInit", "u", ""),
    ("cuDriverGetVersion", "cuDriverGetVersion", "p", "i"),
    ("cuDeviceGet", "cuDeviceGet", "p i", "i"),
    ("cuDeviceGetCount", "cuDeviceGetCount", "p", "i"),
    ("cuDeviceTotalMem_v2 cuDeviceTotalMem", "cuDeviceTotalMem", "p i", "q"),
    ("cuDeviceGetAttribute", "cuDeviceGetAttribute", "p i i", "i"),
    ("cuCtxGetCurrent", "cuCtxGetCurrent", "p", "q"),
    ("cuCtxSetCurrent", "cuCtxSetCurrent", "p", ""),
    ("cuCtxPushCurrent_v2 cuCtxPushCurrent", "cuCtxPushCurrent", "p", ""),
    ("cuCtxPopCurrent_v2 cuCtxPopCurrent", "cuCtxPopCurrent", "p", "q"),
    ("cuCtxGetDevice", "cuCtxGetDevice", "p", "i"),
    ("cuCtxSynchronize", "cuCtxSynchronize", "", ""),
    ("cuCtxDestroy_v2 cuCtxDestroy", "cuCtxDestroy", "p", ""),
    ("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", "p i", "q"),
    ("cuDevicePrimaryCtxRelease_v2 cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", "i",
     ""),
    ("cuDevicePrimaryCtxReset_v2 cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset", "i", ""),
    ("cuMemAlloc_v2", "cuMemAlloc", "p z", "q"),
    ("cuMemAllocManaged", "cuMemAllocManaged", "p z u", "q"),
    ("cuMemAllocHost_v2", "cuMemAllocHost", "p z", "q"),
    ("cuMemHostAlloc", "cuMemHostAlloc", "p z u", "q"),
    ("cuMemFree_v2", "cuMemFree", "p", ""),
    ("cuMemFreeHost", "cuMemFreeHost", "p", ""),
    ("cuMemAllocAsync", "cuMemAllocAsync", "p z p", "q"),
    ("cuMemFreeAsync", "cuMemFreeAsync", "p p", ""),
    ("cuMemcpyHtoD_v2", "cuMemcpyHtoD", "p p z", ""),
    ("cuMemcpyDtoH_v2", "cuMemcpyDtoH", "p p z", ""),
    ("cuMemcpyDtoD_v2", "cuMemcpyDtoD", "p p z", ""),
    ("cuMemcpy", "cuMemcpy", "p p z", ""),
    ("cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", "p p z p", ""),
    ("cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", "p p z p", ""),
    ("cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", "p p z p", ""),
    ("cuMemcpyAsync", "cuMemcpyAsync", "p p z p", ""),
    ("cuMemsetD8_v2", "cuMemsetD8", "p u z", ""),
    ("cuMemsetD16_v2", "cuMemsetD16", "p u z", ""),
    ("cuMemsetD32_v2", "cuMemsetD32", "p u z", ""),
    ("cuMemsetD8Async", "cuMemsetD8Async", "p u z p", ""),
    ("cuMemsetD16Async", "cuMemsetD16Async", "p u z p", ""),
    ("cuMemsetD32Async", "cuMemsetD32Async", "p u z p", ""),
    ("cuMemGetInfo_v2", "cuMemGetInfo", "p p", "qq"),
    ("cuModuleLoadData", "cuModuleLoadData", "p p", "q"),
    ("cuModuleLoadFatBinary", "cuModuleLoadFatBinary", "p p", "q"),
    ("cuModuleUnload", "cuModuleUnload", "p", ""),
    ("cuModuleGetFunction", "cuModuleGetFunction", "p p p", "q"),
    ("cuModuleGetGlobal_v2", "cuModuleGetGlobal", "p p p p", "qq"),
    ("cuLibraryGetKernel", "cuLibraryGetKernel", "p p p", "q"),
    ("cuLibraryUnload", "cuLibraryUnload", "p", ""),
    ("cuKernelGetFunction", "cuKernelGetFunction", "p p", "q"),
    ("cuFuncGetAttribute", "cuFuncGetAttribute", "p i p", "i"),
    ("cuFuncSetAttribute", "cuFuncSetAttribute", "p i i", ""),
    ("cuFuncSetCacheConfig", "cuFuncSetCacheConfig", "p i", ""),
    ("cuStreamCreate", "cuStreamCreate", "p u", "q"),
    ("cuStreamCreateWithPriority", "cuStreamCreateWithPriority", "p u i", "q"),
    ("cuStreamDestroy_v2", "cuStreamDestroy", "p", ""),
    ("cuStreamSynchronize", "cuStreamSynchronize", "p", ""),
    ("cuStreamQuery", "cuStreamQuery", "p", ""),
    ("cuStreamWaitEvent", "cuStreamWaitEvent", "p p u", ""),
    ("cuEventCreate", "cuEventCreate", "p u", "q"),
    ("cuEventDestroy_v2", "cuEventDestroy", "p", ""),
    ("cuEventRecord", "cuEventRecord", "p p", ""),
    ("cuEventSynchronize", "cuEventSynchronize", "p", ""),
    ("cuEventQuery", "cuEventQuery", "p", ""),
    ("cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
     "p p i z", "i"),
    ("cuPointerGetAttribute", "cuPointerGetAttribute", "p i p", "q"),
]:
    _simple(_cn, _pn, _sig, _outs)


@c("cuda", "cuDeviceGetName", "p i i")
def _cu_device_name(buf, length, dev):
    name = drv.cuDeviceGetName(length, dev).encode()[:max(length - 1, 0)]
    ctypes.memmove(buf, name + b"\0", len(name) + 1)


@c("cuda", "cuDeviceComputeCapability", "p p i")
def _cu_cc(major, minor, dev):
    mj, mn = drv.cuDeviceComputeCapability(dev)
    _i32(major, mj)
    _i32(minor, mn)


@c("cuda", "cuCtxCreate_v2 cuCtxCreate", "p u i")
def _cu_ctx_create(out, flags, dev):
    _u64(out, int(drv.cuCtxCreate(flags, dev)))


@c("cuda", "cuCtxCreate_v4", "p p u i")
def _cu_ctx_create4(out, params, flags, dev):
    _u64(out, int(drv.cuCtxCreate(flags, dev)))


@c("cuda", "cuModuleLoadDataEx", "p p u p p")
def _cu_load_ex(out, image, n, opts, vals):
    _u64(out, int(drv.cuModuleLoadData(image)))


@c("cuda", "cuModuleLoad", "p p")
def _cu_load(out, fname):
    _u64(out, int(drv.cuModuleLoad(_read_str(fname))))


@c("cuda", "cuLibraryLoadData", "p p p p u p p u")
def _cu_lib_load(out, code, *rest):
    _u64(out, int(drv.cuLibraryLoadData(code)))


@c("cuda", "cuEventElapsedTime cuEventElapsedTime_v2", "p p p")
def _cu_elapsed(ms, start, end):
    _put(ms, ctypes.c_float, drv.cuEventElapsedTime(start, end))


@c("cuda", "cuGetErrorName", "i p")
def _cu_err_name(err, out):
    name = enums.CURESULT_NAME.get(err)
    if name is None:
        _u64(out, 0)
        raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "cuGetErrorName", f"{err} is no CUresult")
    _u64(out, _cstr(name))


@c("cuda", "cuGetErrorString", "i p")
def _cu_err_string(err, out):
    name = enums.CURESULT_NAME.get(err)
    if name is None:
        _u64(out, 0)
        raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "cuGetErrorString", f"{err} is no "
                        "CUresult")
    _u64(out, _cstr(enums.ERROR_STRING.get(name, name)))


def _kernel_name(f) -> str:
    try:
        return drv.cuFuncGetName(f)
    except CudaError:
        return hex(int(f))


@c("cuda", "cuLaunchKernel", "p u u u u u u u p p p")
def _cu_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
    _launch_call(lambda: drv.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream,
                                            params or None, extra or None),
                 _kernel_name(f), (gx, gy, gz), (bx, by, bz), None, shared, driver=True)


def _launch_attrs(ptr: int, n: int) -> list:
    """CUlaunchAttribute / cudaLaunchAttribute array (72 bytes each: id, pad, 64-byte value)."""
    out = []
    for k in range(n):
        base = ptr + 72 * k
        aid = ctypes.c_uint32.from_address(base).value
        val = base + 8
        name = next((nm for nm, v in enums.LAUNCH_ATTRIBUTE.items() if v == aid), None)
        if name is None:
            raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "launch", f"launch attribute id "
                            f"{aid} is not a CUlaunchAttributeID")
        u32 = (ctypes.c_uint32 * 3).from_address(val)
        if name in ("CLUSTER_DIMENSION", "PREFERRED_CLUSTER_DIMENSION"):
            v = (u32[0], u32[1], u32[2])
        elif name in ("PROGRAMMATIC_EVENT", "LAUNCH_COMPLETION_EVENT"):
            v = ctypes.c_uint64.from_address(val).value
        else:
            v = ctypes.c_int32.from_address(val).value
        out.append((name, v))
    return out


@c("cuda", "cuLaunchKernelEx", "p p p p")
def _cu_launch_ex(config, f, params, extra):
    u = (ctypes.c_uint32 * 7).from_address(config)
    grid, block, shared = (u[0], u[1], u[2]), (u[3], u[4], u[5]), u[6]
    stream = ctypes.c_uint64.from_address(config + 32).value
    attrs_p = ctypes.c_uint64.from_address(config + 40).value
    n = ctypes.c_uint32.from_address(config + 48).value
    attrs = _launch_attrs(attrs_p, n) if n else []
    cfg = drv.LaunchConfig(grid=grid, block=block, shared=shared, stream=stream,
                           attrs=dict(attrs))
    cl = dict(attrs).get("CLUSTER_DIMENSION")
    _launch_call(lambda: drv.cuLaunchKernelEx(cfg, f, params or None, extra or None),
                 _kernel_name(f), grid, block, cl, shared, driver=True)


@c("cuda", "cuTensorMapEncodeTiled", "p i u q p p p p i i i i")
def _cu_tm_tiled(out, dtype, rank, gaddr, gdim, gstrides, box, estrides, interleave, swizzle,
                 l2, oob):
    dims = list((ctypes.c_uint64 * rank).from_address(gdim))
    strides = list((ctypes.c_uint64 * max(rank - 1, 1)).from_address(gstrides))[:rank - 1] \
        if rank > 1 else []
    boxd = list((ctypes.c_uint32 * rank).from_address(box))
    es = list((ctypes.c_uint32 * rank).from_address(estrides))
    m = drv.cuTensorMapEncodeTiled(dtype, rank, gaddr, dims, strides, boxd, es, interleave,
                                   swizzle, l2, oob)
    if not out:
        raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "cuTensorMapEncodeTiled",
                        "tensorMap is NULL")
    ctypes.memmove(out, bytes(m), 128)


@c("cuda", "cuTensorMapEncodeIm2col", "p i u q p p p p u u p i i i i")
def _cu_tm_im2col(out, dtype, rank, gaddr, gdim, gstrides, lower, upper, cpp, ppc, estrides,
                  interleave, swizzle, l2, oob):
    dims = list((ctypes.c_uint64 * rank).from_address(gdim))
    strides = list((ctypes.c_uint64 * max(rank - 1, 1)).from_address(gstrides))[:rank - 1]
    lo = list((ctypes.c_int32 * (rank - 2)).from_address(lower))
    hi = list((ctypes.c_int32 * (rank - 2)).from_address(upper))
    es = list((ctypes.c_uint32 * rank).from_address(estrides))
    m = drv.cuTensorMapEncodeIm2col(dtype, rank, gaddr, dims, strides, lo, hi, cpp, ppc, es,
                                    interleave, swizzle, l2, oob)
    ctypes.memmove(out, bytes(m), 128)


@c("cuda", "cuTensorMapReplaceAddress", "p q")
def _cu_tm_replace(tmap, gaddr):
    m = drv.CUtensorMap(ctypes.string_at(tmap, 128))
    drv.cuTensorMapReplaceAddress(m, gaddr)
    ctypes.memmove(tmap, bytes(m), 128)


def driver_symbol(name: str) -> int:
    """The address of the driver shim's entry point for `name` (cuGetProcAddress /
    cudaGetDriverEntryPoint): the newest _vN form the driver exports, as those calls give."""
    lib = _driver_lib()
    for cand in (name + "_v3", name + "_v2", name):
        if cand in TABLE or _exported(lib, cand):
            try:
                return ctypes.cast(getattr(lib, cand), ctypes.c_void_p).value
            except AttributeError:
                continue
    return 0


def _exported(lib, name: str) -> bool:
    try:
        getattr(lib, name)
        return True
    except AttributeError:
        return False


_DRIVER_LIB = []


def _driver_lib():
    if not _DRIVER_LIB:
        from ptxsim.cuda import native_path
        _DRIVER_LIB.append(ctypes.CDLL(native_path("cuda")))
    return _DRIVER_LIB[0]


@c("cuda", "cuGetProcAddress_v2 cuGetProcAddress", "p p i q p")
def _cu_get_proc(symbol, pfn, version, flags, status):
    addr = driver_symbol(_read_str(symbol))
    _u64(pfn, addr)
    if status:
        _i32(status, 0 if addr else 1)           # CU_GET_PROC_ADDRESS_SUCCESS / SYMBOL_NOT_FOUND
    if not addr:
        raise CudaError("CUDA_ERROR_NOT_FOUND", 500, "cuGetProcAddress",
                        f"{_read_str(symbol)} is not a driver entry point")


# ============================================================================== runtime API
R = "cudart"
RT = runtime


def _rt():
    return runtime.RUNTIME


def _ctx():
    return _rt().context()


@c(R, "__cudaRegisterFatBinary", "p", raw=True)
def _register_fatbin(wrapper):
    try:
        return _rt().register_fatbinary(wrapper)
    except CudaError as e:
        sys.stderr.write(f"ptxsim: {e}\n")
        return 0


@c(R, "__cudaRegisterFatBinaryEnd", "p", raw=True)
def _register_end(handle):
    try:
        _rt().end_registration(handle)
    except CudaError as e:
        sys.stderr.write(f"ptxsim: {e}\n")
    return 0


@c(R, "__cudaRegisterManagedVar", "p p p p i z i i", raw=True)
def _register_managed_var(handle, slot, device_addr, device_name, ext, size, constant, glob):
    try:
        _rt().register_managed_var(handle, slot, _read_str(device_name), size)
    except CudaError as e:
        sys.stderr.write(f"ptxsim: {e}\n")
    return 0


@c(R, "__cudaUnregisterFatBinary", "p", raw=True)
def _unregister(handle):
    _rt().unregister(handle)
    return 0


@c(R, "__cudaInitModule", "p", raw=True)
def _init_module(handle):
    return 1


@c(R, "__cudaRegisterFunction", "p p p p i p p p p p", raw=True)
def _register_function(handle, host_fun, device_fun, device_name, limit, *rest):
    try:
        _rt().register_function(handle, host_fun, _read_str(device_name))
    except CudaError as e:
        sys.stderr.write(f"ptxsim: {e}\n")
    return 0


@c(R, "__cudaRegisterVar", "p p p p i z i i", raw=True)
def _register_var(handle, host_var, device_addr, device_name, ext, size, constant, glob):
    try:
        _rt().register_var(handle, host_var, _read_str(device_name), size)
    except CudaError as e:
        sys.stderr.write(f"ptxsim: {e}\n")
    return 0


@c(R, "__cudaPushCallConfiguration", "d d z p", raw=True)
def _push(grid, block, shared, stream):
    _rt().push_config(grid, block, shared, _stream(stream))
    return 0


@c(R, "__cudaPopCallConfiguration", "p p p p")
def _pop(grid, block, shared, stream):
    cfg = _rt().pop_config()
    (ctypes.c_uint32 * 3).from_address(grid)[:] = cfg.grid
    (ctypes.c_uint32 * 3).from_address(block)[:] = cfg.block
    _u64(shared, cfg.shared)
    _u64(stream, cfg.stream)


@c(R, "__cudaGetKernel", "p p")
def _get_kernel(out, host_fun):
    if host_fun not in _rt().kernels:
        runtime.fail("cudaErrorInvalidDeviceFunction", f"{host_fun:#x} is not the host stub of "
                     "a registered kernel")
    _u64(out, host_fun)


def _launch_call(run, name, grid, block, cluster, shared, driver=False):
    """Run a launch; report it (with the warnings the kernel raised: spec deviations, ...); a
    kernel fault leaves the context's sticky error for the next call (the launch itself returns
    success, as a GPU's asynchronous launch does)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run()
        except CudaError as e:
            _launch_report(name, grid, block, cluster, shared, e, _warned(caught))
            if _is_fault(e):
                if driver:
                    raise
                return
            raise
    _launch_report(name, grid, block, cluster, shared, None, _warned(caught))


def _warned(caught) -> list[str]:
    """The distinct warnings of a launch, each also written to stderr once."""
    out = []
    for w in caught:
        text = f"{w.category.__name__}: {w.message}"
        if text not in out:
            out.append(text)
            sys.stderr.write(f"ptxsim: {text}\n")
    return out


def _rt_launch(host_fun, grid, block, args, shared, stream, attrs=()):
    rt_ = _rt()
    _ctx()
    fb = rt_.kernels.get(host_fun)
    name = fb.kernels[host_fun] if fb else hex(host_fun)
    cl = dict(attrs).get("CLUSTER_DIMENSION")
    _launch_call(lambda: rt_.launch(host_fun, grid, block, args, shared, _stream(stream), attrs),
                 name, grid, block, cl, shared)


@c(R, "__cudaLaunchKernel __cudaLaunchKernel_ptsz cudaLaunchKernel cudaLaunchKernel_ptsz",
   "p d d p z p")
def _launch(fun, grid, block, args, shared, stream):
    _rt_launch(fun, grid, block, args, shared, stream)


@c(R, "cudaLaunchCooperativeKernel cudaLaunchCooperativeKernel_ptsz", "p d d p z p")
def _launch_coop(fun, grid, block, args, shared, stream):
    _rt_launch(fun, grid, block, args, shared, stream, [("COOPERATIVE", 1)])


@c(R, "cudaLaunchKernelExC cudaLaunchKernelExC_ptsz", "p p p")
def _launch_ex(config, fun, args):
    u = (ctypes.c_uint32 * 6).from_address(config)
    grid, block = (u[0], u[1], u[2]), (u[3], u[4], u[5])
    shared = ctypes.c_uint64.from_address(config + 24).value
    stream = ctypes.c_uint64.from_address(config + 32).value
    attrs_p = ctypes.c_uint64.from_address(config + 40).value
    n = ctypes.c_uint32.from_address(config + 48).value
    _rt_launch(fun, grid, block, args, shared, stream, _launch_attrs(attrs_p, n) if n else [])


@c(R, "cudaFuncSetAttribute", "p i i")
def _func_set_attr(fun, attr, value):
    _ctx()
    drv.cuFuncSetAttribute(_rt().function(fun), attr, value)


FUNC_ATTRS = ["SHARED_SIZE_BYTES", "CONST_SIZE_BYTES", "LOCAL_SIZE_BYTES", "MAX_THREADS_PER_BLOCK",
              "NUM_REGS", "PTX_VERSION", "BINARY_VERSION", "CACHE_MODE_CA",
              "MAX_DYNAMIC_SHARED_SIZE_BYTES", "PREFERRED_SHARED_MEMORY_CARVEOUT",
              "CLUSTER_SIZE_MUST_BE_SET", "REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT",
              "REQUIRED_CLUSTER_DEPTH", "CLUSTER_SCHEDULING_POLICY_PREFERENCE",
              "NON_PORTABLE_CLUSTER_SIZE_ALLOWED"]


@c(R, "cudaFuncGetAttributes", "p p")
def _func_get_attrs(out, fun):
    _ctx()
    f = _rt().function(fun)
    vals = [drv.cuFuncGetAttribute(a, f) for a in FUNC_ATTRS]
    ctypes.memset(out, 0, 144)
    (ctypes.c_uint64 * 3).from_address(out)[:] = vals[:3]
    (ctypes.c_int32 * 13).from_address(out + 24)[:] = vals[3:]


@c(R, "cudaFuncSetCacheConfig", "p i")
def _func_cache(fun, cfg):
    _ctx()
    _rt().function(fun)


@c(R, "cudaFuncGetName", "p p")
def _func_name(out, fun):
    _ctx()
    _u64(out, _cstr(drv.cuFuncGetName(_rt().function(fun))))


@c(R, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "p p i z")
def _occ(out, fun, block, dyn):
    _ctx()
    _i32(out, drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(_rt().function(fun), block, dyn))


@c(R, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "p p i z u")
def _occ_flags(out, fun, block, dyn, flags):
    _occ(out, fun, block, dyn)


def _rt_launch_config(config):
    u = (ctypes.c_uint32 * 6).from_address(config)
    attrs_p = ctypes.c_uint64.from_address(config + 40).value
    n = ctypes.c_uint32.from_address(config + 48).value
    return drv.LaunchConfig(grid=(u[0], u[1], u[2]), block=(u[3], u[4], u[5]),
                            shared=ctypes.c_uint64.from_address(config + 24).value,
                            attrs=dict(_launch_attrs(attrs_p, n) if n else []))


@c(R, "cudaOccupancyMaxActiveClusters", "p p p")
def _occ_clusters(out, fun, config):
    _ctx()
    _i32(out, drv.cuOccupancyMaxActiveClusters(_rt().function(fun), _rt_launch_config(config)))


@c(R, "cudaOccupancyMaxPotentialClusterSize", "p p p")
def _occ_cluster_size(out, fun, config):
    _ctx()
    _i32(out, drv.cuOccupancyMaxPotentialClusterSize(_rt().function(fun),
                                                     _rt_launch_config(config)))


# -- memory ---------------------------------------------------------------------------------
@c(R, "cudaMalloc", "p z")
def _malloc(out, size):
    _ctx()
    if size == 0:
        _u64(out, 0)
        return
    _u64(out, drv.cuMemAlloc(size))


@c(R, "cudaMallocManaged", "p z u")
def _malloc_managed(out, size, flags):
    _ctx()
    _u64(out, drv.cuMemAllocManaged(size, flags or 1))


@c(R, "cudaMallocAsync cudaMallocAsync_ptsz", "p z p")
def _malloc_async(out, size, stream):
    _malloc(out, size)


@c(R, "cudaMallocHost", "p z")
def _malloc_host(out, size):
    _ctx()
    _u64(out, drv.cuMemAllocHost(size))


@c(R, "cudaHostAlloc", "p z u")
def _host_alloc(out, size, flags):
    _ctx()
    _u64(out, drv.cuMemHostAlloc(size, flags))


@c(R, "cudaMallocPitch", "p p z z")
def _malloc_pitch(out, pitch, width, height):
    _ctx()
    p, pt = drv.cuMemAllocPitch(width, height, 16)
    _u64(out, p)
    _u64(pitch, pt)


@c(R, "cudaFree", "p")
def _free(p):
    _ctx()
    if p:
        drv.cuMemFree(p)


@c(R, "cudaFreeAsync cudaFreeAsync_ptsz", "p p")
def _free_async(p, stream):
    _free(p)


@c(R, "cudaFreeHost", "p")
def _free_host(p):
    _ctx()
    if p:
        drv.cuMemFreeHost(p)


@c(R, "cudaHostRegister", "p z u")
def _host_register(p, size, flags):
    _ctx()
    drv.cuMemHostRegister(p, size, flags)


@c(R, "cudaHostUnregister", "p")
def _host_unregister(p):
    _ctx()
    drv.cuMemHostUnregister(p)


@c(R, "cudaHostGetDevicePointer", "p p u")
def _host_dev_ptr(out, p, flags):
    _ctx()
    _u64(out, drv.cuMemHostGetDevicePointer(p, flags))


MEMCPY_KINDS = {0: "HostToHost", 1: "HostToDevice", 2: "DeviceToHost", 3: "DeviceToDevice",
                4: "Default"}


def _memcpy(dst, src, n, kind):
    _ctx()
    if kind not in MEMCPY_KINDS:
        runtime.fail("cudaErrorInvalidMemcpyDirection", f"{kind} is not a cudaMemcpyKind")
    if n == 0:
        return
    if kind == 0 and drv.DRIVER.find(dst) is None and drv.DRIVER.find(src) is None:
        ctypes.memmove(dst, src, n)
        return
    {1: drv.cuMemcpyHtoD, 2: drv.cuMemcpyDtoH, 3: drv.cuMemcpyDtoD}.get(kind, drv.cuMemcpy)(
        dst, src, n)


@c(R, "cudaMemcpy cudaMemcpy_ptds", "p p z i")
def _rt_memcpy(dst, src, n, kind):
    _memcpy(dst, src, n, kind)


@c(R, "cudaMemcpyAsync cudaMemcpyAsync_ptsz", "p p z i p")
def _rt_memcpy_async(dst, src, n, kind, stream):
    _memcpy(dst, src, n, kind)


@c(R, "cudaMemcpy2D cudaMemcpy2D_ptds", "p z p z z z i")
def _memcpy2d(dst, dpitch, src, spitch, width, height, kind):
    if width > dpitch or width > spitch:
        runtime.fail("cudaErrorInvalidPitchValue", "width exceeds a pitch")
    for r in range(height):
        _memcpy(dst + r * dpitch, src + r * spitch, width, kind)


@c(R, "cudaMemcpy2DAsync cudaMemcpy2DAsync_ptsz", "p z p z z z i p")
def _memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream):
    _memcpy2d(dst, dpitch, src, spitch, width, height, kind)


@c(R, "cudaMemset cudaMemset_ptds", "p i z")
def _memset(p, value, n):
    _ctx()
    if n:
        drv.cuMemsetD8(p, value & 0xFF, n)


@c(R, "cudaMemsetAsync cudaMemsetAsync_ptsz", "p i z p")
def _memset_async(p, value, n, stream):
    _memset(p, value, n)


@c(R, "cudaMemset2D cudaMemset2D_ptds", "p z i z z")
def _memset2d(p, pitch, value, width, height):
    for r in range(height):
        _memset(p + r * pitch, value, width)


@c(R, "cudaMemGetInfo", "p p")
def _mem_info(free, total):
    _ctx()
    f, t = drv.cuMemGetInfo()
    _u64(free, f)
    _u64(total, t)


@c(R, "cudaMemcpyToSymbol cudaMemcpyToSymbol_ptds", "p p z z i")
def _to_symbol(symbol, src, n, offset, kind):
    _ctx()
    addr, size = _rt().symbol(symbol)
    if offset + n > size:
        runtime.fail("cudaErrorInvalidValue", f"{n} bytes at offset {offset} leave the "
                     f"{size}-byte symbol")
    _memcpy(addr + offset, src, n, 4 if kind == 1 else kind if kind in (3, 4) else 4)


@c(R, "cudaMemcpyToSymbolAsync cudaMemcpyToSymbolAsync_ptsz", "p p z z i p")
def _to_symbol_async(symbol, src, n, offset, kind, stream):
    _to_symbol(symbol, src, n, offset, kind)


@c(R, "cudaMemcpyFromSymbol cudaMemcpyFromSymbol_ptds", "p p z z i")
def _from_symbol(dst, symbol, n, offset, kind):
    _ctx()
    addr, size = _rt().symbol(symbol)
    if offset + n > size:
        runtime.fail("cudaErrorInvalidValue", f"{n} bytes at offset {offset} leave the "
                     f"{size}-byte symbol")
    _memcpy(dst, addr + offset, n, 4)


@c(R, "cudaMemcpyFromSymbolAsync cudaMemcpyFromSymbolAsync_ptsz", "p p z z i p")
def _from_symbol_async(dst, symbol, n, offset, kind, stream):
    _from_symbol(dst, symbol, n, offset, kind)


@c(R, "cudaGetSymbolAddress", "p p")
def _symbol_address(out, symbol):
    _ctx()
    _u64(out, _rt().symbol(symbol)[0])


@c(R, "cudaGetSymbolSize", "p p")
def _symbol_size(out, symbol):
    _ctx()
    _u64(out, _rt().symbol(symbol)[1])


@c(R, "cudaPointerGetAttributes", "p p")
def _pointer_attrs(out, p):
    ctypes.memset(out, 0, 88)
    a = drv.DRIVER.find(p)
    if a is None:
        return                               # cudaMemoryTypeUnregistered, no device
    kind = {"host": 1, "registered": 1, "managed": 3}.get(a.kind, 2)
    dev = a.context.device.ordinal if a.context is not None else 0
    (ctypes.c_int32 * 2).from_address(out)[:] = [kind, dev]
    (ctypes.c_uint64 * 2).from_address(out + 8)[:] = [p, p]


# -- devices --------------------------------------------------------------------------------
def _init():
    if not drv.DRIVER.initialized:
        drv.cuInit(0)


@c(R, "cudaGetDeviceCount", "p")
def _device_count(out):
    _init()
    _i32(out, drv.cuDeviceGetCount())


@c(R, "cudaGetDevice", "p")
def _get_device(out):
    _i32(out, _rt().device)


@c(R, "cudaSetDevice", "i")
def _set_device(dev):
    _init()
    if not 0 <= dev < drv.cuDeviceGetCount():
        runtime.fail("cudaErrorInvalidDevice", f"device {dev} does not exist")
    _rt().device = dev
    _ctx()


@c(R, "cudaInitDevice", "i u u")
def _init_device(dev, dflags, flags):
    _set_device(dev)


@c(R, "cudaSetDeviceFlags", "u")
def _set_device_flags(flags):
    _rt().device_flags = flags


@c(R, "cudaGetDeviceFlags", "p")
def _get_device_flags(out):
    _u32(out, _rt().device_flags)


@c(R, "cudaDeviceGetAttribute", "p i i")
def _device_attr(out, attr, dev):
    _init()
    _i32(out, drv.cuDeviceGetAttribute(attr, dev))


# cudaDeviceProp of CUDA 13.0 (driver_types.h): (field, C type, count, device attribute or a
# function of the device ordinal); tests/cuda/test_shim.py checks the offsets against the header
PROP_FIELDS = [
    ("name", "char", 256, "name"), ("uuid", "char", 16, "uuid"), ("luid", "char", 8, None),
    ("luidDeviceNodeMask", "uint", 1, None), ("totalGlobalMem", "size_t", 1, "totalmem"),
    ("sharedMemPerBlock", "size_t", 1, "MAX_SHARED_MEMORY_PER_BLOCK"),
    ("regsPerBlock", "int", 1, "MAX_REGISTERS_PER_BLOCK"), ("warpSize", "int", 1, "WARP_SIZE"),
    ("memPitch", "size_t", 1, "MAX_PITCH"),
    ("maxThreadsPerBlock", "int", 1, "MAX_THREADS_PER_BLOCK"),
    ("maxThreadsDim", "int", 3, ("MAX_BLOCK_DIM_X", "MAX_BLOCK_DIM_Y", "MAX_BLOCK_DIM_Z")),
    ("maxGridSize", "int", 3, ("MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z")),
    ("totalConstMem", "size_t", 1, "TOTAL_CONSTANT_MEMORY"),
    ("major", "int", 1, "COMPUTE_CAPABILITY_MAJOR"), ("minor", "int", 1,
                                                       "COMPUTE_CAPABILITY_MINOR"),
    ("textureAlignment", "size_t", 1, "TEXTURE_ALIGNMENT"),
    ("texturePitchAlignment", "size_t", 1, "TEXTURE_PITCH_ALIGNMENT"),
    ("multiProcessorCount", "int", 1, "MULTIPROCESSOR_COUNT"),
    ("integrated", "int", 1, "INTEGRATED"), ("canMapHostMemory", "int", 1, "CAN_MAP_HOST_MEMORY"),
    ("maxTexture1D", "int", 1, None), ("maxTexture1DMipmap", "int", 1, None),
    ("maxTexture2D", "int", 2, None), ("maxTexture2DMipmap", "int", 2, None),
    ("maxTexture2DLinear", "int", 3, None), ("maxTexture2DGather", "int", 2, None),
    ("maxTexture3D", "int", 3, None), ("maxTexture3DAlt", "int", 3, None),
    ("maxTextureCubemap", "int", 1, None), ("maxTexture1DLayered", "int", 2, None),
    ("maxTexture2DLayered", "int", 3, None), ("maxTextureCubemapLayered", "int", 2, None),
    ("maxSurface1D", "int", 1, None), ("maxSurface2D", "int", 2, None),
    ("maxSurface3D", "int", 3, None), ("maxSurface1DLayered", "int", 2, None),
    ("maxSurface2DLayered", "int", 3, None), ("maxSurfaceCubemap", "int", 1, None),
    ("maxSurfaceCubemapLayered", "int", 2, None),
    ("surfaceAlignment", "size_t", 1, "SURFACE_ALIGNMENT"),
    ("concurrentKernels", "int", 1, "CONCURRENT_KERNELS"), ("ECCEnabled", "int", 1, "ECC_ENABLED"),
    ("pciBusID", "int", 1, "PCI_BUS_ID"), ("pciDeviceID", "int", 1, "PCI_DEVICE_ID"),
    ("pciDomainID", "int", 1, "PCI_DOMAIN_ID"), ("tccDriver", "int", 1, "TCC_DRIVER"),
    ("asyncEngineCount", "int", 1, "ASYNC_ENGINE_COUNT"),
    ("unifiedAddressing", "int", 1, "UNIFIED_ADDRESSING"),
    ("memoryBusWidth", "int", 1, "GLOBAL_MEMORY_BUS_WIDTH"),
    ("l2CacheSize", "int", 1, "L2_CACHE_SIZE"),
    ("persistingL2CacheMaxSize", "int", 1, "MAX_PERSISTING_L2_CACHE_SIZE"),
    ("maxThreadsPerMultiProcessor", "int", 1, "MAX_THREADS_PER_MULTIPROCESSOR"),
    ("streamPrioritiesSupported", "int", 1, "STREAM_PRIORITIES_SUPPORTED"),
    ("globalL1CacheSupported", "int", 1, "GLOBAL_L1_CACHE_SUPPORTED"),
    ("localL1CacheSupported", "int", 1, "LOCAL_L1_CACHE_SUPPORTED"),
    ("sharedMemPerMultiprocessor", "size_t", 1, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
    ("regsPerMultiprocessor", "int", 1, "MAX_REGISTERS_PER_MULTIPROCESSOR"),
    ("managedMemory", "int", 1, "MANAGED_MEMORY"), ("isMultiGpuBoard", "int", 1, "MULTI_GPU_BOARD"),
    ("multiGpuBoardGroupID", "int", 1, "MULTI_GPU_BOARD_GROUP_ID"),
    ("hostNativeAtomicSupported", "int", 1, "HOST_NATIVE_ATOMIC_SUPPORTED"),
    ("pageableMemoryAccess", "int", 1, "PAGEABLE_MEMORY_ACCESS"),
    ("concurrentManagedAccess", "int", 1, "CONCURRENT_MANAGED_ACCESS"),
    ("computePreemptionSupported", "int", 1, "COMPUTE_PREEMPTION_SUPPORTED"),
    ("canUseHostPointerForRegisteredMem", "int", 1, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM"),
    ("cooperativeLaunch", "int", 1, "COOPERATIVE_LAUNCH"),
    ("sharedMemPerBlockOptin", "size_t", 1, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
    ("pageableMemoryAccessUsesHostPageTables", "int", 1,
     "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES"),
    ("directManagedMemAccessFromHost", "int", 1, "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST"),
    ("maxBlocksPerMultiProcessor", "int", 1, "MAX_BLOCKS_PER_MULTIPROCESSOR"),
    ("accessPolicyMaxWindowSize", "int", 1, "MAX_ACCESS_POLICY_WINDOW_SIZE"),
    ("reservedSharedMemPerBlock", "size_t", 1, "RESERVED_SHARED_MEMORY_PER_BLOCK"),
    ("hostRegisterSupported", "int", 1, "HOST_REGISTER_SUPPORTED"),
    ("sparseCudaArraySupported", "int", 1, "SPARSE_CUDA_ARRAY_SUPPORTED"),
    ("hostRegisterReadOnlySupported", "int", 1, "READ_ONLY_HOST_REGISTER_SUPPORTED"),
    ("timelineSemaphoreInteropSupported", "int", 1, "TIMELINE_SEMAPHORE_INTEROP_SUPPORTED"),
    ("memoryPoolsSupported", "int", 1, "MEMORY_POOLS_SUPPORTED"),
    ("gpuDirectRDMASupported", "int", 1, "GPU_DIRECT_RDMA_SUPPORTED"),
    ("gpuDirectRDMAFlushWritesOptions", "uint", 1, "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS"),
    ("gpuDirectRDMAWritesOrdering", "int", 1, "GPU_DIRECT_RDMA_WRITES_ORDERING"),
    ("memoryPoolSupportedHandleTypes", "uint", 1, "MEMPOOL_SUPPORTED_HANDLE_TYPES"),
    ("deferredMappingCudaArraySupported", "int", 1, "DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED"),
    ("ipcEventSupported", "int", 1, "IPC_EVENT_SUPPORTED"),
    ("clusterLaunch", "int", 1, "CLUSTER_LAUNCH"),
    ("unifiedFunctionPointers", "int", 1, "UNIFIED_FUNCTION_POINTERS"),
    ("deviceNumaConfig", "int", 1, "NUMA_CONFIG"), ("deviceNumaId", "int", 1, "NUMA_ID"),
    ("mpsEnabled", "int", 1, "MPS_ENABLED"), ("hostNumaId", "int", 1, "HOST_NUMA_ID"),
    ("gpuPciDeviceID", "uint", 1, "GPU_PCI_DEVICE_ID"),
    ("gpuPciSubsystemID", "uint", 1, "GPU_PCI_SUBSYSTEM_ID"),
    ("hostNumaMultinodeIpcSupported", "int", 1, "HOST_NUMA_MULTINODE_IPC_SUPPORTED"),
    ("reserved", "int", 56, None),
]
_CT = {"char": ctypes.c_char, "int": ctypes.c_int32, "uint": ctypes.c_uint32,
       "size_t": ctypes.c_uint64}


_PROP_TYPE = {n: t for n, t, _, _ in PROP_FIELDS}


class DeviceProp(ctypes.Structure):
    _fields_ = [(n, _CT[t] * k if k > 1 else _CT[t]) for n, t, k, _ in PROP_FIELDS]


def device_prop(dev: int) -> DeviceProp:
    _init()
    p = DeviceProp()
    for name, _, k, src in PROP_FIELDS:
        if src is None:
            continue
        if src == "name":
            p.name = drv.cuDeviceGetName(256, dev).encode()[:255]
        elif src == "uuid":
            p.uuid = bytes(drv.cuDeviceGetUuid(dev))[:16]
        elif src == "totalmem":
            p.totalGlobalMem = drv.cuDeviceTotalMem(dev)
        elif isinstance(src, tuple):
            getattr(p, name)[:] = [drv.cuDeviceGetAttribute(a, dev) for a in src]
        else:
            v = drv.cuDeviceGetAttribute(src, dev)
            setattr(p, name, v & 0xFFFFFFFF if _PROP_TYPE[name] == "uint" else v)
    return p


@c(R, "cudaGetDeviceProperties cudaGetDeviceProperties_v2", "p i")
def _device_props(out, dev):
    _init()
    if not 0 <= dev < drv.cuDeviceGetCount():
        runtime.fail("cudaErrorInvalidDevice", f"device {dev} does not exist")
    p = device_prop(dev)
    ctypes.memmove(out, ctypes.addressof(p), ctypes.sizeof(p))


@c(R, "cudaDeviceGetPCIBusId", "p i i")
def _pci_bus_id(buf, length, dev):
    _init()
    s = drv.cuDeviceGetPCIBusId(length, dev).encode()[:max(length - 1, 0)]
    ctypes.memmove(buf, s + b"\0", len(s) + 1)


@c(R, "cudaDeviceSynchronize cudaThreadSynchronize", "")
def _device_sync():
    _ctx()
    drv.cuCtxSynchronize()


@c(R, "cudaDeviceReset cudaThreadExit", "")
def _device_reset():
    _init()
    drv.cuDevicePrimaryCtxReset(_rt().device)
    _state.last = 0


@c(R, "cudaDeviceSetLimit", "i z")
def _set_limit(limit, value):
    _ctx()
    drv.cuCtxSetLimit(limit, value)


@c(R, "cudaDeviceGetLimit", "p i")
def _get_limit(out, limit):
    _ctx()
    _u64(out, drv.cuCtxGetLimit(limit))


@c(R, "cudaDeviceGetStreamPriorityRange", "p p")
def _prio_range(least, greatest):
    _ctx()
    lo, hi = drv.cuCtxGetStreamPriorityRange()
    if least:
        _i32(least, lo)
    if greatest:
        _i32(greatest, hi)


@c(R, "cudaDeviceSetCacheConfig cudaDeviceSetSharedMemConfig", "i")
def _cache_config(cfg):
    _ctx()


@c(R, "cudaDeviceGetCacheConfig", "p")
def _get_cache_config(out):
    _i32(out, 0)


@c(R, "cudaDeviceCanAccessPeer", "p i i")
def _can_access_peer(out, dev, peer):
    _init()
    n = drv.cuDeviceGetCount()
    if not (0 <= dev < n and 0 <= peer < n):
        runtime.fail("cudaErrorInvalidDevice", "no such device")
    _i32(out, int(dev != peer))


@c(R, "cudaDeviceEnablePeerAccess", "i u")
def _enable_peer(peer, flags):
    _ctx()


@c(R, "cudaDriverGetVersion", "p")
def _driver_version(out):
    _i32(out, drv.DRIVER_VERSION)


@c(R, "cudaRuntimeGetVersion", "p")
def _runtime_version(out):
    _i32(out, RUNTIME_VERSION)


# -- errors ---------------------------------------------------------------------------------
@c(R, "cudaGetLastError", "", raw=True)
def _get_last_error():
    return _last(True)


@c(R, "cudaPeekAtLastError", "", raw=True)
def _peek_last_error():
    return _last(False)


_RT_NAME = {code: name for name, (code, _) in CUDA_ERRORS.items()}


@c(R, "cudaGetErrorString", "i", raw=True)
def _error_string(code):
    name = _RT_NAME.get(code)
    return _cstr(CUDA_ERRORS[name][1] if name else "unrecognized error code")


@c(R, "cudaGetErrorName", "i", raw=True)
def _error_name(code):
    return _cstr(_RT_NAME.get(code, "unrecognized error code"))


# -- streams and events ---------------------------------------------------------------------
@c(R, "cudaStreamCreate", "p")
def _stream_create(out):
    _ctx()
    _u64(out, int(drv.cuStreamCreate(0)))


@c(R, "cudaStreamCreateWithFlags", "p u")
def _stream_create_flags(out, flags):
    _ctx()
    _u64(out, int(drv.cuStreamCreate(flags)))


@c(R, "cudaStreamCreateWithPriority", "p u i")
def _stream_create_prio(out, flags, prio):
    _ctx()
    _u64(out, int(drv.cuStreamCreateWithPriority(flags, prio)))


@c(R, "cudaStreamDestroy", "p")
def _stream_destroy(s):
    _ctx()
    drv.cuStreamDestroy(_stream(s))


@c(R, "cudaStreamSynchronize cudaStreamSynchronize_ptsz", "p")
def _stream_sync(s):
    _ctx()
    drv.cuStreamSynchronize(_stream(s))


@c(R, "cudaStreamQuery cudaStreamQuery_ptsz", "p")
def _stream_query(s):
    _ctx()
    drv.cuStreamQuery(_stream(s))


@c(R, "cudaStreamWaitEvent cudaStreamWaitEvent_ptsz", "p p u")
def _stream_wait(s, e, flags):
    _ctx()
    drv.cuStreamWaitEvent(_stream(s), e, flags)


@c(R, "cudaStreamGetPriority cudaStreamGetPriority_ptsz", "p p")
def _stream_prio(s, out):
    _ctx()
    _i32(out, drv.cuStreamGetPriority(_stream(s)))


@c(R, "cudaStreamGetFlags cudaStreamGetFlags_ptsz", "p p")
def _stream_flags(s, out):
    _ctx()
    _u32(out, drv.cuStreamGetFlags(_stream(s)))


@c(R, "cudaStreamIsCapturing cudaStreamIsCapturing_ptsz", "p p")
def _stream_capturing(s, out):
    _ctx()
    _i32(out, 0)                             # cudaStreamCaptureStatusNone: no graphs here


@c(R, "cudaThreadExchangeStreamCaptureMode", "p")
def _capture_mode(mode):
    pass


_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_STREAM_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


@c(R, "cudaLaunchHostFunc cudaLaunchHostFunc_ptsz", "p p p")
def _host_func(s, fn, data):
    _ctx()
    _HOST_FN(fn)(data)                       # work is synchronous: everything before is done


@c(R, "cudaStreamAddCallback cudaStreamAddCallback_ptsz", "p p p u")
def _stream_callback(s, fn, data, flags):
    _ctx()
    _STREAM_CB(fn)(s, 0, data)


@c(R, "cudaEventCreate", "p")
def _event_create(out):
    _ctx()
    _u64(out, int(drv.cuEventCreate(0)))


@c(R, "cudaEventCreateWithFlags", "p u")
def _event_create_flags(out, flags):
    _ctx()
    _u64(out, int(drv.cuEventCreate(flags)))


@c(R, "cudaEventRecord cudaEventRecord_ptsz", "p p")
def _event_record(e, s):
    _ctx()
    drv.cuEventRecord(e, _stream(s))


@c(R, "cudaEventRecordWithFlags cudaEventRecordWithFlags_ptsz", "p p u")
def _event_record_flags(e, s, flags):
    _ctx()
    drv.cuEventRecordWithFlags(e, _stream(s), flags)


@c(R, "cudaEventSynchronize", "p")
def _event_sync(e):
    _ctx()
    drv.cuEventSynchronize(e)


@c(R, "cudaEventQuery", "p")
def _event_query(e):
    _ctx()
    drv.cuEventQuery(e)


@c(R, "cudaEventDestroy", "p")
def _event_destroy(e):
    _ctx()
    drv.cuEventDestroy(e)


@c(R, "cudaEventElapsedTime cudaEventElapsedTime_v2", "p p p")
def _event_elapsed(ms, start, end):
    _ctx()
    _put(ms, ctypes.c_float, drv.cuEventElapsedTime(start, end))


# -- the driver from the runtime ------------------------------------------------------------
@c(R, "cudaGetDriverEntryPoint cudaGetDriverEntryPoint_ptsz", "p p q p")
def _entry_point(symbol, out, flags, status):
    addr = driver_symbol(_read_str(symbol))
    _u64(out, addr)
    if status:
        _i32(status, 0 if addr else 1)   # cudaDriverEntryPointSuccess / SymbolNotFound
    if not addr:
        runtime.fail("cudaErrorSymbolNotFound", f"{_read_str(symbol)} is not a driver entry "
                     "point")


@c(R, "cudaGetDriverEntryPointByVersion cudaGetDriverEntryPointByVersion_ptsz", "p p u q p")
def _entry_point_version(symbol, out, version, flags, status):
    _entry_point(symbol, out, flags, status)


@c(R, "cudaProfilerStart cudaProfilerStop cudaCtxResetPersistingL2Cache", "")
def _nothing():
    pass
