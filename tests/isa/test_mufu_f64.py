"""rcp.approx.ftz.f64 (MUFU.RCP64H), rsqrt.approx.ftz.f64 (MUFU.RSQ64H) and rsqrt.approx.f64
(MUFU.RSQ64H + one DFMA Newton step), bit-exact for sm_90 (docs/mufu.md, "f64 approximations").

Independent sources: the 32,768 inputs recorded on an H200 (hardware/mufu/f64_run.sh,
hardware/mufu/gen_f64_inputs.py: tests/data/hardware/mufu/mufu_f64_sm90.npz), the SASS
(hardware/mufu/results/f64_sass.txt) worked by hand, exact rational arithmetic (fractions), and
ptxsim's f32 MUFU.RCP / MUFU.RSQ (verified separately over all 2^32 f32 inputs, docs/mufu.md), which the hardware's 64H units turn out to share."""
import os
from fractions import Fraction

import numpy as np
import pytest

from ptxsim.errors import PtxsimError
from ptxsim.isa import floating as F

U = np.uint64
DATA = os.path.join(os.path.dirname(__file__), "..", "data", "hardware", "mufu", "mufu_f64_sm90.npz")


@pytest.fixture(scope="module")
def rec():
    with np.load(DATA) as d:
        return d["x"], d["y"]


def _forms(x):
    return [F.rcp(x, type="f64", approx=True, ftz=True), F.rsqrt(x, type="f64", ftz=True),
            F.rsqrt(x, type="f64")]


def test_recorded_h200_replay_bit_exact(rec):
    """All three forms, all 32,768 recorded inputs (every sign/exponent class, subnormals, NaNs
    with and without upper fraction bits), exact bits: NaN payloads and the zero lower words
    of the two 64H forms included."""
    x, y = rec
    assert x.size == 32768
    assert np.all(y[:2] & U(0xFFFFFFFF) == 0)            # the hardware's 64H lower words are 0
    for k, got in enumerate(_forms(x)):
        bad = np.flatnonzero(got != y[k])
        assert bad.size == 0, (k, [(hex(x[i]), hex(y[k][i]), hex(got[i])) for i in bad[:4]])


def test_recorded_replay_covers_the_classes(rec):
    x, _ = rec
    hi = x >> U(32)
    e = (hi >> U(20)) & U(0x7FF)
    assert np.count_nonzero(e == 0) >= 2000 and np.count_nonzero(e == 0x7FF) >= 2000
    assert np.count_nonzero(hi >> U(31)) >= 7000
    assert len(np.unique(e)) == 2048                          # every exponent


def test_64h_units_read_the_f32_mufu_tables(rec):
    """The recorded normal results of rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64 equal ptxsim's f32
    rcp.approx.ftz / rsqrt.approx.ftz of the f32 with the same 20 upper fraction bits (and
    exponent 127, or 127/128 for the rsqrt parity), fraction truncated to 20 bits, exponent
    rebased by hand: 1/(2^e m) = 2^-e / m, 1/sqrt(2^(2k+p) m) = 2^-k / sqrt(2^p m)."""
    x, y = rec
    hi = (x >> U(32)).astype(np.int64)
    s, E, f = hi >> 31, (hi >> 20) & 0x7FF, hi & 0xFFFFF
    ok = (E > 0) & (E < 2045)
    r32 = F.rcp((127 << 23) | (f[ok] << 3), type="f32", approx=True, ftz=True).astype(np.int64)
    want = (s[ok] << 31) | ((((r32 >> 23) & 0xFF) - 127 + 1023 - (E[ok] - 1023)) << 20) | \
        ((r32 >> 3) & 0xFFFFF)
    assert np.array_equal(want, (y[0][ok] >> U(32)).astype(np.int64))
    ok = (E > 0) & (E < 2047) & (s == 0)
    e = E[ok] - 1023
    p, k = e & 1, (e - (e & 1)) // 2
    r32 = F.rsqrt(((127 + p) << 23) | (f[ok] << 3), ftz=True).astype(np.int64)
    want = ((((r32 >> 23) & 0xFF) - 127 + 1023 - k) << 20) | ((r32 >> 3) & 0xFFFFF)
    assert np.array_equal(want, (y[1][ok] >> U(32)).astype(np.int64))


def test_rcp64h_hand_cases():
    h = lambda v: int(F.rcp(np.array([v], U), type="f64", approx=True, ftz=True)[0])
    assert h(0x3FF0000000000000) == 0x3FF0000000000000         # 1 -> 1
    assert h(0xC000000000000000) == 0xBFE0000000000000         # -2 -> -0.5
    assert h(0x0010000000000000) == 0x7FD0000000000000         # 2^-1022 -> 2^1022
    assert h(0x7FE0000000000000) == 0                           # 2^1023 -> 2^-1023: flushed
    assert h(0xFFD8000000000000) == 1 << 63                     # -1.5 * 2^1022 -> -0
    assert h(0x000FFFFFFFFFFFFF) == 0x7FF0000000000000         # subnormal -> +Inf (.ftz)
    assert h(1 << 63) == 0xFFF0000000000000                     # -0 -> -Inf
    assert h(0xFFF0000000000000) == 1 << 63                     # -Inf -> -0
    assert h(0x7FF8000000000000) == 0x7FFFFFFF00000000         # NaN -> upper word 0x7FFFFFFF
    assert h(0x7FF0000000000001) == 0                           # NaN, upper word = +Inf: +0
    # the lower word is ignored: 1 + 2^-52 (upper word 1.0) -> 1.0
    assert h(0x3FF0000000000001) == 0x3FF0000000000000
    # the older single recording (1.5 * 2^511 -> 0x1ff55555 00000000): 1/1.5 = 0.10101010..b,
    # truncated to 20 fraction bits after the leading 1: 0x55555
    assert h(0x5FE8000000000000) == 0x1FF5555500000000


def test_rcp64h_accuracy_over_a_binade():
    """Every one of the 2^20 upper words of [1, 2): the result is within one unit of the 20-bit
    fraction below 1/a_hi and at most 1/8 unit above it (measured: -0.989 .. +0.120 units;
    93.1% equal the truncated exact reciprocal)."""
    hi = np.arange(0x3FF00000, 0x40000000, dtype=U)
    r = F.rcp(hi << U(32), type="f64", approx=True, ftz=True).view(np.float64)
    a = (hi << U(32)).view(np.float64)
    v = 1.0 / a                                        # within 2^-53 relative: ample here
    unit = np.where(v < 1, 2.0 ** -21, 2.0 ** -20)
    d = (r - v) / unit
    assert d.min() > -1 and d.max() < 0.125
    assert 0.92 < np.mean(np.floor(v / unit) * unit == r) < 0.94


def test_rsq64h_hand_cases():
    h = lambda v: int(F.rsqrt(np.array([v], U), type="f64", ftz=True)[0])
    assert h(0x4010000000000000) == 0x3FE0000000000000         # 4 -> 0.5
    assert h(0x3FF0000000000000) == 0x3FF0000000000000         # 1 -> 1
    assert h(0x7FF0000000000000) == 0                           # +Inf -> +0
    assert h(0x0000000000000001) == 0x7FF0000000000000         # subnormal -> +Inf
    assert h(1 << 63) == 0xFFF0000000000000                     # -0 -> -Inf
    assert h(0xBFF0000000000000) == 0x7FFFFFFF00000000         # -1 -> NaN
    assert h(0xFFF0000000000000) == 0x7FFFFFFF00000000         # -Inf -> NaN


def test_rsqrt_f64_slow_path_by_hand():
    """__cuda_sm20_drsqrt_f64_slowpath_v2 (SASS): +-0 -> +-Inf; NaN -> DADD(a, a), the NaN
    quieted with its payload; negatives -> 0xFFF8000000000000; +Inf -> +0; a positive
    subnormal: refine(a * 2^54) * 2^27."""
    h = lambda v: int(F.rsqrt(np.array([v], U), type="f64")[0])
    assert h(0) == 0x7FF0000000000000 and h(1 << 63) == 0xFFF0000000000000
    assert h(0x7FF0000000000001) == 0x7FF8000000000001       # sNaN quieted
    assert h(0xFFF4000000000123) == 0xFFFC000000000123
    assert h(0xBFF0000000000000) == 0xFFF8000000000000
    assert h(0xFFF0000000000000) == 0xFFF8000000000000
    assert h(0x8000000000000001) == 0xFFF8000000000000
    assert h(0x7FF0000000000000) == 0
    # 2^-1074 * 2^54 = 2^-1020 = 4^-510: MUFU.RSQ64H gives 2^510 exactly (even exponent, fraction
    # 0: the f32 table gives 1.0 for 1.0), t = 1 - 2^-1020 2^1020 = 0, so 2^510 * 2^27 = 2^537
    assert h(0x0000000000000001) == (1023 + 537) << 52
    # 2^-1073 = 2 * 4^-537 after scaling: 2^-1019 -> 2^509.5; just check within 1 ulp
    r = F.rsqrt(np.array([2], U), type="f64").view(np.float64)[0]
    assert abs(r / (2.0 ** 536.5) - 1) < 2.0 ** -52


def test_rsqrt_f64_fast_path_worked_by_hand():
    """a = 2: MUFU.RSQ64H(2.0) = f32 rsqrt.approx.ftz(2.0) truncated to 20 fraction bits; then
    the five SASS steps in exact rationals, each rounded to nearest double: the same bits."""
    y0_32 = int(F.rsqrt(np.array([0x40000000], np.uint32), ftz=True)[0])
    y0 = np.float64(np.uint64((((y0_32 >> 23) - 127 + 1023) << 52)
                              | (((y0_32 >> 3) & 0xFFFFF) << 32)).view(np.float64))
    rn = lambda q: np.float64(float(q))                   # Fraction -> nearest double (exact)
    a = Fraction(2)
    t = rn(Fraction(y0) * Fraction(y0))
    t = rn(1 - a * Fraction(t))
    c = rn(Fraction(t) * Fraction(3, 8) + Fraction(1, 2))
    u = rn(Fraction(y0) * Fraction(t))
    want = rn(Fraction(c) * Fraction(u) + Fraction(y0))
    assert F.rsqrt(np.array([0x4000000000000000], U), type="f64")[0] == want.view(U)
    assert want == np.float64(2 ** -0.5) or abs(want - 2 ** -0.5) <= 2.0 ** -53


def test_the_dfma_roundings_matter(rec):
    """Negative control of the replay: 1 - a*y*y rounded twice (DMUL then DADD) instead of one
    DFMA changes about 11% of the recorded fast-path results; dropping the 3/8 t^2 term
    (plain Newton: y + y t / 2) changes ~97%."""
    x, y = rec
    hi = (x >> U(32)).astype(np.int64)
    fast = ((hi - 0x100000) & 0xFFFFFFFF) < 0x7FE00000
    a, hw = x[fast].view(np.float64), y[2][fast]
    y0 = F._hi_word(F._mufu_rsq64h(a.view(U)))
    t2 = 1 - a * (y0 * y0)
    c = F._dfma(t2, np.full_like(a, 0.375), np.full_like(a, 0.5))
    twice = F._dfma(c, y0 * t2, y0).view(U)
    assert 0.05 < np.mean(twice != hw) < 0.2
    t = F._dfma(a, -(y0 * y0), np.ones_like(a))
    newton = F._dfma(np.full_like(a, 0.5), y0 * t, y0).view(U)
    assert np.mean(newton != hw) > 0.9


def test_rsqrt_f64_accuracy(rec):
    """Measured on the recorded positive normals: 99.9% equal to the correctly rounded 1/sqrt(a),
    never more than 0.51 ulp away (checked here with exact rationals on a sample)."""
    x, y = rec
    hi = (x >> U(32)).astype(np.int64)
    fast = ((hi - 0x100000) & 0xFFFFFFFF) < 0x7FE00000
    a, r = x[fast].view(np.float64)[:300], y[2][fast].view(np.float64)[:300]
    for ai, ri in zip(a, r):
        # |r - 1/sqrt(a)| <= 0.51 ulp(r)  <=>  compare r^2 a with 1 using exact rationals
        ulp = Fraction(float(np.spacing(ri)))
        lo, hi_ = Fraction(float(ri)) - ulp * Fraction(51, 100), Fraction(float(ri)) + ulp * Fraction(51, 100)
        A = Fraction(float(ai))
        assert lo * lo * A <= 1 <= hi_ * hi_ * A


def test_f64_approx_legality():
    with pytest.raises(PtxsimError):
        F.rcp(np.array([0], U), type="f64", approx=True, ftz=False)   # only rcp.approx.ftz.f64
