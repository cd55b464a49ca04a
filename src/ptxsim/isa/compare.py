"""PTX comparison and selection instructions (PTX ISA 9.7.7: set, setp, selp, slct; the f16/bf16
forms of 9.7.4.x).

Predicates are bool arrays; registers are raw bits (see `regs`).
"""
from __future__ import annotations

import numpy as np

from ptxsim.isa import regs
from ptxsim.isa.floating import BF16, F16, F32, F64, FMTS, _flush32, decode
from ptxsim.isa.regs import INT_TYPES, bits, check_choice, illegal, out

# 9.7.7.1, Tables "Operators for signed integer, unsigned integer, and bit-size types" and
# "Floating-point comparison operators" (ordered and unordered).
SIGNED_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
UNSIGNED_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
BIT_OPS = ("eq", "ne")
FLOAT_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
             "num", "nan")
BOOL_OPS = ("and", "or", "xor")
INT_CMP_TYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64")
FLOAT_CMP_TYPES = ("f32", "f64", "f16", "bf16", "f16x2", "bf16x2")
FTZ_CMP_TYPES = ("f32", "f16", "f16x2")
SET_DTYPES = ("u32", "s32", "f32")
SELP_TYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64")


def cmp_ops_for(type: str) -> tuple[str, ...]:
    if type in FLOAT_CMP_TYPES:
        return FLOAT_OPS
    if type.startswith("b"):
        return BIT_OPS
    return SIGNED_OPS if type.startswith("s") else UNSIGNED_OPS


def _check_cmp(instr, cmp, type, ftz):
    check_choice(instr, "type", type, INT_CMP_TYPES + FLOAT_CMP_TYPES)
    check_choice(instr, "CmpOp", cmp, cmp_ops_for(type))
    if ftz and type not in FTZ_CMP_TYPES:
        raise illegal(instr, f".ftz is not defined for .{type}")


def _float_cmp(x: np.ndarray, y: np.ndarray, cmp: str) -> np.ndarray:
    unordered = np.isnan(x) | np.isnan(y)
    if cmp == "num":
        return ~unordered
    if cmp == "nan":
        return unordered
    base = cmp[:2]
    with np.errstate(invalid="ignore"):
        t = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
             "ge": x >= y}[base]
    if len(cmp) == 3:            # equ, neu, ltu, ...: true when unordered
        return t | unordered
    return t & ~unordered        # ordered: false when unordered (also for ne)


def _int_cmp(x: np.ndarray, y: np.ndarray, cmp: str) -> np.ndarray:
    op = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(cmp, cmp)
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
            "ge": x >= y}[op]


def compare(a, b, *, cmp: str, type: str, ftz: bool = False) -> list[np.ndarray]:
    """`a CmpOp b` per lane: a list of one bool array (two for .f16x2 / .bf16x2, low half
    first)."""
    _check_cmp("setp", cmp, type, ftz)
    if type in INT_CMP_TYPES:
        t = INT_TYPES[type]
        x, y = bits(a, t.width, "a"), bits(b, t.width, "b")
        if cmp in ("lo", "ls", "hi", "hs") or not t.signed:
            return [_int_cmp(x, y, cmp)]
        return [_int_cmp(regs.value(x, t), regs.value(y, t), cmp)]
    packed = type.endswith("x2")
    fmt = {"f16": F16, "bf16": BF16}[type[:-2]] if packed else FMTS[type]
    n = 2 if packed else 1
    x, y = bits(a, fmt.width * n, "a"), bits(b, fmt.width * n, "b")
    res = []
    m = np.uint64((1 << fmt.width) - 1) if fmt is not F64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    for k in range(n):
        sh = np.uint64(fmt.width * k)
        res.append(_float_cmp(decode((x >> sh) & m, fmt, ftz), decode((y >> sh) & m, fmt, ftz),
                              cmp))
    return res


def _combine(t, bool_op, c):
    if bool_op is None:
        if c is not None:
            raise illegal("setp", "predicate c given without a .BoolOp")
        return t
    check_choice("setp", "BoolOp", bool_op, BOOL_OPS)
    cc = regs.pred(c, "c")
    return {"and": t & cc, "or": t | cc, "xor": t ^ cc}[bool_op]


def setp(a, b, *, cmp: str, type: str, ftz: bool = False, bool_op: str | None = None,
         c=None) -> tuple[np.ndarray, np.ndarray]:
    """`setp.CmpOp{.BoolOp}{.ftz}.type p|q, a, b{, {!}c}` -> (p, q).

    Scalar types: p = (a CmpOp b) BoolOp c, q = !(a CmpOp b) BoolOp c. Packed .f16x2/.bf16x2:
    p from the low halves, q from the high halves, each combined with c. (Pass `~c` for `!c`.)
    """
    if bool_op is not None and c is None:
        raise illegal("setp", f".{bool_op} needs the predicate operand c")
    ts = compare(a, b, cmp=cmp, type=type, ftz=ftz)
    if len(ts) == 2:
        p, q = _combine(ts[0], bool_op, c), _combine(ts[1], bool_op, c)
    else:
        p, q = _combine(ts[0], bool_op, c), _combine(~ts[0], bool_op, c)
    p, q = np.broadcast_arrays(p, q)
    return p.copy(), q.copy()


# set: destination encodings of "true" per dtype (9.7.7.2; 9.7.4.x for the half forms)
_TRUE = {"u32": 0xFFFFFFFF, "s32": 0xFFFFFFFF, "f32": 0x3F800000, "u16": 0xFFFF, "s16": 0xFFFF,
         "f16": 0x3C00, "bf16": 0x3F80}
SET_TABLE = {  # stype -> legal dtypes (the syntax blocks of set, 9.7.7.2 and 9.7.4.x)
    **{s: ("u32", "s32", "f32", "f16", "bf16") for s in INT_CMP_TYPES + ("f32", "f64")},
    "f16": ("u16", "s16", "u32", "s32", "f16", "bf16"),
    "bf16": ("u16", "s16", "u32", "s32", "bf16"),   # bf16 <- bf16: accepted by ptxas 13.0
    "f16x2": ("f16x2", "u32", "s32"), "bf16x2": ("bf16x2", "u32", "s32"),
}


def set(a, b, *, cmp: str, dtype: str, stype: str, ftz: bool = False,  # noqa: A001
        bool_op: str | None = None, c=None) -> np.ndarray:
    """`set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}`: all-ones (integer dtype) or 1.0
    (float dtype) when (a CmpOp b) BoolOp c holds, else 0. Packed sources give one result per
    16-bit half (0xFFFF / 1.0 per half)."""
    check_choice("set", "stype", stype, SET_TABLE)
    check_choice("set", "dtype", dtype, SET_TABLE[stype])
    if bool_op is not None and c is None:
        raise illegal("set", f".{bool_op} needs the predicate operand c")
    ts = compare(a, b, cmp=cmp, type=stype, ftz=ftz)
    ts = [_combine(t, bool_op, c) for t in ts]
    if len(ts) == 2:
        half = _TRUE.get(dtype[:-2], 0xFFFF) if dtype.endswith("x2") else 0xFFFF
        d = np.where(ts[0], np.uint64(half), np.uint64(0)) | \
            np.where(ts[1], np.uint64(half << 16), np.uint64(0))
        return out(d, 32)
    width = 16 if dtype in ("u16", "s16", "f16", "bf16") else 32
    return out(np.where(ts[0], np.uint64(_TRUE[dtype]), np.uint64(0)), width)


def selp(a, b, c, *, type: str) -> np.ndarray:
    """`selp.type d, a, b, c`: d = c ? a : b."""
    check_choice("selp", "type", type, SELP_TYPES)
    w = 64 if type.endswith("64") else (16 if type.endswith("16") else 32)
    return out(np.where(regs.pred(c, "c"), bits(a, w, "a"), bits(b, w, "b")), w)


def slct(a, b, c, *, dtype: str, ctype: str, ftz: bool = False) -> np.ndarray:
    """`slct{.ftz}.dtype.ctype d, a, b, c`: d = (c >= 0) ? a : b. For .f32 c, -0 >= 0 holds and a
    NaN c selects b (the comparison is false)."""
    check_choice("slct", "dtype", dtype, SELP_TYPES)
    check_choice("slct", "ctype", ctype, ("s32", "f32"))
    if ftz and ctype != "f32":
        raise illegal("slct", ".ftz applies only to slct.dtype.f32")
    w = 64 if dtype.endswith("64") else (16 if dtype.endswith("16") else 32)
    if ctype == "s32":
        cond = regs.signed(bits(c, 32, "c"), 32) >= 0
    else:
        with np.errstate(invalid="ignore"):
            cond = decode(bits(c, 32, "c"), F32, ftz) >= 0
    return out(np.where(cond, bits(a, w, "a"), bits(b, w, "b")), w)


# --- executor fast paths ------------------------------------------------------------------------
# Kernels `base.semantics` runs when every operand is a 1-d array of the exact container dtype:
# comparisons on views of the register bits (int32 for signed, float32 / float64 for floats --
# decoding f32 / f64 to float64 is exact, so comparing the narrow values gives the same truth),
# no per-call checks. (kernel, operand dtypes) or None. Bit-identity with the functions above:
# tests/isa/test_fast_paths_float.py and test_fast_paths_integer.py.
_U = {16: np.uint16, 32: np.uint32, 64: np.uint64}
_S = {16: np.int16, 32: np.int32, 64: np.int64}
_INT_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
            "hi": np.greater, "hs": np.greater_equal}


def _ieee_cmp(cmp):
    """The 14 float CmpOps (9.7.7.1) from IEEE comparisons, which are false for a NaN operand
    except !=: ordered ne = lt | gt, an unordered op = NOT the opposite ordered one."""
    lt, le, gt, ge, eq = np.less, np.less_equal, np.greater, np.greater_equal, np.equal
    return {
        "eq": eq, "lt": lt, "le": le, "gt": gt, "ge": ge,
        "ne": lambda x, y: lt(x, y) | gt(x, y),
        "equ": lambda x, y: ~(lt(x, y) | gt(x, y)), "neu": np.not_equal,
        "ltu": lambda x, y: ~ge(x, y), "leu": lambda x, y: ~gt(x, y),
        "gtu": lambda x, y: ~le(x, y), "geu": lambda x, y: ~lt(x, y),
        "num": lambda x, y: eq(x, x) & eq(y, y), "nan": lambda x, y: (x != x) | (y != y),
    }[cmp]



def _fast_compare(cmp, type, ftz):
    """(a, b) -> bool of `a CmpOp b` for the scalar types, or None."""
    if type in INT_CMP_TYPES:
        if cmp not in cmp_ops_for(type) or ftz:
            return None
        t = INT_TYPES[type]
        op = _INT_CMP[cmp]
        if t.signed and cmp not in ("lo", "ls", "hi", "hs"):
            s = _S[t.width]
            return (lambda a, b: op(a.view(s), b.view(s))), _U[t.width]
        return op, _U[t.width]
    if type not in ("f32", "f64") or cmp not in FLOAT_OPS or (ftz and type != "f32"):
        return None
    op = _ieee_cmp(cmp)
    if type == "f64":
        def f64(a, b):
            with np.errstate(invalid="ignore"):
                return op(a.view(np.float64), b.view(np.float64))
        return f64, np.uint64
    if not ftz:
        def f32(a, b):
            with np.errstate(invalid="ignore"):
                return op(a.view(np.float32), b.view(np.float32))
        return f32, np.uint32

    def f32_ftz(a, b):                     # .ftz: a subnormal operand compares as zero
        with np.errstate(invalid="ignore"):
            return op(_flush32(a).view(np.float32), _flush32(b).view(np.float32))
    return f32_ftz, np.uint32


def _fast_setp(cmp, type, ftz=False, bool_op=None):
    """setp -> (p, q); with a BoolOp the kernel takes the predicate c third."""
    got = _fast_compare(cmp, type, ftz)
    if got is None or bool_op not in (None,) + BOOL_OPS:
        return None
    t, dt = got
    if bool_op is None:
        def setp0(a, b):
            p = t(a, b)
            return p, ~p
        return setp0, (dt, dt)
    comb = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[bool_op]

    def setp_c(a, b, c):
        p = t(a, b)
        return comb(p, c), comb(~p, c)
    return setp_c, (dt, dt, np.bool_)


def _fast_selp(type):
    if type not in SELP_TYPES:
        return None
    dt = _U[64 if type.endswith("64") else (16 if type.endswith("16") else 32)]
    return (lambda a, b, c: np.where(c, a, b)), (dt, dt, np.bool_)


FAST_PATHS = {selp: _fast_selp}
