"""State spaces of a kernel launch and vectorised ld / st over them (PTX ISA 5.1, 6.4, 9.7.9.8-9).

One `Memory` holds every space of the CTAs that run in step:

| space           | storage                               | address                               |
|-----------------|---------------------------------------|---------------------------------------|
| global          | the user's numpy arrays / CPU tensors | fake device address (GLOBAL_BASE ...) |
| shared::cta     | `shared.data[cta, offset]` (uint8)    | `rank << 24 | offset`: the CTA's own  |
|                 |                                       | rank in the cluster, byte offset      |
| shared::cluster | same array, CTA chosen by rank        | `rank << 24 | offset`                 |
| local           | `local.data[thread, offset]`          | byte offset in the thread's local mem |
| param           | kernel parameter bytes (read-only)    | byte offset                           |
| const           | bank-0 constant bytes (read-only)     | byte offset                           |
| generic         | windows onto the above (`cvta`)       | see `WINDOWS`                         |

Addresses are invented but deterministic: the PTX ISA leaves their values to the implementation
(5.1.6 / 5.1.7 name only the windows). A .shared::cta address is also a valid .shared::cluster
address naming the executing CTA (5.1.5): a CTA's own shared addresses carry its
%cluster_ctarank in bits [24, 28), as on the hardware, where CUTLASS's 2-SM kernels clear bit 24
of their own mbarrier's address to name the even CTA of the pair (`Sm100MmaPeerBitMask`, the PTX
of CUTLASS example 70); `mapa` puts the target rank there. Without a cluster the rank is 0 and
an address is the plain offset.

Accesses are vectorised: one call per warp instruction (or per several CTAs), `addr` and `thread`
are 1-D arrays over the participating threads, `mask` selects the active ones. Inactive threads
are neither checked nor written, and read as zero.
"""
from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import LaunchConfigError, MemoryAccessError, MisalignedAddress, OperandError

# ---------------------------------------------------------------------------------------------
# Address map (deterministic inventions; see module docstring)
# ---------------------------------------------------------------------------------------------
GLOBAL_BASE = 0x7F00_0000_0000       # first global buffer (CUDA's UVA heap on Linux looks alike)
GLOBAL_ALIGN = 256                   # cudaMalloc returns 256-byte aligned pointers
GLOBAL_GUARD = 256                   # unmapped bytes between buffers so overruns fault
WINDOW_SIZE = 1 << 32
WINDOWS: dict[str, int] = {          # generic-address window bases (cvta)
    "shared": 0x7E00_0000_0000,      # + shared::cluster address
    "local": 0x7D00_0000_0000,       # + local offset of the executing thread
    "param": 0x7C00_0000_0000,       # + kernel-parameter offset (cvta.param, PTX 7.7)
    "const": 0x7B00_0000_0000,       # + const bank-0 offset
}
CLUSTER_RANK_SHIFT = 24              # shared address: rank << 24 | offset
CLUSTER_OFFSET_MASK = (1 << CLUSTER_RANK_SHIFT) - 1

# sm_100 limits (CUDA C Programming Guide, compute capability 10.0 table)
MAX_SHARED_PER_CTA = 232448          # 227 KB opt-in dynamic + static
MAX_STATIC_SHARED = 48 * 1024

ACCESS_SIZES = (1, 2, 4, 8, 16)      # .b8 .. .b128
VECTOR_LENGTHS = (1, 2, 4, 8)        # scalar, .v2, .v4, .v8 (.v8 only up to 32 bytes, sm_100)
_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# element-wide (typed) gathers / scatters reinterpret bytes in the host's order; PTX memory is
# little-endian, so they are used only on a little-endian host (else the byte-wise path runs)
_TYPED = sys.byteorder == "little"
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


def _typed_view(u8: np.ndarray, size: int) -> np.ndarray | None:
    """`u8` (1-D, contiguous) as `size`-byte unsigned elements (a view; trailing bytes that do
    not fill an element dropped), or None where a typed access does not apply."""
    if not _TYPED or size not in _SHIFT or not u8.flags.c_contiguous:
        return None
    return u8[:u8.size - u8.size % size].view(_DTYPES[size])


def _as_u64(addr) -> np.ndarray:
    a = np.asarray(addr)
    if a.dtype.kind == "i":
        a = a.astype(np.int64).view(np.uint64)
    return np.atleast_1d(a.astype(np.uint64, copy=False))


def _check_access_shape(size: int, vec: int, space: str = "global") -> None:
    if size not in ACCESS_SIZES:
        raise OperandError(f"access size {size} bytes is not one of {ACCESS_SIZES}")
    if vec not in VECTOR_LENGTHS:
        raise OperandError(f"vector length {vec} is not one of {VECTOR_LENGTHS}")
    if size * vec > 32 or (size == 16 and vec != 1):
        raise OperandError(f"a .v{vec} access of {size}-byte elements ({size * vec} bytes) is "
                           "larger than the 32 bytes ld/st move per thread (9.7.9.8)")
    if size * vec > 16 and space not in ("global", "generic"):
        # ptxas 13.0: "global state space expected for feature '256 bit wide load/store'"
        raise OperandError(f"a {8 * size * vec}-bit access of the {space} space: 256-bit loads "
                           "and stores exist for .global only")


def bytes_to_elements(raw: np.ndarray, size: int, vec: int) -> np.ndarray:
    """(n, size*vec) uint8 -> (n, vec) uintN; 16-byte elements -> (n, vec, 2) uint64 (low first)."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    if size == 16:
        return raw.view("<u8").reshape(raw.shape[0], vec, 2)
    return raw.view(np.dtype(_DTYPES[size]).newbyteorder("<")).reshape(raw.shape[0], vec)


def elements_to_bytes(values, size: int, vec: int, n: int) -> np.ndarray:
    """Inverse of `bytes_to_elements`; scalars and (n,) arrays broadcast to (n, vec)."""
    if size == 16:
        v = np.broadcast_to(np.asarray(values, dtype=np.uint64), (n, vec, 2))
    else:
        v = np.asarray(values)
        if v.dtype.kind == "f":      # raw bits of a float array of the same width
            if v.dtype.itemsize != size:
                raise OperandError(f"{v.dtype} values stored by a {size}-byte access; pass raw "
                                   "bits")
            v = v.view(_DTYPES[size])
        v = v.astype(_DTYPES[size], copy=False)  # signed integers wrap modulo 2^(8*size)
        if v.ndim == 1 and vec == 1 and v.shape[0] == n:
            v = v[:, None]
        if v.shape != (n, vec):
            v = np.broadcast_to(v, (n, vec))
    v = np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<"), copy=False)
    return v.view(np.uint8).reshape(n, size * vec)


# ---------------------------------------------------------------------------------------------
# Global memory: user buffers at fake device addresses
# ---------------------------------------------------------------------------------------------
@dataclass
class Buffer:
    name: str
    base: int
    nbytes: int
    u8: np.ndarray          # writable uint8 view sharing memory with the user's array
    owner: object           # the array / tensor the user passed

    @property
    def end(self) -> int:
        return self.base + self.nbytes


def _byte_view(array) -> tuple[np.ndarray, object]:
    owner = array
    if type(array).__module__.startswith("torch"):
        if array.device.type != "cpu":
            raise OperandError(f"tensor on device '{array.device}': ptxsim maps CPU tensors only")
        if not array.is_contiguous():
            raise OperandError("a non-contiguous tensor cannot be mapped as one global buffer; "
                               "pass tensor.contiguous()")
        flat = array.reshape(-1)
        if flat.numel() == 0:
            return np.zeros(0, np.uint8), owner
        array = flat.view(__import__("torch").uint8).numpy()   # shares memory, any dtype
    if not isinstance(array, np.ndarray):
        raise OperandError(f"a global buffer must be a numpy array or CPU torch tensor, not "
                           f"{type(array).__name__}")
    if not array.flags.c_contiguous:
        raise OperandError("a non-contiguous array cannot be mapped as one global buffer; pass "
                           "np.ascontiguousarray(a) and read the result from that copy")
    if not array.flags.writeable:
        raise OperandError("a read-only array cannot be mapped as a global buffer")
    return array.reshape(-1).view(np.uint8), owner


class GlobalMemory:
    """The global state space: each mapped array is one allocation at a fake device address."""

    def __init__(self):
        self.buffers: list[Buffer] = []
        self._next = GLOBAL_BASE
        # memoised TMA row plans (tensormap._row_plan): they name buffers and offsets, so they
        # are dropped whenever a buffer is mapped
        self.plans: dict = {}
        self._bases = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)
        self._base_list: list[int] = []
        # called with an address no buffer holds, before the access faults: it may map the
        # memory there (the CUDA driver model maps host memory a program hands over late, e.g.
        # a torch tensor's storage) and return True to retry
        self.resolver = None
        # when a list: (addresses, size) of every global atom / red is appended (a distributed
        # launch's merge refuses two workers' atomics on one address, ptxsim.distributed)
        self.atomic_log: list | None = None

    def map(self, array, name: str | None = None, *, address: int | None = None) -> int:
        """Map a numpy array / CPU tensor (shared, not copied); returns its device address:
        the next free fake address, or `address` when given (the CUDA driver model maps its
        allocations and registered host memory at their own host addresses; ptxsim.cuda).
        A mapping that overlaps another one or a generic-address window is refused."""
        u8, owner = _byte_view(array)
        if address is None:
            base = self._next
            self._next = -(-(base + max(u8.size, 1) + GLOBAL_GUARD) // GLOBAL_ALIGN) * GLOBAL_ALIGN
        else:
            base = int(address)
            end = base + max(u8.size, 1)
            for b in self.buffers:
                if base < b.base + max(b.nbytes, 1) and b.base < end:
                    raise OperandError(f"global mapping [{base:#x}, {end:#x}) overlaps buffer "
                                       f"'{b.name}' [{b.base:#x}, {b.end:#x})")
            for key, w in WINDOWS.items():
                if base < w + WINDOW_SIZE and w < end:
                    raise OperandError(f"global mapping [{base:#x}, {end:#x}) overlaps the "
                                       f"generic {key} window at {w:#x}")
        buf = Buffer(name or f"buffer{len(self.buffers)}", base, u8.size, u8, owner)
        self.buffers.append(buf)
        self._reindex()
        return base

    def unmap(self, address: int) -> Buffer:
        """Remove the mapping that starts at `address` (cuMemFree); returns it. Later accesses
        to its addresses fault like any unmapped address."""
        for i, b in enumerate(self.buffers):
            if b.base == address:
                del self.buffers[i]
                self._reindex()
                return b
        raise OperandError(f"no global buffer starts at {address:#x}")

    def _reindex(self) -> None:
        # buffers sorted by base (locate's binary search); memoised TMA plans name buffer
        # indices, so they are dropped
        self.buffers.sort(key=lambda b: b.base)
        self._bases = np.array([b.base for b in self.buffers], np.uint64)
        self._ends = np.array([b.end for b in self.buffers], np.uint64)
        self._base_list = [b.base for b in self.buffers]
        self.plans.clear()

    def buffer_at(self, address: int) -> Buffer | None:
        """The buffer containing `address`, or None."""
        i = bisect.bisect_right(self._base_list, int(address)) - 1
        if i >= 0 and self.buffers[i].base <= address < self.buffers[i].end:
            return self.buffers[i]
        return None

    def address_of(self, array) -> int:
        for b in self.buffers:
            if b.owner is array:
                return b.base
        raise OperandError("array is not mapped in global memory")

    def describe(self, address: int) -> str:
        """'buffer 'A' [base, end)' of the buffer containing or nearest to `address`."""
        if not self.buffers:
            return "no global buffer is mapped"
        dist = [0 if b.base <= address < b.end else min(abs(address - b.base),
                                                          abs(address - (b.end - 1)))
                for b in self.buffers]
        b = self.buffers[int(np.argmin(dist))]
        where = ("inside" if b.base <= address < b.end
                 else "past the end" if address >= b.end else "before the start")
        return (f"offset {address - b.base:+d} ({where}) of buffer '{b.name}' "
                f"[{b.base:#x}, {b.end:#x}) of {b.nbytes} bytes")

    def locate(self, addr: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(buffer index, offset) of each address; raises MemoryAccessError if any access of
        `size` bytes leaves every buffer."""
        addr = _as_u64(addr)
        idx = np.searchsorted(self._bases, addr, side="right").astype(np.int64) - 1
        safe = np.maximum(idx, 0)
        ok = (idx >= 0) & (addr + np.uint64(size) <= self._ends[safe] if len(self.buffers)
                           else np.zeros(addr.shape, bool))
        if not ok.all():
            bad = int(addr[np.argmin(ok)])
            if self.resolver is not None and self.resolver(bad, size):
                return self.locate(addr, size)
            raise MemoryAccessError(f"global access of {size} bytes outside every mapped buffer: "
                                    f"{self.describe(bad)}", address=bad, space="global")
        return safe, (addr - self._bases[safe]).astype(np.int64)

    def _one_buffer(self, addr, size: int):
        """(buffer, int64 offsets) when every access of `size` bytes lies inside one buffer
        (the usual case: decided from the smallest and largest address), else (None, None)."""
        addr = _as_u64(addr)
        if not addr.size or not self.buffers:
            return None, None
        lo, hi = int(addr.min()), int(addr.max())
        i = bisect.bisect_right(self._base_list, lo) - 1
        if i < 0 or hi + size > self.buffers[i].end:
            return None, None
        b = self.buffers[i]
        return b, (addr - np.uint64(b.base)).view(np.int64)

    def read(self, addr, size: int, *, aligned: bool = False) -> np.ndarray:
        """Bytes [addr, addr+size) of each address: (n, size) uint8. `aligned`: the caller
        has checked that every address is a multiple of `size` (ld / st do)."""
        b, off = self._one_buffer(addr, size)
        if b is not None:
            typed = _typed_view(b.u8, size) if aligned else None
            if typed is not None:
                return typed[off >> _SHIFT[size]].view(np.uint8).reshape(off.size, size)
            return b.u8[off[:, None] + np.arange(size)]
        idx, off = self.locate(addr, size)
        cols = np.arange(size)
        if idx.size and (idx == idx[0]).all():          # the usual case: one buffer
            return self.buffers[idx[0]].u8[off[:, None] + cols]
        out = np.empty((off.size, size), np.uint8)
        for b in np.unique(idx):
            sel = idx == b
            out[sel] = self.buffers[b].u8[off[sel, None] + cols]
        return out

    def write(self, addr, data: np.ndarray, *, aligned: bool = False) -> None:
        """Store (n, size) uint8 rows; for equal addresses the last row wins (deterministic
        choice; the hardware keeps one unspecified writer, 9.7.9.9). `aligned` as in read."""
        size = data.shape[1]
        b, off = self._one_buffer(addr, size)
        if b is not None:
            typed = _typed_view(b.u8, size) if aligned else None
            if typed is not None:
                typed[off >> _SHIFT[size]] = np.ascontiguousarray(data).view(typed.dtype)[:, 0]
            else:
                b.u8[off[:, None] + np.arange(size)] = data
            return
        idx, off = self.locate(addr, size)
        cols = np.arange(size)
        if idx.size and (idx == idx[0]).all():
            self.buffers[idx[0]].u8[off[:, None] + cols] = data
            return
        for b in np.unique(idx):
            sel = idx == b
            self.buffers[b].u8[off[sel, None] + cols] = data[sel]

    def read_block(self, address: int, nbytes: int) -> np.ndarray:
        idx, off = self.locate(np.array([address], np.uint64), nbytes)
        return self.buffers[idx[0]].u8[off[0]:off[0] + nbytes].copy()

    def write_block(self, address: int, data: np.ndarray) -> None:
        idx, off = self.locate(np.array([address], np.uint64), data.size)
        self.buffers[idx[0]].u8[off[0]:off[0] + data.size] = data.reshape(-1)


# ---------------------------------------------------------------------------------------------
# Per-CTA and per-thread spaces
# ---------------------------------------------------------------------------------------------
class SharedMemory:
    """shared::cta of every resident CTA, `data[cta, offset]`; CTAs of one cluster are
    consecutive (cta = cluster * cluster_size + rank), see machine/grid.py."""

    def __init__(self, n_ctas: int, static_bytes: int = 0, dynamic_bytes: int = 0,
                 cluster_size: int = 1):
        if static_bytes > MAX_STATIC_SHARED:
            raise LaunchConfigError(f"{static_bytes} bytes of static shared memory exceed the "
                                    f"{MAX_STATIC_SHARED}-byte limit")
        if static_bytes + dynamic_bytes > MAX_SHARED_PER_CTA:
            raise LaunchConfigError(f"{static_bytes} static + {dynamic_bytes} dynamic bytes of "
                                    f"shared memory exceed sm_100's {MAX_SHARED_PER_CTA} per CTA")
        if n_ctas % cluster_size:
            raise LaunchConfigError(f"{n_ctas} resident CTAs are not whole clusters of "
                                    f"{cluster_size}")
        self.static_bytes, self.dynamic_bytes = static_bytes, dynamic_bytes
        self.size = static_bytes + dynamic_bytes
        self.cluster_size = cluster_size
        self.data = np.zeros((n_ctas, self.size), np.uint8)
        # unspecified data (machine/poison.py): per byte the origin of the unspecified value
        # that put it there (-1: clean) and the byte it wrote; None until a cp.async copies
        # through an unspecified source address. A byte is poison while it still holds what
        # was written: writes through `write` / `Memory.store_direct` clear it, and a write by
        # any other path (TMA, bulk copies) that changes it shows.
        self.poison: np.ndarray | None = None
        self.poison_bytes: np.ndarray | None = None

    @property
    def n_ctas(self) -> int:
        return self.data.shape[0]

    def cta_view(self, cta: int) -> np.ndarray:
        """The whole shared memory of one CTA (a view), as isa/ modules take it."""
        return self.data[cta]

    def resolve_cluster(self, addr, cta) -> tuple[np.ndarray, np.ndarray]:
        """shared::cluster address -> (target CTA index, offset)."""
        addr = _as_u64(addr)
        cta = np.broadcast_to(np.asarray(cta, np.int64), addr.shape)
        field = (addr >> np.uint64(CLUSTER_RANK_SHIFT)).astype(np.int64)
        off = (addr & np.uint64(CLUSTER_OFFSET_MASK)).astype(np.int64)
        bad = field >= self.cluster_size
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(f"shared::cluster address names CTA rank {field[i]} but "
                                    f"the cluster has {self.cluster_size} CTA"
                                    f"{'s' if self.cluster_size > 1 else ''}",
                                    address=int(addr[i]), space="shared::cluster")
        first = cta - cta % self.cluster_size
        return first + field, off

    def resolve_own(self, addr, cta) -> tuple[np.ndarray, np.ndarray]:
        """shared::cta address of the executing CTA `cta` -> (cta, offset); an address whose
        rank field names another CTA of the cluster is outside the .shared::cta window (5.1.5)."""
        target, off = self.resolve_cluster(addr, cta)
        cta = np.broadcast_to(np.asarray(cta, np.int64), target.shape)
        bad = target != cta
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(f"a .shared::cta access at {int(_as_u64(addr)[i]):#x} names "
                                    f"the shared memory of CTA rank {int(target[i] % self.cluster_size)}"
                                    f", not the executing CTA's (rank {int(cta[i] % self.cluster_size)}"
                                    "): use .shared::cluster", address=int(_as_u64(addr)[i]),
                                    space="shared::cta")
        return target, off

    def mapa(self, addr, target_rank, cta) -> np.ndarray:
        """mapa.shared::cluster: the address of the same variable in CTA `target_rank`
        (9.7.9.21). `addr` is a shared::cta or shared::cluster address."""
        addr = _as_u64(addr)
        rank = np.broadcast_to(np.asarray(target_rank, np.int64), addr.shape)
        if ((rank < 0) | (rank >= self.cluster_size)).any():
            r = int(rank[np.argmax((rank < 0) | (rank >= self.cluster_size))])
            raise MemoryAccessError(f"mapa to CTA rank {r} outside a cluster of "
                                    f"{self.cluster_size}", space="shared::cluster")
        off = addr & np.uint64(CLUSTER_OFFSET_MASK)
        return off | (rank.astype(np.uint64) << np.uint64(CLUSTER_RANK_SHIFT))

    def getctarank(self, addr, cta) -> np.ndarray:
        """getctarank: %cluster_ctarank of the CTA a shared::cluster address points into."""
        target, _ = self.resolve_cluster(addr, cta)
        return (target % self.cluster_size).astype(np.uint32)

    def _flat(self, cta, off, size: int, space: str, addr) -> np.ndarray:
        if off.size and 0 <= int(off.min()) and int(off.max()) + size <= self.size:
            return np.asarray(cta, np.int64) * self.size + off
        bad = (off < 0) | (off + size > self.size)
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(f"{space} access of {size} bytes at offset {int(off[i])} "
                                    f"beyond the CTA's {self.size} bytes of shared memory "
                                    f"({self.static_bytes} static + {self.dynamic_bytes} dynamic)",
                                    address=int(_as_u64(addr)[i]), space=space)
        return np.asarray(cta, np.int64) * self.size + off

    def _typed(self, size: int, aligned: bool):
        # flat = cta * self.size + offset is a multiple of `size` when the offset is (checked
        # by the caller: `aligned`) and so is the per-CTA size
        if not aligned or self.size % size:
            return None
        return _typed_view(self.data.reshape(-1), size)

    def read(self, flat: np.ndarray, size: int, *, aligned: bool = False) -> np.ndarray:
        typed = self._typed(size, aligned)
        if typed is not None:
            return typed[flat >> _SHIFT[size]].view(np.uint8).reshape(flat.size, size)
        return self.data.reshape(-1)[flat[:, None] + np.arange(size)]

    def write(self, flat: np.ndarray, data: np.ndarray, *, aligned: bool = False) -> None:
        if self.poison is not None:
            self.clear_poison(flat, data.shape[1])
        typed = self._typed(data.shape[1], aligned)
        if typed is not None:
            typed[flat >> _SHIFT[data.shape[1]]] = \
                np.ascontiguousarray(data).view(typed.dtype)[:, 0]
            return
        self.data.reshape(-1)[flat[:, None] + np.arange(data.shape[1])] = data


    # -- unspecified data (machine/poison.py) ------------------------------------------------
    def mark_poison(self, flat: np.ndarray, data: np.ndarray, origin: np.ndarray) -> None:
        """Bytes at flat offsets `flat` (n, k) hold `data` (n, k) uint8, unspecified with the
        per-row origin `origin` (n,)."""
        if self.poison is None:
            self.poison = np.full(self.data.size, -1, np.int32)
            self.poison_bytes = np.zeros(self.data.size, np.uint8)
        self.poison[flat] = np.broadcast_to(np.asarray(origin, np.int32)[:, None], flat.shape)
        self.poison_bytes[flat] = data

    def clear_poison(self, flat: np.ndarray, size: int) -> None:
        """Writes of `size` bytes at flat offsets `flat` (n,): those bytes are clean."""
        self.poison[np.asarray(flat, np.int64)[:, None] + np.arange(size)] = -1

    def poison_of(self, flat: np.ndarray) -> np.ndarray:
        """The origin of each byte at flat offsets `flat` (any shape), -1 where clean."""
        if self.poison is None:
            return np.full(np.shape(flat), -1, np.int32)
        o = self.poison[flat]
        return np.where(self.data.reshape(-1)[flat] == self.poison_bytes[flat], o, -1)


class FlatSpace:
    """One byte array per owner (local: per thread) or one for all (param, const)."""

    def __init__(self, name: str, data: np.ndarray, writable: bool):
        self.name, self.data, self.writable = name, data, writable

    def _flat(self, owner, off, size: int, addr) -> np.ndarray:
        width = self.data.shape[-1]
        bad = (off < 0) | (off + size > width)
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(f"{self.name} access of {size} bytes at offset {int(off[i])} "
                                    f"beyond the {width} bytes of {self.name} space",
                                    address=int(_as_u64(addr)[i]), space=self.name)
        if self.data.ndim == 1:
            return off
        return np.asarray(owner, np.int64) * width + off


# ---------------------------------------------------------------------------------------------
# The façade the executor uses
# ---------------------------------------------------------------------------------------------
SPACES = ("global", "shared::cta", "shared::cluster", "local", "param", "const", "generic")
_ALIASES = {"shared": "shared::cta", "param::entry": "param", "param::func": "param"}


class Memory:
    """Every state space of the CTAs that run in step. Threads are numbered
    `cta * threads_per_cta + tid`; `thread` arrays in the calls use that number."""

    def __init__(self, *, n_ctas: int = 1, threads_per_cta: int = 32, cluster_size: int = 1,
                 static_shared: int = 0, dynamic_shared: int = 0, local_bytes: int = 0,
                 param: bytes | np.ndarray = b"", const: bytes | np.ndarray = b"",
                 global_memory: GlobalMemory | None = None):
        self.threads_per_cta = threads_per_cta
        self.global_ = global_memory if global_memory is not None else GlobalMemory()
        self.shared = SharedMemory(n_ctas, static_shared, dynamic_shared, cluster_size)
        self.local = FlatSpace("local", np.zeros((n_ctas * threads_per_cta, local_bytes),
                                                 np.uint8), True)
        self.param = FlatSpace("param", np.frombuffer(bytes(param), np.uint8).copy(), False)
        self.const = FlatSpace("const", np.frombuffer(bytes(const), np.uint8).copy(), False)

    # -- generic addressing (5.1.6, cvta 9.7.9.18) -------------------------------------------
    def cvta_to_generic(self, space: str, addr) -> np.ndarray:
        space = _ALIASES.get(space, space)
        addr = _as_u64(addr)
        key = {"global": None, "shared::cta": "shared", "shared::cluster": "shared",
               "local": "local", "param": "param", "const": "const"}[space]
        return addr if key is None else addr + np.uint64(WINDOWS[key])

    def cvta_from_generic(self, space: str, addr) -> np.ndarray:
        """cvta.to.space: a generic address outside the window is undefined -> error."""
        space = _ALIASES.get(space, space)
        addr = _as_u64(addr)
        kinds = self.classify(addr)
        want = {"global": "global", "shared::cta": "shared", "shared::cluster": "shared",
                "local": "local", "param": "param", "const": "const"}[space]
        if (kinds != want).any():
            i = int(np.argmax(kinds != want))
            raise MemoryAccessError(f"cvta.to.{space} of a generic address in the {kinds[i]} "
                                    "window", address=int(addr[i]), space="generic")
        return addr if want == "global" else addr - np.uint64(WINDOWS[want])

    def classify(self, addr) -> np.ndarray:
        """Which window each generic address falls in ('global' outside all windows)."""
        addr = _as_u64(addr)
        out = np.full(addr.shape, "global", dtype=object)
        for key, base in WINDOWS.items():
            out[(addr >= np.uint64(base)) & (addr < np.uint64(base + WINDOW_SIZE))] = key
        return out

    def isspacep(self, space: str, addr, cta=0) -> np.ndarray:
        """isspacep.space (9.7.9.19): does each generic address fall in that window?
        .shared::cta holds only for the executing CTA's own shared memory (`cta`)."""
        space = _ALIASES.get(space, space)
        want = {"global": "global", "shared::cta": "shared", "shared::cluster": "shared",
                "local": "local", "param": "param", "const": "const"}[space]
        addr = _as_u64(addr)
        hit = self.classify(addr) == want
        if space == "shared::cta" and hit.any():
            sub = addr - np.uint64(WINDOWS["shared"])
            field = (sub >> np.uint64(CLUSTER_RANK_SHIFT)).astype(np.int64)
            cta = np.broadcast_to(np.asarray(cta, np.int64), addr.shape)
            own = field == cta % self.shared.cluster_size
            hit &= own
        return hit

    # -- ld / st ------------------------------------------------------------------------------
    def _resolve(self, space, addr, size, thread, writing):
        """-> list of (selector, reader(sel)->bytes, writer(sel, bytes)) per concrete space."""
        space = _ALIASES.get(space, space)
        if space not in SPACES:
            raise OperandError(f"unknown state space '{space}'")
        if space == "generic":
            kinds = self.classify(addr)
            if size > 16 and (kinds != "global").any():
                i = int(np.argmax(kinds != "global"))
                raise MemoryAccessError(f"a {8 * size}-bit generic access resolves to the "
                                        f"{kinds[i]} window; 256-bit accesses exist for global "
                                        "memory only", address=int(addr[i]), space="generic",
                                        thread=int(thread[i]))
            parts = []
            for key, concrete in (("global", "global"), ("shared", "shared::cluster"),
                                  ("local", "local"), ("param", "param"), ("const", "const")):
                sel = kinds == key
                if sel.any():
                    sub = addr[sel] - (np.uint64(0) if key == "global" else np.uint64(WINDOWS[key]))
                    parts.extend((np.flatnonzero(sel)[s], f)
                                 for s, f in self._resolve(concrete, sub, size, thread[sel],
                                                           writing))
            return parts
        everyone = np.arange(addr.size)
        if space == "global":
            return [(everyone, ("global", addr))]
        if space in ("shared::cta", "shared::cluster"):
            cta = thread // self.threads_per_cta
            if space == "shared::cta":
                target, off = self.shared.resolve_own(addr, cta)
            else:
                target, off = self.shared.resolve_cluster(addr, cta)
            return [(everyone, ("shared", self.shared._flat(target, off, size, space, addr)))]
        store = {"local": self.local, "param": self.param, "const": self.const}[space]
        if writing and not store.writable:
            raise MemoryAccessError(f"st to the read-only {space} space", address=int(addr[0]),
                                    space=space)
        owner = thread if space == "local" else None
        return [(everyone, (space, store._flat(owner, addr.astype(np.int64), size, addr)))]

    def _check(self, space, addr, size, vec, mask, thread):
        _check_access_shape(size, vec, _ALIASES.get(space, space))
        addr = _as_u64(addr)
        if thread is None:
            thread = np.arange(addr.size, dtype=np.int64)
        elif not (isinstance(thread, np.ndarray) and thread.dtype == np.int64
                  and thread.shape == addr.shape):
            thread = np.broadcast_to(np.asarray(thread, np.int64), addr.shape)
        active = (np.ones(addr.shape, bool) if mask is None
                  else np.broadcast_to(np.asarray(mask, bool), addr.shape))
        n_threads = self.shared.n_ctas * self.threads_per_cta
        if thread.size and (int(thread.min()) < 0 or int(thread.max()) >= n_threads):
            raise OperandError(f"thread numbers must be 0 .. {n_threads - 1} "
                               f"({self.shared.n_ctas} CTAs x {self.threads_per_cta} threads); "
                               "pass thread= for each address")
        a, t = (addr, thread) if mask is None or active.all() else (addr[active],
                                                                      thread[active])
        total = size * vec                       # a power of two (ACCESS_SIZES, VECTOR_LENGTHS)
        if (a & np.uint64(total - 1)).any():
            mis = (a % np.uint64(total)) != 0
            i = int(np.argmax(mis))
            raise MisalignedAddress(f"{space} access of {total} bytes at an address not aligned "
                                    f"to {total}", address=int(a[i]), space=space,
                                    thread=int(t[i]))
        return a, t, active, total

    def _write_part(self, kind: str, where, data) -> None:
        """Write per-thread byte rows `data` (n, size) at `where` of one space (atomics)."""
        if kind == "global":
            self.global_.write(where, data)
        elif kind == "shared":
            self.shared.write(where, data)
        else:
            self.local.data.reshape(-1)[where[:, None] + np.arange(data.shape[1])] = data

    def _read_parts(self, parts, total, n, aligned=False):
        """`aligned`: every address is a multiple of `total` (checked by `_check`)."""
        if len(parts) == 1 and len(parts[0][0]) == n:      # one space for every thread
            kind, where = parts[0][1]
            if kind == "global":
                return self.global_.read(where, total, aligned=aligned)
            if kind == "shared":
                return self.shared.read(where, total, aligned=aligned)
        out = np.zeros((n, total), np.uint8)
        for sel, (kind, where) in parts:
            if kind == "global":
                out[sel] = self.global_.read(where, total, aligned=aligned)
            elif kind == "shared":
                out[sel] = self.shared.read(where, total, aligned=aligned)
            else:
                store = {"local": self.local, "param": self.param, "const": self.const}[kind]
                out[sel] = store.data.reshape(-1)[where[:, None] + np.arange(total)]
        return out

    def load_bytes(self, space: str, addr, size: int, *, vec: int = 1, mask=None,
                   thread=None) -> np.ndarray:
        """ld.space of `vec` elements of `size` bytes per thread -> (n, size*vec) uint8."""
        try:
            return self._load_bytes(space, addr, size, vec, mask, thread)
        except MemoryAccessError as e:
            raise _blame(e, addr, thread, size * vec, "read") from None

    def _load_bytes(self, space, addr, size, vec, mask, thread):
        a, t, active, total = self._check(space, addr, size, vec, mask, thread)
        if a.size and a.size == active.size:     # every thread active
            return self._read_parts(self._resolve(space, a, total, t, False), total, a.size,
                                    aligned=True)
        out = np.zeros((active.size, total), np.uint8)
        if a.size:
            out[active] = self._read_parts(self._resolve(space, a, total, t, False), total, a.size,
                                           aligned=True)
        return out

    # -- the executor's direct path ------------------------------------------------------------
    # ld / st of global or shared::cta memory by every executing thread, in the common case
    # only: one global buffer / shared offsets inside the CTA's bytes, every address aligned,
    # a little-endian host. Same values as `load` / `store` (element-typed gathers / scatters of
    # the same bytes, the scatter in thread order as theirs); None / False sends the access to
    # `load` / `store`, which decide everything else and raise their errors. `thread` must be
    # the executing threads (sorted, int64, in range: the executor's index arrays);
    # `direct_ok(space, size, vec)` must hold (decided once per instruction).
    @staticmethod
    def direct_ok(space: str, size: int, vec: int) -> bool:
        if not _TYPED or space not in ("global", "shared::cta") or size not in _SHIFT:
            return False
        try:
            _check_access_shape(size, vec, space)
        except OperandError:
            return False
        return True

    def _direct(self, space: str, addr: np.ndarray, size: int, vec: int, thread):
        """(typed element view, element index (n,) or (n, vec)) or None."""
        total = size * vec
        if not addr.size or addr.dtype != np.uint64 or (addr & np.uint64(total - 1)).any():
            return None
        if space == "global":
            b, off = self.global_._one_buffer(addr, total)
            if b is None:
                return None
            typed = _typed_view(b.u8, size)
        else:
            sh = self.shared
            if thread.dtype != np.int64:
                return None
            cta = thread // self.threads_per_cta
            if sh.cluster_size > 1:          # the own rank in bits 24+ (see the module doc)
                if ((addr >> np.uint64(CLUSTER_RANK_SHIFT)).view(np.int64)
                        != cta % sh.cluster_size).any():
                    return None
                addr = addr & np.uint64(CLUSTER_OFFSET_MASK)
            if sh.size % size or int(addr.max()) + total > sh.size or \
                    not sh.data.flags.c_contiguous:
                return None
            off = cta * sh.size + addr.view(np.int64)
            typed = _typed_view(sh.data.reshape(-1), size)
        if typed is None:
            return None
        i = off >> _SHIFT[size]
        return typed, (i if vec == 1 else i[:, None] + np.arange(vec))

    def load_direct(self, space: str, addr: np.ndarray, size: int, vec: int, thread):
        """(n, vec) uintN as `load` gives, or None (see above)."""
        got = self._direct(space, addr, size, vec, thread)
        if got is None:
            return None
        typed, i = got
        v = typed[i]
        return v[:, None] if vec == 1 else v

    def store_direct(self, space: str, addr: np.ndarray, values: np.ndarray, size: int,
                     vec: int, thread) -> bool:
        """`store` of (n, vec) uintN `values`; False where `store` must do it (see above)."""
        got = self._direct(space, addr, size, vec, thread)
        if got is None:
            return False
        typed, i = got
        typed[i] = values[:, 0] if vec == 1 else values
        if space != "global" and self.shared.poison is not None:
            self.shared.clear_poison(np.asarray(i, np.int64).reshape(-1) << _SHIFT[size], size)
        return True

    def load(self, space: str, addr, size: int, *, vec: int = 1, mask=None,
             thread=None) -> np.ndarray:
        """ld.space{.vN}.bSIZE*8 -> (n, vec) uintN (n, 1, 2 uint64 for .b128); see module doc."""
        return bytes_to_elements(self.load_bytes(space, addr, size, vec=vec, mask=mask,
                                                 thread=thread), size, vec)

    def store(self, space: str, addr, values, size: int, *, vec: int = 1, mask=None,
              thread=None) -> None:
        """st.space{.vN}.bSIZE*8 of `values` ((n, vec) raw bits, or broadcastable)."""
        try:
            self._store(space, addr, values, size, vec, mask, thread)
        except MemoryAccessError as e:
            raise _blame(e, addr, thread, size * vec, "write") from None

    def _store(self, space, addr, values, size, vec, mask, thread):
        a, t, active, total = self._check(space, addr, size, vec, mask, thread)
        data = elements_to_bytes(values, size, vec, active.size)
        if a.size != active.size:           # some threads inactive
            data = data[active]
        if not a.size:
            return
        for sel, (kind, where) in self._resolve(space, a, total, t, True):
            part = data if len(sel) == a.size else data[sel]   # sel: distinct, sorted
            if kind == "global":
                self.global_.write(where, part, aligned=True)
            elif kind == "shared":
                self.shared.write(where, part, aligned=True)
            else:
                store = {"local": self.local}[kind]
                store.data.reshape(-1)[where[:, None] + np.arange(total)] = part

    # -- atom / red: read-modify-write, serialised per address ---------------------------------
    def atomic(self, space: str, addr, size: int, op, operands=(), *, mask=None,
               thread=None) -> np.ndarray:
        """atom / red on `size`-byte locations (9.7.13.5-6). `op` is a name of ATOMIC_OPS or a
        function (old, *operands) -> new over raw-bit arrays (the float ops live with the
        instruction semantics). Threads that hit the same location are applied one after the
        other in thread order (any order is allowed; this one is deterministic). Returns each
        active thread's old value (the value atom writes to its destination); inactive: 0."""
        fn = ATOMIC_OPS[op] if isinstance(op, str) else op
        if size not in (2, 4, 8):
            raise OperandError(f"atom / red on {size}-byte operands: only 16, 32, 64-bit exist "
                               "here (vector and 128-bit forms are not modelled)")
        a, t, active, _ = self._check(space, addr, size, 1, mask, thread)
        dt = _DTYPES[size]
        ops = [np.broadcast_to(np.asarray(o).astype(dt), active.shape)[active] for o in operands]
        out = np.zeros(active.shape, dt)
        if not a.size:
            return out
        parts = self._resolve(space, a, size, t, True)
        if self.global_.atomic_log is not None:
            self.global_.atomic_log.extend((np.array(w, np.uint64), size)
                                           for _, (kind, w) in parts if kind == "global")
        # one key per location, then each thread's rank among the threads sharing its location
        key = np.empty(a.size, np.uint64)
        codes = {"global": 0, "shared": 1, "local": 2}
        for sel, (kind, where) in parts:     # addresses < 2^48, flat offsets < 2^48
            key[sel] = np.uint64(codes[kind] << 56) | np.asarray(where).astype(np.uint64)
        _, inv = np.unique(key, return_inverse=True)
        order = np.argsort(inv, kind="stable")
        first = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
        rank = np.empty(a.size, np.int64)
        rank[order] = np.arange(a.size) - np.repeat(first, np.diff(np.r_[first, a.size]))
        old = np.zeros(a.size, dt)
        if op == "add" and rank.max() > 0:
            # integer add commutes: old = initial + the sum of the earlier threads' operands
            init = np.zeros(a.size, dt)
            for sel, (kind, where) in parts:
                init[sel] = bytes_to_elements(self._read_parts([(np.arange(sel.size),
                                                                 (kind, where))], size,
                                                               sel.size), size, 1)[:, 0]
            b = ops[0][order]
            csum = np.cumsum(b, dtype=np.uint64).astype(dt)
            seg_start = np.repeat(first, np.diff(np.r_[first, a.size]))
            before = csum - b - np.where(seg_start > 0, csum[seg_start - 1], 0).astype(dt)
            old[order] = init[order] + before
            total = (old + ops[0]).astype(dt)
            last = np.zeros(a.size, bool)
            last[order[np.r_[first[1:] - 1, a.size - 1]]] = True     # last thread per location
            for sel, (kind, where) in parts:
                m = last[sel]
                self._write_part(kind, where[m],
                                 elements_to_bytes(total[sel][m], size, 1, int(m.sum())))
            out[active] = old
            return out
        for r in range(int(rank.max()) + 1):
            now = rank == r
            for sel, (kind, where) in parts:
                m = now[sel]
                if not m.any():
                    continue
                ids = sel[m]
                w = where[m]
                cur = bytes_to_elements(self._read_parts([(np.arange(ids.size), (kind, w))],
                                                         size, ids.size), size, 1)[:, 0]
                old[ids] = cur
                new = np.asarray(fn(cur, *[o[ids] for o in ops])).astype(dt)
                self._write_part(kind, w, elements_to_bytes(new, size, 1, ids.size))
        out[active] = old
        return out

    # -- block reads (tensor maps, bulk copies) -------------------------------------------------
    def read_block(self, space: str, address: int, nbytes: int, *, thread: int = 0) -> np.ndarray:
        """`nbytes` contiguous bytes at one address of any space (generic included), e.g. the
        128-byte tensor map a cp.async.bulk.tensor names (param, const or global, 9.7.9.25)."""
        space = _ALIASES.get(space, space)
        addr = _as_u64([address])
        t = np.array([thread], np.int64)
        if space == "generic":
            kind = self.classify(addr)[0]
            space = {"global": "global", "shared": "shared::cluster", "local": "local",
                     "param": "param", "const": "const"}[kind]
            if kind != "global":
                addr = addr - np.uint64(WINDOWS[kind])
        if space == "global":
            return self.global_.read_block(int(addr[0]), nbytes)
        ((_, (kind, where)),) = self._resolve(space, addr, nbytes, t, False)
        store = self.shared if kind == "shared" else {"local": self.local, "param": self.param,
                                                        "const": self.const}[kind]
        return store.data.reshape(-1)[int(where[0]):int(where[0]) + nbytes].copy()


def _blame(e: MemoryAccessError, addr, thread, size: int, access: str) -> MemoryAccessError:
    """Name the thread (launch thread number) whose access of `size` bytes faulted, when the
    error's address is one of the accessed addresses, and what it did (memcheck-style reports:
    ptxsim.cuda)."""
    if getattr(e, "access", None) is None:
        e.access, e.size = access, size
    if e.thread is None and e.address is not None:
        a = _as_u64(addr).reshape(-1)
        hit = np.flatnonzero(a == np.uint64(e.address & 0xFFFFFFFFFFFFFFFF))
        if hit.size:
            i = int(hit[0])
            e.thread = i if thread is None else int(np.broadcast_to(
                np.asarray(thread, np.int64), a.shape)[i])
    return e


def _signed(a):
    return a.view(np.dtype(f"i{a.dtype.itemsize}"))


def _inc(old, b):
    # atom.inc: ((old >= b) ? 0 : (old + 1)), unsigned 32-bit (9.7.13.5)
    return np.where(old >= b, 0, old + 1).astype(old.dtype)


def _dec(old, b):
    # atom.dec: (((old == 0) || (old > b)) ? b : (old - 1))
    return np.where((old == 0) | (old > b), b, old - 1).astype(old.dtype)


# integer atom / red operations on raw bits (9.7.13.5 Table "atom operations"); wrap modulo 2^N
ATOMIC_OPS = {
    "add": lambda old, b: old + b,
    "and": lambda old, b: old & b,
    "or": lambda old, b: old | b,
    "xor": lambda old, b: old ^ b,
    "exch": lambda old, b: b,
    "min.u": np.minimum, "max.u": np.maximum,
    "min.s": lambda old, b: np.minimum(_signed(old), _signed(b)).view(old.dtype),
    "max.s": lambda old, b: np.maximum(_signed(old), _signed(b)).view(old.dtype),
    "inc": _inc, "dec": _dec,
    "cas": lambda old, b, c: np.where(old == b, c, old).astype(old.dtype),
}
