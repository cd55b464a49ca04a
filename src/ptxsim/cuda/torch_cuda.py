"""A CPU build of torch that believes in one CUDA device: the emulated one (`ptxsim cute`).

Tensors a script creates "on cuda" hold their data in host memory (ordinary CPU storage) but are
CUDA tensors to the script: `is_cuda` is True, `device` is cuda:0, DLPack exports them as
(kDLCUDA, 0) (`__dlpack__`, `__dlpack_device__` and torch's C exchange table, which TVM-FFI
reads), results computed from them are on "cuda" too, and `.cpu()` / `.to("cpu")` copy them back
to a CPU tensor. When one is handed to a kernel ptxsim maps its memory into the device at its
own address, so kernels read and write it in place. What of `torch.cuda` exists: docs/cuda.md
("torch on the emulated device").

Being on "cuda" is a property of a tensor's storage (an attribute of the storage's Python
object, which torch keeps while the memory lives), so views and autograd's saved tensors follow
it. Storages get it from factories given a CUDA `device`, `.cuda()` / `.to("cuda")`, and every ATen
operation whose inputs are on "cuda" (a dispatch mode: autograd's backward passes included).
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import types
import weakref

from ptxsim.cuda import driver as D

_SAVED: dict = {}
_ABSENT = object()
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


def _storage(t):
    """The Python object of a tensor's storage (torch keeps one per storage while it lives, so
    an attribute set on it stays with the memory), or None."""
    import torch
    try:
        with torch._C.DisableTorchFunction():
            return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def on_device(t) -> bool:
    """True for a tensor whose memory is on "cuda" (host memory ptxsim maps): the device is a
    property of the storage, so views, autograd's saved tensors and gradients follow it."""
    st = _storage(t)
    return st is not None and getattr(st, _MARK, False)


def _mark(out, keep=()) -> None:
    """Put the storages of the tensors in `out` on "cuda", except those in `keep` (data
    pointers of CPU storages: an in-place result or a view of a CPU input stays where it is)."""
    import torch
    if isinstance(out, torch.Tensor):
        st = _storage(out)
        if st is not None and st.data_ptr() not in keep:
            setattr(st, _MARK, True)
    elif isinstance(out, (tuple, list)):
        for o in out:
            _mark(o, keep)


def _unmark(t) -> None:
    st = _storage(t)
    if st is not None and getattr(st, _MARK, False):
        delattr(st, _MARK)


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


def _to(orig):
    """Tensor.to: the target device comes from a device / string / int argument, `device=`, or
    another tensor (whose device and dtype it takes); host <-> device moves are copies."""
    import torch

    @functools.wraps(orig)
    def to(self, *args, **kwargs):
        target, new_args = None, []
        for a in args:
            if isinstance(a, torch.Tensor):
                target = "cuda" if on_device(a) else "cpu"
            elif not isinstance(a, torch.dtype) and _device_kind(a) is not None:
                target = _device_kind(a)
                a = "cpu" if target == "cuda" else a
            new_args.append(a)
        if "device" in kwargs and _device_kind(kwargs["device"]) is not None:
            target = _device_kind(kwargs["device"])
            kwargs = dict(kwargs, device="cpu") if target == "cuda" else kwargs
        kwargs.pop("non_blocking", None)
        out = orig(self, *new_args, **kwargs)
        if target == "cuda":
            if out is self and not on_device(self):
                out = self.clone()                  # host -> device: a copy, as on a GPU
            _mark(out)
        elif target == "cpu":
            if out is self and on_device(self):
                out = self.clone()                  # device -> host: a copy
            if out is not self:
                _unmark(out)
        elif out is not self and on_device(self):
            _mark(out)
        return out
    to.ptxsim = True
    return to


def _cpu(orig):
    @functools.wraps(orig)
    def cpu(self, *args, **kwargs):
        if not on_device(self):
            return orig(self, *args, **kwargs)
        out = self.clone()                          # device -> host: a copy
        _unmark(out)
        return out
    cpu.ptxsim = True
    return cpu


def _cuda_method(self, *args, **kwargs):
    """Tensor.cuda: a copy on the emulated device (the tensor itself when already there)."""
    if on_device(self):
        return self
    out = self.clone()
    _mark(out)
    return out


def _dlpack(orig):
    """Tensor.__dlpack__: the capsule torch makes of the host memory, with the device set to
    (kDLCUDA, 0) for a tensor on "cuda" (no stream to synchronise with: every launch has
    finished)."""
    @functools.wraps(orig)
    def __dlpack__(self, *args, **kwargs):
        if not on_device(self):
            return orig(self, *args, **kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("stream", "dl_device")}
        cap = orig(self, stream=-1, **kwargs)
        set_capsule_device(cap, KDLCUDA, 0)
        return cap
    __dlpack__.ptxsim = True
    return __dlpack__


def _dlpack_device(orig):
    @functools.wraps(orig)
    def __dlpack_device__(self):
        if on_device(self):
            from torch.utils.dlpack import DLDeviceType
            return (DLDeviceType.kDLCUDA, 0)
        return orig(self)
    return __dlpack_device__


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

# every host storage the script's tensors live in: base address -> (bytes, weak reference to the
# storage's Python object, which torch keeps exactly as long as the memory lives); the device maps
# one when a kernel first touches its memory (Driver.host_resolvers)
_STORAGES: dict[int, tuple[int, weakref.ref]] = {}
_BASES: list[int] = []


def _track(out) -> None:
    import torch
    if isinstance(out, torch.Tensor):
        if out.is_sparse:
            return
        st = _storage(out)
        if st is None or st.device.type != "cpu":
            return
        base, n = st.data_ptr(), st.nbytes()
        if not n:
            return
        entry = _STORAGES.get(base)
        if entry is None:
            bisect.insort(_BASES, base)
        if entry is None or entry[0] != n or entry[1]() is not st:
            _STORAGES[base] = (n, weakref.ref(st))
    elif isinstance(out, (tuple, list)):
        for o in out:
            _track(o)


def resolve(address: int):
    """(uint8 view of the live torch storage holding `address`, its base, a name), or None."""
    i = bisect.bisect_right(_BASES, address) - 1
    if i < 0:
        return None
    base = _BASES[i]
    n, ref = _STORAGES[base]
    st = ref()
    if address >= base + n or st is None or st.data_ptr() != base:
        return None
    import torch
    with torch._C.DisableTorchFunction():
        view = torch.empty(0, dtype=torch.uint8).set_(st, 0, (n,), (1,)).numpy()
    return view, base, f"torch storage {base:#x} ({n} bytes)"


def _modes():
    """(function mode, dispatch mode). The function mode sees the script's torch calls: a
    `device=` naming "cuda" becomes the CPU and puts the result on "cuda". The dispatch mode sees
    every ATen operation, autograd's backward passes included: a result computed from memory on
    "cuda" is on "cuda" (an in-place result or a view of a CPU input stays where it is), and
    every tensor made is tracked (its memory is what kernels may touch)."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class DeviceArguments(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if "device" not in kwargs:
                return func(*args, **kwargs)
            to_cuda = _device_kind(kwargs["device"]) == "cuda"
            if to_cuda:
                kwargs = dict(kwargs, device="cpu")
            kwargs.pop("pin_memory", None)
            ins = list(_inputs(args, kwargs))
            out = func(*args, **kwargs)
            if to_cuda:
                # over a CPU input's memory (torch.as_tensor(host, device="cuda")): a copy
                cpu = {st.data_ptr() for st in map(_storage, ins)
                       if st is not None and not getattr(st, _MARK, False)}
                if isinstance(out, torch.Tensor) and _storage(out) is not None \
                        and _storage(out).data_ptr() in cpu:
                    out = out.clone()
                _mark(out)
            elif _device_kind(kwargs["device"]) == "cpu":
                _unmark_new(out, ins)
            return out

    class DevicePropagation(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            ins = list(_inputs(args, kwargs))
            if ins:
                stores = [st for st in map(_storage, ins) if st is not None]
                if any(getattr(st, _MARK, False) for st in stores):
                    _mark(out, keep={st.data_ptr() for st in stores
                                     if not getattr(st, _MARK, False)})
            _track(out)
            return out
    return DeviceArguments(), DevicePropagation()


def _unmark_new(out, ins) -> None:
    """device="cpu" given explicitly: a new result is on the CPU even when made from "cuda"
    inputs (the dispatch mode put it there); a result over an input's memory keeps its device."""
    import torch
    same = {st.data_ptr() for st in map(_storage, ins) if st is not None}
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(o, torch.Tensor):
            st = _storage(o)
            if st is not None and st.data_ptr() not in same:
                _unmark(o)


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
        _SAVED[(obj, name)] = vars(obj).get(name, _ABSENT)
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
    modes = _modes()
    for mode in modes:
        mode.__enter__()
    _SAVED[("modes", "modes")] = modes
    if resolve not in D.DRIVER.host_resolvers:
        D.DRIVER.host_resolvers.append(resolve)
    for name, fn in funcs.items():
        set_(tc, name, fn)
    for name in FACTORIES:
        if hasattr(torch, name):
            set_(torch, name, _factory(getattr(torch, name)))
    # a tensor's device, as the script and torch's Python code see it (autograd's backward
    # passes run without the function mode: these are the class's own attributes)
    TB = torch._C.TensorBase
    real_is_cuda, real_device, real_is_cpu = TB.is_cuda.__get__, TB.device.__get__, \
        TB.is_cpu.__get__
    cuda0 = torch.device("cuda", 0)
    set_(torch.Tensor, "is_cuda", property(lambda t: on_device(t) or real_is_cuda(t),
                                           doc=TB.is_cuda.__doc__))
    set_(torch.Tensor, "is_cpu", property(lambda t: not on_device(t) and real_is_cpu(t),
                                          doc=TB.is_cpu.__doc__))
    set_(torch.Tensor, "device", property(lambda t: cuda0 if on_device(t) else real_device(t),
                                          doc=TB.device.__doc__))
    real_get_device = torch.Tensor.get_device
    set_(torch.Tensor, "get_device", lambda t: 0 if on_device(t) else real_get_device(t))
    set_(torch.Tensor, "cuda", _cuda_method)
    set_(torch.Tensor, "cpu", _cpu(torch.Tensor.cpu))
    set_(torch.Tensor, "to", _to(torch.Tensor.to))
    set_(torch.Tensor, "__dlpack__", _dlpack(torch.Tensor.__dlpack__))
    set_(torch.Tensor, "__dlpack_device__", _dlpack_device(torch.Tensor.__dlpack_device__))
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
    for mode in reversed(_SAVED.pop(("modes", "modes"), ())):
        mode.__exit__(None, None, None)
    if resolve in D.DRIVER.host_resolvers:
        D.DRIVER.host_resolvers.remove(resolve)
    for (obj, name), value in reversed(list(_SAVED.items())):
        if value is _ABSENT:
            delattr(obj, name)
        else:
            setattr(obj, name, value)
    _SAVED.clear()
    _DEFAULT.clear()
    _STORAGES.clear()
    _BASES.clear()
