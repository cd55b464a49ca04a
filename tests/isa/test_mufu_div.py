"""div.approx{.ftz}.f32 and div.full{.ftz}.f32 as an H200 (sm_90) computes them: the SASS ptxas
13.0 emits (hardware/mufu/results/div_sass.txt: optional scaling, MUFU.RCP, FMUL{.FTZ}) on the bit-exact
MUFU.RCP model. Expected values: tests/data/hardware/mufu/mufu_div_sm90.npz (recorded on the H200,
2026-11-21: 400 special x special pairs, 16,384 uniform random bit pairs, 16,384 pairs with
exponents within +-130 of each other; hardware/mufu/div_capture.sh), the PTX ISA rule for div.approx with
huge divisors, and hand derivations from the SASS. The model was also checked on the H200 for
7 x 2^32 pairs per form (every b, a = 1 and six hashed a) and, as numpy code, 2^26 pairs per form:
0 mismatches (hardware/mufu/results/div_verify_*.txt)."""
import os

import numpy as np
import pytest

from ptxsim.isa import floating as F

FORMS = [("div.approx.f32", dict(approx=True)),
         ("div.approx.ftz.f32", dict(approx=True, ftz=True)),
         ("div.full.f32", dict(full=True)), ("div.full.ftz.f32", dict(full=True, ftz=True))]


@pytest.mark.parametrize("k", range(4))
def test_replays_recorded_sm90_bits_exactly(k):
    d = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "hardware", "mufu", "mufu_div_sm90.npz"))
    name, kw = FORMS[k]
    assert str(d["ops"][k]) == name
    got = F.div(d["a"], d["b"], type="f32", **kw)
    bad = np.nonzero(got != d["y"][k])[0]
    assert bad.size == 0, (name, [(hex(d["a"][i]), hex(d["b"][i]), hex(d["y"][k][i]))
                                  for i in bad[:5]])


def _div(a, b, **kw):
    return int(F.div(np.array([a], np.uint32), np.array([b], np.uint32), type="f32", **kw)[0])


def test_scaling_paths_derived_from_the_sass():
    one, two, sub127, p127 = 0x3F800000, 0x40000000, 0x00400000, 0x7F000000   # 1, 2, 2^-127, 2^127
    # |b| < 2^-126, not .ftz: a, b scaled by 2^24: 2^24 * MUFU.RCP(2^-103) = 2^24 * 2^103 = 2^127
    assert _div(one, sub127, approx=True) == p127
    assert _div(one, sub127, full=True) == p127
    # .ftz: b flushed, MUFU.RCP(0) = +Inf, * 1 = +Inf
    assert _div(one, sub127, approx=True, ftz=True) == 0x7F800000
    # PTX ISA (div.approx): 2^126 < |b| < 2^128 gives 0, NaN for an infinite a; MUFU.RCP flushes
    assert _div(one, p127, approx=True) == 0
    assert _div(0x7F800000, p127, approx=True) == 0x7FFFFFFF
    # .full scales a and b by 1/4 instead: MUFU.RCP(2^125) * 2^-2 = 2^-127, kept subnormal by the
    # plain FMUL, flushed by FMUL.FTZ
    assert _div(one, p127, full=True) == sub127
    assert _div(one, p127, full=True, ftz=True) == 0
    # a subnormal a with a normal b is not scaled: 0.5 * 2^-130 = 2^-131 (.ftz: 0)
    assert _div(0x00080000 << 1, two, approx=True) == 0x00080000
    assert _div(0x00080000 << 1, two, approx=True, ftz=True) == 0
    # the 2^24 scaling of a can overflow: 2^120 / 2^-127 = +Inf (as is the true quotient)
    assert _div(0x7B800000, sub127, approx=True) == 0x7F800000


def test_quotients_within_the_ptx_bound_of_2_ulp():
    # PTX ISA: div.approx.f32 / div.full.f32 max 2 ulp (|b| in [2^-126, 2^126] for .approx)
    g = np.random.default_rng(7)
    a = (g.uniform(1, 2, 4096) * 2.0 ** g.integers(-60, 60, 4096)).astype(np.float32)
    b = (g.uniform(1, 2, 4096) * 2.0 ** g.integers(-60, 60, 4096)).astype(np.float32)
    exact = a.astype(np.float64) / b.astype(np.float64)
    ulp = 2.0 ** (np.floor(np.log2(np.abs(exact))) - 23)
    for _, kw in FORMS:
        q = F.div(a.view(np.uint32), b.view(np.uint32), type="f32", **kw).view(np.float32)
        assert np.all(np.abs(q - exact) <= 2 * ulp)
