"""Host memory as ptxsim's global memory: a pointer argument keeps its host address.

Triton passes a tensor as its `data_ptr()`, and kernels may load pointers that host code wrote
into a tensor (a grouped GEMM's table of operand addresses). So the global address of every byte
is its host address: each argument's whole storage is mapped (shared, not copied) at the address
it has on the host, and an access to memory no argument names maps the live CPU tensor / numpy
array that owns it (found among Python's objects) or faults as before."""
from __future__ import annotations

import ctypes
import gc
import sys
import warnings

import numpy as np

from ptxsim.errors import OperandError


def is_tensor(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def address_of(obj) -> int:
    """The host address a pointer argument stands for."""
    if obj is None:
        return 0
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if is_tensor(obj):
        if obj.device.type != "cpu":
            raise OperandError(f"a tensor on '{obj.device}' was passed to a kernel running on "
                               "ptxsim, which reads CPU tensors only (move it with .cpu())")
        return int(obj.data_ptr())
    if isinstance(obj, np.ndarray):
        return int(obj.__array_interface__["data"][0])
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    raise OperandError(f"cannot pass a {type(obj).__name__} as a pointer (a CPU torch tensor, a "
                       "numpy array or an integer address)")


def extent_of(obj) -> tuple[int, int] | None:
    """[lo, hi) host bytes that `obj` (a pointer argument) belongs to: a tensor's whole storage,
    a numpy array's whole base allocation; None for integers and empty objects."""
    if is_tensor(obj):
        st = obj.untyped_storage()
        lo, n = int(st.data_ptr()), int(st.nbytes())
        return (lo, lo + n) if n and lo else None
    if isinstance(obj, np.ndarray):
        root = obj
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root.flags.c_contiguous and root.nbytes:
            lo = int(root.__array_interface__["data"][0])
            return lo, lo + root.nbytes
        if obj.size == 0:
            return None
        lo = hi = int(obj.__array_interface__["data"][0])
        for n, s in zip(obj.shape, obj.strides):
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
        return lo, hi + obj.itemsize
    base = getattr(obj, "base", None)             # triton.reinterpret's TensorWrapper
    if base is not None and base is not obj and (is_tensor(base) or isinstance(base, np.ndarray)):
        return extent_of(base)
    return None


def _view(lo: int, hi: int) -> np.ndarray:
    """A writable uint8 numpy array over host bytes [lo, hi) (memory owned elsewhere)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))


def _merge(extents):
    out = []
    for lo, hi, name in sorted(extents):
        if out and lo < out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]), out[-1][2])
        else:
            out.append((lo, hi, name))
    return out


class HostMemory:
    """Maps the storages of a launch's arguments into its GlobalMemory at their host addresses,
    keeping the objects alive for the launch; then serves misses from live tensors / arrays."""

    def __init__(self, gmem, objects):
        self.gmem, self.keep = gmem, list(objects)
        ext = []
        for name, obj in objects:
            e = extent_of(obj)
            if e is not None:
                ext.append((*e, name))
        for lo, hi, name in _merge(ext):
            gmem.map(_view(lo, hi), name, address=lo)
        gmem.resolver = self.miss
        self.found: list[str] = []

    def miss(self, address: int, size: int) -> bool:
        """Map the live CPU tensor / numpy array that holds [address, address+size), when the
        launch's memory holds a pointer into it (a table of pointers the host wrote); an
        address nothing points to stays a fault (an out-of-bounds access the hardware would
        hide by reading a neighbour)."""
        # the executor sets the objects older than the launch aside from the collector
        # (gc.freeze), and gc.get_objects() lists only the collector's: look at all of them
        frozen = gc.get_freeze_count()
        if frozen:
            gc.unfreeze()
        try:
            objects = gc.get_objects()
        finally:
            if frozen:
                gc.freeze()
        with warnings.catch_warnings():              # torch's deprecated aliases warn on touch
            warnings.simplefilter("ignore")
            found = self._owner(objects, address, size)
        if found is None:
            return False
        obj, (lo, hi) = found
        if not self._pointed_to(lo, hi):
            return False
        for b in self.gmem.buffers:                   # map only the part not mapped yet
            if b.end <= address:
                lo = max(lo, b.end)
            elif b.base > address:
                hi = min(hi, b.base)
        if address + size > hi:
            return False
        name = f"host {type(obj).__name__} {tuple(obj.shape)}"
        self.gmem.map(_view(lo, hi), name, address=lo)
        self.keep.append((name, obj))
        self.found.append(name)
        return True

    @staticmethod
    def _owner(objects, address: int, size: int):
        for obj in objects:
            try:
                if not (is_tensor(obj) or isinstance(obj, np.ndarray)):
                    continue
                if is_tensor(obj) and obj.device.type != "cpu":
                    continue
                e = extent_of(obj)
            except Exception:                         # noqa: BLE001 - a half-built object
                continue
            if e is not None and e[0] <= address and address + size <= e[1]:
                return obj, e
        return None

    def _pointed_to(self, lo: int, hi: int) -> bool:
        """Whether some 8-byte word of the mapped memory holds an address in [lo, hi)."""
        for b in self.gmem.buffers:
            n = b.nbytes // 8 * 8
            if n == 0:
                continue
            skew = (-b.base) % 8                      # pointers are stored 8-byte aligned
            words = b.u8[skew:skew + (b.nbytes - skew) // 8 * 8].view(np.uint64)
            if np.any((words >= np.uint64(lo)) & (words < np.uint64(hi))):
                return True
        return False


# Triton type names of numpy dtypes (as Triton names the torch dtypes of the same format)
NUMPY_TYPES = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "bfloat16": "bf16",
               "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "bool": "u1", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
               "uint32": "u32", "uint64": "u64"}


def numpy_specialization(arg: np.ndarray, is_const: bool, align: bool):
    """(type, attribute) of a numpy array argument, as Triton's specializer gives a tensor:
    '*fp32' / '*kfp32' (const), 'D' when the address is 16-byte aligned (and align is on)."""
    name = NUMPY_TYPES.get(arg.dtype.name)
    if name is None:
        raise OperandError(f"a numpy array of dtype {arg.dtype} has no Triton element type "
                           f"(known: {', '.join(NUMPY_TYPES)})")
    ptr = address_of(arg)
    return ("*k" if is_const else "*") + name, "D" if align and ptr % 16 == 0 else ""


def install_numpy_specialization() -> None:
    """Let `@triton.jit` kernels take numpy arrays (Triton's own specializer knows only objects
    with data_ptr() and a torch dtype): wraps triton.runtime.jit's specializer, which binders
    made afterwards use. Everything but numpy arrays goes to Triton's unchanged."""
    import triton.runtime.jit as jit
    native = jit.native_specialize_impl
    if getattr(native, "_ptxsim", False):
        return

    def specialize(backend, arg, is_const, specialize_value, align):
        if isinstance(arg, np.ndarray):
            return numpy_specialization(arg, is_const, align)
        return native(backend, arg, is_const, specialize_value, align)
    specialize._ptxsim = True
    jit.native_specialize_impl = specialize
