"""stacksave / stackrestore / alloca (9.7.17) in a kernel: `isa.stack.Stack` per thread, with the
local space of the wave growing a window over it (`StackedLocal`).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import MemoryAccessError, OperandError, UnsupportedFeature
from ptxsim.isa import stack as isa_stack
from ptxsim.machine.handlers.common import type_of
from ptxsim.ptx.instruction import Immediate


# ------------------------------------------------------------------ stack (9.7.17, isa/stack.py)
STACK_OPS = {"stacksave", "stackrestore", "alloca"}


class StackedLocal:
    """The local space of a wave whose threads use the stack instructions: the static frame
    (`.local` variables, ptxsim offsets [0, frame)) plus each thread's stack window
    [limit, top) of `isa.stack.Stack` (H200-measured addresses, docs/executor-gaps.md), one byte
    array per thread. Every access to the stack window goes through `Stack.check_access` (use
    after stackrestore, size-0 allocations); an access outside both parts faults."""

    def __init__(self, old, stack):
        self.name, self.writable = "local", True
        self.frame = old.data.shape[-1]
        self.stack = stack
        self.limit, self.top = int(stack.limit), int(stack.top)
        n = old.data.shape[0]
        if self.frame == 0 and n == stack.threads:
            # no static frame: the bytes live with the Stack (they persist across
            # `ptxsim.execute` calls that share it)
            self.data = stack.memory()
        else:
            self.data = np.zeros((n, self.frame + (self.top - self.limit)), np.uint8)
            self.data[:, :self.frame] = old.data

    def _flat(self, owner, off, size: int, addr) -> np.ndarray:
        off = np.asarray(off, np.int64)
        owner = np.asarray(owner, np.int64)
        in_stack = (off >= self.limit) & (off + size <= self.top)
        in_frame = (off >= 0) & (off + size <= self.frame)
        near = ~in_frame & (off >= self.limit) & (off <= self.top)
        if near.any():          # released memory / size-0 allocations first (undefined)
            full = np.zeros(self.stack.threads, np.uint64)
            act = np.zeros(self.stack.threads, bool)
            full[owner[near]] = off[near].astype(np.uint64)
            act[owner[near]] = True
            self.stack.check_access(full, size, act)
        bad = ~in_stack & ~in_frame
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"local access of {size} bytes at {int(off[i]):#x} (thread {int(owner[i])}) is "
                f"outside the thread's frame [0, {self.frame}) and its {self.top - self.limit}-"
                f"byte stack [{self.limit:#x}, {self.top:#x}) (the GPU faults: "
                "cudaErrorIllegalAddress)", address=int(np.asarray(addr)[i]), space="local")
        col = np.where(in_stack, off - self.limit + self.frame, off)
        return owner * self.data.shape[-1] + col


def wave_stack(wave):
    """The wave's per-thread stacks (`isa.stack.Stack`), made on first use: the stack pointer
    starts at the H200-measured 0xFFFDC0 less the static frame (rounded to 16), and the stack
    ends cudaLimitStackSize (1024) bytes below 0xFFFDC0, the frame counted in it (inferred: only
    frame-less kernels were measured). The local space grows a window over it."""
    st = getattr(wave, "local_stack", None)
    if st is None:
        frame = -(-wave.memory.local.data.shape[-1] // 16) * 16
        top = isa_stack.INITIAL_SP - frame
        limit = isa_stack.INITIAL_SP - isa_stack.DEFAULT_STACK_BYTES
        if top <= limit:
            raise UnsupportedFeature(f"the static local frame ({frame} bytes) leaves no room on "
                                     f"the {isa_stack.DEFAULT_STACK_BYTES}-byte stack")
        st = isa_stack.Stack(wave.N, top=top, limit=limit)
        attach_stack(wave, st)
    return st


def attach_stack(wave, st) -> None:
    """Use `st` as the wave's stacks (also `ptxsim.execute(..., state=Stack)`)."""
    if not isinstance(wave.memory.local, StackedLocal):
        wave.memory.local = StackedLocal(wave.memory.local, st)
    else:
        wave.memory.local.stack = st
    wave.local_stack = st


def _stack_op(wave, inst):
    """stacksave.type d / stackrestore.type a / alloca.type ptr, size{, immAlign} (9.7.17) on
    the executing threads' stacks; the pointers are local-space addresses."""
    op = inst.opcode
    ops = inst.operands
    # 9.7.17's one table (isa/stack.py FORMS): qualifiers, operand kinds, immAlign, and the PTX
    # ISA (7.3) / target (sm_52) notes against the module's .version and the launch target
    isa_stack.check(op, inst.qualifiers,
                    [int(o.value) if isinstance(o, Immediate) else getattr(o, "name", str(o))
                     for o in ops], wave.launch.target, getattr(wave.launch, "ptx_version", None))
    type_ = type_of(inst)[1:]
    w = 32 if type_ == "u32" else 64
    align = None
    if op == "alloca" and len(ops) > 2:
        if not isinstance(ops[2], Immediate):
            raise OperandError("alloca: immAlign must be an integer constant (9.7.17.3)")
        align = int(ops[2].value)
    if align is not None:
        isa_stack.check_align(align)
    st = wave_stack(wave)

    def run(idx):
        if op == "stacksave":
            wave.write(ops[0], idx, st.stacksave(type_, threads=idx))
        elif op == "stackrestore":
            st.stackrestore(wave.read(ops[0], idx, w).astype(np.uint64), type_, threads=idx)
        else:
            size = wave.read(ops[1], idx, w).astype(np.uint64)
            wave.write(ops[0], idx, st.alloca(size, align, type_, threads=idx))
        wave.advance(idx)
    return run
