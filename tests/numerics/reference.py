"""A second, deliberately naive implementation of FACTS.md section 1: one output at a time, with
Python Fractions and ints, elements decoded by ml_dtypes (not by ptxsim's format table).

It shares only the parameter table with the engine, so it checks the vectorised engine on forms
MMA-Sim does not model (mixed C/D types, block-scaled K > 64, sparse-pattern A, warp-level fp8 on
sm_90 / sm_100, integer kinds).
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

from ptxsim.numerics import params

ML = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e3m2": ml_dtypes.float6_e3m2fn,
      "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn,
      "ue8m0": ml_dtypes.float8_e8m0fnu, "f32": np.float32, "tf32": np.float32,
      "ue4m3": ml_dtypes.float8_e4m3fn}
NAN = "nan"


def decode(bits: int, fmt: str):
    """-> (Fraction value, normalised exponent) or ('nan'|+-inf float, None)."""
    if fmt == "tf32":
        bits &= 0xFFFFE000
    if fmt == "ue4m3":
        bits &= 0x7F
    dt = np.dtype(ML[fmt])
    if dt.itemsize == 1:
        x = np.array([bits], np.uint8).view(dt)[0]
    else:
        x = np.array([bits], f"u{dt.itemsize}").view(dt)[0]
    v = float(x)
    if math.isnan(v):
        return NAN, None
    if math.isinf(v):
        return v, None
    emin = int(ml_dtypes.finfo(dt).minexp) if fmt != "ue8m0" else -127
    if v == 0:
        return Fraction(0), None
    return Fraction(v), max(math.frexp(abs(v))[1] - 1, emin)


def _round(s: Fraction, rho: str) -> int:
    frac, emin, width, qnan = {"RZ-FP32": (23, -126, 32, 0x7FFFFFFF),
                               "RZ-E8M13": (13, -126, 32, 0x7FFFFFFF),
                               "RNE-FP16": (10, -14, 16, 0x7FFF)}[rho]
    if s == 0:
        return 0
    neg, m = s < 0, abs(s)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    q = max(e, emin) - frac
    units = m / Fraction(2) ** q
    k = math.floor(units)
    if rho.startswith("RNE") and (units - k > Fraction(1, 2) or
                                  (units - k == Fraction(1, 2) and k % 2)):
        k += 1
    val = float(Fraction(k) * Fraction(2) ** q) if q > -1000 else 0.0
    dt = np.float16 if width == 16 else np.float32
    with np.errstate(over="ignore"):
        out = np.array([-val if neg else val]).astype(dt)
    return int(out.view(np.uint16 if width == 16 else np.uint32)[0])


def _fuse(terms, F: int, rho: str) -> int:
    """terms: list of (value, exponent-or-None-for-zero) with e_zero already substituted."""
    vals = [t[0] for t in terms]
    if any(v == NAN for v in vals):
        return _round_nan(rho)
    infs = {v for v in vals if isinstance(v, float)}
    if len(infs) == 2:
        return _round_nan(rho)
    if infs:
        inf = infs.pop()
        return _inf_bits(inf, rho)
    emax = max(e for _, e in terms)
    grid = Fraction(2) ** (emax - F)
    total = sum(int(v / grid) for v, _ in terms) * grid     # int() truncates toward zero
    return _round(total, rho)


def _round_nan(rho):
    return 0x7FFF if rho == "RNE-FP16" else 0x7FFFFFFF


def _inf_bits(inf, rho):
    if rho == "RNE-FP16":
        return 0x7C00 if inf > 0 else 0xFC00
    return 0x7F800000 if inf > 0 else 0xFF800000


def _mul(x, y):
    (va, ea), (vb, eb) = x, y
    if va == NAN or vb == NAN:
        return NAN, None
    if isinstance(va, float) or isinstance(vb, float):
        if va == 0 or vb == 0:
            return NAN, None
        sign = (1 if va > 0 else -1) * (1 if vb > 0 else -1)
        return sign * math.inf, None
    if va == 0 or vb == 0:
        return Fraction(0), None
    return va * vb, ea + eb


def ref_mma(a, b, c, *, arch, kind, atype, btype, ctype, dtype, scale_a=None, scale_b=None,
            scale_type=None, block=None, satfinite=False):
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    M, K = a.shape
    N = b.shape[1]
    if kind == "i8":
        def ival(x, t):
            bits = {"s8": 8, "u8": 8, "s4": 4, "u4": 4, "s32": 32}[t]
            x = int(x) & ((1 << bits) - 1)
            return x - (1 << bits) if t[0] == "s" and x >> (bits - 1) else x
        out = np.zeros((M, N), np.uint32)
        for i in range(M):
            for j in range(N):
                d = sum(ival(a[i, k], atype) * ival(b[k, j], btype) for k in range(K))
                d += ival(c[i, j], "s32")
                if satfinite:
                    d = min(max(d, -2**31), 2**31 - 1)
                out[i, j] = d & 0xFFFFFFFF
        return out
    p = params(arch, kind, atype, btype, dtype)
    out = np.zeros((M, N), np.uint16 if dtype == "f16" else np.uint32)
    for i in range(M):
        for j in range(N):
            acc = decode(int(c[i, j]), ctype)
            for k0 in range(0, K, p.L):
                k1 = min(k0 + p.L, K)
                cv, ce = acc
                terms = [(cv, p.e_zero if ce is None and not isinstance(cv, (float, str))
                          else ce)]
                if p.model == "grouped":
                    for g0 in range(k0, k1, p.G):
                        prods = [_mul(decode(int(a[i, k]), atype), decode(int(b[k, j]), btype))
                                 for k in range(g0, g0 + p.G)]
                        s = g0 // block
                        sa = decode(int(scale_a[i, s]), scale_type)
                        sb = decode(int(scale_b[s, j]), scale_type)
                        if NAN in (sa[0], sb[0]):
                            terms.append((NAN, None))
                            continue
                        gsum = sum(v for v, _ in prods)
                        all_zero = all(v == 0 for v, _ in prods)
                        if sa[0] == 0 or sb[0] == 0 or all_zero:
                            terms.append((gsum * sa[0] * sb[0], p.e_zero))
                        else:
                            terms.append((gsum * sa[0] * sb[0], sa[1] + sb[1]))
                else:
                    for k in range(k0, k1):
                        x, y = decode(int(a[i, k]), atype), decode(int(b[k, j]), btype)
                        if scale_type is not None:
                            s = k // block
                            x = _mul(x, decode(int(scale_a[i, s]), scale_type))
                            y = _mul(y, decode(int(scale_b[s, j]), scale_type))
                        v, e = _mul(x, y)
                        terms.append((v, p.e_zero if e is None and v == 0 else e))
                bits = _fuse(terms, p.F if p.model == "grouped" else p.F, p.rho)
                out[i, j] = bits
                acc = decode(bits, dtype)
    return out
