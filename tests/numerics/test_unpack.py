"""Element decoding against ml_dtypes (an independent decoder), every bit pattern of every
format up to 16 bits, and the two f32/tf32 paths against each other."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import OperandError
from ptxsim.numerics.unpack import ZERO_EXP, decode, raw_bits, unpack

ML = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e3m2": ml_dtypes.float6_e3m2fn,
      "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn,
      "ue8m0": ml_dtypes.float8_e8m0fnu}
EMIN = {"f16": -14, "bf16": -126, "e4m3": -6, "e5m2": -14, "e3m2": -2, "e2m3": 0, "e2m1": 0,
        "ue8m0": -127, "ue4m3": -6}
WIDTH = {"f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4,
         "ue8m0": 8, "ue4m3": 8}


def _ml_values(fmt, bits):
    if fmt == "ue4m3":                 # e4m3 with the sign bit ignored (FACTS section 2)
        return (bits & 0x7F).astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    dt = np.dtype(ML[fmt])
    with np.errstate(invalid="ignore"):              # signalling NaN patterns
        return bits.astype(f"u{dt.itemsize}").view(dt).astype(np.float64)


@pytest.mark.parametrize("fmt", list(WIDTH))
def test_every_pattern_matches_ml_dtypes(fmt):
    bits = np.arange(1 << WIDTH[fmt], dtype=np.uint32)
    u = unpack(raw_bits(bits, fmt, "x"), fmt)
    want = _ml_values(fmt, bits)
    assert (np.isnan(u.value) == np.isnan(want)).all()
    fin = ~np.isnan(want)
    assert (u.value[fin] == want[fin]).all()
    assert (u.special == ~np.isfinite(want)).all()
    assert (u.zero == (want == 0)).all()
    nz = np.isfinite(want) & (want != 0)
    exp = np.maximum(np.frexp(np.abs(want[nz]))[1] - 1, EMIN[fmt])
    assert (u.exp[nz] == exp).all() and (u.exp[~nz] == ZERO_EXP).all()
    # lowest set bit: v / 2^lsb is an odd integer
    odd = np.ldexp(want[nz], -u.lsb[nz])
    assert (odd == np.round(odd)).all() and (np.abs(odd) % 2 == 1).all()


def test_f32_and_tf32_view_path_matches_field_decode():
    rng = np.random.default_rng(0)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1,
                                     0x807FFFFF], np.uint32)])
    for fmt in ("f32", "tf32"):
        fast, slow = unpack(bits, fmt), decode(bits, fmt)
        assert (np.isnan(fast.value) == np.isnan(slow.value)).all()
        ok = ~np.isnan(slow.value)
        assert (fast.value[ok] == slow.value[ok]).all()
        assert (fast.exp == slow.exp).all() and (fast.zero == slow.zero).all()
        assert (fast.special == slow.special).all()
    # tf32 ignores the low 13 bits
    assert unpack(np.array([0x3F801FFF], np.uint32), "tf32").value[0] == 1.0


def test_raw_bits_checks_the_width():
    with pytest.raises(OperandError, match="bits above the 6-bit e3m2"):
        raw_bits(np.array([0x40], np.uint8), "e3m2", "a")
    assert raw_bits(np.array([-1], np.int8), "e4m3", "a")[0] == 0xFF    # two's complement bits
    assert raw_bits(np.array([0xB8], np.uint8), "ue4m3", "s")[0] == 0x38  # sign bit dropped
