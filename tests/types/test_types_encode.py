"""encode(): correct rounding against an exact-rational reference, and hand-derived edge cases."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ptxsim.errors import FormatError
from ptxsim.types import decode, encode, get_format

# ------------------------------------------------------------------ independent reference rounding
# Written from the definitions only: a format with P = mbits fraction bits and minimum normal
# exponent emin has the grid {n * 2^(max(e, emin) - P)}; rounding picks a neighbour by the mode.


def ref_round(x: float, ebits: int, mbits: int, bias: int, mode: str) -> Fraction:
    """x rounded to the (unbounded above) grid, as an exact Fraction with the sign of x."""
    fx = Fraction(x)
    if fx == 0:
        return Fraction(0)
    a = abs(fx)
    e = math.floor(math.log2(a))          # may be off by one near powers of two; fix exactly:
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = max(e, 1 - bias) - mbits
    scaled = a / Fraction(2) ** q
    n = math.floor(scaled)
    r = scaled - n
    neg = fx < 0
    if mode == "rn":
        up = r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1)
    elif mode == "rna":
        up = r >= Fraction(1, 2)
    elif mode == "rz":
        up = False
    elif mode == "rp":
        up = r > 0 and not neg
    else:  # rm
        up = r > 0 and neg
    v = (n + up) * Fraction(2) ** q
    return -v if neg else v


CASES = [("f16", "rn", False), ("f16", "rz", False), ("f16", "rm", False), ("f16", "rp", False),
         ("bf16", "rn", False), ("bf16", "rp", False), ("bf16", "rm", False),
         ("tf32", "rna", False), ("tf32", "rn", False), ("tf32", "rz", False),
         ("f32", "rn", False), ("f32", "rm", False),
         ("e4m3", "rn", True), ("e5m2", "rn", True), ("e2m3", "rn", True), ("e3m2", "rn", True),
         ("e2m1", "rn", True), ("ue4m3", "rn", True)]


def _expected(x, name, mode, sat):
    f = get_format(name)
    v = ref_round(x, f.ebits, f.mbits, f.bias, mode)
    mx = Fraction(f.max_finite)
    if abs(v) > mx:
        toward_zero = mode == "rz" or (mode == "rm" and v > 0) or (mode == "rp" and v < 0)
        if sat or toward_zero:
            return math.copysign(float(mx), x)
        return math.copysign(math.inf, x) if f.has_inf else math.nan
    return math.copysign(float(v), x) if v == 0 else float(v)


@pytest.mark.parametrize("name,mode,sat", CASES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_decode_encode_is_correctly_rounded(name, mode, sat, data):
    f = get_format(name)
    hi = 4 * f.max_finite
    x = data.draw(st.one_of(
        st.floats(-hi, hi, allow_nan=False),                                   # whole range
        st.floats(-64 * f.min_subnormal, 64 * f.min_subnormal, allow_nan=False),  # subnormals
        st.integers(-(1 << 12), 1 << 12).map(lambda k: k * f.min_subnormal / 2)))  # ties
    if not f.signed:
        x = abs(x)
    got = float(decode(encode(np.array([x]), name, mode, satfinite=sat), name)[0])
    want = _expected(x, name, mode, sat)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (x, got, want)


# ------------------------------------------------------------------------- hand-derived edge cases
def enc(x, name, mode="rn", sat=False, relu=False):
    return [int(c) for c in encode(np.array(x, dtype=np.float64), name, mode, sat, relu)]


def test_ties_to_even_and_away():
    # f16 around 1.0: ulp 2^-10. 1 + 2^-11 is a tie between 0x3C00 (even) and 0x3C01.
    assert enc([1 + 2 ** -11, 1 + 3 * 2 ** -11], "f16") == [0x3C00, 0x3C02]
    # tf32 ulp at 1.0 is 2^-10 too; rna takes the tie away from zero, rn to even
    assert enc([1 + 2 ** -11, -(1 + 2 ** -11)], "tf32", "rna") == [0x3F802000, 0xBF802000]
    assert enc([1 + 2 ** -11], "tf32", "rn") == [0x3F800000]
    # e2m1 grid 0, .5, 1, 1.5, 2, 3, 4, 6: 2.5 -> 2 (even: 0b100), 3.5 -> 4, 5 -> 4 (0b110), 0.25 -> 0
    assert enc([2.5, 3.5, 5.0, 0.25, 0.75], "e2m1", sat=True) == [0x4, 0x6, 0x6, 0x0, 0x2]


def test_no_double_rounding_through_float32():
    # 1 + 2^-11 + 2^-40: just above an f16 tie. Via float32 it becomes the tie and rounds to even.
    x = 1 + 2 ** -11 + 2 ** -40
    assert enc([x], "f16") == [0x3C01]
    assert int(np.float16(np.float32(x)).view(np.uint16)) == 0x3C00   # the double-rounding result


def test_overflow_per_mode():
    big = 70000.0  # > f16 MAX_NORM 65504 and past the rounding boundary 65520
    assert enc([big, -big], "f16", "rn") == [0x7C00, 0xFC00]
    assert enc([big, -big], "f16", "rz") == [0x7BFF, 0xFBFF]
    assert enc([big, -big], "f16", "rm") == [0x7BFF, 0xFC00]
    assert enc([big, -big], "f16", "rp") == [0x7C00, 0xFBFF]
    assert enc([big, -big, math.inf], "f16", "rn", sat=True) == [0x7BFF, 0xFBFF, 0x7BFF]
    assert enc([65519.0, 65520.0], "f16") == [0x7BFF, 0x7C00]        # 65520 is the tie to 2^16
    # e4m3: MAX_NORM 448; with satfinite 1e9 -> 0x7E; OCP (no satfinite) overflow is NaN
    assert enc([1e9, -1e9, 464.0, 480.0], "e4m3", sat=True) == [0x7E, 0xFE, 0x7E, 0x7E]
    assert enc([464.0, 480.0], "e4m3") == [0x7E, 0x7F]               # 464 ties to even 448
    assert enc([1e9, -math.inf], "e5m2") == [0x7C, 0xFC]
    assert enc([1e9, -math.inf], "e5m2", sat=True) == [0x7B, 0xFB]
    assert enc([100.0, -7.0, -math.inf], "e2m1", sat=True) == [0x7, 0xF, 0xF]


def test_nan_results():
    nan = math.nan
    assert enc([nan], "f16") == [0x7FFF] and enc([nan], "bf16", "rz", sat=True) == [0x7FFF]
    assert enc([nan], "e4m3", sat=True) == [0x7F] and enc([nan], "e5m2", sat=True) == [0x7F]
    assert enc([nan], "tf32", "rn") == [0x7FFFE000]
    # formats without NaN: .satfinite turns NaN into +MAX_NORM (9.7.9.21 .satfinite)
    assert enc([nan], "e2m1", sat=True) == [0x7] and enc([nan], "e2m3", sat=True) == [0x1F]
    assert enc([nan], "e3m2", sat=True, relu=True) == [0x1F]
    assert enc([nan], "f16", relu=True) == [0x7FFF]


def test_tf32_rna_keeps_f32_nan_payload():
    # measured (tests/types/test_types_hardware_cvt.py): low 13 bits cleared, 0x7F800001 -> +Inf
    x = np.array([0x7F800001, 0xFFC01234], dtype=np.uint32).view(np.float32)
    assert [int(c) for c in encode(x, "tf32", "rna")] == [0x7F800000, 0xFFC00000]
    assert [int(c) for c in encode(x, "tf32", "rna", satfinite=True)] == [0x7F7FE000, 0xFFBFE000]


def test_subnormals_and_signed_zero():
    assert enc([2 ** -24, 2 ** -25, 3 * 2 ** -25, -2 ** -26], "f16") == [0x0001, 0x0000, 0x0002, 0x8000]
    assert enc([2 ** -25], "f16", "rp") == [0x0001] and enc([-2 ** -25], "f16", "rm") == [0x8001]
    assert enc([2 ** -9, 2 ** -10, 2 ** -11], "e4m3", sat=True) == [0x01, 0x00, 0x00]
    assert enc([3 * 2 ** -11, 2 ** -11 + 2 ** -30], "e4m3", sat=True) == [0x01, 0x00]  # .75, .25+ ulp
    assert enc([-0.0, 0.0], "e2m3", sat=True) == [0x20, 0x00]
    assert enc([1e-300], "f32", "rp") == [0x00000001]          # float64 subnormal range


def test_relu():
    assert enc([-1.0, -0.0, -1e-30, 2.0], "f16", relu=True) == [0, 0, 0, 0x4000]
    assert enc([-3.0, 1.0], "e4m3", sat=True, relu=True) == [0x00, 0x38]
    assert enc([-3.0], "ue4m3", sat=True, relu=True) == [0x00]


def test_ue8m0_rz_rp():
    # 2^(b-127): rz = floor(log2|x|), rp = ceil(log2|x|); clamp to 2^-127 below; sign ignored
    assert enc([1.0, 1.5, 3.0, 2.0 ** -130, 0.0], "ue8m0", "rz") == [127, 127, 128, 0, 0]
    assert enc([1.0, 1.5, 3.0, 2.0 ** -130, -3.0], "ue8m0", "rp") == [127, 128, 129, 0, 129]
    assert enc([2.0 ** 127 * 1.5, math.inf, math.nan], "ue8m0", "rp") == [0xFF, 0xFF, 0xFF]
    assert enc([2.0 ** 127 * 1.5, math.inf, math.nan], "ue8m0", "rp", sat=True) == [0xFE, 0xFE, 0xFF]
    assert enc([2.0 ** 127 * 1.5], "ue8m0", "rz") == [0xFE]


def test_integers_round_and_clamp():
    assert enc([2.5, -2.5, 3.5, 1e10, -1e10, math.nan], "s8") == [2, 0xFE, 4, 0x7F, 0x80, 0]
    assert enc([2.5, -2.5], "s8", "rm") == [2, 0xFD] and enc([2.5, -1.0], "u8", "rp") == [3, 0]


def test_ocp_mode_matches_ml_dtypes_from_float32():
    # without .satfinite, e4m3/e5m2 follow the OCP conversion (ml_dtypes' rounding is single-step
    # from float32 inputs)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(20000) * rng.choice([1e-3, 1.0, 100.0, 1e4], 20000)).astype(np.float32)
    x = np.concatenate([x, np.float32([np.inf, -np.inf, 0.0, -0.0])])
    for name, t in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        ref = x.astype(t).view(np.uint8)
        got = encode(x, name)
        same = (got == ref) | (np.isnan(decode(got, name)) & np.isnan(decode(ref, name)))
        assert same.all(), x[~same][:5]


def test_output_dtypes_and_shapes():
    assert encode(np.zeros((2, 3)), "e2m1", satfinite=True).dtype == np.uint8
    assert encode(np.zeros((2, 3)), "bf16").shape == (2, 3)
    assert encode(0.0, "bf16").dtype == np.uint16 and encode([0.0], "tf32", "rna").dtype == np.uint32


@pytest.mark.parametrize("kw,msg", [
    (dict(fmt="e4m3", rounding="rz", satfinite=True), "no cvt to .e4m3 with .rz"),
    (dict(fmt="e2m1", rounding="rn"), "requires .satfinite"),
    (dict(fmt="f16", rounding="rm", satfinite=True), "takes no .satfinite"),
    (dict(fmt="f16", rounding="rp", relu=True), "takes no .relu"),
    (dict(fmt="tf32", rounding="rna", relu=True), "takes no .relu"),
    (dict(fmt="ue8m0", rounding="rn"), "no cvt to .ue8m0 with .rn"),
    (dict(fmt="f16", rounding="rq"), "unknown rounding"),
])
def test_illegal_combinations_raise(kw, msg):
    with pytest.raises(FormatError, match=msg):
        encode([1.0], **kw)


def test_bad_values_raise():
    with pytest.raises(FormatError, match="real numeric"):
        encode(np.array(["x"]), "f16")
    with pytest.raises(FormatError, match="unsigned"):
        encode([-2.0], "ue4m3", satfinite=True)


def ref_ue8m0(x: float, mode: str, sat: bool) -> int:
    """From the ue8m0 definition (value 2^(b-127), b in 0..254, 0xFF NaN) and cvt.{rz,rp}:
    b = floor / ceil of log2|x|, clamped at 0 below; overflow 0xFF, or 0xFE with .satfinite."""
    if math.isnan(x):
        return 0xFF
    if math.isinf(x):
        return 0xFE if sat else 0xFF
    a = Fraction(abs(x))
    if a == 0:
        return 0
    e = 0
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    if mode == "rp" and Fraction(2) ** e != a:
        e += 1
    b = max(e + 127, 0)
    if b > 0xFE:
        return 0xFE if sat else 0xFF
    return b


@pytest.mark.parametrize("mode", ["rz", "rp"])
@pytest.mark.parametrize("sat", [False, True])
@settings(max_examples=200, deadline=None)
@given(x=st.one_of(st.floats(allow_nan=True), st.floats(-1e-37, 1e-37),
                   st.integers(-140, 130).map(lambda k: 2.0 ** k)))
def test_ue8m0_matches_reference(mode, sat, x):
    assert int(encode(np.array([x]), "ue8m0", mode, satfinite=sat)[0]) == ref_ue8m0(x, mode, sat)


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, (1 << 32) - 1))
def test_float32_input_same_as_float64_for_non_nan(bits):
    x32 = np.array([bits], dtype=np.uint32).view(np.float32)
    if np.isnan(x32[0]):
        return
    for name, mode, sat in (("tf32", "rna", False), ("bf16", "rz", True), ("e5m2", "rn", True)):
        assert encode(x32, name, mode, sat)[0] == encode(x32.astype(np.float64), name, mode, sat)[0]


def _legal_float_requests():
    from ptxsim.types import CVT_RULES
    for (name, mode), rule in CVT_RULES.items():
        if get_format(name).kind != "float" or name == "ue8m0":
            continue
        sats = {"optional": (False, True), "never": (False,), "required": (True,)}[rule.satfinite]
        for sat in sats:
            yield name, mode, sat


@pytest.mark.parametrize("name,mode,sat", list(_legal_float_requests()))
def test_edges_per_format_and_mode(name, mode, sat):
    """Zero, subnormal ties, MAX_NORM and just past it, overflow and Inf, both signs, for every
    legal (format, rounding, .satfinite) row, against the exact reference."""
    f = get_format(name)
    mx, tiny = f.max_finite, f.min_subnormal
    ulp_max = 2.0 ** (math.floor(math.log2(mx)) - f.mbits)        # spacing just below MAX_NORM
    mags = [0.0, tiny / 2, tiny, 1.5 * tiny, 2.5 * tiny, tiny * 0.75, 1.0, mx,
            mx + ulp_max / 2, mx + ulp_max / 4, 2 * mx, math.inf]
    xs = [s * m for m in mags for s in ((1.0,) if not f.signed else (1.0, -1.0))]
    got = decode(encode(np.array(xs), name, mode, satfinite=sat), name)
    for x, g in zip(xs, got):
        if math.isinf(x):
            want = math.copysign(mx, x) if sat else (x if f.has_inf else math.nan)
        else:
            want = _expected(x, name, mode, sat)
        assert (math.isnan(want) and math.isnan(g)) or (
            g == want and math.copysign(1, g) == math.copysign(1, want)), (x, g, want)
