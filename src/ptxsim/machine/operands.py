"""What an instruction's operands name, for the handlers (re-exported by handlers/common.py) and
for machine/poison.py: the qualifier readers (state space, type, vector length), the
shared-memory part of an access, and how many bytes a cp.async reads from its source.
"""
from __future__ import annotations

import numpy as np

from ptxsim.machine.memory import WINDOW_SIZE, WINDOWS
from ptxsim.ptx.instruction import Register

SPACE_QUALS = {".global": "global", ".shared": "shared::cta", ".shared::cta": "shared::cta",
               ".shared::cluster": "shared::cluster", ".local": "local", ".param": "param",
               ".param::entry": "param", ".param::func": "param", ".const": "const"}


def type_of(inst) -> str | None:
    ts = inst.types
    return ts[-1] if ts else None


def space_of(inst, default="generic") -> str:
    for q in inst.qualifiers:
        if q in SPACE_QUALS:
            return SPACE_QUALS[q]
    return default


def vec_of(inst) -> int:
    for q in inst.qualifiers:
        if q in (".v2", ".v4", ".v8"):
            return int(q[2:])
    return 1


_SHARED_LO = np.uint64(WINDOWS["shared"])
_SHARED_HI = np.uint64(WINDOWS["shared"] + WINDOW_SIZE)


def shared_part(wave, space: str, addr, idx):
    """The accesses of threads `idx` at `addr` (of `space`) that land in shared memory:
    (selector into idx, CTA index, byte offset), or None when none does (the addresses are
    those the access itself resolved, so they are valid)."""
    if space not in ("shared::cta", "shared::cluster", "generic"):
        return None
    addr = np.asarray(addr, np.uint64)
    sel = None
    cta = wave.cta_of[idx]
    inw = (addr >= _SHARED_LO) & (addr < _SHARED_HI)
    if space == "generic":
        if not inw.any():
            return None
        if not inw.all():
            sel = np.flatnonzero(inw)
            addr, cta = addr[sel], cta[sel]
        addr = wave.memory.cvta_from_generic("shared::cluster", addr)
        space = "shared::cluster"
    elif inw.any() and inw.all():                 # a generic address (_generic_as_shared)
        addr = addr - _SHARED_LO
    if space == "shared::cta":
        c, off = wave.memory.shared.resolve_own(addr, cta)
    else:
        c, off = wave.memory.shared.resolve_cluster(addr, cta)
    return sel, c, off


def cp_async_src_bytes(wave, inst, idx) -> np.ndarray:
    """cp.async [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy} (9.7.9.23): how
    many bytes each thread of `idx` reads from src (int64). src-size: that many (the rest of
    cp-size is zero-filled); ignore-src (a predicate): none where it is true ("zeros will be
    copied", the H200 reads nothing: tests/data/hardware/poison); neither: cp-size. The
    cache-policy operand (with .L2::cache_hint) is last."""
    ops = inst.operands
    size = int(ops[2].value)
    extra = list(ops[3:])
    if extra and inst.has(".L2::cache_hint"):
        extra = extra[:-1]
    if not extra:
        return np.full(np.size(idx), size, np.int64)
    op = extra[0]
    is_pred = isinstance(op, Register) and \
        str(wave.program.registers.get(op.name, "")) == ".pred"
    if is_pred:
        ignore = wave.read(op, idx).astype(bool)
        return np.where(ignore, 0, size).astype(np.int64)
    return wave.read(op, idx, 32).astype(np.int64)
