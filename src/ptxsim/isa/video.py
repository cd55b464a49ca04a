"""PTX video instructions (PTX ISA 9.7.18): scalar vadd vsub vabsdiff vmin vmax vshl vshr vmad vset
and SIMD vadd2/4 vsub2/4 vavrg2/4 vabsdiff2/4 vmin2/4 vmax2/4 vset2/4.

Pure, vectorised functions over uint32 register arrays (one element per thread), a legality table
transcribed from the spec, and a small text front end::

    ins = parse("vadd.s32.u32.s32.sat.add %r1, %r2.b0, %r3.h1, %r4;")
    d = evaluate(ins, a, b, c, d_old)            # uint32 array
    execute("vadd.u32.u32.u32 %d, %a, %b;", {"%a": ..., "%b": ...})  -> {"%d": ...}

The spec's pseudocode is followed except where the hardware vectors recorded on an H200
(tests/data/hardware/video/video_sm90.npz, replayed by tests/isa/test_video_hw.py) disagree; each such place
is marked ``HW:`` below and listed in docs/video.md.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import OperandError, PtxValidationError  # noqa: F401 (re-exported)
from ptxsim.isa.legality import Slot, count_problem, match_slots
from ptxsim.isa.targets import AtLeast, Req, parse_target

# ---------------------------------------------------------------- legality (9.7.18.1, 9.7.18.2)
# The one table of 9.7.18 (SYNTAX below, with the cross-field rules in `problems`), read by
# `parse` here and by the front-end validator (ptx/legality/video.py).
TYPES = ("u32", "s32")
SCALAR_OPS = ("vadd", "vsub", "vabsdiff", "vmin", "vmax")           # 9.7.18.1.1
SHIFT_OPS = ("vshl", "vshr")                                         # 9.7.18.1.2
SIMD_OPS = ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax")     # 9.7.18.2.1 / .3
CMPS = ("eq", "ne", "lt", "le", "gt", "ge")                          # 9.7.18.1.4, 9.7.18.2.2 / .4
SECOPS = ("add", "min", "max")                                       # .op2 / .secop
SCALAR_SELS = ("b0", "b1", "b2", "b3", "h0", "h1")                   # .asel .bsel .dsel
MASKS2 = ("h0", "h1", "h10")                                         # 9.7.18.2.1, default h10
MASKS4 = ("b0", "b1", "b10", "b2", "b20", "b21", "b210", "b3", "b30", "b31", "b310", "b32",
          "b320", "b321", "b3210")                                   # 9.7.18.2.3, default b3210
SEL2 = tuple(f"h{x}{y}" for x in "0123" for y in "0123")            # 9.7.18.2.1 .hxy
SEL4 = re.compile(r"b[0-7]{4}")                                      # 9.7.18.2.3 .bxyzw
SCALES = ("shr7", "shr15")                                           # 9.7.18.1.3
MODES = ("clamp", "wrap")                                            # 9.7.18.1.2
# Spec-legal byte selectors that ptxas 13.0 rejects with "Parsing error near '.b1024'"
# (measured: hardware/common/build_record/legality.json); ptxsim rejects them too, naming the cause.
PTXAS_UNLEXABLE_SELECTORS = frozenset({"b1024"})
# Target ISA notes: scalar video sm_20, SIMD video sm_30; PTX ISA 2.0 / 3.0
MIN_TARGET = {"scalar": 20, "simd": 30}
TARGETS = {kind: Req(AtLeast(sm)) for kind, sm in MIN_TARGET.items()}
MIN_PTX = {"scalar": (2, 0), "simd": (3, 0)}


def _dot(xs) -> tuple:
    return tuple("." + x for x in xs)


@dataclass(frozen=True)
class Syntax:
    """One syntax block of 9.7.18. `types`: 3 (.dtype.atype.btype) or 2 (.atype.btype, vset),
    each .u32 or .s32, in that order among the other qualifiers (ptxas 13.0 accepts
    `vadd.sat.u32.u32.u32`); `slots`: the other qualifiers; `d_sel`: the selectors (scalar
    .dsel) or masks (SIMD) d may carry; `ab_sel`: those of a and b (a tuple or a pattern)."""
    section: str
    kind: str                  # "scalar" | "simd": the PTX ISA / Target ISA notes
    types: int
    slots: tuple
    d_sel: tuple
    ab_sel: object


_SAT, _ADD = Slot.of(".sat", ".sat"), Slot.of(".add", ".add")
_OP2 = Slot.of(".op2", _dot(SECOPS))
_CMP = Slot.of(".cmp", _dot(CMPS), True)
_SCALAR_SEL = _dot(SCALAR_SELS)
SYNTAX: dict[str, Syntax] = {
    # 9.7.18.1.1 "vop.dtype.atype.btype{.sat}{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};"
    **{op: Syntax("9.7.18.1.1", "scalar", 3, (_SAT, _OP2), _SCALAR_SEL, _SCALAR_SEL)
       for op in SCALAR_OPS},
    # 9.7.18.1.2 "vop.dtype.atype.u32{.sat}.mode{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};"
    **{op: Syntax("9.7.18.1.2", "scalar", 3, (_SAT, _OP2, Slot.of(".mode", _dot(MODES), True)),
                  _SCALAR_SEL, _SCALAR_SEL) for op in SHIFT_OPS},
    # 9.7.18.1.3 "vmad.dtype.atype.btype{.sat}{.scale} d, {-}a{.asel}, {-}b{.bsel}, {-}c;" and
    # "vmad.dtype.atype.btype.po{.sat}{.scale} d, a{.asel}, b{.bsel}, c;"
    "vmad": Syntax("9.7.18.1.3", "scalar", 3,
                   (Slot.of(".po", ".po"), _SAT, Slot.of(".scale", _dot(SCALES))), (), _SCALAR_SEL),
    # 9.7.18.1.4 "vset.atype.btype.cmp{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};"
    "vset": Syntax("9.7.18.1.4", "scalar", 2, (_CMP, _OP2), _SCALAR_SEL, _SCALAR_SEL),
    # 9.7.18.2.1 "vop2.dtype.atype.btype{.sat}{.add} d{.mask}, a{.asel}, b{.bsel}, c;"
    **{op + "2": Syntax("9.7.18.2.1", "simd", 3, (_SAT, _ADD), _dot(MASKS2), _dot(SEL2))
       for op in SIMD_OPS},
    # 9.7.18.2.2 "vset2.atype.btype.cmp{.add} d{.mask}, a{.asel}, b{.bsel}, c;"
    "vset2": Syntax("9.7.18.2.2", "simd", 2, (_CMP, _ADD), _dot(MASKS2), _dot(SEL2)),
    # 9.7.18.2.3 "vop4.dtype.atype.btype{.sat}{.add} d{.mask}, a{.asel}, b{.bsel}, c;"
    **{op + "4": Syntax("9.7.18.2.3", "simd", 3, (_SAT, _ADD), _dot(MASKS4), SEL4)
       for op in SIMD_OPS},
    # 9.7.18.2.4 "vset4.atype.btype.cmp{.add} d{.mask}, a{.asel}, b{.bsel}, c;"
    "vset4": Syntax("9.7.18.2.4", "simd", 2, (_CMP, _ADD), _dot(MASKS4), SEL4),
}


def problems(opcode: str, qualifiers, operands, operand_kind=None):
    """Judge one video instruction against SYNTAX and the cross-field rules of 9.7.18. Yields
    ("error" | "warning", message) in reading order. `operands`: objects with `.minus` (negated)
    and `.selector` (".b0", ... or None); `operand_kind(idx, kinds, what)`, when given, is
    called where an operand's kind matters (the validator checks kinds and widths there; the
    isa layer has register names only). The PTX ISA / Target ISA notes are not judged here
    (MIN_PTX, TARGETS)."""
    syn = SYNTAX[opcode]
    s, name, n = syn.section, opcode, len(operands)
    kind_ok = operand_kind or (lambda idx, kinds, what: True)
    sel = [getattr(o, "selector", None) for o in operands]
    neg = [bool(getattr(o, "minus", False)) for o in operands]

    types = [q for q in qualifiers if q in (".u32", ".s32")]
    if len(types) != syn.types:
        names = ".dtype.atype.btype" if syn.types == 3 else ".atype.btype"
        yield "error", (f"{name} takes {syn.types} type qualifiers ({names}, each .u32 or .s32), "
                        f"got {len(types)} ({s})")
        types = None
    q, slot_problems = match_slots(syn.slots, [x for x in qualifiers if x not in (".u32", ".s32")])
    for p in slot_problems:
        yield "error", p.message(name, s)

    def count(lo, hi=None, form=""):
        return count_problem(name, n, lo, hi, form)

    def check_sel(idx, allowed, what):
        x = sel[idx] if idx < n else None
        if x is None:
            return
        ok = x in allowed if isinstance(allowed, tuple) else bool(allowed.fullmatch(x[1:]))
        if not ok:
            yield "error", f"selector '{x}' on {what} of {name} is not valid ({s})"
        elif x[1:] in PTXAS_UNLEXABLE_SELECTORS:
            yield "error", (f"selector '{x}' on {what} of {name} is legal in the spec but ptxas "
                            f"13.0 cannot parse it (it lexes as a single token) ({s})")

    def no_sel(idx, what):
        if idx < n and sel[idx]:
            yield "error", f"{what} of {name} takes no selector in this form ({s})"

    def kinds(idxs):
        for k in idxs:
            kind_ok(k, "r32|imm" if k > 0 else "r32", "dabc"[k])

    def no_negation():
        # Only vmad negates operands; ptxas 13.0: "Operand negation not allowed for
        # instruction 'vadd'" (tests/test_legality_consistency.py)
        if any(neg):
            yield "error", f"operand negation is only allowed on vmad, not {name} ({s})"

    if syn.kind == "simd":
        if q.get(".sat") and q.get(".add"):
            # 9.7.18.2.1: "Saturation cannot be used with the secondary accumulate operation."
            yield "error", f"{name}: .sat and .add cannot be combined ({s})"
        yield from no_negation()
        msg = count(4, form="d{.mask}, a{.asel}, b{.bsel}, c")
        if msg:
            yield "error", msg
            return
        kinds(range(3))
        kind_ok(3, "r32", "c")            # ptxas: "Incorrect video selector for operand 3"
        yield from check_sel(0, syn.d_sel, "d (mask)")
        yield from check_sel(1, syn.ab_sel, "a")
        yield from check_sel(2, syn.ab_sel, "b")
        yield from no_sel(3, "c")
        return

    if types and opcode in SHIFT_OPS and types[2] != ".u32":
        yield "error", f"{opcode} requires .btype .u32, got {types[2]} ({s})"
    if opcode == "vmad":
        msg = count(4)
        if msg:
            yield "error", msg
            return
        kinds(range(4))
        yield from no_sel(0, "d")
        yield from check_sel(1, syn.ab_sel, "a")
        yield from check_sel(2, syn.ab_sel, "b")
        yield from no_sel(3, "c")
        if neg[0]:
            # ptxas 13.0: "Operand negation limited to either (source A xor source B) or
            # source C" for a negated d
            yield "error", f"the destination d of vmad cannot be negated ({s})"
        elif q[".po"] and any(neg):
            yield "error", f"source operands may not be negated in vmad .po mode ({s})"
        elif (neg[1] != neg[2]) and neg[3]:
            # "PTX allows negation of either (a*b) or c."
            yield "error", f"vmad may negate either the product (a xor b) or c, not both ({s})"
        return
    yield from no_negation()
    if q.get(".op2"):
        msg = count(4, form=f"{q['.op2']} secondary operation: d, a, b, c")
        if msg:
            yield "error", msg
        else:
            yield from no_sel(0, "d")
    elif n == 4:
        if not sel[0]:
            # The syntax wants .op2 or d.dsel; ptxas 13.0 accepts neither, and the H200 ignores
            # c (result = the three-operand form, 12 variants x 1024 operand sets; the SASS
            # does not load c: tests/data/hardware/video/video_c_sm90.npz). Legal, but surely not meant.
            yield "warning", (f"{opcode} with a third source operand but neither .op2 nor d.dsel "
                              f"ignores c, as the GPU does ({s})")
    else:
        msg = count(3, 4)
        if msg:
            yield "error", msg
        else:
            yield from no_sel(0, "d")
    kinds(range(min(n, 4)))
    yield from check_sel(0, syn.d_sel, "d")
    yield from check_sel(1, syn.ab_sel, "a")
    yield from check_sel(2, syn.ab_sel, "b")
    if n == 4:
        yield from no_sel(3, "c")


@dataclass(frozen=True)
class VideoInstruction:
    op: str                    # vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vavrg
    width: int                 # 1 scalar, 2 or 4 SIMD lanes
    dtype: str                 # u32/s32 ("u32" for vset: its result is unsigned)
    atype: str
    btype: str
    sat: bool = False
    secop: str | None = None   # scalar .add/.min/.max; SIMD "add" = accumulate
    dsel: str | None = None    # scalar merge selector
    mask: str | None = None    # SIMD mask (None = default)
    asel: str | None = None
    bsel: str | None = None
    cmp: str | None = None
    mode: str | None = None    # vshl/vshr
    scale: str | None = None   # vmad
    po: bool = False           # vmad
    neg_a: bool = False
    neg_b: bool = False
    neg_c: bool = False
    regs: tuple = ()           # (d, a, b, c|None) register names
    text: str = ""


_OPC = re.compile(r"^(vadd|vsub|vabsdiff|vmin|vmax|vshl|vshr|vmad|vset|vavrg)(2|4)?$")
_OPND = re.compile(r"^(-?)(%?[A-Za-z_$][\w$]*)(?:(\.\w+))?$")


@dataclass(frozen=True)
class _Operand:
    minus: bool
    name: str
    selector: str | None


def _err(text, msg):
    return PtxValidationError(f"{msg} in '{text.strip()}'")


def parse(text: str) -> VideoInstruction:
    """Parse one video instruction and judge it against SYNTAX (`problems`: raises
    PtxValidationError on the first error, warns VideoOperandIgnored); decode the fields."""
    t = text.strip().rstrip(";").strip()
    m = re.match(r"^(\S+)\s+(.*)$", t)
    if not m:
        raise _err(text, "expected 'opcode operands'")
    parts = m.group(1).split(".")
    om = _OPC.match(parts[0])
    if not om:
        raise _err(text, f"'{parts[0]}' is not a video instruction")
    op, width = om.group(1), int(om.group(2) or 1)
    if width == 1 and op == "vavrg":
        raise _err(text, "vavrg exists only as vavrg2 / vavrg4 (9.7.18.2)")
    if width > 1 and op in ("vshl", "vshr", "vmad"):
        raise _err(text, f"{op} has no SIMD form (9.7.18.2)")
    quals = tuple("." + q for q in parts[1:])
    ops = []
    for o in (x.strip() for x in m.group(2).split(",")):
        pm = _OPND.match(o)
        if not pm:
            raise _err(text, f"bad operand '{o}'")
        ops.append(_Operand(pm.group(1) == "-", pm.group(2), pm.group(3)))
    for severity, msg in problems(parts[0], quals, ops):
        if severity == "error":
            raise _err(text, msg)
        from ptxsim.errors import VideoOperandIgnored
        warnings.warn(VideoOperandIgnored(f"{text.strip()}: {msg}"), stacklevel=3)

    # decode (legal by now)
    types = [x[1:] for x in quals if x in (".u32", ".s32")]
    dtype, atype, btype = ("u32", *types) if op == "vset" else types
    given = set(quals)
    kw: dict = dict(sat=".sat" in given, po=".po" in given)
    for field_, values in (("secop", SECOPS), ("cmp", CMPS), ("mode", MODES), ("scale", SCALES)):
        hit = [v for v in values if "." + v in given]
        if hit:
            kw[field_] = hit[0]
    sels = [o.selector[1:] if o.selector else None for o in ops]
    if op == "vmad":
        kw.update(neg_a=ops[1].minus, neg_b=ops[2].minus, neg_c=ops[3].minus)
    if width == 1:
        kw.update(dsel=sels[0], asel=sels[1], bsel=sels[2])
        if op != "vmad" and len(ops) == 4 and not (sels[0] or kw.get("secop")):
            ops = ops[:3]             # c is ignored (the warning above; docs/video.md)
    else:
        kw.update(mask=sels[0], asel=sels[1], bsel=sels[2])
    regs = tuple(o.name for o in ops) + ((None,) if len(ops) == 3 else ())
    return VideoInstruction(op=op, width=width, dtype=dtype, atype=atype, btype=btype,
                            regs=regs, text=text.strip(), **kw)


# ---------------------------------------------------------------- scalar semantics (9.7.18.1)
def _u32(x) -> np.ndarray:
    return np.asarray(x).astype(np.uint32)


def part_select_sign_extend(x: np.ndarray, typ: str, sel: str | None) -> np.ndarray:
    """partSelectSignExtend: byte / half-word / word of x, sign- or zero-extended (int64)."""
    x = _u32(x).astype(np.int64)
    if sel is None:
        width, shift = 32, 0
    elif sel[0] == "b":
        width, shift = 8, 8 * int(sel[1])
    else:
        width, shift = 16, 16 * int(sel[1])
    v = (x >> shift) & ((1 << width) - 1)
    if typ == "s32":
        v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
    return v


def _clamp(v, signed: bool, bits: int):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return np.clip(v, lo, hi)


_SEL_BITS = {"b": 8, "h": 16}


def opt_merge(dsel: str, tmp, c):
    """optMerge: insert the low byte/half of tmp into c at the dsel position."""
    bits = _SEL_BITS[dsel[0]]
    sh = bits * int(dsel[1])
    field = ((1 << bits) - 1) << sh
    return ((_u32(tmp & 0xFFFFFFFF) << np.uint32(sh)) & np.uint32(field)) | (_u32(c) & np.uint32(~field & 0xFFFFFFFF))


def _scalar_primary(ins: VideoInstruction, ta, tb):
    op = ins.op
    if op == "vadd":
        return ta + tb
    if op == "vsub":
        return ta - tb
    if op == "vabsdiff":
        return np.abs(ta - tb)
    if op == "vmin":
        return np.minimum(ta, tb)
    if op == "vmax":
        return np.maximum(ta, tb)
    if op == "vset":
        return _compare(ins.cmp, ta, tb).astype(np.int64)
    if op in SHIFT_OPS:
        tb = np.minimum(tb, 32) if ins.mode == "clamp" else tb & 0x1F
        if op == "vshr":
            return ta >> tb
        # ta << 32 does not fit int64 when |ta| >= 2^31. The hardware keeps 64 bits of it,
        # (ta mod 2^32) << 32, whose low word is zero and whose comparison with a 32-bit c
        # depends only on its sign as an int64, i.e. the sign of the low word of ta read as
        # s32: stand in sign(that) * 2^40 (the saturating path recomputes it exactly).
        big = (tb == 32)
        lo_s = np.where((ta & 0xFFFFFFFF) >= 1 << 31, (ta & 0xFFFFFFFF) - (1 << 32), ta & 0xFFFFFFFF)
        return np.where(big, np.sign(lo_s) << 40, ta << np.where(big, 0, tb))
    raise AssertionError(op)


def _compare(cmp, x, y):
    return {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}[cmp](x, y)


def _lo32(x):
    return np.asarray(x, dtype=np.int64) & 0xFFFFFFFF


def _sext32(x):
    x = _lo32(x)
    return np.where(x >= 1 << 31, x - (1 << 32), x)


def _wrap_s34(ta, tb):
    """(ta << tb) reduced modulo 2^34 and read as a signed 34-bit number (tb <= 32)."""
    m = (ta & ((np.int64(1) << (34 - tb)) - 1)) << tb
    return np.where(m >= 1 << 33, m - (1 << 34), m)


def _scalar(ins: VideoInstruction, a, b, c):
    ta = part_select_sign_extend(a, ins.atype, ins.asel)
    tb = part_select_sign_extend(b, "u32" if ins.op in SHIFT_OPS else ins.btype, ins.bsel)
    tmp = _scalar_primary(ins, ta, tb)
    signed = ins.dtype == "s32"
    truncated_key = ins.op in ("vadd", "vsub")
    if ins.sat and ins.op in SHIFT_OPS:
        truncated_key = True
        # HW: shifts saturate to the 32-bit range of dtype even when merging into a byte/half
        # (spec: to the sub-word). vshl clamps its intermediate reduced to 34 bits signed
        # (the spec's .s34), so bits shifted beyond bit 33 are lost before the clamp.
        if ins.op == "vshl":
            sh = np.minimum(tb, 32) if ins.mode == "clamp" else tb & 0x1F
            tmp = _clamp(_wrap_s34(ta, sh), signed, 32)
        else:
            tmp = _clamp(tmp, signed, 32)
    elif ins.sat and ins.dsel:
        # HW: sub-word saturation only clamps from above, treating the intermediate as
        # unsigned: a negative value becomes the maximum (0x7f / 0xff / 0x7fff / 0xffff),
        # for signed and unsigned dtype alike (spec: CLAMP(tmp, MAX, MIN)).
        top = (1 << (_SEL_BITS[ins.dsel[0]] - (1 if signed else 0))) - 1
        tmp = np.where((tmp < 0) | (tmp > top), top, tmp)
    elif ins.sat:
        if signed:
            tmp = _clamp(tmp, True, 32)
        else:
            # HW: unsigned 32-bit saturation clamps only from below; a value above U32_MAX
            # is kept and later wraps to its low 32 bits (spec: CLAMP(tmp, U32_MAX, 0)).
            tmp = np.where(tmp < 0, 0, tmp)
    if ins.dsel == "h1":
        # HW: .h1 keeps bits 31..16 of the intermediate in place instead of moving bits
        # 15..0 up (spec: (tmp & 0xffff) << 16); after a sub-word .sat these bits are zero.
        return _u32((_lo32(tmp) & 0xFFFF0000) | (_u32(c).astype(np.int64) & 0xFFFF))
    if ins.dsel:
        return opt_merge(ins.dsel, tmp, c)
    if not ins.secop:
        return _u32(_lo32(tmp))
    if ins.secop == "add":
        return _u32(_lo32(tmp + _u32(c).astype(np.int64)))
    # HW: min/max compare the intermediate (after the saturation above) with c, both read as
    # signed for a signed dtype (vset: atype) and as unsigned 64-bit otherwise. vadd/vsub (and the
    # shifts with .sat) first truncate the intermediate to 32 bits and sign-extend it again;
    # vabsdiff/vmin/vmax/vset and plain shifts keep it exact, as a 64-bit value (spec: the
    # s34 tmp, no truncation).
    cmp_signed = (ins.atype if ins.op == "vset" else ins.dtype) == "s32"
    t64 = _sext32(tmp) if truncated_key else np.asarray(tmp, dtype=np.int64)
    if cmp_signed:
        key_t, key_c = t64, _sext32(c)
    else:
        key_t = t64.astype(np.uint64)
        key_c = _u32(c).astype(np.uint64)
    pick_t = (key_t > key_c) if ins.secop == "max" else (key_t < key_c)
    return _u32(np.where(pick_t, _lo32(tmp), _u32(c).astype(np.int64)))


def _vmad(ins: VideoInstruction, a, b, c):
    """9.7.18.1.3 vmad, as the hardware computes it (every step below was read off the
    recorded vectors; the spec's 128-bit formulation differs where marked HW)."""
    ta = part_select_sign_extend(a, ins.atype, ins.asel)
    tb = part_select_sign_extend(b, ins.btype, ins.bsel)
    neg_p = ins.neg_a ^ ins.neg_b
    signed_final = ins.atype == "s32" or ins.btype == "s32" or neg_p or ins.neg_c
    # HW: the product is a signed 32x32->64 multiply of the selected operands, so a whole-word
    # .u32 operand >= 2^31 counts as negative (spec: exact ta * tb of the zero-extended values).
    p = _sext32(ta) * _sext32(tb)
    # HW: c is always sign-extended from 32 bits (spec: only when the result is signed).
    cc = _sext32(c)
    if ins.po:
        t = p + cc + 1
    elif neg_p:
        t = -p + cc                     # ~p + c + 1
    elif ins.neg_c:
        t = p - cc                      # p + sext(~c) + 1
    else:
        t = p + cc
    # |p| <= 2^62 and |c| <= 2^31: t is exact in int64, as in the hardware's 64-bit registers
    shift = {None: 0, "shr7": 7, "shr15": 15}[ins.scale]
    if shift:
        if signed_final:
            t = t >> shift
        else:                           # logical shift of the 64-bit pattern
            t = (t.astype(np.uint64) >> np.uint64(shift)).astype(np.int64)
    if ins.sat:
        t = _clamp(t, signed_final, 32)
    return _u32(_lo32(t))


# ---------------------------------------------------------------- SIMD semantics (9.7.18.2)
def _simd_extract(a, b, sel: str | None, typ: str, width: int, default: str):
    """extractAndSignExt_2/4: select lanes from the 4 halves / 8 bytes of {b, a} (a low)."""
    sel = sel or default
    digits = [int(ch) for ch in sel[1:]][::-1]          # digits[i] feeds lane i
    bits = 32 // width
    ab = (_u32(b).astype(np.int64) << 32) | _u32(a).astype(np.int64)
    lanes = []
    for dgt in digits:
        v = (ab >> (bits * dgt)) & ((1 << bits) - 1)
        if typ == "s32":
            v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
        lanes.append(v)
    return lanes


def _mask_lanes(mask: str | None, width: int) -> list[bool]:
    mask = mask or ("h10" if width == 2 else "b3210")
    on = {int(ch) for ch in mask[1:]}
    return [i in on for i in range(width)]


def _simd(ins: VideoInstruction, a, b, c):
    w, bits = ins.width, 32 // ins.width
    va = _simd_extract(a, b, ins.asel, ins.atype, w, "h10" if w == 2 else "b3210")
    vb = _simd_extract(a, b, ins.bsel, ins.btype, w, "h32" if w == 2 else "b7654")
    vc = _simd_extract(c, c, None, "u32", w, "h10" if w == 2 else "b3210")
    signed = ins.dtype == "s32"
    t = []
    for x, y in zip(va, vb):
        op = ins.op
        if op == "vadd":
            r = x + y
        elif op == "vsub":
            r = x - y
        elif op == "vavrg":
            s = x + y
            r = np.where(s >= 0, (s + 1) >> 1, s >> 1)
        elif op == "vabsdiff":
            r = np.abs(x - y)
        elif op == "vmin":
            r = np.minimum(x, y)
        elif op == "vmax":
            r = np.maximum(x, y)
        else:   # vset
            r = _compare(ins.cmp, x, y).astype(np.int64)
        if ins.sat:
            r = _clamp(r, signed, bits)
        t.append(r)
    mask = _mask_lanes(ins.mask, w)
    if ins.secop == "add":
        d = _u32(c).astype(np.int64)
        for i in range(w):
            if mask[i]:
                d = d + t[i]
        return _u32(d & 0xFFFFFFFF)
    d = np.zeros(np.shape(a), np.int64)
    for i in range(w):
        lane = t[i] if mask[i] else vc[i]
        d |= (lane & ((1 << bits) - 1)) << (bits * i)
    return _u32(d)


# ---------------------------------------------------------------- entry points
def evaluate(ins: VideoInstruction, a, b, c=None, d_old=None) -> np.ndarray:
    """The destination register's new value (uint32 array) for source registers a, b, c."""
    a = _u32(a)
    b = _u32(b)
    needs_c = ins.regs[3] is not None
    if needs_c and c is None:
        raise OperandError(f"{ins.text}: operand c is missing")
    c = _u32(c) if c is not None else np.zeros_like(a)
    if not (a.shape == b.shape == c.shape):
        raise OperandError(f"{ins.text}: operand arrays differ in shape ({a.shape}, {b.shape}, {c.shape})")
    if ins.width > 1:
        return _simd(ins, a, b, c)
    if ins.op == "vmad":
        return _vmad(ins, a, b, c)
    return _scalar(ins, a, b, c)


def check_target(ins: VideoInstruction, target: str | None = None,
                 ptx_version: tuple[int, int] | None = None) -> None:
    """Target / PTX ISA notes (9.7.18): scalar video sm_20 and PTX 2.0, SIMD sm_30 and PTX 3.0."""
    kind = "simd" if ins.width > 1 else "scalar"
    if target is not None:
        if not TARGETS[kind].ok(parse_target(target)):
            raise PtxValidationError(f"{ins.text}: {kind} video instructions require "
                                     f"sm_{MIN_TARGET[kind]} or higher, not {target}")
    if ptx_version is not None and tuple(ptx_version) < MIN_PTX[kind]:
        need = ".".join(map(str, MIN_PTX[kind]))
        raise PtxValidationError(f"{ins.text}: {kind} video instructions need PTX ISA {need} or "
                                 f"later, not {'.'.join(map(str, ptx_version))}")


def execute(text: str, registers: dict[str, np.ndarray], target: str | None = None,
            ptx_version: tuple[int, int] | None = None, warps: int | None = None
            ) -> dict[str, np.ndarray]:
    """Single-instruction form of the API: registers maps the register names in text to uint32
    arrays of shape (32*warps,) (any common shape is accepted); returns {destination: array}."""
    ins = parse(text)
    check_target(ins, target, ptx_version)
    d, ra, rb, rc = ins.regs
    for r in (ra, rb) + ((rc,) if rc else ()):
        if r not in registers:
            raise OperandError(f"{ins.text}: no value given for register {r}")
    if warps is not None and np.shape(registers[ra]) != (32 * warps,):
        raise OperandError(f"{ins.text}: register {ra} has shape {np.shape(registers[ra])}, "
                           f"expected ({32 * warps},) for {warps} warps")
    return {d: evaluate(ins, registers[ra], registers[rb], registers.get(rc) if rc else None,
                        registers.get(d))}


# --- ptxsim.execute / executor dispatch (isa/registry.py) ------------------------------------
# Video instructions are per-thread (not .aligned): a guard applies thread by thread, which the
# registry's "thread" mode does (guard-false threads keep d).
_PRED = re.compile(r"^\s*@!?%?\w+\s+")


def handle_instruction(inst, regs, target):
    """Registry handler: a parsed video Instruction over a RegisterFile."""
    ins = parse(_PRED.sub("", inst.text or str(inst)))
    check_target(ins, target)
    d, ra, rb, rc = ins.regs
    c = regs.read(rc) if rc else None
    return {d: evaluate(ins, regs.read(ra), regs.read(rb), c)}


def _register_video() -> None:
    from ptxsim.isa import registry
    names = [op for op in SCALAR_OPS + SHIFT_OPS + ("vmad", "vset")]
    names += [f"{op}{w}" for op in SIMD_OPS + ("vset",) for w in (2, 4)]
    for name in names:
        registry.register(name, handle_instruction, guard="thread")


_register_video()
