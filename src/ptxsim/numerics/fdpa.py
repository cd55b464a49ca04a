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

The same four functions (`fused_batch`, `fused_rows`, `grouped`, `grouped_rows`) have a compiled
twin in _fdpa.c, used when it was built (backend.py); this file stays the specification and the
fallback, and the tests hold the two to identical bits.
"""
from __future__ import annotations

import threading

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.numerics import backend
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
FULL_TILE_FRACTION = 0.1
# ... judged first by a cheap sufficient test (lowest set bits of row and column); when that
# leaves more than FULL_TILE_FRACTION but fewer than REFINE_FRACTION inexact, the exact
# per-product test decides (bf16 N(0, 1) tiles: 21% -> 7% of outputs)
REFINE_FRACTION = 0.35     # the exact test cuts the count ~3x: worth it only if that may reach 0.1

P_WEIGHT = 8        # weights 2^(8e): a sum of up to 128 of them never reaches the next 2^8 step


def products_fit_f32(atype: str, btype: str) -> bool:
    """True if every product of two finite elements is exact and normal in float32."""
    fa, fb = FORMATS[atype], FORMATS[btype]
    sig_bits = fa.mbits + 1 + fb.mbits + 1
    emin = (fa.emin - fa.mbits) + (fb.emin - fb.mbits)          # smallest nonzero product
    emax = (2 ** fa.ebits - fa.bias) + (2 ** fb.ebits - fb.bias)  # bound on the largest
    return sig_bits <= 24 and emin >= -126 and emax <= 127


# ---- step 2: the largest exponent ----------------------------------------------------------

def _prod_emax(ae, be, anz, bnz):
    """max_k (ae[t, k, i] + be[t, k, j]) over the nonzero finite products, with BLAS.

    Each product exponent e becomes the weight 2^(8 (e - alpha_i - beta_j)) (alpha, beta: row and
    column maxima), so sum_k weight = 2^(8 delta) * [1, 64] and floor(log2 / 8) = delta.  Rounding
    cannot cross 2^(8 delta) or 2^(8 delta + 8) (sums of nonnegative terms).  When exponents
    spread so far that a weight could underflow a double, the outputs it hits are redone
    exactly, elementwise.
    ae (T, L, M), be (T, L, N) int32; anz / bnz: nonzero finite masks; T independent MMAs.
    Returns (emax or ZERO_EXP where no such product, count of such products or None if all).
    """
    alpha = np.where(anz, ae, ZERO_EXP).max(axis=-2, initial=ZERO_EXP)     # (..., M)
    beta = np.where(bnz, be, ZERO_EXP).max(axis=-2, initial=ZERO_EXP)      # (..., N)
    da = np.where(anz, ae - alpha[..., None, :], 0)           # <= 0 where it counts
    db = np.where(bnz, be - beta[..., None, :], 0)
    spread = -int(da.min(initial=0)) - int(db.min(initial=0))
    wide = spread * P_WEIGHT >= 1000
    with np.errstate(over="ignore", under="ignore"):
        if wide:
            wa = np.where(anz, np.ldexp(1.0, P_WEIGHT * da), 0.0)
            wb = np.where(bnz, np.ldexp(1.0, P_WEIGHT * db), 0.0)
        else:                                            # exact powers of two from the bits
            wa = np.where(anz, _pow2(P_WEIGHT * da, np.float64), 0.0)
            wb = np.where(bnz, _pow2(P_WEIGHT * db, np.float64), 0.0)
    w = wa.swapaxes(-1, -2) @ wb                                          # (..., M, N)
    if wide:                                          # w may be subnormal
        _, e = np.frexp(w)
        log2w = e - 1
    else:                                             # w >= 2^-1000: read its exponent field
        log2w = (w.view(np.int64) >> 52) - 1023
    emax = (alpha[..., :, None] + beta[..., None, :]) + (log2w >> 3).astype(np.int32)  # floor(/8)
    if anz.all() and bnz.all():
        count = None
    else:
        count = anz.swapaxes(-1, -2).astype(np.float32) @ bnz.astype(np.float32)
        emax[count == 0] = ZERO_EXP
    if not wide:
        return emax, count
    lost = (w == 0) if count is None else (w == 0) & (count > 0)
    if lost.any():
        t, i, j = np.nonzero(lost)
        # advanced indices around a slice: shape (n, L)
        pe = np.where(anz[t, :, i] & bnz[t, :, j], ae[t, :, i] + be[t, :, j], ZERO_EXP)
        emax[t, i, j] = pe.max(axis=1)
    return emax, count


def _emax(ae, be, az, bz, asp, bsp, c: Unpacked, e_zero: int):
    """Largest alignment exponent per output: products, c, and e_zero for zero terms.
    ae, az, asp: (T, L, M) exponent / zero / special of A's block; be, bz, bsp: (T, L, N).
    Returns (emax, largest product exponent alone), (T, M, N)."""
    L = ae.shape[-2]
    e, count = _prod_emax(ae, be, ~(az | asp), ~(bz | bsp))
    if count is None:                                  # no zero and no special element
        has_zero_term = c.zero
    else:
        if asp.any() or bsp.any():                    # products with an Inf/NaN are not zeros
            count = count + asp.swapaxes(-1, -2).astype(np.float32) @ (~bz).astype(np.float32) \
                + (~az & ~asp).swapaxes(-1, -2).astype(np.float32) @ bsp.astype(np.float32)
        has_zero_term = (count < L) | c.zero
    emax = np.maximum(e, c.exp)
    np.maximum(emax, e_zero, out=emax, where=has_zero_term)
    return emax, e


# ---- steps 3-4: truncate, sum, round -------------------------------------------------------

def _sum_units(x: np.ndarray, scale: np.ndarray, safe: int, finite: bool) -> np.ndarray:
    """Scale products (T, L, M, N) to grid units, truncate, and sum them exactly over L.

    Finite terms: one pass multiplies and converts to int32 (the conversion truncates toward
    zero); then pairwise int32 adds while a partial sum covers at most `safe` terms (no
    overflow), finished in int64.  With Inf/NaN present: float truncation and a float64 sum
    (propagates Inf/NaN)."""
    if not finite:
        x *= scale
        return np.trunc(x, out=x).sum(axis=1, dtype=np.float64)
    v = _scratch("units", x.shape, np.int32)
    np.multiply(x, scale, out=v, casting="unsafe")
    n, width = v.shape[1], 1
    while n > 1 and n % 2 == 0 and 2 * width <= safe:
        n //= 2
        width *= 2
        np.add(v[:, :n], v[:, n:2 * n], out=v[:, :n])
    if n == 1:
        return v[:, 0].astype(np.float64)
    return v[:, :n].sum(axis=1, dtype=np.int64).astype(np.float64)


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


# A float64 tile (bf16, tf32, scale-folded operands: their products overflow or underflow a
# float32) runs in float32 after scaling row i of A by 2^-alpha_i and column j of B by
# 2^-beta_j (their largest exponents) when the exponent gap D below is at most this.
PRESCALE_MAX_GAP = 99


def _prescaled_f32(av, ae, al, a_out, bv, be, bl, b_out, sh, eprod):
    """A's block (T, L, M) and B's (T, L, N) as float32 a~ = a 2^-alpha_i, b~ = b 2^-beta_j,
    and the shift sh + alpha_i + beta_j that scales a~ b~ like sh scales a b -- or
    (None, None, sh) when that would not be exact.

    Exactness.  Let D = max over outputs with a nonzero product of alpha_i + beta_j - eprod_ij
    (>= 0), and require D <= 99 and at most 11 significant bits per element (checked;
    tf32 / f16 11, bf16 8, f8/f6/f4 <= 4, scale factors are powers of two).  A term contributes
    trunc(a~ b~ 2^(sh + alpha + beta)) with sh + alpha + beta <= F + D <= 124
    (sh <= F - eprod).  If the true a~ b~ >= 2^-126: both factors >= 2^-127 (each < 2), so
    their lowest bits are >= 2^-138 and a~, b~ are exact in float32, and a~ b~ (<= 22
    significant bits, normal) is exact too; scaling by a power of two whose result is below
    2^(F+2) is exact.  If the true a~ b~ < 2^-126, the term is trunc(< 2^(-126+124)) ... with
    the computed (possibly underflowed, rounded-down-or-up-to-2^-126) a~ b~ <= 2^-125, the
    scaled value is <= 2^-1 < 1 either way: 0, as it is exactly.  Finite operands only (the
    caller's condition): an Inf times a factor that underflowed to 0 would become NaN."""
    big = np.int32(-ZERO_EXP)
    if int(np.where(a_out, 0, ae - al).max(initial=0)) > 10 or \
            int(np.where(b_out, 0, be - bl).max(initial=0)) > 10:      # > 11 significant bits
        return None, None, sh
    alpha = np.where(a_out, ZERO_EXP, ae).max(axis=1)                    # (T, M)
    beta = np.where(b_out, ZERO_EXP, be).max(axis=1)                     # (T, N)
    gap = alpha[:, :, None] + beta[:, None, :] - eprod
    gap = np.where(eprod > ZERO_EXP, gap, -big)
    if int(gap.max(initial=0)) > PRESCALE_MAX_GAP:
        return None, None, sh
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        a32 = (av * _pow2(-alpha, np.float64)[:, None, :]).astype(np.float32)
        b32 = (bv * _pow2(-beta, np.float64)[:, None, :]).astype(np.float32)
    # rows / columns without a nonzero finite element: alpha = ZERO_EXP, their products are
    # 0 (or Inf/NaN): any in-range shift does
    ab = np.maximum(alpha, -200)[:, :, None] + np.maximum(beta, -200)[:, None, :]
    return a32, b32, sh + ab


def _lift(u: Unpacked, lsb: bool = True) -> Unpacked:
    """The same operand with a leading batch axis of one."""
    return Unpacked(u.value[None], u.exp[None], u.zero[None], u.special[None],
                    u.lsb[None] if lsb else None)


# ---- the compiled twin (_fdpa.c), same arithmetic -------------------------------------------

# rho -> (fraction bits, smallest normal exponent of the grid, to nearest even, f16 bits)
_C_ROUNDING = {"RZ-FP32": (23, -126, 0, 0), "RZ-E8M13": (13, -126, 0, 0),
               "RNE-FP16": (10, -14, 1, 1)}
_D_EMIN = {"f32": -126, "f16": -14}      # where the next block's c (D's format) aligns


def _f64(x):
    return np.ascontiguousarray(x, dtype=np.float64)


def _i32(x):
    return np.ascontiguousarray(x, dtype=np.int32)


def c_fused(cm, av, ae, bv, be, cv, ce, p: Params, rho: str, dtype_out: str, rows: bool,
            c_emin: int = 0) -> np.ndarray:
    """fused_batch (av, ae (T, M, K); bv, be (T, K, N)) or, with rows, fused_rows (av, ae
    (R, K); bv, be (R, K, N)) in _fdpa.c.  Values (float64) and alignment exponents (int32) as
    `unpack` gives them; only the exponents of finite nonzero elements are read.  cv: C's
    values, (T, M, N) / (R, N), float64 or (with ce None) float32; ce: their exponents, or None
    to derive them from cv (C's subnormals aligning at c_emin).  Returns D bits."""
    if rows:
        (R, K), N = av.shape, bv.shape[2]
        T, M, b_t, b_i = 1, R, 0, K * N
    else:
        (T, M, K), N = av.shape, bv.shape[2]
        b_t, b_i = K * N, 0
    out = np.empty(cv.shape, np.uint32)
    frac, rnd_emin, rne, out16 = _C_ROUNDING[rho]
    c32 = cv.dtype == np.float32 and ce is None          # f32 C: widened in C, row by row
    cm.fused(_f64(av), _i32(ae), _f64(bv), _i32(be),
             np.ascontiguousarray(cv) if c32 else _f64(cv),
             _NO_EXP if ce is None else _i32(ce), out, T, M, N, K, b_t, b_i, p.F, p.L,
             p.e_zero, c_emin, _D_EMIN[dtype_out], frac, rnd_emin, rne, out16, c32)
    return out.astype(np.uint16) if out16 else out


_NO_EXP = np.empty(0, np.int32)


def _c_fused(cm, a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str, dtype_out: str,
             rows: bool) -> np.ndarray:
    return c_fused(cm, a.value, a.exp, b.value, b.exp, c.value, c.exp, p, rho, dtype_out, rows)


def c_grouped(cm, a2, b2, sa: Unpacked, sb: Unpacked, cv, block: int, p: Params,
              rows: bool) -> np.ndarray:
    """grouped in _fdpa.c: a2 (M, K), b2 (K, N), sa (M, K/block), sb (K/block, N), cv (M, N),
    or a batch of T such MMAs (a leading axis on every operand); with rows, grouped_rows
    (b2 (R, K, N), sb (R, K/block, N)).  a2, b2: the e2m1 elements as int16 halves (twice the
    value: `e2m1_halves`); cv: C's f32 values (float64 or float32).  Returns D's f32 bits,
    shaped like cv."""
    batch = a2.ndim == 3
    M, K = a2.shape[-2:]
    T = a2.shape[0] if batch else 1
    N = b2.shape[-1]
    nsf = K // block
    if rows:
        b_t, b_i, sb_t, sb_i = 0, K * N, 0, nsf * N
    else:
        b_t, b_i, sb_t, sb_i = K * N, 0, nsf * N, 0
    out = np.empty(cv.shape, np.uint32)
    c32 = cv.dtype == np.float32
    cm.grouped(np.ascontiguousarray(a2, np.int16), np.ascontiguousarray(b2, np.int16),
               _f64(sa.value), _i32(sa.exp), _f64(sb.value), _i32(sb.exp),
               np.ascontiguousarray(cv) if c32 else _f64(cv), out, T, M, N, K, nsf, b_t, b_i,
               sb_t, sb_i, p.F, p.L, p.G, p.e_zero, block, c32)
    return out


def e2m1_halves(value: np.ndarray) -> np.ndarray:
    """Decoded e2m1 values (k/2, |k| <= 12) as the int16 k the compiled grouped loop takes."""
    h = 2.0 * value
    if not (np.abs(h) <= 12).all() or (h != np.trunc(h)).any():
        raise OperandError("the grouped kinds (mxf4, mxf4nvf4) take e2m1 elements only")
    return h.astype(np.int16)


def fused(a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str, dtype_out: str,
          compute_dtype) -> np.ndarray:
    """Plain (and scale-folded) fused model.  a (M, K), b (K, N), c (M, N).  Returns D bits.
    A batch of independent MMAs (a (T, M, K), b (T, K, N), c (T, M, N)) goes to `fused_batch`."""
    if a.value.ndim == 3:
        return fused_batch(a, b, c, p, rho, dtype_out, compute_dtype)
    return fused_batch(_lift(a), _lift(b), _lift(c, lsb=False), p, rho, dtype_out,
                       compute_dtype)[0]


# Batches go through the elementwise path in chunks of at most this many product terms (the
# scratch arrays stay a few MiB: fresh or huge arrays cost more in page faults than the work)
TILE_TERMS = 1 << 18


def fused_batch(a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str, dtype_out: str,
                compute_dtype) -> np.ndarray:
    """`fused` for T independent MMAs at once: a (T, M, K), b (T, K, N), c (T, M, N).
    Returns D bits (T, M, N), each MMA's bits exactly as `fused` gives them alone.

    Per block, outputs are split in two:
    * exact outputs -- every product of row i and column j already lies on the grid
      2^(emax - F) (their lowest set bits reach no lower), so truncation changes nothing and the
      products' sum is one float64 matrix product (exact: < 2^32 grid units);
    * the rest -- products formed, scaled, truncated and summed elementwise: for the whole tile
      when many outputs need it, else only for those outputs.
    Both give the same bits (every sum is exact); the split only chooses the cheaper work.
    """
    cm = backend.c_module()
    if cm is not None:
        return _c_fused(cm, a, b, c, p, rho, dtype_out, rows=False)
    T, M, K = a.value.shape
    N = b.value.shape[2]
    safe = 1 << max(0, 29 - p.F)                 # terms of < 2^(F+2) an int32 sum can hold
    aT = [x.swapaxes(1, 2) for x in (a.value, a.exp, a.zero, a.special, a.lsb)]  # (T, K, M)
    bb = [b.value, b.exp, b.zero, b.special, b.lsb]                               # (T, K, N)
    rows = None                    # A's rows and B's columns, (T*M, K) / (T*N, K), for gathers
    bits = None
    given_dtype = compute_dtype
    for k0 in range(0, K, p.L):
        compute_dtype = given_dtype
        k1 = min(k0 + p.L, K)
        L = k1 - k0
        if bits is not None:
            c = unpack(bits, dtype_out)
        av, ae, az, asp, al = (x[:, k0:k1] for x in aT)
        bv, be, bz, bsp, bl = (x[:, k0:k1] for x in bb)
        emax, eprod = _emax(ae, be, az, bz, asp, bsp, c, p.e_zero)
        shift = (p.F - emax).astype(np.int32)
        # sufficient test for "no product is truncated": lowest bits of row i and column j
        a_spec, b_spec = asp.any(axis=1), bsp.any(axis=1)                # (T, M), (T, N)
        exact = (al.min(axis=1)[:, :, None] + bl.min(axis=1)[:, None, :]) >= -shift
        exact &= ~a_spec[:, :, None] & ~b_spec[:, None, :]
        n_inexact = exact.size - int(np.count_nonzero(exact))
        if FULL_TILE_FRACTION * exact.size < n_inexact < REFINE_FRACTION * exact.size:
            # the exact test, product by product: min_k (lsb_a[i, k] + lsb_b[k, j]) >= grid,
            # by the same BLAS max-finder as emax (a product's lowest set bit is the sum of
            # its factors': odd significand times odd significand is odd)
            neg_lsb, _ = _prod_emax(-al, -bl, ~(az | asp), ~(bz | bsp))
            exact = -neg_lsb >= -shift
            exact &= ~a_spec[:, :, None] & ~b_spec[:, None, :]
            n_inexact = exact.size - int(np.count_nonzero(exact))
        with np.errstate(invalid="ignore", over="ignore"):
            if n_inexact > FULL_TILE_FRACTION * exact.size:
                # where emax >= eprod + F + 2 every product (< 2^(eprod+2)) truncates to 0; a
                # shift of -eprod-2 gives the same zeros and keeps them out of the (slow)
                # subnormal range
                sh = np.maximum(shift, -2 - eprod)
                finite = not (a_spec.any() or b_spec.any())
                avc = bvc = None
                if compute_dtype == np.float64 and finite:
                    avc, bvc, sh = _prescaled_f32(av, ae, al, az | asp, bv, be, bl, bz | bsp,
                                                  sh, eprod)
                    if avc is not None:
                        compute_dtype = np.float32
                if avc is None:
                    avc, bvc = av.astype(compute_dtype), bv.astype(compute_dtype)
                scale = _pow2(sh, compute_dtype)[:, None]
                step = max(1, TILE_TERMS // (L * M * N))
                units = np.empty((T, M, N)) if step < T else None
                for t0 in range(0, T, step):
                    t1 = min(T, t0 + step)
                    x = _scratch("terms", (t1 - t0, L, M, N), compute_dtype)
                    np.multiply(avc[t0:t1, :, :, None], bvc[t0:t1, :, None, :], out=x)
                    u = _sum_units(x, scale[t0:t1], safe, finite)
                    if units is None:
                        units = u
                    else:
                        units[t0:t1] = u
            else:
                units = np.ldexp(np.where(a_spec[:, :, None] | b_spec[:, None, :], 0.0,
                                          av.swapaxes(1, 2) @ bv), shift)
                if n_inexact:
                    t, i, j = np.nonzero(~exact)
                    if rows is None:
                        rows = (a.value.reshape(T * M, K),
                                np.ascontiguousarray(b.value.swapaxes(1, 2)).reshape(T * N, K))
                    # (n, L) exact products of the rows and columns of the inexact outputs,
                    # into reused buffers (fresh multi-MiB arrays cost page faults)
                    x = _scratch("rows_a", (t.size, L), np.float64)
                    y = _scratch("cols_b", (t.size, L), np.float64)
                    np.take(rows[0][:, k0:k1], t * M + i, axis=0, out=x)
                    np.take(rows[1][:, k0:k1], t * N + j, axis=0, out=y)
                    x *= y
                    x *= _pow2(shift[t, i, j], np.float64)[:, None]    # exact, see `_pow2`
                    units[t, i, j] = np.trunc(x, out=x).sum(axis=1)
        bits = _finish(units, c, shift, rho)
    return bits


def grouped(a: Unpacked, b: Unpacked, c: Unpacked, sa: Unpacked, sb: Unpacked, block: int,
            p: Params, rho: str) -> np.ndarray:
    """kind::mxf4 / mxf4nvf4: exact group sums of G products, scaled, then fused with c."""
    cm = backend.c_module()
    if cm is not None:
        return c_grouped(cm, e2m1_halves(a.value), e2m1_halves(b.value), sa, sb, c.value, block, p,
                         rows=False)
    M, K = a.value.shape
    N = b.value.shape[1]
    G = p.G
    ng = K // G
    # (ng, M, G) @ (ng, G, N): every group sum at once, exact in float32 (multiples of 1/4,
    # magnitude <= 16 * 36)
    ag = a.value.astype(np.float32).reshape(M, ng, G).transpose(1, 0, 2)
    bg = b.value.astype(np.float32).reshape(ng, G, N)
    gsum = (ag @ bg).astype(np.float64)
    nz = (~a.zero).astype(np.float32).reshape(M, ng, G).transpose(1, 0, 2) @ \
        (~b.zero).astype(np.float32).reshape(ng, G, N)
    return _grouped_tail(gsum, nz, c, sa, sb, block, p, rho, G, ng)


# ---- per-row B (sparse MMA): every output row has its own K x N slice of B ------------------

def fused_rows(a: Unpacked, b: Unpacked, c: Unpacked, p: Params, rho: str,
               dtype_out: str) -> np.ndarray:
    """The plain fused model where each row r has its own B: a (R, K), b (R, K, N), c (R, N).
    D[r, n] = fdpa_k(a[r, k] * b[r, k, n]) + c[r, n], blocks of p.L along K, exactly as `fused`
    does for one row (same emax, zero-term, truncation and rounding rules).  Elementwise over
    (R, L, N): there is no shared B for a matrix product to exploit.  Returns D bits (R, N)."""
    cm = backend.c_module()
    if cm is not None:
        return _c_fused(cm, a, b, c, p, rho, dtype_out, rows=True)
    R, K = a.value.shape
    bits = None
    for k0 in range(0, K, p.L):
        k1 = min(k0 + p.L, K)
        if bits is not None:
            c = unpack(bits, dtype_out)
        av, ae, az, asp = (x[:, k0:k1, None] for x in (a.value, a.exp, a.zero, a.special))
        bv, be, bz, bsp = (x[:, k0:k1] for x in (b.value, b.exp, b.zero, b.special))
        finite_nz = ~(az | asp) & ~(bz | bsp)
        # a term counts as a zero term (exponent e_zero) unless both factors are nonzero and
        # finite or an Inf/NaN meets a nonzero factor (as `_emax` counts them)
        counted = finite_nz | (asp & ~bz) | (~az & ~asp & bsp)
        eprod = np.where(finite_nz, ae + be, ZERO_EXP).max(axis=1)           # (R, N)
        emax = np.maximum(eprod, c.exp)
        np.maximum(emax, p.e_zero, out=emax, where=~counted.all(axis=1) | c.zero)
        shift = (p.F - emax).astype(np.int32)
        with np.errstate(invalid="ignore", over="ignore"):
            x = av * bv                                                       # (R, L, N) exact
            # products below 2^(emax-F) truncate to 0; a shift >= -2-eprod gives the same zeros
            # without entering the (slow) subnormal range
            x = np.ldexp(x, np.maximum(shift, -2 - eprod)[:, None, :])
            units = np.trunc(x, out=x).sum(axis=1)
        bits = _finish(units, c, shift, rho)
    return bits


def grouped_rows(a: Unpacked, b: Unpacked, c: Unpacked, sa: Unpacked, sb: Unpacked, block: int,
                 p: Params, rho: str) -> np.ndarray:
    """`grouped` with a per-row B: a (R, K), b (R, K, N), c (R, N), sa (R, K/block),
    sb (R, K/block, N) (the B scales each row's products use)."""
    cm = backend.c_module()
    if cm is not None:
        return c_grouped(cm, e2m1_halves(a.value), e2m1_halves(b.value), sa, sb, c.value, block, p,
                         rows=True)
    R, K = a.value.shape
    N = b.value.shape[2]
    G = p.G
    ng = K // G
    prod = a.value[:, :, None] * b.value                                       # (R, K, N)
    with np.errstate(invalid="ignore"):
        gsum = prod.reshape(R, ng, G, N).sum(axis=2).transpose(1, 0, 2)         # (ng, R, N)
    nzp = (~a.zero)[:, :, None] & ~b.zero
    nz = nzp.reshape(R, ng, G, N).sum(axis=2).transpose(1, 0, 2)
    return _grouped_tail(gsum, nz, c, sa, sb, block, p, rho, G, ng, sb_rows=True)


def _grouped_tail(gsum, nz, c, sa, sb, block, p, rho, G, ng, sb_rows=False):
    """Steps shared by `grouped` / `grouped_rows`: scale each exact group sum, align the group
    terms and c on the largest exponent, truncate, add, round; chained per L-element block.
    gsum, nz: (ng, M, N) group sums and nonzero-product counts; sa (M, K/block); sb (K/block, N),
    or (M, K/block, N) with sb_rows (a B scale per row)."""
    s = np.arange(ng) * G // block                       # the scale each group uses
    sav, sae, saz = (x[:, s].T[:, :, None] for x in (sa.value, sa.exp, sa.zero))   # (ng, M, 1)
    if sb_rows:
        sbv, sbe, sbz = (x[:, s].transpose(1, 0, 2) for x in (sb.value, sb.exp, sb.zero))
    else:
        sbv, sbe, sbz = (x[s][:, None, :] for x in (sb.value, sb.exp, sb.zero))    # (ng, 1, N)
    gexp = sae + sbe
    gexp[(nz == 0) | saz | sbz] = p.e_zero
    M, N = gsum.shape[1:]
    per_block = p.L // G
    bits = None
    for g0 in range(0, ng, per_block):
        g1 = min(g0 + per_block, ng)
        if bits is not None:
            c = unpack(bits, "f32")
        emax = np.maximum(gexp[g0:g1].max(axis=0), np.where(c.zero, p.e_zero, c.exp))
        shift = (p.F - emax).astype(np.int32)
        with np.errstate(invalid="ignore", over="ignore"):
            x = _scratch("groups", (g1 - g0, M, N), np.float64)
            np.multiply(gsum[g0:g1], sav[g0:g1], out=x)   # exact: <= 21 significant bits
            x *= sbv[g0:g1]
            x *= np.ldexp(1.0, shift)[None]
            units = np.trunc(x, out=x).sum(axis=0)
        bits = _finish(units, c, shift, rho)
    return bits
