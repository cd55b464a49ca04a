"""PTX logic and shift instructions (PTX ISA 9.7.8) and the byte permute `prmt` (9.7.9.7).

Register bits in, register bits out (see `regs`); `.pred` operands are bool arrays.
"""
from __future__ import annotations

import numpy as np

from ptxsim.isa import regs
from ptxsim.isa.regs import INT_TYPES, bits, check_choice, out

# --- legality tables (9.7.8.x syntax blocks) -----------------------------------------------------
LOGIC_TYPES = ("pred", "b16", "b32", "b64")        # and, or, xor, not
CNOT_TYPES = ("b16", "b32", "b64")
SHL_TYPES = ("b16", "b32", "b64")
SHR_TYPES = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64")
SHF_DIRS = ("l", "r")
SHF_MODES = ("clamp", "wrap")
LOP3_BOOLOPS = ("or", "and")
PRMT_MODES = (None, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16")

# 9.7.9.7 prmt, the table of the specialised modes: for c[1:0] = 0..3, the source byte index of
# destination bytes (d.b3, d.b2, d.b1, d.b0), bytes numbered {b, a} = {b7..b4, b3..b0}.
PRMT_MODE_TABLE = {
    "f4e":  ((3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)),   # forward 4 extract
    "b4e":  ((5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)),   # backward 4 extract
    "rc8":  ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),   # replicate 8
    "ecl":  ((3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)),   # edge clamp left
    "ecr":  ((0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)),   # edge clamp right
    "rc16": ((1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)),   # replicate 16
}


def _width(instr, type, allowed) -> int:
    check_choice(instr, "type", type, allowed)
    return INT_TYPES[type].width


def _binary(instr, op, a, b, type):
    if type == "pred":
        check_choice(instr, "type", type, LOGIC_TYPES)
        return op(regs.pred(a, "a"), regs.pred(b, "b"))
    w = _width(instr, type, LOGIC_TYPES)
    return out(op(bits(a, w, "a"), bits(b, w, "b")), w)


def and_(a, b, *, type: str):
    """`and.type d, a, b` (PTX `and`; `and` is a Python keyword)."""
    return _binary("and", np.bitwise_and, a, b, type)


def or_(a, b, *, type: str):
    """`or.type d, a, b`."""
    return _binary("or", np.bitwise_or, a, b, type)


def xor(a, b, *, type: str):
    """`xor.type d, a, b`."""
    return _binary("xor", np.bitwise_xor, a, b, type)


def not_(a, *, type: str):
    """`not.type d, a`: one's complement (logical not for .pred)."""
    if type == "pred":
        return ~regs.pred(a, "a")
    w = _width("not", type, LOGIC_TYPES)
    return out(~bits(a, w, "a"), w)


def cnot(a, *, type: str):
    """`cnot.type d, a`: C logical not, d = (a == 0) ? 1 : 0."""
    w = _width("cnot", type, CNOT_TYPES)
    return out((bits(a, w, "a") == 0).astype(np.uint64), w)


def lop3(a, b, c, imm_lut: int, *, bool_op: str | None = None, q=None):
    """`lop3{.BoolOp}.b32 d[|p], a, b, c, immLut[, q]`: bit i of d is bit (a_i b_i c_i) of
    immLut (so immLut = F(0xF0, 0xCC, 0xAA)). With .BoolOp returns (d, p = (d != 0) BoolOp q)."""
    if not isinstance(imm_lut, (int, np.integer)) or not 0 <= int(imm_lut) <= 255:
        raise regs.illegal("lop3", f"immLut must be an integer constant 0..255, got {imm_lut!r}")
    x, y, z = bits(a, 32, "a"), bits(b, 32, "b"), bits(c, 32, "c")
    full = np.uint64(0xFFFFFFFF)
    d = np.zeros(np.broadcast(x, y, z).shape, np.uint64)
    for k in range(8):
        if (int(imm_lut) >> k) & 1:
            d |= ((x if k & 4 else ~x) & (y if k & 2 else ~y) & (z if k & 1 else ~z)) & full
    d = out(d, 32)
    if bool_op is None:
        if q is not None:
            raise regs.illegal("lop3", "predicate q given without a .BoolOp")
        return d
    check_choice("lop3", "BoolOp", bool_op, LOP3_BOOLOPS)
    qq = regs.pred(q, "q")
    return d, ((d != 0) | qq) if bool_op == "or" else ((d != 0) & qq)


def shl(a, b, *, type: str) -> np.ndarray:
    """`shl.type d, a, b`: shift amounts above the width clamp to the width (result 0)."""
    w = _width("shl", type, SHL_TYPES)
    n = np.minimum(bits(b, 32, "b"), np.uint64(w))
    return out(np.where(n >= 64, np.uint64(0), bits(a, w, "a") << np.minimum(n, np.uint64(63))), w)


def shr(a, b, *, type: str) -> np.ndarray:
    """`shr.type d, a, b`: logical for .b/.u, arithmetic (sign fill) for .s; amounts clamp to the
    width."""
    t = INT_TYPES[type] if type in SHR_TYPES else None
    w = _width("shr", type, SHR_TYPES)
    n = np.minimum(bits(b, 32, "b"), np.uint64(w))
    x = bits(a, w, "a")
    if t.signed:
        v = regs.signed(x, w) >> np.minimum(n, np.uint64(63)).astype(np.int64)
        return out(regs.from_value(v, w), w)
    return out(np.where(n >= 64, np.uint64(0), x >> np.minimum(n, np.uint64(63))), w)


def shf(a, b, c, *, dir: str, mode: str) -> np.ndarray:
    """`shf.{l,r}.{clamp,wrap}.b32 d, a, b, c`: funnel shift of the 64-bit {b, a} by
    n = min(c, 32) (.clamp) or c & 31 (.wrap); .l keeps the high 32 bits, .r the low."""
    check_choice("shf", "direction", dir, SHF_DIRS)
    check_choice("shf", "mode", mode, SHF_MODES)
    x, y, s = bits(a, 32, "a"), bits(b, 32, "b"), bits(c, 32, "c")
    n = np.minimum(s, np.uint64(32)) if mode == "clamp" else s & np.uint64(31)
    v = (y << np.uint64(32)) | x
    if dir == "l":
        return out((v << n) >> np.uint64(32), 32)
    return out(v >> n, 32)


def prmt(a, b, c, *, mode: str | None = None) -> np.ndarray:
    """`prmt.b32{.mode} d, a, b, c`: pick bytes of {b, a}. Default mode: selector nibble k of c
    picks source byte sel[2:0] for destination byte k, sel[3] replicates that byte's sign bit.
    Specialised modes use c[1:0] and PRMT_MODE_TABLE."""
    check_choice("prmt", "mode", mode, PRMT_MODES)
    x, y, s = bits(a, 32, "a"), bits(b, 32, "b"), bits(c, 32, "c")
    x, y, s = np.broadcast_arrays(x, y, s)
    src = (y << np.uint64(32)) | x
    srcbytes = np.stack([(src >> np.uint64(8 * i)) & np.uint64(0xFF) for i in range(8)], -1)
    d = np.zeros(x.shape, np.uint64)
    if mode is None:
        for k in range(4):
            sel = ((s >> np.uint64(4 * k)) & np.uint64(0xF)).astype(np.intp)
            byte = np.take_along_axis(srcbytes, (sel & 7)[..., None], -1)[..., 0]
            sign = np.where((byte & np.uint64(0x80)) != 0, np.uint64(0xFF), np.uint64(0))
            d |= np.where(sel >= 8, sign, byte) << np.uint64(8 * k)
        return out(d, 32)
    table = np.array([row[::-1] for row in PRMT_MODE_TABLE[mode]], dtype=np.intp)  # [c, byte k]
    idx = table[(s & np.uint64(3)).astype(np.intp)]                                 # (..., 4)
    picked = np.take_along_axis(srcbytes, idx, -1)
    for k in range(4):
        d |= picked[..., k] << np.uint64(8 * k)
    return out(d, 32)


# --- executor fast paths ------------------------------------------------------------------------
# Kernels `base.semantics` runs when every operand is a 1-d array of the exact container dtype
# (bool for .pred): no uint64 widening, no per-call checks. (kernel, operand dtypes) or None.
# Bit-identity with the functions above: tests/isa/test_fast_paths_integer.py.
_U = {16: np.uint16, 32: np.uint32, 64: np.uint64}
_S = {16: np.int16, 32: np.int32, 64: np.int64}


def _fast_binary(ufunc):
    def build(type):
        if type == "pred":
            return ufunc, (np.bool_, np.bool_)
        if type not in LOGIC_TYPES:
            return None
        dt = _U[INT_TYPES[type].width]
        return ufunc, (dt, dt)
    return build


def _fast_not(type):
    if type == "pred":
        return np.logical_not, (np.bool_,)
    if type not in LOGIC_TYPES:
        return None
    return np.invert, (_U[INT_TYPES[type].width],)


def _fast_shift(left):
    """shl / shr with amounts as the clamp of 9.7.8.x wants them: numpy's shifts of 32- and
    64-bit integers already give 0 (sign fill for signed >>) for an amount >= the width, also for
    amounts that are negative as int32 (tests: every amount 0..299 and 2^32 - 1); 16-bit
    operands clamp explicitly."""
    def build(type):
        if type not in (SHL_TYPES if left else SHR_TYPES):
            return None
        t = INT_TYPES[type]
        w, dt = t.width, _U[t.width]
        op = np.left_shift if left else np.right_shift
        signed = t.signed and not left
        if w == 32:
            if signed:
                return (lambda a, b: (a.view(np.int32) >> b.view(np.int32)).view(dt)), \
                    (dt, np.uint32)
            return op, (dt, np.uint32)
        if w == 64:
            if signed:
                return (lambda a, b: (a.view(np.int64) >> b).view(dt)), (dt, np.uint32)
            return op, (dt, np.uint32)
        top = np.uint32(w - 1)
        if signed:
            s = _S[w]
            return (lambda a, b: (a.view(s) >> np.minimum(b, top).astype(s)).view(dt)), \
                (dt, np.uint32)
        zero, wide = dt(0), np.uint32(w)
        return (lambda a, b: np.where(b >= wide, zero, op(a, np.minimum(b, top).astype(dt)))), \
            (dt, np.uint32)
    return build


FAST_PATHS = {and_: _fast_binary(np.bitwise_and), or_: _fast_binary(np.bitwise_or),
              xor: _fast_binary(np.bitwise_xor), not_: _fast_not, shl: _fast_shift(True),
              shr: _fast_shift(False)}
