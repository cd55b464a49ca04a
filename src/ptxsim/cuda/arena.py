"""Device memory of the CUDA driver model: allocations whose device address is also their host
address in this process.

One range of the address space is reserved at a fixed base (PROT_NONE, nothing committed) and
each allocation is made readable and writable there, page aligned, with an unmapped guard page
after it; addresses are never reused. So a device pointer is the same in every run, a torch CPU
tensor built over an allocation has data_ptr() == the device pointer (what `ptxsim cute` gives
a script's "cuda" tensors), and host code can put device addresses into the structs it passes
to a kernel. Freed memory is returned to the system (madvise).

Where the fixed reservation is not possible (not Linux, the range taken), allocations are numpy
buffers at whatever address the host allocator gives (then addresses differ between runs).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy as np

BASE = 0x7A00_0000_0000       # below the generic-address windows of machine.memory (0x7B..)
RESERVE = 1 << 40             # 1 TiB of address space, committed page by page
PAGE = 4096
ALIGN = 512                   # fallback allocations: cudaMalloc's alignment is at least 256

_PROT_NONE, _PROT_RW = 0, 3
_MAP_PRIVATE, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x02, 0x20, 0x4000
_MAP_FIXED_NOREPLACE = 0x100000
_MADV_DONTNEED = 4


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


class Arena:
    """allocate(n) -> (address, uint8 array over the n bytes); free(address)."""

    def __init__(self, base: int = BASE, reserve: int = RESERVE):
        self.libc = _libc()
        self.base = None
        self.next = None
        self.end = None
        self.live: dict[int, tuple[int, np.ndarray]] = {}    # address -> (committed bytes, view)
        if self.libc is not None:
            p = self.libc.mmap(ctypes.c_void_p(base), reserve, _PROT_NONE,
                               _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE |
                               _MAP_FIXED_NOREPLACE, -1, 0)
            if p == base:
                self.base, self.next, self.end = base, base, base + reserve
            elif p not in (None, ctypes.c_void_p(-1).value):
                self.libc.munmap(ctypes.c_void_p(p), reserve)   # old kernel: a mere hint

    @property
    def fixed(self) -> bool:
        return self.base is not None

    def allocate(self, nbytes: int) -> tuple[int, np.ndarray] | None:
        """A fresh zeroed allocation, or None when the address space or memory is exhausted."""
        n = max(int(nbytes), 1)
        if not self.fixed:
            try:
                raw = np.zeros(n + ALIGN, np.uint8)
            except MemoryError:
                return None
            skip = -raw.ctypes.data % ALIGN
            view = raw[skip:skip + n]
            addr = view.ctypes.data
            self.live[addr] = (0, view)
            return addr, view[:int(nbytes)]
        size = -(-n // PAGE) * PAGE
        addr = self.next
        if addr + size + PAGE > self.end:
            return None
        if self.libc.mprotect(ctypes.c_void_p(addr), size, _PROT_RW) != 0:
            return None
        self.next = addr + size + PAGE                      # one guard page, never committed
        view = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(addr))
        self.live[addr] = (size, view)
        return addr, view[:int(nbytes)]

    def free(self, addr: int) -> None:
        size, _ = self.live.pop(addr)
        if self.fixed and size:
            # the pages go back to the system (and read as zero); they stay mapped so that a
            # stale host view cannot crash the process; kernels and copies check the mapping
            self.libc.madvise(ctypes.c_void_p(addr), size, _MADV_DONTNEED)

    def owns(self, addr: int) -> bool:
        return self.fixed and self.base <= addr < self.end
