"""f32 MUFU .approx (rcp, rsqrt, sqrt, ex2, lg2; .ftz and not) as an H200 (sm_90) computes them.

Sources of the expected values (none from ptxsim):
- tests/data/hardware/mufu/mufu_f32_sm90.npz: recorded H200 bits (hardware/mufu/capture.sh, 2026-11-21, driver
  580.159.04): 2,048 structured inputs (every sign and exponent with fraction 0, 1, 0x400000,
  0x7FFFFF) and 63,488 random 32-bit patterns, each through all ten instructions;
- the PTX ISA error bounds (floating.APPROX_ERROR_BOUNDS) for whole binades;
- hand derivations from the SASS ptxas 13.0 emits for the non-.ftz forms (hardware/mufu/results/
  mufu_sass.txt), worked in the comments.
The model itself was checked on the H200 against all 2^32 inputs of each form (hardware/mufu/verify.sh,
hardware/mufu/results/verify_*.txt: 0 mismatches)."""
import os

import numpy as np
import pytest

from ptxsim.isa import floating as F

FORMS = {
    "rcp.approx.ftz.f32": lambda u: F.rcp(u, type="f32", approx=True, ftz=True),
    "rcp.approx.f32": lambda u: F.rcp(u, type="f32", approx=True),
    "rsqrt.approx.ftz.f32": lambda u: F.rsqrt(u, ftz=True),
    "rsqrt.approx.f32": lambda u: F.rsqrt(u),
    "sqrt.approx.ftz.f32": lambda u: F.sqrt(u, type="f32", approx=True, ftz=True),
    "sqrt.approx.f32": lambda u: F.sqrt(u, type="f32", approx=True),
    "ex2.approx.ftz.f32": lambda u: F.ex2(u, ftz=True),
    "ex2.approx.f32": lambda u: F.ex2(u),
    "lg2.approx.ftz.f32": lambda u: F.lg2(u, ftz=True),
    "lg2.approx.f32": lambda u: F.lg2(u),
}


def _capture():
    return np.load(os.path.join(os.path.dirname(__file__), "..", "data", "hardware", "mufu", "mufu_f32_sm90.npz"))


@pytest.mark.parametrize("k,op", list(enumerate(FORMS)))
def test_replays_recorded_sm90_bits_exactly(k, op):
    d = _capture()
    assert str(d["ops"][k]) == op
    x, hw = d["x"], d["y"][k]
    got = FORMS[op](x)
    assert got.dtype == np.uint32 and got.shape == x.shape
    bad = np.nonzero(got != hw)[0]
    assert bad.size == 0, (op, bad.size, [(hex(x[i]), hex(hw[i]), hex(got[i])) for i in bad[:5]])


def test_recorded_inputs_cover_every_sign_and_exponent():
    x = _capture()["x"]
    counts = np.bincount(x >> 23, minlength=512)
    assert counts.min() >= 4 + 64                 # 4 structured + >= 64 random per bin


def _f(u):
    return np.asarray(u, np.uint32).view(np.float32).astype(np.float64)


def _binade(start_bits, n, stride=16):
    return (np.uint32(start_bits) + np.arange(0, n, stride, dtype=np.uint32)).astype(np.uint32)


def _ulp(v):
    return 2.0 ** (np.floor(np.log2(np.abs(v))) - 23)


def test_within_the_ptx_error_bounds_over_whole_binades():
    """PTX ISA bounds (APPROX_ERROR_BOUNDS): rcp 1 ulp, sqrt 2^-23 and rsqrt 2^-22.9 relative,
    ex2 2^-22.5 relative, lg2 2^-22.6 absolute for the mantissa's log (plus the truncation of the
    result, one ulp of it). Every 16th input of [1, 2), [2, 4) and of a far binade."""
    for lo in (0x3F800000, 0x40000000, 0x5F000000, 0x20800000):
        u = _binade(lo, 1 << 23)
        x = _f(u)
        r = _f(F.rcp(u, type="f32", approx=True))
        assert np.all(np.abs(r - 1 / x) < _ulp(1 / x))
        s = _f(F.sqrt(u, type="f32", approx=True))
        assert np.all(np.abs(s / np.sqrt(x) - 1) <= 2.0 ** -23)
        q = _f(F.rsqrt(u))
        assert np.all(np.abs(q * np.sqrt(x) - 1) <= 2.0 ** -22.9)
    for lo in (0x3F800000, 0x3F000000, 0xBF000000, 0xBF800000, 0x42000000):  # [-2,2), [32,64)
        u = _binade(lo, 1 << 23)
        e = _f(F.ex2(u))
        assert np.all(np.abs(e / np.exp2(_f(u)) - 1) <= 2.0 ** -22.5)
    for lo in (0x3F000000, 0x3F800000, 0x40000000, 0x3E000000):               # lg2 of [1/8, 4)
        u = _binade(lo, 1 << 23)
        g = _f(F.lg2(u))
        want = np.log2(_f(u))
        ulp = np.where(g == 0, 0, 2.0 ** (np.floor(np.log2(np.abs(np.where(g == 0, 1, g)))) - 23))
        assert np.all(np.abs(g - want) <= 2.0 ** -22.6 + ulp)


def test_special_values_of_the_ptx_tables():
    # PTX ISA 9.7.3: rcp(+-0) = +-Inf, rcp(+-Inf) = +-0; sqrt(-0) = -0, sqrt(<0) = NaN;
    # rsqrt(+-0) = +-Inf, rsqrt(+Inf) = +0; ex2(-Inf) = +0, ex2(+Inf) = +Inf;
    # lg2(+-0) = -Inf, lg2(<0) = NaN, lg2(+Inf) = +Inf. NaN results are canonical 0x7FFFFFFF.
    cases = {
        "rcp": ([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001],
                [0x7F800000, 0xFF800000, 0, 0x80000000, 0x7FFFFFFF]),
        "sqrt": ([0, 0x80000000, 0xBF800000, 0x7F800000, 0xFF800000],
                 [0, 0x80000000, 0x7FFFFFFF, 0x7F800000, 0x7FFFFFFF]),
        "rsqrt": ([0, 0x80000000, 0x7F800000, 0xBF800000],
                  [0x7F800000, 0xFF800000, 0, 0x7FFFFFFF]),
        "ex2": ([0xFF800000, 0x7F800000, 0xFFC00000], [0, 0x7F800000, 0x7FFFFFFF]),
        "lg2": ([0, 0x80000000, 0xBF800000, 0x7F800000, 0xFF800000],
                [0xFF800000, 0xFF800000, 0x7FFFFFFF, 0x7F800000, 0x7FFFFFFF]),
    }
    for name, (a, want) in cases.items():
        for ftz in (False, True):
            fn = {"rcp": lambda u: F.rcp(u, type="f32", approx=True, ftz=ftz),
                  "sqrt": lambda u: F.sqrt(u, type="f32", approx=True, ftz=ftz),
                  "rsqrt": lambda u: F.rsqrt(u, ftz=ftz), "ex2": lambda u: F.ex2(u, ftz=ftz),
                  "lg2": lambda u: F.lg2(u, ftz=ftz)}[name]
            assert [hex(v) for v in fn(np.array(a, np.uint32))] == [hex(v) for v in want], name


def test_exact_points():
    # 1/1 = 1, sqrt(4) = 2, rsqrt(4) = 0.5, 2^-3 = 0.125 (integer exponents are exact), lg2(8) = 3
    assert F.rcp([0x3F800000], type="f32", approx=True)[0] == 0x3F800000
    assert F.sqrt([0x40800000], type="f32", approx=True)[0] == 0x40000000
    assert F.rsqrt([0x40800000])[0] == 0x3F000000
    assert F.ex2([0xC0400000])[0] == 0x3E000000
    assert F.lg2([0x41000000])[0] == 0x40400000


def test_non_ftz_subnormal_paths_derived_from_the_sass():
    """Worked from hardware/mufu/results/mufu_sass.txt (ptxas 13.0, sm_90a) and the recorded fact that the
    MUFU maps 1.0 to 1.0 (rcp, sqrt, rsqrt) and integers n to exactly 2^n (ex2)."""
    sub127, sub148, sub149 = 0x00400000, 0x00000002, 0x00000001     # 2^-127, 2^-148, 2^-149
    # rcp: |a| < 2^-126 -> MUFU.RCP(a * 2^24) * 2^24 = 2^103 * 2^24 = 2^127; .ftz: 1/0 = +Inf
    assert F.rcp([sub127], type="f32", approx=True)[0] == 0x7F000000
    assert F.rcp([sub127], type="f32", approx=True, ftz=True)[0] == 0x7F800000
    # 2^-149: 2^125 * 2^24 overflows to +Inf in the FMUL
    assert F.rcp([sub149], type="f32", approx=True)[0] == 0x7F800000
    # |a| > 2^126 -> MUFU.RCP(a / 4) / 4: 1/2^127 = 2^-127 kept subnormal; .ftz flushes it
    assert F.rcp([0x7F000000], type="f32", approx=True)[0] == sub127
    assert F.rcp([0xFF000000], type="f32", approx=True, ftz=True)[0] == 0x80000000
    # sqrt(2^-148) = sqrt(2^-124) * 2^-12 = 2^-74; rsqrt(2^-148) = 2^62 * 2^12 = 2^74
    assert F.sqrt([sub148], type="f32", approx=True)[0] == 0x1A800000
    assert F.sqrt([sub148], type="f32", approx=True, ftz=True)[0] == 0
    assert F.rsqrt([sub148])[0] == 0x64800000
    assert F.rsqrt([sub148], ftz=True)[0] == 0x7F800000
    # ex2: a < -126 -> MUFU.EX2(a / 2) squared. -150: (2^-75)^2 = 2^-150, a tie between 0 and
    # 2^-149 -> even -> +0. -149: MUFU.EX2(-74.5) is within 2^-22.5 of 2^-74.5, its square within
    # 2^-21 of 2^-149 -> rounds to 2^-149. .ftz: both +0.
    assert F.ex2([0xC3160000])[0] == 0
    assert F.ex2([0xC3150000])[0] == sub149
    assert F.ex2([0xC3150000], ftz=True)[0] == 0
    # lg2: |a| < 2^-126 -> MUFU.LG2(a * 2^24) - 24. For 2^-149: MUFU.LG2(2^-125) is the largest
    # f32 magnitude strictly below 125 (recorded: 2^-126 -> -(126 - 2^-17)), so -(125 - 2^-17);
    # - 24 = -(149 - 2^-17), halfway between -149 and -(149 - 2^-16) -> even: -149.
    assert F.lg2([0x00800000], ftz=True)[0] == np.float32(-(126 - 2.0 ** -17)).view(np.uint32)
    assert F.lg2([sub149])[0] == np.float32(-149).view(np.uint32)
    assert F.lg2([sub149], ftz=True)[0] == 0xFF800000


def test_ex2_negative_inputs_are_negated_after_truncation():
    """Recorded on the H200 (mufu_f32_sm90.npz and the [-1, -0.25) sweep): a negative input's
    magnitude is truncated to 23 fraction bits first, so -2^-30 gives exactly 1.0 while
    ex2(-2^-23) < 1; integers are exact."""
    tiny_neg, ulp_neg = 0xB0800000, 0xB4000000                   # -2^-30, -2^-23
    assert F.ex2([tiny_neg], ftz=True)[0] == 0x3F800000
    assert F.ex2([ulp_neg], ftz=True)[0] < 0x3F800000
    assert F.ex2([0xBF800000], ftz=True)[0] == 0x3F000000       # 2^-1
