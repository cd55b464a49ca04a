"""The compiled numerics backend (_fdpa.c) against the numpy one (fdpa.py, the specification),
bit for bit, on the same operand bits.

fdpa.py is checked against independent oracles elsewhere (MMA-Sim, hand derivations, H200
captures: test_vs_mmasim.py, test_handcrafted.py, test_hw_mma_sync.py); this file holds the two
implementations to identical D bits over every legal (arch, kind, types) form -- enumerated
from ARCH_KINDS / KINDS through `check_types`, not hand-listed -- and over the
regimes where a compiled loop could part from the specification: NaN / Inf / zero / subnormal
operands and scales, wide exponent spread, exact cancellation, all-zero rows, columns and
blocks, C = -0, sums that overflow to +-Inf, f16 results in the subnormal range, products just
below the zero-term exponent, partial last blocks, M = 1, N = 1..9 and the vector tails
N = 65 / 130 (the grouped loop works in 64-column chunks), T > 1 (mma_batch), per-row B
(mma_sparse) and the emulated sm_90 fp8_sync kind.  Plus the compiled module's own argument
checks, and that the extension is built wherever a C compiler is.
"""
from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxsim.errors import FormatError, MmaTypeError, PtxsimError
from ptxsim.numerics import backend, fdpa, mma, mma_batch, mma_sparse
from ptxsim.numerics.params import ARCH_KINDS, KINDS, Params, check_types, params
from ptxsim.numerics.unpack import Unpacked, unpack
from ptxsim.types.codec import decode, encode
from ptxsim.types.formats import FORMATS

from .oracle import gen_bits, sign_bit

needs_c = pytest.mark.skipif(
    "c" not in backend.available(),
    reason="the compiled extension ptxsim.numerics._fdpa_c is not built (no C compiler at "
           "install time, or a source checkout without `python setup.py build_ext --inplace`)")


# The compiled module's grouped entry takes A and B either as float64 values (older builds) or
# as int16 "halves", twice the e2m1 value (current: `grouped(a2, b2, ...)`); the tests below
# speak whichever the built module documents.
HALVES = backend.compiled is not None and "a2, b2" in (backend.compiled.grouped.__doc__ or "")
# The builds that take float64 values also predate the checked size arithmetic (main 5baa38d).
OLD_MODULE = backend.compiled is not None and not HALVES
_A, _B = ("a2", "b2") if HALVES else ("av", "bv")


# ---- the forms: every combination check_types accepts ---------------------------------------

@dataclass(frozen=True)
class Form:
    arch: str
    kind: str
    atype: str
    btype: str
    ctype: str
    dtype: str
    scale_type: str | None = None
    block: int | None = None

    @property
    def kw(self) -> dict:
        return dict(arch=self.arch, kind=self.kind, atype=self.atype, btype=self.btype,
                    ctype=self.ctype, dtype=self.dtype)

    @property
    def p(self) -> Params:
        return params(self.arch, self.kind, self.atype, self.btype, self.dtype)

    def __str__(self):
        s = "-".join((self.arch, self.kind, self.atype, self.btype, self.ctype, self.dtype))
        return s + (f"-{self.scale_type}-b{self.block}" if self.scale_type else "")


def legal_forms() -> list[Form]:
    """Every (arch, kind, atype, btype, ctype, dtype[, scale type, block]) that check_types
    accepts, from the candidate sets the tables themselves list.  kind i8 is left out: the
    integer model has no compiled twin."""
    forms = []
    for arch, kinds in ARCH_KINDS.items():
        for kind in kinds:
            if kind == "i8":
                continue
            rule = KINDS[kind]
            scales = [(s, b) for s in rule.scale_types for b in rule.blocks[s]] or [(None, None)]
            for (at, bt), (ct, dt), (s, b) in itertools.product(
                    itertools.product(rule.ab_types, repeat=2), rule.cd_types, scales):
                try:
                    check_types(arch, kind, at, bt, ct, dt, s, b)
                except MmaTypeError:
                    continue
                forms.append(Form(arch, kind, at, bt, ct, dt, s, b))
    return forms


FORMS = legal_forms()


def test_enumeration_covers_every_arch_kind_and_rounding():
    """Not hand-listed, so check the enumeration reaches what the brief of the backend needs:
    every (arch, non-integer kind), every rounding, mixed C/D, every scale type / block size."""
    assert {(f.arch, f.kind) for f in FORMS} == {
        (a, k) for a, ks in ARCH_KINDS.items() for k in ks if k != "i8"}
    assert {f.p.rho for f in FORMS} >= {"RZ-FP32", "RZ-E8M13", "RNE-FP16"}
    assert {f.p.model for f in FORMS} == {"fused", "grouped", "emulated"}
    assert any(f.ctype != f.dtype for f in FORMS)
    assert {(f.kind, f.scale_type, f.block) for f in FORMS if f.scale_type} == {
        ("mxf8f6f4", "ue8m0", 32), ("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 32),
        ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue4m3", 16)}
    # Table 39 products: 25 f8f6f4 pairs x 4 (C, D) pairs on sm_100 / sm_120
    assert sum(f.arch == "sm_100" and f.kind == "f8f6f4" for f in FORMS) == 100


def representatives() -> list[Form]:
    """One form per distinct arithmetic: model, rounding, (C, D), element widths, scales."""
    seen, out = set(), []
    for f in FORMS:
        p = f.p
        key = (p.model, p.rho, p.F, p.L, p.e_zero, f.ctype, f.dtype, f.scale_type, f.block,
               FORMATS[f.atype].bits, FORMATS[f.btype].bits)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


REPS = representatives()


# ---- operands: every regime in one tile -----------------------------------------------------

def _top_exp(fmt: str) -> int:
    """Unbiased exponent of the format's largest finite binade."""
    f = FORMATS[fmt]
    top = (1 << f.ebits) - 1 - (1 if f.nan == "ieee" else 0)
    return top - f.bias


def k_for(f: Form, rng) -> int:
    """K spanning more than one fused block, the last one partial where the form allows it
    (block-scaled kinds: K is a multiple of the scale block; grouped: not of L = 64)."""
    L = f.p.L
    if f.scale_type is None:
        return 2 * L + 3 if rng.random() < 0.7 else L + 1
    if f.p.model == "grouped":
        return L + f.block if rng.random() < 0.7 else 2 * L
    return 2 * L


def operands(rng, f: Form, M: int, N: int, K: int, lead=(), b_lead=()):
    """Raw bits a (lead, M, K), b (b_lead, K, N), c (lead, M, N), scales (or None).

    Row regimes of A (cycled, random offset): ordinary; wide exponent spread; subnormal-heavy;
    exact pairwise cancellation (with B's partner columns); an all-zero first block (and a
    wholly zero row); NaN/Inf; large positive values (sums overflow); products just below
    the zero-term exponent; products in the f16-subnormal range.  Column regimes of B:
    ordinary, wide, subnormal, cancellation partner, all-zero (second block / whole column),
    NaN/Inf, large positive.  C: zeros, -0, subnormals, specials, large values."""
    at, bt, ct = f.atype, f.btype, f.ctype
    p = f.p
    L = p.L
    a = gen_bits(rng, at, lead + (M, K)).astype(np.int64)
    b = gen_bits(rng, bt, b_lead + (K, N)).astype(np.int64)
    row = (np.arange(M) + rng.integers(9)) % 9
    col = (np.arange(N) + rng.integers(7)) % 7
    tiny_center = below_e_zero(f) // 2          # unscaled kinds; scaled: tiny scales below
    kw_rows = {1: dict(p_wide=0.8), 2: dict(p_sub=0.6), 5: dict(p_special=0.08),
               6: dict(p_wide=0.0, p_sub=0.0, p_zero=0.0, center=_top_exp(at) - 1),
               7: dict(p_wide=0.0, p_sub=0.2, p_zero=0.2, center=tiny_center),
               8: dict(p_wide=0.0, p_sub=0.2, p_zero=0.1, center=-9)}
    for r, kw in kw_rows.items():
        idx = np.nonzero(row == r)[0]
        if idx.size:
            a[..., idx, :] = gen_bits(rng, at, lead + (idx.size, K), **kw)
    big_a = row == 6
    a[..., big_a, :] &= ~sign_bit(at)                      # same sign: the sums overflow
    n2 = K // 2
    canc = row == 3
    a[..., canc, 1:2 * n2:2] = a[..., canc, 0:2 * n2:2]
    zero = np.nonzero(row == 4)[0]
    a[..., zero, :L] = 0
    if zero.size > 1:
        a[..., zero[1], :] = 0                             # a wholly zero row
    kw_cols = {1: dict(p_wide=0.8), 2: dict(p_sub=0.6), 5: dict(p_special=0.08),
               6: dict(p_wide=0.0, p_sub=0.0, p_zero=0.0, center=_top_exp(bt) - 1)}
    for r, kw in kw_cols.items():
        idx = np.nonzero(col == r)[0]
        if idx.size:
            b[..., idx] = np.moveaxis(gen_bits(rng, bt, b_lead + (idx.size, K), **kw), -2, -1)
    b[..., col == 6] &= ~sign_bit(bt)
    canc = col == 3
    b[..., 1:2 * n2:2, canc] = b[..., 0:2 * n2:2, canc] ^ sign_bit(bt)
    zc = np.nonzero(col == 4)[0]
    b[..., L:2 * L, zc] = 0
    if zc.size > 1:
        b[..., zc[1]] = 0                                  # a wholly zero column
    c = gen_bits(rng, ct, lead + (M, N), p_zero=0.2, p_sub=0.15, p_special=0.05)
    c = c.astype(np.int64)
    u = rng.random(lead + (M, N))
    c = np.where(u < 0.1, sign_bit(ct), c)                             # C = -0
    big_c = gen_bits(rng, ct, lead + (M, N), p_wide=0.0, p_sub=0.0, p_zero=0.0,
                     center=_top_exp(ct) - 1).astype(np.int64) & ~sign_bit(ct)
    c = np.where((u > 0.9) | big_a[:, None], big_c, c)                 # large C
    c[..., zero, :] = sign_bit(ct)                                     # zero rows: C = -0
    out = [x.astype(_storage(t)) for x, t in ((a, at), (b, bt), (c, ct))]
    sa = sb = None
    if f.scale_type:
        s, nsf = f.scale_type, K // f.block
        sa = gen_bits(rng, s, lead + (M, nsf), p_special=0.03, p_zero=0.05, p_sub=0.05,
                      p_wide=0.2)
        sb = gen_bits(rng, s, lead + (nsf, N), p_special=0.03, p_zero=0.05, p_sub=0.05,
                      p_wide=0.2)                  # per MMA (mma_sparse: shared by its rows)
        # tiny rows: scales far below 1 (products / group sums near e_zero); big rows: large
        tiny = np.nonzero(row == 7)[0]
        if tiny.size:
            sa[..., tiny, :] = gen_bits(rng, s, lead + (tiny.size, nsf), p_wide=0.0,
                                        p_sub=0.3, p_zero=0.1,
                                        center=below_e_zero(f) // 2 if s == "ue8m0" else -9)
        if s == "ue4m3":                   # the sign bit of a ue4m3 scale is ignored
            sa = sa | (rng.integers(0, 2, sa.shape) << 7).astype(sa.dtype)
            sb = sb | (rng.integers(0, 2, sb.shape) << 7).astype(sb.dtype)
    return out[0], out[1], out[2], sa, sb


def positive(x: np.ndarray, fmt: str) -> np.ndarray:
    """The same bits with the sign bit (the element's top bit) cleared."""
    return x & x.dtype.type(sign_bit(fmt) - 1)


def _storage(t: str):
    w = FORMATS[t].storage_bits
    return np.uint32 if w > 16 else np.uint16 if w > 8 else np.uint8


# ---- the comparison -------------------------------------------------------------------------

def both(fn):
    """fn() under the numpy backend and under the compiled one: identical D bits."""
    with backend.use("numpy"):
        want = fn()
    with backend.use("c"):
        got = fn()
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.argwhere(got != want)
    detail = "" if not bad.size else "; first: " + ", ".join(
        f"{tuple(int(i) for i in ix)} c {int(got[tuple(ix)]):#x} numpy {int(want[tuple(ix)]):#x}"
        for ix in bad[:4])
    np.testing.assert_array_equal(got, want, err_msg=f"{len(bad)} of {got.size} differ{detail}")
    return want


def scale_kw(f: Form, sa, sb) -> dict:
    if not f.scale_type:
        return {}
    return dict(scale_a=sa, scale_b=sb, scale_type=f.scale_type, block=f.block)


def run_dense(f: Form, rng, M, N, K=None):
    K = k_for(f, rng) if K is None else K
    a, b, c, sa, sb = operands(rng, f, M, N, K)
    return both(lambda: mma(a, b, c, **f.kw, **scale_kw(f, sa, sb)))


def run_batch(f: Form, rng, T, M, N, K=None):
    K = k_for(f, rng) if K is None else K
    a, b, c, sa, sb = operands(rng, f, M, N, K, lead=(T,), b_lead=(T,))
    return both(lambda: mma_batch(a, b, c, **f.kw, **scale_kw(f, sa, sb)))


def run_sparse(f: Form, rng, lead, M, N, K=None):
    """Per-row B: b_rows (lead, M, Ks, N), each row its own Ks x N block."""
    K = k_for(f, rng) if K is None else K
    a, b, c, sa, sb = operands(rng, f, M, N, K, lead=lead, b_lead=lead + (M,))
    return both(lambda: mma_sparse(a, b, c, **f.kw, **scale_kw(f, sa, sb)))


def _seed(*parts) -> np.random.Generator:
    return np.random.default_rng([sum(map(ord, str(p))) * 131 + i for i, p in enumerate(parts)])


# ---- every form --------------------------------------------------------------------------------

@needs_c
@pytest.mark.parametrize("f", FORMS, ids=str)
def test_mma_every_form(f):
    rng = _seed("mma", f)
    run_dense(f, rng, 18, 13)                      # 2 x 9 row regimes, 7 column regimes + tail


@needs_c
@pytest.mark.parametrize("f", FORMS, ids=str)
def test_mma_sparse_every_form(f):
    rng = _seed("sparse", f)
    run_sparse(f, rng, (2,), 9, 7)


@needs_c
@pytest.mark.parametrize("f", REPS, ids=str)
def test_mma_batch(f):
    """T = 3 independent MMAs (the fused kinds run as one compiled batch; grouped and
    emulated ones one MMA at a time)."""
    rng = _seed("batch", f)
    run_batch(f, rng, 3, 9, 11)


# ---- shapes: M = 1, narrow N, vector tails ----------------------------------------------------

SHAPES = [(1, n) for n in range(1, 10)] + [(1, 65), (3, 65), (2, 130), (5, 64), (4, 63)]


@needs_c
@pytest.mark.parametrize("M,N", SHAPES, ids=lambda x: str(x))
@pytest.mark.parametrize("f", REPS, ids=str)
def test_shapes(f, M, N):
    rng = _seed("shape", f, M, N)
    run_dense(f, rng, M, N)
    if N in (1, 7, 65, 130):
        run_sparse(f, rng, (), M, N)


# ---- targeted regimes ------------------------------------------------------------------------

def _f(arch, kind, at, bt, ct, dt, s=None, blk=None) -> Form:
    f = Form(arch, kind, at, bt, ct, dt, s, blk)
    assert f in FORMS, f"{f} is not a legal form"
    return f


@needs_c
@pytest.mark.parametrize("f", [_f("sm_100", "f16", "f16", "f16", "f16", "f16"),
                               _f("sm_90", "f8f6f4", "e4m3", "e5m2", "f16", "f16"),
                               _f("sm_80", "f16", "f16", "f16", "f32", "f16"),
                               _f("sm_120", "f8f6f4", "e5m2", "e4m3", "f16", "f16")], ids=str)
def test_f16_results_in_the_subnormal_range_and_overflow(f):
    """f16 D: products around 2^-18 (results below 2^-14: subnormal f16, RNE to 2^-24) and
    large same-sign products (sums past 65504: +Inf), with C = 0 / -0 / tiny."""
    rng = _seed("f16sub", f)
    M, N, K = 16, 9, 2 * f.p.L + 3
    a = gen_bits(rng, f.atype, (M, K), p_wide=0.0, p_sub=0.3, p_zero=0.1, center=-9)
    b = gen_bits(rng, f.btype, (K, N), p_wide=0.0, p_sub=0.3, p_zero=0.1, center=-9)
    a[8:] = gen_bits(rng, f.atype, (8, K), p_wide=0.0, p_sub=0.0, p_zero=0.0,
                     center=_top_exp(f.atype) - 1)
    a[8:] = positive(a[8:], f.atype)
    b[:, 5:] = positive(gen_bits(rng, f.btype, (K, 4), p_wide=0.0, p_sub=0.0, p_zero=0.0,
                                 center=_top_exp(f.btype) - 1), f.btype)
    c = gen_bits(rng, f.ctype, (M, N), p_wide=0.0, p_zero=0.4, p_sub=0.4, center=-14)
    c[::3] = sign_bit(f.ctype)
    d = both(lambda: mma(a, b, c, **f.kw))
    # the regimes were reached (else this test would prove less than it claims)
    assert ((d[:8] & 0x7C00) == 0).any() and ((d[:8] & 0x3FF) != 0).any()   # f16 subnormals
    assert (d[8:, 5:] == 0x7C00).any()                                      # +Inf


@needs_c
@pytest.mark.parametrize("f", [_f("sm_100", "tf32", "tf32", "tf32", "f32", "f32"),
                               _f("sm_90", "f16", "bf16", "bf16", "f32", "f32"),
                               _f("sm_100", "mxf8f6f4", "e5m2", "e5m2", "f32", "f32",
                                  "ue8m0", 32)], ids=str)
def test_f32_overflow_and_extreme_spread(f):
    """f32 D: same-sign sums past 2^128 give +Inf (RZ); row maxima and column maxima at
    different k (2^127 * 2^-126 + 2^-126 * 2^127: the numpy emax weights underflow there)."""
    rng = _seed("f32ovf", f)
    M, N, K = 6, 5, 2 * f.p.L
    top = _top_exp(f.atype) - 1
    a = gen_bits(rng, f.atype, (M, K), p_wide=0.0, p_sub=0.0, p_zero=0.0, center=top)
    b = gen_bits(rng, f.btype, (K, N), p_wide=0.0, p_sub=0.0, p_zero=0.0, center=top)
    a, b = positive(a, f.atype), positive(b, f.btype)
    a[3:] = gen_bits(rng, f.atype, (3, K), p_wide=1.0, p_sub=0.1)
    b[:, 3:] = gen_bits(rng, f.btype, (K, 2), p_wide=1.0, p_sub=0.1)
    c = gen_bits(rng, "f32", (M, N), p_zero=0.3)
    kw = {}
    if f.scale_type:
        sa = np.full((M, K // 32), 127 + 100, np.uint8)        # 2^100
        sb = np.full((K // 32, N), 127 + 100, np.uint8)
        sa[3:], sb[:, 3:] = 127 - 120, 127 + 110
        kw = scale_kw(f, sa, sb)
    d = both(lambda: mma(a, b, c, **f.kw, **kw))
    assert (d[:3, :3] == 0x7F800000).all()


def below_e_zero(f: Form) -> int:
    """An exponent for the largest products (scaled group sums) where e_zero sets the grid:
    below e_zero, and low enough that their lowest bits fall under 2^(e_zero - F), so that
    the grid 2^(e_zero - F) drops bits that a grid from the products alone would keep."""
    return f.p.e_zero - f.p.F + 4


@needs_c
@pytest.mark.parametrize("f", [f for f in REPS if f.p.model != "emulated"], ids=str)
def test_zero_terms_and_products_just_below_e_zero(f):
    """Products (and scaled group sums) just below the zero-term exponent with zero terms
    present (zero elements of A and of B, all-zero groups, zero C): the only regime where
    e_zero sets the grid.  C: zero, -0, or subnormal (its exponent clamped at emin).  Formats
    whose products never get that small (f16 / fp8 into f32) still run, as plain cases."""
    rng = _seed("ezero", f)
    M, N, K = 12, 9, k_for(f, rng)
    target = below_e_zero(f)
    sexp = target // 2 if f.scale_type == "ue8m0" else -9 if f.scale_type else 0
    center = (target - 2 * sexp) // 2
    a = gen_bits(rng, f.atype, (M, K), p_zero=0.2, p_sub=0.2, p_wide=0.0, center=center)
    b = gen_bits(rng, f.btype, (K, N), p_zero=0.2, p_sub=0.2, p_wide=0.0, center=center)
    a[:4, :16] = 0                                    # an all-zero first group / block part
    b[:, :3] = np.where(rng.random((K, 3)) < 0.5, 0, b[:, :3])
    c = gen_bits(rng, f.ctype, (M, N), p_zero=0.4, p_sub=0.5, p_wide=0.0)
    c[::4] = sign_bit(f.ctype)
    kw = {}
    if f.scale_type:
        nsf = K // f.block
        sa = gen_bits(rng, f.scale_type, (M, nsf), p_zero=0.1, p_sub=0.3, p_wide=0.0,
                      center=sexp)
        sb = gen_bits(rng, f.scale_type, (nsf, N), p_zero=0.1, p_sub=0.3, p_wide=0.0,
                      center=sexp)
        kw = scale_kw(f, sa, sb)
    both(lambda: mma(a, b, c, **f.kw, **kw))
    # the same rows through the per-row-B and batched entry points
    b_rows = np.broadcast_to(b, (M,) + b.shape)
    both(lambda: mma_sparse(a, b_rows, c, **f.kw, **kw))
    kwb = {k: (v[None] if k in ("scale_a", "scale_b") else v) for k, v in kw.items()}
    both(lambda: mma_batch(a[None], b[None], c[None], **f.kw, **kwb))


def exact_bits(values: np.ndarray, fmt: str):
    """Raw bits of exactly representable values (codec.encode, checked by decoding), or None
    if some value is not representable in `fmt`."""
    rounding = "rz" if fmt == "ue8m0" else "rn"
    try:
        bits = encode(values, fmt, rounding)
    except FormatError:
        bits = encode(values, fmt, rounding, satfinite=True)
    back = decode(bits, fmt)
    ok = (back == values) & (np.signbit(back) == np.signbit(values))
    if fmt == "ue4m3" or fmt == "ue8m0":
        ok = back == values
    return bits if ok.all() else None


# the grid of D's last bit near the smallest results, per rounding: RZ to f32 subnormals
# (2^-149), RZ-E8M13 (13 fraction bits: 2^(-126-13)), RNE to f16 subnormals: ties at 2^-25
_TIE_EXP = {"RZ-FP32": -149, "RZ-E8M13": -139, "RNE-FP16": -25}


def grid_tie_case(rng, f: Form, M: int = 9, N: int = 9):
    """One fused block in which the zero-term exponent decides the result bit by bit.

    Each output is a dominant product {1, 3, 9} * 2^q sitting exactly on D's last-bit grid
    (RZ) or on a tie (RNE f16) -- below e_zero -- plus tiny products +-2^(g-2 .. g+2),
    g = e_zero - F, of random sign.  With a zero term the grid is 2^g and the tiny terms are
    truncated there; without one it is finer: the last bit of D follows.  (FACTS section 1;
    the hand versions are test_handcrafted.test_zero_term_exponent_*.)  Zero terms: C = +-0,
    zeros in A (rows 1, 4, 7) and B (columns 1, 4, 7); with an f32 C and an f16 D, C is a
    tiny nonzero f32 instead, so that only A's and B's zeros supply the zero term.
    Returns (a, b, c, sa, sb) bits, or None where the formats cannot hold these values
    (e.g. f16 / fp8 elements into an f32 D: their products never get below e_zero)."""
    p = f.p
    g, q = p.e_zero - p.F, _TIE_EXP[p.rho]
    dom = lambda n: rng.choice([1.0, 3.0], n)                     # noqa: E731
    sgn = lambda shape: rng.choice([-1.0, 1.0], shape)             # noqa: E731
    jit = lambda shape: rng.integers(-1, 2, shape)                 # noqa: E731
    sa = sb = None
    if f.scale_type is None:
        K = p.L
        x, xt = q // 2, g // 2
        A = sgn((M, K)) * 2.0 ** (xt + jit((M, K)))
        B = 2.0 ** (g - xt + jit((K, N)))
        A[:, 0], B[0, :] = dom(M) * 2.0 ** x, dom(N) * 2.0 ** (q - x)
    elif p.model == "fused":                           # mxf8f6f4: the scales carry 2^g
        K = f.block
        A = sgn((M, K)) * 2.0 ** jit((M, K))
        B = 2.0 ** jit((K, N)).astype(float)
        A[:, 0], B[0, :] = dom(M) * 2.0 ** ((q - g) // 2), dom(N) * 2.0 ** (q - g - (q - g) // 2)
        sa, sb = np.full((M, 1), 2.0 ** (g // 2)), np.full((1, N), 2.0 ** (g - g // 2))
    else:                       # grouped: group 0 dominant, groups of later scale blocks tiny
        K, G = p.L, p.G
        nsf = K // f.block
        A, B = np.zeros((M, K)), np.zeros((K, N))
        A[:, 0], B[0, :] = dom(M), dom(N)
        for gi in range(f.block // G, K // G):
            for k in gi * G + rng.choice(G, 2, replace=False):
                A[:, k], B[k, :] = sgn(M) * 2.0 ** jit(M), 2.0 ** jit(N)
        sa, sb = np.empty((M, nsf)), np.empty((nsf, N))
        sa[:, 0], sb[0, :] = 2.0 ** (q // 2), 2.0 ** (q - q // 2)
        sa[:, 1:], sb[1:, :] = 2.0 ** (g // 2 + jit((M, nsf - 1))), 2.0 ** (g - g // 2)
    A[1::3, 1:] *= rng.random((len(range(1, M, 3)), K - 1)) > 0.2
    B[1:, 1::3] *= rng.random((K - 1, len(range(1, N, 3)))) > 0.2
    if f.ctype == f.dtype:
        C = rng.choice([0.0, -0.0], (M, N))
    else:
        C = sgn((M, N)) * 2.0 ** (g + jit((M, N)))
    out = [exact_bits(A, f.atype), exact_bits(B, f.btype), exact_bits(C, f.ctype)]
    if sa is not None:
        out += [exact_bits(sa, f.scale_type), exact_bits(sb, f.scale_type)]
    if any(x is None for x in out):
        return None
    return tuple(out) + ((None, None) if sa is None else ())


TIE_FORMS = [f for f in FORMS if f.p.model != "emulated"
             and grid_tie_case(np.random.default_rng(0), f) is not None]


def test_grid_tie_forms_are_the_expected_ones():
    """The forms whose formats reach below e_zero: bf16 / tf32 into f32, f16 into f16 (also
    from an f32 C), the ue8m0-scaled kinds; not f16 into f32 or fp8 alone."""
    have = {(f.arch, f.kind, f.atype, f.ctype, f.dtype, f.scale_type) for f in TIE_FORMS}
    assert {("sm_100", "f16", "bf16", "f32", "f32", None),
            ("sm_80", "tf32", "tf32", "f32", "f32", None),
            ("sm_90", "f16", "f16", "f16", "f16", None),
            ("sm_100", "f16", "f16", "f32", "f16", None),
            ("sm_100", "mxf8f6f4", "e4m3", "f32", "f32", "ue8m0"),
            ("sm_100", "mxf4", "e2m1", "f32", "f32", "ue8m0"),
            ("sm_120", "mxf4nvf4", "e2m1", "f32", "f32", "ue8m0")} <= have
    assert ("sm_100", "f16", "f16", "f32", "f32", None) not in have
    assert not any(f.scale_type == "ue4m3" for f in TIE_FORMS)


@needs_c
@pytest.mark.parametrize("f", TIE_FORMS, ids=str)
def test_zero_term_exponent_decides_the_last_bit(f):
    rng = _seed("tie", f)
    for _ in range(3):
        a, b, c, sa, sb = grid_tie_case(rng, f)
        kw = scale_kw(f, sa, sb)
        both(lambda: mma(a, b, c, **f.kw, **kw))
    b_rows = np.broadcast_to(b, (a.shape[0],) + b.shape)
    both(lambda: mma_sparse(a, b_rows, c, **f.kw, **kw))


def chained_tie_case(rng, f: Form, M: int = 9, N: int = 9):
    """Two blocks, f16 D: block 1 leaves D = {1, 3} * 2^-20 (an f16 subnormal, on its grid);
    block 2 adds a tie {1, 3, 9} * 2^-25 and tiny products +-2^(-42 +- 2).  The chained c is
    an f16 subnormal, so it aligns at f16's emin -14 (not at its own exponent): emax = -14,
    grid 2^-39, the tiny products truncate to 0 and the tie rounds to even; a c aligned at
    -20 would keep them and break the tie.  None where the formats cannot hold these values."""
    L = f.p.L
    K = 2 * L
    one3 = lambda n: rng.choice([1.0, 3.0], n)                    # noqa: E731
    A, B = np.zeros((M, K)), np.zeros((K, N))
    A[:, 0], B[0, :] = one3(M) * 2.0 ** -10, 2.0 ** -10
    A[:, L], B[L, :] = one3(M) * 2.0 ** -12, one3(N) * 2.0 ** -13
    for k in range(L + 1, L + 5):
        A[:, k] = rng.choice([-1.0, 1.0], M) * 2.0 ** (-21 + rng.integers(-1, 2, M))
        B[k, :] = 2.0 ** (-21 + rng.integers(-1, 2, N))
    out = [exact_bits(A, f.atype), exact_bits(B, f.btype), exact_bits(np.zeros((M, N)), f.ctype)]
    return None if any(x is None for x in out) else tuple(out)


CHAIN_FORMS = [f for f in FORMS if f.dtype == "f16" and f.p.model == "fused"
               and chained_tie_case(np.random.default_rng(0), f) is not None]


@needs_c
@pytest.mark.parametrize("f", CHAIN_FORMS, ids=str)
def test_chained_f16_c_aligns_at_f16_emin(f):
    assert f.atype == "f16"                     # the only element type that reaches 2^-21
    rng = _seed("chain", f)
    a, b, c = chained_tie_case(rng, f)
    d = both(lambda: mma(a, b, c, **f.kw))
    # by the rule above: 2^-24 * (16 * {1, 3} + {1, 3, 9} / 2) rounded to even
    L = f.p.L
    block1 = decode(a[:, :1], f.atype) * decode(b[:1], f.btype) * 2 ** 24
    tie = decode(a[:, L:L + 1], f.atype) * decode(b[L:L + 1], f.btype) * 2 ** 24
    want = np.round(block1 + tie)               # numpy rounds halves to even
    np.testing.assert_array_equal(d, want.astype(np.uint16))
    b_rows = np.broadcast_to(b, (a.shape[0],) + b.shape)
    both(lambda: mma_sparse(a, b_rows, c, **f.kw))


@needs_c
@pytest.mark.parametrize("f", [f for f in REPS if f.scale_type], ids=str)
def test_special_and_zero_scales(f):
    """NaN scales (ue8m0 0xFF, ue4m3 0x7F), zero / subnormal scales, on every scaled kind."""
    rng = _seed("scales", f)
    M, N, K = 9, 9, k_for(f, rng)
    a, b, c, _, _ = operands(rng, f, M, N, K)
    nsf = K // f.block
    nan = 0xFF if f.scale_type == "ue8m0" else 0x7F
    sa = gen_bits(rng, f.scale_type, (M, nsf), p_zero=0.2, p_sub=0.2)
    sb = gen_bits(rng, f.scale_type, (nsf, N), p_zero=0.2, p_sub=0.2)
    sa[0, 0], sb[0, 1], sa[1, :], sb[:, 2] = nan, nan, 0, 0
    d = both(lambda: mma(a, b, c, **f.kw, **scale_kw(f, sa, sb)))
    assert d[0, 0] == 0x7FFFFFFF                      # a NaN scale makes its outputs NaN


# ---- fdpa.py's own functions, with C exponents that are not C's format's ------------------

def _shifted_c(uc: Unpacked, s: int) -> Unpacked:
    """C times 2^-s exactly, value and alignment exponent (tcgen05.mma scale-input-d: the
    compiled loop then takes C's exponents as given instead of deriving them)."""
    keep = ~(uc.zero | uc.special)
    return Unpacked(np.ldexp(uc.value, -s), np.where(keep, uc.exp - s, uc.exp).astype(np.int32),
                    uc.zero, uc.special)


@needs_c
@pytest.mark.parametrize("s", [0, 1, 7, 15])
@pytest.mark.parametrize("f", [_f("sm_100", "f16", "f16", "f16", "f16", "f16"),
                               _f("sm_100", "f16", "bf16", "bf16", "f32", "f32"),
                               _f("sm_100", "tf32", "tf32", "tf32", "f32", "f32")], ids=str)
def test_fdpa_functions_with_scaled_c(f, s):
    """fdpa.fused / fused_batch / fused_rows called directly (as tcgen05_mma's scale-input-d
    path does) with C scaled by 2^-s: subnormal C then aligns below its format's emin."""
    rng = _seed("fdpa", f, s)
    p = f.p
    M, N, K = 18, 13, 2 * p.L + 3
    a, b, c, _, _ = operands(rng, f, M, N, K)
    c = np.where(rng.random(c.shape) < 0.3,
                 gen_bits(rng, f.ctype, c.shape, p_sub=0.9, p_zero=0.05), c).astype(c.dtype)
    ua, ub = unpack(a, f.atype), unpack(b, f.btype)
    uc = _shifted_c(unpack(c, f.ctype), s)
    cdt = np.float32 if fdpa.products_fit_f32(f.atype, f.btype) else np.float64
    both(lambda: fdpa.fused(ua, ub, uc, p, p.rho, f.dtype, cdt))
    b_rows = unpack(np.broadcast_to(b, (M,) + b.shape), f.btype)
    both(lambda: fdpa.fused_rows(ua, b_rows, uc, p, p.rho, f.dtype))
    a3, b3, c3 = (unpack(x[None].repeat(2, 0), t) for x, t in
                  ((a, f.atype), (b, f.btype), (c, f.ctype)))
    c3 = _shifted_c(c3, s)
    both(lambda: fdpa.fused_batch(a3, b3, c3, p, p.rho, f.dtype, cdt))


@needs_c
@pytest.mark.parametrize("entry", ["mma", "sparse"])
def test_grouped_kinds_beyond_64_groups_agree(entry):
    """numerics.mma(_sparse) accepts any K that is a multiple of the scale block; K = 1056
    (66 groups of 16) is far beyond any instruction's K but a legal engine call."""
    f = _f("sm_100", "mxf4", "e2m1", "e2m1", "f32", "f32", "ue8m0", 32)
    rng = _seed("long-grouped", entry)
    if entry == "mma":
        run_dense(f, rng, 3, 5, K=1056)
    else:
        run_sparse(f, rng, (), 3, 5, K=1056)


def _empty_call(entry, M, N):
    K = 16
    kw = dict(arch="sm_100", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    a, c = np.zeros((M, K), np.uint16), np.zeros((M, N), np.uint32)
    if entry == "mma":
        return lambda: mma(a, np.zeros((K, N), np.uint16), c, **kw)
    if entry == "batch":
        return lambda: mma_batch(a[None], np.zeros((1, K, N), np.uint16), c[None], **kw)
    return lambda: mma_sparse(a, np.zeros((M, K, N), np.uint16), c, **kw)


@needs_c
@pytest.mark.parametrize("entry,M,N", [
    ("mma", 0, 3), ("mma", 2, 0), ("mma", 0, 0), ("batch", 0, 3), ("batch", 2, 0),
    ("sparse", 0, 3), ("sparse", 2, 0)])
def test_empty_m_or_n_behaves_the_same_on_both_backends(entry, M, N):
    """Same empty D, or the same named error -- never a crash or a bare ValueError."""
    outcome = {}
    for name in ("numpy", "c"):
        with backend.use(name):
            try:
                d = _empty_call(entry, M, N)()
                outcome[name] = ("D", d.shape, d.dtype)
            except PtxsimError as e:
                outcome[name] = ("error", type(e).__name__)
    assert outcome["numpy"] == outcome["c"]


# ---- a random sweep -----------------------------------------------------------------------------

ENTRY = ("mma", "batch", "sparse")
N_CHOICES = list(range(1, 10)) + [16, 63, 64, 65, 129, 130]


def _sweep_k(f: Form, blocks: int, partial: int) -> int:
    """`blocks` whole fused blocks plus a partial one where legal (`partial` elements;
    block-scaled kinds: whole scale blocks only)."""
    L = f.p.L
    if f.scale_type is None:
        return blocks * L + partial % L or L
    if f.p.model == "grouped":
        return blocks * L + (f.block if partial or not blocks else 0)
    return max(blocks, 1) * L


def _sweep_case(f, entry, M, N, seed, blocks=None, partial=0):
    rng = _seed("sweep", f, seed)
    K = None if blocks is None else _sweep_k(f, blocks, partial)
    if entry == "mma":
        run_dense(f, rng, M, N, K)
    elif entry == "batch":
        run_batch(f, rng, 2, M, N, K)
    else:
        run_sparse(f, rng, (2,), M, N, K)


@needs_c
@settings(max_examples=40, deadline=None)
@given(f=st.sampled_from(FORMS), entry=st.sampled_from(ENTRY), M=st.integers(1, 20),
       N=st.sampled_from(N_CHOICES), seed=st.integers(0, 2**16))
def test_random_sweep(f, entry, M, N, seed):
    _sweep_case(f, entry, M, N, seed)


@needs_c
@pytest.mark.slow
@settings(max_examples=4000, deadline=None)
@given(f=st.sampled_from(FORMS), entry=st.sampled_from(ENTRY), M=st.integers(1, 40),
       N=st.sampled_from(N_CHOICES + [200, 257]), seed=st.integers(0, 2**32 - 1),
       blocks=st.integers(0, 4), partial=st.integers(0, 40))
def test_random_sweep_long(f, entry, M, N, seed, blocks, partial):
    """More forms x shapes x K (up to 4 blocks and a partial one), run with -m slow."""
    _sweep_case(f, entry, M, N, seed, blocks, partial)


# ---- selection and the compiled module's own checks ------------------------------------------

def test_unknown_backend_is_a_named_error():
    with pytest.raises(PtxsimError, match="unknown numerics backend 'nope'"):
        with backend.use("nope"):
            pass
    assert backend.active() in backend.available()


def test_use_restores_the_previous_backend():
    before = backend.active()
    with backend.use("numpy"):
        assert backend.active() == "numpy" and backend.c_module() is None
    assert backend.active() == before


def test_extension_is_built_when_a_c_compiler_is_present():
    """CI has gcc: a missing extension there means every user silently gets the slow numpy
    path.  Fails (does not skip) whenever the compiler the interpreter was built with exists."""
    cc = (sysconfig.get_config_var("CC") or "").split()
    if not cc or shutil.which(cc[0]) is None:
        pytest.skip(f"no C compiler: sysconfig CC = {sysconfig.get_config_var('CC')!r} is not "
                    "on PATH, so the numpy fallback is the expected backend")
    assert backend.compiled is not None, (
        f"a C compiler ({cc[0]}) is present but ptxsim.numerics._fdpa_c is not built: install "
        "with `pip install .`, or `python setup.py build_ext --inplace` in a checkout")
    assert backend.available() == ("c", "numpy")


def _fused_args(**over):
    """A valid _fdpa_c.fused call: T = 1, M = 2, N = 3, K = 4, f16-like values."""
    T, M, N, K = 1, 2, 3, 4
    a = dict(av=np.ones(T * M * K), ae=np.zeros(T * M * K, np.int32), bv=np.ones(K * N),
             be=np.zeros(K * N, np.int32), cv=np.zeros(T * M * N), ce=np.empty(0, np.int32),
             out=np.zeros(T * M * N, np.uint32), T=T, M=M, N=N, K=K, b_t=K * N, b_i=0, F=25,
             L=16, e_zero=-133, c_emin=-126, d_emin=-126, frac=23, rnd_emin=-126, rne=0,
             out16=0)
    a.update(over)
    return list(a.values())




def _elements(n: int, value: float) -> np.ndarray:
    """n e2m1 elements of one value, in the form the built grouped entry takes."""
    return np.full(n, int(2 * value), np.int16) if HALVES else np.full(n, value)


def _grouped_args(**over):
    """A valid _fdpa_c.grouped call: T = 1, M = 2, N = 3, K = 32, block 16 (2 scales)."""
    T, M, N, K, nsf = 1, 2, 3, 32, 2
    a = {_A: _elements(M * K, 1.0), _B: _elements(K * N, 0.5), "sav": np.ones(M * nsf),
         "sae": np.zeros(M * nsf, np.int32), "sbv": np.ones(nsf * N),
         "sbe": np.zeros(nsf * N, np.int32), "cv": np.zeros(M * N),
         "out": np.zeros(M * N, np.uint32), "T": T, "M": M, "N": N, "K": K, "nsf": nsf, "b_t": 0,
         "b_i": 0, "sb_t": 0, "sb_i": 0, "F": 35, "L": 64, "G": 16, "e_zero": -139, "block": 16}
    a.update({(_A if k == "A" else _B if k == "B" else k): v for k, v in over.items()})
    return list(a.values())


@needs_c
def test_compiled_valid_calls_compute():
    """The baseline of the error cases below: 4 products 1*1 (f32 D) = 4.0; 32 products
    1*0.5 over two block-16 scales of 1 = 16.0."""
    cm = backend.compiled
    args = _fused_args()
    cm.fused(*args)
    assert (args[6] == np.float32(4.0).view(np.uint32)).all()
    args = _grouped_args()
    cm.grouped(*args)
    assert (args[7] == np.float32(16.0).view(np.uint32)).all()


@needs_c
@pytest.mark.parametrize("over,match", [
    (dict(N=0), "bad dimensions"), (dict(K=0), "bad dimensions"), (dict(L=0), "bad dimensions"),
    (dict(T=-1), "bad dimensions"), (dict(M=-1), "bad dimensions"),
    (dict(b_t=-1), "bad dimensions"),
    (dict(av=np.ones(7)), "buffer av"), (dict(ae=np.zeros(7, np.int32)), "buffer ae"),
    (dict(bv=np.ones(11)), "buffer bv"), (dict(be=np.zeros(11, np.int32)), "buffer be"),
    (dict(cv=np.zeros(5)), "buffer cv"), (dict(ce=np.zeros(5, np.int32)), "buffer ce"),
    (dict(out=np.zeros(5, np.uint32)), "buffer out"),
    (dict(T=2), "buffer"), (dict(b_i=1), "buffer bv"), (dict(K=5), "buffer"),
], ids=lambda x: str(x) if isinstance(x, str) else "-".join(f"{k}" for k in x))
def test_compiled_fused_rejects_bad_arguments(over, match):
    with pytest.raises(ValueError, match=match):
        backend.compiled.fused(*_fused_args(**over))


@needs_c
@pytest.mark.parametrize("over,match", [
    (dict(N=0), "bad dimensions"), (dict(K=0), "bad dimensions"),
    (dict(K=24), "bad dimensions"),                     # K not a multiple of G
    (dict(G=17), "bad dimensions"), (dict(G=0), "bad dimensions"),
    (dict(L=8), "bad dimensions"),                      # L < G
    (dict(nsf=3), "bad dimensions"),                    # nsf * block != K
    (dict(block=0), "bad dimensions"), (dict(sb_i=-1), "bad dimensions"),
    (dict(K=16 * 65, nsf=65), "buffer a"),              # K beyond the buffers: refused
    (dict(A=63), "buffer a"), (dict(B=95), "buffer b"),  # one element short
    (dict(sav=np.ones(3)), "buffer sav"), (dict(sae=np.zeros(3, np.int32)), "buffer sae"),
    (dict(sbv=np.ones(5)), "buffer sbv"), (dict(sbe=np.zeros(5, np.int32)), "buffer sbe"),
    (dict(cv=np.zeros(5)), "buffer cv"), (dict(out=np.zeros(5, np.uint32)), "buffer out"),
    (dict(b_i=1), "buffer b"), (dict(sb_i=1), "buffer sb"),
], ids=lambda x: str(x) if isinstance(x, str) else "-".join(f"{k}" for k in x))
def test_compiled_grouped_rejects_bad_arguments(over, match):
    over = {k: (_elements(v, 1.0) if k in ("A", "B") else v) for k, v in over.items()}
    with pytest.raises(ValueError, match=match):
        backend.compiled.grouped(*_grouped_args(**over))


@needs_c
@pytest.mark.parametrize("where", ["A", "B"])
def test_compiled_grouped_rejects_non_e2m1_values(where):
    """The grouped kinds take e2m1 elements (k/2, |k| <= 12): anything else is refused."""
    bad = [13, -13, 24, 32767] if HALVES else [0.25, 7.0, -6.5, np.nan, np.inf]
    for value in bad:
        args = _grouped_args()
        idx = 0 if where == "A" else 1
        arr = args[idx].copy()
        arr[5] = value
        args[idx] = arr
        with pytest.raises(ValueError, match="e2m1"):
            backend.compiled.grouped(*args)


def test_e2m1_halves_tables_match_the_decoder():
    """The glue's e2m1 -> halves conversions (engine._E2M1_HALVES from the bits, fdpa.e2m1_halves
    from decoded values) against the format decoder; non-e2m1 values are a named error."""
    from ptxsim.numerics import engine
    table = getattr(engine, "_E2M1_HALVES", None)
    conv = getattr(fdpa, "e2m1_halves", None)
    if table is None and conv is None:
        pytest.skip("this engine passes e2m1 values to the compiled loop as float64 (no halves "
                    "table to check)")
    want = 2 * decode(np.arange(16, dtype=np.uint8), "e2m1")
    if table is not None:
        np.testing.assert_array_equal(table, want)
    if conv is not None:
        np.testing.assert_array_equal(conv(want / 2), want)
        for value in (0.25, 7.0, -6.5, np.nan, np.inf):
            with pytest.raises(PtxsimError, match="e2m1"):
                conv(np.array([1.0, value]))


@needs_c
def test_compiled_output_must_be_writable():
    out = np.zeros(6, np.uint32)
    out.flags.writeable = False
    with pytest.raises((TypeError, BufferError, ValueError)):
        backend.compiled.fused(*_fused_args(out=out))


_OVERFLOW = """
import numpy as np
from ptxsim.numerics import _fdpa_c as cm
f, i, o = np.zeros(4), np.zeros(4, np.int32), np.zeros(4, np.uint32)
h, h16 = np.zeros(4, np.int16), np.zeros(16, np.int16)
try:
    cm.{call}
except ValueError as e:
    print("ValueError:", e)
"""


@needs_c
@pytest.mark.xfail(OLD_MODULE, strict=True, reason="this build of _fdpa.c computes buffer "
                   "sizes as T*M*K*8 etc. without overflow checks (reported; fixed in main "
                   "5baa38d): dimensions whose product wraps to a small size pass the length "
                   "check and the loop reads far past the buffers (segfault)")
@pytest.mark.parametrize("call", [
    "fused(f, i, f, i, f, np.empty(0, np.int32), o, 1, 2**62, 1, 4, 0, 0, 25, 32, -133, -126, "
    "-126, 23, -126, 0, 0)",
    ("grouped(h, h16, " if HALVES else "grouped(f, np.zeros(16), ")
    + "f, i, f, i, f, o, 1, 2**62, 1, 16, 1, 0, 0, 0, 0, 35, 64, 16, -139, 16)",
], ids=["fused", "grouped"])
def test_compiled_dimensions_whose_byte_counts_overflow_are_refused(call):
    """Huge dimensions must raise ValueError, not crash; run in a child process because the
    failure mode is a segmentation fault."""
    src = _OVERFLOW.format(call=call)
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=60,
                       env=_child_env())
    # refused up front: not a crash, and not a complaint about the (out-of-bounds) values read
    assert r.returncode == 0 and r.stdout.startswith("ValueError") and "e2m1" not in r.stdout, \
        (r.returncode, r.stdout[-300:], r.stderr[-300:])


def _child_env():
    import os
    import ptxsim
    env = dict(os.environ)
    src = os.path.dirname(os.path.dirname(ptxsim.__file__))
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env
