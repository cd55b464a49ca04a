"""Adversarial operands for the differential tests of the executor fast paths
(tests/isa/test_fast_paths_*.py): every fast kernel must give exactly the general function's
bits, dtype and shape."""
from __future__ import annotations

import numpy as np

from ptxsim.isa.base import semantics

F32_SPECIALS = np.array([
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
    0x80800000, 0x00800001, 0x00FFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
    0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x3F800000,
    0xBF800000, 0x3F800001, 0x3F7FFFFF, 0x4B000000, 0x4B7FFFFF, 0x4F000000, 0xCF000000,
    0x4F800000, 0x3F000000, 0x3FC00000, 0x40200000, 0xBF000000, 0xBFC00000, 0x33800000,
    0x477FE000, 0x477FF000, 0x477FEFFF, 0x38800000, 0x387FC000, 0x33000000, 0x33000001,
    0x4EFFFFFF, 0xCF000001, 0x4F7FFFFF, 0x0C800000, 0x1F800000, 0x2F800000,
], np.uint32)
INT32_SPECIALS = np.array([0, 1, 2, 31, 32, 33, 63, 64, 65, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                           0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF],
                          np.uint32)


def pairs(specials: np.ndarray, k: int = 2) -> list[np.ndarray]:
    """Every k-tuple of the special values (the cross product), as k arrays."""
    grids = np.meshgrid(*([specials] * k), indexing="ij")
    return [g.ravel().copy() for g in grids]


def f32_random(rng, n: int) -> np.ndarray:
    """Random f32 bits of every exponent, a quarter of them subnormal or near 2^-126."""
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    low = rng.random(n) < 0.25
    u[low] = (u[low] & np.uint32(0x80FFFFFF))            # exponent field 0 or 1
    return u


def f32_near(rng, a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Operands whose exponent is below a's by lo..hi, with few mantissa bits set (exact ties
    and near-ties of a + b), of either sign."""
    e = ((a >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    d = rng.integers(lo, hi + 1, a.size)
    e2 = np.clip(e - d, 0, 254).astype(np.uint32)
    mant = np.where(rng.random(a.size) < 0.5, 0, rng.integers(0, 1 << 23, a.size)).astype(
        np.uint32) & np.uint32(0x7F000F)
    sign = (rng.integers(0, 2, a.size).astype(np.uint32) << np.uint32(31))
    return sign | (e2 << np.uint32(23)) | mant


def f32_scaled(rng, n: int, emin: int, emax: int) -> np.ndarray:
    """f32 with a biased exponent field in [emin, emax], random mantissa and sign."""
    e = rng.integers(emin, emax + 1, n).astype(np.uint32)
    m = rng.integers(0, 1 << 23, n).astype(np.uint32)
    s = rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31)
    return s | (e << np.uint32(23)) | m


def check_same(opcode: str, *args) -> None:
    """The fast kernel of `opcode` runs on `args` (the guard lets them through) and gives
    exactly the general function's results."""
    f = semantics(opcode)
    assert hasattr(f, "kernel"), f"{opcode} has no fast path"
    args = [np.ascontiguousarray(a) for a in args]
    fast = f(*args)
    ref = f.general(*[a.copy() for a in args])
    fast = fast if isinstance(fast, tuple) else (fast,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    assert len(fast) == len(ref)
    for x, y in zip(fast, ref):
        assert x.dtype == y.dtype and x.shape == y.shape, (opcode, x.dtype, y.dtype)
        bad = np.flatnonzero(x != y)
        assert bad.size == 0, (
            f"{opcode}: {bad.size} mismatches, first at {bad[0]}: operands "
            f"{[hex(int(a[bad[0]])) for a in args]} fast {int(x[bad[0]]):#x} "
            f"general {int(y[bad[0]]):#x}")
