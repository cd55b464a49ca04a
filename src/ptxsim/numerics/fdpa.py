"""Fused dot-product-add: the tensor-core arithmetic, whole tiles at a time.

One algorithm (FACTS.md section 1, MMA-Sim ``fdpa.py``), per fused block of L terms along K:

1. every product a_k*b_k is exact; its alignment exponent is e_a + e_b (normalised exponents,
   emin for subnormals; plus the scale exponents for block-scaled kinds);
2. emax = max over the products, c's exponent, and ``e_zero`` for every zero term (zero product or
   zero c);
3. each term (and c) is truncated toward zero to the grid 2^(emax - F);
4. the truncated terms are summed exactly and rounded once (rounding.py);
5. the rounded result is the c of the next block.

The grouped variant (kind::mxf4 / mxf4nvf4) first sums groups of G = 16 products exactly,
multiplies each group sum by SF_A*SF_B, and aligns the group terms on the scale exponents.

Exactness without big integers: a truncated term is an integer below 2^(F+2) (2^(F+12) for a
group term), and at most L+1 of them are added, so float64 holds every term and every partial
sum exactly.  The products are formed in float32 when the formats allow (<= 24 significand bits,
normal range) and in float64 otherwise; scaling by 2^(F-emax) is a power of two, so it is exact
whenever the result is >= 1, and anything below 1 truncates to 0 anyway.

Layout: K-major (L, M, N) arrays, so the reduction over K is L vector adds.
"""
from __future__ import annotations

import numpy as np

from ptxsim.numerics.params import Params
from ptxsim.numerics.rounding import round_exact
from ptxsim.numerics.unpack import ZERO_EXP, Unpacked, unpack
from ptxsim.types.formats import FORMATS


def _products_fit_f32(atype: str, btype: str) -> bool:
    """True if every product of two finite elements is exact and normal in float32."""
    fa, fb = FORMATS[atype], FORMATS[btype]
    sig_bits = fa.mbits + 1 + fb.mbits + 1
    emin = (fa.emin - fa.mbits) + (fb.emin - fb.mbits)          # smallest nonzero product
    emax = (2 ** fa.ebits - fa.bias) + (2 ** fb.ebits - fb.bias)  # bound on the largest
    return sig_bits <= 24 and emin >= -126 and emax <= 127


def _emax(ae, be, az, bz, c: Unpacked, e_zero: int) -> np.ndarray:
    """Largest alignment exponent per output: products, c, and e_zero for zero terms.

    ae (L, M), be (L, N) int exponents (ZERO_EXP for zero/special), az/bz zero masks.
    """
    L = ae.shape[0]
    e = (ae.astype(np.int16)[:, :, None] + be.astype(np.int16)[:, None, :]).max(axis=0)
    e = e.astype(np.int32)
    # number of nonzero products per output, exact in float32 (counts <= L)
    nonzero = (~az).T.astype(np.float32) @ (~bz).astype(np.float32)
    has_zero_term = (nonzero < L) | c.zero
    e = np.where(has_zero_term, np.maximum(e, e_zero), e)
    return np.maximum(e, c.exp)


def _finish(terms_sum: np.ndarray, c: Unpacked, emax: np.ndarray, p: Params, rho: str):
    """Add the truncated c, scale back, round once.  Returns D bits."""
    shift = (p.F - emax).astype(np.int32)
    tc = np.trunc(np.ldexp(c.value, shift))
    with np.errstate(invalid="ignore"):
        total = terms_sum + tc                       # exact: integers < 2^53
    return round_exact(np.ldexp(total, -shift), rho)


def _pow2(shift: np.ndarray, dtype) -> np.ndarray:
    """2^shift in `dtype`; float32 clamps to its normal range (see module doc: only exact zeros
    and infinities ever meet a clamped factor)."""
    if dtype == np.float32:
        shift = np.clip(shift, -126, 127)
    return np.ldexp(np.ones(shift.shape, dtype), shift.astype(np.int32))


def fused(a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str, dtype_out: str,
          compute_dtype) -> np.ndarray:
    """Plain (and scale-folded) fused model.  a (M, K), b (K, N), c (M, N).  Returns D bits."""
    K = a.value.shape[1]
    av_all = a.value.T.astype(compute_dtype)            # (K, M)
    bv_all = b.value.astype(compute_dtype)              # (K, N)
    aeT, azT = a.exp.T, a.zero.T
    bits = None
    for k0 in range(0, K, p.L):
        k1 = min(k0 + p.L, K)
        if bits is not None:
            c = unpack(bits, dtype_out)
        emax = _emax(aeT[k0:k1], b.exp[k0:k1], azT[k0:k1], b.zero[k0:k1], c, p.e_zero)
        with np.errstate(invalid="ignore", over="ignore"):
            x = av_all[k0:k1, :, None] * bv_all[k0:k1, None, :]      # exact products
            x *= _pow2(p.F - emax, compute_dtype)[None]
            np.trunc(x, out=x)
            s = x.sum(axis=0, dtype=np.float64)
        bits = _finish(s, c, emax, p, rho)
    return bits


def grouped(a: Unpacked, b: Unpacked, c: Unpacked, sa: Unpacked, sb: Unpacked, block: int,
            p: Params, rho: str) -> np.ndarray:
    """kind::mxf4 / mxf4nvf4: exact group sums of G products, scaled, then fused with c."""
    K = a.value.shape[1]
    G = p.G
    av = a.value.astype(np.float32)
    bv = b.value.astype(np.float32)
    anz = (~a.zero).astype(np.float32)
    bnz = (~b.zero).astype(np.float32)
    bits = None
    for k0 in range(0, K, p.L):
        k1 = min(k0 + p.L, K)
        if bits is not None:
            c = unpack(bits, "f32")
        gsum, gexp, gscale = [], [], []
        for g0 in range(k0, k1, G):
            r = slice(g0, g0 + G)
            s = g0 // block                                   # the scale this group uses
            gsum.append(av[:, r] @ bv[r, :])                  # exact: multiples of 1/4, < 2^10
            all_zero = (anz[:, r] @ bnz[r, :]) == 0
            scale_zero = sa.zero[:, s, None] | sb.zero[None, s, :]
            e = sa.exp[:, s, None] + sb.exp[None, s, :]
            gexp.append(np.where(all_zero | scale_zero, p.e_zero, e))
            gscale.append(sa.value[:, s, None] * sb.value[None, s, :])
        gexp = np.stack(gexp)
        emax = np.maximum(gexp.max(axis=0), np.where(c.zero, p.e_zero, c.exp))
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.stack(gsum).astype(np.float64) * np.stack(gscale)   # exact: <= 21 bits
            x *= np.ldexp(1.0, (p.F - emax).astype(np.int32))[None]
            np.trunc(x, out=x)
            s = x.sum(axis=0)
        bits = _finish(s, c, emax, p, rho)
    return bits
