"""Containers: hand-derived bytes from the spec's wording, and inverse pairs."""
import numpy as np
import pytest

from ptxsim.errors import FormatError
from ptxsim.types import (encode, from_f8f6f4_container, pack_b32, pack_cvt_x2, pack_fp4_pairs,
                          to_f8f6f4_container, unpack_b32, unpack_cvt_x2, unpack_fp4_pairs)


def test_f8f6f4_container_by_hand():
    # e2m1 "resides in central 4 bits of the 8-bit container": code 0b0101 -> 0b00_0101_00
    assert to_f8f6f4_container([0b0101, 0b1111], "e2m1").tolist() == [0b00010100, 0b00111100]
    # e3m2/e2m3 "reside in the lower 6 bits ... padding in the upper 2 bits"
    assert to_f8f6f4_container([0b101010], "e3m2").tolist() == [0b00101010]
    assert to_f8f6f4_container([0xFF], "e4m3").tolist() == [0xFF]
    assert from_f8f6f4_container([0b00111100], "e2m1").tolist() == [0b1111]


@pytest.mark.parametrize("fmt,width", [("e2m1", 4), ("e2m3", 6), ("e3m2", 6), ("e4m3", 8), ("e5m2", 8)])
def test_f8f6f4_round_trip_every_code(fmt, width):
    codes = np.arange(1 << width)
    assert np.array_equal(from_f8f6f4_container(to_f8f6f4_container(codes, fmt), fmt), codes)


def test_f8f6f4_nonzero_padding():
    with pytest.raises(FormatError, match=r"byte 0x15 at flat index 1 has non-zero padding"):
        from_f8f6f4_container([0x14, 0x15], "e2m1")
    with pytest.raises(FormatError, match="non-zero padding"):
        from_f8f6f4_container([0x40], "e3m2")
    codes, bad = from_f8f6f4_container([0x14, 0x15, 0x80], "e2m1", padding="flag")
    assert codes.tolist() == [5, 5, 0] and bad.tolist() == [False, True, True]


def test_f8f6f4_bad_input():
    with pytest.raises(FormatError, match="not an f8f6f4 element format"):
        to_f8f6f4_container([0], "f16")
    with pytest.raises(FormatError, match="does not fit 4 bits"):
        to_f8f6f4_container([16], "e2m1")


def test_fp4_pairs_low_nibble_first():
    # element 2i in the low nibble: [1, 2, 3, 4] -> 0x21, 0x43
    assert pack_fp4_pairs([1, 2, 3, 4]).tolist() == [0x21, 0x43]
    assert unpack_fp4_pairs([0x21, 0x43]).tolist() == [1, 2, 3, 4]
    every = np.arange(256, dtype=np.uint8)
    assert np.array_equal(pack_fp4_pairs(unpack_fp4_pairs(every)), every)
    assert pack_fp4_pairs(np.zeros((3, 8), np.uint8)).shape == (3, 4)
    with pytest.raises(FormatError, match="even number"):
        pack_fp4_pairs([1, 2, 3])


def test_b32_element0_in_low_bits():
    assert pack_b32([0x3C00, 0xC000], 16).tolist() == [0xC0003C00]        # f16x2: 1.0, -2.0
    assert pack_b32([1, 2, 3, 4], 8).tolist() == [0x04030201]
    assert pack_b32(list(range(1, 9)), 4).tolist() == [0x87654321]
    words = np.random.default_rng(0).integers(0, 1 << 32, (5, 6), dtype=np.uint64).astype(np.uint32)
    for w in (4, 8, 16):
        assert unpack_b32(words, w).shape == (5, 6 * 32 // w)
        assert np.array_equal(pack_b32(unpack_b32(words, w), w), words)
    with pytest.raises(FormatError, match="multiple of 4"):
        pack_b32([1, 2, 3], 8)
    with pytest.raises(FormatError, match="not 6-bit"):
        pack_b32([1], 6)


def test_cvt_x2_puts_a_in_the_upper_half():
    # cvt.rn.f16x2.f32 d, 1.0, -2.0 -> d = 0x3C00C000 (9.7.9.21: d[31:16] = convert(a))
    a, b = encode([1.0], "f16"), encode([-2.0], "f16")
    assert pack_cvt_x2(a, b, 16).tolist() == [0x3C00C000]
    # cvt.rn.satfinite.e2m1x2.f32 d, 6.0, 0.5 -> d = 0x71 (d[7:4] = convert(a))
    assert pack_cvt_x2(encode([6.0], "e2m1", satfinite=True),
                       encode([0.5], "e2m1", satfinite=True), 4).tolist() == [0x71]
    hi, lo = unpack_cvt_x2([0x3C00C000], 16)
    assert hi.tolist() == [0x3C00] and lo.tolist() == [0xC000]
    with pytest.raises(FormatError, match="does not fit 16 bits"):
        unpack_cvt_x2([0x10000], 8)
