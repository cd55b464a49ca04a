"""Legality of the video instructions, transcribed from PTX ISA 9.7.18 (scalar 9.7.18.1,
SIMD 9.7.18.2) in shared/spec/tcgen05-chapter-stack-video-misc.txt."""
from __future__ import annotations

import re

from ptxsim.ptx.instruction import Instruction, Register
from ptxsim.ptx.legality.common import Check, Slot
from ptxsim.isa import video as isa_video

INT = {".u32", ".s32"}
SCALAR_SEL = {".b0", ".b1", ".b2", ".b3", ".h0", ".h1"}                 # .dsel = .asel = .bsel
OP2 = {".add", ".min", ".max"}
CMP = {".eq", ".ne", ".lt", ".le", ".gt", ".ge"}
MASK2 = {".h0", ".h1", ".h10"}
SEL2 = {f".h{x}{y}" for x in "0123" for y in "0123"}                     # .hxy, x,y in 0..3
MASK4 = set(".b0 .b1 .b10 .b2 .b20 .b21 .b210 .b3 .b30 .b31 .b310 .b32 .b320 .b321 .b3210".split())
SEL4 = re.compile(r"\.b[0-7]{4}")                                        # .bxyzw, x..w in 0..7

SCALAR_OPS = {"vadd", "vsub", "vabsdiff", "vmin", "vmax"}               # 9.7.18.1.1
SHIFT_OPS = {"vshl", "vshr"}                                             # 9.7.18.1.2
SIMD2_OPS = {"vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2"}  # 9.7.18.2.1
SIMD4_OPS = {"vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4"}  # 9.7.18.2.3
SECTION = {**{o: "9.7.18.1.1" for o in SCALAR_OPS}, **{o: "9.7.18.1.2" for o in SHIFT_OPS},
           "vmad": "9.7.18.1.3", "vset": "9.7.18.1.4", **{o: "9.7.18.2.1" for o in SIMD2_OPS},
           "vset2": "9.7.18.2.2", **{o: "9.7.18.2.3" for o in SIMD4_OPS}, "vset4": "9.7.18.2.4"}


def _split_types(c: Check, n: int, s: str):
    """Video type qualifiers are positional (.dtype.atype.btype): take the first n."""
    types = [q for q in c.i.qualifiers if q in INT]
    if len(types) != n:
        names = ".dtype.atype.btype" if n == 3 else ".atype.btype"
        c.err(f"{c.name} takes {n} type qualifiers ({names}, each .u32 or .s32), got {len(types)} ({s})")
        return None, [q for q in c.i.qualifiers if q not in INT]
    return types, [q for q in c.i.qualifiers if q not in INT]


def _slots(c: Check, rest, slots, s):
    sub = Check(Instruction(c.i.opcode, tuple(rest), c.i.operands, c.i.predicate, c.i.loc), c.ctx,
                c.out, c.name)
    q = sub.slots(slots, s)
    c.failed |= sub.failed
    return q


def _sel(c: Check, idx: int, allowed, what: str, s: str, regex=None) -> None:
    if idx >= len(c.i.operands):
        return
    op = c.i.operands[idx]
    sel = getattr(op, "selector", None)
    if sel is None:
        return
    if not (sel in allowed or (regex is not None and regex.fullmatch(sel))):
        c.err(f"selector '{sel}' on {what} of {c.name} is not valid ({s})")


def _no_sel(c: Check, idx: int, what: str, s: str) -> None:
    op = c.i.operands[idx] if idx < len(c.i.operands) else None
    if getattr(op, "selector", None):
        c.err(f"{what} of {c.name} takes no selector in this form ({s})")


def _regs(c: Check, idxs, s: str) -> None:
    names = "dabc"
    for k in idxs:
        c.operand(k, "r32|imm" if k > 0 else "r32", names[k])


def scalar(c: Check) -> None:
    op = c.i.opcode
    s = SECTION[op]
    nt = 2 if op == "vset" else 3
    types, rest = _split_types(c, nt, s)
    slots = [Slot.of(".sat", ".sat"), Slot.of(".op2", OP2)]
    if op in SHIFT_OPS:
        slots.append(Slot.of(".mode", ".clamp .wrap", True))
    if op == "vset":
        slots = [Slot.of(".cmp", CMP, True), Slot.of(".op2", OP2)]
    if op == "vmad":
        slots = [Slot.of(".po", ".po"), Slot.of(".sat", ".sat"), Slot.of(".scale", ".shr7 .shr15")]
    q = _slots(c, rest, slots, s)
    if types and op in SHIFT_OPS and types[2] != ".u32":
        c.err(f"{op} requires .btype .u32, got {types[2]} ({s})")
    n = len(c.i.operands)
    if op == "vmad":
        if c.count(4):
            _regs(c, range(4), s)
            _no_sel(c, 0, "d", s)
            for k, w in ((1, "a"), (2, "b")):
                _sel(c, k, SCALAR_SEL, w, s)
            _no_sel(c, 3, "c", s)
            neg = [getattr(o, "minus", False) for o in c.i.operands]
            if q[".po"] and any(neg):
                c.err(f"source operands may not be negated in vmad .po mode ({s})")
            elif (neg[1] != neg[2]) and neg[3]:
                # "PTX allows negation of either (a*b) or c."
                c.err(f"vmad may negate either the product (a xor b) or c, not both ({s})")
        _since_target(c, "scalar", s)
        return
    _no_negation(c, s)
    if q.get(".op2"):
        if c.count(4, form=f"{q['.op2']} secondary operation: d, a, b, c"):
            _no_sel(c, 0, "d", s)
    elif n == 4:
        op0 = c.i.operands[0]
        if not getattr(op0, "selector", None):
            # The syntax wants .op2 or d.dsel; ptxas 13.0 accepts neither, and the H200 ignores
            # c (result = the three-operand form, 12 variants x 1024 operand sets; the SASS
            # does not load c: tests/isa/data/video_c_sm90.npz). Legal, but surely not meant.
            c.warn(f"{op} with a third source operand but neither .op2 nor d.dsel ignores c, "
                   f"as the GPU does ({s})")
    else:
        if c.count(3, 4):
            _no_sel(c, 0, "d", s)
    _regs(c, range(min(n, 4)), s)
    _sel(c, 0, SCALAR_SEL, "d", s)
    _sel(c, 1, SCALAR_SEL, "a", s)
    _sel(c, 2, SCALAR_SEL, "b", s)
    if n == 4:
        _no_sel(c, 3, "c", s)
    _since_target(c, "scalar", s)


def simd(c: Check) -> None:
    op = c.i.opcode
    s = SECTION[op]
    two = op.endswith("2")
    nt = 2 if op.startswith("vset") else 3
    types, rest = _split_types(c, nt, s)
    if op.startswith("vset"):
        slots = [Slot.of(".cmp", CMP, True), Slot.of(".add", ".add")]
    else:
        slots = [Slot.of(".sat", ".sat"), Slot.of(".add", ".add")]
    q = _slots(c, rest, slots, s)
    if q.get(".sat") and q.get(".add"):
        c.err(f"{op}: .sat and .add cannot be combined ({s})")
    _no_negation(c, s)
    if c.count(4, form="d{.mask}, a{.asel}, b{.bsel}, c"):
        _regs(c, range(3), s)
        c.operand(3, "r32", "c")            # ptxas: "Incorrect video selector for operand 3"
        mask, sel = (MASK2, SEL2) if two else (MASK4, set())
        _sel(c, 0, mask, "d (mask)", s)
        _sel(c, 1, sel, "a", s, None if two else SEL4)
        _sel(c, 2, sel, "b", s, None if two else SEL4)
        _no_sel(c, 3, "c", s)
    _since_target(c, "simd", s)


def _no_negation(c: Check, s: str) -> None:
    """Only vmad negates operands; ptxas 13.0: "Operand negation not allowed for instruction
    'vadd'" (tests/test_legality_consistency.py)."""
    if any(getattr(o, "minus", False) for o in c.i.operands):
        c.err(f"operand negation is only allowed on vmad, not {c.name} ({s})")


def _since_target(c: Check, kind: str, s: str) -> None:
    """PTX ISA / Target ISA notes, from isa/video.py (scalar: 2.0, sm_20; SIMD: 3.0, sm_30)."""
    c.since(isa_video.MIN_PTX[kind], c.name, s)
    c.target(isa_video.TARGETS[kind], c.name, s)


RULES = {**{o: scalar for o in SCALAR_OPS | SHIFT_OPS | {"vmad", "vset"}},
         **{o: simd for o in SIMD2_OPS | SIMD4_OPS | {"vset2", "vset4"}}}
