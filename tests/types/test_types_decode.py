"""decode(): every code of every format against an independent source."""
import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import FormatError
from ptxsim.types import FORMATS, decode, get_format

ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
      "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn,
      "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu}


@pytest.fixture(autouse=True)
def _quiet_nan_casts():
    with np.errstate(invalid="ignore"):
        yield


def _same(got, ref):
    """Equal values, NaN where NaN, and the same sign for every non-NaN (so -0 != +0)."""
    assert got.dtype == np.float64
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], ref[~nan])
    assert np.array_equal(np.signbit(got[~nan]), np.signbit(ref[~nan]))


@pytest.mark.parametrize("name", sorted(ML))
def test_every_code_matches_ml_dtypes(name):
    f = get_format(name)
    codes = np.arange(1 << f.bits, dtype=np.uint8)
    _same(decode(codes, name), codes.view(ML[name]).astype(np.float64))


@pytest.mark.parametrize("name,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_every_16bit_code(name, dtype):
    codes = np.arange(1 << 16, dtype=np.uint16)
    _same(decode(codes, name), codes.view(dtype).astype(np.float64))


def test_f32_and_tf32_drop_low_13_bits():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 32, 10000, dtype=np.uint64).astype(np.uint32)
    _same(decode(bits, "f32"), bits.view(np.float32).astype(np.float64))
    # tf32: the tensor core reads bits [31:13]; the low 13 bits are ignored (FACTS.md section 1)
    _same(decode(bits, "tf32"), (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64))
    assert decode(0x3F801FFF, "tf32") == 1.0           # 1 + 2^-10 needs bit 13
    assert decode(0x3F802000, "tf32") == 1.0 + 2 ** -10


def _ue4m3_by_hand(code):
    # unsigned E4M3: 4 exponent bits, bias 7, 3 fraction bits, subnormals, 0x7F is NaN, no Inf
    e, m = code >> 3, code & 7
    if code == 0x7F:
        return float("nan")
    return m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)


def test_ue4m3_every_code_by_hand():
    codes = np.arange(128)
    _same(decode(codes, "ue4m3"), np.array([_ue4m3_by_hand(int(c)) for c in codes]))
    assert decode(0x01, "ue4m3") == 2.0 ** -9 and decode(0x38, "ue4m3") == 1.0
    assert decode(0x7E, "ue4m3") == 448.0


def test_ue8m0_has_no_zero_and_one_nan():
    assert decode(0, "ue8m0") == 2.0 ** -127
    assert decode(127, "ue8m0") == 1.0
    assert decode(254, "ue8m0") == 2.0 ** 127
    assert np.isnan(decode(255, "ue8m0"))


@pytest.mark.parametrize("name,lo,hi", [("s8", -128, 127), ("u8", 0, 255), ("s4", -8, 7), ("u4", 0, 15)])
def test_small_integers_twos_complement(name, lo, hi):
    f = get_format(name)
    got = decode(np.arange(1 << f.bits), name)
    assert got.min() == lo and got.max() == hi
    if f.signed:
        assert got[(1 << f.bits) - 1] == -1 and got[1 << (f.bits - 1)] == lo


def test_32bit_integers():
    assert decode(0xFFFFFFFF, "s32") == -1 and decode(0xFFFFFFFF, "u32") == 4294967295.0


def test_nan_reads_positive_as_hardware_widening():
    # cvt.rn.f16x2.e4m3x2 of 0xFF gives 0x7FFF (tests/types/test_types_hardware_cvt.py)
    assert not np.signbit(decode(0xFF, "e4m3")) and not np.signbit(decode(0xFE00, "f16"))


def test_shape_is_kept():
    assert decode(np.zeros((3, 4, 5), np.uint8), "e2m1").shape == (3, 4, 5)


@pytest.mark.parametrize("name,bits", [("e2m1", 16), ("e3m2", 64), ("e4m3", 256), ("ue4m3", 0x80),
                                       ("f16", 1 << 16), ("s4", -1)])
def test_out_of_range_bits_raise(name, bits):
    with pytest.raises(FormatError, match="does not fit"):
        decode(np.array([0, bits]), name)


@pytest.mark.parametrize("bad", [np.array([1.0]), np.array([True]), np.array(["a"])])
def test_wrong_dtype_raises(bad):
    with pytest.raises(FormatError, match="integer array"):
        decode(bad, "e4m3")


def test_unknown_format_raises():
    with pytest.raises(FormatError, match="unknown element format 'e3m3'"):
        decode([0], "e3m3")


def test_format_table_derived_fields():
    # MAX_NORM from the OCP MX spec v1.0 Table 1 / 2 and IEEE 754
    expect = {"e4m3": 448.0, "e5m2": 57344.0, "e2m3": 7.5, "e3m2": 28.0, "e2m1": 6.0,
              "f16": 65504.0, "ue4m3": 448.0, "ue8m0": 2.0 ** 127}
    for name, v in expect.items():
        assert FORMATS[name].max_finite == v, name
    assert FORMATS["e2m1"].min_subnormal == 0.5 and FORMATS["e4m3"].min_subnormal == 2.0 ** -9
