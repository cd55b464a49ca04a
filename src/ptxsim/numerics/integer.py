"""Integer MMA (kind::i8, warp-level .s8/.u8/.s4/.u4): exact products, exact s32 accumulation.

D = A*B + C computed exactly, then either wrapped to 32 bits (default) or, with .satfinite,
clamped to [MIN_INT32, MAX_INT32] (9.7.14 warp-level mma "Integer operations"; tcgen05 instruction
descriptor bit 3 "Saturate for integer types", Table 42).
"""
from __future__ import annotations

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def int_mma(a: np.ndarray, b: np.ndarray, c: np.ndarray, satfinite: bool) -> np.ndarray:
    """a (M, K), b (K, N), c (M, N) int64 values -> D bits (uint32)."""
    K = a.shape[1]
    bound = K * int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0))
    if bound < 2 ** 53:                   # float64 BLAS is exact below 2^53
        acc = np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    else:
        acc = a @ b
    d = acc + c
    if satfinite:
        d = np.clip(d, INT32_MIN, INT32_MAX)
    return (d & 0xFFFFFFFF).astype(np.uint32)
