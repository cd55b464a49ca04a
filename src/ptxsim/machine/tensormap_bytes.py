"""The 128-byte CUtensorMap in the CUDA driver's own format, learned on an H200 (sm_90a, driver
580.159.04; hardware/tensormap/, vectors in tests/data/hardware/tensormap/): every map
cuTensorMapEncodeTiled / Im2col returned over the recorded sweep is reproduced byte for byte,
and every tensormap.replace writes what the GPU wrote.

32-bit words (little endian):

| word | bits | field |
|---|---|---|
| 0-1 | 64 | global address (tensormap.replace stores any 64-bit value) |
| 2 | 0 | mode: 0 tiled, 1 im2col |
| 2 | 4-6 | rank - 1 |
| 2 | 7-10 | element type code (ELEMTYPE_CODE; PTX tensormap.replace's elemtype code) |
| 2 | 11-12 | interleave (0 none, 1 16B, 2 32B) |
| 2 | 13-14 | swizzle (0 none, 1 32B, 2 64B, 3 128B) |
| 2 | 15 | OOB fill NaN (request zero FMA) |
| 2 | 16 | tf32 rounding (the TFLOAT32 types: f32 / f32.ftz element code plus this bit) |
| 2 | 17-18 | L2 promotion (0 none, 1 64B, 2 128B, 3 256B) |
| 2 | 19-20 | swizzle atomicity of the 128B swizzle: 0 16B, 1 32B, 2 32B + 8B flip, 3 64B (ptxsim's own placement, below) |
| 3-6 | 32 each | global stride i >> 4, low 32 bits (i = 0..3: strides of dimensions 1..4) |
| 7 | 4i..4i+3 | global stride i >> 4, bits 32-35 (strides are 36-bit counts of 16 bytes) |
| 8-12 | 32 each | global dim i - 1 |
| 13 | 3i..3i+2 | element stride i - 1 (i = 0..4) |
| 13 | 24-31 | box dim 0 - 1 (im2col: channels per pixel - 1) |
| 14 | 8 each | box dims 1..4 - 1 (im2col: the pixel box corners, below) |
| 15 | 32 | im2col: pixels per column - 1 |
| 16 | 32 | box bytes as the driver counts them: prod(floor(box / element stride)) x element size (im2col: channels x pixels x size) |
| 18 | 32 | 16 without swizzle, else 8 x the swizzle span (256 / 512 / 1024) |

Im2col corners (word 14): lower in bits 0-15 and upper in bits 16-31, each the rank-2 signed
offsets packed from bit 0 at 16 / 8 / 5 bits each for rank 3 / 4 / 5. Words 16 and 18 are the
driver's; TMA ignores them (a load through a map with words 8-15 zeroed reads the same box,
tma records 2-4), and tensormap.replace leaves them as they are.

Element type codes 11-13 (the packed 16U4_ALIGN8B / 16U4_ALIGN16B / 16U6_ALIGN16B types; not
their CUtensorMapDataType values 13-15) are not produced by the sm_90 driver (it refuses those
arguments); CuTe DSL 4.8.1, which writes its sm_100 maps inline, writes 11 / 12 / 13 for them
(tests/cuda/data/dsl_packed_maps.json; docs/cuda.md).

The sm_100-only swizzles CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B / _32B_FLIP_8B / _64B (enum 4-6) are
the 128B swizzle (field 13-14 = 3) with a swizzle atomicity other than 16B, the split the PTX ISA
makes in tensormap.replace (.swizzle_mode 3 + .swizzle_atomicity 1 / 2 / 3). Where a B200's driver
keeps the atomicity in the 128 bytes is unknown (the sm_90 driver refuses these swizzles, so an
H200 cannot record it); ptxsim keeps it in word 2 bits 19-20, which every recorded sm_90 map
leaves zero (tests/cuda/test_tensormap_driver.py). CUDA treats CUtensorMap as opaque: a program
that encodes, copies and tensormap.replaces maps sees one consistent format; only a program that
builds map bytes by hand from a B200 dump would see the difference (docs/cuda.md).
"""
from __future__ import annotations

import math
import struct

SIZE = 128

# CUtensorMapDataType name -> (map element code, tf32 bit)
ELEMTYPE_CODE = {
    "uint8": (0, 0), "uint16": (1, 0), "uint32": (2, 0), "int32": (3, 0), "uint64": (4, 0),
    "int64": (5, 0), "float16": (6, 0), "float32": (7, 0), "float32_ftz": (8, 0),
    "float64": (9, 0), "bfloat16": (10, 0), "tfloat32": (7, 1), "tfloat32_ftz": (8, 1),
    "16u4_align8b": (11, 0), "16u4_align16b": (12, 0), "16u6_align16b": (13, 0),
}
CODE_ELEMTYPE = {v: k for k, v in ELEMTYPE_CODE.items()}
# tensormap.replace .elemtype new_val (PTX ISA "Tensormap new_val validity") -> map code, tf32 bit:
# measured 0..12 (11 / 12 = .tf32 / .tf32.ftz set the f32 / f32.ftz code and the tf32 bit);
# 13..15 (.b4x16, .b4x16_p64, .b6x16_p32) need sm_100 and are the inferred codes 11..13
REPLACE_ELEMTYPE = {**{i: (i, 0) for i in range(11)}, 11: (7, 1), 12: (8, 1), 13: (11, 0),
                    14: (12, 0), 15: (13, 0)}
SWIZZLE_SPAN = {0: 0, 1: 32, 2: 64, 3: 128, 4: 128, 5: 128, 6: 128}
CORNER_BITS = {3: 16, 4: 8, 5: 5}


def _bits(x: int, n: int) -> int:
    return x & ((1 << n) - 1)


def _signed(x: int, n: int) -> int:
    x = _bits(x, n)
    return x - (1 << n) if x >> (n - 1) else x


def encode(*, mode: int, dtype: str, rank: int, address: int, dims, strides, box, estr,
           interleave: int, swizzle: int, l2: int, oob: int, element_bytes: int,
           lower=(), upper=(), channels: int = 0, pixels: int = 0) -> bytes:
    """The driver's 128 bytes for checked arguments (machine.tensormap validates them)."""
    code, tf32 = ELEMTYPE_CODE[dtype]
    w = [0] * 32
    w[0], w[1] = address & 0xFFFFFFFF, (address >> 32) & 0xFFFFFFFF
    # swizzle 4-6 (the 128B_ATOM_* enums): the 128B field plus the atomicity code
    field, atom = (3, swizzle - 3) if swizzle >= 4 else (swizzle, 0)
    w[2] = (mode | (rank - 1) << 4 | code << 7 | interleave << 11 | field << 13 | oob << 15
            | tf32 << 16 | l2 << 17 | atom << 19)
    for i, s in enumerate(strides):
        s >>= 4
        w[3 + i] = s & 0xFFFFFFFF
        w[7] |= _bits(s >> 32, 4) << 4 * i
    for i, d in enumerate(dims):
        w[8 + i] = _bits(d - 1, 32)
    for i, e in enumerate(estr):
        w[13] |= _bits(e - 1, 3) << 3 * i
    if mode == 0:
        w[13] |= _bits(box[0] - 1, 8) << 24
        for i, b in enumerate(box[1:]):
            w[14] |= _bits(b - 1, 8) << 8 * i
        elems = math.prod(b // e for b, e in zip(box, estr))   # the driver rounds down here
    else:
        w[13] |= _bits(channels - 1, 8) << 24
        n = CORNER_BITS[rank]
        for i, (lo, up) in enumerate(zip(lower, upper)):
            w[14] |= _bits(lo, n) << n * i | _bits(up, n) << 16 + n * i
        w[15] = pixels - 1
        elems = channels * pixels
    w[16] = _bits(elems * element_bytes, 32)
    w[18] = 8 * SWIZZLE_SPAN[swizzle] if swizzle else 16
    return struct.pack("<32I", *w)


def decode(blob: bytes) -> dict:
    """The fields a map's bytes hold (what the TMA unit reads), as the natural values of
    machine.tensormap.TensorMap: counts, not count - 1."""
    w = struct.unpack("<32I", blob)
    rank = (w[2] >> 4 & 7) + 1
    code, tf32 = w[2] >> 7 & 15, w[2] >> 16 & 1
    out = {
        "mode": w[2] & 1, "rank": rank, "code": (code, tf32),
        "dtype": CODE_ELEMTYPE.get((code, tf32)),
        "address": w[0] | w[1] << 32,
        "interleave": w[2] >> 11 & 3, "oob": w[2] >> 15 & 1,
        # the CUtensorMapSwizzle enum: 0-3, or 4-6 for the 128B swizzle with a wider atomicity
        "swizzle": (w[2] >> 13 & 3) + ((w[2] >> 19 & 3) if (w[2] >> 13 & 3) == 3 else 0),
        "atomicity": w[2] >> 19 & 3,
        "l2": w[2] >> 17 & 3,
        "strides": tuple((w[3 + i] | (w[7] >> 4 * i & 15) << 32) << 4 for i in range(rank - 1)),
        "dims": tuple(w[8 + i] + 1 for i in range(rank)),
        "estr": tuple((w[13] >> 3 * i & 7) + 1 for i in range(rank)),
    }
    if out["mode"] == 0:
        out["box"] = (((w[13] >> 24) & 255) + 1,) + tuple(
            (w[14] >> 8 * i & 255) + 1 for i in range(rank - 1))
    else:
        n = CORNER_BITS.get(rank)
        out["channels"] = ((w[13] >> 24) & 255) + 1
        out["pixels"] = w[15] + 1
        out["lower"] = tuple(_signed(w[14] >> n * i, n) for i in range(rank - 2)) if n else ()
        out["upper"] = tuple(_signed(w[14] >> 16 + n * i, n) for i in range(rank - 2)) if n else ()
    return out


# ------------------------------------------------------------------------ tensormap.replace
VECTOR_FIELDS = ("box_dim", "global_dim", "global_stride", "element_stride")
FIELDS = ("global_address", "rank", "elemtype", "interleave_layout", "swizzle_mode",
          "fill_mode", "swizzle_atomicity") + VECTOR_FIELDS


def replace(blob: bytes, field: str, value: int, ordinal: int | None = None) -> bytes:
    """tensormap.replace.tile.<field> on the 128 bytes, as the H200 writes it: value - 1 into
    the box / global dim and element stride fields (masked to the field), the stride >> 4 (36
    bits), rank new_val as given (the ISA's rank - 1), the codes of .field3 into their bits.
    Nothing else changes (words 16 and 18 keep the driver's values). Codes this table does not
    place raise KeyError (the caller names them)."""
    w = list(struct.unpack("<32I", blob))
    v = int(value)
    if field == "global_address":
        w[0], w[1] = v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF
    elif field == "rank":
        w[2] = w[2] & ~(7 << 4) | _bits(v, 3) << 4
    elif field == "box_dim":
        if ordinal == 0:
            w[13] = w[13] & 0x00FFFFFF | _bits(v - 1, 8) << 24
        else:
            s = 8 * (ordinal - 1)
            w[14] = w[14] & ~(0xFF << s) | _bits(v - 1, 8) << s
    elif field == "global_dim":
        w[8 + ordinal] = _bits(v - 1, 32)
    elif field == "global_stride":
        s = _bits(v >> 4, 36)
        w[3 + ordinal] = s & 0xFFFFFFFF
        w[7] = w[7] & ~(15 << 4 * ordinal) | (s >> 32) << 4 * ordinal
    elif field == "element_stride":
        w[13] = w[13] & ~(7 << 3 * ordinal) | _bits(v - 1, 3) << 3 * ordinal
    elif field == "elemtype":
        code, tf32 = REPLACE_ELEMTYPE[v]
        # the tf32 codes set bit 16; the others leave it as it was (measured: a TFLOAT32 map
        # replaced to .u8 keeps the bit)
        w[2] = w[2] & ~(15 << 7) | code << 7 | tf32 << 16
    elif field == "interleave_layout":
        if v not in (0, 1, 2):
            raise KeyError(v)
        w[2] = w[2] & ~(3 << 11) | v << 11
    elif field == "swizzle_mode":
        if v not in (0, 1, 2, 3):
            raise KeyError(v)
        w[2] = w[2] & ~(3 << 13) | v << 13
    elif field == "swizzle_atomicity":
        # new_val 0 16B, 1 32B, 2 32B + 8B flip, 3 64B (PTX ISA tensormap new_val validity);
        # bits 19-20 are ptxsim's placement (module docstring)
        if v not in (0, 1, 2, 3):
            raise KeyError(v)
        w[2] = w[2] & ~(3 << 19) | v << 19
    elif field == "fill_mode":
        if v not in (0, 1):
            raise KeyError(v)
        w[2] = w[2] & ~(1 << 15) | v << 15
    else:
        raise KeyError(field)
    return struct.pack("<32I", *(x & 0xFFFFFFFF for x in w))
