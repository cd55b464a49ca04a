"""The single rounding at the end of each fused block (FACTS section 1 step 3).

Input: the exact block result as float64 (exact because every term was truncated to a grid of at
most 53 bits, see fdpa.py).  Output: raw bits of D.

* "RZ-FP32":  toward zero to f32, subnormals kept (grid 2^-149);
* "RZ-E8M13": toward zero to 13 fraction bits (sm_89/sm_90 fp8), then stored as f32;
* "RNE-FP16": to nearest even to f16, subnormals kept (grid 2^-24).
Overflow gives +-Inf (as MMA-Sim's model, which converts the truncated value with an ordinary cast);
a NaN becomes the canonical 0x7FFFFFFF / 0x7FFF; a zero result is +0 (FACTS section 1 step 5,
MMA-Sim adds +0.0 to every result).
"""
from __future__ import annotations

import numpy as np

_SPEC = {  # rho -> (fraction bits, emin of the output grid, numpy dtype, uint view, canonical NaN)
    "RZ-FP32": (23, -126, np.float32, np.uint32, 0x7FFFFFFF),
    "RZ-E8M13": (13, -126, np.float32, np.uint32, 0x7FFFFFFF),
    "RNE-FP16": (10, -14, np.float16, np.uint16, 0x7FFF),
}


def round_exact(v: np.ndarray, rho: str) -> np.ndarray:
    """Round exact float64 values `v` to D's format; return D's raw bits."""
    if rho == "RZ-FP32":
        return _rz_f32(v)
    frac, emin, dt, ut, qnan = _SPEC[rho]
    with np.errstate(over="ignore", invalid="ignore"):
        _, e = np.frexp(v)                       # |v| = m * 2^e, m in [0.5, 1)
        q = np.maximum(e - 1, emin) - frac       # exponent of the last kept bit
        scaled = np.ldexp(v, -q)
        kept = np.rint(scaled) if rho.startswith("RNE") else np.trunc(scaled)
        out = np.ldexp(kept, q).astype(dt) + dt(0.0)   # exact unless it overflows to inf; -0 -> +0
    bits = out.view(ut).copy()
    bits[np.isnan(v)] = qnan
    return bits


_KEEP_24 = np.uint64(~((1 << 29) - 1) & 0xFFFFFFFFFFFFFFFF)   # float64 bits kept by an f32


def _rz_f32(v: np.ndarray) -> np.ndarray:
    """RZ to f32, the fast way: clearing the 29 low fraction bits of a float64 truncates it to
    24 significant bits (exact in f32 from 2^-126 up); the f32 subnormal range, where the grid
    is 2^-149 instead, is redone with the general formula."""
    with np.errstate(over="ignore", invalid="ignore"):
        w = (v.view(np.uint64) & _KEEP_24).view(np.float64)
        small = np.abs(v) < 2.0 ** -126
        if small.any():
            w[small] = np.ldexp(np.trunc(np.ldexp(v[small], 149)), -149)
        out = w.astype(np.float32)
        out += np.float32(0.0)                    # -0 -> +0
    bits = out.view(np.uint32)
    nan = np.isnan(v)
    if nan.any():
        bits[nan] = 0x7FFFFFFF
    return bits
