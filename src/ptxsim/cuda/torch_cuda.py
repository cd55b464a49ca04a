"""A CPU build of torch that believes in one CUDA device: the emulated one (`ptxsim cute`).

Tensors a script creates "on cuda" are ordinary CPU tensors; when one is handed to a kernel
(through DLPack) ptxsim maps its memory into the device at its own address, so kernels read and
write it in place, `.cpu()` returns it and `torch.testing.assert_close` compares it. What of
`torch.cuda` exists: docs/cuda.md ("torch on the emulated device").
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
        return fn(*args, **_cpu_device(kwargs))
    wrapped.ptxsim = True
    return wrapped


def _to(orig):
    @functools.wraps(orig)
    def to(self, *args, **kwargs):
        args = tuple("cpu" if _is_cuda(a) and not isinstance(a, int) else a for a in args)
        return orig(self, *args, **_cpu_device(kwargs))
    return to


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
    from torch.overrides import TorchFunctionMode

    class TrackTensors(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            _track(out)
            return out
    return TrackTensors()


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
            torch.float8_e4m3fn, torch.float8_e8m0fnu) and a.device.type == "cpu")
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
    set_(torch.Tensor, "cuda", lambda self, *a, **k: self)
    set_(torch, "_scaled_mm", _scaled_mm(torch._scaled_mm))
    set_(torch.Tensor, "to", _to(torch.Tensor.to))
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
