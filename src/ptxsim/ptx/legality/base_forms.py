"""The syntax lines of the PTX ISA base instructions (9.7.1-9.7.15, 9.7.20, 9.7.21), one
`form(...)` per line of each instruction's Syntax block, in the notation of `forms.py`. PTX ISA
and Target ISA notes (`since=`, `req=`) are those of the instruction's section; where ptxas 13.5
deviates from the text (checked with `scripts/gen_mutation_corpus.py`), a comment says so.

Families with a spec text in shared/spec (tcgen05.*, mma.sp, video, stack, misc) have their own
tables (ptxsim.isa.*, ptxsim.ptx.legality.{tcgen05,mma_sp,video,stack_misc}) and are not here.
"""
from __future__ import annotations

import re

from ptxsim.isa.targets import AnyOfFamily, Arch, AtLeast, Family, Req
from ptxsim.ptx.instruction import Vector
from ptxsim.ptx.legality.forms import FORMS, QUALIFIER_NOTES, TYPE_INFO, form


def SM(n: int) -> Req:
    return Req(AtLeast(n))


SM90A = Req(Arch("sm_90a"))
SM100AF = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_103a"), Arch("sm_110a"),
              Family("sm_100f"), Family("sm_110f", (9, 0)))
SM100 = SM(100)
# ldmatrix .m16n16 / .m8n16 and stmatrix .m16n8 (9.7.14.5.15-16): sm_100a/f, sm_110a/f,
# sm_120a/f (ptxas 13.5 takes them on sm_120f)
SM100_120 = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_103a"), Arch("sm_110a"),
                Arch("sm_120a"), Arch("sm_121a"), Family("sm_100f"), Family("sm_110f", (9, 0)),
                Family("sm_120f"))

def _no_sync(inst, chosen, ctx):
    """9.7.13.x: shfl / vote without .sync are not supported on sm_70 and higher from PTX ISA 6.4
    (ptxas 13.5 says so in these words)."""
    if ctx.target.sm >= 70 and ctx.ptx >= (6, 4):
        return (f"{inst.opcode} without .sync is not supported on .target sm_70 and higher from "
                "PTX ISA version 6.4")
    return None


_BITS = {".f16": 16, ".bf16": 16, ".tf32": 32, ".f64": 64, ".s8": 8, ".u8": 8, ".s4": 4,
         ".u4": 4, ".b1": 1, ".e4m3": 8, ".e5m2": 8, ".e3m2": 8, ".e2m3": 8, ".e2m1": 4}


def _fragment_counts(inst, chosen, ctx):
    """9.7.14.5: registers per thread of the A, B, C and D fragments of a dense mma shape (the
    fragment tables of each shape, as a formula: M*K*bits / (32 lanes * 32 bits), 64-bit
    registers for .f64, fp16 accumulators packed two to a register; m8n8k4 is the
    quad-pair shape with its own counts)."""
    shape = next(q for q in inst.qualifiers if q.startswith(".m") and "n" in q)
    m, n, k = (int(x) for x in re.fullmatch(r"\.m(\d+)n(\d+)k(\d+)", shape).groups())
    types = [q for q in inst.qualifiers if q in _BITS or q in (".f32", ".s32")]
    d, a = types[0], types[1]
    c = types[3] if len(types) > 3 else d
    bits = 8 if ".kind::f8f6f4" in inst.qualifiers else _BITS.get(a, 32)
    if shape == ".m8n8k4" and a == ".f16":
        want_a, want_b = 2, 2
        want_d, want_c = (4 if d == ".f16" else 8), (4 if c == ".f16" else 8)
    elif a == ".f64":
        want_a, want_b, want_d = m * k // 32, k * n // 32, m * n // 32
        want_c = want_d
    else:
        want_a, want_b = m * k * bits // 1024, k * n * bits // 1024
        want_d = m * n * (16 if d == ".f16" else 32) // 1024
        want_c = m * n * (16 if c == ".f16" else 32) // 1024
    for idx, (what, want) in enumerate((("D", want_d), ("A", want_a), ("B", want_b),
                                        ("C", want_c))):
        op = inst.operands[idx] if idx < len(inst.operands) else None
        if isinstance(op, Vector) and len(op.elements) != want:
            return (f"operand {idx + 1} ({what} fragment of {shape}) must be a vector of {want} "
                    f"registers, got {len(op.elements)}")
    return None


def _wgmma_counts(inst, chosen, ctx):
    """9.7.15.5: D holds N/2 32-bit accumulators per thread (N/4 registers of f16 pairs); A
    from registers is 4 registers."""
    shape = next(q for q in inst.qualifiers if q.startswith(".m64"))
    n = int(re.fullmatch(r"\.m64n(\d+)k\d+", shape).group(1))
    d = next(q for q in inst.qualifiers if q in (".f16", ".f32", ".s32"))
    want = n // 4 if d == ".f16" else n // 2
    op = inst.operands[0] if inst.operands else None
    if isinstance(op, Vector) and len(op.elements) != want:
        return f"operand 1 (D of {shape}{d}) must be a vector of {want} registers, got {len(op.elements)}"
    op = inst.operands[1] if len(inst.operands) > 1 else None
    if isinstance(op, Vector) and len(op.elements) != 4:
        return f"operand 2 (A in registers) must be a vector of 4 registers, got {len(op.elements)}"
    return None


def _abi32(inst, chosen, ctx):
    """A 32-bit generic address (cvta .u32) with .address_size 64 (ptxas 13.5: "32-Bit ABI ...
    is not supported on sm_90 or higher")."""
    if chosen.get(".size") == ".u32" and ctx.address_size == 64:
        return "a .u32 generic address needs .address_size 32"
    return None


def _sm1x(inst, chosen, ctx):
    """`mad.f32` without a rounding is the sm_1x form (9.7.3.x: mad.rnd is required from sm_20)."""
    if ctx.target.sm >= 20:
        return "mad.f32 needs a rounding modifier (.rn .rz .rm .rp) on sm_20 and later"
    return None


_FLOATS = frozenset({".f16", ".bf16", ".f32", ".f64"})
_FRND = frozenset({".rn", ".rz", ".rm", ".rp"})


def _cvt_rounding(inst, chosen, ctx):
    """9.7.9.21 cvt: a float result narrower than its float source, or from an integer, needs a
    float rounding (.rn ...); an integer result from a float needs an integer rounding (.rni
    ...); float widening and integer conversions take none; a float converted to the same type
    may round to an integer. .ftz only where an .f32 is involved. (The spec's rules, in the
    words of ptxas 13.5: "Rounding modifier required", "Illegal rounding modifier", "Modifier
    '.ftz' does not apply to this type of convert operation".)"""
    d, a, r = chosen.get(".dtype"), chosen.get(".atype"), chosen.get(".irnd")
    fd, fa = d in _FLOATS, a in _FLOATS
    if fd and fa:
        ds, as_ = TYPE_SIZE[d], TYPE_SIZE[a]
        if ds < as_:
            need = "float" if r not in _FRND else None
        elif ds > as_:
            # widening takes no rounding, except from .bf16, where ptxas 13.5 also takes a
            # float rounding (cvt.rn.f32.bf16 is in the H200 sweep)
            need = ("float or none" if a == ".bf16" and r is not None and r not in _FRND else
                    None if a == ".bf16" else "none" if r is not None else None)
        elif d == a:
            need = "integer or none" if r is not None and r in _FRND else None
        else:                                   # .f16 <-> .bf16
            need = "float or none" if r is not None and r not in _FRND else None
    elif fd:
        need = "float" if r not in _FRND else None
    elif fa:
        need = "integer" if r is None or r in _FRND else None
    else:
        need = "none" if r is not None else None
    if need == "float":
        return f"cvt{d}{a} needs a rounding modifier (.rn .rz .rm .rp)"
    if need == "integer":
        return f"cvt{d}{a} needs an integer rounding modifier (.rni .rzi .rmi .rpi)"
    if need:
        return f"cvt{d}{a}: illegal rounding modifier {r}"
    if chosen.get(".ftz") and ".f32" not in (d, a):
        return f".ftz does not apply to cvt{d}{a} (only to conversions involving .f32)"
    return None


TYPE_SIZE = {".f16": 16, ".bf16": 16, ".f32": 32, ".f64": 64}


U = ".u16 .u32 .u64"
S = ".s16 .s32 .s64"
B = ".b16 .b32 .b64"
INT = f"{U} {S}"
RND4 = ".rn .rz .rm .rp"
SCOPE = ".cta .cluster .gpu .sys"
CMP_INT = ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs"
CMP_FLT = ".eq .ne .lt .le .gt .ge .equ .neu .ltu .leu .gtu .geu .num .nan"
BOOL = ".and .or .xor"
LDST_T = ".b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f32 .f64"

# ------------------------------------------------------------------ 9.7.1 integer arithmetic
form("add", ".type", "r ri ri", type=f"{INT}")
form("add", ".type", "r ri ri", type=".u16x2 .s16x2", since=(8, 0), req=SM(90))
form("add", "{.sat} .s32", "r ri ri")
form("add", ".cc .type", "r ri ri", type=".u32 .s32")
form("add", ".cc .type", "r ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("addc", "{.cc} .type", "r ri ri", type=".u32 .s32")
form("addc", "{.cc} .type", "r ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("sub", ".type", "r ri ri", type=INT)
form("sub", "{.sat} .s32", "r ri ri")
form("sub", ".cc .type", "r ri ri", type=".u32 .s32")
form("sub", ".cc .type", "r ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("subc", "{.cc} .type", "r ri ri", type=".u32 .s32")
form("subc", "{.cc} .type", "r ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("mul", "<.hi|.lo .type", "r ri ri", type=INT)
form("mul", "<.wide .type", "r@2x ri ri", type=".u16 .u32 .s16 .s32")
form("mad", "<.hi|.lo .type", "r ri ri ri", type=INT)
form("mad", "<.wide .type", "r@2x ri ri ri@2x", type=".u16 .u32 .s16 .s32")
form("mad", "<.hi .sat .s32", "r ri ri ri")
form("mad", "^.hi|.lo .cc .type", "r ri ri ri", type=".u32 .s32", since=(3, 0), req=SM(20))
form("mad", "^.hi|.lo .cc .type", "r ri ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("madc", "^.hi|.lo {.cc} .type", "r ri ri ri", type=".u32 .s32", since=(3, 0), req=SM(20))
form("madc", "^.hi|.lo {.cc} .type", "r ri ri ri", type=".u64 .s64", since=(4, 3), req=SM(20))
form("mul24", "^.hi|.lo .type", "r ri ri", type=".u32 .s32")
form("mad24", "^.hi|.lo .type", "r ri ri ri", type=".u32 .s32")
form("mad24", "^.hi .sat .s32", "r ri ri ri")
form("sad", ".type", "r ri ri ri", type=INT)
form("div", ".type", "r ri ri", type=INT)
form("rem", ".type", "r ri ri", type=INT)
form("abs", ".type", "r ri", type=S)
form("neg", ".type", "r ri", type=S)
form("min", ".type", "r ri ri", type=f"{INT}")
form("max", ".type", "r ri ri", type=f"{INT}")
form("min", ".type", "r ri ri", type=".u16x2 .s16x2", since=(8, 0), req=SM(90))
form("max", ".type", "r ri ri", type=".u16x2 .s16x2", since=(8, 0), req=SM(90))
form("min", ".relu .type", "r ri ri", type=".s16x2 .s32", since=(8, 0), req=SM(90))
form("max", ".relu .type", "r ri ri", type=".s16x2 .s32", since=(8, 0), req=SM(90))
# PTX ISA 9.2 SIMD integer forms of sm_120f (ptxas 13.5: 38 spellings, tests/isa/test_simd8.py)
SM120F = Req(Family("sm_120f", (9, 2)), Arch("sm_120a"), Arch("sm_121a"))
form("add", "{.sat} .type", "r ri ri", type=".u8x4 .s8x4", since=(9, 2), req=SM120F)
form("add", ".sat .type", "r ri ri", type=".u16x2 .s16x2 .u32", since=(9, 2), req=SM120F)
form("sub", "{.sat} .type", "r ri ri", type=".u8x4 .s8x4", since=(9, 2), req=SM120F)
form("min", ".type", "r ri ri", type=".u8x4 .s8x4", since=(9, 2), req=SM120F)
form("max", ".type", "r ri ri", type=".u8x4 .s8x4", since=(9, 2), req=SM120F)
form("min", ".relu .s8x4", "r ri ri", since=(9, 2), req=SM120F)
form("max", ".relu .s8x4", "r ri ri", since=(9, 2), req=SM120F)
form("neg", ".s8x4", "r ri", since=(9, 2), req=SM120F)
form("popc", ".type", "r@.u32 ri", type=".b32 .b64", since=(2, 0), req=SM(20))
form("clz", ".type", "r@.u32 ri", type=".b32 .b64", since=(2, 0), req=SM(20))
form("bfind", "{.shiftamt} .type", "r@.u32 ri", type=".u32 .u64 .s32 .s64", since=(2, 0), req=SM(20))
form("fns", ".b32", "r ri ri ri@.s32", since=(6, 0), req=SM(30))
form("brev", ".type", "r ri", type=".b32 .b64", since=(2, 0), req=SM(20))
form("bfe", ".type", "r ri ri@.u32#0..255 ri@.u32#0..255", type=".u32 .u64 .s32 .s64", since=(2, 0), req=SM(20))
form("bfi", ".type", "r ri ri ri@.u32 ri@.u32", type=".b32 .b64", since=(2, 0), req=SM(20))
form("szext", ".clamp|.wrap .type", "r ri ri@.u32", type=".u32 .s32", since=(7, 6), req=SM(70))
form("bmsk", ".clamp|.wrap .b32", "r ri ri", since=(7, 6), req=SM(70))
form("dp4a", ".atype .btype", "r@.u32 ri@.b32 ri@.b32 ri@.u32", atype=".u32 .s32", btype=".u32 .s32",
     since=(5, 0), req=SM(61))
form("dp2a", ".hi|.lo .atype .btype", "r@.u32 ri@.b32 ri@.b32 ri@.u32", atype=".u32 .s32",
     btype=".u32 .s32", since=(5, 0), req=SM(61))

# ----------------------------------------------------------- 9.7.3 floating-point arithmetic
for _op in ("add", "sub", "mul"):
    form(_op, "{.rnd} {.ftz} {.sat} .f32", "r ri ri", rnd=RND4)
    form(_op, "{.rnd} {.ftz} .f32x2", "r ri ri", rnd=RND4, since=(8, 6), req=SM100)
    form(_op, "{.rnd} .f64", "r ri ri", rnd=RND4, since=(1, 0), req=SM(13))
    form(_op, "{.rn} {.ftz} {.sat} .type", "r ri ri", type=".f16 .f16x2", since=(4, 2), req=SM(53))
    form(_op, "{.rn} .type", "r ri ri", type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
for _op in ("add", "sub"):
    form(_op, "{.rnd} {.sat} .f32 .atype", "r@.f32 ri@atype ri@.f32", rnd=RND4, atype=".f16 .bf16",
         since=(8, 6), req=SM100)
form("fma", ".rnd {.ftz} {.sat} .f32", "r ri ri ri", rnd=RND4, since=(2, 0), req=SM(20))
form("fma", ".rnd {.ftz} .f32x2", "r ri ri ri", rnd=RND4, since=(8, 6), req=SM100)
form("fma", ".rnd .f64", "r ri ri ri", rnd=RND4, since=(1, 4), req=SM(13))
form("fma", ".rn {.ftz} {.sat} .type", "r ri ri ri", type=".f16 .f16x2", since=(4, 2), req=SM(53))
form("fma", ".rn {.ftz} .relu .type", "r ri ri ri", type=".f16 .f16x2", since=(7, 0), req=SM(80))
form("fma", ".rn {.relu} .type", "r ri ri ri", type=".bf16 .bf16x2", since=(7, 0), req=SM(80))
# ptxas 13.5 also takes the directed roundings on bf16 fma (not in the spec's syntax; the
# executor warns UnlistedFormWarning for them, docs/base-instructions.md)
form("fma", ".rz|.rm|.rp .type", "r ri ri ri", type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
form("fma", ".rn .oob {.relu} .type", "r ri ri ri", type=".f16 .f16x2 .bf16 .bf16x2",
     since=(8, 1), req=SM(90))
form("fma", ".rnd {.sat} .f32 .abtype", "r@.f32 ri@abtype ri@abtype ri@.f32", rnd=RND4,
     abtype=".f16 .bf16", since=(8, 6), req=SM100)
form("mad", "{.ftz} {.sat} .f32", "r ri ri ri", extra=_sm1x)
form("mad", ".rnd {.ftz} {.sat} .f32", "r ri ri ri", rnd=RND4, since=(1, 4), req=SM(20))
form("mad", ".rnd .f64", "r ri ri ri", rnd=RND4, since=(1, 4), req=SM(13))
form("div", ".approx|.full {.ftz} .f32", "r ri ri")
form("div", ".rnd {.ftz} .f32", "r ri ri", rnd=RND4, since=(1, 4), req=SM(20))
form("div", ".rnd .f64", "r ri ri", rnd=RND4, since=(1, 4), req=SM(13))
for _op in ("abs", "neg"):
    form(_op, "{.ftz} .f32", "r ri")
    form(_op, ".f64", "r ri", req=SM(13))
    form(_op, "{.ftz} .type", "r ri", type=".f16 .f16x2", since=(6, 5), req=SM(53))
    form(_op, ".type", "r ri", type=".bf16 .bf16x2", since=(7, 0), req=SM(80))
for _op in ("min", "max"):
    form(_op, "{.ftz} .f32", "r ri ri")
    form(_op, "{.ftz} .NaN .f32", "r ri ri", since=(7, 0), req=SM(80))
    form(_op, "{.ftz} {.NaN} .xorsign .abs .f32", "r ri ri", since=(7, 2), req=SM(86))
    form(_op, "{.ftz} {.NaN} {.abs} .f32", "r ri ri ri", since=(8, 8), req=SM100)
    form(_op, ".f64", "r ri ri", req=SM(13))
    form(_op, "{.ftz} {.NaN} .type", "r ri ri", type=".f16 .f16x2", since=(7, 0), req=SM(80))
    form(_op, "{.NaN} .type", "r ri ri", type=".bf16 .bf16x2", since=(7, 0), req=SM(80))
    form(_op, "{.ftz} {.NaN} .xorsign .abs .type", "r ri ri", type=".f16 .f16x2", since=(7, 2),
         req=SM(86))
    form(_op, "{.NaN} .xorsign .abs .type", "r ri ri", type=".bf16 .bf16x2", since=(7, 2),
         req=SM(86))
form("rcp", ".approx {.ftz} .f32", "r ri")
form("rcp", ".rnd {.ftz} .f32", "r ri", rnd=RND4, since=(1, 4), req=SM(20))
form("rcp", ".rnd .f64", "r ri", rnd=RND4, since=(1, 4), req=SM(13))
form("rcp", ".approx .ftz .f64", "r ri", since=(2, 1), req=SM(20))
form("sqrt", ".approx {.ftz} .f32", "r ri")
form("sqrt", ".rnd {.ftz} .f32", "r ri", rnd=RND4, since=(1, 4), req=SM(20))
form("sqrt", ".rnd .f64", "r ri", rnd=RND4, since=(1, 4), req=SM(13))
form("rsqrt", ".approx {.ftz} .f32", "r ri")
form("rsqrt", ".approx .f64", "r ri", req=SM(13))
form("rsqrt", ".approx .ftz .f64", "r ri", since=(4, 0), req=SM(20))
for _op in ("sin", "cos", "lg2", "ex2"):
    form(_op, ".approx {.ftz} .f32", "r ri")
# PTX ISA 9.5: the input in revolutions; ptxas 13.5 requires .ftz with .2pi and .version 9.5
# (tests/isa/test_sincos_2pi.py)
for _op in ("sin", "cos"):
    form(_op, ".approx .ftz .2pi .f32", "r ri", since=(9, 5))
form("ex2", ".approx .type", "r ri", type=".f16 .f16x2", since=(7, 0), req=SM(75))
form("ex2", ".approx .ftz .type", "r ri", type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
form("tanh", ".approx .f32", "r ri", since=(7, 0), req=SM(75))
form("tanh", ".approx .type", "r ri", type=".f16 .f16x2", since=(7, 0), req=SM(75))
form("tanh", ".approx .type", "r ri", type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
form("testp", ".op .type", "p@.pred ri", op=".finite .infinite .number .notanumber .normal .subnormal",
     type=".f32 .f64", since=(2, 0), req=SM(20))
form("copysign", ".type", "r ri ri", type=".f32 .f64", since=(2, 0), req=SM(20))

# ------------------------------------------------ 9.7.5 comparison and selection instructions
_CMP_U = ".eq .ne .lt .le .gt .ge .lo .ls .hi .hs"
_CMP_S = ".eq .ne .lt .le .gt .ge"
# ptxas 13.5: "Mismatch between instruction type and comparison qualifier" outside these sets;
# .ftz only with .f32 ("Illegal modifier '.ftz'" on integer and .f64 comparisons)
_SETP_CLASSES = ((".b16 .b32 .b64", ".eq .ne", ""), (".u16 .u32 .u64", _CMP_U, ""),
                 (".s16 .s32 .s64", _CMP_S, ""), (".f64", CMP_FLT, ""), (".f32", CMP_FLT, "<{.ftz} "))
for _types, _cmps, _ftz in _SETP_CLASSES:
    form("setp", f".cmp {_ftz}.type", "q ri ri", cmp=_cmps, type=_types)
    form("setp", f".cmp .bool {_ftz}.type", "q ri ri !pi@.pred", cmp=_cmps, bool=BOOL, type=_types)
form("setp", ".cmp <{.ftz} .f16", "p@.pred ri ri", cmp=CMP_FLT, since=(4, 2), req=SM(53))
form("setp", ".cmp .bool <{.ftz} .f16", "p@.pred ri ri !pi@.pred", cmp=CMP_FLT, bool=BOOL, since=(4, 2), req=SM(53))
form("setp", ".cmp <{.ftz} .f16x2", "q ri ri", cmp=CMP_FLT, since=(4, 2), req=SM(53))
form("setp", ".cmp .bool <{.ftz} .f16x2", "q ri ri !p@.pred", cmp=CMP_FLT, bool=BOOL, since=(4, 2), req=SM(53))
form("setp", ".cmp .bf16", "p@.pred ri ri", cmp=CMP_FLT, since=(7, 8), req=SM(90))
form("setp", ".cmp .bool .bf16", "p@.pred ri ri !p@.pred", cmp=CMP_FLT, bool=BOOL, since=(7, 8),
     req=SM(90))
form("setp", ".cmp .bf16x2", "q ri ri", cmp=CMP_FLT, since=(7, 8), req=SM(90))
form("setp", ".cmp .bool .bf16x2", "q ri ri !p@.pred", cmp=CMP_FLT, bool=BOOL, since=(7, 8),
     req=SM(90))
_STYPE = ".b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64"
for _types, _cmps, _ftz in _SETP_CLASSES:
    form("set", f".cmp {_ftz}.dtype .stype", "r@dtype ri@stype ri@stype", cmp=_cmps,
         dtype=".u32 .s32 .f32", stype=_types)
    form("set", f".cmp .bool {_ftz}.dtype .stype", "r@dtype ri@stype ri@stype !p@.pred",
         cmp=_cmps, bool=BOOL, dtype=".u32 .s32 .f32", stype=_types)
for _types, _cmps, _ftz in _SETP_CLASSES + ((".f16", CMP_FLT, "<{.ftz} "), (".bf16", CMP_FLT, "")):
    for _bool, _c in (("", ""), (".bool ", " !p@.pred")):
        form("set", f".cmp {_bool}{_ftz}.f16 .stype", f"r@.f16 ri@stype ri@stype{_c}", cmp=_cmps,
             bool=BOOL, stype=_types, since=(6, 5), req=SM(53))
        form("set", f".cmp {_bool}{_ftz}.bf16 .stype", f"r@.bf16 ri@stype ri@stype{_c}",
             cmp=_cmps, bool=BOOL, stype=_types, since=(7, 8), req=SM(90))
for _bool, _c in (("", ""), (".bool ", " !p@.pred")):
    form("set", f".cmp {_bool}<{{.ftz}} .dtype .f16", f"r@dtype ri@.f16 ri@.f16{_c}", cmp=CMP_FLT,
         bool=BOOL, dtype=".f16 .u16 .s16 .u32 .s32", since=(6, 5), req=SM(53))
    form("set", f".cmp {_bool}.dtype .bf16", f"r@dtype ri@.bf16 ri@.bf16{_c}", cmp=CMP_FLT,
         bool=BOOL, dtype=".bf16 .u16 .s16 .u32 .s32", since=(7, 8), req=SM(90))
    form("set", f".cmp {_bool}<{{.ftz}} .dtype .f16x2", f"r@dtype ri@.f16x2 ri@.f16x2{_c}",
         cmp=CMP_FLT, bool=BOOL, dtype=".f16x2 .u32 .s32", since=(6, 5), req=SM(53))
    form("set", f".cmp {_bool}.dtype .bf16x2", f"r@dtype ri@.bf16x2 ri@.bf16x2{_c}", cmp=CMP_FLT,
         bool=BOOL, dtype=".bf16x2 .u32 .s32", since=(7, 8), req=SM(90))
form("selp", ".type", "r ri ri !pi@.pred", type=".b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64")
form("slct", ".dtype .s32", "r@dtype ri@dtype ri@dtype ri@.s32",
     dtype=".b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64")
form("slct", "{.ftz} .dtype .f32", "r@dtype ri@dtype ri@dtype ri@.f32",
     dtype=".b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64")

# ------------------------------------------------------------------ 9.7.8 logic and shift
for _op in ("and", "or", "xor"):
    form(_op, ".type", "r ri ri", type=".pred .b16 .b32 .b64")
form("not", ".type", "r ri", type=".pred .b16 .b32 .b64")
form("cnot", ".type", "r ri", type=".b16 .b32 .b64")
form("lop3", ".b32", "r ri ri ri n", since=(4, 3), req=SM(50))
form("lop3", ".or|.and .b32", "Q ri ri ri n !p@.pred", since=(8, 2), req=SM(70))
form("shf", "^.l|.r .clamp|.wrap .b32", "r ri ri ri@.u32", since=(3, 1), req=SM(32))
form("shl", ".type", "r ri ri@.u32", type=".b16 .b32 .b64")
form("shr", ".type", "r ri ri@.u32", type=".b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64")
form("prmt", ".b32 {.mode}", "r ri ri ri", mode=".f4e .b4e .rc8 .ecl .ecr .rc16", since=(2, 0),
     req=SM(20))

# -------------------------------------------------------------------- 9.7.9 data movement
_MOV = ".pred .b16 .b32 .b64 .u16 .u32 .u64 .s16 .s32 .s64 .f32 .f64"
form("mov", ".type", "r risy", type=_MOV)
form("mov", ".b128", "r ris", since=(8, 3), req=SM(70))
form("mov", ".type", "r v/1", type=".b16 .b32 .b64")     # ptxas 13.5: `mov.u32 {%r1}, %r2` is
form("mov", ".type", "v/1 ri", type=".b16 .b32 .b64")     # a vector size mismatch, .b32 is not
form("mov", ".b16", "r vri@.b8/2")     # pack: constant elements too (ptxas 13.5:
#   `mov.b64 %rd2, {%r1, 0x80004020}`, as CuTe DSL 4.8.1 emits for FlashAttention-4)
form("mov", ".b16", "v@.b8/2 ri")
form("mov", ".b32", "r vri@.b16/2")
form("mov", ".b32", "v@.b16/2 ri")
form("mov", ".b32", "r vri@.b8/4")
form("mov", ".b32", "v@.b8/4 ri")
form("mov", ".b64", "r vri@.b32/2")
form("mov", ".b64", "v@.b32/2 ri")
form("mov", ".b64", "r vri@.b16/4")
form("mov", ".b64", "v@.b16/4 ri")
form("mov", ".b128", "r vri@.b64/2", since=(8, 3), req=SM(70))
form("mov", ".b128", "v@.b64/2 ri", since=(8, 3), req=SM(70))
form("mov", ".b128", "r vri@.b32/4", since=(8, 3), req=SM(70))
form("mov", ".b128", "v@.b32/4 ri", since=(8, 3), req=SM(70))

_SS_LD = ".const .global .local .param .param::entry .param::func .shared .shared::cta .shared::cluster"
_SS_ST = ".global .local .param .shared .shared::cta .shared::cluster"
_EV1 = ".L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last .L1::no_allocate"
_EV2 = ".L2::evict_normal .L2::evict_first .L2::evict_last"
_PF = ".L2::64B .L2::128B .L2::256B"
_LD_COMMON = dict(ss=_SS_LD, vec=".v2 .v4 .v8", type=LDST_T, pf=_PF, ev1=_EV1, ev2=_EV2)
form("ld", "{.weak} {.ss} {.cop} {.L2::cache_hint} {.pf} {.vec} .type", "rv/.vec a (.L2::cache_hint)ri@.u64",
     relaxed=True, cop=".ca .cg .cs .lu .cv", **_LD_COMMON)
form("ld", "{.weak} {.ss} {.ev1} {.ev2} {.L2::cache_hint} {.pf} {.vec} .type", "rv/.vec a (.L2::cache_hint)ri@.u64",
     relaxed=True, since=(7, 4), req=SM(70), **_LD_COMMON)
form("ld", ".volatile {.ss} {.pf} {.vec} .type", "rv/.vec a", relaxed=True, **_LD_COMMON)
form("ld", ".relaxed|.acquire .scope {.ss} {.ev1} {.ev2} {.L2::cache_hint} {.pf} {.vec} .type",
     "rv/.vec a (.L2::cache_hint)ri@.u64", relaxed=True, scope=SCOPE, since=(6, 0), req=SM(70), **_LD_COMMON)
form("ld", ".mmio .relaxed .sys {.global} .type", "r a", relaxed=True, type=LDST_T, since=(8, 2),
     req=SM(70))
form("ld", ".global {.cop} .nc {.L2::cache_hint} {.pf} {.vec} .type", "rv/.vec a (.L2::cache_hint)ri@.u64",
     relaxed=True, cop=".ca .cg .cs", since=(3, 1), req=SM(32), vec=".v2 .v4 .v8", type=LDST_T,
     pf=_PF)
form("ld", ".global .nc {.ev1} {.ev2} {.L2::cache_hint} {.pf} {.vec} .type", "rv/.vec a (.L2::cache_hint)ri@.u64",
     relaxed=True, since=(7, 4), req=SM(70), vec=".v2 .v4 .v8", type=LDST_T, pf=_PF, ev1=_EV1,
     ev2=_EV2)
form("ldu", "{.global} {.vec} .type", "rv/.vec a", relaxed=True, vec=".v2 .v4", type=LDST_T,
     since=(2, 0), req=SM(20))
_ST_COMMON = dict(ss=_SS_ST, vec=".v2 .v4 .v8", type=LDST_T, ev1=_EV1, ev2=_EV2)
form("st", "{.weak} {.ss} {.cop} {.L2::cache_hint} {.vec} .type", "a riv/.vec (.L2::cache_hint)ri@.u64", relaxed=True,
     cop=".wb .cg .cs .wt", **_ST_COMMON)
form("st", "{.weak} {.ss} {.ev1} {.ev2} {.L2::cache_hint} {.vec} .type", "a riv/.vec (.L2::cache_hint)ri@.u64",
     relaxed=True, since=(7, 4), req=SM(70), **_ST_COMMON)
form("st", ".volatile {.ss} {.vec} .type", "a riv/.vec", relaxed=True, **_ST_COMMON)
form("st", ".relaxed|.release .scope {.ss} {.ev1} {.ev2} {.L2::cache_hint} {.vec} .type",
     "a riv/.vec (.L2::cache_hint)ri@.u64", relaxed=True, scope=SCOPE, since=(6, 0), req=SM(70), **_ST_COMMON)
form("st", ".mmio .relaxed .sys {.global} .type", "a ri", relaxed=True, type=LDST_T, since=(8, 2),
     req=SM(70))
form("st", "^.async {.weak} {.cluster} {.shared::cluster} .mbarrier::complete_tx::bytes {.vec} .type",
     "a riv/.vec a", vec=".v2 .v4", type=".b32 .b64 .u32 .u64 .s32 .s64 .f32 .f64", since=(8, 1),
     req=SM(90))
form("st", "^.async {.mmio} .release .gpu|.sys {.global} .type", "a ri",
     type=".b8 .b16 .b32 .b64 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f32 .f64", since=(8, 7),
     req=SM100)
form("st", "^.bulk {.weak} {.shared::cta}", "a ri@.b64 n#0", since=(8, 6), req=SM100)
form("prefetch", "{.space} .L1|.L2", "a", space=".global .local", since=(2, 0), req=SM(20))
form("prefetch", "{.global} .L2::evict_last|.L2::evict_normal", "a", since=(7, 4), req=SM(80))
form("prefetch", "{.space} .tensormap", "a", space=".const .param .global", since=(8, 0), req=SM(90))
form("prefetchu", ".L1", "a", since=(2, 0), req=SM(20))
form("applypriority", "{.global} .L2::evict_normal", "a n#128", since=(7, 4), req=SM(80))
form("discard", "{.global} .L2", "a n#128", since=(7, 4), req=SM(80))
form("createpolicy", ".range {.global} .prim {.sec} .b64", "r a ri@.b32 ri@.b32",
     prim=".L2::evict_last .L2::evict_normal .L2::evict_first .L2::evict_unchanged",
     sec=".L2::evict_first .L2::evict_unchanged", since=(7, 4), req=SM(80))
form("createpolicy", ".fractional .prim {.sec} .b64", "r ?ri@.f32",
     prim=".L2::evict_last .L2::evict_normal .L2::evict_first .L2::evict_unchanged",
     sec=".L2::evict_first .L2::evict_unchanged", since=(7, 4), req=SM(80))
form("createpolicy", ".cvt .L2 .b64", "r ri", since=(7, 4), req=SM(80))
_CVTA_SP = ".const .global .local .shared .shared::cta .shared::cluster .param .param::entry"
form("cvta", ".space .size", "r riy", space=_CVTA_SP, size=".u32 .u64", since=(2, 0), req=SM(20),
     extra=_abi32)
form("cvta", "^.to .space .size", "r ri", space=_CVTA_SP, size=".u32 .u64", since=(2, 0), req=SM(20),
     extra=_abi32)
form("isspacep", ".space", "p@.pred ri@.b64", space=_CVTA_SP, since=(2, 0), req=SM(20))
form("getctarank", "{.shared::cluster} .type", "r@.u32 ry", type=".u32 .u64", since=(7, 8), req=SM(90))
form("mapa", "{.shared::cluster} .type", "r ry ri@.u32", type=".u32 .u64 .s32", since=(7, 8), req=SM(90))
form("istypep", ".type", "p@.pred y", type=".texref .samplerref .surfref", since=(4, 0), req=SM(20))

# ---------------------------------------------------------------------- cvt, cvt.pack
_CVT_T = ".u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .bf16 .f16 .f32 .f64"
form("cvt", "{.irnd|.frnd} {.ftz} {.sat} .dtype .atype", "r@dtype ris@atype", relaxed=True,
     irnd=".rni .rzi .rmi .rpi", frnd=RND4, dtype=_CVT_T, atype=_CVT_T, extra=_cvt_rounding)
form("cvt", ".rn|.rz .relu {.satfinite} .f16|.bf16 .f32", "r@f16 ri@.f32", relaxed=True,
     since=(7, 0), req=SM(80))
form("cvt", ".rn|.rz .satfinite .f16|.bf16 .f32", "r@f16 ri@.f32", relaxed=True,
     since=(7, 0), req=SM(80))
form("cvt", ".rn|.rz {.relu} {.satfinite} .f16x2|.bf16x2 .f32", "r@.b32 ri@.f32 ri@.f32",
     since=(7, 0), req=SM(80))
form("cvt", ".rs {.relu} {.satfinite} .f16x2|.bf16x2 .f32", "r@.b32 ri@.f32 ri@.f32 r@.b32",
     since=(8, 7), req=SM100AF)
form("cvt", ".rna {.satfinite} .tf32 .f32", "r@.b32 ri@.f32", since=(7, 0), req=SM(80))
form("cvt", ".rn|.rz {.satfinite} {.relu} .tf32 .f32", "r@.b32 ri@.f32", since=(7, 8), req=SM(90))
form("cvt", ".rn .satfinite {.relu} .dtype .f32", "r@.b16 ri@.f32 ri@.f32",
     dtype=".e4m3x2 .e5m2x2", since=(7, 8), req=SM(89))
form("cvt", ".rn .satfinite {.relu} .dtype .f16x2", "r@.b16 ri@.b32", dtype=".e4m3x2 .e5m2x2",
     since=(7, 8), req=SM(89))
form("cvt", ".rn {.relu} .f16x2 .atype", "r@.b32 ri@.b16", atype=".e4m3x2 .e5m2x2", since=(7, 8),
     req=SM(89))
form("cvt", ".rn .satfinite {.relu} .dtype .f32", "r@.b16 ri@.f32 ri@.f32",
     dtype=".e2m3x2 .e3m2x2", since=(8, 6), req=SM100AF)
form("cvt", ".rn .satfinite {.relu} .e2m1x2 .f32", "r@.b8 ri@.f32 ri@.f32", since=(8, 6),
     req=SM100AF)
form("cvt", ".rn {.relu} .f16x2 .atype", "r@.b32 ri@.b16", atype=".e2m3x2 .e3m2x2", since=(8, 6),
     req=SM100AF)
form("cvt", ".rn {.relu} .f16x2 .e2m1x2", "r@.b32 ri@.b8", since=(8, 6), req=SM100AF)
form("cvt", ".rs {.relu} .satfinite .dtype .f32", "r@.b32 v@.f32/4 r@.b32",
     dtype=".e4m3x4 .e5m2x4 .e2m3x4 .e3m2x4", since=(8, 7), req=SM100AF)
form("cvt", ".rs {.relu} .satfinite .e2m1x4 .f32", "r@.b16 v@.f32/4 r@.b32", since=(8, 7),
     req=SM100AF)
form("cvt", ".rz|.rp {.satfinite} .ue8m0x2 .f32", "r@.b16 ri@.f32 ri@.f32", since=(8, 6), req=SM100AF)
form("cvt", ".rz|.rp {.satfinite} .ue8m0x2 .bf16x2", "r@.b16 ri@.b32", since=(8, 6), req=SM100AF)
form("cvt", ".rn .bf16x2 .ue8m0x2", "r@.b32 ri@.b16", since=(8, 6), req=SM100AF)
# PTX ISA 9.1 / 9.2 (ptxas 13.5: "Feature 'cvt.e4m3x2.bf16x2' requires PTX ISA .version 9.1",
# "Feature 'cvt.bf16x2.e4m3x2' requires PTX ISA .version 9.2", arch- or family-specific targets
# only; Triton 3.9's sm_120a dot_scaled uses the second; the spellings and first versions are
# tests/isa/test_cvt_new_forms.py's, ptxas-verified)
form("cvt", ".rn {.relu} {.satfinite} .bf16x2 .atype", "r@.b32 ri@.b16",
     atype=".e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2", since=(9, 2), req=SM100_120)
form("cvt", ".rn {.relu} {.satfinite} .bf16x2 .e2m1x2", "r@.b32 ri@.b8", since=(9, 2),
     req=SM100_120)
form("cvt", ".rn .satfinite {.relu} .dtype .bf16x2", "r@.b16 ri@.b32",
     dtype=".e4m3x2 .e5m2x2 .e2m3x2 .e3m2x2", since=(9, 1), req=SM100_120)
form("cvt", ".rn .satfinite {.relu} .e2m1x2 .bf16x2|.f16x2", "r@.b8 ri@.b32", since=(9, 1),
     req=SM100_120)
form("cvt", ".rn .satfinite {.relu} .e2m3x2|.e3m2x2 .f16x2", "r@.b16 ri@.b32", since=(9, 1),
     req=SM100_120)
form("cvt", ".rn .scaled::n2::ue8m0 .bf16x2 .e4m3x2", "r@.b32 ri@.b16 ri@.b16", since=(9, 2),
     req=SM100_120)
form("cvt", ".rn .bf16x2 .s2f6x2", "r@.b32 ri@.b16", since=(9, 1), req=SM100_120)
form("cvt", ".rn .satfinite .s2f6x2 .f32", "r@.b16 ri@.f32 ri@.f32", since=(9, 1), req=SM100_120)
form("cvt", ".pack .sat .dtype .s32", "r@.b32 ri ri", dtype=".u16 .s16", since=(6, 5), req=SM(72))
form("cvt", ".pack .sat .dtype .s32 .b32", "r@.b32 ri@.s32 ri@.s32 ri@.b32",
     dtype=".u2 .s2 .u4 .s4 .u8 .s8", since=(6, 5), req=SM(72))

# ------------------------------------------------------------------ 9.7.10 shared memory etc.
form("ldmatrix", ".sync .aligned .m8n8 .num {.trans} {.ss} .b16", "v@.b32/num a", num=".x1 .x2 .x4",
     ss=".shared .shared::cta", since=(6, 5), req=SM(75))
form("ldmatrix", ".sync .aligned .m16n16 .num .trans {.ss} .b8", "v@.b32/num2 a", num=".x1 .x2",
     ss=".shared .shared::cta", since=(8, 6), req=SM100_120)
form("ldmatrix", ".sync .aligned .m8n16 .num {.ss} .b8x16 .src", "v@.b32/num a", num=".x1 .x2 .x4",
     ss=".shared .shared::cta", src=".b6x16_p32 .b4x16_p64", since=(8, 6), req=SM100_120)
form("ldmatrix", ".sync .aligned .m16n16 .num .trans {.ss} .b8x16 .src", "v@.b32/num2 a",
     num=".x1 .x2", ss=".shared .shared::cta", src=".b6x16_p32 .b4x16_p64", since=(8, 6),
     req=SM100_120)
form("stmatrix", ".sync .aligned .m8n8 .num {.trans} {.ss} .b16", "a v@.b32/num", num=".x1 .x2 .x4",
     ss=".shared .shared::cta", since=(7, 8), req=SM(90))
form("stmatrix", ".sync .aligned .m16n8 .num .trans {.ss} .b8", "a v@.b32/num", num=".x1 .x2 .x4",
     ss=".shared .shared::cta", since=(8, 6), req=SM100_120)
form("movmatrix", ".sync .aligned .m8n8 .trans .b16", "r@.b32 r@.b32", since=(7, 8), req=SM(75))

# ------------------------------------------------------------------ 9.7.9.x async copies
_HINT = ".L2::cache_hint"
for _cop, _sizes in ((".ca", "4,8,16"), (".cg", "16")):
    form("cp", f"^.async ^{_cop} .shared|.shared::cta .global {{{_HINT}}} {{.pf}}",
         f"a a n#{_sizes} ?ri@.u32 ({_HINT})ri@.u64", pf=_PF, since=(7, 0), req=SM(80))
    form("cp", f"^.async ^{_cop} .shared|.shared::cta .global {{{_HINT}}} {{.pf}}",
         f"a a n#{_sizes} p@.pred ({_HINT})ri@.u64", pf=_PF, since=(7, 5), req=SM(80))
form("cp", "^.async ^.commit_group", "", since=(7, 0), req=SM(80))
form("cp", "^.async ^.wait_group", "n", since=(7, 0), req=SM(80))
form("cp", "^.async ^.wait_all", "", since=(7, 0), req=SM(80))
form("cp", "^.async ^.mbarrier ^.arrive {.noinc} {.shared|.shared::cta} .b64", "a", since=(7, 0),
     req=SM(80))
_CT = ".mbarrier::complete_tx::bytes"
form("cp", f"^.async ^.bulk .shared::cta .global {_CT} {{{_HINT}}}", "a a ri@.u32#0..1048560%16 a (.L2::cache_hint)ri@.u64",
     since=(8, 6), req=SM(90))
form("cp", f"^.async ^.bulk .shared::cluster .global {_CT} {{.multicast::cluster}} {{{_HINT}}}",
     "a a ri@.u32#0..1048560%16 a (.multicast::cluster)r@.b16 (.L2::cache_hint)ri@.u64", since=(8, 0), req=SM(90))
form("cp", f"^.async ^.bulk .shared::cluster .shared::cta {_CT}", "a a ri@.u32#0..1048560%16 a", since=(8, 0),
     req=SM(90))
form("cp", f"^.async ^.bulk .global .shared::cta .bulk_group {{{_HINT}}}", "a a ri@.u32#0..1048560%16 (.L2::cache_hint)ri@.u64",
     since=(8, 0), req=SM(90))
form("cp", f"^.async ^.bulk .global .shared::cta .bulk_group {{{_HINT}}} .cp_mask",
     "a a ri@.u32#0..1048560%16 (.L2::cache_hint)ri@.u64 r@.b16", since=(8, 6), req=SM100)
form("cp", "^.async ^.bulk ^.commit_group", "", since=(8, 0), req=SM(90))
form("cp", "^.async ^.bulk ^.wait_group {.read}", "n", since=(8, 0), req=SM(90))
# PTX ISA 9.5 (ptxas 13.5: .version 9.5, sm_90+, not with .read); executed as wait_group N
form("cp", "^.async ^.bulk ^.wait_group .sync_restrict::proxy::async", "n", since=(9, 5),
     req=SM(90))
form("cp", f"^.async ^.bulk ^.prefetch .L2 .global {{{_HINT}}}", "a ri@.u32#0..1048560%16 (.L2::cache_hint)ri@.u64", since=(8, 0),
     req=SM(90))
_DIM = ".1d .2d .3d .4d .5d"
_LOADM = ".tile .tile::gather4 .im2col .im2col::w .im2col::w::128"
form("cp", f"^.async ^.bulk ^.tensor .dim .shared::cta .global {{.lm}} {_CT} "
     f"{{.cta_group::1|.cta_group::2}} {{{_HINT}}}",
     "a t ar (.im2col|.im2col::w|.im2col::w::128)v@.b16 (.L2::cache_hint)ri@.u64", dim=_DIM,
     lm=_LOADM, since=(8, 6), req=SM(90))
form("cp", f"^.async ^.bulk ^.tensor .dim .shared::cluster .global {{.lm}} {_CT} "
     f"{{.multicast::cluster}} {{.cta_group::1|.cta_group::2}} {{{_HINT}}}",
     "a t ar (.im2col|.im2col::w|.im2col::w::128)v@.b16 (.multicast::cluster)r@.b16 "
     "(.L2::cache_hint)ri@.u64", dim=_DIM, lm=_LOADM, since=(8, 0), req=SM(90))
form("cp", f"^.async ^.bulk ^.tensor .dim .global .shared::cta {{.lm}} .bulk_group {{{_HINT}}}",
     "t a (.L2::cache_hint)ri@.u64", dim=_DIM, lm=".tile .tile::scatter4 .im2col_no_offs", since=(8, 0), req=SM(90))
form("cp", f"^.async ^.bulk ^.prefetch ^.tensor .dim .L2 .global {{.lm}} {{{_HINT}}}",
     "t (.im2col|.im2col::w|.im2col::w::128)v@.b16 (.L2::cache_hint)ri@.u64", dim=_DIM, lm=_LOADM, since=(8, 0), req=SM(90))
_RED = ".and .or .xor .add .inc .dec .min .max"
# ptxas 13.5: "Incorrect type '.b32' for operation '.add' in instruction 'cp.reduce.async.bulk'"
for _ops, _cl, _gl in ((".and|.or|.xor", ".b32 .b64", ".b32 .b64"),
                       (".add", ".u32 .s32 .u64", ".u32 .s32 .u64 .f32 .f64"),
                       (".inc|.dec", ".u32", ".u32"),
                       (".min|.max", ".u32 .s32 .u64 .s64", ".u32 .s32 .u64 .s64 .f16 .bf16")):
    form("cp", f"^.reduce ^.async ^.bulk .shared::cluster .shared::cta {_CT} {_ops} .type",
         "a a ri@.u32#0..1048560%16 a", type=_cl, since=(8, 0), req=SM(90))
    form("cp", f"^.reduce ^.async ^.bulk .global .shared::cta .bulk_group {{{_HINT}}} {_ops} .type",
         "a a ri@.u32#0..1048560%16 (.L2::cache_hint)ri@.u64", type=_gl, since=(8, 0), req=SM(90))
form("cp", f"^.reduce ^.async ^.bulk .global .shared::cta .bulk_group {{{_HINT}}} .add .noftz .type",
     "a a ri@.u32 (.L2::cache_hint)ri@.u64", type=".f16 .bf16", since=(8, 0), req=SM(90))
form("cp", f"^.reduce ^.async ^.bulk ^.tensor .dim .global .shared::cta .op {{.lm}} .bulk_group "
     f"{{{_HINT}}}", "t a (.L2::cache_hint)ri@.u64", dim=_DIM, op=".add .min .max .inc .dec .and .or .xor",
     lm=".tile .im2col_no_offs", since=(8, 0), req=SM(90))

# ------------------------------------------------------------------- 9.7.12 control flow
form("bra", "{.uni}", "l")
form("brx", "^.idx {.uni}", "ri@.u32 T", since=(6, 0), req=SM(30))
form("call", "{.uni}", "x ?x ?x ?x")
form("ret", "{.uni}", "")
form("exit", "", "")

# ------------------------------------------------------ 9.7.13 parallel synchronization
form("bar", "^{.cta} .sync", "ri@.u32#0..15 ?ri@.u32")
form("bar", "^{.cta} .arrive", "ri@.u32#0..15 ri@.u32")
form("bar", "^{.cta} .red .popc .u32", "r ri@.u32 ?ri@.u32 !pi@.pred", since=(2, 0), req=SM(20))
form("bar", "^{.cta} .red .and|.or .pred", "p@.pred ri@.u32 ?ri@.u32 !pi@.pred", since=(2, 0), req=SM(20))
form("bar", "^.warp ^.sync", "ri@.u32", since=(6, 0), req=SM(30))
form("barrier", "^{.cta} .sync {.aligned}", "ri@.u32#0..15 ?ri@.u32", since=(6, 0), req=SM(30))
form("barrier", "^{.cta} .arrive {.aligned}", "ri@.u32#0..15 ri@.u32", since=(6, 0), req=SM(30))
form("barrier", "^{.cta} .red .popc {.aligned} .u32", "r ri@.u32 ?ri@.u32 !pi@.pred", since=(6, 0),
     req=SM(30))
form("barrier", "^{.cta} .red .and|.or {.aligned} .pred", "p@.pred ri@.u32 ?ri@.u32 !pi@.pred",
     since=(6, 0), req=SM(30))
form("barrier", "^.cluster ^.arrive {.release|.relaxed} {.aligned}", "", since=(7, 8), req=SM(90))
form("barrier", "^.cluster ^.wait {.acquire} {.aligned}", "", since=(7, 8), req=SM(90))
form("membar", ".cta|.gl|.sys", "")
form("membar", "^.proxy .alias", "", since=(7, 5), req=SM(70))
form("fence", "{.sc|.acq_rel|.acquire|.release} .scope", "", scope=SCOPE, since=(6, 0), req=SM(70))
form("fence", ".acquire .sync_restrict::shared::cluster .cluster", "", since=(8, 6), req=SM(90))
form("fence", ".release .sync_restrict::shared::cta .cluster", "", since=(8, 6), req=SM(90))
form("fence", ".mbarrier_init .release .cluster", "", since=(8, 0), req=SM(90))
form("fence", "^.proxy .alias", "", since=(7, 5), req=SM(70))
# PTX ISA 9.5 (ptxas 13.5: this one spelling, .version 9.5, sm_90+); a no-op like every fence
form("fence", "^.alias .sync_restrict::read .release .sys", "", since=(9, 5), req=SM(90))
form("fence", "^.proxy .async {.global|.shared::cta|.shared::cluster}", "", since=(8, 0), req=SM(90))
form("fence", "^.proxy .tensormap::generic .release .scope", "", scope=SCOPE, since=(8, 3), req=SM(90))
form("fence", "^.proxy .tensormap::generic .acquire .scope", "a n#128", scope=SCOPE, since=(8, 3),
     req=SM(90))
form("fence", "^.proxy .async::generic .acquire .sync_restrict::shared::cluster .cluster", "",
     since=(8, 6), req=SM(90))
form("fence", "^.proxy .async::generic .release .sync_restrict::shared::cta .cluster", "",
     since=(8, 6), req=SM(90))
_ATOM_T = ".b32 .b64 .u32 .u64 .s32 .s64 .f32 .f64"
_SEM4 = ".relaxed .acquire .release .acq_rel"
_ASP = ".global .shared .shared::cta .shared::cluster"
_ATOM_OPS = ((".and|.or|.xor", ".b32 .b64"), (".exch", ".b32 .b64"),
             (".add", ".u32 .s32 .u64 .f32 .f64"), (".inc|.dec", ".u32"),
             (".min|.max", ".u32 .s32 .u64 .s64"))
for _ops, _types in _ATOM_OPS:
    form("atom", f"{{.sem}} {{.scope}} {{.space}} {_ops} {{.L2::cache_hint}} .type",
         "r a ri (.L2::cache_hint)ri@.u64", sem=_SEM4, scope=SCOPE, space=_ASP, type=_types)
    if _ops == ".exch":
        continue                          # ptxas 13.5: "Illegal operation '.exch' for 'red'"
    form("red", f"{{.space}} {{.sem}} {{.scope}} {_ops} {{.L2::cache_hint}} .type",
         "a ri (.L2::cache_hint)ri@.u64", space=_ASP, sem=".relaxed .release", scope=SCOPE,
         type=_types)
form("atom", "{.sem} {.scope} {.space} .cas .type", "r a ri ri", sem=_SEM4, scope=SCOPE,
     space=_ASP, type=".b32 .b64")
form("atom", "{.sem} {.scope} {.space} .cas .b16", "r a ri ri", sem=_SEM4, scope=SCOPE, space=_ASP,
     since=(6, 3), req=SM(70))
form("atom", "{.sem} {.scope} {.space} .cas .b128", "r a ri ri", sem=_SEM4, scope=SCOPE,
     space=_ASP, since=(8, 3), req=SM(90))
form("atom", "{.sem} {.scope} {.space} .exch {.L2::cache_hint} .b128", "r a ri (.L2::cache_hint)ri@.u64", sem=_SEM4,
     scope=SCOPE, space=_ASP, since=(8, 3), req=SM(90))
form("atom", "{.sem} {.scope} {.space} .add .noftz {.L2::cache_hint} .type", "r a ri (.L2::cache_hint)ri@.u64",
     sem=_SEM4, scope=SCOPE, space=_ASP, type=".f16 .f16x2", since=(6, 2), req=SM(70))
form("atom", "{.sem} {.scope} {.space} .add .noftz {.L2::cache_hint} .type", "r a ri (.L2::cache_hint)ri@.u64",
     sem=_SEM4, scope=SCOPE, space=_ASP, type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
form("atom", "{.sem} {.scope} {.global} .add {.L2::cache_hint} .vec .f32", "v/.vec a v/.vec (.L2::cache_hint)ri@.u64",
     sem=_SEM4, scope=SCOPE, vec=".v2 .v4", since=(8, 1), req=SM(90))
form("atom", "{.sem} {.scope} {.global} .add|.min|.max .noftz {.L2::cache_hint} .vec .type",
     "v/.vec a v/.vec (.L2::cache_hint)ri@.u64", sem=_SEM4, scope=SCOPE, vec=".v2 .v4 .v8",
     type=".f16 .bf16", since=(8, 1), req=SM(90))
form("atom", "{.sem} {.scope} {.global} .add|.min|.max .noftz {.L2::cache_hint} .vec .type",
     "v/.vec a v/.vec (.L2::cache_hint)ri@.u64", sem=_SEM4, scope=SCOPE, vec=".v2 .v4",
     type=".f16x2 .bf16x2", since=(8, 1), req=SM(90))
form("red", "{.space} {.sem} {.scope} .add .noftz {.L2::cache_hint} .type", "a ri (.L2::cache_hint)ri@.u64",
     space=_ASP, sem=".relaxed .release", scope=SCOPE, type=".f16 .f16x2", since=(6, 2), req=SM(70))
form("red", "{.space} {.sem} {.scope} .add .noftz {.L2::cache_hint} .type", "a ri (.L2::cache_hint)ri@.u64",
     space=_ASP, sem=".relaxed .release", scope=SCOPE, type=".bf16 .bf16x2", since=(7, 8), req=SM(90))
form("red", "{.global} {.sem} {.scope} .add {.L2::cache_hint} .vec .f32", "a v/.vec (.L2::cache_hint)ri@.u64",
     sem=".relaxed .release", scope=SCOPE, vec=".v2 .v4", since=(8, 1), req=SM(90))
form("red", "{.global} {.sem} {.scope} .add|.min|.max .noftz {.L2::cache_hint} .vec .type",
     "a v/.vec (.L2::cache_hint)ri@.u64", sem=".relaxed .release", scope=SCOPE, vec=".v2 .v4 .v8",
     type=".f16 .bf16", since=(8, 1), req=SM(90))
form("red", "{.global} {.sem} {.scope} .add|.min|.max .noftz {.L2::cache_hint} .vec .type",
     "a v/.vec (.L2::cache_hint)ri@.u64", sem=".relaxed .release", scope=SCOPE, vec=".v2 .v4",
     type=".f16x2 .bf16x2", since=(8, 1), req=SM(90))
form("red", f"^.async .relaxed .cluster {{.shared::cluster}} {_CT} .op .type", "a ri a",
     op=".inc .dec .min .max .and .or .xor .add", type=".u32 .s32 .b32 .u64", since=(8, 1),
     req=SM(90))
form("red", "^.async {.mmio} .release .gpu|.sys {.global} .add .type", "a ri",
     type=".u32 .s32 .u64 .s64", since=(8, 7), req=SM100)
form("vote", ".all|.any|.uni .pred", "p@.pred !pi@.pred", extra=_no_sync)
form("vote", ".ballot .b32", "r !pi@.pred", since=(1, 2), req=SM(12), extra=_no_sync)
form("vote", ".sync .all|.any|.uni .pred", "p@.pred !pi@.pred ri@.u32", since=(6, 0), req=SM(30))
form("vote", ".sync .ballot .b32", "r !pi@.pred ri@.u32", since=(6, 0), req=SM(30))
form("match", ".any .sync .type", "r@.b32 ri ri@.u32", type=".b32 .b64", since=(6, 0), req=SM(70))
form("match", ".all .sync .type", "Q@.b32 ri ri@.u32", type=".b32 .b64", since=(6, 0), req=SM(70))
form("activemask", ".b32", "r", since=(6, 2), req=SM(30))
form("redux", ".sync .add|.min|.max .type", "r ri ri@.u32", type=".u32 .s32", since=(7, 0), req=SM(80))
form("redux", ".sync .and|.or|.xor .b32", "r ri ri@.u32", since=(7, 0), req=SM(80))
form("redux", ".sync .min|.max {.abs} {.NaN} .f32", "r ri ri@.u32", since=(8, 6), req=SM100AF)
form("elect", "^.sync", "Q@.b32 ri@.u32", since=(8, 0), req=SM(90))
form("griddepcontrol", ".launch_dependents|.wait", "", since=(7, 8), req=SM(90))
form("shfl", ".up|.down|.bfly|.idx .b32", "Q ri ri ri", extra=_no_sync)
form("shfl", ".sync .up|.down|.bfly|.idx .b32", "Q ri ri@.u32 ri@.u32 ri@.u32", since=(6, 0),
     req=SM(30))
_MB = ".shared .shared::cta"
form("mbarrier", "^.init {.state} .b64", "a ri@.u32#1..1048575", state=_MB, since=(7, 0), req=SM(80))
form("mbarrier", "^.inval {.state} .b64", "a", state=_MB, since=(7, 0), req=SM(80))
# ptxas 13.5: "Modifier '.release' requires scope": a .sem comes with a .scope
_SEMSCOPE = ("", ".sem .scope ")      # ptxas 13.5: ".cta requires order", ".release requires scope"

for _arr in (".arrive", ".arrive_drop"):
    for _ss in _SEMSCOPE:
        form("mbarrier", f"^{_arr} {_ss}{{.state}} .b64", "r@.b64 a ?ri@.u32#1..1048575",
             sem=".release .relaxed", scope=".cta .cluster", state=_MB, since=(7, 0), req=SM(80))
        form("mbarrier", f"^{_arr} {_ss}.shared::cluster .b64", "z a ?ri@.u32#1..1048575",
             sem=".release .relaxed", scope=".cta .cluster", since=(8, 0), req=SM(90))
        form("mbarrier", f"^{_arr} .expect_tx {_ss}{{.state}} .b64", "r@.b64 a ri@.u32",
             sem=".release .relaxed", scope=".cta .cluster", state=_MB, since=(8, 0), req=SM(90))
        form("mbarrier", f"^{_arr} .expect_tx {_ss}.shared::cluster .b64", "z a ri@.u32",
             sem=".release .relaxed", scope=".cta .cluster", since=(8, 0), req=SM(90))
    form("mbarrier", f"^{_arr} .noComplete {{.release}} {{.cta}} {{.state}} .b64", "r@.b64 a ri@.u32",
         state=_MB, since=(7, 0), req=SM(80))
for _ss in _SEMSCOPE:
    form("mbarrier", f"^.expect_tx|.complete_tx {_ss}{{.space}} .b64", "a ri@.u32",
         sem=".relaxed", scope=".cta .cluster", space=".shared .shared::cta .shared::cluster",
         since=(8, 0), req=SM(90))
    form("mbarrier", f"^.test_wait {_ss}{{.state}} .b64", "p@.pred a r@.b64",
         sem=".acquire .relaxed", scope=".cta .cluster", state=_MB, since=(7, 0), req=SM(80))
    form("mbarrier", f"^.test_wait ^.parity {_ss}{{.state}} .b64", "p@.pred a ri@.u32",
         sem=".acquire .relaxed", scope=".cta .cluster", state=_MB, since=(7, 1), req=SM(80))
    form("mbarrier", f"^.try_wait {_ss}{{.state}} .b64", "p@.pred a r@.b64 ?ri@.u32",
         sem=".acquire .relaxed", scope=".cta .cluster", state=_MB, since=(7, 8), req=SM(90))
    form("mbarrier", f"^.try_wait ^.parity {_ss}{{.state}} .b64", "p@.pred a ri@.u32 ?ri@.u32",
         sem=".acquire .relaxed", scope=".cta .cluster", state=_MB, since=(7, 8), req=SM(90))
form("mbarrier", "^.pending_count .b64", "r@.u32 r@.b64", since=(7, 0), req=SM(80))
# the field fixes the type (ptxas 13.5: "Illegal modifier '.global_address' ... with type .b32")
# ptxas 13.5: sm_90a and the sm_100+ arch-specific / family targets; not sm_90 or plain sm_100
TMR_REQ = Req(Arch("sm_90a"), Arch("sm_100a"), Arch("sm_101a"), Arch("sm_103a"), Arch("sm_110a"),
              Arch("sm_120a"), Arch("sm_121a"), Family("sm_100f"), Family("sm_110f", (9, 0)),
              Family("sm_120f"))
_TMR = dict(ss=".global .shared::cta", since=(8, 3), req=TMR_REQ)
form("tensormap", "^.replace .tile .global_address {.ss} .b1024 .b64", "a ri", **_TMR)
form("tensormap", "^.replace .tile .rank {.ss} .b1024 .b32", "a ri", **_TMR)
form("tensormap", "^.replace .tile .global_stride {.ss} .b1024 .b64", "a n ri", **_TMR)
form("tensormap", "^.replace .tile .box_dim|.global_dim|.element_stride {.ss} .b1024 .b32", "a n ri",
     **_TMR)
form("tensormap", "^.replace .tile .elemtype|.interleave_layout|.swizzle_mode|.fill_mode "
     "{.ss} .b1024 .b32", "a n", **_TMR)
# ptxas 13.5: "Instruction 'tensormap.replace.swizzle_atomicity' not supported on .target 'sm_90a'"
form("tensormap", "^.replace .tile .swizzle_atomicity {.ss} .b1024 .b32", "a n",
     ss=".global .shared::cta", since=(8, 6), req=SM100AF)
form("tensormap", "^.cp_fenceproxy .global .shared::cta .tensormap::generic .release .scope .sync .aligned",
     "a a n#128", scope=SCOPE, since=(8, 3), req=SM(90))
form("clusterlaunchcontrol", f"^.try_cancel .async {{.shared::cta}} {_CT} {{.multicast::cluster::all}} .b128",
     "a a", since=(8, 6), req=SM100)
form("clusterlaunchcontrol", "^.query_cancel .is_canceled .pred .b128", "p@.pred ri@.b128",
     since=(8, 6), req=SM100)
form("clusterlaunchcontrol", "^.query_cancel .get_first_ctaid .v4 .b32 .b128", "v@.b32/4 ri@.b128",
     since=(8, 6), req=SM100)
form("clusterlaunchcontrol",
     "^.query_cancel .get_first_ctaid::x|.get_first_ctaid::y|.get_first_ctaid::z .b32 .b128",
     "r@.b32 ri@.b128", since=(8, 6), req=SM100)
# ptxas 13.5: "Incorrect type '.s64' for operation '.add'"
_MM_OPS = ((".min|.max", ".u32 .s32 .u64 .s64"), (".add", ".u32 .s32 .u64"),
           (".and|.or|.xor", ".b32 .b64"))
for _ops, _types in _MM_OPS:
    for _sem in ("{.weak}", ".relaxed|.acquire .scope"):
        form("multimem", f"^.ld_reduce {_sem} {{.global}} {_ops} .type", "r a", scope=SCOPE,
             type=_types, since=(8, 1), req=SM(90))
    for _sem in ("", ".relaxed|.release .scope"):
        form("multimem", f"^.red {_sem} {{.global}} {_ops} .type", "a ri", scope=SCOPE,
             type=_types, since=(8, 1), req=SM(90))
for _sem in ("{.weak}", ".relaxed|.acquire .scope"):
    form("multimem", f"^.ld_reduce {_sem} {{.global}} .min|.max|.add "
         "{.acc::f32|.acc::f16} {.vec} .type", "rv/.vec a", scope=SCOPE, vec=".v2 .v4 .v8",
         type=".f16 .f16x2 .bf16 .bf16x2 .f32 .f64", since=(8, 1), req=SM(90))
for _sem in ("{.weak}", ".relaxed|.release .scope"):
    form("multimem", f"^.st {_sem} {{.global}} .type", "a ri", scope=SCOPE,
         type=".b32 .b64 .u32 .u64 .s32 .s64", since=(8, 1), req=SM(90))
    form("multimem", f"^.st {_sem} {{.global}} {{.vec}} .type", "a riv/.vec",
         scope=SCOPE, vec=".v2 .v4 .v8", type=".f16 .f16x2 .bf16 .bf16x2 .f32 .f64", since=(8, 1),
         req=SM(90))
for _sem in ("", ".relaxed|.release .scope"):
    form("multimem", f"^.red {_sem} {{.global}} .add {{.vec}} .type", "a riv/.vec",
         scope=SCOPE, vec=".v2 .v4 .v8", type=".f16 .f16x2 .bf16 .bf16x2 .f32 .f64", since=(8, 1),
         req=SM(90))

# ---------------------------------------------------- 9.7.14 warp-level matrix (dense mma)
_SYNC = ".sync .aligned"
form("mma", f"{_SYNC} .m8n8k4 .row|.col .col|.row .dtype .f16 .f16 .ctype", "v@~dtype v@.b32 v@.b32 v@~ctype",
     dtype=".f16 .f32", ctype=".f16 .f32", since=(6, 4), req=SM(70), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k8 .row .col .dtype .f16 .f16 .ctype", "v@~dtype v@.b32 v@.b32 v@~ctype",
     dtype=".f16 .f32", ctype=".f16 .f32", since=(6, 5), req=SM(75), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k16 .row .col .dtype .f16 .f16 .ctype", "v@~dtype v@.b32 v@.b32 v@~ctype",
     dtype=".f16 .f32", ctype=".f16 .f32", since=(7, 0), req=SM(80), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k4|.m16n8k8 .row .col .f32 .tf32 .tf32 .f32", "v@.f32 v@.b32 v@.b32 v@.f32",
     since=(7, 0), req=SM(80), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k8|.m16n8k16 .row .col .f32 .bf16 .bf16 .f32", "v@.f32 v@.b32 v@.b32 v@.f32",
     since=(7, 0), req=SM(80), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k16|.m16n8k32 .row .col .dtype .atype .btype .ctype",
     "v@~dtype v@.b32 v@.b32 v@~ctype", dtype=".f16 .f32", ctype=".f16 .f32", atype=".e4m3 .e5m2",
     btype=".e4m3 .e5m2", since=(8, 4), req=SM(89), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k32 .row .col .kind::f8f6f4 .dtype .atype .btype .ctype",
     "v@~dtype v@.b32 v@.b32 v@~ctype", dtype=".f16 .f32", ctype=".f16 .f32",
     atype=".e4m3 .e5m2 .e3m2 .e2m3 .e2m1", btype=".e4m3 .e5m2 .e3m2 .e2m3 .e2m1", since=(8, 7),
     req=Req(AnyOfFamily(12)), extra=_fragment_counts)
form("mma", f"{_SYNC} .m8n8k4|.m16n8k4|.m16n8k8|.m16n8k16 .row .col .f64 .f64 .f64 .f64",
     "v@.f64 v@.f64 v@.f64 v@.f64", since=(7, 0), req=SM(80), extra=_fragment_counts)
form("mma", f"{_SYNC} .m8n8k16|.m16n8k16|.m16n8k32 .row .col {{.satfinite}} .s32 .atype .btype .s32",
     "v@.s32 v@.b32 v@.b32 v@.s32", atype=".u8 .s8", btype=".u8 .s8", since=(6, 5), req=SM(75), extra=_fragment_counts)
form("mma", f"{_SYNC} .m8n8k32|.m16n8k32|.m16n8k64 .row .col {{.satfinite}} .s32 .atype .btype .s32",
     "v@.s32 v@.b32 v@.b32 v@.s32", atype=".u4 .s4", btype=".u4 .s4", since=(6, 5), req=SM(75), extra=_fragment_counts)
form("mma", f"{_SYNC} .m8n8k128|.m16n8k128|.m16n8k256 .row .col .s32 .b1 .b1 .s32 .xor|.and .popc",
     "v@.s32 v@.b32 v@.b32 v@.s32", since=(6, 5), req=SM(75), extra=_fragment_counts)
_MMA_BS = "v@.f32 v@.b32 v@.b32 v@.f32 r@.b32 v@.b16/2 r@.b32 v@.b16/2"
form("mma", f"{_SYNC} .m16n8k64 .row .col .kind::mxf4 .block_scale {{.scale_vec::2X}} .f32 .e2m1 .e2m1 .f32 .ue8m0",
     _MMA_BS, since=(8, 7), req=Req(AnyOfFamily(12)), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k64 .row .col .kind::mxf4nvf4 .block_scale .scale_vec::2X|.scale_vec::4X "
     ".f32 .e2m1 .e2m1 .f32 .ue8m0|.ue4m3", _MMA_BS, since=(8, 7), req=Req(AnyOfFamily(12)), extra=_fragment_counts)
form("mma", f"{_SYNC} .m16n8k32 .row .col .kind::mxf8f6f4 .block_scale {{.scale_vec::1X}} .f32 .atype "
     ".btype .f32 .ue8m0", _MMA_BS, atype=".e4m3 .e5m2 .e3m2 .e2m3 .e2m1",
     btype=".e4m3 .e5m2 .e3m2 .e2m3 .e2m1", since=(8, 7), req=Req(AnyOfFamily(12)), extra=_fragment_counts)

# --------------------------------------------------------- 9.7.15 warpgroup-level (wgmma)
form("wgmma", "^.fence .sync .aligned", "", since=(8, 0), req=SM90A)
form("wgmma", "^.commit_group .sync .aligned", "", since=(8, 0), req=SM90A)
form("wgmma", "^.wait_group .sync .aligned", "n", since=(8, 0), req=SM90A)
_WG = "^.mma_async .sync .aligned"
_N8 = " ".join(f".m64n{n}k{{k}}" for n in range(8, 257, 8))
form("wgmma", f"{_WG} .shape .dtype .f16 .f16", "v@~dtype r@.b64 r@.b64 !p@.pred n n n n",
     shape=_N8.format(k=16), dtype=".f16 .f32", since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .dtype .f16 .f16", "v@~dtype v@.b32 r@.b64 !p@.pred n n n",
     shape=_N8.format(k=16), dtype=".f16 .f32", since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .f32 .bf16 .bf16", "v@.f32 r@.b64 r@.b64 !p@.pred n n n n",
     shape=_N8.format(k=16), since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .f32 .bf16 .bf16", "v@.f32 v@.b32 r@.b64 !p@.pred n n n",
     shape=_N8.format(k=16), since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .f32 .tf32 .tf32", "v@.f32 r@.b64 r@.b64 !p@.pred n n",
     shape=_N8.format(k=8), since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .f32 .tf32 .tf32", "v@.f32 v@.b32 r@.b64 !p@.pred n n",
     shape=_N8.format(k=8), since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .dtype .atype .btype", "v@~dtype r@.b64 r@.b64 !p@.pred n n",
     shape=_N8.format(k=32), dtype=".f16 .f32", atype=".e4m3 .e5m2", btype=".e4m3 .e5m2",
     since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .dtype .atype .btype", "v@~dtype v@.b32 r@.b64 !p@.pred n n",
     shape=_N8.format(k=32), dtype=".f16 .f32", atype=".e4m3 .e5m2", btype=".e4m3 .e5m2",
     since=(8, 0), req=SM90A, extra=_wgmma_counts)
_NI = " ".join(f".m64n{n}k32" for n in (8, 16, 24) + tuple(range(32, 257, 16)))
form("wgmma", f"{_WG} .shape {{.satfinite}} .s32 .atype .btype", "v@.s32 r@.b64 r@.b64 !p@.pred",
     shape=_NI, atype=".s8 .u8", btype=".s8 .u8", since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape {{.satfinite}} .s32 .atype .btype", "v@.s32 v@.b32 r@.b64 !p@.pred",
     shape=_NI, atype=".s8 .u8", btype=".s8 .u8", since=(8, 0), req=SM90A, extra=_wgmma_counts)
_NB = " ".join(f".m64n{n}k256" for n in (8, 16, 24) + tuple(range(32, 257, 16)))
form("wgmma", f"{_WG} .shape .s32 .b1 .b1 .and .popc", "v@.s32 r@.b64 r@.b64 !p@.pred", shape=_NB,
     since=(8, 0), req=SM90A, extra=_wgmma_counts)
form("wgmma", f"{_WG} .shape .s32 .b1 .b1 .and .popc", "v@.s32 v@.b32 r@.b64 !p@.pred", shape=_NB,
     since=(8, 0), req=SM90A, extra=_wgmma_counts)

# ------------------------------------------------------------------------- texture, surface
# Kept permissive: their operand shapes depend on the geometry; the qualifier vocabulary is
# checked.
_GEOM = ".1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms"
form("tex", "{.base|.level|.grad} .geom .v4|.v2 .dtype .ctype", "x x ?x ?x ?x ?x", geom=_GEOM,
     dtype=".u32 .s32 .f16 .f32 .f16x2", ctype=".s32 .f32")
form("tld4", ".r|.g|.b|.a .geom .v4 .dtype .f32", "x x ?x ?x", geom=".2d .a2d .cube .acube",
     dtype=".u32 .s32 .f32")
form("txq", "{.level} .q .b32", "r x ?x", q=".width .height .depth .channel_data_type .channel_order "
     ".normalized_coords .array_size .num_mipmap_levels .num_samples .force_unnormalized_coords "
     ".filter_mode .addr_mode_0 .addr_mode_1 .addr_mode_2")
form("suq", ".q .b32", "r x", q=".width .height .depth .channel_data_type .channel_order "
     ".array_size .memory_layout")
form("suld", ".b .geom {.cop} {.vec} .dtype .clamp", "x x", geom=".1d .2d .3d .a1d .a2d",
     cop=".ca .cg .cs .cv", vec=".v2 .v4", dtype=".b8 .b16 .b32 .b64", clamp=".trap .clamp .zero")
form("sust", ".b|.p .geom {.cop} {.vec} .ctype .clamp", "x x", geom=".1d .2d .3d .a1d .a2d",
     cop=".wb .cg .cs .wt", vec=".v2 .v4", ctype=".b8 .b16 .b32 .b64", clamp=".trap .clamp .zero")
form("sured", ".b|.p .op .geom .ctype .clamp", "x x", op=".add .min .max .and .or",
     geom=".1d .2d .3d", ctype=".u32 .u64 .s32 .b32 .s64 .b64", clamp=".trap .clamp .zero")

# ------------------------------------------------------------- notes of single qualifiers
# Qualifiers introduced after the instruction itself carry their own PTX ISA / Target ISA
# notes, whatever instruction they appear on.
QUALIFIER_NOTES.update({
    ".L2::cache_hint": ((7, 4), SM(80)), ".L2::64B": ((7, 4), SM(75)),
    ".L2::128B": ((7, 4), SM(75)), ".L2::256B": ((7, 4), SM(80)),
    ".L1::evict_normal": ((7, 4), SM(70)), ".L1::evict_unchanged": ((7, 4), SM(70)),
    ".L1::evict_first": ((7, 4), SM(70)), ".L1::evict_last": ((7, 4), SM(70)),
    ".L1::no_allocate": ((7, 4), SM(70)), ".L2::evict_normal": ((7, 4), SM(80)),
    ".L2::evict_first": ((7, 4), SM(80)), ".L2::evict_last": ((7, 4), SM(80)),
    ".shared::cluster": ((7, 8), SM(90)), ".shared::cta": ((7, 8), SM(0)),
    ".cluster": ((7, 8), SM(90)), ".b128": ((8, 3), SM(70)), ".v8": ((8, 3), SM(100)),
    ".relaxed": ((6, 0), SM(70)), ".acquire": ((6, 0), SM(70)), ".release": ((6, 0), SM(70)),
    ".acq_rel": ((6, 0), SM(70)), ".weak": ((6, 0), SM(0)), ".param::entry": ((8, 3), SM(0)),
    ".param::func": ((8, 3), SM(0)), ".unified": ((7, 4), SM(90)),
    # ptxas 13.5: "Feature '.cta_group::2' not supported on .target 'sm_100'"
    ".cta_group::1": ((8, 6), SM100AF), ".cta_group::2": ((8, 6), SM100AF),
})


def _sem_scope_notes():
    """mbarrier with .sem/.scope: PTX ISA 8.0, sm_90 (ptxas 13.5: "Modifier '.relaxed' on
    'mbarrier.test_wait' requires .target sm_90 or higher")."""
    import dataclasses
    forms = FORMS["mbarrier"]
    for k, f in enumerate(forms):
        if any(e.name == ".sem" for e in f.elems):
            forms[k] = dataclasses.replace(f, since=max(f.since, (8, 0)), req=SM(90))


_sem_scope_notes()
