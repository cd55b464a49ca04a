"""Stack manipulation (PTX ISA 9.7.17): stacksave, stackrestore, alloca over a per-thread stack.

The model: every thread owns a downward-growing stack in local memory, ``[limit, top)``; the stack
pointer starts at ``top``. ``alloca`` lowers it by the size and aligns it down
(``sp = (sp - size) & ~(align - 1)``; a size of 0 returns the stack pointer unchanged when it is
aligned); ``stacksave`` reads it; ``stackrestore`` sets it. All of this, the initial value and
the usable size were measured on an H200 (tests/data/hardware/stack/stack_sm90.npz, replayed by
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
from ptxsim.isa.legality import Form, Imm, Operand, Slot, check_form
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
# Measured on an H200 (tests/data/hardware/stack/stack_sm90.npz): a kernel without a static frame starts with
# the stack pointer at local address 0xFFFDC0, the same in every thread, and can use exactly
# cudaLimitStackSize bytes below it (an access below faults with cudaErrorIllegalAddress).
INITIAL_SP = 0xFFFDC0

# ------------------------------------------------------------------- legality, as data
# The one table of 9.7.17, read by `check` and by the front-end validator
# (ptx/legality/stack_misc.py). Syntax, PTX ISA notes (7.3) and Target ISA notes (sm_52) of
# 9.7.17.1-3; "rT" is a register of the width .type names (ptxsim.isa.legality).
_TYPE = Slot.of(".type", " ".join("." + t for t in TYPES), True)
FORMS: dict[str, Form] = {f.name: f for f in [
    # 9.7.17.1 "stacksave.type d;"  .type = { .u32, .u64 }
    Form("stacksave", "stacksave", (_TYPE,), (Operand("d", "rT"),), MIN_PTX, TARGETS, "9.7.17.1"),
    # 9.7.17.2 "stackrestore.type a;"
    Form("stackrestore", "stackrestore", (_TYPE,), (Operand("a", "rT"),), MIN_PTX, TARGETS,
         "9.7.17.2"),
    # 9.7.17.3 "alloca.type ptr, size{, immAlign};"  size a register or an immediate; "immAlign
    # ... must be a power of 2 and must not exceed 2^23"
    Form("alloca", "alloca", (_TYPE,),
         (Operand("ptr", "rT"), Operand("size", "rT|imm"),
          Operand("immAlign", "imm", Imm(1, MAX_ALIGN, pow2=True), optional=True)),
         MIN_PTX, TARGETS, "9.7.17.3"),
]}


def check(opcode: str, qualifiers=(), operands=(), target: str | None = None,
          ptx_version=None) -> Form:
    """Raise PtxValidationError unless `opcode qualifiers operands` is legal per FORMS (operands:
    int for an immediate, str for a register name). Returns the form."""
    if opcode not in FORMS:
        raise PtxValidationError(f"'{opcode}' is not a stack instruction of 9.7.17 "
                                 f"(known: {', '.join(FORMS)})")
    check_form(FORMS[opcode], tuple(qualifiers), tuple(operands), target, ptx_version)
    return FORMS[opcode]


def check_align(imm_align: int | None) -> int:
    """The alignment alloca uses: max(immAlign, frame_align), validated per 9.7.17.3 (the
    immAlign row of FORMS["alloca"])."""
    if imm_align is None:
        return DEFAULT_ALIGN
    rule = FORMS["alloca"].operands[2].imm
    if not rule.ok(imm_align):
        why = ("is not a power of two" if imm_align <= 0 or imm_align & (imm_align - 1)
               else "exceeds 2^23")
        raise PtxValidationError(f"alloca: immAlign {imm_align} {why} (9.7.17.3)")
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
        self.lowest = self.sp.copy()              # lowest stack pointer each thread had
        self._remember(np.arange(self.threads), self.sp)

    def memory(self) -> np.ndarray:
        """The bytes of every thread's stack, [limit, top) as columns (threads, top - limit)
        uint8; made on first use (the executor's local space reads and writes them)."""
        m = getattr(self, "_bytes", None)
        if m is None:
            m = self._bytes = np.zeros((self.threads, int(self.top) - int(self.limit)), np.uint8)
        return m

    # ------------------------------------------------------------ instructions
    # `threads` (optional): indices of the threads that execute the instruction (the others
    # keep their stack pointer); values in and out are then per executing thread.
    def _sel(self, threads):
        return np.arange(self.threads) if threads is None else np.asarray(threads, np.int64)

    def stacksave(self, type_: str = "u64", threads=None) -> np.ndarray:
        """9.7.17.1: d = stackptr (as uint32 for .u32)."""
        _check_type(type_)
        t = self._sel(threads)
        self._remember(t, self.sp[t])
        v = self.sp[t].copy()
        return v.astype(np.uint32) if type_ == "u32" else v

    def alloca(self, size, imm_align: int | None = None, type_: str = "u64",
               threads=None) -> np.ndarray:
        """9.7.17.3: allocate size bytes (per thread) aligned to max(immAlign, 8); return ptr."""
        _check_type(type_)
        t = self._sel(threads)
        align = np.uint64(check_align(imm_align))
        size = np.broadcast_to(np.asarray(size, dtype=np.uint64), t.shape)
        sp = self.sp[t]
        new_sp = (sp - size) & ~(align - np.uint64(1))
        under = (size > sp - np.uint64(self.limit)) | (new_sp < np.uint64(self.limit))
        if under.any():
            i = int(np.argmax(under))
            raise StackOverflowError(int(t[i]), int(sp[i] - new_sp[i]) if not (size[i] > sp[i])
                                     else int(size[i]), int(sp[i]) - self.limit)
        start = np.zeros(self.threads, np.uint64)
        stop = np.zeros(self.threads, np.uint64)
        start[t], stop[t] = new_sp, new_sp + size
        # memory released by an earlier stackrestore is live again once re-allocated
        live = []
        for fs, fe in self._freed:
            hit = (fs != fe) & (fs < np.maximum(stop, start + np.uint64(1))) & (fe > start) & \
                (stop != 0)
            fs, fe = np.where(hit, 0, fs), np.where(hit, 0, fe)
            if (fs != fe).any():
                live.append((fs, fe))
        self._freed = live
        self._starts.append(start)
        self._ends.append(stop)
        self.sp[t] = new_sp
        self.lowest[t] = np.minimum(self.lowest[t], new_sp)
        self._remember(t, new_sp)
        return new_sp.astype(np.uint32) if type_ == "u32" else new_sp.copy()

    def _remember(self, t, values) -> None:
        """Record the values stacksave / alloca handed out (stackrestore accepts only those)."""
        v = np.zeros(self.threads, np.uint64)
        ok = np.zeros(self.threads, bool)
        v[t], ok[t] = values, True
        self._saved.append((v, ok))

    def stackrestore(self, a, type_: str = "u64", threads=None) -> None:
        """9.7.17.2: stackptr = a; a must come from a stacksave/alloca of this stack and not
        lie below the current stack pointer."""
        _check_type(type_)
        t = self._sel(threads)
        a = np.broadcast_to(np.asarray(a, dtype=np.uint64), t.shape)
        known = np.zeros(t.size, bool)
        for v, ok in self._saved:
            known |= ok[t] & (v[t] == a)
        bad = ~known | (a < self.sp[t])
        if bad.any():
            i = int(np.argmax(bad))
            stale = a[i] < self.sp[t[i]] and a[i] >= self.lowest[t[i]]
            why = ("lies below the current stack pointer" if stale or known[i]
                   else "was not produced by stacksave/alloca")
            raise UndefinedBehavior(f"stackrestore: value {int(a[i]):#x} of thread {int(t[i])} "
                                    f"{why}; the stack pointer would be corrupted (9.7.17.2)")
        full = np.zeros(self.threads, np.uint64)
        mine = np.zeros(self.threads, bool)
        full[t], mine[t] = a, True
        keep_s, keep_e = [], []
        for s, e in zip(self._starts, self._ends):
            dead = mine & (s < full) & (e != 0)
            if dead.any():
                self._freed.append((np.where(dead, s, 0), np.where(dead, e, 0)))
            s, e = np.where(dead, 0, s), np.where(dead, 0, e)
            if (e != 0).any():
                keep_s.append(s)
                keep_e.append(e)
        self._starts, self._ends = keep_s, keep_e
        # values below the restored pointer are stale now: forget them, and keep the restored
        # value once (bounded bookkeeping for save / alloca / restore loops)
        saved = []
        for v, ok in self._saved:
            ok = ok & ~(mine & (v <= full))
            if ok.any():
                saved.append((v, ok))
        saved.append((full, mine))
        self._saved = saved
        self.sp[t] = a

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
