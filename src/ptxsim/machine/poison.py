"""Poison values: what a kernel computes where the PTX ISA leaves the result unspecified.

Real kernels compute such values and never use them: CuTe DSL's grouped GEMM divides by a tile
count of 0 for a tile past every group (`div.s32`, 9.7.1.8: "division by zero ... unspecified"),
CuTe's cluster-launch-control tutorials `mapa` to a rank outside the cluster, a scheduler reads
`get_first_ctaid` of a failed `clusterlaunchcontrol.try_cancel` (9.7.12.16: "undefined") before
testing `is_canceled`. The hardware returns some bits and nothing goes wrong. ptxsim therefore
does not stop where such a value is produced: the destination register becomes *poison* for
the threads concerned, remembering the instruction that produced it.

Poison flows through register-to-register instructions (the base arithmetic / logic / compare /
convert set, mov, the video instructions, cvta / mapa / getctarank / isspacep): a destination is
poison for a thread when any source (or the guard predicate) is. The cross-lane collectives
(shfl, vote, match, redux) poison the destinations of every executing lane of a warp in which
some lane's source is poison. Any other instruction that reads a poison register — an address,
a branch or guard, a value stored to memory, an operand of an asynchronous or Tensor Memory
operation — raises `PoisonValueError` naming the line that produced the value and the line that
used it. Writing a clean value to a register clears its poison.

The state is one array per poison register (`wave.poison[name]`: per thread of the wave the
index of its origin in `wave.poison_origins`, -1 when clean); a wave without poison pays one
dict test per step (`wrap`).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import PoisonValueError
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.ptx.instruction import Address, Register, RegisterPair, Vector

PURE, CROSS_LANE, EFFECT = "pure", "cross-lane", "effect"


def produce(wave, dst, threads, inst, why: str) -> None:
    """Mark register operand `dst` (a Register, or a Vector / RegisterPair of them) poison for
    the wave's threads `threads`, produced by `inst` because of `why`."""
    threads = np.asarray(threads, np.int64)
    if not threads.size:
        return
    origin = len(wave.poison_origins)
    wave.poison_origins.append((inst, why))
    for name in _names(dst):
        arr = wave.poison.get(name)
        if arr is None:
            arr = wave.poison[name] = np.full(wave.N, -1, np.int32)
        arr[threads] = origin


def _names(op) -> list[str]:
    if isinstance(op, Register):
        return [] if op.name == "_" else [op.name]
    if isinstance(op, RegisterPair):
        return _names(op.first) + _names(op.second)
    if isinstance(op, Vector):
        return [n for e in op.elements for n in _names(e)]
    return []


def _has_register_dst(inst) -> bool:
    """Whether operand 0 is written (a register destination) rather than read."""
    if not inst.operands or isinstance(inst.operands[0], Address):
        return False
    return inst.opcode not in ("bra", "brx", "call", "st", "red", "tcgen05.st", "stmatrix",
                               "mbarrier.init", "mbarrier.inval", "mbarrier.expect_tx",
                               "mbarrier.complete_tx") and not inst.opcode.startswith("cp.")


def operands_of(inst) -> tuple[list, list]:
    """([(register name, how it is read)], [destination register names]); `how` is
    "address", "guard" or "operand"."""
    ops = list(inst.operands)
    dsts: list[str] = []
    if _has_register_dst(inst):
        dsts = _names(ops[0])
        ops = ops[1:]
    srcs: list[tuple[str, str]] = []
    for op in ops:
        if isinstance(op, Address):
            if op.base is not None:
                srcs.append((op.base, "address"))
            if op.vector is not None:
                srcs += [(n, "address") for n in _names(op.vector)]
        else:
            srcs += [(n, "operand") for n in _names(op)]
    if inst.predicate is not None:
        srcs.append((inst.predicate.name, "guard"))
    return srcs, dsts


def _use(inst, how: str) -> str:
    op = inst.opcode
    if how == "guard":
        return "the branch condition" if op in ("bra", "brx") else \
            f"the guard predicate of {inst.mnemonic}"
    if how == "address":
        return f"an address of {inst.mnemonic}"
    if op in ("bra", "brx"):
        return "a branch target"
    if op in ("st", "red", "atom", "st.async", "red.async", "stmatrix", "tcgen05.st"):
        return f"a value {inst.mnemonic} stores"
    return f"an operand of {inst.mnemonic}"


def _thread_name(wave, t: int) -> str:
    s = wave.sregs
    try:
        ctaid = tuple(int(s[f"%ctaid.{c}"][t]) for c in "xyz")
        tid = tuple(int(s[f"%tid.{c}"][t]) for c in "xyz")
        return f"CTA {ctaid}, thread {tid}"
    except KeyError:
        return f"thread {t}"


def poison_error(wave, inst, name: str, how: str, t: int, origin: int) -> PoisonValueError:
    pinst, why = wave.poison_origins[origin]
    use = _use(inst, how)
    msg = (f"{use} is {name}, a value the PTX ISA leaves unspecified for "
           f"{_thread_name(wave, t)}: produced at line {pinst.loc.line} ({pinst}: {why})")
    return PoisonValueError(msg, produced_line=pinst.loc.line, produced=str(pinst),
                            used_line=inst.loc.line, used=str(inst), use=use, thread=t)


def wrap(wave, inst, body, kind: str):
    """`body` (a compiled instruction, guard included) made poison-aware; `kind` is PURE,
    CROSS_LANE or EFFECT (what `machine.handlers.poison_kind` says of the opcode)."""
    srcs, dsts = operands_of(inst)
    names = {n for n, _ in srcs} | set(dsts)
    if not names:
        return body
    P = wave.poison
    pred = inst.predicate

    def run(idx):
        if not P or names.isdisjoint(P):
            body(idx)
            return
        _slow(idx)

    def _slow(idx):
        idx = np.asarray(idx)
        # the threads for which the instruction executes (the guard holds) or may (it is poison)
        if pred is not None:
            g = wave.reg(pred.name)[idx].astype(bool)
            if pred.negated:
                g = ~g
            gp = P.get(pred.name)
            if gp is not None:
                g = g | (gp[idx] >= 0)
        else:
            g = None
        orig = np.full(idx.size, -1, np.int32)
        for n, how in srcs:
            a = P.get(n)
            if a is None:
                continue
            o = a[idx]
            bad = o >= 0
            if how != "guard" and g is not None:
                bad &= g                       # a guard-false thread does not read it
            if not bad.any():
                continue
            if kind == EFFECT or (how == "guard" and inst.opcode in ("bra", "brx")):
                k = int(np.argmax(bad))
                raise poison_error(wave, inst, n, how, int(idx[k]), int(o[k]))
            orig = np.where(bad & (orig < 0), o, orig)
        if kind == CROSS_LANE and (orig >= 0).any():
            warp = idx // WARP_SIZE
            bad = orig >= 0
            uw, first = np.unique(warp[bad], return_index=True)
            pos = np.minimum(np.searchsorted(uw, warp), uw.size - 1)
            orig = np.where(uw[pos] == warp, orig[bad][first][pos], -1).astype(np.int32)
        # the threads whose destinations this execution defines: the guard holds or is poison
        if g is not None:
            defined = idx[g]
            dorig = orig[g]
        else:
            defined, dorig = idx, orig
        for d in dsts:
            a = P.get(d)
            if a is not None:
                a[defined] = -1                   # a producer in `body` may mark it again
        body(idx)
        hit = dorig >= 0
        for d in dsts:
            a = P.get(d)
            if hit.any():
                if a is None:
                    a = P[d] = np.full(wave.N, -1, np.int32)
                cur = a[defined]
                a[defined] = np.where(hit, dorig, cur)
            elif a is not None and not (a >= 0).any():
                del P[d]
    return run
