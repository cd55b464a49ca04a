"""Legality of the dense warp-level mma (9.7.14.5.14), wgmma.mma_async (9.7.15.5.2) and
ldmatrix / stmatrix / movmatrix: the one table of each is its isa module's (isa.mma_sync.LEGAL,
isa.wgmma.LEGAL, isa.matrix.NOTES), checked against ptxas 13.5 there
(tests/isa/test_mma_sync_legality.py, test_matrix_legality.py); here the module's target and
.version go through it and the operand vectors are counted."""
from __future__ import annotations

from ptxsim.errors import PtxValidationError, UnsupportedFeature
from ptxsim.isa import matrix as isa_matrix
from ptxsim.isa import mma_sync, wgmma
from ptxsim.ptx.instruction import Vector
from ptxsim.ptx.legality.common import Check
from ptxsim.ptx.targets import vstr


def _vectors(c: Check, ops, counts, names):
    for k, (n, what) in enumerate(zip(counts, names)):
        if k >= len(ops):
            break
        op = ops[k]
        if isinstance(op, Vector):
            if len(op.elements) != n:
                c.err(f"operand {what} of {c.name} needs {n} registers, got {len(op.elements)}")
        elif n:
            c.err(f"operand {what} of {c.name} must be a vector of {n} registers")


def dense_mma(c: Check) -> None:
    """The dense branch of the `mma` rule (ptx/legality/mma_sp.py calls it)."""
    c.name = "mma"
    try:
        form = mma_sync.form_of(c.i)
        form.check_target(str(c.ctx.target))
        form.check_version(vstr(c.ctx.ptx))
    except PtxValidationError as e:
        c.err(e.message if hasattr(e, "message") else str(e))
        return
    nops = 8 if form.block_scale else 4
    if len(c.i.operands) != nops:
        c.err(f"{form.text} takes {nops} operands, got {len(c.i.operands)} (PTX ISA {mma_sync.S})")
        return
    _vectors(c, c.i.operands, [form.d.nregs, form.a.nregs, form.b.nregs, form.c.nregs], "dabc")


def wgmma_mma_async(c: Check) -> None:
    try:
        form = wgmma.form_of(c.i)
        form.check(str(c.ctx.target), vstr(c.ctx.ptx))
    except PtxValidationError as e:
        c.err(e.message if hasattr(e, "message") else str(e))
        return
    ops = c.i.operands
    a_regs = len(ops) > 1 and isinstance(ops[1], Vector)
    if len(ops) != form.operand_count(a_regs):
        c.err(f"{form.text} takes {form.operand_count(a_regs)} operands with A from "
              f"{'registers' if a_regs else 'a descriptor'}, got {len(ops)} (PTX ISA {wgmma.S})")
        return
    _vectors(c, ops, [form.d_regs] + ([form.a_fragment.nregs] if a_regs else []),
             ["d", "a"])


def matrix_move(c: Check) -> None:
    try:
        form = isa_matrix.form_of(c.i)
        isa_matrix.check(form, str(c.ctx.target), vstr(c.ctx.ptx))
    except PtxValidationError as e:
        c.err(e.message if hasattr(e, "message") else str(e))
    except UnsupportedFeature:
        pass                    # a shape ptxsim does not model: ptxas's business, not refused


RULES = {"wgmma.mma_async": wgmma_mma_async, "ldmatrix": matrix_move, "stmatrix": matrix_move,
         "movmatrix": matrix_move}
