"""The executor fast paths of the f32 arithmetic, min / max / abs / neg, float setp and the
f32 <-> f16 / bf16 / s32 / u32 conversions (`base.semantics`; FAST_PATHS of
ptxsim.isa.floating / compare / convert) give the general functions' bits: differential tests on
every pair (triple) of special values, random bits of every exponent, exact ties and near-ties
of the sum, products near the subnormal boundary (the .ftz flush rule) and the fma midpoint case
the general path rounds by integers."""
import numpy as np
import pytest
from fast_path_kit import F32_SPECIALS, check_same, f32_near, f32_random, f32_scaled, pairs

from ptxsim.isa.base import semantics

RNG = np.random.default_rng(11212026)
N = 20000


def _binary_operands():
    a, b = pairs(F32_SPECIALS, 2)
    r1, r2 = f32_random(RNG, N), f32_random(RNG, N)
    t1 = f32_scaled(RNG, N, 1, 254)
    t2 = f32_near(RNG, t1, 0, 30)                    # ties / near-ties of the sum
    s1, s2 = f32_scaled(RNG, N, 0, 3), f32_scaled(RNG, N, 0, 3)     # subnormal / tiny sums
    m1 = f32_scaled(RNG, N, 40, 90)                                 # products near 2^-126
    m2 = f32_scaled(RNG, N, 40, 90)
    c1 = f32_scaled(RNG, N, 1, 254)
    cancel = c1 ^ np.uint32(0x80000000) ^ (RNG.integers(0, 4, N).astype(np.uint32))
    return (np.concatenate([a, r1, t1, s1, m1, c1]),
            np.concatenate([b, r2, t2, s2, m2, cancel]))


A, B = _binary_operands()


@pytest.mark.parametrize("opcode", ["add.f32", "add.rn.f32", "sub.f32", "sub.rn.f32",
                                    "mul.f32", "mul.rn.f32", "add.ftz.f32", "add.rn.ftz.f32",
                                    "sub.ftz.f32", "mul.ftz.f32", "mul.rn.ftz.f32"])
def test_f32_add_sub_mul_fast_path_is_bit_identical(opcode):
    check_same(opcode, A, B)


def _fma_operands():
    a, b, c = pairs(F32_SPECIALS[::2], 3)
    ra, rb = f32_random(RNG, N), f32_random(RNG, N)
    rc = f32_random(RNG, N)
    # products near the subnormal range plus addends of similar size (tininess after rounding)
    ta, tb = f32_scaled(RNG, N, 55, 75), f32_scaled(RNG, N, 55, 75)
    tc = f32_scaled(RNG, N, 0, 2)
    # 13-bit significands: exact products of up to 26 bits, many of them f32 midpoints, and
    # addends far below the product (b is in [1, 2), so the product's exponent is about a's)
    ma = (f32_scaled(RNG, N, 20, 230) & np.uint32(0xFFFFF800))
    mb = (f32_scaled(RNG, N, 127, 127) & np.uint32(0xFFFFF800))
    mc = f32_near(RNG, ma, 25, 60)
    return (np.concatenate([a, ra, ta, ma]), np.concatenate([b, rb, tb, mb]),
            np.concatenate([c, rc, tc, mc]))


FA, FB, FC = _fma_operands()


@pytest.mark.parametrize("opcode", ["fma.rn.f32", "fma.rn.ftz.f32", "mad.rn.f32",
                                    "mad.rn.ftz.f32"])
def test_f32_fma_fast_path_is_bit_identical(opcode):
    check_same(opcode, FA, FB, FC)


def test_fma_midpoint_with_residual_by_hand():
    # a = b = 1 + 2^-12: a*b = 1 + 2^-11 + 2^-24 is exactly halfway between the f32 neighbours
    # 1 + 2^-11 (0x3F801000) and 1 + 2^-11 + 2^-23 (0x3F801001). A tiny c decides the rounding;
    # the float64 sum alone equals the midpoint and would round to even (down).
    a = np.full(3, 0x3F800800, np.uint32)
    c = np.array([0x17800000, 0x97800000, 0], np.uint32)     # +2^-80, -2^-80, +0
    assert semantics("fma.rn.f32")(a, a, c).tolist() == [0x3F801001, 0x3F801000, 0x3F801000]


def test_ftz_flush_by_hand():
    # 2^-126 (1 - 2^-24) is flushed (tininess after rounding, H200), 2^-126 is not; a subnormal
    # operand is read as zero
    a = np.array([0x3F7FFFFF, 0x3F800000, 0x00000001], np.uint32)    # 1 - 2^-24, 1, 2^-149
    b = np.array([0x00800000, 0x00800000, 0x3F800000], np.uint32)    # 2^-126, 2^-126, 1
    assert semantics("mul.ftz.f32")(a, b).tolist() == [0, 0x00800000, 0]
    assert semantics("mul.f32")(a, b).tolist() == [0x00800000, 0x00800000, 1]


def test_nan_results_are_canonical_by_hand():
    a = np.array([0xFFC00001, 0x7F800000, 0x7F800001], np.uint32)    # -NaN, +Inf, sNaN
    b = np.array([0x3F800000, 0xFF800000, 0x3F800000], np.uint32)
    assert semantics("add.f32")(a, b).tolist() == [0x7FFFFFFF] * 3
    assert semantics("neg.f32")(a).tolist() == [0x7FFFFFFF, 0xFF800000, 0x7FFFFFFF]


@pytest.mark.parametrize("opcode", ["min.f32", "max.f32", "min.ftz.f32", "max.ftz.f32",
                                    "abs.f32", "neg.f32"])
def test_minmax_abs_neg_fast_path(opcode):
    if opcode[:3] in ("abs", "neg"):
        check_same(opcode, A)
    else:
        check_same(opcode, A, B)


FLOAT_CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
              "num", "nan")


@pytest.mark.parametrize("cmp", FLOAT_CMPS)
def test_float_setp_fast_path(cmp):
    c = RNG.random(A.size) < 0.5
    for t in ("f32", "ftz.f32"):
        check_same(f"setp.{cmp}.{t}", A, B)
        check_same(f"setp.{cmp}.and.{t}", A, B, c)
    a64 = (A.astype(np.uint64) << np.uint64(32)) | B
    b64 = np.concatenate([a64[1:], a64[:1]])
    b64[::3] = a64[::3]
    check_same(f"setp.{cmp}.f64", a64, b64)
    check_same(f"setp.{cmp}.xor.f64", a64, b64, c)


def test_unordered_compare_by_hand():
    nan, one = 0x7FC00000, 0x3F800000
    a = np.array([nan, one, one], np.uint32)
    b = np.array([one, one, 0x40000000], np.uint32)
    assert semantics("setp.ne.f32")(a, b)[0].tolist() == [False, False, True]
    assert semantics("setp.neu.f32")(a, b)[0].tolist() == [True, False, True]
    assert semantics("setp.equ.f32")(a, b)[0].tolist() == [True, True, False]
    assert semantics("setp.ltu.f32")(a, b)[0].tolist() == [True, False, True]


def _f16_bits():
    return np.concatenate([np.arange(1 << 16, dtype=np.uint16)])


@pytest.mark.parametrize("opcode,src", [
    ("cvt.rn.f16.f32", "f32"), ("cvt.rn.bf16.f32", "f32"), ("cvt.f32.f16", "f16"),
    ("cvt.f32.bf16", "f16"), ("cvt.rn.f32.s32", "f32"), ("cvt.rn.f32.u32", "f32"),
    ("cvt.rni.s32.f32", "f32"), ("cvt.rzi.s32.f32", "f32"), ("cvt.rmi.s32.f32", "f32"),
    ("cvt.rpi.s32.f32", "f32"), ("cvt.rni.u32.f32", "f32"), ("cvt.rzi.u32.f32", "f32"),
    ("cvt.rmi.u32.f32", "f32"), ("cvt.rpi.u32.f32", "f32")])
def test_cvt_fast_path_is_bit_identical(opcode, src):
    if src == "f16":
        check_same(opcode, _f16_bits())                     # all 65,536 inputs
    else:
        # f16 / bf16 ties and near-ties: few low mantissa bits around the kept ones
        ties = f32_scaled(RNG, N, 90, 160) & np.uint32(0xFFFFF000) | \
            (RNG.integers(0, 2, N).astype(np.uint32) << np.uint32(12)) | \
            RNG.integers(0, 2, N).astype(np.uint32)
        bties = f32_scaled(RNG, N, 0, 254) & np.uint32(0xFFFF8000) | \
            (RNG.integers(0, 4, N).astype(np.uint32))
        ints = np.arange(-2000, 2000).astype(np.int32).view(np.uint32)
        near_half = np.float32(np.arange(-300, 300) / 4).view(np.uint32)
        check_same(opcode, np.concatenate([F32_SPECIALS, f32_random(RNG, N), ties, bties, ints,
                                           near_half]))


@pytest.mark.parametrize("opcode", ["cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32"])
def test_cvt_x2_fast_path(opcode):
    check_same(opcode, A, B)


def test_cvt_by_hand():
    a = np.array([0x3F800000, 0x33000000, 0x33000001, 0x477FF000, 0x3F808000, 0x3F818000,
                  0x7FC00001], np.uint32)
    # 1.0; 2^-25 ties to 0; just above 2^-25 -> the smallest subnormal; 65504 + 16 ties to
    # even -> Inf
    assert semantics("cvt.rn.f16.f32")(a).tolist()[:4] == [0x3C00, 0, 1, 0x7C00]
    # 1 + 2^-8 ties to even 1.0 (0x3F80); 1 + 3 * 2^-8 ties up to 0x3F82; NaN canonical
    assert semantics("cvt.rn.bf16.f32")(a).tolist()[4:] == [0x3F80, 0x3F82, 0x7FFF]
    x = np.array([0xC0200000, 0x40200000, 0x7FC00000, 0x4F000000, 0xCF000001], np.uint32)
    # -2.5 -> -2 (even), 2.5 -> 2, NaN -> 0, 2^31 -> INT_MAX, below -2^31 -> INT_MIN
    assert semantics("cvt.rni.s32.f32")(x).tolist() == [0xFFFFFFFE, 2, 0, 0x7FFFFFFF,
                                                         0x80000000]


def test_float_guard_falls_back_for_other_dtypes():
    f = semantics("add.f32")
    assert f(np.array([0x3F800000], np.uint64), np.array([0x3F800000], np.uint64)).tolist() == \
        [0x40000000]
    assert f(0x3F800000, 0x3F800000).tolist() == [0x40000000]


def _half_operands(fmt, k):
    """k operand arrays of 16-bit patterns: every pair of 16 specials of the format, random
    bits, and for fma products near the midpoints (few-bit significands) with small addends."""
    if fmt == "f16":
        sp = np.array([0, 0x8000, 1, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF,
                       0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x1400], np.uint16)
    else:
        sp = np.array([0, 0x8000, 1, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x3F81, 0x7F7F,
                       0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0D00], np.uint16)
    grid = pairs(sp, k) if k == 2 else pairs(sp[::2], 3)
    n = 6000
    rnd = [RNG.integers(0, 1 << 16, n).astype(np.uint16) for _ in range(k)]
    few = [RNG.integers(0, 1 << 16, n).astype(np.uint16) & np.uint16(0xFFF8) for _ in range(k)]
    if k == 3:       # addends 8..20 binades below the product
        few[2] = few[0] - np.uint16((12 << (10 if fmt == "f16" else 7)))
    return [np.concatenate([g, r, f]) for g, r, f in zip(grid, rnd, few)]


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("instr", ["add", "sub", "mul", "fma"])
def test_half_and_packed_arith_fast_path(instr, fmt):
    k = 3 if instr == "fma" else 2
    ops = _half_operands(fmt, k)
    rn = "rn." if instr == "fma" or RNG.random() < 0.5 else ""
    check_same(f"{instr}.{rn}{fmt}", *ops)
    packed = [(x.astype(np.uint32) << np.uint32(16)) | np.roll(x, 7) for x in ops]
    check_same(f"{instr}.rn.{fmt}x2", *packed)


def test_half_arith_by_hand():
    # f16: 1 + 2^-11 (a tie) rounds to even 1.0; 65504 + 16 -> Inf. bf16: 1 + 2^-8 -> 1.0,
    # (1 + 2^-7) + 2^-8 -> 1 + 2^-6 (tie to even up)
    h = np.array([0x3C00, 0x7BFF], np.uint16), np.array([0x1000, 0x4C00], np.uint16)
    assert semantics("add.rn.f16")(*h).tolist() == [0x3C00, 0x7C00]
    a = np.array([0x3F80 << 16 | 0x3F81], np.uint32)
    b = np.array([0x3B80 << 16 | 0x3B80], np.uint32)
    assert semantics("add.rn.bf16x2")(a, b).tolist() == [0x3F80 << 16 | 0x3F82]
