"""Stack manipulation (PTX ISA 9.7.17): stacksave, stackrestore, alloca over a per-thread stack.

The model: every thread owns a downward-growing stack in local memory, ``[limit, top)``; the stack
pointer starts at ``top``. ``alloca`` lowers it by the size and aligns it down
(``sp = (sp - size) & ~(align - 1)``; a size of 0 returns the stack pointer unchanged when it is
aligned); ``stacksave`` reads it; ``stackrestore`` sets it. All of this, the initial value and
the usable size were measured on an H200 (tests/data/hw/stack_sm90.npz, replayed by
tests/isa/test_stack.py). All functions are vectorised over threads (uint64 arrays).

What the spec leaves undefined is reported, not computed:
- an ``alloca`` that does not fit between ``limit`` and the stack pointer raises
  ``StackOverflowError`` (9.7.17.3: "may result in stack overflow");
- ``stackrestore`` to a value that no ``stacksave``/``alloca`` of this frame produced, or to a
  pointer below the current one, raises ``UndefinedBehavior`` (9.7.17.2: "may cause corruption");
- an access to memory released by ``stackrestore`` raises ``UndefinedBehavior`` (9.7.17.3:
  "accessing deallocated memory after executing stackrestore results in undefined behavior"),
  and so does an access to a size-0 allocation ("may not lead to a valid memory allocation").
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import (OperandError, PtxValidationError, StackOverflowError,  # noqa: F401
                           UndefinedBehavior)
from ptxsim.isa.targets import AtLeast, Req

# 9.7.17.3: immAlign is a power of 2, at most 2^23; default 8 (the minimum guaranteed alignment)
MAX_ALIGN = 1 << 23
DEFAULT_ALIGN = 8
FRAME_ALIGN = 8
TYPES = ("u32", "u64")        # stacksave / stackrestore / alloca .type
MIN_TARGET = 52               # sm_52 (Target ISA notes, all three)
TARGETS = Req(AtLeast(MIN_TARGET))
MIN_PTX = (7, 3)
DEFAULT_STACK_BYTES = 1024    # cudaLimitStackSize default of the CUDA runtime (read on the H200)
# Measured on an H200 (tests/data/hw/stack_sm90.npz): a kernel without a static frame starts with
# the stack pointer at local address 0xFFFDC0, the same in every thread, and can use exactly
# cudaLimitStackSize bytes below it (an access below faults with cudaErrorIllegalAddress).
INITIAL_SP = 0xFFFDC0


def check_align(imm_align: int | None) -> int:
    """The alignment alloca uses: max(immAlign, frame_align), validated per 9.7.17.3."""
    if imm_align is None:
        return DEFAULT_ALIGN
    if imm_align <= 0 or imm_align & (imm_align - 1):
        raise PtxValidationError(f"alloca: immAlign {imm_align} is not a power of two (9.7.17.3)")
    if imm_align > MAX_ALIGN:
        raise PtxValidationError(f"alloca: immAlign {imm_align} exceeds 2^23 (9.7.17.3)")
    return max(imm_align, FRAME_ALIGN)


@dataclass
class Stack:
    """Per-thread stacks. ``top``/``limit`` are local-memory addresses (one per thread or one
    shared value); ``sp`` is the current stack pointer of every thread."""
    threads: int
    top: int = INITIAL_SP
    limit: int | None = None          # default: top - DEFAULT_STACK_BYTES
    sp: np.ndarray = field(init=False)
    # live allocations per thread: list of (start, end) arrays stacked as [k, threads]
    _starts: list = field(default_factory=list, init=False)
    _ends: list = field(default_factory=list, init=False)
    _saved: list = field(default_factory=list, init=False)   # values handed out by save/alloca
    _freed: list = field(default_factory=list, init=False)   # (start, end) released by restore

    def __post_init__(self):
        if self.limit is None:
            self.limit = self.top - DEFAULT_STACK_BYTES
        self.sp = np.full(self.threads, self.top, dtype=np.uint64)
        self._saved.append(self.sp.copy())

    # ------------------------------------------------------------ instructions
    def stacksave(self, type_: str = "u64") -> np.ndarray:
        """9.7.17.1: d = stackptr (as uint32 for .u32)."""
        _check_type(type_)
        self._saved.append(self.sp.copy())
        return self.sp.astype(np.uint32) if type_ == "u32" else self.sp.copy()

    def alloca(self, size, imm_align: int | None = None, type_: str = "u64") -> np.ndarray:
        """9.7.17.3: allocate size bytes (per thread) aligned to max(immAlign, 8); return ptr."""
        _check_type(type_)
        align = np.uint64(check_align(imm_align))
        size = np.broadcast_to(np.asarray(size, dtype=np.uint64), self.sp.shape)
        new_sp = (self.sp - size) & ~(align - np.uint64(1))
        under = (size > self.sp - np.uint64(self.limit)) | (new_sp < np.uint64(self.limit))
        if under.any():
            t = int(np.argmax(under))
            raise StackOverflowError(t, int(self.sp[t] - new_sp[t]) if not (size[t] > self.sp[t]) else int(size[t]),
                                     int(self.sp[t]) - self.limit)
        self._starts.append(new_sp.copy())
        self._ends.append(new_sp + size)
        self.sp = new_sp
        self._saved.append(new_sp.copy())
        return new_sp.astype(np.uint32) if type_ == "u32" else new_sp.copy()

    def stackrestore(self, a, type_: str = "u64") -> None:
        """9.7.17.2: stackptr = a; a must come from a stacksave/alloca of this stack and not
        lie below the current stack pointer."""
        _check_type(type_)
        a = np.broadcast_to(np.asarray(a, dtype=np.uint64), self.sp.shape)
        known = np.zeros(self.threads, bool)
        for v in self._saved:
            known |= (v == a)
        bad = ~known | (a < self.sp)
        if bad.any():
            t = int(np.argmax(bad))
            why = ("was not produced by stacksave/alloca" if not known[t]
                   else "lies below the current stack pointer")
            raise UndefinedBehavior(f"stackrestore: value {int(a[t]):#x} of thread {t} {why}; "
                                    "the stack pointer would be corrupted (9.7.17.2)")
        keep_s, keep_e = [], []
        for s, e in zip(self._starts, self._ends):
            dead = s < a
            if dead.any():
                self._freed.append((np.where(dead, s, 0), np.where(dead, e, 0)))
            keep_s.append(np.where(dead, 0, s))
            keep_e.append(np.where(dead, 0, e))
        self._starts, self._ends = keep_s, keep_e
        self.sp = a.copy()

    # ------------------------------------------------------------ accesses (ld/st.local)
    def check_access(self, addr, nbytes: int, active=None) -> None:
        """Raise if a local access of nbytes at addr (per thread, for the active threads)
        touches released stack memory or a size-0 allocation; other accesses are the
        executor's business."""
        addr = np.broadcast_to(np.asarray(addr, dtype=np.uint64), self.sp.shape)
        if active is not None:
            addr = np.where(active, addr, np.uint64(0))
        end = np.where(addr == 0, np.uint64(0), addr + np.uint64(nbytes))
        for s, e in self._freed:
            hit = (s != e) & (addr < e) & (end > s)
            if hit.any():
                t = int(np.argmax(hit))
                raise UndefinedBehavior(f"thread {t} accesses stack memory at {int(addr[t]):#x} "
                                        "released by stackrestore (9.7.17.3)")
        for s, e in zip(self._starts, self._ends):
            zero = (s == e) & (s != 0) & (addr == s)
            if zero.any():
                t = int(np.argmax(zero))
                raise UndefinedBehavior(f"thread {t} accesses a size-0 alloca at {int(addr[t]):#x} "
                                        "(9.7.17.3: size = 0 may not be a valid allocation)")


def _check_type(type_: str) -> None:
    if type_ not in TYPES:
        raise OperandError(f"stack instruction type .{type_} is not one of .u32, .u64 (9.7.17)")
