"""Hand-derived expectations: every expected value below is worked out in the comments from the
rules of FACTS.md section 1 (and, where MMA-Sim models the form, cross-checked against it too).
Element bits come from ml_dtypes (an independent encoder) or are written out by hand."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import MmaTypeError, OperandError
from ptxsim.numerics import backend, mma


@pytest.fixture(autouse=True, params=backend.available())
def numerics_backend(request):
    """Every test here runs under each numerics backend this installation has: "numpy"
    (fdpa.py, the specification) and, where built, "c" (the compiled _fdpa.c, the default);
    otherwise the numpy path would go untested here."""
    with backend.use(request.param):
        yield request.param

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "f32": np.float32}
UINT = {2: np.uint16, 1: np.uint8, 4: np.uint32}
# e2m1 code points (OCP MX spec): bits -> value
E2M1 = {0.0: 0, 0.5: 1, 1.0: 2, 1.5: 3, 2.0: 4, 3.0: 5, 4.0: 6, 6.0: 7}


def enc(values, fmt):
    """Exact values -> raw bits (ml_dtypes as the independent encoder; e2m1 by its code table)."""
    v = np.asarray(values, dtype=np.float64)
    if fmt == "e2m1":
        return np.vectorize(lambda x: E2M1[abs(x)] | (8 if np.signbit(x) else 0))(v).astype(
            np.uint8)
    if fmt == "ue8m0":                               # 2^(b-127)
        return (np.log2(v).astype(np.int64) + 127).astype(np.uint8)
    x = v.astype(NP[fmt])
    assert (x.astype(np.float64) == v).all() or np.isnan(v).any(), "value not exact in format"
    return x.view(UINT[x.dtype.itemsize])


def f32bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


def run_pairs(pairs, fmt, *, arch="sm_100", kind="f16", dtype="f32", c=0.0, **kw):
    """One output: sum of a_k*b_k for the given (a, b) value pairs, plus c."""
    a = enc([[p[0] for p in pairs]], fmt)
    b = enc([[p[1]] for p in pairs], fmt)
    cb = enc([[c]], "f16") if dtype == "f16" else f32bits([[c]])
    return int(mma(a, b, cb, arch=arch, kind=kind, atype=fmt, btype=fmt, ctype=dtype,
                   dtype=dtype, **kw)[0, 0])


# ---- basic arithmetic ---------------------------------------------------------------------

def test_exact_small_dot_product():
    # 1*1 + 2*3 + 0.5*(-4) + c=0.25 = 5.25 = 0x40A80000
    assert run_pairs([(1, 1), (2, 3), (0.5, -4)], "f16", c=0.25) == 0x40A80000


def test_truncation_to_F_bits_below_largest_exponent():
    # sm_100 f16: F = 25, largest exponent 0 (the product 1*1) -> grid 2^-25.
    # c = 2^-23 and 3*2^-25 (= 3*2^-13 * 2^-12) are on the grid: 1 + 2^-23 + 3*2^-25 ->
    # RZ f32 (ulp 2^-23 at 1) -> 1 + 2^-23 = 0x3F800001.
    assert run_pairs([(1, 1), (3 * 2**-13, 2**-12)], "f16", c=2**-23) == 0x3F800001
    # -5*2^-26 = -(2^-24 + 2^-26) = -5*2^-13 * 2^-13 is truncated toward zero on the grid to
    # -2^-24: 1 - 2^-24 is an f32 (ulp below 1 is 2^-24) -> 0x3F7FFFFF.  The exact sum
    # 1 - 2^-24 - 2^-26 would round (RZ) to 1 - 2^-23 = 0x3F7FFFFE.
    assert run_pairs([(1, 1), (-5 * 2**-13, 2**-13)], "f16") == 0x3F7FFFFF


def test_f32_output_is_round_toward_zero_and_f16_output_round_to_nearest_even():
    # 1 + 3*2^-24 (products 1*1 and 3*2^-12 * 2^-12; all on the F=25 grid):
    # f32 RZ -> 1 + 2^-23 (0x3F800001); f32 RNE would give 1 + 2^-22.
    assert run_pairs([(1, 1), (3 * 2**-12, 2**-12)], "f16") == 0x3F800001
    # f16 D, RNE: 1 + 2^-11 is a tie between 1 and 1+2^-10 -> even -> 1.0 (0x3C00);
    # 1 + 3*2^-12 is above the tie -> 1 + 2^-10 (0x3C01)
    assert run_pairs([(1, 1), (2**-6, 2**-5)], "f16", dtype="f16") == 0x3C00
    assert run_pairs([(1, 1), (3 * 2**-6, 2**-6)], "f16", dtype="f16") == 0x3C01


def test_blocks_chain_in_order_along_K():
    # sm_100 f16: 16 terms per block.  Block 1: 1*1 + 15 zeros; block 2: 2^-24*1 + ...
    # Block 1 -> 1.0 (f32).  Block 2: c = 1.0 and 2^-24 (on grid 2^-25) -> 1 + 2^-24 -> RZ -> 1.0.
    # Block 3 the same -> 1.0.  A single fused 48-term sum would give 1 + 2^-23 (0x3F800001).
    pairs = [(1, 1)] + [(0, 0)] * 15 + [(2**-12, 2**-12)] + [(0, 0)] * 15 + \
        [(2**-12, 2**-12)] + [(0, 0)] * 15
    assert run_pairs(pairs, "f16") == 0x3F800000


def test_subnormal_inputs_are_kept():
    # f16 subnormals 2^-24 * 2^-24 = 2^-48, sum of two = 2^-47 -> f32 0x28000000
    assert run_pairs([(2**-24, 2**-24), (2**-24, 2**-24)], "f16") == 0x28000000


def test_zero_result_is_positive_zero():
    # (-1)*1 + 1*1 = 0 and (-0)*(1) + c=-0: both give +0 (0x00000000)
    assert run_pairs([(-1, 1), (1, 1)], "f16") == 0
    assert run_pairs([(-0.0, 1)], "f16", c=-0.0) == 0


# ---- NaN / Inf rules (FACTS section 1 step 5) ---------------------------------------------

@pytest.mark.parametrize("pairs,c,want", [
    ([(np.nan, 1)], 0.0, 0x7FFFFFFF),                 # NaN input -> canonical NaN
    ([(np.inf, 1)], 0.0, 0x7F800000),                 # +Inf
    ([(np.inf, -1)], 1.0, 0xFF800000),                # -Inf, c finite
    ([(np.inf, 1), (-np.inf, 1)], 0.0, 0x7FFFFFFF),   # +Inf + -Inf -> NaN
    ([(np.inf, 0)], 0.0, 0x7FFFFFFF),                 # Inf * 0 -> NaN
    ([(1, 1)], np.inf, 0x7F800000),                   # Inf in C
    ([(np.inf, 1)], -np.inf, 0x7FFFFFFF),             # +Inf product with -Inf C
])
def test_special_values(pairs, c, want):
    assert run_pairs(pairs, "f16", c=c) == want


def test_f16_output_nan_is_canonical():
    assert run_pairs([(np.nan, 1)], "f16", dtype="f16") == 0x7FFF


def test_overflow_gives_infinity():
    # bf16 2^127 * 2^127 = 2^254: beyond f32 -> +Inf (MMA-Sim model)
    assert run_pairs([(2.0**127, 2.0**127)], "bf16") == 0x7F800000


# ---- the zero-term exponent (e_zero), pinned by values at rounding boundaries ---------------
# A zero term (here C = 0) counts with exponent e_zero, so when every product is smaller the
# grid is 2^g, g = e_zero - F.  Design A: 2^-148 - 2^(g+1) + 2^g + 2^g is exactly 2^-148 on grid
# g (D = 0x00000002, the subnormal 2*2^-149), but on grid g+1 both 2^g terms vanish and RZ gives
# 0x00000001.  Design B: 2^-148 - 2^(g-1): on grid g the negative term truncates to 0 (D = 2),
# on grid g-1 it is kept and RZ gives 1.  Together they pin e_zero exactly.

def _bf16_terms(vals):
    """bf16 (a, b) pairs whose products are the given powers of two (with sign)."""
    out = []
    for s, e in vals:
        ea = e // 2
        out.append((s * 2.0**ea, 2.0**(e - ea)))
    return out


@pytest.mark.parametrize("arch,e_zero,F", [("sm_100", -133, 25), ("sm_90", -133, 25),
                                           ("sm_80", -132, 24)])
def test_zero_term_exponent_f32(arch, e_zero, F):
    g = e_zero - F
    A = _bf16_terms([(1, -148), (-1, g + 1), (1, g), (1, g)])
    B = _bf16_terms([(1, -148), (-1, g - 1)])
    assert run_pairs(A, "bf16", arch=arch) == 0x2
    assert run_pairs(B, "bf16", arch=arch) == 0x2
    # and the products alone (no zero term anywhere: C nonzero but tiny would add one, so use
    # design A without C... C is always a term; a zero C is a zero term) -- covered above.


@pytest.mark.parametrize("arch,e_zero,F", [("sm_100", -21, 25), ("sm_90", -21, 25),
                                           ("sm_80", -20, 24)])
def test_zero_term_exponent_f16_output(arch, e_zero, F):
    # f16 D: g = e_zero - F (sm_100: -46).  f16 D rounds RNE with subnormal grid 2^-24, and 2^-25
    # is the tie between 0 and 2^-24 (-> even, 0).  A: 2^-25 + 2^g (kept on grid g) -> above
    # the tie -> 0x0001; on grid g+1 it would be the tie -> 0x0000.
    # B: 2^-25 + 2^(g-1) -> truncated on grid g -> tie -> 0x0000; on grid g-1 -> 0x0001.
    g = e_zero - F
    half = (2**-12, 2**-13)
    assert run_pairs([half, (2.0**(g // 2), 2.0**(g - g // 2))], "f16", arch=arch,
                     dtype="f16") == 0x0001
    assert run_pairs([half, (2.0**((g - 1) // 2), 2.0**(g - 1 - (g - 1) // 2))], "f16",
                     arch=arch, dtype="f16") == 0x0000


def test_zero_term_exponent_mxf8f6f4():
    # kind::mxf8f6f4: e_zero = -133, F = 25, g = -158.  One 32-element block, e4m3 elements,
    # ue8m0 scales 2^-79 (A) and 2^-79 (B): every product carries 2^-158 = 2^g.
    # A: 32*32*2^g = 2^-148, (-1*4)*2^g = -2^(g+2)... use design A scaled: terms 1024, -2, 1, 1
    # (times 2^g): on grid g exact -> 2^-148 -> 0x2; on grid g+1 the two 1s vanish -> 0x1.
    # B: terms 1024 and -0.5 (a = -0.5, b = 1): on grid g -0.5 truncates to 0 -> 0x2.
    def run(pairs):
        K = 32
        a = np.zeros((1, K)); b = np.zeros((K, 1))
        for k, (x, y) in enumerate(pairs):
            a[0, k], b[k, 0] = x, y
        sa = enc([[2.0**-79]], "ue8m0"); sb = enc([[2.0**-79]], "ue8m0")
        return int(mma(enc(a, "e4m3"), enc(b, "e4m3"), f32bits([[0.0]]), arch="sm_100",
                       kind="mxf8f6f4", atype="e4m3", btype="e4m3", ctype="f32", dtype="f32",
                       scale_a=sa, scale_b=sb, scale_type="ue8m0", block=32)[0, 0])
    assert run([(32, 32), (-1, 2), (1, 1), (1, 1)]) == 0x2
    assert run([(32, 32), (-0.5, 1)]) == 0x2


def test_zero_term_exponent_grouped_mxf4nvf4():
    # kind::mxf4nvf4 block16 ue8m0: groups of 16 products, e_zero = -139, F = 35, g = -174.
    # Group terms (group sum * SF_A * SF_B); C = 0 supplies the zero term:
    #   G0: 1*1 * 2^-74 * 2^-74 = 2^-148; G1: (-0.5*0.5) * 2^-86 * 2^-85 = -2^-173 = -2^(g+1);
    #   G2, G3: (0.5*0.5) * 2^-86 * 2^-86 = 2^-174 = 2^g.
    # Grid g: sum = 2^-148 -> 0x2; grid g+1: G2, G3 vanish -> 0x1.
    # Second design: G1 = -(0.5*0.5)*2^-86*2^-87 = -2^-175 = -2^(g-1), G2 = G3 = 0: on grid g
    # it truncates to 0 -> 0x2; on grid g-1 it is kept -> 2^-148 - 2^-175 -> RZ -> 0x1.
    def run(groups):
        a = np.zeros((1, 64)); b = np.zeros((64, 1)); sa = []; sb = []
        for g, (x, y, ea, eb) in enumerate(groups):
            a[0, 16 * g], b[16 * g, 0] = x, y
            sa.append(2.0**ea); sb.append(2.0**eb)
        return int(mma(enc(a, "e2m1"), enc(b, "e2m1"), f32bits([[0.0]]), arch="sm_100",
                       kind="mxf4nvf4", atype="e2m1", btype="e2m1", ctype="f32", dtype="f32",
                       scale_a=enc([sa], "ue8m0"), scale_b=enc([[s] for s in sb], "ue8m0"),
                       scale_type="ue8m0", block=16)[0, 0])
    assert run([(1, 1, -74, -74), (-0.5, 0.5, -86, -85), (0.5, 0.5, -86, -86),
                (0.5, 0.5, -86, -86)]) == 0x2
    assert run([(1, 1, -74, -74), (-0.5, 0.5, -86, -87), (0, 0, 0, 0), (0, 0, 0, 0)]) == 0x2


def test_grouped_group_sum_is_exact_before_scaling():
    # mxf4: inside a group the 16 products are summed exactly: 6*6 (=36) + 15 * (0.5*0.5) = 39.75
    # with scales 1: 39.75 = 0x421F0000.  (A fused truncating sum would be the same here; the
    # distinguishing property is checked against MMA-Sim in test_vs_mmasim.)
    a = np.array([[6.0] + [0.5] * 15 + [0.0] * 48]); b = a.T.copy()
    d = mma(enc(a, "e2m1"), enc(b, "e2m1"), f32bits([[0.0]]), arch="sm_100", kind="mxf4",
            atype="e2m1", btype="e2m1", ctype="f32", dtype="f32",
            scale_a=enc([[1.0, 1.0]], "ue8m0"), scale_b=enc([[1.0], [1.0]], "ue8m0"),
            scale_type="ue8m0", block=32)
    assert int(d[0, 0]) == 0x421F0000


def test_nan_scale_makes_the_result_nan():
    a = enc([[1.0] * 32], "e4m3"); b = enc([[1.0]] * 32, "e4m3")
    d = mma(a, b, f32bits([[0.0]]), arch="sm_100", kind="mxf8f6f4", atype="e4m3",
            btype="e4m3", ctype="f32", dtype="f32", scale_a=np.array([[0xFF]], np.uint8),
            scale_b=np.array([[127]], np.uint8), scale_type="ue8m0", block=32)
    assert int(d[0, 0]) == 0x7FFFFFFF


def test_sm90_fp8_keeps_13_fraction_bits():
    # sm_90 fp8 f32 D: RZ to 13 fraction bits.  1*1 + 2^-7*2^-6 = 1 + 2^-13 -> kept (0x3F800400);
    # 1 + 2^-14 (product 2^-7 * 2^-7) -> dropped -> 1.0
    assert run_pairs([(1, 1), (2**-7, 2**-6)], "e4m3", arch="sm_90", kind="f8f6f4") == 0x3F800400
    assert run_pairs([(1, 1), (2**-7, 2**-7)], "e4m3", arch="sm_90", kind="f8f6f4") == 0x3F800000


# ---- integer kinds ------------------------------------------------------------------------

def test_integer_wrap_and_satfinite():
    a = np.array([[127, 127]], np.uint8)        # s8 127, 127
    b = np.array([[127], [127]], np.uint8)
    c = np.array([[0x7FFFFFFF]], np.uint32)     # INT32_MAX
    # exact: 2*127*127 + 2^31-1 = 2^31 + 32257 -> wraps to -2^31 + 32257 = 0x80007E01
    kw = dict(arch="sm_100", kind="i8", atype="s8", btype="s8", ctype="s32", dtype="s32")
    assert int(mma(a, b, c, **kw)[0, 0]) == 0x80007E01
    assert int(mma(a, b, c, satfinite=True, **kw)[0, 0]) == 0x7FFFFFFF
    # s8 -128 * u8 255 = -32640 = 0xFFFF8080
    assert int(mma(np.array([[0x80]], np.uint8), np.array([[255]], np.uint8),
                   np.zeros((1, 1), np.uint32), arch="sm_100", kind="i8", atype="s8",
                   btype="u8", ctype="s32", dtype="s32")[0, 0]) == 0xFFFF8080
    # s4: 0xF = -1, u4 0xF = 15 -> -15 + c(-1) = -16 = 0xFFFFFFF0 (int32 c accepted)
    assert int(mma(np.array([[0xF]], np.uint8), np.array([[0xF]], np.uint8),
                   np.array([[-1]], np.int32), arch="sm_80", kind="i8", atype="s4",
                   btype="u4", ctype="s32", dtype="s32")[0, 0]) == 0xFFFFFFF0


def test_integer_against_exact_int64_reference():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (32, 64)).astype(np.uint8)
    b = rng.integers(0, 256, (64, 16)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (32, 16)).astype(np.int64)
    ref = a.view(np.int8).astype(np.int64) @ b.astype(np.int64) + c        # s8 x u8
    d = mma(a, b, c.astype(np.int32), arch="sm_100", kind="i8", atype="s8", btype="u8",
            ctype="s32", dtype="s32")
    assert (d == (ref & 0xFFFFFFFF).astype(np.uint32)).all()
    dsat = mma(a, b, c.astype(np.int32), arch="sm_100", kind="i8", atype="s8", btype="u8",
               ctype="s32", dtype="s32", satfinite=True)
    assert (dsat.view(np.int32) == np.clip(ref, -2**31, 2**31 - 1)).all()


# ---- bad input ----------------------------------------------------------------------------

F16KW = dict(arch="sm_100", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")


@pytest.mark.parametrize("kw", [
    dict(F16KW, atype="bf16"),                                   # A/B types differ
    dict(F16KW, atype="bf16", btype="bf16", ctype="f16", dtype="f16"),  # f16 D needs f16 A/B
    dict(F16KW, kind="tf32"),                                    # f16 under kind::tf32
    dict(F16KW, arch="sm_80", kind="f8f6f4", atype="e4m3", btype="e4m3"),  # no fp8 on sm_80
    dict(F16KW, arch="sm_90", kind="f8f6f4", atype="e2m1", btype="e2m1"),  # no fp4 on sm_90
    dict(F16KW, kind="mxf4", atype="e2m1", btype="e2m1", scale_type="ue4m3", block=16),
    dict(F16KW, kind="mxf4nvf4", atype="e2m1", btype="e2m1", scale_type="ue4m3", block=32),
    dict(F16KW, kind="mxf8f6f4", atype="e4m3", btype="e4m3", ctype="f16", dtype="f16",
         scale_type="ue8m0", block=32),
    dict(F16KW, scale_type="ue8m0", block=32),                   # scales on a dense kind
    dict(F16KW, arch="sm_75"),
    dict(F16KW, kind="f64"),
])
def test_illegal_type_combinations_raise(kw):
    z = np.zeros((2, 32), np.uint8)
    with pytest.raises(MmaTypeError):
        mma(z, z.T.copy(), np.zeros((2, 2), np.uint32), **kw)


def test_shape_and_bits_errors():
    a = np.zeros((4, 16), np.uint16); b = np.zeros((16, 8), np.uint16)
    c = np.zeros((4, 8), np.uint32)
    with pytest.raises(OperandError, match="K dimensions"):
        mma(a, b[:8], c, **F16KW)
    with pytest.raises(OperandError, match="expected 4x8"):
        mma(a, b, c[:2], **F16KW)
    with pytest.raises(OperandError, match="bits above"):
        mma(np.full((1, 32), 0x10, np.uint8), np.zeros((32, 1), np.uint8),
            np.zeros((1, 1), np.uint32), arch="sm_100", kind="f8f6f4", atype="e2m1",
            btype="e2m1", ctype="f32", dtype="f32")
    with pytest.raises(OperandError, match="raw bits"):
        mma(a.astype(np.float32), b, c, **F16KW)


def test_scale_shape_errors():
    a = np.zeros((4, 64), np.uint8); b = np.zeros((64, 8), np.uint8)
    c = np.zeros((4, 8), np.uint32)
    kw = dict(arch="sm_100", kind="mxf4nvf4", atype="e2m1", btype="e2m1", ctype="f32",
              dtype="f32", scale_type="ue4m3", block=16)
    ok_a, ok_b = np.zeros((4, 4), np.uint8), np.zeros((4, 8), np.uint8)
    assert mma(a, b, c, scale_a=ok_a, scale_b=ok_b, **kw).shape == (4, 8)
    with pytest.raises(OperandError, match="scale_a must be 4x4"):
        mma(a, b, c, scale_a=ok_a[:, :2], scale_b=ok_b, **kw)
    with pytest.raises(OperandError, match="scale_b must be 4x8"):
        mma(a, b, c, scale_a=ok_a, scale_b=None, **kw)
    with pytest.raises(OperandError, match="multiple of the scale block"):
        mma(a[:, :40], b[:40], c, scale_a=ok_a, scale_b=ok_b, **kw)


def test_mixed_c_and_d_types_warp_level():
    # warp-level mma .f32.f16.f16.f16 (C f16, D f32) and .f16.f16.f16.f32.  C is decoded in its
    # own format; rounding and e_zero follow D.  1.5 (C) + 1*2^-11 -> 1.5 + 2^-11:
    # D f32 (RZ, exact) = 0x3FC01000; D f16 (RNE, ulp 2^-10 at 1.5): a tie -> even -> 1.5 = 0x3E00
    a, b = enc([[1.0]], "f16"), enc([[2**-11]], "f16")
    kw = dict(arch="sm_80", kind="f16", atype="f16", btype="f16")
    assert int(mma(a, b, enc([[1.5]], "f16"), ctype="f16", dtype="f32", **kw)[0, 0]) == 0x3FC01000
    d16 = mma(a, b, f32bits([[1.5]]), ctype="f32", dtype="f16", **kw)
    assert d16.dtype == np.uint16 and int(d16[0, 0]) == 0x3E00
    with pytest.raises(MmaTypeError):         # bf16 forms are .f32 C only
        mma(enc([[1.0]], "bf16"), enc([[1.0]], "bf16"), enc([[1.0]], "f16"), arch="sm_80",
            kind="f16", atype="bf16", btype="bf16", ctype="f16", dtype="f32")
