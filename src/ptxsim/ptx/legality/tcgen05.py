"""Legality of the tcgen05.* instructions, transcribed from PTX ISA 9.7.16 (shared/spec/
tcgen05-chapter-stack-video-misc.txt, tcgen05-mma-sp.md, tcgen05-cp-shift.md)."""
from __future__ import annotations

from dataclasses import replace

from ptxsim.isa import tcgen05_mma as isa_mma
from ptxsim.isa import tmem as isa_tmem
from ptxsim.isa import tmem_cp as isa_cp
from ptxsim.isa import tmem_ldst as isa_ldst
from ptxsim.ptx.legality.common import Check
from ptxsim.isa.targets import ARCH_SPECIFIC_10X_11X, SCALE_INPUT_D  # noqa: F401 (re-exported)

# The Tensor Memory instructions have one table each, in their isa modules (isa/tmem.py,
# tmem_ldst.py, tmem_cp.py FORMS: slots, operands, nCols rule, PTX ISA and Target ISA notes);
# here only the cross-field rules are worded, reading every fact from those tables.
V86 = isa_tmem.TCGEN05_SINCE
LD_RED_TARGETS = isa_ldst.LD_RED_TARGETS
SHIFT_TARGETS = isa_cp.SHIFT_TARGETS         # sm_100a, sm_101a (= sm_110a), sm_103a


# derived read-only views of the isa tables (tests/ptx/test_ptxas_corpus.py reads them)
SHAPES_LDST = {"." + k: v for k, v in isa_ldst.REGS_AT_X1.items()}
NUMS = {f".x{n}": n for n in isa_ldst.NUMS}
CP_SHAPES = " ".join("." + k for k in isa_cp.CP_SHAPES)


# 9.7.16.7.1 alloc / dealloc / relinquish_alloc_permit, 9.7.16.8.5 wait, 9.7.16.9.3 shift,
# 9.7.16.11.1 fence: nothing outside the rows.
def _form(c: Check) -> None:
    c.form(_FORMS[c.i.opcode])


# ------------------------------------------------------------------- 9.7.16.12.1 commit
def commit(c: Check) -> None:
    f = _FORMS["tcgen05.commit"]
    q = c.slots(list(f.slots), f.source)
    mc = q[".multicast"] is not None
    if c.count(isa_tmem.commit_operand_count(mc), form=isa_tmem.COMMIT_COUNT_RULE):
        for k, spec in enumerate(f.operands[:len(c.i.operands)]):
            c.operand(k, spec.kinds, spec.name)
    c.notes(f, c.name)


# ---------------------------------------------------------------------- 9.7.16.8.3-4 ld / st
def _regs(shape: str, num: str) -> int | None:
    # Tables 47 / 48: registers = .num x (1 | 2 | 4) by shape; more than 128 is "NA".
    return isa_ldst.registers_of(shape[1:], int(num[2:]))


def ld(c: Check) -> None:
    if c.i.has(".red"):
        return _ld_red(c)
    _ldst(c, _FORMS["tcgen05.ld"], "shape .16x32bx2 takes immHalfSplitoff")


def st(c: Check) -> None:
    _ldst(c, _FORMS["tcgen05.st"])


def _ldst(c: Check, f, split_note: str = "") -> None:
    q = c.slots(list(f.slots), f.source)
    _ldst_shape(c, q, f.source)
    _ldst_operands(c, q, f, split_note)
    c.notes(f, c.name)


def _ld_red(c: Check) -> None:
    f = _FORMS["tcgen05.ld.red"]
    s = f.source
    q = c.slots(list(f.slots), s)
    if q[".type"] and q[".type"][1:] != "f32" and (q[".abs"] or q[".NaN"]):     # RED_FLOAT_ONLY
        c.err(f"{q['.abs'] or q['.NaN']} is only allowed with .f32 for tcgen05.ld.red ({s})")
    if q[".num"] and int(q[".num"][2:]) < isa_ldst.RED_MIN_NUM:
        c.err(f"tcgen05.ld.red requires .num of at least .x{isa_ldst.RED_MIN_NUM} ({s})")
    _ldst_shape(c, q, s)
    _ldst_operands(c, q, f)
    c.notes(f)


def _ldst_operands(c: Check, q: dict, f, split_note: str = "") -> None:
    """The operand list the shape fixes (isa_ldst.with_shape): count, kinds, the vector's length."""
    ops = isa_ldst.with_shape(f, q[".shape"]).operands
    split = len(ops) > len(isa_ldst.with_shape(f, None).operands)
    if c.count(len(ops), form=split_note if split else ""):
        for k, spec in enumerate(ops):
            c.operand(k, spec.kinds, spec.name)
        _ldst_vec(c, q, next(k for k, o in enumerate(ops) if o.name == "r"))


def _ldst_shape(c: Check, q: dict, s: str) -> None:
    if q.get(".shape") and q.get(".num") and _regs(q[".shape"], q[".num"]) is None:
        c.err(f"{q['.shape']} with {q['.num']} is not a valid combination for {c.name} "
              f"(Table 47/48: more than {isa_ldst.MAX_REGISTERS} registers)")


def _ldst_vec(c: Check, q: dict, idx: int) -> None:
    if q.get(".shape") and q.get(".num"):
        n = _regs(q[".shape"], q[".num"])
        if n is not None:
            c.vector(idx, n, "r")


# -------------------------------------------------------------------------- 9.7.16.9.2 cp
def cp(c: Check) -> None:
    f = _FORMS["tcgen05.cp"]
    s = f.source
    q = c.slots(list(f.slots), s)
    shape, mc = q[".shape"], q[".multicast"]
    if shape:
        need = {"." + m for m in isa_cp.CP_MULTICAST[shape[1:]] if m}
        problem = isa_cp.multicast_problem(shape[1:], mc and mc[1:])
        if problem == "requires":
            c.err(f"tcgen05.cp shape {shape} requires multicast {' or '.join(sorted(need))} ({s})")
        elif problem:
            c.err(f"tcgen05.cp multicast {mc} is not allowed with shape {shape} ({s})")
    if bool(q[".dst_fmt"]) != bool(q[".src_fmt"]):
        c.err(f"tcgen05.cp decompression needs both .dst_fmt and .src_fmt ({s})")
    elif q[".dst_fmt"]:
        k = c.i.qualifiers.index(q[".dst_fmt"])
        # `.dst_fmt.src_fmt` is one unit (ptxas: "Illegal modifier '.b6x16_p32.b8x16'").
        if k + 1 >= len(c.i.qualifiers) or c.i.qualifiers[k + 1] != q[".src_fmt"]:
            c.err(f"tcgen05.cp decompression is written .dst_fmt.src_fmt "
                  f"({q['.dst_fmt']}{q['.src_fmt']}) ({s})")
    if c.count(len(f.operands)):
        for k, spec in enumerate(f.operands):
            c.operand(k, spec.kinds, spec.name)
    c.notes(f, c.name)


_FORMS = {**isa_tmem.FORMS, **isa_ldst.FORMS, **isa_cp.FORMS}


# ------------------------------------------------------------ 9.7.16.10.9 mma / .sp / .ws / .ws.sp
# One table: isa/tcgen05_mma.py (SLOTS, RULES, PTX_VERSION_NOTES, TARGET_NOTES); here the flow
# and the operand forms. Derived read-only views (tests/ptx/test_ptxas_corpus.py, test_targets):
KINDS = " ".join(".kind::" + k for k in isa_mma.KINDS)
BLOCK_SCALED = {".kind::" + k for k in isa_mma.BLOCK_SCALED}
SCALE_VECTORSIZE = {".kind::" + k: {isa_mma._sv(v) for v in vs}          # Table 54 / 55
                    for k, vs in isa_mma.SCALE_VEC_KINDS.items()}
SCALE_VEC_NX = ARCH_SPECIFIC_10X_11X         # .scale_vec::NX: the arch-specific targets (ptxas)
SP_MXF4 = ARCH_SPECIFIC_10X_11X              # .sp with .kind::mxf4 / mxf4nvf4
_SID_NOTE = next(n for n in isa_mma.TARGET_NOTES if n.stage == "operands")


def mma(c: Check) -> None:
    sp, ws = c.i.has(".sp"), c.i.has(".ws")
    s = isa_mma.SECTIONS[(sp, ws)]
    c.name = "tcgen05.mma" + (".ws" if ws else "") + (".sp" if sp else "")
    q = c.slots(list(isa_mma.SLOTS[ws]), s)
    view = isa_mma.view_of(q, sp, ws)
    for rule in isa_mma.RULES:
        if rule.says and rule.stage == "qualifiers" and rule.illegal(view):
            c.err(rule.says(view, c.name, s))
    _mma_operands(c, q, view, sp, ws, s)
    for note in isa_mma.PTX_VERSION_NOTES:            # PTX ISA notes
        if note.applies(view):
            c.since(note.since, note.what(view), s)
    for note in isa_mma.TARGET_NOTES:                 # Target ISA notes
        if note.stage == "qualifiers" and note.applies(view):
            c.target(note.req, note.what(view), s)


def _mma_operands(c: Check, q: dict, view, sp: bool, ws: bool, s: str) -> None:
    ops = c.i.operands
    kind = q[".kind"]
    bs = q.get(".block_scale") or kind in BLOCK_SCALED      # operand form follows the kind
    # fixed head: [d-tmem], a (a-desc | [a-tmem]), b-desc, {[sp-meta-tmem]}, idesc
    head = 5 if sp else 4
    if len(ops) < head + 1:
        c.count(head + 1, head + 4)
        return
    c.operand(0, "addr", "d-tmem")
    c.operand(1, "r64|imm|addr", "a-desc / a-tmem")
    c.operand(2, "r64|imm", "b-desc")
    if sp:
        c.operand(3, "addr", "sp-meta-tmem")
    c.operand(head - 1, "r32|imm", "idesc")
    view = replace(view, a_tmem=ops[1].kind == "addr")
    if isa_mma.RULE["ashift_a_tmem"].illegal(view):
        c.err(isa_mma.RULE["ashift_a_tmem"].says(view, c.name, s))
    if ws:
        # enable-input-d {, zero-column-mask-desc}
        if c.count(head + 1, head + 2, form="enable-input-d {, zero-column-mask-desc}"):
            c.operand(head, "pred|imm", "enable-input-d")
            if len(ops) == head + 2:
                c.operand(head + 1, "r64|imm", "zero-column-mask-desc")
        return
    if bs:
        if c.count(head + 3, form="[scale-A-tmem], [scale-B-tmem], enable-input-d"):
            c.operand(head, "addr", "scale-A-tmem")
            c.operand(head + 1, "addr", "scale-B-tmem")
            c.operand(head + 2, "pred|imm", "enable-input-d")
        return
    # { disable-output-lane }, enable-input-d {, scale-input-d}
    k = head
    if k < len(ops) and ops[k].kind == "vec":
        size = isa_mma.DISABLE_OUTPUT_LANE_WORDS.get(view.cta_group, 4)
        c.vector(k, size, "disable-output-lane")
        k += 1
    if k >= len(ops):
        c.err(f"{c.name} is missing enable-input-d ({s})")
        return
    c.operand(k, "pred|imm", "enable-input-d")
    k += 1
    if k < len(ops):
        view = replace(view, scale_input_d=c.imm(k) if c.imm(k) is not None else "register")
        if isa_mma.RULE["scale_input_d_kind"].illegal(view):
            c.err(isa_mma.RULE["scale_input_d_kind"].says(view, c.name, s))
        if c.operand(k, "imm", "scale-input-d"):
            r = isa_mma.SCALE_INPUT_D_RANGE
            c.imm_range(k, r.start, r.stop - 1, "scale-input-d", s)
        c.target(_SID_NOTE.req, _SID_NOTE.what(view), s)
        k += 1
    if k < len(ops):
        c.err(f"{c.name} takes at most {k} operands here, got {len(ops)} ({s})")


RULES = {
    "tcgen05.alloc": _form, "tcgen05.dealloc": _form, "tcgen05.relinquish_alloc_permit": _form,
    "tcgen05.ld": ld, "tcgen05.st": st, "tcgen05.wait": _form, "tcgen05.cp": cp,
    "tcgen05.shift": _form, "tcgen05.mma": mma, "tcgen05.fence": _form,
    "tcgen05.commit": commit,
}
