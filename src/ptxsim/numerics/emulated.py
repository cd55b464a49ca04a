"""MMAs that ptxas expands into other instructions (params.EMULATED), computed as the expansion.

Measured on sm_90 (H200, ptxas 13.0; SASS in tests/data/hardware/mma_sync/mma_sync_sm90_sass.txt): warp-level
``mma.sync`` / ``mma.sp`` with .e4m3/.e5m2 has no fp8 tensor-core instruction.  Each 32-element
K chunk (m16n8k32, or the 32 stored elements of m16n8k64 .sp) becomes

    lo = F2FP.F16.E4M3.UNPACK_B(low 16-bit halves)      # elements k % 4 in {0, 1}
    S  = HMMA(lo_a, lo_b, 0)                             # fused f16 block, zero accumulator
    hi = F2FP...(high halves)                            # elements k % 4 in {2, 3}
    S  = HMMA(hi_a, hi_b, S)                             # continues from S
    D  = FADD(C, S)   (.f32)   |   HADD2(C, S)  (.f16)  # IEEE round to nearest, C outside

so D = C +_RN S, with S the sm_90 f16 model (fdpa.fused, F = 25, L = 16, RZ to f32 / RNE to
f16) over the two halves in turn.  The conversion to f16 is exact (every e4m3 / e5m2 value, NaN
and Inf included, is an f16 value); it matters because an fp8 subnormal is an f16 normal number,
which moves the product's alignment exponent.
"""
from __future__ import annotations

import numpy as np

from ptxsim.numerics import fdpa
from ptxsim.numerics.params import Params
from ptxsim.numerics.unpack import decode, unpack

_F16_OF: dict[str, np.ndarray] = {}
_NAN = {"f32": np.uint32(0x7FFFFFFF), "f16": np.uint16(0x7FFF)}   # canonical NaN of FADD/HADD2
_FLOAT = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16)}


def to_f16(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Raw bits of an 8-bit float -> the f16 bits of the same value (exact), via a table."""
    t = _F16_OF.get(fmt)
    if t is None:
        v = decode(np.arange(256, dtype=np.uint32), fmt).value
        with np.errstate(invalid="ignore"):
            t = _F16_OF[fmt] = v.astype(np.float16).view(np.uint16).astype(np.uint32)
    return t[bits.astype(np.intp)]


def halves(K: int, chunk: int) -> list[list[np.ndarray]]:
    """Per chunk of K, the K indices of each emitted instruction in issue order: k % 4 < 2,
    then the rest (the low / high 16-bit halves of the fp8 registers)."""
    out = []
    for c0 in range(0, K, chunk):
        k = np.arange(c0, min(c0 + chunk, K))
        out.append([h for h in (k[(k - c0) % 4 < 2], k[(k - c0) % 4 >= 2]) if h.size])
    return out


def add_rn(c_bits: np.ndarray, s_bits: np.ndarray, dtype: str) -> np.ndarray:
    """FADD / HADD2: C + S rounded to nearest even in D's format, canonical NaN.  numpy's
    float16 add rounds via float32, which is exact here (24 >= 2*11 + 2, no double rounding)."""
    ft, ut = _FLOAT[dtype]
    with np.errstate(over="ignore", invalid="ignore"):
        d = c_bits.astype(ut).view(ft) + s_bits.astype(ut).view(ft)
    out = d.view(ut).copy()
    out[np.isnan(d)] = _NAN[dtype]
    return out


def mma(A: np.ndarray, B: np.ndarray, C: np.ndarray, p: Params, atype: str, btype: str,
        dtype: str, rows: bool) -> np.ndarray:
    """A (M, K) / B (K, N) (dense), or A (R, K) / B (R, K, N) with rows=True (a B per row);
    C (M or R, N) raw bits in D's format (C and D share their type here).  Returns D bits."""
    A16, B16 = to_f16(A, atype), to_f16(B, btype)
    inner = p.inner
    cdt = np.float32 if fdpa.products_fit_f32(p.via, p.via) else np.float64
    d = np.asarray(C)
    for parts in halves(A.shape[-1], p.chunk):
        s = np.zeros(C.shape, _FLOAT[dtype][1])
        for idx in parts:
            ua = unpack(A16[..., idx], p.via)
            if rows:
                ub = unpack(B16[:, idx], p.via)
                s = fdpa.fused_rows(ua, ub, unpack(s, dtype), inner, inner.rho, dtype)
            else:
                ub = unpack(B16[idx], p.via)
                s = fdpa.fused(ua, ub, unpack(s, dtype), inner, inner.rho, dtype, cdt)
        d = add_rn(d, s, dtype)
    return d
