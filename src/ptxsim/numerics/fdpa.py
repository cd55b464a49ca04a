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

Exactness without big integers.  Work in grid units (multiples of 2^(emax - F)): a truncated
product is an integer of magnitude < 2^(F+2) (a group term < 2^(F+12)), at most 65 of them are
added, so every term and partial sum fits a float64 exactly, and 16 product terms (F = 25) fit an
int32.  Products are formed in float32 when the formats allow (<= 24 significand bits, normal
range) and in float64 otherwise; scaling by 2^(F - emax) is a power of two, so a scaled product
is exact whenever it is >= 1, and anything below 1 truncates to 0 anyway.

Layout: K-major (L, M, N) arrays, so reductions over K are vector adds of whole (M, N) planes.
"""
from __future__ import annotations

import threading

import numpy as np

from ptxsim.numerics.params import Params
from ptxsim.numerics.rounding import round_exact
from ptxsim.numerics.unpack import ZERO_EXP, Unpacked, unpack
from ptxsim.types.formats import FORMATS

_local = threading.local()


def _scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread work array reused across calls.  Fresh multi-megabyte arrays cost more in
    page faults than the arithmetic done in them (measured: 2.1 ms vs 0.3 ms per f16 tile)."""
    pool = _local.__dict__.setdefault("pool", {})
    size = int(np.prod(shape))
    buf = pool.get((name, np.dtype(dtype)))
    if buf is None or buf.size < size:
        buf = pool[(name, np.dtype(dtype))] = np.empty(size, dtype)
    return buf[:size].reshape(shape)


# A block goes elementwise over the whole tile when more than this fraction of its outputs need
# truncation; below it, one float64 matrix product plus a gathered elementwise pass.
FULL_TILE_FRACTION = 0.25

P_WEIGHT = 7        # weights 2^(7e): a sum of up to 64 of them never reaches the next 2^7 step


def products_fit_f32(atype: str, btype: str) -> bool:
    """True if every product of two finite elements is exact and normal in float32."""
    fa, fb = FORMATS[atype], FORMATS[btype]
    sig_bits = fa.mbits + 1 + fb.mbits + 1
    emin = (fa.emin - fa.mbits) + (fb.emin - fb.mbits)          # smallest nonzero product
    emax = (2 ** fa.ebits - fa.bias) + (2 ** fb.ebits - fb.bias)  # bound on the largest
    return sig_bits <= 24 and emin >= -126 and emax <= 127


# ---- step 2: the largest exponent ----------------------------------------------------------

def _prod_emax(ae, be, anz, bnz):
    """max_k (ae[k, i] + be[k, j]) over the nonzero finite products, with BLAS.

    Each product exponent e becomes the weight 2^(7 (e - alpha_i - beta_j)) (alpha, beta: row and
    column maxima), so sum_k weight = 2^(7 delta) * [1, 64] and floor(log2 / 7) = delta.  Rounding
    cannot cross 2^(7 delta) or 2^(7 delta + 7) (sums of nonnegative terms).  Outputs whose largest
    weight underflows a double (delta < -153) are redone exactly, elementwise.
    ae (L, M), be (L, N) int32; anz / bnz: nonzero finite masks.
    Returns (emax or ZERO_EXP where no such product, count of such products).
    """
    alpha = np.where(anz, ae, ZERO_EXP).max(axis=0, initial=ZERO_EXP)
    beta = np.where(bnz, be, ZERO_EXP).max(axis=0, initial=ZERO_EXP)
    with np.errstate(over="ignore"):                 # masked-out entries may overflow
        wa = np.where(anz, np.ldexp(1.0, P_WEIGHT * (ae - alpha[None, :])), 0.0)
        wb = np.where(bnz, np.ldexp(1.0, P_WEIGHT * (be - beta[None, :])), 0.0)
    w = wa.T @ wb
    _, e = np.frexp(w)
    emax = (alpha[:, None] + beta[None, :]) + np.floor_divide(e - 1, P_WEIGHT)
    if anz.all() and bnz.all():
        count = None
    else:
        count = anz.T.astype(np.float32) @ bnz.astype(np.float32)
        emax[count == 0] = ZERO_EXP
    # the largest weight underflows only if a product sits > 1074/7 binades below alpha + beta
    spread = (alpha - np.where(anz, ae, 4000).min(axis=0, initial=4000)).max(initial=0) + \
        (beta - np.where(bnz, be, 4000).min(axis=0, initial=4000)).max(initial=0)
    if spread * P_WEIGHT < 1000:
        return emax, count
    lost = (w == 0) if count is None else (w == 0) & (count > 0)
    if lost.any():
        i, j = np.nonzero(lost)
        pe = np.where(anz[:, i] & bnz[:, j], ae[:, i] + be[:, j], ZERO_EXP)
        emax[i, j] = pe.max(axis=0)
    return emax, count


def _emax(ae, be, az, bz, asp, bsp, c: Unpacked, e_zero: int):
    """Largest alignment exponent per output: products, c, and e_zero for zero terms.
    ae, az, asp: (L, M) exponent / zero / special of A's block; be, bz, bsp: (L, N).
    Returns (emax, largest product exponent alone)."""
    L = ae.shape[0]
    e, count = _prod_emax(ae, be, ~(az | asp), ~(bz | bsp))
    if count is None:                                  # no zero and no special element
        has_zero_term = c.zero
    else:
        if asp.any() or bsp.any():                    # products with an Inf/NaN are not zeros
            count = count + asp.T.astype(np.float32) @ (~bz).astype(np.float32) + \
                (~az & ~asp).T.astype(np.float32) @ bsp.astype(np.float32)
        has_zero_term = (count < L) | c.zero
    emax = np.where(has_zero_term, np.maximum(e, e_zero), e)
    return np.maximum(emax, c.exp), e


# ---- steps 3-4: truncate, sum, round -------------------------------------------------------

def _sum_units(x: np.ndarray, safe: int, finite: bool = False) -> np.ndarray:
    """Sum truncated terms (L, M, N) -- already scaled to grid units -- exactly.

    Finite terms: convert to int32 (this conversion truncates toward zero), add pairwise in int32
    while a partial sum covers at most `safe` terms (no overflow), finish in int64.
    With Inf/NaN present: float truncation and a float64 sum (propagates Inf/NaN)."""
    if not finite and not np.isfinite(x).all():
        return np.trunc(x).sum(axis=0, dtype=np.float64)
    v = _scratch("units", x.shape, np.int32)
    np.copyto(v, x, casting="unsafe")            # float -> int32 truncates toward zero
    n, width = v.shape[0], 1
    while n > 1 and n % 2 == 0 and 2 * width <= safe:
        n //= 2
        width *= 2
        np.add(v[:n], v[n:2 * n], out=v[:n])
    return v[:n].sum(axis=0, dtype=np.int64).astype(np.float64)


def _finish(units: np.ndarray, c: Unpacked, shift: np.ndarray, rho: str):
    """Add c truncated to the grid, scale back, round once.  `units`: the exact sum of the
    truncated products in grid units 2^(emax - F) = 2^-shift.  Returns D bits."""
    with np.errstate(invalid="ignore"):
        total = units + np.trunc(np.ldexp(c.value, shift))   # exact: integers < 2^53
    return round_exact(np.ldexp(total, -shift), rho)


def _pow2(shift: np.ndarray, dtype) -> np.ndarray:
    """2^shift in `dtype`, built from the exponent bits.  float32 clamps to its normal range:
    only exact zeros and infinities ever meet a clamped factor (a nonzero product in a
    float32-safe format has exponent >= -28, so F - emax <= 53 unless every product is zero;
    c is scaled separately)."""
    if dtype == np.float32:
        return ((np.clip(shift, -126, 127) + 127) << 23).astype(np.int32).view(np.float32)
    return ((np.clip(shift, -1022, 1023) + 1023).astype(np.int64) << 52).view(np.float64)


def fused(a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str, dtype_out: str,
          compute_dtype) -> np.ndarray:
    """Plain (and scale-folded) fused model.  a (M, K), b (K, N), c (M, N).  Returns D bits.

    Per block, outputs are split in two:
    * exact outputs -- every product of row i and column j already lies on the grid
      2^(emax - F) (their lowest set bits reach no lower), so truncation changes nothing and the
      products' sum is one float64 matrix product (exact: < 2^32 grid units);
    * the rest -- products formed, scaled, truncated and summed elementwise: for the whole tile
      when many outputs need it, else only for those outputs.
    """
    M, K = a.value.shape
    N = b.value.shape[1]
    safe = 1 << max(0, 29 - p.F)                 # terms of < 2^(F+2) an int32 sum can hold
    aT = [x.T for x in (a.value, a.exp, a.zero, a.special, a.lsb)]      # (K, M)
    bb = [b.value, b.exp, b.zero, b.special, b.lsb]                     # (K, N)
    bits = None
    for k0 in range(0, K, p.L):
        k1 = min(k0 + p.L, K)
        if bits is not None:
            c = unpack(bits, dtype_out)
        av, ae, az, asp, al = (x[k0:k1] for x in aT)
        bv, be, bz, bsp, bl = (x[k0:k1] for x in bb)
        emax, eprod = _emax(ae, be, az, bz, asp, bsp, c, p.e_zero)
        shift = (p.F - emax).astype(np.int32)
        # sufficient test for "no product is truncated": lowest bits of row i and column j
        a_spec, b_spec = asp.any(axis=0), bsp.any(axis=0)
        exact = (al.min(axis=0)[:, None] + bl.min(axis=0)[None, :]) >= -shift
        exact &= ~a_spec[:, None] & ~b_spec[None, :]
        n_inexact = M * N - int(np.count_nonzero(exact))
        with np.errstate(invalid="ignore", over="ignore"):
            if n_inexact > FULL_TILE_FRACTION * M * N:
                x = _scratch("terms", (k1 - k0, M, N), compute_dtype)
                np.multiply(av.astype(compute_dtype)[:, :, None],
                            bv.astype(compute_dtype)[:, None, :], out=x)
                # where emax >= eprod + F + 2 every product (< 2^(eprod+2)) truncates to 0; a
                # shift of -eprod-2 gives the same zeros and keeps them out of the (slow)
                # subnormal range
                x *= _pow2(np.maximum(shift, -2 - eprod), compute_dtype)[None]
                units = _sum_units(x, safe, finite=not (a_spec.any() or b_spec.any()))
            else:
                units = np.ldexp(np.where(a_spec[:, None] | b_spec[None, :], 0.0, av.T @ bv),
                                 shift)
                if n_inexact:
                    i, j = np.nonzero(~exact)
                    x = np.ldexp(av[:, i] * bv[:, j], shift[i, j][None, :])  # (L, n) exact
                    units[i, j] = np.trunc(x).sum(axis=0)
        bits = _finish(units, c, shift, rho)
    return bits


def _group_units(gsum, scale, gexp, c_value, c_exp, c_zero, p: Params):
    """Fuse group terms with c.  gsum, scale: (G', ...) float64; gexp: (G', ...) alignment
    exponents with e_zero already put on zero terms; c_*: (...).  Returns (units, shift)."""
    emax = np.maximum(gexp.max(axis=0), np.where(c_zero, p.e_zero, c_exp))
    shift = (p.F - emax).astype(np.int32)
    with np.errstate(invalid="ignore", over="ignore"):
        x = _scratch("groups", gsum.shape, np.float64)
        np.multiply(gsum, scale, out=x)                   # exact: <= 21 significant bits
        x *= _pow2(shift, np.float64)[None]
        units = np.trunc(x, out=x).sum(axis=0)
    return units, shift


def _grouped_exact(av, bv, az, bz, sa, sb, s_of_k, c: Unpacked, p: Params):
    """Outputs of one grouped block whose group terms all lie on the grid: their sum is one
    float64 matrix product of the scaled elements.  emax over the groups with a nonzero
    product comes from the weight product of `_prod_emax` (counts of up to 64 products per
    output stay below 2^7).  Returns (units, shift, ok) -- ok marks the outputs decided here;
    the rest (possible all-zero group deciding emax through e_zero, underflowing weights, NaN
    scales, truncation) are left to the elementwise paths."""
    Kb = av.shape[1]
    sav, sae, sal = sa.value[:, s_of_k], sa.exp[:, s_of_k], sa.lsb[:, s_of_k]       # (M, Kb)
    sbv, sbe, sbl = sb.value[s_of_k], sb.exp[s_of_k], sb.lsb[s_of_k]               # (Kb, N)
    use_a = ~az & ~sa.zero[:, s_of_k] & ~sa.special[:, s_of_k]
    use_b = ~bz & ~sb.zero[s_of_k] & ~sb.special[s_of_k]
    emax_g, count = _prod_emax(sae.T, sbe, use_a.T, use_b)
    if count is None:
        count = np.full(emax_g.shape, Kb, np.float32)
    emax = np.maximum(emax_g, np.where(c.zero, p.e_zero, c.exp))
    shift = (p.F - emax).astype(np.int32)
    lsb = np.where(use_a, sal, 4000).min(axis=1)[:, None] + \
        np.where(use_b, sbl, 4000).min(axis=0)[None, :] - 2       # e2m1 products: 1/4 units
    ok = (lsb >= -shift) | (count == 0)
    ok &= ~((count < Kb) & (emax_g < p.e_zero) & (emax < p.e_zero))   # an all-zero group may
    ok &= ~sa.special[:, s_of_k].any(axis=1)[:, None]                    # decide emax
    ok &= ~sb.special[s_of_k].any(axis=0)[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        prod = np.where(use_a, av * sav, 0.0) @ np.where(use_b, bv * sbv, 0.0)
        units = np.ldexp(prod, shift)
    return units, shift, ok


def grouped(a: Unpacked, b: Unpacked, c: Unpacked, sa: Unpacked, sb: Unpacked, block: int,
            p: Params, rho: str) -> np.ndarray:
    """kind::mxf4 / mxf4nvf4: exact group sums of G products, scaled, then fused with c.

    Per 64-element block: outputs whose group terms need no truncation take one float64 matrix
    product (`_grouped_exact`); the others go elementwise over (groups, outputs), for the whole
    tile when many need it, else gathered per output."""
    M, K = a.value.shape
    N = b.value.shape[1]
    G = p.G
    bits = None
    for k0 in range(0, K, p.L):
        k1 = min(k0 + p.L, K)
        if bits is not None:
            c = unpack(bits, "f32")
        av, bv = a.value[:, k0:k1], b.value[k0:k1]
        az, bz = a.zero[:, k0:k1], b.zero[k0:k1]
        s_of_k = np.arange(k0, k1) // block               # the scale each element uses
        sg = np.arange(k0, k1, G) // block                # ... and each group
        ng = len(sg)
        units, shift, ok = _grouped_exact(av, bv, az, bz, sa, sb, s_of_k, c, p)
        n_rest = M * N - int(np.count_nonzero(ok))
        if n_rest > FULL_TILE_FRACTION * M * N:
            # all group sums at once: (ng, M, G) @ (ng, G, N), exact in float64
            gsum = av.reshape(M, ng, G).transpose(1, 0, 2) @ bv.reshape(ng, G, N)
            nz = (~az).astype(np.float32).reshape(M, ng, G).transpose(1, 0, 2) @ \
                (~bz).astype(np.float32).reshape(ng, G, N)
            gexp = sa.exp[:, sg].T[:, :, None] + sb.exp[sg][:, None, :]
            gexp[(nz == 0) | sa.zero[:, sg].T[:, :, None] | sb.zero[sg][:, None, :]] = p.e_zero
            scale = sa.value[:, sg].T[:, :, None] * sb.value[sg][:, None, :]
            units, shift = _group_units(gsum, scale, gexp, c.value, c.exp, c.zero, p)
        elif n_rest:
            i, j = np.nonzero(~ok)
            ga = av[i].reshape(-1, ng, G)
            gb = bv[:, j].T.reshape(-1, ng, G)
            gsum = (ga * gb).sum(axis=2).T                                    # (ng, n)
            all_zero = ~((ga != 0) & (gb != 0)).any(axis=2).T
            gexp = sa.exp[i][:, sg].T + sb.exp[sg][:, j]
            gexp[all_zero | sa.zero[i][:, sg].T | sb.zero[sg][:, j]] = p.e_zero
            scale = sa.value[i][:, sg].T * sb.value[sg][:, j]
            units[i, j], shift[i, j] = _group_units(gsum, scale, gexp, c.value[i, j],
                                                    c.exp[i, j], c.zero[i, j], p)
        bits = _finish(units, c, shift, rho)
    return bits
