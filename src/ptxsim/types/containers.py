"""Packing element codes into the containers the instructions read and write.

Each pair is an exact inverse on valid input (tests/types/test_types_containers.py):

* `to_f8f6f4_container` / `from_f8f6f4_container`: one byte per element for kind::f8f6f4 and
  kind::mxf8f6f4 -- e2m1 in bits [5:2], e2m3/e3m2 in [5:0], e4m3/e5m2 the whole byte; padding is
  zero (PTX ISA 9.7.14.6.3 / 9.7.16 "the matrix element of type .e2m1 resides in central 4 bits of
  the 8-bit container with padding in the upper 2 bits and lower 2 bits"). Non-zero padding is
  not defined by the spec and raises FormatError (or is reported as a mask on request).
* `pack_fp4_pairs` / `unpack_fp4_pairs`: kind::mxf4 / mxf4nvf4, two e2m1 per byte, element 2i in
  the low nibble, as CUTLASS's sub-byte references pack them (subbyte_reference.h: element k is
  `(byte >> 4k) & 0xF`). MMA-Sim 2.1.1's unpack_uint8_to_fp4 takes the high nibble first.
* `pack_b32` / `unpack_b32`: 32 / width elements of `width` bits in a b32 register, element 0 in
  the least-significant bits (f16x2/bf16x2 element 0 = bits [15:0]; 4x8-bit; 8x4-bit).
* `pack_cvt_x2`: the operand order of `cvt.*x2`: `cvt.rn.f16x2.f32 d, a, b` puts a in the UPPER
  half and b in the lower (9.7.9.21: "d[31:16] = convert(a); d[15:0] = convert(b)"), likewise
  e4m3x2/e5m2x2/e2m3x2/e3m2x2/ue8m0x2 (upper byte = a) and e2m1x2 (upper nibble = a). Measured
  for e4m3x2/e5m2x2 on an H200 (tests/data/hardware/cvt/cvt_sm90.npz).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import FormatError
from ptxsim.types.formats import Format, get_format

# element format -> (bit offset in the byte, element width) inside an f8f6f4 container
F8F6F4_PLACEMENT = {"e4m3": (0, 8), "e5m2": (0, 8), "e2m3": (0, 6), "e3m2": (0, 6), "e2m1": (2, 4)}


def _name(fmt) -> str:
    return fmt.name if isinstance(fmt, Format) else get_format(fmt).name


def _codes(codes, width: int, what: str) -> np.ndarray:
    a = np.asarray(codes)
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise FormatError(f"{what}: element codes must be an integer array, got dtype {a.dtype}")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= 1 << width):
        bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
        raise FormatError(f"{what}: code {bad:#x} does not fit {width} bits")
    return a.astype(np.uint32)


def to_f8f6f4_container(codes, fmt) -> np.ndarray:
    """Element codes of `fmt` -> uint8 f8f6f4 container bytes (padding zero)."""
    name = _name(fmt)
    if name not in F8F6F4_PLACEMENT:
        raise FormatError(f"'{name}' is not an f8f6f4 element format ({', '.join(F8F6F4_PLACEMENT)})")
    shift, width = F8F6F4_PLACEMENT[name]
    return (_codes(codes, width, f"to_f8f6f4_container(.{name})") << shift).astype(np.uint8)


def from_f8f6f4_container(data, fmt, padding: str = "raise"):
    """uint8 container bytes -> element codes of `fmt`.

    padding="raise": non-zero padding bits raise FormatError naming the first bad byte;
    padding="flag": returns (codes, bad_mask) instead, bad_mask True where padding was non-zero."""
    name = _name(fmt)
    if name not in F8F6F4_PLACEMENT:
        raise FormatError(f"'{name}' is not an f8f6f4 element format ({', '.join(F8F6F4_PLACEMENT)})")
    if padding not in ("raise", "flag"):
        raise FormatError(f"padding must be 'raise' or 'flag', got {padding!r}")
    b = _codes(data, 8, f"from_f8f6f4_container(.{name})")
    shift, width = F8F6F4_PLACEMENT[name]
    field = ((1 << width) - 1) << shift
    bad = (b & ~np.uint32(field) & np.uint32(0xFF)) != 0
    codes = ((b >> shift) & ((1 << width) - 1)).astype(np.uint8)
    if padding == "flag":
        return codes, bad
    if bad.any():
        i = int(np.argmax(bad.ravel()))
        raise FormatError(f"f8f6f4 container byte {int(b.ravel()[i]):#04x} at flat index {i} has "
                          f"non-zero padding: .{name} lives in bits [{shift + width - 1}:{shift}] "
                          f"and the other bits must be 0")
    return codes


def pack_fp4_pairs(codes) -> np.ndarray:
    """e2m1 codes (last axis even) -> uint8 bytes, element 2i in the low nibble."""
    c = _codes(codes, 4, "pack_fp4_pairs")
    if c.ndim == 0 or c.shape[-1] % 2:
        raise FormatError(f"pack_fp4_pairs needs an even number of elements on the last axis, "
                          f"got shape {c.shape}")
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def unpack_fp4_pairs(data) -> np.ndarray:
    """uint8 bytes -> e2m1 codes, twice as many on the last axis (low nibble first)."""
    b = _codes(data, 8, "unpack_fp4_pairs")
    out = np.stack([b & 0xF, b >> 4], axis=-1)
    return out.reshape(*b.shape[:-1], b.shape[-1] * 2).astype(np.uint8) if b.ndim else out.astype(np.uint8)


_WIDTHS = (4, 8, 16)


def pack_b32(codes, width: int) -> np.ndarray:
    """Element codes of `width` bits (4, 8, 16), 32/width per register along the last axis ->
    uint32 registers, element 0 in the least-significant bits."""
    if width not in _WIDTHS:
        raise FormatError(f"pack_b32 packs 4-, 8- or 16-bit elements, not {width}-bit")
    per = 32 // width
    c = _codes(codes, width, f"pack_b32(width={width})")
    if c.ndim == 0 or c.shape[-1] % per:
        raise FormatError(f"pack_b32(width={width}) needs a multiple of {per} elements on the last "
                          f"axis, got shape {c.shape}")
    c = c.reshape(*c.shape[:-1], c.shape[-1] // per, per)
    shifts = np.arange(per, dtype=np.uint32) * np.uint32(width)
    return np.bitwise_or.reduce(c << shifts, axis=-1).astype(np.uint32)


def unpack_b32(words, width: int) -> np.ndarray:
    """uint32 registers -> element codes (element 0 from the least-significant bits)."""
    if width not in _WIDTHS:
        raise FormatError(f"unpack_b32 unpacks 4-, 8- or 16-bit elements, not {width}-bit")
    per = 32 // width
    w = _codes(words, 32, f"unpack_b32(width={width})")
    shifts = np.arange(per, dtype=np.uint32) * np.uint32(width)
    out = (w[..., None] >> shifts) & np.uint32((1 << width) - 1)
    out = out.reshape(*w.shape[:-1], w.shape[-1] * per) if w.ndim else out
    return out.astype(np.uint8 if width <= 8 else np.uint16)


def pack_cvt_x2(a, b, width: int) -> np.ndarray:
    """The register `cvt.*x2 d, a, b` writes: code a in the upper `width` bits, b in the lower.
    width 16 (f16x2, bf16x2 -> uint32), 8 (e4m3x2, e5m2x2, e2m3x2, e3m2x2, ue8m0x2 -> uint16),
    4 (e2m1x2 -> uint8)."""
    if width not in _WIDTHS:
        raise FormatError(f"pack_cvt_x2 packs 4-, 8- or 16-bit codes, not {width}-bit")
    ca, cb = _codes(a, width, "pack_cvt_x2(a)"), _codes(b, width, "pack_cvt_x2(b)")
    dtype = {16: np.uint32, 8: np.uint16, 4: np.uint8}[width]
    return ((ca << width) | cb).astype(dtype)


def unpack_cvt_x2(d, width: int):
    """Inverse of pack_cvt_x2: returns (a, b) = (upper half, lower half)."""
    if width not in _WIDTHS:
        raise FormatError(f"unpack_cvt_x2 unpacks 4-, 8- or 16-bit codes, not {width}-bit")
    w = _codes(d, 2 * width, f"unpack_cvt_x2(width={width})")
    dtype = np.uint16 if width == 16 else np.uint8
    mask = np.uint32((1 << width) - 1)
    return ((w >> width) & mask).astype(dtype), (w & mask).astype(dtype)
