"""The inputs of the tma_modes capture, regenerated identically on the device and in the tests
(numpy only; a fixed seed per case).

REDUCE_CASES: op -> (element dtype name, old, new); 512 bytes each, specials first (subnormals,
    signed zeros, infinities, NaNs, rounding ties), then seeded values.
TENSOR_REDUCE_CASES: name -> (map dtype, op, coords); global 64 x 128 f32 (`tensor_reduce_data`),
    box 32 x 32 with SWIZZLE_128B.
IM2COL_CASES: name -> (lower (w, h), upper (w, h), traversal strides (w, h), pixels per column,
    channels per pixel, coordinates (c, w, h, n), im2col offsets (w, h), swizzle); the tensor is
    N=3, H=14, W=9, C=64 f16 (`im2col_data`).
"""
from __future__ import annotations

import numpy as np

F32_SPECIAL = np.array([
    0x00000001, 0x00000001,      # smallest subnormals: sum subnormal (kept, or flushed to 0)
    0x00400000, 0x00400000,      # subnormal + subnormal = normal 2^-126
    0x807FFFFF, 0x00000000,      # -subnormal + 0
    0x80000000, 0x00000000,      # -0 + +0
    0x80000000, 0x80000000,      # -0 + -0
    0x7F800000, 0xFF800000,      # inf + -inf -> NaN
    0x7FC01234, 0x3F800000,      # NaN payload + 1
    0x3F800000, 0x7FA00001,      # 1 + signalling NaN
    0x4B800000, 0x3F800000,      # 2^24 + 1: a tie, to even
    0x4B800001, 0x3F800000,      # (2^24 + 2) + 1: a tie, to even (up)
    0x7F7FFFFF, 0x7F7FFFFF,      # overflow -> inf
    0x00800000, 0x80000001,      # 2^-126 - min subnormal: subnormal result
], np.uint32)
F16_SPECIAL = np.array([
    0x0001, 0x0001, 0x0200, 0x0200, 0x8001, 0x0000, 0x8000, 0x0000, 0x8000, 0x8000,
    0x7C00, 0xFC00, 0x7E12, 0x3C00, 0x3C00, 0x7D01, 0x6400, 0x3C00, 0x6401, 0x3C00,
    0x7BFF, 0x7BFF, 0x0400, 0x8001, 0x3C00, 0x1000, 0x3C01, 0x1000,
], np.uint16)
BF16_SPECIAL = np.array([
    0x0001, 0x0001, 0x0040, 0x0040, 0x8001, 0x0000, 0x8000, 0x0000, 0x8000, 0x8000,
    0x7F80, 0xFF80, 0x7FC1, 0x3F80, 0x3F80, 0x7FA1, 0x4380, 0x3F80, 0x4381, 0x3F80,
    0x7F7F, 0x7F7F, 0x0080, 0x8001, 0x3F80, 0x3B80, 0x3F81, 0x3B80,
], np.uint16)

# op -> element dtype of the instruction type
REDUCE_OPS = {
    "add.u32": "uint32", "add.u64": "uint64", "min.s32": "int32", "max.u32": "uint32",
    "max.s64": "int64", "xor.b32": "uint32", "and.b64": "uint64", "inc.u32": "uint32",
    "dec.u32": "uint32", "add.f32": "float32", "add.f64": "float64",
    "add.noftz.f16": "float16", "add.noftz.bf16": "bfloat16", "min.f16": "float16",
    "max.bf16": "bfloat16",
}


def _bits(dtype: str) -> type:
    return {"uint32": np.uint32, "int32": np.uint32, "float32": np.uint32, "uint64": np.uint64,
            "int64": np.uint64, "float64": np.uint64, "float16": np.uint16,
            "bfloat16": np.uint16}[dtype]


def reduce_case(op: str):
    """(dtype, old bits, new bits) of one REDUCE launch (512 bytes each)."""
    dtype = REDUCE_OPS[op]
    bt = _bits(dtype)
    n = 512 // np.dtype(bt).itemsize
    rng = np.random.default_rng(sum(map(ord, op)))
    if op.startswith(("inc", "dec")):
        old, new = rng.integers(0, 40, n), rng.integers(0, 40, n)
        old[:4], new[:4] = (0, 39, 7, 0), (0, 39, 7, 0)
        return dtype, old.astype(bt), new.astype(bt)
    if dtype == "float32":
        v = (rng.standard_normal(n) * 4).astype(np.float32).view(np.uint32)
        spec = F32_SPECIAL
    elif dtype == "float64":
        v = (rng.standard_normal(n) * 4).view(np.uint64)
        spec = np.array([1, 1, 0x8000000000000000, 0, 0x7FF0000000000000, 0xFFF0000000000000,
                         0x7FF8000000001234, 0x3FF0000000000000], np.uint64)
    elif dtype in ("float16", "bfloat16"):
        import ml_dtypes
        dt = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
        v = (rng.standard_normal(n) * 4).astype(dt).view(np.uint16)
        spec = F16_SPECIAL if dtype == "float16" else BF16_SPECIAL
    else:
        v = rng.integers(0, np.iinfo(bt).max, n, dtype=np.uint64, endpoint=True).astype(bt)
        spec = np.array([], bt)
    old, new = v.copy(), rng.permutation(v)
    k = spec.size // 2
    old[:k], new[:k] = spec[0::2], spec[1::2]
    return dtype, old.astype(bt), new.astype(bt)


TENSOR_REDUCE_CASES = {
    "add_f32": ("float32", "add", (32, 8)),
    "add_f32_clipped": ("float32", "add", (96, 60)),
    "add_f32_ftz": ("float32_ftz", "add", (32, 8)),
    "min_f32": ("float32", "min", (0, 0)),
    "max_f32_ftz": ("float32_ftz", "max", (0, 0)),
}


def tensor_reduce_data():
    """(global 64 x 128 float32 bits, the 8 KB shared-memory source words): seeded normals
    with subnormals, zeros and a NaN salted in."""
    rng = np.random.default_rng(2026)
    g = (rng.standard_normal((64, 128)) * 4).astype(np.float32).view(np.uint32)
    s = (rng.standard_normal(2048) * 4).astype(np.float32).view(np.uint32)
    g[::7, ::5] = rng.integers(1, 0x007FFFFF, g[::7, ::5].shape)          # subnormals
    s[::11] = rng.integers(0x80000001, 0x807FFFFF, s[::11].shape, dtype=np.uint64)
    s[5::13] = 0x80000000
    s[100] = 0x7FC00000
    return g, s


IM2COL_CASES = {
    "example1": ((-1, -1), (-1, -1), (1, 1), 64, 8, (8, 7, 4, 0), (0, 0), "none"),
    "offsets": ((0, 0), (-2, -2), (1, 1), 64, 8, (0, 3, 4, 0), (2, 2), "none"),
    "stride2": ((-1, -1), (-1, -1), (2, 2), 32, 16, (16, 5, 5, 0), (1, 1), "none"),
    "next_n": ((0, 0), (0, 0), (1, 1), 128, 8, (0, 6, 13, 0), (0, 0), "none"),
    "swizzle128": ((-1, -1), (0, 0), (1, 1), 32, 64, (0, 2, 3, 1), (1, 0), "128B"),
    "corner_start": ((-2, -1), (1, 0), (1, 1), 96, 8, (56, -2, -1, 2), (1, 1), "none"),
}
IM2COL_SHAPE = (3, 14, 9, 64)          # N, H, W, C


def im2col_data():
    rng = np.random.default_rng(97)
    return rng.integers(1, 2**16, IM2COL_SHAPE, dtype=np.uint64).astype(np.uint16)
