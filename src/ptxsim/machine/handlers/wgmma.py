"""wgmma.fence / wgmma.mma_async (+ .sp) / wgmma.commit_group / wgmma.wait_group (PTX ISA 9.7.15).

A wgmma.mma_async is performed when it is issued, all warpgroups of the wave at once
(`isa.wgmma.wgmma`): it reads A (registers or shared memory), B and the accumulator then, and
writes D. The PTX ISA makes every other order a race the program must not have: the D
registers may not be touched between the issue and the wait_group that completes it, nor the
shared-memory operands written (9.7.15.6), so issue-time execution gives the results a correct
program gets. wgmma.fence, commit_group and wait_group order nothing else here.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError, UndefinedBehavior
from ptxsim.isa import wgmma as wg
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.ptx.instruction import Immediate, Vector

WG = 4 * WARP_SIZE


def _groups(wave, inst, idx):
    """(G, 128) global thread indices of the executing warpgroups, and their CTAs (G,)."""
    cta = wave.cta_of[idx]
    local = idx - cta * wave.P
    key = cta * (wave.P // WG + 1) + local // WG
    groups, first = np.unique(key, return_index=True)
    base = cta[first] * wave.P + (local[first] // WG) * WG
    thr = base[:, None] + np.arange(WG)
    if thr.size != idx.size or not np.array_equal(np.sort(idx), np.sort(thr.reshape(-1))):
        raise UndefinedBehavior(f"line {inst.loc.line}: {inst.opcode} is .sync.aligned over a "
                                "warpgroup: all 128 threads of it must execute it together")
    return thr, cta[first]


def _uniform(wave, inst, op, thr, width, what):
    v = wave.read(op, thr.reshape(-1), width).reshape(thr.shape)
    if not (v == v[:, :1]).all():
        raise UndefinedBehavior(f"line {inst.loc.line}: {inst.opcode} {what} differs between "
                                "the threads of a warpgroup")
    return v[:, 0]


def _imm(op, what, inst):
    if not isinstance(op, Immediate):
        raise OperandError(f"line {inst.loc.line}: wgmma {what} must be an integer constant, "
                           f"got '{op}'")
    return int(op.value)


def _mma_async(wave, inst):
    form = wg.form_of(inst)
    form.check(wave.launch.target, getattr(wave.launch, "ptx_version", None))
    ops = list(inst.operands)
    d_op, a_op, b_op = ops[:3]
    a_regs = isinstance(a_op, Vector)
    if len(ops) != form.operand_count(a_regs):
        raise OperandError(f"{form.text} with A from {'registers' if a_regs else 'a descriptor'} "
                           f"takes {form.operand_count(a_regs)} operands, got {len(ops)} "
                           f"(PTX ISA {wg.S})")
    if not isinstance(d_op, Vector) or len(d_op.elements) != form.d_regs:
        raise OperandError(f"{form.text}: d must be a vector of {form.d_regs} registers")
    if a_regs and len(a_op.elements) != form.a_fragment.nregs:
        raise OperandError(f"{form.text}: a must be {form.a_fragment.nregs} registers")
    rest = ops[3:]
    meta_op = sel = None
    if form.sparse:
        meta_op, sel = rest[0], _imm(rest[1], "sp-sel", inst)
        rest = rest[2:]
    scale_d_op, imms = rest[0], [_imm(o, "immediate", inst) for o in rest[1:]]
    row = form.legal
    scale_a = scale_b = 1
    trans_a = trans_b = 0
    if row.scale:
        scale_a, scale_b = imms[:2]
        imms = imms[2:]
    if row.trans:
        trans_b = imms[-1]
        trans_a = 0 if a_regs else imms[0]

    def run(idx):
        thr, ctas = _groups(wave, inst, idx)
        flat = thr.reshape(-1)
        g = thr.shape[0]
        d = np.stack([wave.read(e, flat, 32).astype(np.uint32).reshape(g, WG)
                      for e in d_op.elements])
        kw = dict(scale_a=scale_a, scale_b=scale_b, trans_a=trans_a, trans_b=trans_b)
        if isinstance(scale_d_op, Immediate):
            kw["scale_d"] = bool(scale_d_op.value)
        else:
            kw["scale_d"] = _uniform(wave, inst, scale_d_op, thr, 1, "scale-d").astype(bool)
        if a_regs:
            kw["a"] = np.stack([wave.read(e, flat, 32).astype(np.uint32).reshape(g, WG)
                                for e in a_op.elements])
        else:
            kw["a_desc"] = _uniform(wave, inst, a_op, thr, 64, "a-desc").astype(np.uint64)
        kw["b_desc"] = _uniform(wave, inst, b_op, thr, 64, "b-desc").astype(np.uint64)
        if form.sparse:
            kw["meta"] = wave.read(meta_op, flat, 32).astype(np.uint32).reshape(g, WG)
            kw["selector"] = sel
        kw["smem"] = [wave.memory.shared.cta_view(int(c)) for c in ctas]
        san = wave.san
        if san is not None and san.enabled:
            _san_wgmma(san, wave, inst, form, thr, ctas, kw, trans_a, trans_b)
        out = wg.wgmma(form, d, **kw)                           # (d_regs, G, 128)
        for i, e in enumerate(d_op.elements):
            wave.write(e, flat, out[i].reshape(-1))
        wave.advance(idx)
    return run


def _san_wgmma(san, wave, inst, form, thr, ctas, kw, trans_a, trans_b):
    """The sanitizer's view of the step's wgmma.mma_async: one asynchronous read of each
    warpgroup's shared-memory operands, in flight until its wgmma.wait_group (9.7.15.6:
    the operands may not be written before)."""
    recs, words = [], []
    for g in range(thr.shape[0]):
        rec = san.new_rec("wgmma", inst, int(thr[g, 0]), "mma")
        parts = [wg.operand_bytes(int(kw["b_desc"][g]), form.btype, form.n, form.k,
                                  "MN" if trans_b else "K")]
        if "a_desc" in kw:
            parts.append(wg.operand_bytes(int(kw["a_desc"][g]), form.atype, 64, form.a_cols,
                                          "MN" if trans_a else "K"))
        recs.append(rec)
        words.append(san._operand_words(parts) + int(ctas[g]) * san.SW)
        san.wgmma_issue(rec, int(thr[g, 0]) // WARP_SIZE)
    san.async_words_multi(recs, inst, words, write=False)


def _ordering(wave, inst):
    """wgmma.fence / commit_group / wait_group: every wgmma.mma_async completed at issue (the
    sanitizer learns that a warpgroup's wgmma completed at its wait_group)."""
    san = wave.san
    if san is None or not san.enabled or inst.opcode == "wgmma.fence":
        return wave.advance
    commit = inst.opcode == "wgmma.commit_group"
    n = 0 if commit else _imm(inst.operands[0], "wait_group count", inst)

    def run(idx):
        firsts = np.unique(idx // WG) * (WG // WARP_SIZE)
        for w0 in firsts.tolist():
            if commit:
                san.wgmma_commit(w0)
            else:
                san.wgmma_wait(w0, n)
        wave.advance(idx)
    return run


BUILDERS = {"wgmma.mma_async": _mma_async, "wgmma.fence": _ordering,
            "wgmma.commit_group": _ordering, "wgmma.wait_group": _ordering}
