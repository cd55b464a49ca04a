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
