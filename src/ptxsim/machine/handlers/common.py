"""Helpers every handler family uses: the operand and qualifier readers (type, width, state space,
vector length, CTA group), the per-thread call `.param` bytes and the resolution of a
shared-memory address operand to (CTA, offset).
"""
from __future__ import annotations

import warnings

import numpy as np

from ptxsim.errors import SpecDeviationWarning
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.memory import WINDOW_SIZE, WINDOWS
from ptxsim.machine.program import TYPE_BYTES
from ptxsim.ptx.instruction import Address, Vector


UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


SPACE_QUALS = {".global": "global", ".shared": "shared::cta", ".shared::cta": "shared::cta",
               ".shared::cluster": "shared::cluster", ".local": "local", ".param": "param",
               ".param::entry": "param", ".param::func": "param", ".const": "const"}


def type_of(inst) -> str | None:
    ts = inst.types
    return ts[-1] if ts else None


def width_of(t: str | None) -> int:
    if t is None:
        return 32
    return 8 * TYPE_BYTES.get(t, 4)


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


# ---------------------------------------------------------------------------------- mov
def elements_of(op):
    return op.elements if isinstance(op, Vector) else (op,)


def cta_group_of(inst) -> int:
    v = inst.value(".cta_group")
    return int(v) if v else 1


def warps_of(idx):
    """Executing warps (global warp numbers) and, per warp, its first executing thread."""
    w = idx // WARP_SIZE
    warps, first = np.unique(w, return_index=True)
    return warps, idx[first]


def callparam(wave, a):
    """The per-thread byte array of a call-site / formal .param (None for other addresses)."""
    if a.base is None or a.base not in wave.program.call_params:
        return None
    arr = wave.callparams.get(a.base)
    if arr is None:
        arr = wave.callparams[a.base] = np.zeros((wave.N, max(wave.program.call_params[a.base],
                                                              1)), np.uint8)
    return arr


# -------------------------------------------------------------------------------- mbarrier
def shared_target(wave, inst, op, idx, default="generic"):
    """(cta index, offset) of a shared-memory address operand."""
    space = space_of(inst, default)
    a = wave.addr(op, idx) if isinstance(op, Address) else wave.read(op, idx, 64).astype(
        np.uint64)
    cta = wave.cta_of[idx]
    if space == "generic":
        a = wave.memory.cvta_from_generic("shared::cluster", a)
        space = "shared::cluster"
    elif (a >= _SHARED_LO).any() and ((a >= _SHARED_LO) & (a < _SHARED_HI)).all():
        a = _generic_as_shared(wave, inst, a)
    if space == "shared::cta":
        return wave.memory.shared.resolve_own(a, cta)
    return wave.memory.shared.resolve_cluster(a, cta)


_SHARED_LO = np.uint64(WINDOWS["shared"])
_SHARED_HI = np.uint64(WINDOWS["shared"] + WINDOW_SIZE)
_warned: set = set()


def _generic_as_shared(wave, inst, a):
    """A generic address of the shared window given to an instruction with an explicit
    .shared::cta / .shared::cluster operand: undefined in the PTX ISA, but ThunderKittens'
    B200 kernels pass `cvta.shared` results to tcgen05.alloc.shared::cta and run on the
    hardware, whose generic shared window is 4 GiB aligned, so the address's low 32 bits are
    the shared address. ptxsim's window is 4 GiB aligned too: the same 32 bits are used, with a
    SpecDeviationWarning once per instruction."""
    key = (id(wave.program), inst.loc.line)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(SpecDeviationWarning(
            f"line {inst.loc.line}: {inst}: a generic address is used as a shared-space "
            "address (undefined in the PTX ISA); its low 32 bits are taken, as the hardware "
            "does (ThunderKittens' B200 kernels rely on it)"), stacklevel=2)
    return a - _SHARED_LO
