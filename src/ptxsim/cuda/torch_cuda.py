"""A CPU build of torch that believes in one CUDA device: the emulated one (`ptxsim cute`).

Tensors a script creates "on cuda" hold their data in host memory (ordinary CPU storage) but are
CUDA tensors to the script: `is_cuda` is True, `device` is cuda:0, DLPack exports them as
(kDLCUDA, 0) (`__dlpack__`, `__dlpack_device__` and torch's C exchange table, which TVM-FFI
reads), results computed from them are on "cuda" too, and `.cpu()` / `.to("cpu")` copy them back
to a CPU tensor. When one is handed to a kernel ptxsim maps its memory into the device at its
own address, so kernels read and write it in place. What of `torch.cuda` exists: docs/cuda.md
("torch on the emulated device").

Which tensors are on "cuda" is decided where torch decides it, in Python: a torch function mode
sees every call of the script (factories with a CUDA `device`, `.cuda()`, `.to(...)`, and every
operation whose inputs are on "cuda"); torch's own C++ code (autograd's gradients) is not seen.
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import types
import weakref

from ptxsim.cuda import driver as D

_SAVED: dict = {}
FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange",
             "linspace", "logspace", "tensor", "as_tensor", "empty_like", "zeros_like",
             "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
             "empty_strided", "eye", "normal", "from_numpy", "asarray")


def _is_cuda(device) -> bool:
    if device is None:
        return False
    if isinstance(device, int):
        return True                           # torch reads a bare int as a CUDA ordinal
    t = getattr(device, "type", None)
    if t is not None:
        return t == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


def _cpu_device(kwargs: dict) -> dict:
    if _is_cuda(kwargs.get("device")):
        kwargs = dict(kwargs, device="cpu")
    kwargs.pop("pin_memory", None)
    return kwargs


def _factory(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **_cpu_device(kwargs))
        if _is_cuda(kwargs.get("device")):
            _mark(out)
        return out
    wrapped.ptxsim = True
    return wrapped


# ------------------------------------------------------------------------------------------------
# which tensors are on the emulated device
# ------------------------------------------------------------------------------------------------
_MARK = "_ptxsim_on_cuda"
KDLCUDA = 2                                   # DLDeviceType kDLCUDA (dlpack.h)


def on_device(t) -> bool:
    """True for a tensor the script has on "cuda" (its data is host memory ptxsim maps)."""
    d = getattr(t, "__dict__", None)
    return bool(d) and d.get(_MARK, False)


def _mark(out, keep=()) -> None:
    import torch
    if isinstance(out, torch.Tensor):
        if id(out) not in keep:
            out.__dict__[_MARK] = True
    elif isinstance(out, (tuple, list)):
        for o in out:
            _mark(o, keep)


def _unmark(t) -> None:
    d = getattr(t, "__dict__", None)
    if d:
        d.pop(_MARK, None)


def _inputs(args, kwargs):
    import torch
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    yield b


def _device_kind(d) -> str | None:
    """'cuda', 'cpu' or None (another device / not a device) for a `to` / `device=` argument."""
    import torch
    if d is None or isinstance(d, bool):
        return None
    if _is_cuda(d):
        return "cuda"
    if isinstance(d, torch.device):
        return d.type
    if isinstance(d, str):
        return d.split(":")[0]
    return None


def _to_handler(func, args, kwargs):
    """Tensor.to: the target device comes from a device / string / int argument, `device=`, or
    another tensor (whose device and dtype it takes)."""
    import torch
    self, target, new_args = args[0], None, [args[0]]
    for a in args[1:]:
        if isinstance(a, torch.Tensor):
            target = "cuda" if on_device(a) else "cpu"
        elif not isinstance(a, torch.dtype) and _device_kind(a) is not None:
            target = _device_kind(a)
            a = "cpu" if target == "cuda" else a
        new_args.append(a)
    if "device" in kwargs and _device_kind(kwargs["device"]) is not None:
        target = _device_kind(kwargs["device"])
        kwargs = dict(kwargs, device="cpu") if target == "cuda" else kwargs
    out = func(*new_args, **kwargs)
    if target == "cuda":
        if out is self and not on_device(self):
            out = self.clone()                      # host -> device: a copy, as on a GPU
        _mark(out)
    elif target == "cpu":
        if out is self and on_device(self):
            out = self.clone()                      # device -> host: a copy
        if out is not self:
            _unmark(out)
    elif out is not self and on_device(self):
        _mark(out)
    return out


def _cpu_handler(func, args, kwargs):
    self = args[0]
    out = func(*args, **kwargs)
    if on_device(self):
        out = self.clone() if out is self else out
        _unmark(out)
    return out


def _cuda_method(self, *args, **kwargs):
    """Tensor.cuda: a copy on the emulated device (the tensor itself when already there)."""
    if on_device(self):
        return self
    out = self.clone()
    _mark(out)
    return out


def _dlpack_handler(func, args, kwargs):
    """Tensor.__dlpack__: the CPU capsule torch makes, with the device set to (kDLCUDA, 0) for a
    tensor on "cuda" (no stream to synchronise with: every launch has finished)."""
    self = args[0]
    if not on_device(self):
        return func(*args, **kwargs)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("stream", "dl_device")}
    cap = func(self, **kwargs)
    set_capsule_device(cap, KDLCUDA, 0)
    return cap


def _dlpack_device_handler(func, args, kwargs):
    if on_device(args[0]):
        from torch.utils.dlpack import DLDeviceType
        return (DLDeviceType.kDLCUDA, 0)
    return func(*args, **kwargs)


_METHODS = {"to": _to_handler, "cpu": _cpu_handler, "__dlpack__": _dlpack_handler,
            "__dlpack_device__": _dlpack_device_handler,
            "get_device": lambda f, a, k: 0 if on_device(a[0]) else f(*a, **k)}


def set_capsule_device(cap, device_type: int, device_id: int) -> None:
    """Rewrite the device of a DLPack capsule ("dltensor" or "dltensor_versioned")."""
    import ctypes
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(cap)
    ptr = api.PyCapsule_GetPointer(cap, name)
    # DLManagedTensor: DLTensor first; DLManagedTensorVersioned: version, manager_ctx, deleter,
    # flags (32 bytes), then the DLTensor; its device {int32 type, int32 id} follows `data`
    at = ptr + (8 if name == b"dltensor" else 40)
    ctypes.c_int32.from_address(at).value = device_type
    ctypes.c_int32.from_address(at + 4).value = device_id


class Stream:
    """torch.cuda.Stream over a ptxsim stream; the default stream is handle 0."""

    def __init__(self, device=None, priority: int = 0, handle: int | None = None):
        from ptxsim.cuda.bindings import _ensure_context
        _ensure_context()
        self.cuda_stream = int(D.cuStreamCreate(0)) if handle is None else handle
        self.device = "cuda:0"

    def synchronize(self):
        return None

    def wait_stream(self, other):
        return None

    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def __eq__(self, other):
        return isinstance(other, Stream) and other.cuda_stream == self.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)


class Event:
    """torch.cuda.Event over a ptxsim event (times on ptxsim's clock, docs/cuda.md)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        from ptxsim.cuda.bindings import _ensure_context
        _ensure_context()
        self._ev = D.cuEventCreate(0 if enable_timing else 2)

    def record(self, stream=None):
        D.cuEventRecord(self._ev, getattr(stream, "cuda_stream", 0) or 0)

    def synchronize(self):
        return None

    def query(self) -> bool:
        return True

    def wait(self, stream=None):
        return None

    def elapsed_time(self, end: "Event") -> float:
        return D.cuEventElapsedTime(self._ev, end._ev)


_DEFAULT: list = []

# every CPU storage a tensor of the script lives in: base address -> (bytes, weak refs to tensors
# over it); the device maps one when a kernel first touches its memory (Driver.host_resolvers)
_STORAGES: dict[int, tuple[int, list]] = {}
_BASES: list[int] = []


def _track(out) -> None:
    import torch
    if isinstance(out, torch.Tensor):
        if out.device.type != "cpu" or out.is_sparse:
            return
        try:
            st = out.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        base, n = st.data_ptr(), st.nbytes()
        if not n:
            return
        entry = _STORAGES.get(base)
        if entry is None or entry[0] != n:
            if entry is None:
                bisect.insort(_BASES, base)
            entry = _STORAGES[base] = (n, [])
        refs = [r for r in entry[1] if r() is not None]
        refs.append(weakref.ref(out))
        entry[1][:] = refs[-4:]
    elif isinstance(out, (tuple, list)):
        for o in out:
            _track(o)


def resolve(address: int):
    """(uint8 view of the live torch storage holding `address`, its base, a name), or None."""
    i = bisect.bisect_right(_BASES, address) - 1
    while i >= 0:
        base = _BASES[i]
        n, refs = _STORAGES[base]
        if address < base + n:
            t = next((r() for r in refs if r() is not None), None)
            if t is None:
                return None
            import torch
            st = t.untyped_storage()
            view = torch.empty(0, dtype=torch.uint8).set_(st, 0, (n,), (1,)).numpy()
            return view, base, f"torch storage {base:#x} ({n} bytes)"
        return None
    return None


def _mode():
    import torch
    from torch.overrides import TorchFunctionMode
    TB = torch._C.TensorBase
    is_cuda, device, is_cpu = TB.is_cuda, TB.device, TB.is_cpu
    cuda0 = torch.device("cuda", 0)

    class EmulatedDevice(TorchFunctionMode):
        """Every torch call of the script: tracks the tensors it makes (their memory is what
        kernels may touch) and keeps track of which are on "cuda"."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            owner = getattr(func, "__self__", None)     # property getters: the descriptor
            if owner is is_cuda:
                return on_device(args[0])
            if owner is device:
                return cuda0 if on_device(args[0]) else func(*args, **kwargs)
            if owner is is_cpu:
                return not on_device(args[0]) and func(*args, **kwargs)
            handler = _METHODS.get(getattr(func, "__name__", None))
            if handler is not None and args and isinstance(args[0], torch.Tensor):
                out = handler(func, args, kwargs)
                _track(out)
                return out
            to_cuda = None
            if "device" in kwargs:
                to_cuda = _device_kind(kwargs["device"]) == "cuda"
                if to_cuda:
                    kwargs = dict(kwargs, device="cpu")
                kwargs.pop("pin_memory", None)
            ins = list(_inputs(args, kwargs))
            out = func(*args, **kwargs)
            _track(out)
            if to_cuda or (to_cuda is None and any(on_device(t) for t in ins)):
                # an in-place operation returns its own input, whose device stays as it is
                _mark(out, keep={id(t) for t in ins if not on_device(t)})
            return out
    return EmulatedDevice()


def _default_stream(device=None) -> Stream:
    if not _DEFAULT:
        _DEFAULT.append(Stream(handle=0))
    return _DEFAULT[0]


def _spec():
    from ptxsim.cuda.bindings import _ensure_context
    _ensure_context()
    return D.DRIVER.current().device.spec


def _properties(device=None):
    s = _spec()
    return types.SimpleNamespace(name=s.name, major=s.cc[0], minor=s.cc[1],
                                 multi_processor_count=s.sms, total_memory=s.total_mem,
                                 L2_cache_size=s.l2_bytes, is_integrated=False,
                                 max_threads_per_multi_processor=s.max_threads_per_sm,
                                 warp_size=32, gcnArchName="")


# e2m1 (fp4) code -> value (OCP MX spec: sign, 2 exponent bits, 1 mantissa bit)
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _unblock(scale, rows: int, cols: int):
    """Inverse of the 128 x 4 "blocked" scale layout cuBLAS / torch._scaled_mm take (rows of 128
    in 4 groups of 32, 4 scale columns per block): the (rows, cols) scale matrix."""
    import torch
    nr, nc = -(-rows // 128), -(-cols // 4)
    r = scale.reshape(nr * nc, 32, 4, 4).transpose(1, 2).reshape(nr, nc, 128, 4)
    return r.permute(0, 2, 1, 3).reshape(nr * 128, nc * 4)[:rows, :cols].to(torch.float32)


def _values(t):
    """float32 values of a CPU matrix: packed fp4 pairs (low nibble first) or any float type."""
    import torch
    if t.dtype == getattr(torch, "float4_e2m1fn_x2", None):
        b = t.contiguous().view(torch.uint8).to(torch.int64)
        lut = torch.tensor(_E2M1, dtype=torch.float32)
        pair = torch.stack([lut[b & 15], lut[b >> 4]], dim=-1)
        return pair.reshape(*t.shape[:-1], 2 * t.shape[-1])
    return t.to(torch.float32)


def _scaled_mm(orig):
    """torch._scaled_mm on CPU tensors for the block-scaled forms torch runs only on a GPU
    (mxfp8: e4m3/e5m2 with e8m0 scales per 32; nvfp4: packed e2m1 with e4m3 scales per 16;
    mxfp4: packed e2m1 with e8m0 scales per 32; scales in the blocked layout): dequantise and
    multiply in float32. Other forms go to torch's own implementation."""
    @functools.wraps(orig)
    def scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                  use_fast_accum=False):
        import torch
        blocked = (scale_a.dim() == 1 and scale_a.numel() > 1 and scale_a.dtype in (
            torch.float8_e4m3fn, torch.float8_e8m0fnu) and a.device.type in ("cpu", "cuda"))
        if not blocked:
            return orig(a, b, scale_a, scale_b, bias=bias, scale_result=scale_result,
                        out_dtype=out_dtype, use_fast_accum=use_fast_accum)
        av, bv = _values(a), _values(b.t()).t()           # (M, K), (K, N)
        vec = 16 if scale_a.dtype == torch.float8_e4m3fn else 32
        m, k = av.shape
        n = bv.shape[1]
        sa = _unblock(scale_a, m, k // vec).repeat_interleave(vec, dim=1)
        sb = _unblock(scale_b, n, k // vec).repeat_interleave(vec, dim=1)
        out = (av * sa) @ (bv.t() * sb).t()
        if bias is not None:
            out = out + bias.to(torch.float32)
        return out.to(out_dtype or torch.bfloat16)
    scaled_mm.ptxsim = True
    return scaled_mm


def install() -> None:
    """Make torch's CUDA API answer for the emulated device (idempotent)."""
    if _SAVED:
        return
    import torch
    tc = torch.cuda
    current = {"stream": None}

    @contextlib.contextmanager
    def stream(s):
        old = current["stream"]
        current["stream"] = s
        try:
            yield
        finally:
            current["stream"] = old

    def set_(obj, name, value):
        _SAVED[(obj, name)] = getattr(obj, name, None)
        setattr(obj, name, value)

    funcs = {
        "is_available": lambda: True, "device_count": lambda: D.cuDeviceGetCount(),
        "current_device": lambda: 0, "set_device": lambda d: None,
        "get_device_name": lambda d=None: _spec().name,
        "get_device_capability": lambda d=None: _spec().cc,
        "get_device_properties": _properties, "synchronize": lambda d=None: None,
        "current_stream": lambda d=None: current["stream"] or _default_stream(),
        "default_stream": _default_stream, "stream": stream, "Stream": Stream, "Event": Event,
        # torch.manual_seed calls torch.cuda.manual_seed_all: the CPU generator is the only one
        "manual_seed": lambda seed: None, "manual_seed_all": lambda seed: None,
        "empty_cache": lambda: None, "memory_allocated": lambda d=None: 0,
        "max_memory_allocated": lambda d=None: 0, "reset_peak_memory_stats": lambda d=None: None,
        "is_initialized": lambda: True, "init": lambda: None, "_lazy_init": lambda: None,
        "get_arch_list": lambda: [_spec().target.replace("a", "")],
    }
    _ensure_driver()
    mode = _mode()
    mode.__enter__()
    _SAVED[("mode", "mode")] = mode
    if resolve not in D.DRIVER.host_resolvers:
        D.DRIVER.host_resolvers.append(resolve)
    for name, fn in funcs.items():
        set_(tc, name, fn)
    for name in FACTORIES:
        if hasattr(torch, name):
            set_(torch, name, _factory(getattr(torch, name)))
    set_(torch.Tensor, "cuda", _cuda_method)
    set_(torch, "_scaled_mm", _scaled_mm(torch._scaled_mm))
    if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):        # torch >= 2.9
        from ptxsim.cuda import dlpack_exchange
        set_(torch.Tensor, "__dlpack_c_exchange_api__", dlpack_exchange.capsule(
            torch.Tensor.__dlpack_c_exchange_api__, on_device,
            lambda: (current["stream"] or _default_stream()).cuda_stream, _mark))
    orig_gen = torch.Generator

    class Generator(orig_gen):                  # torch.Generator(device="cuda")
        def __new__(cls, device="cpu"):
            return orig_gen("cpu" if _is_cuda(device) else device)
    set_(torch, "Generator", Generator)


def _ensure_driver():
    from ptxsim.cuda.bindings import _ensure_context
    _ensure_context()


def uninstall() -> None:
    mode = _SAVED.pop(("mode", "mode"), None)
    if mode is not None:
        mode.__exit__(None, None, None)
    if resolve in D.DRIVER.host_resolvers:
        D.DRIVER.host_resolvers.remove(resolve)
    for (obj, name), value in _SAVED.items():
        setattr(obj, name, value)
    _SAVED.clear()
    _DEFAULT.clear()
    _STORAGES.clear()
    _BASES.clear()
