"""Logic, shift and prmt against hand-derived values, the manual's truth-table construction for
lop3, and bit-by-bit references written here."""
import numpy as np
import pytest

from ptxsim.errors import OperandError, PtxValidationError
from ptxsim.isa import logic as L

RNG = np.random.default_rng(7)
A = [int(x) for x in RNG.integers(0, 1 << 32, 200, dtype=np.int64)] + [0, 0xFFFFFFFF, 0x80000000]
B = A[5:] + A[:5]
C = A[11:] + A[:11]


def u32(xs):
    return np.array(xs, np.uint32)


def test_and_or_xor_not_cnot():
    assert list(L.and_(u32(A), u32(B), type="b32")) == [x & y for x, y in zip(A, B)]
    assert list(L.or_(u32(A), u32(B), type="b32")) == [x | y for x, y in zip(A, B)]
    assert list(L.xor(u32(A), u32(B), type="b32")) == [x ^ y for x, y in zip(A, B)]
    assert list(L.not_(u32(A), type="b32")) == [x ^ 0xFFFFFFFF for x in A]
    assert list(L.cnot(u32([0, 5, 0xFFFFFFFF]), type="b32")) == [1, 0, 0]
    assert list(L.not_(np.array([True, False]), type="pred")) == [False, True]
    assert list(L.and_([True, True], [True, False], type="pred")) == [True, False]
    assert L.not_([0x00FF], type="b16")[0] == 0xFF00 and L.not_([0], type="b16").dtype == np.uint16
    with pytest.raises(PtxValidationError):
        L.cnot([1], type="pred")


def test_lop3_manual_examples():
    # 9.7.8.6: immLut = F(0xF0, 0xCC, 0xAA); the manual's four examples
    for lut, f in ((0x80, lambda a, b, c: a & b & c), (0xFE, lambda a, b, c: a | b | c),
                   (0x40, lambda a, b, c: a & b & ~c), (0x1A, lambda a, b, c: (a & b | c) ^ a)):
        assert f(0xF0, 0xCC, 0xAA) & 0xFF == lut
        got = L.lop3(u32(A), u32(B), u32(C), lut)
        assert list(got) == [f(a, b, c) & 0xFFFFFFFF for a, b, c in zip(A, B, C)]


def test_lop3_every_lut_on_the_three_constants():
    # applying lop3 to (0xF0, 0xCC, 0xAA) reproduces immLut in the low byte, for all 256 tables
    for lut in range(256):
        assert L.lop3([0xF0], [0xCC], [0xAA], lut)[0] & 0xFF == lut


def test_lop3_boolop():
    d, p = L.lop3(u32([1, 0, 0]), u32([1, 0, 0]), u32([0, 0, 0]), 0x80 | 0x40,
                  bool_op="or", q=[False, True, False])
    assert list(d) == [1, 0, 0] and list(p) == [True, True, False]
    d, p = L.lop3(u32([1, 1]), u32([1, 1]), u32([0, 0]), 0xC0, bool_op="and", q=[True, False])
    assert list(p) == [True, False]
    with pytest.raises(PtxValidationError):
        L.lop3([0], [0], [0], 256)


@pytest.mark.parametrize("w,t", [(16, "b16"), (32, "b32"), (64, "b64")])
def test_shl_shr_clamp(w, t):
    m = (1 << w) - 1
    xs = [a & m for a in A[:50]] + [m, 1 << (w - 1)]
    ns = [int(n) for n in RNG.integers(0, w + 10, len(xs))]
    ns[:3] = [0, w, 0xFFFFFFFF]
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
    got = L.shl(np.array(xs, dt), u32(ns), type=t)
    assert [int(g) for g in got] == [(x << min(n, w)) & m for x, n in zip(xs, ns)]
    got = L.shr(np.array(xs, dt), u32(ns), type=t)
    assert [int(g) for g in got] == [x >> min(n, w) for x, n in zip(xs, ns)]
    st = "s" + t[1:]

    def sar(x, n):
        v = x - (1 << w) if x >> (w - 1) else x
        return (v >> min(n, w)) & m
    got = L.shr(np.array(xs, dt), u32(ns), type=st)
    assert [int(g) for g in got] == [sar(x, n) for x, n in zip(xs, ns)]


@pytest.mark.parametrize("mode", ["clamp", "wrap"])
def test_shf(mode):
    ns = [int(n) for n in RNG.integers(0, 70, len(A))]
    ns[:3] = [0, 32, 0xFFFFFFFF]
    for x, y, n, dl, dr in zip(A, B, ns, L.shf(u32(A), u32(B), u32(ns), dir="l", mode=mode),
                               L.shf(u32(A), u32(B), u32(ns), dir="r", mode=mode)):
        k = min(n, 32) if mode == "clamp" else n & 31
        v = (y << 32) | x
        assert dl == ((v << k) >> 32) & 0xFFFFFFFF
        assert dr == (v >> k) & 0xFFFFFFFF


def test_prmt_default_mode_by_hand():
    a, b = 0x33221100, 0x77665544      # bytes b0..b7 = 00 11 22 33 44 55 66 77
    assert L.prmt([a], [b], [0x3210])[0] == a                  # identity
    assert L.prmt([a], [b], [0x7654])[0] == b
    assert L.prmt([a], [b], [0x0123])[0] == 0x00112233          # byte reverse of a
    assert L.prmt([a], [b], [0x4444])[0] == 0x44444444
    # msb of a selector nibble replicates the sign bit of the chosen byte
    a2 = 0x00008000 | 0x7F                                    # b1 = 0x80 (negative), b0 = 0x7F
    assert L.prmt([a2], [0], [0x9898])[0] == 0xFF00FF00          # 9 -> sign(b1)=FF, 8 -> sign(b0)
    assert L.prmt([a2], [0], [0x1010])[0] == 0x807F807F


def test_prmt_modes_by_hand():
    a, b = 0x33221100, 0x77665544
    # f4e: c=1 -> bytes {4,3,2,1}: d = 0x44332211
    assert L.prmt([a], [b], [1], mode="f4e")[0] == 0x44332211
    assert L.prmt([a], [b], [0], mode="f4e")[0] == 0x33221100
    # b4e: c=0 -> {5,6,7,0}: d.b3=b5=0x55, d.b2=0x66, d.b1=0x77, d.b0=0x00
    assert L.prmt([a], [b], [0], mode="b4e")[0] == 0x55667700
    assert L.prmt([a], [b], [3], mode="b4e")[0] == 0x00112233
    assert L.prmt([a], [b], [2], mode="rc8")[0] == 0x22222222
    assert L.prmt([a], [b], [1], mode="ecl")[0] == 0x33221111
    assert L.prmt([a], [b], [2], mode="ecr")[0] == 0x22221100
    assert L.prmt([a], [b], [1], mode="rc16")[0] == 0x33223322
    assert L.prmt([a], [b], [0x1000 | 2], mode="rc16")[0] == 0x11001100  # only c[1:0] counts
    with pytest.raises(PtxValidationError):
        L.prmt([a], [b], [0], mode="xyz")


def test_operand_checks():
    with pytest.raises(OperandError):
        L.and_([1 << 40], [0], type="b32")
    with pytest.raises(OperandError):
        L.and_([2, 0], [1, 0], type="pred")
