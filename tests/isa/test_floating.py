"""Floating-point instructions against exact rational arithmetic (fractions.Fraction) rounded by an
independent reference written here, IEEE 754 special-value rules, and hand-worked bit patterns."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import floating as F

RNG = np.random.default_rng(99)
# (width, exponent bits, fraction bits)
FMT = {"f16": (16, 5, 10), "bf16": (16, 8, 7), "f32": (32, 8, 23), "f64": (64, 11, 52)}


def to_frac(b, fmt):
    """Exact value of a bit pattern (None for NaN, +-'inf' strings for infinities)."""
    w, eb, mb = FMT[fmt]
    s, e, m = b >> (w - 1), (b >> mb) & ((1 << eb) - 1), b & ((1 << mb) - 1)
    if e == (1 << eb) - 1:
        return None if m else ("-inf" if s else "inf")
    bias = (1 << (eb - 1)) - 1
    v = Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias) if e == 0 else \
        Fraction((1 << mb) + m, 1 << mb) * Fraction(2) ** (e - bias)
    return -v if s else v


def ref_round(v, fmt, mode, neg_zero=False):
    """Bits of `fmt` for the exact rational v under IEEE rounding `mode` (rn rz rm rp rna).

    Independent of ptxsim: finds the two neighbouring representable magnitudes by integer floor
    at the quantum of v's binade."""
    w, eb, mb = FMT[fmt]
    bias = (1 << (eb - 1)) - 1
    sign = 1 if (v < 0 or (v == 0 and neg_zero)) else 0
    a = abs(v)
    if a == 0:
        return sign << (w - 1)
    e = a.numerator.bit_length() - a.denominator.bit_length()   # floor(log2 a) or one more
    if a < Fraction(2) ** e:
        e -= 1
    e = max(e, 1 - bias)
    quantum = Fraction(2) ** (e - mb)
    n = math.floor(a / quantum)
    rest = a / quantum - n
    if mode == "rn":
        up = rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1)
    elif mode == "rna":
        up = rest >= Fraction(1, 2)
    elif mode == "rz":
        up = False
    elif mode == "rm":
        up = sign == 1 and rest > 0
    else:
        up = sign == 0 and rest > 0
    mag = (n + up) * quantum
    maxf = (2 - Fraction(1, 1 << mb)) * Fraction(2) ** bias
    inf_bits = ((1 << eb) - 1) << mb
    if mag > maxf:
        to_inf = mode in ("rn", "rna") or (mode == "rm" and sign) or (mode == "rp" and not sign)
        return (sign << (w - 1)) | (inf_bits if to_inf else inf_bits - 1)
    # encode mag
    if mag < Fraction(2) ** (1 - bias):
        return (sign << (w - 1)) | int(mag / Fraction(2) ** (1 - bias - mb))
    e2 = mag.numerator.bit_length() - mag.denominator.bit_length()
    if mag < Fraction(2) ** e2:
        e2 -= 1
    frac = int(mag / Fraction(2) ** (e2 - mb)) - (1 << mb)
    return (sign << (w - 1)) | ((e2 + bias) << mb) | frac


def qnan(fmt, operands=()):
    """The NaN a result gets. f32/f16/bf16: canonical (sign 0, all ones). f64 (H200 measurement,
    test_f64_nan_rules_recorded_on_hardware): the first quiet NaN operand, else the first
    signalling one made quiet, else (an invalid operation) 0xFFF8000000000000."""
    if fmt != "f64":
        return (1 << (FMT[fmt][0] - 1)) - 1
    nans = [x for x in operands if (x >> 52) & 0x7FF == 0x7FF and x & ((1 << 52) - 1)]
    quiet = [x for x in nans if x >> 51 & 1]
    if quiet:
        return quiet[0]
    if nans:
        return nans[0] | 1 << 51
    return 0xFFF8000000000000


def specials(fmt):
    w, eb, mb = FMT[fmt]
    s = 1 << (w - 1)
    inf = ((1 << eb) - 1) << mb
    one = ((1 << (eb - 1)) - 1) << mb
    return [0, s, 1, s | 1, (1 << mb) - 1, 1 << mb, inf - 1, s | (inf - 1), inf, s | inf,
            inf | 1, one, s | one, one + 1, one - 1]


def rand_bits(fmt, n, narrow=False):
    """Random patterns; `narrow` keeps exponents near 0 so sums interact (plus edge ranges)."""
    w, eb, mb = FMT[fmt]
    raw = [int(x) for x in RNG.integers(0, 1 << min(w, 63), n, dtype=np.uint64)]
    if w == 64:
        raw = [x | (int(RNG.integers(0, 2)) << 63) for x in raw]
    if narrow:
        bias = (1 << (eb - 1)) - 1
        out = []
        for x in raw:
            e = bias + int(RNG.integers(-6, 7))
            out.append((x & ((1 << mb) - 1)) | (e << mb) | (x & (1 << (w - 1))))
        raw = out
    return raw


def arr(xs, fmt):
    return np.array(xs, dtype={16: np.uint16, 32: np.uint32, 64: np.uint64}[FMT[fmt][0]])


def flush(b, fmt):
    """ftz of an input / output pattern."""
    w, eb, mb = FMT[fmt]
    if (b >> mb) & ((1 << eb) - 1) == 0:
        return b & (1 << (w - 1))
    return b


def tiny_after_rounding(v, fmt, mode):
    """IEEE 754 tininess after rounding: v rounded to p significant bits with an unbounded
    exponent is below 2^emin (the .ftz rule the H200 follows: test_ftz_tininess_recorded_...)."""
    w, eb, mb = FMT[fmt]
    emin = 2 - (1 << (eb - 1))
    a = abs(v)
    if a == 0 or a >= Fraction(2) ** emin:
        return False
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < Fraction(2) ** e:
        e -= 1
    q = Fraction(2) ** (e - mb)
    n, rest = divmod(a, q)
    up = {"rn": rest > q / 2 or (rest == q / 2 and n % 2 == 1), "rna": rest >= q / 2,
          "rz": False, "rm": v < 0 and rest > 0, "rp": v > 0 and rest > 0}[mode]
    return (n + up) * q < Fraction(2) ** emin


def ref_op(op, xs, fmt, mode, ftz=False, sat=False):
    w, eb, mb = FMT[fmt]
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    sg = [x >> (w - 1) for x in xs]
    vals = [to_frac(x, fmt) for x in xs]
    inf_bits = ((1 << eb) - 1) << mb
    if any(v is None for v in vals):
        r = qnan(fmt, xs)
    elif any(isinstance(v, str) for v in vals):
        # an infinite operand: IEEE special-value arithmetic, taken from float64
        fv = [np.float64(float(v)) for v in vals]
        with np.errstate(all="ignore"):
            res = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                   "mul": lambda a, b: a * b, "fma": lambda a, b, c: a * b + c,
                   "div": lambda a, b: a / b}[op](*fv)
        if np.isnan(res):
            r = qnan(fmt, xs)
        elif np.isinf(res):
            r = inf_bits | (int(res < 0) << (w - 1))
        else:  # x / inf
            r = int(np.signbit(res)) << (w - 1)
    else:
        a = vals
        if op == "div" and a[1] == 0:
            if a[0] == 0:
                return qnan(fmt, xs)
            return ((sg[0] ^ sg[1]) << (w - 1)) | inf_bits
        v = {"add": lambda: a[0] + a[1], "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
             "fma": lambda: a[0] * a[1] + a[2], "div": lambda: a[0] / a[1]}[op]()
        if v == 0:  # IEEE 754 6.3 signs of zero
            if op in ("mul", "div"):
                neg = bool(sg[0] ^ sg[1])
            else:
                if op == "fma":
                    sx, sy, zx, zy = sg[0] ^ sg[1], sg[2], a[0] * a[1] == 0, a[2] == 0
                else:
                    sx, sy = sg[0], sg[1] if op == "add" else 1 - sg[1]
                    zx, zy = a[0] == 0, a[1] == 0
                if zx and zy:
                    neg = bool(sx and sy) if mode != "rm" else bool(sx or sy)
                else:
                    neg = mode == "rm"
            r = ref_round(Fraction(0), fmt, mode, neg_zero=neg)
        else:
            r = ref_round(v, fmt, mode)
            if ftz and tiny_after_rounding(v, fmt, mode):
                r &= 1 << (w - 1)
    if ftz:
        r = flush(r, fmt)
    if sat:
        one = ((1 << (eb - 1)) - 1) << mb
        if r == qnan(fmt) or r >> (w - 1):
            r = 0
        elif r > one:
            r = one
    return r


def run_op(op, xs_cols, fmt, mode, ftz=False, sat=False):
    fn = {"add": F.add, "sub": F.sub, "mul": F.mul, "fma": F.fma}[op]
    kw = dict(type=fmt, rnd=mode)
    if ftz:
        kw["ftz"] = True
    if sat:
        kw["sat"] = True
    return [int(x) for x in fn(*[arr(c, fmt) for c in xs_cols], **kw)]


def operands(fmt, nargs, n=150):
    sp = specials(fmt)
    cols = []
    for k in range(nargs):
        col = sp + rand_bits(fmt, n // 2, narrow=True) + rand_bits(fmt, n // 2)
        RNG.shuffle(col)
        cols.append([int(x) for x in col])
    # pairs that cancel exactly and nearly
    cols[0][:4] = [sp[11], sp[12], sp[13], sp[11]]
    cols[1][:4] = [sp[12], sp[11], sp[12], sp[11]]
    return cols


@pytest.mark.parametrize("fmt,modes", [("f32", ("rn", "rz", "rm", "rp")), ("f16", ("rn",)),
                                       ("bf16", ("rn",)), ("f64", ("rn", "rz", "rm", "rp"))])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_add_sub_mul_exact(fmt, modes, op):
    cols = operands(fmt, 2)
    for mode in modes:
        got = run_op(op, cols, fmt, mode)
        want = [ref_op(op, xs, fmt, mode) for xs in zip(*cols)]
        bad = [(hex(x), hex(y), hex(g), hex(w)) for x, y, g, w in zip(*cols, got, want) if g != w]
        assert not bad, (mode, bad[:5])


@pytest.mark.parametrize("fmt,modes", [("f32", ("rn", "rz", "rm", "rp")), ("f16", ("rn",)),
                                       ("bf16", ("rn",)), ("f64", ("rn", "rz", "rm", "rp"))])
def test_fma_exact(fmt, modes):
    cols = operands(fmt, 3, 120)
    for mode in modes:
        got = run_op("fma", cols, fmt, mode)
        want = [ref_op("fma", xs, fmt, mode) for xs in zip(*cols)]
        bad = [tuple(map(hex, t)) for t in zip(*cols, got, want) if t[-1] != t[-2]]
        assert not bad, (mode, bad[:5])


def test_fma_single_rounding_example():
    # fma(1+2^-23, 1-2^-23, -1) = -2^-46 exactly; mul then add would give 0.
    a = np.float32(1 + 2 ** -23).view(np.uint32)
    b = np.float32(1 - 2 ** -23).view(np.uint32)
    c = np.float32(-1).view(np.uint32)
    got = F.fma([a], [b], [c], type="f32", rnd="rn")
    assert got.view(np.float32)[0] == np.float32(-(2.0 ** -46))
    assert F.add(F.mul([a], [b], type="f32", rnd="rn"), [c], type="f32")[0] == 0


@pytest.mark.parametrize("fmt", ["f32", "f16"])
def test_ftz_and_sat(fmt):
    cols = operands(fmt, 2, 120)
    for op in ("add", "mul"):
        got = run_op(op, cols, fmt, "rn", ftz=True, sat=True)
        want = [ref_op(op, xs, fmt, "rn", ftz=True, sat=True) for xs in zip(*cols)]
        assert got == want
        got = run_op(op, cols, fmt, "rn", ftz=True)
        want = [ref_op(op, xs, fmt, "rn", ftz=True) for xs in zip(*cols)]
        assert got == want


def test_ftz_examples():
    tiny = np.array([1], np.uint32)  # smallest f32 subnormal
    assert F.add(tiny, [0], type="f32")[0] == 1
    assert F.add(tiny, [0], type="f32", ftz=True)[0] == 0
    neg_tiny = np.array([0x80000001], np.uint32)
    assert F.add(neg_tiny, [0x80000000], type="f32", ftz=True)[0] == 0x80000000
    # 2^-100 * 2^-30 = 2^-130: subnormal result, flushed to +0 with .ftz
    a, b = np.float32(2.0 ** -100).view(np.uint32), np.float32(2.0 ** -30).view(np.uint32)
    assert F.mul([a], [b], type="f32")[0] == np.float32(2.0 ** -130).view(np.uint32)
    assert F.mul([a], [b], type="f32", ftz=True)[0] == 0


def test_ftz_tininess_recorded_on_hardware():
    """H200 (sm_90), 2026-11-21: mul.rn.ftz.f32 0x3f7fffff * 0x00800000 = 2^-126 (1 - 2^-24)
    -> 0 (flushed, although it rounds to 2^-126 on the subnormal grid); mul.rn.ftz.f32 0x20000001
    * 0x1ffffffe = 2^-126 (1 - 2^-46) -> 0x00800000 (not flushed); mul.rz.f32 of the latter ->
    0x007fffff; cvt.rn.ftz.f32.f64 0x380ffffffffff000 -> 0x00800000."""
    assert F.mul([0x3F7FFFFF], [0x00800000], type="f32", rnd="rn", ftz=True)[0] == 0
    assert F.mul([0x20000001], [0x1FFFFFFE], type="f32", rnd="rn", ftz=True)[0] == 0x00800000
    assert F.mul([0x20000001], [0x1FFFFFFE], type="f32", rnd="rz")[0] == 0x007FFFFF
    from ptxsim.isa import convert as V
    assert V.cvt(np.array([0x380FFFFFFFFFF000], np.uint64), dtype="f32", atype="f64", rnd="rn",
                 ftz=True)[0] == 0x00800000
    # and without .ftz the first product is the (normal) 2^-126
    assert F.mul([0x3F7FFFFF], [0x00800000], type="f32", rnd="rn")[0] == 0x00800000


def test_f64_nan_rules_recorded_on_hardware():
    """H200 (sm_90), 2026-11-21. X = 0x7ff0000000000001 (signalling), Y = 0x7ff8000000000002,
    Z = 0x7ff8000000000003 (quiet)."""
    X, Y, Z = (np.array([v], np.uint64) for v in (0x7FF0000000000001, 0x7FF8000000000002,
                                                   0x7FF8000000000003))
    one = np.array([1.0]).view(np.uint64)
    inf = np.array([np.inf]).view(np.uint64)
    h = lambda r: int(r[0])  # noqa: E731
    assert h(F.add(X, Y, type="f64")) == 0x7FF8000000000002
    assert h(F.add(Y, X, type="f64")) == 0x7FF8000000000002
    assert h(F.add(Z, X, type="f64")) == 0x7FF8000000000003
    assert h(F.mul(Z, Y, type="f64")) == 0x7FF8000000000003
    assert h(F.fma(Y, Y, X, type="f64", rnd="rn")) == 0x7FF8000000000002
    assert h(F.sqrt(Y ^ np.uint64(1 << 63), type="f64", rnd="rn")) == 0xFFF8000000000002
    assert h(F.abs(X | np.uint64(1 << 63), type="f64")) == 0xFFF8000000000001
    assert h(F.min(X, Z, type="f64")) == 0x7FF8000000000003
    assert h(F.add(np.array([0x7FF8000000000001], np.uint64), one, type="f64")) == \
        0x7FF8000000000001
    assert h(F.sub(inf, inf, type="f64")) == 0xFFF8000000000000
    assert h(F.neg(np.array([0x7FF8000000000001], np.uint64), type="f64")) == 0x7FF8000000000001
    from ptxsim.isa import convert as V
    assert h(V.cvt(np.array([0x7FC00001], np.uint32), dtype="f64", atype="f32")) == \
        0x7FF8000020000000
    assert h(V.cvt(np.array([0xFF800001], np.uint32), dtype="f64", atype="f32")) == \
        0xFFF8000020000000
    assert h(V.cvt(np.array([0x7FF8000000000001], np.uint64), dtype="f32", atype="f64",
                   rnd="rn")) == 0x7FC00000
    assert h(V.cvt(np.array([0xFFF4000000000123], np.uint64), dtype="f32", atype="f64",
                   rnd="rn")) == 0xFFE00000
    assert h(V.cvt(np.array([0xFFF4000000000123], np.uint64), dtype="f16", atype="f64",
                   rnd="rn")) == 0xFF00
    assert h(V.cvt(np.array([0x7FF4000000000001], np.uint64), dtype="bf16", atype="f64",
                   rnd="rn")) == 0x7FE0
    assert h(V.cvt(np.array([0xFF81], np.uint16), dtype="f32", atype="bf16")) == 0xFF810000
    assert h(V.cvt(np.array([0x7D01], np.uint16), dtype="f32", atype="f16")) == 0x7FFFFFFF
    assert h(V.cvt(np.array([0x7D01], np.uint16), dtype="f64", atype="f16")) == \
        0x7FFC040000000000
    assert h(V.cvt(np.array([0x7F81], np.uint16), dtype="f64", atype="bf16")) == \
        0x7FF8200000000000
    # both-NaN min/max of 16/32-bit types are canonical (max.f16 0x7d01, 0xfe02 -> 0x7fff)
    assert h(F.max([0x7D01], [0xFE02], type="f16")) == 0x7FFF
    assert h(F.min([0xFFC2], [0x7F81], type="bf16")) == 0x7FFF
    assert h(F.max([0x7FC00001], [0xFFA00002], type="f32")) == 0x7FFFFFFF
    assert h(F.max([0x7D01], [0x3C00], type="f16", nan=True)) == 0x7FFF
    # and: add.sat.f32 NaN -> +0; cvt.rni.f32.f32 NaN -> canonical; cvt.rzi.s32.f32 NaN -> 0;
    # rcp.rn.ftz.f64 of the subnormal 2^-1023 -> 2^1023 (no flush for f64)
    assert h(F.add([0xFFC00123], [0xFFC00123], type="f32", sat=True)) == 0
    assert h(V.cvt([0xFFC00123], dtype="f32", atype="f32", rnd="rni")) == 0x7FFFFFFF
    assert h(V.cvt([0xFFC00123], dtype="s32", atype="f32", rnd="rzi")) == 0
    assert h(F.rcp(np.array([0x0008000000000000], np.uint64), type="f64", rnd="rn",
                   ftz=True)) == 0x7FE0000000000000
    # the 16/32-bit results are canonical: add.f32 sNaN, sqrt.rn.f32(-1), add.f16, add.bf16,
    # cvt.rn.f16.f32, neg/abs.f32 of a NaN
    assert h(F.add([0x7F800001], [0x20000001], type="f32")) == 0x7FFFFFFF
    assert h(F.sqrt([0xBF800000], type="f32", rnd="rn")) == 0x7FFFFFFF
    assert h(F.add([0xFE01], [0x3C00], type="f16")) == 0x7FFF
    assert h(F.add([0xFFC1], [0x3F80], type="bf16")) == 0x7FFF
    assert h(V.cvt([0xFFC00001], dtype="f16", atype="f32", rnd="rn")) == 0x7FFF
    assert h(F.neg([0x7FC00001], type="f32")) == 0x7FFFFFFF
    assert h(F.abs([0xFFC00002], type="f32")) == 0x7FFFFFFF


def test_nan_and_inf_rules():
    inf, ninf = 0x7F800000, 0xFF800000
    assert F.add([inf], [ninf], type="f32")[0] == 0x7FFFFFFF            # canonical NaN
    assert F.add([0x7FC00001], [0x3F800000], type="f32")[0] == 0x7FFFFFFF  # payload dropped
    assert F.mul([0], [inf], type="f32")[0] == 0x7FFFFFFF
    assert F.add([0x7E00], [0x3C00], type="f16")[0] == 0x7FFF
    # overflow: rz/rm clamp positive results to the largest finite value
    big = 0x7F7FFFFF
    assert F.add([big], [big], type="f32", rnd="rz")[0] == big
    assert F.add([big], [big], type="f32", rnd="rm")[0] == big
    assert F.add([big], [big], type="f32", rnd="rp")[0] == inf
    assert F.add([big | 1 << 31], [big | 1 << 31], type="f32", rnd="rm")[0] == ninf
    # exact zero sum: +0, except -0 in .rm
    assert F.sub([0x3F800000], [0x3F800000], type="f32", rnd="rn")[0] == 0
    assert F.sub([0x3F800000], [0x3F800000], type="f32", rnd="rm")[0] == 0x80000000
    assert F.add([0x80000000], [0x80000000], type="f32", rnd="rn")[0] == 0x80000000


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_div_exact(fmt):
    cols = operands(fmt, 2, 150)
    for mode in ("rn", "rz", "rm", "rp"):
        got = [int(x) for x in F.div(arr(cols[0], fmt), arr(cols[1], fmt), type=fmt, rnd=mode)]
        want = [ref_op("div", xs, fmt, mode) for xs in zip(*cols)]
        bad = [tuple(map(hex, t)) for t in zip(*cols, got, want) if t[-1] != t[-2]]
        assert not bad, (mode, bad[:5])


def test_div_f64_subnormal_results_directed():
    # results in the f64 subnormal range exercise the exact fallback
    a = np.array([2.0 ** -1070, 3 * 2.0 ** -1060, 1e-300], np.float64)
    b = np.array([3.0, 7.0, 1e10], np.float64)
    for mode in ("rn", "rz", "rm", "rp"):
        got = F.div(a.view(np.uint64), b.view(np.uint64), type="f64", rnd=mode)
        want = [ref_round(Fraction(float(x)) / Fraction(float(y)), "f64", mode) for x, y in zip(a, b)]
        assert [int(g) for g in got] == want


def ref_sqrt(b, fmt, mode):
    v = to_frac(b, fmt)
    if v is None or (not isinstance(v, str) and v < 0) or v == "-inf":
        return qnan(fmt) if not (v == 0) else b
    if v == "inf":
        return b
    if v == 0:
        return b
    # bracket sqrt(v) between rationals tighter than any rounding boundary
    k = 1100  # enough bits below the smallest f64 subnormal
    n = math.isqrt(math.floor(v * Fraction(4) ** k))
    lo = Fraction(n, 2 ** k)
    exact = lo * lo == v
    return ref_round(lo if exact else lo + Fraction(1, 2 ** (k + 100)), fmt, mode)


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_sqrt_exact(fmt):
    xs = specials(fmt) + rand_bits(fmt, 150) + rand_bits(fmt, 50, narrow=True)
    xs += [1, 2, 5] if fmt == "f64" else []
    for mode in ("rn", "rz", "rm", "rp"):
        got = [int(x) for x in F.sqrt(arr(xs, fmt), type=fmt, rnd=mode)]
        want = []
        for x in xs:
            v = to_frac(x, fmt)
            if v is not None and not isinstance(v, str) and v == 0:
                want.append(x)            # sqrt(+-0) = +-0
            elif v is None or v == "-inf" or (not isinstance(v, str) and v < 0):
                want.append(qnan(fmt, [x]))
            else:
                want.append(ref_sqrt(x, fmt, mode))
        bad = [(hex(x), hex(g), hex(w)) for x, g, w in zip(xs, got, want) if g != w]
        assert not bad, (mode, bad[:5])


def test_rcp_and_div_approx_rules():
    three = np.float32(3).view(np.uint32)
    assert F.rcp([three], type="f32", rnd="rn")[0] == np.float32(1 / 3).view(np.uint32)
    # div.approx: 2^126 < |b| < 2^128 -> 0 (NaN for infinite a)   (PTX 9.7.3.8)
    huge = np.float32(2.0 ** 127).view(np.uint32)
    assert F.div([three], [huge], type="f32", approx=True)[0] == 0
    assert F.div([0x7F800000], [huge], type="f32", approx=True)[0] == 0x7FFFFFFF
    with pytest.raises(PtxValidationError):
        F.div([1], [1], type="f32")                      # needs .rnd / .approx / .full
    with pytest.raises(PtxValidationError):
        F.div([1], [1], type="f64", approx=True)


def test_approx_functions_within_ptx_bounds_and_specials():
    x = np.linspace(-3, 3, 41).astype(np.float32)
    ex = F.ex2(x.view(np.uint32)).view(np.float32)
    assert np.allclose(ex, np.exp2(x.astype(np.float64)), rtol=2 ** -22.5)
    pos = np.linspace(0.1, 10, 41).astype(np.float32)
    assert np.allclose(F.lg2(pos.view(np.uint32)).view(np.float32),
                       np.log2(pos.astype(np.float64)), atol=2 ** -22)
    assert np.allclose(F.sin(x.view(np.uint32)).view(np.float32), np.sin(x.astype(np.float64)),
                       atol=2 ** -20.5)
    assert np.allclose(F.tanh(x.view(np.uint32)).view(np.float32), np.tanh(x.astype(np.float64)),
                       rtol=2 ** -11)
    # specials (PTX tables): ex2(-Inf)=+0, lg2(0)=-Inf, lg2(-1)=NaN, rsqrt(-0)=-Inf, sin(Inf)=NaN
    assert F.ex2([0xFF800000])[0] == 0
    assert F.lg2([0])[0] == 0xFF800000
    assert F.lg2([0xBF800000])[0] == 0x7FFFFFFF
    assert F.rsqrt([0x80000000])[0] == 0xFF800000
    assert F.sin([0x7F800000])[0] == 0x7FFFFFFF
    # f16 / bf16 forms
    h = np.array([1.0, 2.0], np.float16).view(np.uint16)
    assert list(F.ex2(h, type="f16").view(np.float16)) == [2.0, 4.0]
    with pytest.raises(PtxValidationError):
        F.ex2([0], type="bf16")                           # bf16 exists only with .ftz
    with pytest.raises(PtxValidationError):
        F.tanh([0], type="f64")


def test_packed_half2_lanes():
    a = np.array([1.5, -2.0], np.float16).view(np.uint32)
    b = np.array([0.25, 8.0], np.float16).view(np.uint32)
    d = F.add(a, b, type="f16x2").view(np.float16)
    assert list(d) == [1.75, 6.0]
    ab = np.array([1.5, 3.0], ml_dtypes.bfloat16).view(np.uint32)
    d = F.mul(ab, ab, type="bf16x2").view(ml_dtypes.bfloat16)
    assert [float(x) for x in d] == [2.25, 9.0]
    a2 = np.array([1.0, 2.0], np.float32).view(np.uint64)
    d = F.fma(a2, a2, a2, type="f32x2", rnd="rn").view(np.float32)
    assert list(d) == [2.0, 6.0]


def test_fma_relu():
    a = np.array([1.0, -1.0], np.float16).view(np.uint32)
    one = np.array([1.0, 1.0], np.float16).view(np.uint32)
    z = np.array([0.0, 0.0], np.float16).view(np.uint32)
    assert list(F.fma(a, one, z, type="f16x2", rnd="rn", relu=True).view(np.float16)) == [1.0, 0.0]


def test_min_max_rules():
    nan, one, two = 0x7FC00000, 0x3F800000, 0x40000000
    pz, nz = 0, 0x80000000
    assert F.min([nan], [one], type="f32")[0] == one                 # NaN ignored
    assert F.min([nan], [nan], type="f32")[0] == 0x7FFFFFFF
    assert F.min([nan], [one], type="f32", nan=True)[0] == 0x7FFFFFFF
    assert F.max([one], [two], type="f32")[0] == two
    assert F.min([pz], [nz], type="f32")[0] == nz and F.max([nz], [pz], type="f32")[0] == pz
    # xorsign.abs: min(|-2|, |1|) = 1 with sign(-2) ^ sign(1) = -  -> -1
    assert F.min([two | nz], [one], type="f32", xorsign_abs=True)[0] == one | nz
    d = F.max(np.array([1, -3], np.float16).view(np.uint32),
              np.array([2, -4], np.float16).view(np.uint32), type="f16x2").view(np.float16)
    assert list(d) == [2, -3]
    with pytest.raises(PtxValidationError):
        F.min([0], [0], type="f64", nan=True)


def test_abs_neg_copysign_testp():
    assert F.abs([0xBF800000], type="f32")[0] == 0x3F800000
    assert F.neg([0x3F800000], type="f32")[0] == 0xBF800000
    assert F.neg([0x0001], type="f16", ftz=True)[0] == 0x8000
    assert F.abs([0xFFC00001], type="f32")[0] == 0x7FFFFFFF
    assert F.copysign([0x80000000], [0x3F800000], type="f32")[0] == 0xBF800000
    vals = np.array([0, 0x80000000, 1, 0x7F800000, 0x7FC00000, 0x3F800000], np.uint32)
    assert list(F.testp(vals, op="normal", type="f32")) == [True, True, False, False, False, True]
    assert list(F.testp(vals, op="subnormal", type="f32")) == [False, False, True, False, False,
                                                               False]
    assert list(F.testp(vals, op="finite", type="f32")) == [True, True, True, False, False, True]
    assert list(F.testp(vals, op="notanumber", type="f32")) == [False] * 4 + [True, False]


def test_legality():
    with pytest.raises(PtxValidationError):
        F.add([0], [0], type="f64", ftz=True)
    with pytest.raises(PtxValidationError):
        F.add([0], [0], type="f16", rnd="rz")
    with pytest.raises(PtxValidationError):
        F.fma([0], [0], [0], type="f32", rnd=None)
    with pytest.raises(PtxValidationError):
        F.add([0], [0], type="bf16", sat=True)


def test_fma_midpoint_with_residual_is_not_double_rounded():
    """a*b + c = 1 + 3*2^-24 - 2^-60: its float64 rounding is the f32 midpoint 1 + 3*2^-24, whose
    ties-to-even cast would give 1 + 2^-22; the exact value lies below it: 1 + 2^-23."""
    a = np.float32(2.0 ** -12 * (1 - 2.0 ** -18))
    b = np.float32(2.0 ** -12 * (1 + 2.0 ** -18))
    c = np.float32(1 + 2.0 ** -23)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    assert exact == 1 + Fraction(3, 2 ** 24) - Fraction(1, 2 ** 60)
    want = ref_round(exact, "f32", "rn")
    assert want == 0x3F800001
    got = F.fma([a.view(np.uint32)], [b.view(np.uint32)], [c.view(np.uint32)], type="f32", rnd="rn")
    assert got[0] == want


def test_fma_f64_near_ties_and_cancellation():
    """Operands with few significant bits spread over the significand, c cancelling most of a*b:
    exact sums that sit on or next to rounding boundaries (ties, exact values, a residual below
    2^-53 of the result), checked against Fraction in every mode."""
    rng = np.random.default_rng(2024)

    def sparse():
        bits_ = rng.choice(53, size=int(rng.integers(1, 4)), replace=False)
        return float(sum(Fraction(1, 2 ** int(k)) for k in bits_) + 1) * \
            float(2.0 ** int(rng.integers(-3, 4))) * (1 if rng.random() < .5 else -1)
    a = np.array([sparse() for _ in range(400)])
    b = np.array([sparse() for _ in range(400)])
    tweak = np.array([sparse() * 2.0 ** -int(rng.integers(40, 110)) for _ in range(400)])
    c = -(a * b) + tweak
    c[::3] = -(a[::3] * b[::3])                          # exact float64 rounding of -a*b
    for mode in ("rn", "rz", "rm", "rp"):
        got = F.fma(a.view(np.uint64), b.view(np.uint64), c.view(np.uint64), type="f64",
                    rnd=mode)
        want = [ref_op("fma", [int(x) for x in (np.float64(x).view(np.uint64),
                                                   np.float64(y).view(np.uint64),
                                                   np.float64(z).view(np.uint64))], "f64", mode)
                for x, y, z in zip(a, b, c)]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if int(g) != w]
        assert not bad, (mode, [(a[i], b[i], c[i]) for i in bad[:3]])


@pytest.mark.parametrize("b_sign,want", [
    # (1+2^-30)(1-2^-30) + 2^53+2 = 2^53 + 3 - 2^-60: just below the tie 2^53+3
    (-1, {"rn": 2 ** 53 + 2, "rz": 2 ** 53 + 2, "rm": 2 ** 53 + 2, "rp": 2 ** 53 + 4}),
    # (1+2^-30)^2 + 2^53+2 = 2^53 + 3 + 2^-29 + 2^-60: just above it
    (+1, {"rn": 2 ** 53 + 4, "rz": 2 ** 53 + 2, "rm": 2 ** 53 + 2, "rp": 2 ** 53 + 4})])
def test_fma_f64_tie_decided_by_the_third_term(b_sign, want):
    """Hand-built: the float64 sum of the first two terms is an exact tie (2^53+3 between
    2^53+2 and 2^53+4) and only the product's rounding error (+-2^-60) decides it."""
    a = np.array([1 + 2.0 ** -30])
    b = np.array([1 + b_sign * 2.0 ** -30])
    c = np.array([2.0 ** 53 + 2])
    for mode, w in want.items():
        got = F.fma(a.view(np.uint64), b.view(np.uint64), c.view(np.uint64), type="f64",
                    rnd=mode).view(np.float64)[0]
        assert got == float(w), mode


def test_three_operand_min_max_and_abs():
    f = lambda *v: np.array(v, np.float32).view(np.uint32)  # noqa: E731
    a, b, c = f(3.0, np.nan, -1.0), f(-5.0, np.nan, 2.0), f(1.0, 4.0, np.nan)
    assert list(F.min(a, b, c, type="f32").view(np.float32)) == [-5.0, 4.0, -1.0]
    assert list(F.max(a, b, c, type="f32").view(np.float32)) == [3.0, 4.0, 2.0]
    assert list(F.min(a, b, c, type="f32", abs=True).view(np.float32)) == [1.0, 4.0, 1.0]
    assert list(F.max(a, b, c, type="f32", nan=True)) == [np.float32(3).view(np.uint32),
                                                         0x7FFFFFFF, 0x7FFFFFFF]
    with pytest.raises(PtxValidationError):
        F.min(a, b, c, type="f16")


@pytest.mark.parametrize("atype", ["f16", "bf16"])
def test_mixed_precision_add_fma(atype):
    cols16 = [int(x) for x in specials(atype) + rand_bits(atype, 80, narrow=True)]
    cols32 = [int(x) for x in specials("f32") + rand_bits("f32", 80, narrow=True)][:len(cols16)]
    cols16 = cols16[:len(cols32)]
    for mode in ("rn", "rz", "rm", "rp"):
        got = F.add_mixed(arr(cols16, atype), arr(cols32, "f32"), atype=atype, rnd=mode)
        want = []
        for h, x in zip(cols16, cols32):
            va, vc = to_frac(h, atype), to_frac(x, "f32")
            if va is None or vc is None or isinstance(va, str) or isinstance(vc, str):
                # specials: same rule as f32 add of the widened operand (exact widening)
                wide = np.float32(np.float64(float(va) if va is not None else np.nan))
                want.append(ref_op("add", [int(wide.view(np.uint32)), x], "f32", mode))
            else:
                s = va + vc
                sa, sc = bool(h >> 15), bool(x >> 31)
                if s != 0:
                    want.append(ref_round(s, "f32", mode))
                else:   # IEEE 754 6.3
                    both = va == 0 and vc == 0
                    neg = ((sa and sc) if mode != "rm" else (sa or sc)) if both else mode == "rm"
                    want.append(ref_round(s, "f32", mode, neg_zero=neg))
        assert [int(g) for g in got] == want, mode
    one16 = {"f16": 0x3C00, "bf16": 0x3F80}[atype]
    got = F.fma_mixed([one16], [one16], [np.float32(2 ** -30).view(np.uint32)], abtype=atype,
                      rnd="rz")
    assert got[0] == 0x3F800000                      # 1 + 2^-30 truncates to 1.0


# Recorded hardware: an H200 (sm_90), 2026-11-21, 2,944 f32 inputs (1,024 evenly spaced in
# [-20, 20], the rest random sign / exponent / fraction, so subnormals, Inf and NaN included),
# each through the MUFU instructions below. All ten are modelled bit-exactly
# (floating._F32_APPROX, checked on the H200 for all 2^32 inputs of each form, docs/mufu.md):
# "exact". The other kinds stay for future partial models: a bound measured on this capture.
MUFU = {  # op: (ptxsim call, bound kind, bound, minimum fraction of bit-exact results)
    "ex2.approx.ftz.f32": (lambda u: F.ex2(u, ftz=True), "exact", 0, 1.0),
    "lg2.approx.ftz.f32": (lambda u: F.lg2(u, ftz=True), "exact", 0, 1.0),
    "sin.approx.ftz.f32": (lambda u: F.sin(u, ftz=True), "exact", 0, 1.0),
    "cos.approx.ftz.f32": (lambda u: F.cos(u, ftz=True), "exact", 0, 1.0),
    "tanh.approx.f32": (lambda u: F.tanh(u), "exact", 0, 1.0),
    "rsqrt.approx.ftz.f32": (lambda u: F.rsqrt(u, ftz=True), "exact", 0, 1.0),
    "rcp.approx.ftz.f32": (lambda u: F.rcp(u, type="f32", approx=True, ftz=True), "exact", 0, 1.0),
    "sqrt.approx.ftz.f32": (lambda u: F.sqrt(u, type="f32", approx=True, ftz=True), "exact", 0,
                            1.0),
    "ex2.approx.f32": (lambda u: F.ex2(u), "exact", 0, 1.0),
    "rcp.approx.f32": (lambda u: F.rcp(u, type="f32", approx=True), "exact", 0, 1.0),
}


def _ordered(b):
    b = b.astype(np.int64)
    return np.where(b >= 1 << 31, -(b - (1 << 31)), b)


@pytest.mark.parametrize("k,op", list(enumerate(MUFU)))
def test_mufu_against_recorded_hardware(k, op):
    import os
    d = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "hardware", "base_probes",
                             "base_mufu_sm90.npz"))
    assert str(d["ops"][k]) == op
    x, hw = d["x"], d["y"][k].astype(np.uint32)
    fn, kind, bound, exact_min = MUFU[op]
    got = fn(x).astype(np.uint32)
    if kind == "exact":
        bad = np.nonzero(got != hw)[0]
        assert bad.size == 0, (op, [(hex(x[i]), hex(hw[i]), hex(got[i])) for i in bad[:5]])
        return
    gnan, hnan = np.isnan(got.view(np.float32)), np.isnan(hw.view(np.float32))
    assert (gnan == hnan).all() and (got[gnan] == 0x7FFFFFFF).all() and (hw[hnan] == 0x7FFFFFFF).all()
    special = ~hnan & ~np.isfinite(hw.view(np.float32)) | ((hw & 0x7FFFFFFF) == 0)
    assert (got[special] == hw[special]).all(), op          # Inf and signed zeros: exact
    fin = ~hnan
    ulp = np.abs(_ordered(got) - _ordered(hw))[fin]
    with np.errstate(invalid="ignore"):   # Inf - Inf where both are Inf (checked above)
        err = np.abs(got.view(np.float32).astype(np.float64) - hw.view(np.float32))[fin]
    err = np.where(np.isnan(err), 0.0, err)
    if kind == "ulp":
        assert ulp.max() <= bound, (op, ulp.max())
    elif kind == "abs":
        assert err.max() <= bound, (op, np.log2(err.max()))
    else:
        assert ((ulp <= bound[0]) | (err <= bound[1])).all(), op
    assert (got == hw).mean() >= exact_min, (op, (got == hw).mean())


def test_rcp_approx_f64_recorded_on_hardware():
    # H200: rcp.approx.ftz.f64 of 0x5fe8000000000000 (1.5 * 2^511) -> 0x1ff5555500000000
    got = F.rcp(np.array([0x5FE8000000000000], np.uint64), type="f64", approx=True, ftz=True)
    assert got[0] == 0x1FF5555500000000


def test_half_mufu_tables_cover_every_input_and_agree_with_the_function():
    """The sm_90 tables are complete; independent sanity: for normal inputs in a moderate range
    they are within the PTX error bounds of the exact functions (ex2.f16 2^-9.9 relative,
    tanh.f16 2^-10.987 absolute; bf16 likewise within 2 bf16 ulp)."""
    import ml_dtypes
    u = np.arange(65536, dtype=np.uint16)
    h = u.view(np.float16).astype(np.float64)
    ok = np.isfinite(h) & (np.abs(h) < 8)
    e = F.ex2(u, type="f16").view(np.float16).astype(np.float64)
    assert np.all(np.abs(e[ok] / np.exp2(h[ok]) - 1) <= 2 ** -9.9)
    t = F.tanh(u, type="f16").view(np.float16).astype(np.float64)
    assert np.all(np.abs(t[ok] - np.tanh(h[ok])) <= 2 ** -10.987)
    with np.errstate(invalid="ignore"):
        b = u.view(ml_dtypes.bfloat16).astype(np.float64)
    okb = np.isfinite(b) & (np.abs(b) < 8) & (np.abs(b) > 2 ** -100)
    tb = F.tanh(u, type="bf16").view(ml_dtypes.bfloat16).astype(np.float64)
    assert np.all(np.abs(tb[okb] - np.tanh(b[okb])) <= 2 * 2.0 ** -8 * np.maximum(
        np.abs(np.tanh(b[okb])), 2 ** -126))
    assert F.ex2([0xFC00], type="f16")[0] == 0                      # 2^-Inf = +0
    assert F.ex2([0x7E00], type="f16")[0] == 0x7FFF                 # NaN canonical


def test_div_approx_full_and_f64_approx_against_recorded_hardware():
    import os
    d = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "hardware", "base_probes",
                             "base_mufu2_sm90.npz"))
    a, b = d["a"], d["b"]
    for k, kw in enumerate(({"approx": True}, {"full": True}, {"approx": True, "ftz": True})):
        got, hw = F.div(a, b, type="f32", **kw).astype(np.uint32), d["div"][k]
        gn, hn = np.isnan(got.view(np.float32)), np.isnan(hw.view(np.float32))
        assert (gn == hn).all()
        # bit-exact since the MUFU.RCP model (docs/mufu.md): NaN positions above, bits here
        assert (got[~hn] == hw[~hn]).all(), (kw, np.count_nonzero(got[~hn] != hw[~hn]))
    x, y = d["x64"], d["y64"]
    # rsqrt.approx.f64 and rcp.approx.ftz.f64: bit-exact since the MUFU.RSQ64H / RCP64H models
    # (docs/mufu.md; all 2^32 upper words verified on the H200), NaN bits included
    got = F.rsqrt(x, type="f64")
    assert (got == y[0]).all(), np.count_nonzero(got != y[0])
    got = F.rcp(x, type="f64", approx=True, ftz=True)
    assert (got & np.uint64(0xFFFFFFFF) == 0).all()
    assert (got == y[1]).all(), np.count_nonzero(got != y[1])


@pytest.mark.parametrize("fmt,dt,ut", [("f32", np.float32, np.uint32), ("f16", np.float16, np.uint16),
                                       ("f64", np.float64, np.uint64)])
def test_round_to_nearest_against_numpy_ieee_arithmetic(fmt, dt, ut):
    """numpy's float32 / float16 / float64 + - * / and sqrt are IEEE round-to-nearest (float16
    goes through float32, which is exact enough: 24 >= 2*11 + 2); only NaN bits differ (ptxsim's
    NaNs follow the hardware), so NaN positions are compared separately."""
    rng = np.random.default_rng(77)
    w = np.dtype(ut).itemsize * 8
    a = rng.integers(0, 1 << min(w, 63), 20000, dtype=np.uint64).astype(ut)
    b = rng.integers(0, 1 << min(w, 63), 20000, dtype=np.uint64).astype(ut)
    if w == 64:
        a |= (rng.integers(0, 2, a.size).astype(np.uint64) << np.uint64(63))
    # half of the pairs with nearby exponents, so that sums cancel and round
    b[::2] = (np.abs(a[::2].view(dt)) * dt(1.0 + 2.0 ** -3)).astype(dt).view(ut) ^ (
        a[::2] & ut(1 << (w - 1)))
    fa, fb = a.view(dt), b.view(dt)
    with np.errstate(all="ignore"):
        cases = [(F.add, fa + fb), (F.sub, fa - fb), (F.mul, fa * fb)]
        if fmt != "f16":
            cases += [(lambda x, y, **k: F.div(x, y, rnd="rn", **k), fa / fb)]
    for fn, want in cases:
        got = fn(a, b, type=fmt).view(dt)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all()
        assert (got[~nan].view(ut) == want[~nan].view(ut)).all()
    if fmt != "f16":
        with np.errstate(invalid="ignore"):
            want = np.sqrt(fa)
        got = F.sqrt(a, type=fmt, rnd="rn").view(dt)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all() and (got[~nan].view(ut) == want[~nan].view(ut)).all()


def test_f64_directed_stress_wide_exponents():
    """Random f64 operands whose exponents pair up to products and quotients near 1, huge times
    subnormal, etc. (where error-free transformations are easy to get wrong: a masking split once
    made Dekker's last partial product inexact), against Fraction in the directed modes."""
    rng = np.random.default_rng(4242)
    n = 600
    frac = rng.integers(0, 1 << 52, n, dtype=np.int64).astype(np.uint64)
    ea = rng.integers(0, 2047, n).astype(np.uint64)
    eb = np.clip(2046 - ea.astype(np.int64) + rng.integers(-30, 30, n), 0, 2046).astype(np.uint64)
    sign = rng.integers(0, 2, (2, n)).astype(np.uint64) << np.uint64(63)
    a = sign[0] | (ea << np.uint64(52)) | frac
    b = sign[1] | (eb << np.uint64(52)) | rng.integers(0, 1 << 52, n, dtype=np.int64).astype(
        np.uint64)
    b[:50] = np.uint64(0x7FEFFFFFFFFFFFFF) | sign[1][:50]          # +-max
    a[50:100] = frac[50:100] >> np.uint64(rng.integers(0, 20))     # subnormals
    c = (a.view(np.float64) * b.view(np.float64) * -0.75).view(np.uint64)
    c = np.where(np.isfinite(c.view(np.float64)), c, np.uint64(0x3FF0000000000000))
    for mode in ("rz", "rm", "rp"):
        for op, fn in (("mul", lambda: F.mul(a, b, type="f64", rnd=mode)),
                       ("div", lambda: F.div(a, b, type="f64", rnd=mode)),
                       ("fma", lambda: F.fma(a, b, c, type="f64", rnd=mode))):
            got = fn()
            args = (a, b, c) if op == "fma" else (a, b)
            want = [ref_op(op, [int(x[i]) for x in args], "f64", mode) for i in range(n)]
            bad = [i for i in range(n) if int(got[i]) != want[i]]
            assert not bad, (op, mode, [tuple(hex(int(x[i])) for x in args) for i in bad[:3]])


def test_fma_f64_regression_all_ones_significands():
    """Found by the Fraction comparison: both significands all ones (largest subnormal times the
    largest finite), where a 27-bit low part makes a masking split's al*bl inexact."""
    a, b, c = 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0xC004498D60A67696
    for mode in ("rn", "rz", "rm", "rp"):
        got = F.fma(np.array([a], np.uint64), np.array([b], np.uint64), np.array([c], np.uint64),
                    type="f64", rnd=mode)
        assert int(got[0]) == ref_op("fma", [a, b, c], "f64", mode), mode
