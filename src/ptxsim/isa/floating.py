"""PTX floating-point instructions (PTX ISA 9.7.3 f32/f64, 9.7.4 f16/f16x2/bf16/bf16x2, 9.7.3.x
the MUFU approximations).

How results are made bit-exact
------------------------------
Operands of f16 / bf16 / f32 are decoded exactly into float64. The exact mathematical result v of
add / sub / mul / fma is then held as an unevaluated pair hi + lo of float64 (an error-free
transformation: Knuth's TwoSum; products of two <= 24-bit significands are already exact). For
div and sqrt of f32 the float64 quotient alone decides every rounding (see `_f32_div`). `_round`
rounds hi + lo once, to the target format, in any of the four IEEE modes -- integers throughout,
no double rounding. f64 results are rounded by numpy (round-to-nearest) and moved one ulp in the
directed modes according to the sign of the exact residual (TwoSum / Dekker TwoProduct); the rare
operands where that residual is not exact (results near the subnormal or overflow range, and f64
fma) are finished with Python's exact `fractions.Fraction` (`_exact_f64`).

Hardware rules implemented (and where they come from):
- a NaN result is the canonical NaN: f32 0x7FFFFFFF, f16/bf16 0x7FFF (PTX ISA 9.7.3 "NaN results
  are canonical"; FACTS.md 1.5 for the tensor cores); f64 NaN results are 0x7FFFFFFFFFFFFFFF
  (assumption, needs hardware vectors).
- .ftz flushes subnormal inputs and results to sign-preserving zero; a result is flushed after
  rounding (it is subnormal if the *rounded* value is below the smallest normal).
- .sat clamps the result to [+0.0, 1.0]; NaN -> +0.0.
- .approx instructions (MUFU) are not specified bit-exactly by PTX. rcp / rsqrt / sqrt / ex2 /
  lg2 / sin / cos .approx{.ftz}.f32, tanh.approx.f32, div.approx / div.full .f32 and ex2 / tanh
  of f16 / bf16 reproduce an H200 (sm_90) bit for bit (tables recorded there, see `_F32_APPROX`,
  `_f32_div_approx`, `_half_mufu_tables`; docs/mufu.md), and so do rcp.approx.ftz.f64 and
  rsqrt.approx{.ftz}.f64 (MUFU.RCP64H / RSQ64H read the f32 tables; `_mufu_rcp64h`,
  `_rsqrt_f64`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from ptxsim.isa.regs import bits, check_choice, illegal, out

ROUNDINGS = ("rn", "rz", "rm", "rp")


@dataclass(frozen=True)
class FloatFmt:
    name: str
    width: int
    ebits: int
    mbits: int

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def qnan(self) -> int:
        """Canonical NaN: sign 0, exponent all ones, fraction all ones."""
        return (1 << (self.width - 1)) - 1

    @property
    def inf(self) -> int:
        return ((1 << self.ebits) - 1) << self.mbits

    @property
    def max_finite(self) -> int:
        return self.inf - 1

    @property
    def one(self) -> int:
        return self.bias << self.mbits


F16 = FloatFmt("f16", 16, 5, 10)
BF16 = FloatFmt("bf16", 16, 8, 7)
F32 = FloatFmt("f32", 32, 8, 23)
F64 = FloatFmt("f64", 64, 11, 52)
FMTS = {f.name: f for f in (F16, BF16, F32, F64)}
# packed types: (element format, lanes)
PACKED = {"f16x2": (F16, 2), "bf16x2": (BF16, 2), "f32x2": (F32, 2)}


# --- bits <-> values ------------------------------------------------------------------------------
def decode(u: np.ndarray, fmt: FloatFmt, ftz: bool = False) -> np.ndarray:
    """Exact float64 value of `fmt` bit patterns (uint64 array). ftz: subnormals -> signed 0."""
    u = np.asarray(u, np.uint64)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        v = _decode(u, fmt)
    if ftz:
        v = np.where(is_subnormal(u, fmt), np.copysign(0.0, v), v)
    return v


def _decode(u: np.ndarray, fmt: FloatFmt) -> np.ndarray:
    if fmt is F64:
        v = u.view(np.float64).copy()
    elif fmt is F32:
        v = u.astype(np.uint32).view(np.float32).astype(np.float64)
    elif fmt is BF16:
        v = (u.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    else:
        v = u.astype(np.uint16).view(np.float16).astype(np.float64)
    return v


def is_subnormal(u: np.ndarray, fmt: FloatFmt) -> np.ndarray:
    e = (u >> np.uint64(fmt.mbits)) & np.uint64((1 << fmt.ebits) - 1)
    return (e == 0) & ((u & np.uint64((1 << fmt.mbits) - 1)) != 0)


def is_nan(u: np.ndarray, fmt: FloatFmt) -> np.ndarray:
    return (u & np.uint64(fmt.inf | ((1 << fmt.mbits) - 1))) > np.uint64(fmt.inf)


def sign_bit(fmt: FloatFmt) -> np.uint64:
    return np.uint64(1 << (fmt.width - 1))


# --- the one rounding step --------------------------------------------------------------------------
def _round(hi: np.ndarray, lo: np.ndarray, fmt: FloatFmt, rnd: str) -> np.ndarray:
    """Bits of fmt nearest (per `rnd`, or "rna" = ties away) to the exact value hi + lo.

    hi: float64, lo: float64 whose *sign* says on which side of hi the exact value lies (its
    magnitude must be below half an ulp of hi; only its sign and non-zeroness are used). fmt must
    be narrower than float64 (f32, f16, bf16).
    """
    hi, lo = np.broadcast_arrays(np.asarray(hi, np.float64), np.asarray(lo, np.float64))
    if rnd == "rn" and fmt in _NUMPY_RN:
        return _round_rn_fast(hi, lo, fmt)
    return _round_exact(hi, lo, fmt, rnd)


# numpy's float64 -> float32 / float16 casts round to nearest-even in one step
_NUMPY_RN = {"f32": (np.float32, np.uint32, 29, -126), "f16": (np.float16, np.uint16, 42, -14)}
_NUMPY_RN = {F32: _NUMPY_RN["f32"], F16: _NUMPY_RN["f16"]}


def _round_rn_fast(hi, lo, fmt):
    """Round-to-nearest via numpy's cast of hi. RN(RN64(v)) == RN(v) unless hi is exactly a
    midpoint of the target format and lo != 0 (53 >= 2p + 2 makes the cast of a float64 that is
    not a midpoint correct); those elements, and tiny ones (whose midpoints sit lower), take the
    integer path."""
    ftype, utype, low_bits, emin = _NUMPY_RN[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        r = hi.astype(ftype).view(utype).astype(np.uint64)
    r = np.where(np.isnan(hi), np.uint64(fmt.qnan), r)
    hb = hi.view(np.uint64)
    low_mask = np.uint64((1 << low_bits) - 1)
    midpoint = (hb & low_mask) == np.uint64(1 << (low_bits - 1))
    slow = (lo != 0) & (midpoint | (np.abs(hi) < 2.0 ** emin))
    if np.any(slow):
        r = r.copy()
        r[slow] = _round_exact(hi[slow], lo[slow], fmt, "rn")
    return r


def _round_exact(hi: np.ndarray, lo: np.ndarray, fmt: FloatFmt, rnd: str) -> np.ndarray:
    """The integer rounding of `_round` (any mode)."""
    neg = np.signbit(hi)
    ah = np.abs(hi)
    lo_neg = np.where(neg, lo > 0, lo < 0)        # exact |v| is just below |hi|
    # |v| in (prev(|hi|), |hi|): round prev(|hi|) + sticky. No boundary of a narrower format lies
    # strictly between two neighbouring float64 values, so this loses nothing.
    with np.errstate(invalid="ignore"):
        ah = np.where(lo_neg & (ah > 0), np.nextafter(ah, 0.0), ah)
    sticky_lo = lo != 0
    finite = np.isfinite(ah)
    m, e = np.frexp(np.where(finite, ah, 0.0))           # ah = m * 2^e, m in [0.5, 1)
    M = (m * 2.0 ** 53).astype(np.uint64)                # ah = M * 2^(e - 53)
    E = e.astype(np.int64) - 53
    # quantum (exponent of the last kept bit) of the target format at this magnitude
    q = np.maximum(e.astype(np.int64) - 1, fmt.emin) - fmt.mbits
    s = np.clip(q - E, 0, 60).astype(np.uint64)
    kept = M >> s
    guard = np.where(s > 0, (M >> np.maximum(s, np.uint64(1)) - np.uint64(1)) & np.uint64(1),
                     np.uint64(0)) != 0
    below = np.where(s > 1, M & ((np.uint64(1) << np.maximum(s, np.uint64(1)) - np.uint64(1))
                                 - np.uint64(1)), np.uint64(0)) != 0
    sticky = below | sticky_lo
    inexact = guard | sticky
    if rnd == "rn":
        inc = guard & (sticky | ((kept & np.uint64(1)) != 0))
    elif rnd == "rna":
        inc = guard
    elif rnd == "rz":
        inc = np.zeros(kept.shape, bool)
    elif rnd == "rm":
        inc = neg & inexact
    elif rnd == "rp":
        inc = ~neg & inexact
    else:
        raise illegal("round", f"unknown rounding '{rnd}'")
    kept = kept + inc.astype(np.uint64)
    # normal: kept in [2^mbits, 2^(mbits+1)); a carry to 2^(mbits+1) moves to the next binade;
    # subnormal: q == emin - mbits and kept < 2^mbits (a carry to 2^mbits makes it the min normal)
    carry = kept >> np.uint64(fmt.mbits + 1) != 0
    kept = np.where(carry, kept >> np.uint64(1), kept)
    q = q + carry
    normal = kept >> np.uint64(fmt.mbits) != 0
    efield = np.where(normal, q + fmt.mbits + fmt.bias, 0)
    frac = kept & np.uint64((1 << fmt.mbits) - 1)
    mag = (efield.astype(np.uint64) << np.uint64(fmt.mbits)) | frac
    overflow = efield >= (1 << fmt.ebits) - 1
    to_inf = {"rn": np.ones_like(neg), "rna": np.ones_like(neg), "rz": np.zeros_like(neg),
              "rm": neg, "rp": ~neg}[rnd]
    mag = np.where(overflow, np.where(to_inf, np.uint64(fmt.inf), np.uint64(fmt.max_finite)), mag)
    mag = np.where(ah == 0, np.uint64(0), mag)
    mag = np.where(np.isinf(ah), np.uint64(fmt.inf), mag)
    res = mag | np.where(neg, sign_bit(fmt), np.uint64(0))
    return np.where(np.isnan(hi), np.uint64(fmt.qnan), res)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: s + err == a + b exactly (float64, no overflow)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), err, 0.0)


def _tiny(hi: np.ndarray, lo: np.ndarray, fmt: FloatFmt, rnd: str) -> np.ndarray:
    """IEEE 754 "tininess after rounding": the exact value hi + lo, rounded to the format's
    precision with an unbounded exponent range, is below the smallest normal. This is the .ftz
    flush rule the hardware follows (H200 measurement, docs/base-instructions.md): 2^-126 *
    (1 - 2^-24) is flushed although it rounds to 2^-126 on the subnormal grid, 2^-126 * (1 -
    2^-46) is not flushed."""
    hi, lo = np.broadcast_arrays(np.asarray(hi, np.float64), np.asarray(lo, np.float64))
    cand = np.abs(hi) < 2.0 ** fmt.emin
    tiny = np.zeros(hi.shape, bool)
    if np.any(cand):
        wide = FloatFmt(fmt.name + "_unbounded_exponent", 12 + fmt.mbits, 11, fmt.mbits)
        r = _round_exact(hi[cand], lo[cand], wide, rnd)
        e = (r >> np.uint64(fmt.mbits)) & np.uint64(0x7FF)
        mag = r & np.uint64((1 << (11 + fmt.mbits)) - 1)
        tiny[cand] = (mag != 0) & (e.astype(np.int64) - wide.bias < fmt.emin)
    return tiny


F64_DEFAULT_NAN = 0xFFF8000000000000
F64_QUIET = np.uint64(1 << 51)


def f64_nan_result(r: np.ndarray, *operands: np.ndarray) -> np.ndarray:
    """f64 result bits with the NaN rule of the hardware (H200, sm_90, 2026-11-21; tests
    test_f64_nan_rules_recorded_on_hardware): a NaN operand propagates with its sign and payload,
    quieted -- the first quiet NaN among (a, b, c), else the first signalling one; an invalid
    operation on non-NaN operands (Inf - Inf, 0 * Inf, sqrt(-1)) gives 0xFFF8000000000000. The
    f32/f16/bf16 results are canonical instead (0x7FFFFFFF / 0x7FFF)."""
    r = np.asarray(r)
    rb = r.view(np.uint64) if r.dtype == np.float64 else np.asarray(r, np.uint64)
    out_nan = is_nan(rb, F64)
    if not np.any(out_nan):
        return rb
    ops = [np.broadcast_to(np.asarray(o, np.uint64), rb.shape) for o in operands]
    pick = np.full(rb.shape, np.uint64(F64_DEFAULT_NAN))
    chosen = np.zeros(rb.shape, bool)
    for quiet_pass in (True, False):
        for o in ops:
            nan = is_nan(o, F64)
            q = (o & F64_QUIET) != 0
            sel = nan & ~chosen & (q if quiet_pass else ~q)
            pick = np.where(sel, o | F64_QUIET, pick)
            chosen |= sel
    return np.where(out_nan, pick, rb)


def _finish(r: np.ndarray, fmt: FloatFmt, ftz: bool, sat: bool, tiny=None) -> np.ndarray:
    """Apply .ftz to a rounded result and .sat ([+0, 1], NaN -> +0). `tiny` (from `_tiny`)
    decides the flush when the exact value is known; otherwise a subnormal result is flushed."""
    if ftz:
        flush = is_subnormal(r, fmt) if tiny is None else tiny | is_subnormal(r, fmt)
        r = np.where(flush, r & sign_bit(fmt), r)
    if sat:
        nan = is_nan(r, fmt)
        negative = (r & sign_bit(fmt)) != 0
        above = (r & ~sign_bit(fmt)) > np.uint64(fmt.one)
        r = np.where(nan | negative, np.uint64(0), np.where(above, np.uint64(fmt.one), r))
    return r


# --- f64 exact fallback --------------------------------------------------------------------------
def _frac(x: float) -> Fraction:
    return Fraction(x)


def _round_fraction_f64(v: Fraction, rnd: str) -> float:
    """Correctly rounded float64 of an exact rational (finite), by integer arithmetic."""
    if v == 0:
        return 0.0
    neg = v < 0
    a = -v if neg else v
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = (e if e > -1022 else -1022) - 52          # quantum exponent
    scaled = a / Fraction(2) ** q
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    if rnd == "rn":
        up = rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n & 1)
    elif rnd == "rz":
        up = False
    elif rnd == "rm":
        up = neg and rest > 0
    else:
        up = (not neg) and rest > 0
    n += up
    try:
        mag = float(Fraction(n) * Fraction(2) ** q) if q + n.bit_length() <= 1024 else float("inf")
    except OverflowError:
        mag = float("inf")
    if mag == float("inf") and not (rnd == "rn" or rnd == ("rm" if neg else "rp")):
        mag = np.finfo(np.float64).max
    return -mag if neg else mag


def _exact_f64(op: str, rnd: str, *xs: np.ndarray) -> np.ndarray:
    """Elementwise exact evaluation (slow path, used only for the elements that need it)."""
    res = np.empty(xs[0].shape, np.float64)
    for i, vals in enumerate(zip(*(x.ravel() for x in xs))):
        if not all(np.isfinite(vals)):
            res.flat[i] = np.nan  # caller handles specials before
            continue
        f = [_frac(float(x)) for x in vals]
        if op == "fma":
            v = f[0] * f[1] + f[2]
            if v == 0:  # IEEE 754 6.3: the sign of an exact zero sum
                p_neg = bool(np.signbit(vals[0]) != np.signbit(vals[1]))
                c_neg = bool(np.signbit(vals[2]))
                if f[0] * f[1] == 0 and f[2] == 0:
                    zneg = (p_neg or c_neg) if rnd == "rm" else (p_neg and c_neg)
                else:
                    zneg = rnd == "rm"
                res.flat[i] = -0.0 if zneg else 0.0
                continue
        elif op == "mul":
            v = f[0] * f[1]
        elif op == "div":
            v = f[0] / f[1]
        else:
            raise AssertionError(op)
        r = _round_fraction_f64(v, rnd)
        if r == 0.0 and op in ("mul", "div"):
            r = -0.0 if (np.signbit(vals[0]) != np.signbit(vals[1])) else 0.0
        elif r == 0.0:
            r = -0.0 if v < 0 else 0.0
        res.flat[i] = r
    return res


def _directed_f64(hi: np.ndarray, err: np.ndarray, rnd: str) -> np.ndarray:
    """Move a round-to-nearest float64 result one ulp according to the exact residual sign."""
    if rnd == "rn":
        return hi
    if rnd == "rz":
        step = np.where(hi > 0, err < 0, np.where(hi < 0, err > 0, False))
        return np.where(step, np.nextafter(hi, 0.0), hi)
    if rnd == "rm":
        return np.where(err < 0, np.nextafter(hi, -np.inf), hi)
    return np.where(err > 0, np.nextafter(hi, np.inf), hi)


def _overflow_f64(hi: np.ndarray, finite_in: np.ndarray, rnd: str) -> np.ndarray:
    """An infinite RN result from finite operands is an overflow: directed modes may clamp."""
    big = np.finfo(np.float64).max
    ovf = np.isinf(hi) & finite_in
    if rnd == "rn" or not np.any(ovf):
        return hi
    keep_inf = {"rz": np.zeros(hi.shape, bool), "rm": hi < 0, "rp": hi > 0}[rnd]
    return np.where(ovf & ~keep_inf, np.copysign(big, hi), hi)


def _safe_prod(x, y):
    """Dekker's TwoProduct of x*y is exact (no overflow in the partial products, an error term
    above the subnormal range) when the exponents sum to well inside the float64 range."""
    _, ex = np.frexp(x)
    _, ey = np.frexp(y)
    s = ex.astype(np.int64) + ey
    return ((s > -960) & (s < 1000)) | (x == 0) | (y == 0)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp: x = xh + xl, each of at most 26 significant bits (the sign of xl absorbs the
    53rd), so that every partial product of Dekker's TwoProduct is exact. (Masking low bits off
    instead leaves a 27-bit low part whose square needs 54 bits -- found by the Fraction tests.)
    Only called on significands in [0.5, 1): no overflow."""
    c = x * 134217729.0                                        # 2^27 + 1
    xh = c - (c - x)
    return xh, x - xh


def _two_prod_err(a, b, p):
    """Dekker's TwoProduct error: p + err == a*b exactly, for p = RN(a*b) a normal number (the
    callers check the exponent range). Done on the significands (frexp, exact) and scaled back,
    so that huge or subnormal operands neither overflow nor lose bits in the split."""
    with np.errstate(invalid="ignore", over="ignore"):
        ma, ea = np.frexp(np.asarray(a, np.float64))
        mb, eb = np.frexp(np.asarray(b, np.float64))
        pp = ma * mb                       # == p * 2^-(ea+eb) when p is normal
        ah, al = _split(ma)
        bh, bl = _split(mb)
        err = ((ah * bh - pp) + ah * bl + al * bh) + al * bl
        return np.ldexp(err, ea + eb)


def _f64_op(op: str, rnd: str, a: np.ndarray, b: np.ndarray, c=None) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        if op == "add":
            hi, err = _two_sum(a, b)
            finite_in = np.isfinite(a) & np.isfinite(b)
            r = _directed_f64(hi, err, rnd)
            return _overflow_f64(r, finite_in, rnd)
        if rnd == "rn" and op in ("mul", "div"):
            return a * b if op == "mul" else a / b       # IEEE round-to-nearest already
        if op == "mul":
            hi = a * b
            ok = _safe_prod(a, b) & np.isfinite(hi)
            err = np.where(ok, _two_prod_err(a, b, hi), 0.0)
            r = np.where(ok, _directed_f64(hi, err, rnd), hi)
            hard = ~ok & np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
        elif op == "div":
            hi = a / b
            ok = _safe_prod(hi, b) & (np.abs(a) < 2.0 ** 1000) & np.isfinite(hi) & (hi != 0)
            err = np.where(ok, (a - hi * b) - _two_prod_err(hi, b, hi * b), 0.0)
            # sign(a/b - hi) = sign(a - hi*b) * sign(b)
            r = np.where(ok, _directed_f64(hi, np.where(b < 0, -err, err), rnd), hi)
            hard = ~ok & np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
        elif op == "fma":
            a, b, c = np.broadcast_arrays(a, b, c)
            r, hard = _f64_fma(a, b, c, rnd)
        else:
            raise AssertionError(op)
    if rnd != "rn" and op in ("mul", "div"):
        # x / 0 = Inf is exact (division by zero), not an overflow
        r = _overflow_f64(r, np.isfinite(a) & np.isfinite(b) & (b != 0), rnd)
    if np.any(hard):
        idx = np.flatnonzero(hard)
        args = [x.ravel()[idx] for x in ((a, b, c) if op == "fma" else (a, b))]
        r = r.copy()
        r.ravel()[idx] = _exact_f64(op, rnd, *args)
    return r


def _f64_fma(a, b, c, rnd):
    """a*b + c rounded once, by error-free transformations: a*b = p + e (Dekker), then
    p + e + c = h + m + t2 exactly (two TwoSums and a renormalising TwoSum), |m| <= ulp(h)/2.
    Round-to-nearest differs from h only when m is exactly half the gap to h's neighbour on
    m's side (a tie of s1 + s2) and t2 pushes past it; the directed modes step from h by the
    sign of m + t2. Returns (result, hard): `hard` marks the finite operands outside the range
    where the transformations are exact (they go to the Fraction path) and exact zeros."""
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    with np.errstate(all="ignore"):
        p = a * b
        safe = finite & _safe_prod(a, b) & (np.abs(c) < 2.0 ** 1000) & np.isfinite(p)
        e = np.where(safe, _two_prod_err(a, b, p), 0.0)
        s1, t1 = _two_sum(p, c)
        s2, t2 = _two_sum(t1, e)
        h, m = _two_sum(s1, s2)
        rest = m + t2                                   # its sign is exact
        up_gap = np.nextafter(h, np.inf) - h
        down_gap = h - np.nextafter(h, -np.inf)
        gap = np.where(m > 0, up_gap, down_gap)
        tie = (m != 0) & (2 * np.abs(m) == gap) & (np.sign(t2) == np.sign(m))
        if rnd == "rn":
            r = np.where(tie, h + 2 * m, h)
        else:
            r = _directed_f64(h, rest, rnd)
        # Inf / NaN arithmetic; a finite product is exact inside fma, so it never overflows
        # against an infinite c (H200, base_sm90.npz: fma.rm.f64 2^31 * -1.1e307 + Inf -> +Inf)
        special = np.where(finite, p + c, np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c),
                                                    c, a * b + c))
    r = np.where(finite, r, special)
    hard = finite & (~safe | ~np.isfinite(h) | (h == 0))
    return r, hard


def _f64_sqrt(a: np.ndarray, rnd: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        hi = np.sqrt(a)
    if rnd == "rn":
        return hi
    ok = np.isfinite(hi) & (hi > 0)
    safe = ok & _safe_prod(hi, hi)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(safe, (a - hi * hi) - _two_prod_err(hi, hi, hi * hi), 0.0)
    r = np.where(safe, _directed_f64(hi, err, rnd), hi)
    hard = ok & ~safe
    for i in np.flatnonzero(hard):  # subnormal operands only: exact integer square root
        r.ravel()[i] = _sqrt_exact_f64(float(a.ravel()[i]), rnd)
    return r


def _sqrt_exact_f64(x: float, rnd: str) -> float:
    import math
    f = Fraction(x)
    # scale to an even power of two so the integer square root carries 60 extra bits
    k = 0
    while f < 2 ** 200:
        f *= 4
        k += 1
    n = f.numerator // f.denominator
    r = math.isqrt(n)
    exact = r * r == n and f.denominator == 1
    v = Fraction(r) / Fraction(2) ** k
    # v <= sqrt(x) < v + 2^-k with 2^-k far below an ulp: round v (+ sticky) as a rational
    lo = v if exact else v + Fraction(1, 2 ** (k + 200))
    return _round_fraction_f64(lo, rnd)


# --- type checking helpers --------------------------------------------------------------------------
def _fmt_lanes(instr: str, type: str, allowed) -> tuple[FloatFmt, int]:
    check_choice(instr, "type", type, allowed)
    return PACKED.get(type, (FMTS.get(type), 1))


def _lanes(u: np.ndarray, fmt: FloatFmt, n: int) -> list[np.ndarray]:
    if n == 1:
        return [u]
    m = np.uint64((1 << fmt.width) - 1)
    return [(u >> np.uint64(fmt.width * i)) & m for i in range(n)]


def _join(parts: list[np.ndarray], fmt: FloatFmt) -> np.ndarray:
    r = np.zeros(np.broadcast(*parts).shape, np.uint64)
    for i, p in enumerate(parts):
        r |= np.asarray(p, np.uint64) << np.uint64(fmt.width * i)
    return r


def _operands(instr, type, allowed, *xs):
    fmt, n = _fmt_lanes(instr, type, allowed)
    w = fmt.width * n
    regs_ = [bits(x, w, name) for x, name in zip(xs, "abc")]
    return fmt, n, w, [_lanes(r, fmt, n) for r in regs_]


# --- legality tables (9.7.3 / 9.7.4 syntax blocks) ------------------------------------------------
# instruction -> {type: (allowed roundings, rounding required?, ftz allowed, sat allowed)}
_F32_ARITH = (ROUNDINGS, False, True, True)
_F64_ARITH = (ROUNDINGS, False, False, False)
_H_ARITH = (("rn",), False, True, True)
_BF_ARITH = (("rn",), False, False, False)
ARITH_TABLE = {
    "add": {"f32": _F32_ARITH, "f32x2": (ROUNDINGS, False, True, False), "f64": _F64_ARITH,
            "f16": _H_ARITH, "f16x2": _H_ARITH, "bf16": _BF_ARITH, "bf16x2": _BF_ARITH},
    "fma": {"f32": (ROUNDINGS, True, True, True), "f32x2": (ROUNDINGS, True, True, False),
            "f64": (ROUNDINGS, True, False, False), "f16": (("rn",), True, True, True),
            "f16x2": (("rn",), True, True, True),
            # the ISA lists only .rn for bf16 fma; ptxas 13.0 accepts all four roundings
            # (tests/isa/test_base_legality.py), and ptxsim follows the assembler
            "bf16": (ROUNDINGS, True, False, False), "bf16x2": (ROUNDINGS, True, False, False)},
    # mad.f32 without a rounding is sm_1x only; for the targets ptxsim runs mad == fma
    "mad": {"f32": (ROUNDINGS, True, True, True), "f64": (ROUNDINGS, True, False, False)},
}
ARITH_TABLE["sub"] = ARITH_TABLE["mul"] = ARITH_TABLE["add"]
RELU_FMA_TYPES = ("f16", "f16x2", "bf16", "bf16x2")      # fma.rn{.ftz}.relu


def _check_arith(instr, type, rnd, ftz, sat, relu=False):
    table = ARITH_TABLE[instr]
    check_choice(instr, "type", type, table)
    rnds, required, ftz_ok, sat_ok = table[type]
    if rnd is None:
        if required:
            raise illegal(instr, f"a rounding modifier is required for .{type}")
        rnd = "rn"
    else:
        check_choice(instr, "rounding", rnd, rnds)
    if ftz and not ftz_ok:
        raise illegal(instr, f".ftz is not defined for .{type}")
    if sat and not sat_ok:
        raise illegal(instr, f".sat is not defined for .{type}")
    if relu:
        if instr != "fma" or type not in RELU_FMA_TYPES:
            raise illegal(instr, f".relu is not defined for {instr}.{type}")
        if sat:
            raise illegal(instr, ".relu and .sat cannot be combined")
    return rnd


def _arith(instr, type, rnd, ftz, sat, xs, relu=False):
    rnd = _check_arith(instr, type, rnd, ftz, sat, relu)
    if instr == "fma" and type in ("bf16", "bf16x2") and rnd != "rn":
        # 9.7.4.x lists only fma.rn for .bf16/.bf16x2; ptxas 13.0 assembles .rz/.rm/.rp, and the
        # H200 result is not the bf16 fma with that rounding (tests/data/hardware/base_sweep/base_sm90.npz:
        # fma.rz.bf16 0xbf08 * 0x3f08 + 0x3f08 -> 0xbd54, close to an f16 fma of the same bits;
        # the x2 forms agree with "f32 fma with that rounding, then cvt.rn.bf16" in ~99% of
        # lanes only), so ptxsim warns and keeps the spec's operation)
        import warnings
        from ptxsim.errors import UnlistedFormWarning
        warnings.warn(UnlistedFormWarning(
            f"fma.{rnd}.{type}: the PTX ISA defines only .rn for {type} fma; ptxas accepts "
            f".{rnd} but the H200 does not compute the {type} fma with it (measured), so this "
            "result is the spec's operation, not the hardware's"), stacklevel=3)
    fmt, n, w, lanes = _operands(instr, type, ARITH_TABLE[instr], *xs)
    res = []
    for k in range(n):
        vals = [decode(x[k], fmt, ftz) for x in lanes]
        if fmt is F64:
            op = {"add": "add", "sub": "add", "mul": "mul", "fma": "fma", "mad": "fma"}[instr]
            if instr == "sub":
                vals[1] = -vals[1]
            r = _f64_op(op, rnd, *vals)
            if rnd == "rm" and op == "add":  # (vals[1] already negated for sub)
                r = decode(_rm_zero_sign(r.view(np.uint64), fmt, "add", vals), F64)
            r = f64_nan_result(r, *(x[k] for x in lanes))
        else:
            with np.errstate(all="ignore"):
                if instr in ("add", "sub"):
                    hi, lo = _two_sum(vals[0], vals[1] if instr == "add" else -vals[1])
                elif instr == "mul":
                    hi, lo = vals[0] * vals[1], np.zeros(1)
                else:  # fma / mad: the f64 product of two <= 24-bit significands is exact
                    hi, lo = _two_sum(vals[0] * vals[1], vals[2])
            r = _round(hi, lo, fmt, rnd)
            r = _finish(r, fmt, ftz, sat, _tiny(hi, lo, fmt, rnd) if ftz else None)
            if rnd == "rm" and instr != "mul" and not sat:
                # .sat maps an exact zero to +0 even under .rm (H200, base_sm90.npz:
                # add.rm.sat.f32 0x3f800001 + 0xbf800001 -> 0x0; fma.rm.sat.f32 -1*1+1 -> 0x0)
                r = _rm_zero_sign(r, fmt, instr, vals)
            if relu:  # .relu: negative results -> +0; NaN -> canonical NaN (kept)
                r = np.where(((r & sign_bit(fmt)) != 0) & ~is_nan(r, fmt), np.uint64(0), r)
        res.append(np.asarray(r, np.uint64))
    return out(_join(res, fmt), w)


def _rm_zero_sign(r, fmt, instr, vals):
    """IEEE 754 6.3: an exact zero sum is -0 under roundTowardNegative unless both addends are
    +0 (numpy's float64 arithmetic produced +0)."""
    with np.errstate(all="ignore"):
        if instr in ("add", "sub"):
            x, y = vals[0], vals[1] if instr == "add" else -vals[1]
        else:
            x, y = vals[0] * vals[1], vals[2]
        both_pos = (x == 0) & ~np.signbit(x) & (y == 0) & ~np.signbit(y)
        zero = (x + y == 0) & ~both_pos
    return np.where(zero, sign_bit(fmt), r)


def add(a, b, *, type: str, rnd: str | None = None, ftz: bool = False, sat: bool = False):
    """`add{.rnd}{.ftz}{.sat}.type d, a, b` for f32, f32x2, f64, f16, f16x2, bf16, bf16x2."""
    return _arith("add", type, rnd, ftz, sat, (a, b))


def sub(a, b, *, type: str, rnd: str | None = None, ftz: bool = False, sat: bool = False):
    """`sub{.rnd}{.ftz}{.sat}.type d, a, b`."""
    return _arith("sub", type, rnd, ftz, sat, (a, b))


def mul(a, b, *, type: str, rnd: str | None = None, ftz: bool = False, sat: bool = False):
    """`mul{.rnd}{.ftz}{.sat}.type d, a, b`."""
    return _arith("mul", type, rnd, ftz, sat, (a, b))


def fma(a, b, c, *, type: str, rnd: str, ftz: bool = False, sat: bool = False,
        relu: bool = False):
    """`fma.rnd{.ftz}{.sat|.relu}.type d, a, b, c`: a*b + c rounded once."""
    return _arith("fma", type, rnd, ftz, sat, (a, b, c), relu=relu)


def mad(a, b, c, *, type: str, rnd: str, ftz: bool = False, sat: bool = False):
    """`mad.rnd{.ftz}{.sat}.f32` / `mad.rnd.f64`: identical to fma on sm_20 and later."""
    return _arith("mad", type, rnd, ftz, sat, (a, b, c))


# --- div / rcp / sqrt (IEEE) ---------------------------------------------------------------------
def _f32_div(x: np.ndarray, y: np.ndarray, fmt: FloatFmt, rnd: str) -> np.ndarray:
    """Correctly rounded x / y for formats of <= 24 significand bits.

    q = RN64(x / y) decides every rounding: if x/y is not exactly q, q is neither a value nor a
    midpoint of the target format (|x - q*y| would be a nonzero multiple of ulp(q)*ulp(y) smaller
    than 2^-53 |x|, impossible for 24-bit operands), so hi = q, lo = 0 is exact for `_round`."""
    with np.errstate(all="ignore"):
        q = x / y
    return _round(q, np.zeros(1), fmt, rnd), q


def div(a, b, *, type: str, rnd: str | None = None, ftz: bool = False, approx: bool = False,
        full: bool = False):
    """`div.rnd{.ftz}.f32`, `div.rnd.f64` (IEEE), `div.approx{.ftz}.f32`, `div.full{.ftz}.f32`.

    .approx: d = a * (1/b); for 2^126 < |b| < 2^128 PTX specifies 0 (NaN for an infinite a).
    .approx and .full are the H200's SASS (MUFU.RCP and FMUL, with scaling), bit-exact
    (`_f32_div_approx`)."""
    kinds = (rnd is not None) + approx + full
    if kinds != 1:
        raise illegal("div", "exactly one of .rnd, .approx, .full is required for floats")
    check_choice("div", "type", type, ("f32", "f64") if rnd else ("f32",))
    if rnd:
        check_choice("div", "rounding", rnd, ROUNDINGS)
    if ftz and type == "f64":
        raise illegal("div", ".ftz is not defined for .f64")
    if approx or full:                           # bit-exact sm_90 model (see _f32_div_approx)
        return _f32_div_approx(bits(a, 32, "a"), bits(b, 32, "b"), ftz, full)
    fmt = FMTS[type]
    x, y = decode(bits(a, fmt.width, "a"), fmt, ftz), decode(bits(b, fmt.width, "b"), fmt, ftz)
    if fmt is F64:
        r = _f64_op("div", rnd, x, y)
        return out(f64_nan_result(r, bits(a, 64, "a"), bits(b, 64, "b")), 64)
    r, q = _f32_div(x, y, fmt, rnd)
    tiny = _tiny(q, np.zeros(1), fmt, rnd) if ftz else None
    return out(_finish(r, fmt, ftz, False, tiny), 32)


def rcp(a, *, type: str, rnd: str | None = None, ftz: bool = False, approx: bool = False):
    """`rcp.rnd{.ftz}.f32`, `rcp.rnd.f64`, `rcp.approx{.ftz}.f32`, `rcp.approx.ftz.f64`.

    rcp.approx{.ftz}.f32 is the H200's MUFU.RCP, bit-exact for all 2^32 inputs (`_F32_APPROX`).
    rcp.approx.ftz.f64 is the "gross approximation" of the ISA: the H200's MUFU.RCP64H, bit-exact
    for all 2^32 upper words (`_mufu_rcp64h`): only the upper 32 bits of a (sign, exponent, 20
    fraction bits) are read and the result's low 32 bits are zero.
    ptxas 13.0 also accepts `rcp.rnd.ftz.f64`; .ftz has no effect there in ptxsim."""
    if (rnd is not None) == approx:
        raise illegal("rcp", "exactly one of .rnd and .approx is required")
    check_choice("rcp", "type", type, ("f32", "f64"))
    if approx and type == "f64":
        if not ftz:
            raise illegal("rcp", "the f64 approximation exists only as rcp.approx.ftz.f64")
        return out(_hi_word(_mufu_rcp64h(bits(a, 64, "a"))).view(np.uint64), 64)
    if approx:                                   # bit-exact sm_90 model (see _F32_APPROX)
        return _f32_approx("rcp", bits(a, 32, "a"), ftz)
    one = np.array([FMTS[type].one], np.uint64)
    return div(one, a, type=type, rnd=rnd, ftz=ftz and type == "f32")


def sqrt(a, *, type: str, rnd: str | None = None, ftz: bool = False, approx: bool = False):
    """`sqrt.rnd{.ftz}.f32`, `sqrt.rnd.f64` (IEEE), `sqrt.approx{.ftz}.f32` (the H200's
    MUFU.SQRT, bit-exact for all 2^32 inputs: `_F32_APPROX`).

    sqrt(-0) = -0, sqrt(x < 0) = NaN. For f32 the float64 square root decides every rounding
    (same argument as `_f32_div`: a nonzero a - q^2 cannot be that small)."""
    if (rnd is not None) == approx:
        raise illegal("sqrt", "exactly one of .rnd and .approx is required")
    check_choice("sqrt", "type", type, ("f32", "f64") if rnd else ("f32",))
    if rnd:
        check_choice("sqrt", "rounding", rnd, ROUNDINGS)
    if ftz and type == "f64":
        raise illegal("sqrt", ".ftz is not defined for .f64")
    if approx:                                   # bit-exact sm_90 model (see _F32_APPROX)
        return _f32_approx("sqrt", bits(a, 32, "a"), ftz)
    fmt = FMTS[type]
    x = decode(bits(a, fmt.width, "a"), fmt, ftz)
    if fmt is F64:
        r = _f64_sqrt(x, rnd)
        return out(f64_nan_result(r, bits(a, 64, "a")), 64)
    with np.errstate(invalid="ignore"):
        q = np.sqrt(x)
    tiny = _tiny(q, np.zeros(1), fmt, rnd or "rn") if ftz else None
    return out(_finish(_round(q, np.zeros(1), fmt, rnd or "rn"), fmt, ftz, False, tiny), 32)


# --- MUFU approximations ---------------------------------------------------------------------------
# PTX ISA stated maximum errors (for the documented input ranges). The f32 rcp / rsqrt / sqrt /
# ex2 / lg2 / tanh models are the H200's own results and stay within them
# (tests/isa/test_mufu_f32.py, test_mufu_tanh_sincos.py; lg2 with one more ulp of the result's
# truncation); sin / cos (H200 bits too) meet 2^-20.5 on [-pi, pi] only: beyond, the f32
# argument reduction RZ(a * 1/2pi) costs up to 2^-14.8 near 100pi (docs/mufu.md). The f64 forms
# return the correctly rounded exact function.
APPROX_ERROR_BOUNDS = {
    "rcp.approx.f32": "1 ulp",
    "sqrt.approx.f32": "relative 2^-23",
    "rsqrt.approx.f32": "relative 2^-22.9",
    "rsqrt.approx.f64": "relative 2^-20 (f64 result of an f32-precision approximation)",
    "div.approx.f32": "2 ulp for |b| in [2^-126, 2^126]",
    "div.full.f32": "2 ulp",
    "ex2.approx.f32": "relative 2^-22.5 (|a| in full range)",
    # PTX ISA wording: "2^-22.6 for mantissa"; the H200 reaches 2^-22.15 on [0.5, 1) (docs/mufu.md)
    "lg2.approx.f32": "absolute 2^-22.6 for the mantissa, relative 2^-22 elsewhere",
    "sin.approx.f32": "absolute 2^-20.5 in [-100pi, 100pi]",
    "cos.approx.f32": "absolute 2^-20.5 in [-100pi, 100pi]",
    "tanh.approx.f32": "relative 2^-11",
    "ex2.approx.f16": "relative 2^-9.9", "tanh.approx.f16": "absolute 2^-10.987",
}
APPROX_TYPES = {
    "rsqrt": ("f32", "f64"), "ex2": ("f32", "f16", "f16x2", "bf16", "bf16x2"),
    "lg2": ("f32",), "sin": ("f32",), "cos": ("f32",),
    "tanh": ("f32", "f16", "f16x2", "bf16", "bf16x2"),
}


@functools.lru_cache(maxsize=1)
def _half_mufu_tables() -> dict:
    """Every one of the 65,536 inputs of ex2.approx.f16, tanh.approx.f16, ex2.approx.ftz.bf16 and
    tanh.approx.bf16, as an H200 (sm_90) computed them on 2026-11-21 (src/ptxsim/data/
    mufu_sm90_half.npz): these four are bit-exact for sm_90 by construction; whether sm_100's
    MUFU agrees is not known. The packed x2 forms apply the same table to each half."""
    path = Path(__file__).resolve().parent.parent / "data" / "mufu_sm90_half.npz"
    with np.load(path) as d:
        return {k: d[k].astype(np.uint16) for k in d.files}


# --- f32 rcp / rsqrt / sqrt / ex2 / lg2 .approx: bit-exact models of an H200 (sm_90) MUFU --------
# Derived from captures on an H200 (hardware/mufu/capture.sh, 2026-11-21) and verified there against the
# real instructions for all 2^32 inputs of each of the ten forms (hardware/mufu/verify.sh, docs/mufu.md).
# Whether sm_100's MUFU agrees is not known: these are used for every target. The .ftz forms are
# one MUFU instruction each; the non-.ftz forms are the SASS that ptxas 13.0 emits around it
# (cuobjdump -sass, hardware/mufu/results/mufu_sass.txt), modelled step by step
# in `_F32_APPROX` below. Every table holds the raw result bits of the .ftz instruction over 2^23
# (sqrt, rsqrt: 2^24) consecutive inputs, as its first value and first differences
# (src/ptxsim/data/mufu_sm90_f32.npz, 1.6 MB).
_F32_MUFU_DATA = Path(__file__).resolve().parent.parent / "data" / "mufu_sm90_f32.npz"
_QNAN32, _INF32, _SIGN32, _FRAC32 = 0x7FFFFFFF, 0x7F800000, 0x80000000, 0x7FFFFF


@functools.lru_cache(maxsize=None)
def _f32_mufu_table(name: str) -> np.ndarray:
    """rcp: rcp.approx.ftz of [1, 2) (index: fraction); rsqrt, sqrt: [1, 2) then [2, 4) (index:
    exponent parity << 23 | fraction); ex2: ex2.approx.ftz of [1, 2), i.e. 2 * 2^(j 2^-23);
    lg2_e0, lg2_em1: lg2.approx.ftz of [1, 2) and [0.5, 1). int64 bit patterns."""
    with np.load(_F32_MUFU_DATA) as d:
        first, diff = int(d[name + "_first"]), d[name + "_diff"]
    t = np.empty(diff.size + 1, np.int64)
    t[0] = 0
    np.cumsum(diff, dtype=np.int64, out=t[1:])
    return t + first


def _mufu_at(name: str, idx) -> np.ndarray:
    """_f32_mufu_table(name)[idx]; no table is built for no index (a handler tried on no
    thread, as `ptxsim check`'s coverage pass does: the tables take 64-128 MB each)."""
    if np.size(idx) == 0:
        return np.zeros(np.shape(idx), np.int64)
    return _f32_mufu_table(name)[idx]


def _f32_fields(u):
    u = np.asarray(u).astype(np.int64)
    return u & _SIGN32, (u >> 23) & 0xFF, u & _FRAC32


def _mufu_rcp(u):
    """MUFU.RCP (= rcp.approx.ftz.f32): the [1, 2) table, the exponent negated; a subnormal or
    zero operand gives +-Inf, a result below 2^-126 is flushed to +-0."""
    s, E, f = _f32_fields(u)
    r = _mufu_at("rcp", f) + ((127 - E) << 23)
    r = np.where(r < 0x800000, 0, r) | s
    r = np.where(E == 0, s | _INF32, r)
    return np.where(E == 255, np.where(f == 0, s, _QNAN32), r)


def _mufu_sqrt_rsq(u, name):
    """MUFU.SQRT / MUFU.RSQ: the table of the exponent's parity, the exponent halved. +-0 and
    subnormals: sqrt +-0, rsqrt +-Inf; any other negative operand: NaN."""
    s, E, f = _f32_fields(u)
    e = E - 127
    p = e & 1
    k = (e - p) >> 1
    rsq = name == "rsqrt"
    r = _mufu_at(name, (p << 23) | f) + np.where(rsq, -k, k) * (1 << 23)
    r = np.where((E == 255) & (f == 0), 0 if rsq else _INF32, r)
    r = np.where((s != 0) | ((E == 255) & (f != 0)), _QNAN32, r)
    return np.where(E == 0, s | (_INF32 if rsq else 0), r)


def _mufu_ex2(u):
    """MUFU.EX2: |a| truncated to a fixed-point M with 23 fraction bits (saturating); a negative
    a becomes -M - 1 unless M's fraction is 0 (then -M): the hardware's one's-complement-like
    negation, seen in every negative input of [-1, -0.25) and the random capture. F >> 23 is the
    result's exponent, the low 23 bits index the [1, 2) table. Overflow -> +Inf; a result below
    2^-126 -> +0 (ftz); subnormal operands are 0 (-> 1.0)."""
    s, E, f = _f32_fields(u)
    sh = E - 127                                 # |a| = (f | 2^23) * 2^(sh - 23)
    m = f | 0x800000
    M = np.where(sh >= 0, m << np.clip(sh, 0, 17), m >> np.clip(-sh, 0, 63))
    M = np.where(E == 0, 0, np.minimum(M, 1 << 40))
    F = np.where(s != 0, -M - ((M & _FRAC32) != 0), M)
    r = _mufu_at("ex2", F & _FRAC32) + ((F >> 23) - 1) * (1 << 23)
    r = np.where(r >= _INF32, _INF32, np.where(r < 0x800000, 0, r))
    return np.where((E == 255) & (f != 0), _QNAN32, r)


def _mufu_lg2(u):
    """MUFU.LG2: exponents 0 and -1 ([0.5, 2)) from their own tables; otherwise e + L with L the
    [1, 2) table's value: for e >= 1 rounded toward zero, for e <= -2 the largest f32 magnitude
    strictly below |e| - L (so -126 for a = 2^-126 comes out as -(126 - 2^-17), as recorded).
    +-0 and subnormals give -Inf, other negatives NaN."""
    s, E, f = _f32_fields(u)
    e = E - 127
    t0 = _mufu_at("lg2_e0", f)
    L = t0.astype(np.uint32).view(np.float32).astype(np.float64)
    pos = _round(e + L, np.zeros(1), F32, "rz").astype(np.int64)   # e + L exact in float64
    mag = np.abs(e) - L                                             # exact likewise
    q = _round(mag, np.zeros(1), F32, "rz").astype(np.int64)
    q = q - (q.astype(np.uint32).view(np.float32).astype(np.float64) == mag)
    r = np.where(e >= 1, pos, q | _SIGN32)
    r = np.where(e == 0, t0, np.where(e == -1, _mufu_at("lg2_em1", f), r))
    r = np.where(E == 255, np.where(f == 0, _INF32, _QNAN32), r)
    r = np.where(s != 0, _QNAN32, r)
    return np.where(E == 0, 0xFF800000, r)


# MUFU.TANH (= tanh.approx.f32, one instruction, no .ftz form): the structure found on the H200
# over all 2^31 positive finite inputs (hardware/mufu/tanh.cu analyse, hardware/mufu/results/tanh_analysis.txt):
# tanh(-a) = -tanh(a) bit for bit (NaN aside); |a| < 2^-8 (biased exponent <= 118, subnormals and
# zeros included) gives a itself; |a| >= 8 (exponent >= 130, Inf included) gives +-1.0; in between
# the result does not depend on the low _TANH_DROP[E] fraction bits, so one table entry serves
# 2^_TANH_DROP[E] inputs (src/ptxsim/data/mufu_sm90_tanh.npz, 7,733,248 entries, 0.3 MB).
_TANH_DROP = {119: 6, 120: 6, 121: 6, 122: 5, 123: 5, 124: 4, 125: 4, 126: 4, 127: 3, 128: 2,
              129: 2}   # biased exponent: fraction bits that do not matter (hardware/mufu/build_tanh.py;
# at 129 even 3 do not: kept at 2, the table as verified on the device)
_TANH_DATA = Path(__file__).resolve().parent.parent / "data" / "mufu_sm90_tanh.npz"


@functools.lru_cache(maxsize=1)
def _tanh_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(table, offset by biased exponent, dropped bits by biased exponent): entry
    offset[E] + (f >> drop[E]) is tanh.approx.f32 of the positive a with exponent E, fraction f."""
    with np.load(_TANH_DATA) as d:
        first, diff = int(d["tanh_first"]), d["tanh_diff"]
        if dict(zip(d["tanh_exponents"].tolist(), d["tanh_drop"].tolist())) != _TANH_DROP:
            raise RuntimeError(f"{_TANH_DATA} does not match _TANH_DROP")
    t = np.empty(diff.size + 1, np.int64)
    t[0] = 0
    np.cumsum(diff, dtype=np.int64, out=t[1:])
    off = np.zeros(256, np.int64)
    drop = np.zeros(256, np.int64)
    o = 0
    for E, k in _TANH_DROP.items():
        off[E], drop[E] = o, k
        o += 1 << (23 - k)
    if o != t.size:
        raise RuntimeError(f"{_TANH_DATA}: {t.size} entries, _TANH_DROP needs {o}")
    return t + first, off, drop


def _mufu_tanh(u):
    """MUFU.TANH: odd; identity below 2^-8; +-1 from 8 (and +-Inf); table in between; NaN ->
    0x7FFFFFFF."""
    s, E, f = _f32_fields(u)
    if E.size == 0:                               # no thread: no table (see _mufu_at)
        return np.zeros(E.shape, np.int64)
    t, off, drop = _tanh_table()
    mid = (E >= 119) & (E <= 129)
    r = np.where(mid, t[np.where(mid, off[E] + (f >> drop[E]), 0)], np.where(E >= 130, 0x3F800000,
                 u & 0x7FFFFFFF)) | s
    return np.where((E == 255) & (f != 0), _QNAN32, r)


def _fmul_rn(u, scale):
    """FMUL by a power of two (IEEE round to nearest, subnormals kept; no .FTZ in the SASS)."""
    v = decode(np.asarray(u).astype(np.uint64), F32) * scale
    return _ieee_f32(v)


def _ieee_f32(v):
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(np.isnan(v), _QNAN32, r)


def _f32_approx(instr: str, u, ftz: bool) -> np.ndarray:
    """The f32 .approx forms, bit-exact as an H200 computes them (see `_F32_APPROX`)."""
    u = np.asarray(u).astype(np.int64) & 0xFFFFFFFF
    mufu, pre = _F32_APPROX[instr]
    if ftz:
        return out(mufu(u), 32)
    return out(pre(u, mufu), 32)


def _nonftz_rcp(u, mufu):
    # FSETP |a| < 2^-126 -> s = 2^24; |a| > 2^126 -> s = 0.25; else 1; MUFU.RCP(a*s) * s
    _, E, f = _f32_fields(u)
    tiny = E == 0
    huge = ((E == 253) & (f != 0)) | (E == 254) | ((E == 255) & (f == 0))
    sc = np.where(tiny, 2.0 ** 24, np.where(huge, 0.25, 1.0))
    return _fmul_rn(mufu(_fmul_rn(u, sc)), sc)


def _nonftz_scaled(post):
    # FSETP |a| < 2^-126 -> a * 2^24, MUFU, then `post` (sqrt: * 2^-12, rsqrt: * 2^12, lg2: - 24)
    def f(u, mufu):
        tiny = _f32_fields(u)[1] == 0
        r = mufu(np.where(tiny, _fmul_rn(u, 2.0 ** 24), u))
        return np.where(tiny, post(r), r)
    return f


def _nonftz_ex2(u, mufu):
    # FSETP a < -126 -> MUFU.EX2(a * 0.5) squared by FMUL (the subnormal results)
    small = decode(u.astype(np.uint64), F32) < -126
    r = mufu(np.where(small, _fmul_rn(u, 0.5), u))
    rr = decode(r.astype(np.uint64), F32)
    return np.where(small, _ieee_f32(rr * rr), r)         # rr * rr exact in float64


def _f32_div_approx(a, b, ftz: bool, full: bool) -> np.ndarray:
    """div.approx{.ftz}.f32 and div.full{.ftz}.f32 as ptxas 13.0 compiles them for sm_90
    (hardware/mufu/results/div_sass.txt), on the MUFU.RCP model; checked on the H200 (hardware/mufu/div_verify.sh):
      .full:      |b| > 2^126 -> a *= 0.25, b *= 0.25   (FMUL{.FTZ})
      not .ftz:   |b| < 2^-126 (the original b) -> a *= 2^24, b *= 2^24   (FMUL)
      d = FMUL{.FTZ}(MUFU.RCP(b), a)
    So div.approx of 2^126 < |b| gives MUFU.RCP's flushed 0 times a: the 0 (NaN for an infinite
    a) of the PTX ISA; an a * 2^24 that overflows gives +-Inf."""
    a = np.asarray(a, np.uint64)
    b = np.asarray(b, np.uint64)
    a, b = np.broadcast_arrays(a, b)

    def fmul(x, y):
        return mul(x, y, type="f32", rnd="rn", ftz=ftz).astype(np.uint64)

    def scale(x, s):
        return fmul(x, np.full(x.shape, np.float32(s).view(np.uint32), np.uint64))

    mag = np.abs(decode(b, F32))
    if full:
        huge = mag > 2.0 ** 126                  # FSETP.GT (NaN: false)
        a, b = np.where(huge, scale(a, 0.25), a), np.where(huge, scale(b, 0.25), b)
    if not ftz:
        tiny = mag < 2.0 ** -126                 # FSETP.GEU negated (NaN: false)
        a, b = np.where(tiny, scale(a, 2.0 ** 24), a), np.where(tiny, scale(b, 2.0 ** 24), b)
    return out(fmul(_mufu_rcp(b.astype(np.int64)).astype(np.uint64), a), 32)


_F32_APPROX = {  # instruction: (the MUFU (.ftz form), the non-.ftz SASS around it)
    "rcp": (_mufu_rcp, _nonftz_rcp),
    "sqrt": (lambda u: _mufu_sqrt_rsq(u, "sqrt"),
             _nonftz_scaled(lambda r: _fmul_rn(r, 2.0 ** -12))),
    "rsqrt": (lambda u: _mufu_sqrt_rsq(u, "rsqrt"),
              _nonftz_scaled(lambda r: _fmul_rn(r, 2.0 ** 12))),
    "ex2": (_mufu_ex2, _nonftz_ex2),
    "lg2": (_mufu_lg2, _nonftz_scaled(
        lambda r: _ieee_f32(decode(r.astype(np.uint64), F32) - 24.0))),
    "tanh": (_mufu_tanh, lambda u, mufu: mufu(u)),     # no .ftz form; the SASS is MUFU.TANH alone
    # FMUL.RZ + MUFU.SIN / MUFU.COS, the same SASS with and without .ftz (see _mufu_sincos)
    "sin": (lambda u: _mufu_sincos(u, False), lambda u, mufu: mufu(u)),
    "cos": (lambda u: _mufu_sincos(u, True), lambda u, mufu: mufu(u)),
}


# The f64 approximations, bit-exact as an H200 (sm_90) computes them. SASS (ptxas 13.0, sm_90a,
# hardware/mufu/results/f64_sass.txt): rcp.approx.ftz.f64 is MUFU.RCP64H and rsqrt.approx.ftz.f64 is
# MUFU.RSQ64H, each on the operand's upper word alone, the result's lower word set to 0;
# rsqrt.approx.f64 is MUFU.RSQ64H plus one DFMA refinement (`_rsqrt_f64`). Found and verified on
# the H200 (hardware/mufu/f64.cu, docs/mufu.md): the 64H units read the same tables as MUFU.RCP / MUFU.RSQ
# (`_f32_mufu_table`), indexed by the 20 upper fraction bits followed by three zeros, and keep
# the top 20 of the table value's 23 fraction bits (truncation); the exponent is negated
# (halved) with the f64 bias. 0 mismatches over all 2^32 upper words (x 3 lower words).
_SIGN_HI, _INF_HI, _QNAN_HI, _FRAC_HI = 0x80000000, 0x7FF00000, 0x7FFFFFFF, 0xFFFFF


def _hi_fields(x):
    hi = (np.asarray(x, np.uint64) >> np.uint64(32)).astype(np.int64)
    return hi & _SIGN_HI, (hi >> 20) & 0x7FF, hi & _FRAC_HI


def _hi_result(r, e32_bias_shift):
    """The f64 upper word of an f32 table value r (fraction truncated to 20 bits), its exponent
    rebased by `e32_bias_shift` (the f64 exponent minus the f32 one)."""
    return (((r >> 23) & 0xFF) + e32_bias_shift) << 20 | ((r >> 3) & _FRAC_HI)


def _mufu_rcp64h(x) -> np.ndarray:
    """MUFU.RCP64H (= rcp.approx.ftz.f64) of the upper word of x; returns the result's upper
    word. +-0 / subnormals -> +-Inf; +-Inf -> +-0; results below 2^-1022 flush to +-0; a NaN upper
    word -> 0x7FFFFFFF (a NaN whose upper fraction bits are 0 reads as +-Inf: +-0)."""
    s, E, f = _hi_fields(x)
    r = _mufu_at("rcp", f << 3)              # MUFU.RCP of the f32 1.f (value in (0.5, 1])
    eo = ((r >> 23) & 0xFF) + (1023 - 127) + (1023 - E)
    r = np.where(eo <= 0, s, s | _hi_result(r, (1023 - 127) + (1023 - E)))
    r = np.where(E == 0, s | _INF_HI, r)
    return np.where(E == 0x7FF, np.where(f == 0, s, _QNAN_HI), r)


def _mufu_rsq64h(x) -> np.ndarray:
    """MUFU.RSQ64H (= rsqrt.approx.ftz.f64) of the upper word of x; returns the upper word.
    +-0 / subnormals -> +-Inf; +Inf -> +0; other negatives and NaN upper words -> 0x7FFFFFFF."""
    s, E, f = _hi_fields(x)
    e = E - 1023
    p = e & 1                                       # the exponent's parity picks the table half
    k = (e - p) >> 1
    r = _mufu_at("rsqrt", (p << 23) | (f << 3))   # MUFU.RSQ of [1, 4): (0.5, 1]
    r = _hi_result(r, (1023 - 127) - k)
    r = np.where((E == 0x7FF) & (f == 0), 0, r)
    r = np.where((s != 0) | ((E == 0x7FF) & (f != 0)), _QNAN_HI, r)
    return np.where(E == 0, s | _INF_HI, r)


def _hi_word(h) -> np.ndarray:
    return (np.asarray(h, np.int64).astype(np.uint64) << np.uint64(32)).view(np.float64)


def _dfma(a, b, c):
    return _f64_op("fma", "rn", a, b, c)           # DFMA: one rounding, subnormals kept


def _rsqrt_f64_refine(a: np.ndarray) -> np.ndarray:
    """The DFMA sequence of rsqrt.approx.f64 (hardware/mufu/results/f64_sass.txt), for positive normal a:
        y = {MUFU.RSQ64H(a.hi), 0}; t = DMUL(y, y); t = DFMA(a, -t, 1); c = DFMA(t, 0.375, 0.5)
        u = DMUL(y, t); d = DFMA(c, u, y)        (one Newton step: y (1 + t/2 + 3t^2/8))"""
    y = _hi_word(_mufu_rsq64h(a.view(np.uint64)))
    with np.errstate(all="ignore"):
        t = y * y                                   # DMUL: numpy's IEEE round-to-nearest
        t = _dfma(a, -t, np.ones_like(a))
        c = _dfma(t, np.full_like(a, 0.375), np.full_like(a, 0.5))
        u = y * t
    return _dfma(c, u, y)


def _rsqrt_f64(x: np.ndarray) -> np.ndarray:
    """rsqrt.approx.f64 (sm_90 SASS, hardware/mufu/results/f64_sass.txt): the fast path when
    a.hi - 0x00100000 < 0x7FE00000 unsigned (a positive and normal), else
    __cuda_sm20_drsqrt_f64_slowpath_v2: +-0 -> +-Inf; NaN -> DADD(a, a) (quieted); other
    negatives (-Inf included) -> 0xFFF8000000000000; +Inf -> +0; positive subnormals ->
    refine(a * 2^54) * 2^27 (both DMULs exact)."""
    x = np.asarray(x, np.uint64)
    a = x.view(np.float64)
    hi = (x >> np.uint64(32)).astype(np.int64)
    fast = ((hi - 0x100000) & 0xFFFFFFFF) < 0x7FE00000
    r = np.zeros(x.shape, np.uint64)
    r[fast] = _rsqrt_f64_refine(a[fast]).view(np.uint64)
    slow = np.flatnonzero(~fast)
    if slow.size:
        xs, as_ = x[slow], a[slow]
        rs = np.zeros(slow.size, np.uint64)        # +Inf -> +0 (CS2R)
        sub = (as_ > 0) & np.isfinite(as_)
        with np.errstate(all="ignore"):
            rs[sub] = (_rsqrt_f64_refine(as_[sub] * 2.0 ** 54) * 2.0 ** 27).view(np.uint64)
        rs[(as_ < 0)] = np.uint64(F64_DEFAULT_NAN)
        zero = as_ == 0
        rs[zero] = (xs[zero] & np.uint64(1 << 63)) | np.uint64(0x7FF0000000000000)
        nan = np.isnan(as_)
        rs[nan] = add(xs[nan], xs[nan], type="f64", rnd="rn")   # DADD a, a: the NaN quieted
        r[slow] = rs
    return r


def _approx(instr, fn, a, type, ftz):
    check_choice(f"{instr}.approx", "type", type, APPROX_TYPES[instr])
    fmt, n = PACKED[type] if type in PACKED else (FMTS[type], 1)
    if instr == "ex2" and fmt is BF16 and not ftz:
        raise illegal("ex2.approx", ".bf16/.bf16x2 exist only as ex2.approx.ftz")
    if ftz and (instr == "tanh" or (instr == "ex2" and fmt is F16)):
        raise illegal(f"{instr}.approx", f".ftz is not defined for {instr}.approx.{type}")
    u = bits(a, fmt.width * n, "a")
    if fmt is F32 and instr in _F32_APPROX:     # bit-exact sm_90 models (see _F32_APPROX)
        return _f32_approx(instr, u, ftz)
    table = None
    if fmt in (F16, BF16):
        table = _half_mufu_tables().get(f"{instr}.approx{'.ftz' if ftz else ''}.{fmt.name}")
    res = []
    for lane in _lanes(u, fmt, n):
        if table is not None:        # recorded exhaustively on sm_90 (see _half_mufu_tables)
            res.append(table[lane.astype(np.intp)].astype(np.uint64))
            continue
        x = decode(lane, fmt, ftz)
        with np.errstate(all="ignore"):
            y = fn(x)
        if fmt is F64:
            r = f64_nan_result(y, lane)
        else:
            r = _finish(_round(y, np.zeros(1), fmt, "rn"), fmt, ftz, False)
        res.append(r)
    return out(_join(res, fmt), fmt.width * n)


def rsqrt(a, *, type: str = "f32", ftz: bool = False):
    """`rsqrt.approx{.ftz}.f32` (bit-exact sm_90 MUFU.RSQ), `rsqrt.approx.ftz.f64` (MUFU.RSQ64H
    on the upper word, lower word 0) and `rsqrt.approx.f64` (MUFU.RSQ64H + one DFMA Newton step,
    `_rsqrt_f64`), both f64 forms bit-exact for sm_90; rsqrt(+-0) = +-Inf."""
    def f(x):
        with np.errstate(all="ignore"):
            return np.where(x == 0, np.copysign(np.inf, x), 1.0 / np.sqrt(x))
    if type == "f64":
        x = bits(a, 64, "a")
        if ftz:
            return out(_hi_word(_mufu_rsq64h(x)).view(np.uint64), 64)
        return out(_rsqrt_f64(x), 64)
    return _approx("rsqrt", f, a, type, ftz)


def ex2(a, *, type: str = "f32", ftz: bool = False):
    """`ex2.approx{.ftz}.type`: 2^a (ex2(-Inf) = +0); f32 is the bit-exact sm_90 MUFU.EX2."""
    return _approx("ex2", np.exp2, a, type, ftz)


def lg2(a, *, ftz: bool = False):
    """`lg2.approx{.ftz}.f32`: log2(a); lg2(+-0) = -Inf, lg2(a < 0) = NaN. The bit-exact sm_90
    MUFU.LG2: near a = 1 it is accurate in absolute terms only (2^-22.6), not relative."""
    return _approx("lg2", lambda x: np.where(x == 0, -np.inf, np.log2(x)), a, "f32", ftz)


# sin/cos.approx{.ftz}.f32: bit-exact models of an H200 (sm_90). SASS (ptxas 13.0, all four
# forms, hardware/mufu/results/sincos_sass.txt): FMUL.RZ r = a * 0x3E22F983 (1/2pi in f32; no .FTZ) then
# MUFU.SIN / MUFU.COS r; .ftz and non-.ftz give the same bits. Found on the H200
# (hardware/mufu/sincos.cu, hardware/mufu/build_sincos.py, docs/mufu.md): the result is a function
# of the sign of r and F = trunc(|r| 2^25) mod 2^25 (0 conflicts over all 2^32 inputs); with quadrant = F >> 23 and
# low = F mod 2^23, |sin| = Q[low] in quadrants 0 and 2 and Q[2^23 - 1 - low] (the one's
# complement of low, not 2^23 - low) in quadrants 1 and 3; sin is negative in quadrants 2 and 3
# and odd in r (-0 for r = -0); cos[F] = sin[F + 2^23] and is even. Q: the 2^23 results of the
# first quarter turn (src/ptxsim/data/mufu_sm90_sincos.npz, 0.5 MB). +-Inf and NaN give NaN.
_INV_2PI_BITS = 0x3E22F983
_INV_2PI_F32 = np.float64(np.uint32(_INV_2PI_BITS).view(np.float32))
_SINCOS_DATA = Path(__file__).resolve().parent.parent / "data" / "mufu_sm90_sincos.npz"


@functools.lru_cache(maxsize=1)
def _sin_quarter_table() -> np.ndarray:
    """Q[j] = sin.approx.f32 bits at F = j (r in [j, j + 1) 2^-25 revolutions), j < 2^23."""
    with np.load(_SINCOS_DATA) as d:
        first, diff = int(d["sin_q_first"]), d["sin_q_diff"]
    t = np.empty(diff.size + 1, np.int64)
    t[0] = 0
    np.cumsum(diff, dtype=np.int64, out=t[1:])
    return t + first


def _revolution_fixed(u, revolutions: bool = False):
    """(sign of r, F = trunc(|r| 2^25) mod 2^25) for r = RZ_f32(a * 0x3E22F983), from the bits:
    a * c is exact in float64 (24 x 24 bits), `_round` gives the f32 RZ result; then
    |r| 2^25 = m 2^(E - 125) for r's significand m (hidden bit included) and biased exponent E.
    revolutions: r = a (the .2pi forms, whose input is already in revolutions)."""
    if revolutions:
        r = np.asarray(u).astype(np.int64) & 0xFFFFFFFF
    else:
        x = decode(u.astype(np.uint64), F32)
        r = _round(x * _INV_2PI_F32, np.zeros(1), F32, "rz").astype(np.int64)
    s, E, f = _f32_fields(r)
    m = np.where(E == 0, f, f | 0x800000)
    sh = np.maximum(E, 1) - 125
    F = np.where(sh >= 0, (m << np.clip(sh, 0, 25)) & ((1 << 25) - 1), m >> np.clip(-sh, 0, 63))
    return s, F


def _mufu_sincos(u, cos: bool, revolutions: bool = False):
    u = np.asarray(u).astype(np.int64) & 0xFFFFFFFF
    s, F = _revolution_fixed(u, revolutions)
    if cos:
        F, s = (F + (1 << 23)) & ((1 << 25) - 1), 0
    quad, low = F >> 23, F & 0x7FFFFF
    idx = np.where(quad & 1, 0x7FFFFF - low, low)
    # no table (8M entries) for no index: the coverage pass tries handlers on no thread
    r = _sin_quarter_table()[idx] if idx.size else np.zeros(idx.shape, np.int64)
    r = r | (s ^ np.where(quad >= 2, _SIGN32, 0))
    return np.where(_f32_fields(u)[1] == 255, _QNAN32, r)


def sin(a, *, ftz: bool = False, twopi: bool = False):
    """`sin.approx{.ftz}.f32` (radians): the bit-exact sm_90 FMUL.RZ + MUFU.SIN; sin(+-Inf) =
    NaN. .ftz gives the same bits. twopi: `sin.approx.ftz.2pi.f32` (PTX ISA 9.5; ptxas 13.5
    requires .ftz): a in revolutions, sin(2 pi a) -- MUFU.SIN of a itself, without the FMUL.RZ
    (checked on the H200: hardware/sincos_2pi, tests/isa/test_sincos_2pi.py)."""
    if twopi:
        return _sincos_2pi(a, False, ftz)
    return _approx("sin", lambda x: None, a, "f32", ftz)


def cos(a, *, ftz: bool = False, twopi: bool = False):
    """`cos.approx{.ftz}.f32` (radians): the bit-exact sm_90 FMUL.RZ + MUFU.COS; cos(+-Inf) =
    NaN. .ftz gives the same bits. twopi: `cos.approx.ftz.2pi.f32`, cos(2 pi a) (see sin)."""
    if twopi:
        return _sincos_2pi(a, True, ftz)
    return _approx("cos", lambda x: None, a, "f32", ftz)


def _sincos_2pi(a, cos: bool, ftz: bool):
    name = "cos" if cos else "sin"
    if not ftz:       # ptxas 13.5: ".ftz modifier required for instruction 'sin' with modifier '.2pi'"
        raise illegal(f"{name}.approx.2pi", ".2pi requires .ftz (sin.approx.ftz.2pi.f32)")
    u = bits(a, 32, "a")
    return out(_mufu_sincos(u, cos, revolutions=True).astype(np.uint64), 32)


def tanh(a, *, type: str = "f32"):
    """`tanh.approx.type` for f32, f16, f16x2, bf16, bf16x2. f32 is the bit-exact sm_90
    MUFU.TANH (`_mufu_tanh`), the 16-bit types the recorded sm_90 tables."""
    return _approx("tanh", np.tanh, a, type, False)


# --- min / max / abs / neg / copysign / testp --------------------------------------------------
MINMAX_TABLE = {  # type: (ftz allowed, NaN allowed, xorsign.abs allowed)
    "f32": (True, True, True), "f64": (False, False, False), "f16": (True, True, True),
    "f16x2": (True, True, True), "bf16": (False, True, True), "bf16x2": (False, True, True),
}


def _minmax(instr, a, b, type, ftz, nan, xorsign_abs):
    check_choice(instr, "type", type, MINMAX_TABLE)
    ftz_ok, nan_ok, xs_ok = MINMAX_TABLE[type]
    for flag, ok, name in ((ftz, ftz_ok, ".ftz"), (nan, nan_ok, ".NaN"),
                           (xorsign_abs, xs_ok, ".xorsign.abs")):
        if flag and not ok:
            raise illegal(instr, f"{name} is not defined for .{type}")
    fmt, n, w, (la, lb) = _operands(instr, type, MINMAX_TABLE, a, b)
    res = []
    for x, y in zip(la, lb):
        if ftz:
            x = np.where(is_subnormal(x, fmt), x & sign_bit(fmt), x)
            y = np.where(is_subnormal(y, fmt), y & sign_bit(fmt), y)
        sgn = (x ^ y) & sign_bit(fmt)
        if xorsign_abs:
            x, y = x & ~sign_bit(fmt), y & ~sign_bit(fmt)
        vx, vy = decode(x, fmt), decode(y, fmt)
        # -0 orders below +0 (IEEE 754-2019 minimum / maximum)
        if instr == "min":
            pick_x = (vx < vy) | ((vx == vy) & np.signbit(vx))
        else:
            pick_x = (vx > vy) | ((vx == vy) & ~np.signbit(vx))
        r = np.where(pick_x, x, y)
        nx, ny = is_nan(x, fmt), is_nan(y, fmt)
        if nan:
            r = np.where(nx | ny, np.uint64(fmt.qnan), r)
        else:
            both = np.uint64(fmt.qnan) if fmt is not F64 else f64_nan_result(
                np.full(x.shape, np.uint64(F64.qnan)), x, y)     # min.f64: measured on an H200
            r = np.where(nx & ny, both, np.where(nx, y, np.where(ny, x, r)))
        if xorsign_abs:
            r = np.where(is_nan(r, fmt), r, r | sgn)
        res.append(r)
    return out(_join(res, fmt), w)


def _minmax3(instr, a, b, c, type, ftz, nan, abs_, xorsign_abs):
    """Two or three operands; the three-operand form (sm_100) is `{min,max}{.ftz}{.NaN}{.abs}.f32
    d, a, b, c`, evaluated as op(op(a, b), c) -- the NaN rule (NaN only when every operand is
    NaN, or any with .NaN) composes pairwise."""
    if c is None:
        if abs_:
            raise illegal(instr, ".abs alone exists only in the three-operand .f32 form "
                          "(two operands: .xorsign.abs)")
        return _minmax(instr, a, b, type, ftz, nan, xorsign_abs)
    if type != "f32" or xorsign_abs:
        raise illegal(instr, "the three-operand form is {min,max}{.ftz}{.NaN}{.abs}.f32")
    if abs_:
        a, b, c = (bits(x, 32, n) & np.uint64(0x7FFFFFFF) for x, n in ((a, "a"), (b, "b"),
                                                                         (c, "c")))
    return _minmax(instr, _minmax(instr, a, b, type, ftz, nan, False), c, type, ftz, nan, False)


def min(a, b, c=None, *, type: str, ftz: bool = False, nan: bool = False,  # noqa: A001
        xorsign_abs: bool = False, abs: bool = False):  # noqa: A002
    """`min{.ftz}{.NaN}{.xorsign.abs}.type d, a, b` and `min{.ftz}{.NaN}{.abs}.f32 d, a, b, c`:
    a NaN operand is ignored (all NaN -> canonical NaN) unless .NaN, which makes any NaN operand
    give the canonical NaN; -0 < +0."""
    return _minmax3("min", a, b, c, type, ftz, nan, abs, xorsign_abs)


def max(a, b, c=None, *, type: str, ftz: bool = False, nan: bool = False,  # noqa: A001
        xorsign_abs: bool = False, abs: bool = False):  # noqa: A002
    """`max{.ftz}{.NaN}{.xorsign.abs}.type d, a, b` and `max{.ftz}{.NaN}{.abs}.f32 d, a, b, c`."""
    return _minmax3("max", a, b, c, type, ftz, nan, abs, xorsign_abs)


# --- mixed precision (sm_100): f32 result, f16 / bf16 operands ------------------------------------
MIXED_ATYPES = ("f16", "bf16")


def _mixed(instr, xs, half_idx, atype, rnd, sat):
    check_choice(instr, "atype", atype, MIXED_ATYPES)
    rnd = rnd or "rn"
    check_choice(instr, "rounding", rnd, ROUNDINGS)
    half = FMTS[atype]
    vals = [decode(bits(x, 16 if k in half_idx else 32, n), half if k in half_idx else F32)
            for k, (x, n) in enumerate(zip(xs, "abc"))]
    with np.errstate(all="ignore"):
        if instr in ("add", "sub"):
            hi, lo = _two_sum(vals[0], vals[1] if instr == "add" else -vals[1])
        else:
            hi, lo = _two_sum(vals[0] * vals[1], vals[2])
    r = _finish(_round(hi, lo, F32, rnd), F32, False, sat)
    if rnd == "rm":
        r = _rm_zero_sign(r, F32, "fma" if instr == "fma" else instr, vals)
    return out(r, 32)


def add_mixed(a, c, *, atype: str, rnd: str | None = None, sat: bool = False):
    """`add{.rnd}{.sat}.f32.atype d, a, c`: a is .f16/.bf16, c and d are .f32."""
    return _mixed("add", (a, c), (0,), atype, rnd, sat)


def sub_mixed(a, c, *, atype: str, rnd: str | None = None, sat: bool = False):
    """`sub{.rnd}{.sat}.f32.atype d, a, c`."""
    return _mixed("sub", (a, c), (0,), atype, rnd, sat)


def fma_mixed(a, b, c, *, abtype: str, rnd: str, sat: bool = False):
    """`fma.rnd{.sat}.f32.abtype d, a, b, c`: a, b are .f16/.bf16, c and d are .f32."""
    if rnd is None:
        raise illegal("fma", "a rounding modifier is required")
    return _mixed("fma", (a, b, c), (0, 1), abtype, rnd, sat)


SIGN_OP_TABLE = {"f32": True, "f64": False, "f16": True, "f16x2": True, "bf16": False,
                 "bf16x2": False}   # type -> .ftz allowed (abs, neg)


def _signop(instr, a, type, ftz, op):
    check_choice(instr, "type", type, SIGN_OP_TABLE)
    if ftz and not SIGN_OP_TABLE[type]:
        raise illegal(instr, f".ftz is not defined for .{type}")
    fmt, n, w, (la,) = _operands(instr, type, SIGN_OP_TABLE, a)
    res = []
    for x in la:
        if ftz:
            x = np.where(is_subnormal(x, fmt), x & sign_bit(fmt), x)
        r = op(x, sign_bit(fmt))
        # PTX: "NaN inputs yield an unspecified NaN". Measured on an H200: abs/neg.f32 give the
        # canonical NaN; abs/neg.f64 return the NaN operand quieted, sign unchanged.
        nan_r = x | F64_QUIET if fmt is F64 else np.uint64(fmt.qnan)
        res.append(np.where(is_nan(x, fmt), nan_r, r))
    return out(_join(res, fmt), w)


def abs(a, *, type: str, ftz: bool = False):  # noqa: A001
    """`abs{.ftz}.type d, a`: clears the sign bit."""
    return _signop("abs", a, type, ftz, lambda x, s: x & ~s)


def neg(a, *, type: str, ftz: bool = False):
    """`neg{.ftz}.type d, a`: flips the sign bit."""
    return _signop("neg", a, type, ftz, lambda x, s: x ^ s)


def copysign(a, b, *, type: str):
    """`copysign.type d, a, b`: b with the sign bit of a."""
    check_choice("copysign", "type", type, ("f32", "f64"))
    fmt = FMTS[type]
    x, y = bits(a, fmt.width, "a"), bits(b, fmt.width, "b")
    s = sign_bit(fmt)
    return out((y & ~s) | (x & s), fmt.width)


TESTP_OPS = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")


def testp(a, *, op: str, type: str) -> np.ndarray:
    """`testp.op.type p, a` -> bool. Zeros count as normal (PTX)."""
    check_choice("testp", "op", op, TESTP_OPS)
    check_choice("testp", "type", type, ("f32", "f64"))
    fmt = FMTS[type]
    u = bits(a, fmt.width, "a")
    mag = u & ~sign_bit(fmt)
    inf = mag == np.uint64(fmt.inf)
    nan = mag > np.uint64(fmt.inf)
    sub = is_subnormal(u, fmt)
    return {"finite": ~inf & ~nan, "infinite": inf, "number": ~nan, "notanumber": nan,
            "normal": ~inf & ~nan & ~sub, "subnormal": sub}[op]


# --- executor fast paths ------------------------------------------------------------------------
# Kernels `base.semantics` runs when every operand is a 1-d array of the exact container dtype,
# (kernel, operand dtypes) or None. They give the bits of the functions above (proof below and
# differential tests in tests/isa/test_fast_paths_float.py); elements where the cheap
# computation could differ are recomputed by the general function (`_patch`).
# - add / sub / mul .rn .f32: numpy's float32 arithmetic is IEEE 754 binary32 with
#   round-to-nearest-even, subnormals included -- the correctly rounded result the general
#   path computes; only a NaN result needs the canonical 0x7FFFFFFF.
# - fma / mad .rn .f32: the float64 product of two f32 is exact, s = RN64(p + c) is the `hi` of
#   the general path and its f32 cast the result, except where the general path itself takes
#   the integer rounding (s exactly an f32 midpoint, or below 2^-126, and inexact): those
#   elements are patched.
# - .ftz: an element with a subnormal operand, or whose IEEE result is nonzero and at most
#   2^-126 in magnitude (the only ones the flush rule -- tininess after rounding -- can touch),
#   is patched; every other element is not flushed by the general path either.
_QNAN32 = np.uint32(F32.qnan)
_MAG32 = np.uint32(0x7FFFFFFF)
_MIN_NORMAL32 = np.uint32(0x00800000)
_SUB32 = np.uint32(0x007FFFFF)


def _canonical_nan32(r: np.ndarray) -> np.ndarray:
    nan = (r & _MAG32) > np.uint32(F32.inf)
    if nan.any():
        r[nan] = _QNAN32
    return r


def _subnormal32(u: np.ndarray) -> np.ndarray:
    return (u & _MAG32) - np.uint32(1) < _SUB32          # 0 wraps to 0xFFFFFFFF


def _tiny_result32(r: np.ndarray) -> np.ndarray:
    """0 < |r| <= 2^-126: the results the .ftz flush rule can touch."""
    return (r & _MAG32) - np.uint32(1) < _MIN_NORMAL32      # 0 wraps to 0xFFFFFFFF


def _flush32(u: np.ndarray) -> np.ndarray:
    """.ftz of an operand: subnormals -> zero of the same sign (a copy only when needed)."""
    sub = _subnormal32(u)
    return np.where(sub, u & ~_MAG32, u) if sub.any() else u


def _patch(r, suspect, general, xs):
    if suspect.any():
        r[suspect] = general(*(x[suspect] for x in xs))
    return r


def _f32_binary(ufunc, general, ftz):
    def kernel(a, b):
        with np.errstate(all="ignore"):
            r = ufunc(a.view(np.float32), b.view(np.float32)).view(np.uint32)
        r = _canonical_nan32(r)
        if ftz:
            suspect = _tiny_result32(r) | _subnormal32(a) | _subnormal32(b)
            r = _patch(r, suspect, general, (a, b))
        return r
    return kernel


_MID64 = np.uint64((1 << 29) - 1), np.uint64(1 << 28)     # f32 midpoints among float64 bits


def _f32_fma(general, ftz):
    def kernel(a, b, c):
        z = c.view(np.float32).astype(np.float64)
        with np.errstate(all="ignore"):
            p = a.view(np.float32).astype(np.float64) * b.view(np.float32)
            s = p + z
            r = s.astype(np.float32).view(np.uint32)
            r = _canonical_nan32(r)
            # `_round_rn_fast`'s integer-path elements: (lo != 0) & (midpoint | tiny)
            suspect = _inexact_sum(p, z, s, ((s.view(np.uint64) & _MID64[0]) == _MID64[1]) |
                                   ((np.abs(s) < 2.0 ** -126) & (s != 0)))
        if ftz:
            suspect |= _tiny_result32(r) | _subnormal32(a) | _subnormal32(b) | _subnormal32(c)
        return _patch(r, suspect, general, (a, b, c))
    return kernel


# - .f16 / .f16x2 / .bf16 / .bf16x2 (.rn, no .ftz / .sat / .relu): per 16-bit lane, s = the
#   float64 result (exact for add / sub / mul: at most 40 significant bits; fma as for f32).
#   f16: numpy's float64 -> float16 cast is `_round_rn_fast`'s; the fma midpoint / tiny
#   elements are patched. bf16: RN to f32, then RN to bf16 on the bits. That equals one
#   rounding of the exact value unless the f32 value is itself a bf16 midpoint (low 16 bits
#   0x8000): bf16 values and midpoints are f32 values, and rounding is monotonic, so any other
#   f32 value lies strictly on the exact value's side of every bf16 value and midpoint. Those
#   elements, and tiny ones, are patched -- for add / sub / mul only where the f32 cast was
#   inexact: s is then the exact value (a float64 add is inexact only for an exponent gap
#   above 45, which puts the sum far from every bf16 midpoint; products have 16 bits), and an
#   f32 value equal to s is rounded once.
_HALF_LANES = {"f16": (F16, 1), "f16x2": (F16, 2), "bf16": (BF16, 1), "bf16x2": (BF16, 2)}
_MID_F16 = np.uint64((1 << 42) - 1), np.uint64(1 << 41)


def _half_to_f64(h, fmt):
    if fmt is F16:
        return h.view(np.float16).astype(np.float64)
    return (h.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def _inexact_sum(p, c, s, sel):
    """Narrow `sel` to the elements where s = RN64(p + c) is inexact (`_two_sum`'s error,
    computed for the selected elements only)."""
    if sel.any():
        sel[sel] = _two_sum(p[sel], c[sel])[1] != 0
    return sel


def _half_round(s, fmt, pc=None):
    """(bits uint16, elements to patch) of the float64 s rounded to nearest fmt; pc = (p, c)
    for fma (s = RN64(p + c)), None when s is exact."""
    tiny = (np.abs(s) < 2.0 ** fmt.emin) & (s != 0)
    if fmt is F16:
        r = s.astype(np.float16).view(np.uint16)
        mid = (s.view(np.uint64) & _MID_F16[0]) == _MID_F16[1]
        # `_round_rn_fast`'s integer-path elements: (lo != 0) & (midpoint | tiny)
        suspect = None if pc is None else _inexact_sum(*pc, s, mid | tiny)
    else:
        r32 = s.astype(np.float32).view(np.uint32)
        r = ((r32 + (np.uint32(0x7FFF) + ((r32 >> np.uint32(16)) & np.uint32(1)))) >>
             np.uint32(16)).astype(np.uint16)
        mid = (r32 & np.uint32(0xFFFF)) == np.uint32(0x8000)
        cast_exact = r32.view(np.float32) == s
        suspect = mid & ~cast_exact     # an exact s that is an f32 value is rounded once
        if pc is not None:
            suspect |= _inexact_sum(*pc, s, mid & cast_exact)
        suspect |= tiny
    nan = s != s
    if nan.any():
        r[nan] = np.uint16(0x7FFF)
    return r, suspect


def _half_kernel(instr, type, general):
    fmt, n = _HALF_LANES[type]
    op = {"add": np.add, "sub": np.subtract, "mul": np.multiply}.get(instr)

    def lane_result(xs):
        vals = [_half_to_f64(x, fmt) for x in xs]
        with np.errstate(all="ignore"):
            if op is not None:
                return _half_round(op(vals[0], vals[1]), fmt)
            p = vals[0] * vals[1]
            return _half_round(p + vals[2], fmt, (p, vals[2]))

    def kernel(*xs):
        if n == 1:
            r, suspect = lane_result(xs)
        else:
            lo, s_lo = lane_result([x.astype(np.uint16) for x in xs])
            hi, s_hi = lane_result([(x >> np.uint32(16)).astype(np.uint16) for x in xs])
            r = (hi.astype(np.uint32) << np.uint32(16)) | lo
            suspect = None if s_lo is None else s_lo | s_hi
        return r if suspect is None else _patch(r, suspect, general, xs)
    dt = np.uint16 if n == 1 else np.uint32
    return kernel, (dt,) * (2 if op is not None else 3)


def _fast_arith(instr):
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply}.get(instr)

    def build(type, rnd=None, ftz=False, sat=False, relu=False):
        if type in _HALF_LANES and rnd in ((None, "rn") if ufunc else ("rn",)) and not (
                ftz or sat or relu) and instr != "mad":
            return _half_kernel(instr, type, functools.partial(globals()[instr], type=type,
                                                               rnd=rnd))
        if type != "f32" or rnd not in ((None, "rn") if ufunc else ("rn",)) or sat or relu:
            return None
        general = functools.partial(globals()[instr], type="f32", rnd=rnd, ftz=ftz)
        if ufunc is not None:
            return _f32_binary(ufunc, general, ftz), (np.uint32, np.uint32)
        return _f32_fma(general, ftz), (np.uint32, np.uint32, np.uint32)
    return build


def _fast_minmax(instr):
    """min / max .f32 {.ftz}: -0 below +0, one NaN operand ignored, two give the canonical NaN
    (the rules of `_minmax`)."""
    def build(type, ftz=False, nan=False, xorsign_abs=False, abs=False):  # noqa: A002
        if type != "f32" or nan or xorsign_abs or abs:
            return None
        less = np.less if instr == "min" else np.greater
        sign_pick = np.uint32(0x80000000) if instr == "min" else np.uint32(0)

        def kernel(a, b):
            if ftz:
                a, b = _flush32(a), _flush32(b)
            x, y = a.view(np.float32), b.view(np.float32)
            with np.errstate(invalid="ignore"):
                pick_a = less(x, y) | ((x == y) & ((a & ~_MAG32) == sign_pick))
            r = np.where(pick_a, a, b)
            nx, ny = x != x, y != y
            if nx.any() or ny.any():
                r = np.where(ny, a, r)
                r[nx & ny] = _QNAN32
            return r
        return kernel, (np.uint32, np.uint32)
    return build


def _fast_signop(instr):
    def build(type, ftz=False):
        if type != "f32" or ftz:
            return None
        if instr == "abs":
            return (lambda a: _canonical_nan32(a & _MAG32)), (np.uint32,)
        return (lambda a: _canonical_nan32(a ^ np.uint32(0x80000000))), (np.uint32,)
    return build


FAST_PATHS = {add: _fast_arith("add"), sub: _fast_arith("sub"), mul: _fast_arith("mul"),
              fma: _fast_arith("fma"), mad: _fast_arith("mad"), min: _fast_minmax("min"),
              max: _fast_minmax("max"), abs: _fast_signop("abs"), neg: _fast_signop("neg")}


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray, rnd: str = "rn") -> np.ndarray:
    """a * b + c of float64 arrays, rounded once (`rnd`: rn / rz / rm / rp), as float64 values;
    NaN payloads are the caller's (`f64_nan_result`). Used by the f64 mma (isa.mma_sync.dmma)."""
    return _f64_op("fma", rnd, np.asarray(a, np.float64), np.asarray(b, np.float64),
                   np.asarray(c, np.float64))
