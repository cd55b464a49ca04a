"""CuTe DSL (nvidia-cutlass-dsl 4.8) on ptxsim: `cute.compile` and calling the compiled function
run the DSL's own host code, whose CUDA calls land in ptxsim.cuda.

How the DSL reaches the GPU: its JIT-compiled host function (MLIR's execution engine) calls a
runtime library, `libcute_dsl_runtime.so` (`_cudaLibraryLoadData`, `_cudaLibraryGetKernel`,
`_cudaLaunchKernelEx`, ...: the CUDA runtime API behind a leading underscore), and its Python
side calls cuda-python. `install()`:

1. registers, on every execution engine the DSL creates, Python implementations of those
   runtime symbols (ctypes callbacks; the real library is left out of the engine), which call
   ptxsim.cuda;
2. routes cuda-python's driver / runtime calls to ptxsim.cuda (`ptxsim.cuda.bindings`);
3. makes the DSL keep the PTX it compiles (CUTE_DSL_KEEP=ptx into a ptxsim folder): the library
   the host code loads is a fatbin holding only a cubin, so ptxsim loads the PTX whose kernels
   the cubin names (ptxsim executes PTX);
4. maps the memory of every torch CPU tensor handed to the DSL through DLPack into the emulated
   device (at its own address: a tensor's data_ptr() is its device address), so kernels read and
   write the tensors themselves.

Nothing of the DSL's parameter packing, tensor-map encoding or launch logic is replaced: the
layouts are the DSL's own.
"""
from __future__ import annotations

import ctypes
import os
import re
import struct
import sys
import tempfile
import threading
from pathlib import Path

from ptxsim.cuda import driver as D
from ptxsim.errors import CudaError, UnsupportedFeature

_STATE: dict = {}
_LOCK = threading.Lock()
LAST_ERROR = threading.local()          # the CudaError behind the last failing runtime call

# ------------------------------------------------------------------------------------------------
# the runtime symbols the DSL's host code calls (libcute_dsl_runtime.so exports)
# ------------------------------------------------------------------------------------------------
P, I32, U32, I64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_int64


def _ctx():
    from ptxsim.cuda.bindings import _ensure_context
    _ensure_context()


def _put(ptr, ctype, value) -> None:
    if ptr:
        ctype.from_address(ptr).value = value


def _fatbin_kernel_names(raw: bytes) -> set[str]:
    """Kernel names of the cubins (ELF) inside a fatbin: FUNC symbols with a .text section."""
    names: set[str] = set()
    start = 0
    while True:
        i = raw.find(b"\x7fELF", start)
        if i < 0:
            return names
        start = i + 4
        try:
            elf = raw[i:]
            shoff, = struct.unpack_from("<Q", elf, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
            secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + k * shentsize)
                    for k in range(shnum)]
            for s in secs:
                if s[1] != 2:                               # SHT_SYMTAB
                    continue
                strtab = secs[s[6]]
                for k in range(s[5] // 24):
                    nm, info, other, shndx, _, _ = struct.unpack_from("<IBBHQQ", elf,
                                                                      s[4] + 24 * k)
                    # STT_FUNC, defined, STO_CUDA_ENTRY (0x10): the kernels; ptxas's own
                    # helpers ($__internal_..._guardrail_trap_...) are not .entry in the PTX
                    if info & 0xF == 2 and shndx and other & 0x10:
                        end = elf.index(b"\0", strtab[4] + nm)
                        names.add(elf[strtab[4] + nm:end].decode())
        except (struct.error, ValueError, IndexError):
            continue


_PTX: list = []                    # (entries, text) of every PTX the DSL produced, newest last


def remember_ptx(text: str) -> None:
    entries = set(re.findall(r"\.entry\s+([\w$]+)", text))
    if entries:
        _PTX.append((entries, text))
        del _PTX[:-64]


def ptx_for_image(raw: bytes) -> str | None:
    """The PTX the DSL produced for this fatbin / cubin: the newest one defining every kernel
    the image names (from the compiles ptxsim saw, else the files kept in its folder)."""
    names = _fatbin_kernel_names(raw)
    if not names:
        return None
    for entries, text in reversed(_PTX):
        if names <= entries:
            return text
    folder = _STATE.get("ptx_dir")
    best = None
    for path in Path(folder).rglob("*.ptx") if folder else ():
        text = path.read_text(errors="replace")
        entries = set(re.findall(r"\.entry\s+([\w$]+)", text))
        if names <= entries:
            mtime = path.stat().st_mtime
            if best is None or mtime > best[0]:
                best = (mtime, text)
    return best[1] if best else None


def _image_reader(raw: bytes) -> str | None:
    """ptxsim.cuda image reader: the DSL's PTX for a cubin / fatbin it built (cuda-python's
    cuLibraryLoadData of `compiled.artifacts.CUBIN`, as cutlass.utils.HardwareInfo does)."""
    return ptx_for_image(raw)


def _fatbin_bytes(ptr: int) -> bytes:
    head = ctypes.string_at(ptr, 16)
    magic, = struct.unpack_from("<I", head)
    if magic == D.FATBIN_MAGIC:
        hsize, = struct.unpack_from("<H", head, 6)
        fsize, = struct.unpack_from("<Q", head, 8)
        return ctypes.string_at(ptr, hsize + fsize)
    return D._image_bytes(ptr)


def _library_load_data(lib_out, code, *_):
    _ctx()
    raw = _fatbin_bytes(code)
    if raw not in D.DRIVER.images:
        ptx = ptx_for_image(raw)
        if ptx is not None:
            D.register_image(raw, ptx)
    lib = D.cuLibraryLoadData(raw)
    _put(lib_out, ctypes.c_void_p, int(lib))


def _library_get_kernel(kernel_out, lib, name):
    k = D.cuLibraryGetKernel(lib, ctypes.string_at(name).decode())
    _put(kernel_out, ctypes.c_void_p, int(k))


def _kernel_set_attr(kernel, attr, value, dev):
    D.cuKernelSetAttribute(attr, value, kernel, dev)


def _cu_kernel_get_attr(out, attr, kernel, dev):
    _put(out, ctypes.c_int32, D.cuKernelGetAttribute(attr, kernel, dev))


def _func_set_attr(func, attr, value):
    D.cuFuncSetAttribute(func, attr, value)


def _get_device(out):
    _ctx()
    _put(out, ctypes.c_int32, D.DRIVER.current().device.ordinal)


def _device_get_attr(out, attr, dev):
    _ctx()
    _put(out, ctypes.c_int32, D.cuDeviceGetAttribute(attr, dev))


def _get_device_count(out):
    _ctx()
    _put(out, ctypes.c_int32, D.cuDeviceGetCount())


def _set_device(dev):
    _ctx()
    D.cuCtxSetCurrent(D.cuDevicePrimaryCtxRetain(dev))


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class _LaunchAttr(ctypes.Structure):           # cudaLaunchAttribute: id, pad, 64-byte value
    _fields_ = [("id", ctypes.c_int32), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_ubyte * 64)]


class _LaunchConfig(ctypes.Structure):         # cudaLaunchConfig_t
    _fields_ = [("grid", _Dim3), ("block", _Dim3), ("smem", ctypes.c_size_t),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttr)),
                ("num_attrs", ctypes.c_uint32)]


def _attr_value(aid: int, raw: bytes):
    name, _ = D.enums.lookup(D.enums.LAUNCH_ATTRIBUTE, aid, "cudaLaunchAttributeID")
    if name in ("CLUSTER_DIMENSION", "PREFERRED_CLUSTER_DIMENSION"):
        return name, struct.unpack_from("<III", raw)
    if name in ("PROGRAMMATIC_EVENT", "LAUNCH_COMPLETION_EVENT"):
        return name, struct.unpack_from("<Q", raw)[0]
    return name, struct.unpack_from("<i", raw)[0]


def _launch_kernel_ex(config, func, args):
    _ctx()
    c = _LaunchConfig.from_address(config)
    attrs = [_attr_value(c.attrs[i].id, bytes(c.attrs[i].value)) for i in range(c.num_attrs)]
    cfg = D.LaunchConfig((c.grid.x, c.grid.y, c.grid.z), (c.block.x, c.block.y, c.block.z),
                         c.smem, c.stream or 0, dict(attrs))
    D.cuLaunchKernelEx(cfg, func, args or None)


def _launch_kernel(func, gx, gy, gz, bx, by, bz, args, smem, stream):
    _ctx()
    D.cuLaunchKernel(func, gx, gy, gz, bx, by, bz, smem, stream or 0, args or None, None)


def _occupancy(out, func, block, smem):
    _put(out, ctypes.c_int32, D.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block, smem))


def _malloc(out, n):
    _ctx()
    _put(out, ctypes.c_void_p, D.cuMemAlloc(n))


def _free(p):
    if p:
        D.cuMemFree(p)


def _memcpy(dst, src, n, kind):
    _ctx()
    D.cuMemcpy(dst, src, n)


def _memcpy_async(dst, src, n, kind, stream):
    _memcpy(dst, src, n, kind)


def _memset(dst, value, n):
    _ctx()
    D.cuMemsetD8(dst, value, n)


def _memset_async(dst, value, n, stream):
    _memset(dst, value, n)


def _sync(*_):
    _ctx()
    D.cuCtxSynchronize()


def _stream_create(out):
    _ctx()
    _put(out, ctypes.c_void_p, int(D.cuStreamCreate(0)))


def _event_create(out):
    _ctx()
    _put(out, ctypes.c_void_p, int(D.cuEventCreate(0)))


def _event_record(ev, stream):
    D.cuEventRecord(ev, stream or 0)


def _event_elapsed(out, a, b):
    if out:
        ctypes.c_float.from_address(out).value = D.cuEventElapsedTime(a, b)


def _library_unload(lib):
    D.cuLibraryUnload(lib)


def _library_get_global(dptr_out, size_out, lib, name):
    addr, size = D.cuLibraryGetGlobal(lib, ctypes.string_at(name).decode())
    _put(dptr_out, ctypes.c_void_p, addr)
    _put(size_out, ctypes.c_size_t, size)


def _tensor_map_encode_tiled(tmap, dtype, rank, addr, dims, strides, box, estr, il, sw, l2,
                             oob):
    r = int(rank)
    u64 = lambda p, n: list((ctypes.c_uint64 * n).from_address(p)) if p and n else []  # noqa
    u32 = lambda p, n: list((ctypes.c_uint32 * n).from_address(p)) if p and n else []  # noqa
    m = D.cuTensorMapEncodeTiled(dtype, r, addr or 0, u64(dims, r), u64(strides, r - 1),
                                 u32(box, r), u32(estr, r), il, sw, l2, oob)
    ctypes.memmove(tmap, bytes(m), 128)


# -- the CUDA dialect's module loading and TVM-FFI error reporting (what host code compiled
#    with --enable-tvm-ffi calls; signatures from the DSL's declarations, tvm_ffi_provider.py)
_LOADED: dict[int, tuple[int, set]] = {}     # module state address -> (library, devices loaded)
_INIT = ctypes.CFUNCTYPE(ctypes.c_int32, P)
_LOAD = ctypes.CFUNCTYPE(ctypes.c_int32, P, ctypes.c_int32)
_SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p)
_SET_ERROR_PARTS = ctypes.CFUNCTYPE(None, ctypes.c_char_p, P, ctypes.c_int32)
CUDA_DIALECT_ERROR = b"CUDADialectError"   # the TVM-FFI error kind the DSL registers


def error_text(code: int) -> str:
    """'CUDA Error Code: N' and, when ptxsim's model failed, its CudaError (the call, the
    CUresult, and for a kernel fault the PTX line and thread): the DSL's CUDADialectError
    message."""
    err = getattr(LAST_ERROR, "error", None)
    text = f"CUDA Error Code: {code}"
    if err is not None and err.code == code:
        text += f" ptxsim: {err}"
    return text


def _init_library_once(state, cuda_init, cuda_load_to_device, set_error):
    """cuda_dialect_init_library_once(state, cuda_init, cuda_load_to_device, set_error): load the
    module's kernel library once (cuda_init(&library)) and onto the current device once
    (cuda_load_to_device(&library, device)); a failure is reported through set_error(kind,
    message) and returned."""
    _ctx()
    entry = _LOADED.get(state)
    rc = 0
    if entry is None or not ctypes.c_int64.from_address(state).value:
        lib = ctypes.c_void_p()
        rc = _INIT(cuda_init)(ctypes.addressof(lib))
        if not rc:
            entry = _LOADED[state] = (lib.value, set())
            ctypes.c_int64.from_address(state).value = lib.value
    if not rc:
        lib, loaded = entry
        dev = D.DRIVER.current().device.ordinal
        if dev not in loaded:
            holder = ctypes.c_void_p(lib)
            rc = _LOAD(cuda_load_to_device)(ctypes.addressof(holder), dev)
            if not rc:
                loaded.add(dev)
    if rc:
        _SET_ERROR(set_error)(CUDA_DIALECT_ERROR, error_text(rc).encode())
        raise _Returned(rc)


def _unload_library_once(state):
    entry = _LOADED.pop(state, None)
    if entry is not None and entry[0]:
        try:
            D.cuLibraryUnload(entry[0])
        except CudaError:
            pass                                    # the context is gone already
        ctypes.c_int64.from_address(state).value = 0


def _set_raised_cuda_error(set_error_parts, code):
    """CuteDSLRT_TVMFFISetRaisedCudaError(TVMFFIErrorSetRaisedFromCStrParts, code): raise a
    CUDADialectError in TVM-FFI for a failed runtime call."""
    text = ctypes.c_char_p(error_text(code).encode())
    parts = (ctypes.c_char_p * 1)(text)
    _SET_ERROR_PARTS(set_error_parts)(CUDA_DIALECT_ERROR, ctypes.addressof(parts), 1)


def _error_name(code):
    from ptxsim.cuda.runtime_enums import CUDA_ERRORS
    name = next((n for n, (c, _) in CUDA_ERRORS.items() if c == code), "cudaErrorUnknown")
    return _cstr(name)


_STRINGS: dict[str, ctypes.Array] = {}


def _cstr(text: str) -> int:
    buf = _STRINGS.get(text)
    if buf is None:
        buf = _STRINGS[text] = ctypes.create_string_buffer(text.encode())
    return ctypes.addressof(buf)


class _Returned(Exception):
    """A runtime function's own non-zero result (its error was already reported)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


# name -> (argument ctypes, implementation[, result ctype]); without a result type the function
# returns a cudaError_t / CUresult: 0, or the code of the CudaError the implementation raised
VOID, PTR = None, ctypes.c_void_p
RUNTIME = {
    "cuda_dialect_init_library_once": ([P, P, P, P], _init_library_once),
    "cuda_dialect_unload_library_once": ([P], _unload_library_once, VOID),
    "cuda_dialect_get_error_name": ([I32], _error_name, PTR),
    "CuteDSLRT_TVMFFISetRaisedCudaError": ([P, I32], _set_raised_cuda_error, VOID),
    "_cudaLibraryLoadData": ([P, P, P, P, U32, P, P, U32], _library_load_data),
    "_cuLibraryLoadData": ([P, P, P, P, U32, P, P, U32], _library_load_data),
    "_cudaLibraryGetKernel": ([P, P, P], _library_get_kernel),
    "_cuLibraryGetKernel": ([P, P, P], _library_get_kernel),
    "_cudaLibraryUnload": ([P], _library_unload),
    "_cuLibraryUnload": ([P], _library_unload),
    "_cudaLibraryGetGlobal": ([P, P, P, P], _library_get_global),
    "_cuLibraryGetGlobal": ([P, P, P, P], _library_get_global),
    "_cudaKernelSetAttributeForDevice": ([P, I32, I32, I32], _kernel_set_attr),
    "_cuKernelGetAttribute": ([P, I32, P, I32], _cu_kernel_get_attr),
    "_cudaFuncSetAttribute": ([P, I32, I32], _func_set_attr),
    "_cudaGetDevice": ([P], _get_device),
    "_cuDeviceGet": ([P, I32], lambda out, n: _put(out, ctypes.c_int32, D.cuDeviceGet(n))),
    "_cudaGetDeviceCount": ([P], _get_device_count),
    "_cudaSetDevice": ([I32], _set_device),
    "_cudaDeviceGetAttribute": ([P, I32, I32], _device_get_attr),
    "_cudaLaunchKernelEx": ([P, P, P], _launch_kernel_ex),
    "_cudaLaunchKernel": ([P, I32, I32, I32, I32, I32, I32, P, I64, P], _launch_kernel),
    "_cudaOccupancyMaxActiveBlocksPerMultiprocessor": ([P, P, I32, I64], _occupancy),
    "_cudaMalloc": ([P, I64], _malloc),
    "_cudaMallocAsync": ([P, I64, P], lambda out, n, s: _malloc(out, n)),
    "_cudaFree": ([P], _free),
    "_cudaFreeAsync": ([P, P], lambda p, s: _free(p)),
    "_cudaMemcpy": ([P, P, I64, I32], _memcpy),
    "_cudaMemcpyAsync": ([P, P, I64, I32, P], _memcpy_async),
    "_cudaMemset": ([P, I32, I64], _memset),
    "_cudaMemsetAsync": ([P, I32, I64, P], _memset_async),
    "_cudaDeviceSynchronize": ([], _sync),
    "_cudaStreamSynchronize": ([P], _sync),
    "_cudaStreamCreate": ([P], _stream_create),
    "_cudaStreamDestroy": ([P], lambda s: D.cuStreamDestroy(s)),
    "_cudaStreamWaitEvent": ([P, P, U32], lambda s, e, f: None),
    "_cudaEventCreate": ([P], _event_create),
    "_cudaEventRecord": ([P, P], _event_record),
    "_cudaEventDestroy": ([P], lambda e: D.cuEventDestroy(e)),
    "_cudaEventElapsedTime": ([P, P, P], _event_elapsed),
    "_cuTensorMapEncodeTiled": ([P, I32, U32, P, P, P, P, P, I32, I32, I32, I32],
                                _tensor_map_encode_tiled),
}


def call(name: str, *args):
    """Run runtime function `name` of RUNTIME as C sees it: its C result."""
    argtypes, impl, *restype = RUNTIME[name]
    if restype:                                     # void / pointer: no error to return
        try:
            return impl(*args) or 0
        except Exception as e:                      # noqa: BLE001 - never unwind into C
            LAST_ERROR.error = CudaError("CUDA_ERROR_UNKNOWN", 999, name,
                                         f"ptxsim's {name} failed: {type(e).__name__}: {e}", e)
            sys.stderr.write(f"ptxsim: {LAST_ERROR.error}\n")
            return 0
    try:
        impl(*args)
        return 0
    except _Returned as e:
        return e.code
    except CudaError as e:
        LAST_ERROR.error = e
        return e.code
    except Exception as e:                          # noqa: BLE001 - never unwind into C
        LAST_ERROR.error = CudaError("CUDA_ERROR_UNKNOWN", 999, name,
                                     f"ptxsim's {name} failed: {type(e).__name__}: {e}", e)
        return 999


def _callback(name: str, argtypes, restype):
    proto = ctypes.CFUNCTYPE(restype, *argtypes)
    return proto(lambda *args: call(name, *args))


_CALLBACKS = {name: _callback(name, e[0], e[2] if len(e) > 2 else ctypes.c_int32)
              for name, e in RUNTIME.items()}


def native_dispatch(name: str, *slots) -> int:
    """The native stand-in for libcute_dsl_runtime.so (`ptxsim.cuda._libcute_dsl_runtime`,
    src/ptxsim/cuda/native/shim.c) calls this with the function's name and its 16 argument
    slots (64-bit integer registers / stack slots, argument k in slot k): the C result. A
    function of the real library ptxsim does not model returns 801 (cudaErrorNotSupported)."""
    entry = RUNTIME.get(name)
    if entry is None:
        _unmodelled(name)
        return 801
    args = []
    for t, v in zip(entry[0], slots):
        if t is I32:
            v &= 0xFFFFFFFF
            v -= (v >> 31) << 32
        elif t is U32:
            v &= 0xFFFFFFFF
        args.append(v)
    r = call(name, *args)
    return (r or 0) & 0xFFFFFFFFFFFFFFFF


_UNMODELLED: set[str] = set()


def _unmodelled(name: str) -> None:
    if name not in _UNMODELLED:
        _UNMODELLED.add(name)
        sys.stderr.write(f"ptxsim: {name} (libcute_dsl_runtime.so) is not modelled by ptxsim; "
                         "it returns 801 (cudaErrorNotSupported)\n")


def native_start(lib: str, embedded: int = 0) -> int:
    """Called once by the native stand-in when its first function runs."""
    return 0


def _register(engine) -> None:
    for name, cb in _CALLBACKS.items():
        engine.raw_register_runtime(name, ctypes.cast(cb, ctypes.c_void_p))


# ------------------------------------------------------------------------------------------------
# installation
# ------------------------------------------------------------------------------------------------
def install(*, keep_dir: str | None = None) -> None:
    """Route CuTe DSL to ptxsim (idempotent). Call before `cute.compile`; best before importing
    cutlass (the DSL reads CUTE_DSL_KEEP / CUTE_DSL_DUMP_DIR / CUTE_DSL_ARCH when it starts)."""
    with _LOCK:
        if _STATE.get("installed"):
            return
        folder = keep_dir or tempfile.mkdtemp(prefix="ptxsim_cute_ptx_")
        _STATE["ptx_dir"] = folder
        _STATE["saved_env"] = {k: os.environ.get(k) for k in
                               ("CUTE_DSL_KEEP", "CUTE_DSL_DUMP_DIR", "CUTE_DSL_ARCH",
                                "CUTE_DSL_LIBS")}
        from ptxsim.cuda import native_path
        runtime = native_path("cute_dsl_runtime")
        if runtime:
            # what host code compiled with --enable-tvm-ffi links (a BinaryExecutionEngine,
            # which takes libraries only): ptxsim's stand-in for libcute_dsl_runtime.so
            os.environ["CUTE_DSL_LIBS"] = runtime
        _forget_cached_env()
        keep = {t for t in os.environ.get("CUTE_DSL_KEEP", "").split(",") if t}
        os.environ["CUTE_DSL_KEEP"] = ",".join(sorted(keep | {"ptx"}))
        os.environ["CUTE_DSL_DUMP_DIR"] = folder
        os.environ.setdefault("CUTE_DSL_ARCH", D.DRIVER.device_specs[0].target)
        from ptxsim.cuda import bindings
        bindings.install()
        _patch_compiler()
        _patch_artifacts()
        if _image_reader not in D.DRIVER.image_readers:
            D.DRIVER.image_readers.append(_image_reader)
        _patch_dlpack()
        _patch_dsl_env(folder)
        _patch_error_report()
        _patch_tvm_ffi(runtime)
        _STATE["installed"] = True


def _patch_compiler() -> None:
    from cutlass.base_dsl import compiler as C
    orig = C.Compiler.jit

    def jit(self, module, opt_level: int = 2, shared_libs=()):
        libs = [p for p in shared_libs if "cute_dsl_runtime" not in os.path.basename(p)]
        engine = orig(self, module, opt_level, libs)
        _register(engine)
        return engine
    jit.ptxsim = True
    C.Compiler.jit = jit
    _STATE["orig_jit"] = orig


def _patch_artifacts() -> None:
    """Remember the PTX text of every compile (JitFunctionArtifacts reads the kept file while
    it exists; a compile with its own --dump-dir deletes it soon after)."""
    from cutlass.base_dsl import jit_executor as J
    orig = J.JitFunctionArtifacts.__post_init__

    def __post_init__(self):
        orig(self)
        if isinstance(self.PTX, str) and ".entry" in self.PTX:
            remember_ptx(self.PTX)
    J.JitFunctionArtifacts.__post_init__ = __post_init__
    _STATE["orig_artifacts"] = orig


def _patch_dsl_env(folder: str) -> None:
    """The DSL's settings are read when its singleton is made (often at `import cutlass`): make
    the singletons keep the PTX into `folder` whether they existed before install() or not."""
    try:
        from cutlass.cutlass_dsl import CuTeDSL
    except ImportError:
        return
    classes = [CuTeDSL] + [c for c in CuTeDSL.__subclasses__()]
    for cls in classes:
        try:
            env = cls._get_dsl().envar
        except Exception:                        # noqa: BLE001 - an optional DSL flavour
            continue
        _STATE.setdefault("saved_envars", []).append(
            (env, env.keep_tokens, env.keep_ptx, env.dump_dir))
        env.keep_tokens = frozenset(set(env.keep_tokens) | {"ptx"})
        env.keep_ptx = True
        env.dump_dir = folder


def _patch_dlpack() -> None:
    """Map the storage of every torch CPU tensor exported through DLPack into the device."""
    try:
        import torch
    except ImportError:
        return
    orig = torch.Tensor.__dlpack__

    def __dlpack__(self, *args, **kwargs):
        map_tensor(self)
        return orig(self, *args, **kwargs)
    __dlpack__.ptxsim = True
    torch.Tensor.__dlpack__ = __dlpack__
    _STATE["orig_dlpack"] = orig


def map_tensor(t) -> None:
    """Make a torch CPU tensor's storage device memory at its own address (no copy; the mapping
    keeps the storage alive). Tensors inside memory the device already has are left alone."""
    import torch
    with torch._C.DisableTorchFunction():           # the real device of a tensor on "cuda"
        if t.device.type != "cpu":
            return
        st = t.untyped_storage()
    base, n = st.data_ptr(), st.nbytes()
    if not n:
        return
    drv = D.DRIVER
    if drv.gmem.buffer_at(base) is not None:
        return
    view = torch.empty(0, dtype=torch.uint8).set_(st, 0, (n,), (1,)).numpy()
    from ptxsim.cuda.bindings import _ensure_context
    _ensure_context()
    try:
        drv.gmem.map(view, f"torch storage {base:#x} ({n} bytes)", address=base)
    except Exception as e:       # overlaps (a reused address): a named error at the call
        raise CudaError("CUDA_ERROR_INVALID_VALUE", 1, "ptxsim.cuda.dsl.map_tensor",
                        f"the tensor's memory cannot be mapped: {e}") from e
    drv.allocs[base] = D.Allocation(base, n, "registered", view, drv.current())


def _forget_cached_env() -> None:
    """The DSL caches the environment variables it reads (env_manager.get_str_env_var is an
    lru_cache): after install() / uninstall() changed them, a DSL imported earlier reads them
    again."""
    env = sys.modules.get("cutlass.base_dsl.env_manager")
    clear = getattr(getattr(env, "get_str_env_var", None), "cache_clear", None)
    if clear is not None:
        clear()


def _patch_tvm_ffi(runtime: str | None) -> None:
    """Host code compiled with --enable-tvm-ffi is linked by a BinaryExecutionEngine, which
    takes shared libraries only: without ptxsim's native stand-in (not built at install) such a
    compile ends in a named error instead of linking NVIDIA's runtime library."""
    if runtime:
        return
    try:
        from cutlass.cutlass_dsl import tvm_ffi_provider as T
    except ImportError:
        return
    orig = T.TVMFFIJitCompiledFunctionBase._create_tvm_ffi_function

    def _create_tvm_ffi_function(self):
        raise UnsupportedFeature(
            "CuTe DSL functions compiled with --enable-tvm-ffi need ptxsim's stand-in for "
            "libcute_dsl_runtime.so (ptxsim.cuda._libcute_dsl_runtime), which was not built "
            "when ptxsim was installed (it needs a C compiler and a shared libpython)")
    T.TVMFFIJitCompiledFunctionBase._create_tvm_ffi_function = _create_tvm_ffi_function
    _STATE["orig_tvm_ffi"] = (T.TVMFFIJitCompiledFunctionBase, orig)


def _patch_error_report() -> None:
    """When the DSL turns a failing runtime call into its own error, chain ptxsim's CudaError
    (the call, the CUresult, and for a kernel fault the PTX line) to it as the cause."""
    try:
        from cutlass.base_dsl.runtime import cuda as rc
    except ImportError:
        return
    orig_create = rc.create_cuda_runtime_error

    def create_cuda_runtime_error(error_code, cuda_error_type=None, cause=None):
        err = getattr(LAST_ERROR, "error", None)
        LAST_ERROR.error = None
        if cause is None and err is not None and err.code == int(error_code):
            cause = err
        kw = {} if cuda_error_type is None else {"cuda_error_type": cuda_error_type}
        return orig_create(error_code, cause=cause, **kw)
    rc.create_cuda_runtime_error = create_cuda_runtime_error
    _STATE["orig_create"] = orig_create


def uninstall() -> None:
    """Undo install(): the DSL, cuda-python and torch as they were."""
    with _LOCK:
        if not _STATE.get("installed"):
            return
        from cutlass.base_dsl import compiler as C
        from cutlass.base_dsl import jit_executor as J
        C.Compiler.jit = _STATE.pop("orig_jit")
        J.JitFunctionArtifacts.__post_init__ = _STATE.pop("orig_artifacts")
        if _image_reader in D.DRIVER.image_readers:
            D.DRIVER.image_readers.remove(_image_reader)
        if "orig_dlpack" in _STATE:
            import torch
            torch.Tensor.__dlpack__ = _STATE.pop("orig_dlpack")
        if "orig_tvm_ffi" in _STATE:
            cls, orig = _STATE.pop("orig_tvm_ffi")
            cls._create_tvm_ffi_function = orig
        if "orig_create" in _STATE:
            from cutlass.base_dsl.runtime import cuda as rc
            rc.create_cuda_runtime_error = _STATE.pop("orig_create")
        from ptxsim.cuda import bindings
        bindings.uninstall()
        for env, tokens, keep_ptx, dump_dir in _STATE.pop("saved_envars", []):
            env.keep_tokens, env.keep_ptx, env.dump_dir = tokens, keep_ptx, dump_dir
        for k, v in _STATE.pop("saved_env", {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _forget_cached_env()
        _STATE["installed"] = False
