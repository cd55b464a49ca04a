"""setp / set / selp / slct against Python comparisons written out here and IEEE 754's ordered /
unordered predicate table."""
import math

import numpy as np
import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import compare as C

RNG = np.random.default_rng(3)


def sv(x, w):
    return x - (1 << w) if x >> (w - 1) else x


INT_CASES = [("u32", 32, False), ("s32", 32, True), ("u64", 64, False), ("s64", 64, True),
             ("u16", 16, False), ("s16", 16, True)]
PY_OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
          "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@pytest.mark.parametrize("type,w,signed", INT_CASES)
def test_setp_integer(type, w, signed):
    m = (1 << w) - 1
    a = [int(x) & m for x in RNG.integers(-(1 << 62), 1 << 62, 100, dtype=np.int64)] + [0, m, 1]
    b = a[3:] + a[:3]
    b[:5] = a[:5]                      # some equal pairs
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
    va = [sv(x, w) if signed else x for x in a]
    vb = [sv(x, w) if signed else x for x in b]
    for op in C.cmp_ops_for(type):
        p, q = C.setp(np.array(a, dt), np.array(b, dt), cmp=op, type=type)
        base = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(op)
        if base:  # unsigned-only operators compare the raw bits
            want = [PY_OPS[base](x, y) for x, y in zip(a, b)]
        else:
            want = [PY_OPS[op](x, y) for x, y in zip(va, vb)]
        assert list(p) == want and list(q) == [not t for t in want]


def test_setp_bit_types_only_eq_ne():
    assert C.cmp_ops_for("b32") == ("eq", "ne")
    with pytest.raises(PtxValidationError):
        C.setp([1], [2], cmp="lt", type="b32")
    with pytest.raises(PtxValidationError):
        C.setp([1], [2], cmp="hi", type="s32")
    with pytest.raises(PtxValidationError):
        C.setp([1], [2], cmp="equ", type="u32")
    with pytest.raises(PtxValidationError):
        C.setp([1], [2], cmp="eq", type="u32", ftz=True)


FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, math.inf, -math.inf, math.nan, 1e-45, 3.0]


def ieee_pred(op, x, y):
    """IEEE 754 5.11 table: unordered iff a NaN; 'u' variants are true when unordered."""
    un = math.isnan(x) or math.isnan(y)
    if op == "num":
        return not un
    if op == "nan":
        return un
    if un:
        return len(op) == 3
    return PY_OPS[op[:2]](x, y)


def test_setp_float_all_ops():
    xs = [x for x in FLOATS for _ in FLOATS]
    ys = [y for _ in FLOATS for y in FLOATS]
    a = np.array(xs, np.float32).view(np.uint32)
    b = np.array(ys, np.float32).view(np.uint32)
    for op in C.FLOAT_OPS:
        p, q = C.setp(a, b, cmp=op, type="f32")
        assert list(p) == [ieee_pred(op, x, y) for x, y in zip(xs, ys)], op
        a64, b64 = np.array(xs).view(np.uint64), np.array(ys).view(np.uint64)
        p, q = C.setp(a64, b64, cmp=op, type="f64")
        assert list(p) == [ieee_pred(op, x, y) for x, y in zip(xs, ys)], op


def test_setp_ftz_and_boolop():
    tiny = np.float32(1e-45).view(np.uint32)
    zero = np.uint32(0)
    assert not C.setp([tiny], [zero], cmp="eq", type="f32")[0][0]
    assert C.setp([tiny], [zero], cmp="eq", type="f32", ftz=True)[0][0]   # flushed to 0
    t = np.array([True, True, False, False])
    c = np.array([True, False, True, False])
    a = np.where(t, 1, 2).astype(np.uint32)
    for op, f in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
        p, q = C.setp(a, np.ones(4, np.uint32), cmp="eq", type="u32", bool_op=op, c=c)
        assert list(p) == list(f(t, c)) and list(q) == list(f(~t, c))
    with pytest.raises(PtxValidationError):
        C.setp([1], [1], cmp="eq", type="u32", bool_op="and")      # missing c


def test_setp_f16x2_two_lanes():
    a = np.array([1.0, np.nan], np.float16).view(np.uint32)
    b = np.array([2.0, 1.0], np.float16).view(np.uint32)
    p, q = C.setp(a, b, cmp="lt", type="f16x2")
    assert p[0] and not q[0]                     # 1 < 2 ; NaN < 1 is false
    p, q = C.setp(a, b, cmp="ltu", type="f16x2")
    assert p[0] and q[0]


def test_set_encodings():
    one, two = np.float32(1).view(np.uint32), np.float32(2).view(np.uint32)
    assert C.set([one], [two], cmp="lt", dtype="u32", stype="f32")[0] == 0xFFFFFFFF
    assert C.set([one], [two], cmp="lt", dtype="f32", stype="f32")[0] == 0x3F800000
    assert C.set([two], [one], cmp="lt", dtype="s32", stype="f32")[0] == 0
    assert C.set([5], [3], cmp="gt", dtype="f16", stype="s32")[0] == 0x3C00
    h = np.array([1.0, 3.0], np.float16).view(np.uint32)
    g = np.array([2.0, 2.0], np.float16).view(np.uint32)
    assert C.set(h, g, cmp="lt", dtype="f16x2", stype="f16x2")[0] == 0x00003C00
    assert C.set(h, g, cmp="lt", dtype="u32", stype="f16x2")[0] == 0x0000FFFF
    assert C.set([1], [1], cmp="eq", dtype="u32", stype="u32", bool_op="and", c=[False])[0] == 0
    with pytest.raises(PtxValidationError):
        C.set([1], [1], cmp="eq", dtype="f16x2", stype="u32")


def test_selp_slct():
    c = np.array([True, False])
    assert list(C.selp([1, 1], [2, 2], c, type="u32")) == [1, 2]
    assert list(C.selp([1 << 40, 1], [2, 2], c, type="b64")) == [1 << 40, 2]
    cs = np.array([0, 0x80000000, 5, 0xFFFFFFFF], np.uint32)          # 0, INT_MIN, 5, -1
    assert list(C.slct([1] * 4, [2] * 4, cs, dtype="u32", ctype="s32")) == [1, 2, 1, 2]
    cf = np.array([0.0, -0.0, -1.0, np.nan, 1e-45, -1e-45], np.float32).view(np.uint32)
    assert list(C.slct([1] * 6, [2] * 6, cf, dtype="b32", ctype="f32")) == [1, 1, 2, 2, 1, 2]
    # .ftz flushes the subnormal -1e-45 to -0, which is >= 0
    assert list(C.slct([1] * 6, [2] * 6, cf, dtype="b32", ctype="f32", ftz=True)) == \
        [1, 1, 2, 2, 1, 1]
