"""Differential tests: ptxsim.numerics.mma against MMA-Sim on identical raw bits, bit for bit.

Every (arch, instruction, types) form MMA-Sim models for sm_80 / sm_89 / sm_90 / sm_100 / sm_120
is run on tiles that mix ordinary values, wide exponent spread, subnormals, exact cancellation,
all-zero blocks, NaN/Inf inputs and special C (oracle.make_tile), with K spanning several fused
blocks so the block chaining is exercised too.  Every ptxsim result is computed under each
numerics backend this installation has (numpy fdpa.py, compiled _fdpa.c: oracle.on_each_backend)
against the one MMA-Sim value.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mmasim")
from mmasim.nv_ptx.sim import MMA, WGMMA, MMABlockScale, TCGen05MMA, TCGen05MMABlockScale  # noqa

from ptxsim.numerics import backend, mma, params  # noqa: E402

from .oracle import (gen_bits, make_tile, make_tiny_tile, mmasim_dense, mmasim_scaled,  # noqa
                     on_each_backend)

F8F6F4 = ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]
FP8 = ["e4m3", "e5m2"]
M, N = 24, 16

# (ptxsim arch, kind, atype, btype, dtype, MMA-Sim constructor)
DENSE = (
    [("sm_100", "tf32", "tf32", "tf32", "f32",
      lambda: TCGen05MMA("Blackwell", "m64n8k8.kind::tf32.f32.tf32.tf32"))]
    + [("sm_100", "f16", t, t, d, (lambda t=t, d=d: TCGen05MMA(
        "Blackwell", f"m64n8k16.kind::f16.{d}.{t}.{t}")))
       for t, d in [("f16", "f32"), ("bf16", "f32"), ("f16", "f16")]]
    + [("sm_100", "f8f6f4", a, b, d, (lambda a=a, b=b, d=d: TCGen05MMA(
        "Blackwell", f"m64n8k32.kind::f8f6f4.{d}.{a}.{b}")))
       for a in F8F6F4 for b in F8F6F4 for d in ["f32", "f16"]]
    # Hopper wgmma
    + [("sm_90", "tf32", "tf32", "tf32", "f32", lambda: WGMMA("Hopper", "m64n8k8.f32.tf32.tf32"))]
    + [("sm_90", "f16", t, t, d, (lambda t=t, d=d: WGMMA("Hopper", f"m64n8k16.{d}.{t}.{t}")))
       for t, d in [("f16", "f32"), ("bf16", "f32"), ("f16", "f16")]]
    + [("sm_90", "f8f6f4", a, b, d,
        (lambda a=a, b=b, d=d: WGMMA("Hopper", f"m64n8k32.{d}.{a}.{b}")))
       for a in FP8 for b in FP8 for d in ["f32", "f16"]]
    # warp-level mma
    + [(arch, "tf32", "tf32", "tf32", "f32",
        (lambda g=g: MMA(g, "m16n8k8.f32.tf32.tf32.f32")))
       for arch, g in [("sm_80", "Ampere"), ("sm_89", "Ada Lovelace"), ("sm_90", "Hopper"),
                       ("sm_100", "Blackwell"), ("sm_120", "RTX Blackwell")]]
    + [(arch, "f16", t, t, d, (lambda g=g, t=t, d=d: MMA(g, f"m16n8k16.{d}.{t}.{t}.{d}")))
       for arch, g in [("sm_80", "Ampere"), ("sm_89", "Ada Lovelace"), ("sm_90", "Hopper"),
                       ("sm_100", "Blackwell"), ("sm_120", "RTX Blackwell")]
       for t, d in [("f16", "f32"), ("bf16", "f32"), ("f16", "f16")]]
    + [("sm_89", "f8f6f4", a, b, d, (lambda a=a, b=b, d=d: MMA(
        "Ada Lovelace", f"m16n8k32.{d}.{a}.{b}.{d}")))
       for a in FP8 for b in FP8 for d in ["f32", "f16"]]
    + [("sm_120", "f8f6f4", a, b, d, (lambda a=a, b=b, d=d: MMA(
        "RTX Blackwell", f"m16n8k32.kind::f8f6f4.{d}.{a}.{b}.{d}")))
       for a in F8F6F4 for b in F8F6F4 for d in ["f32", "f16"]]
)


def _id(form):
    return "-".join(form[:5])


@pytest.mark.parametrize("form", DENSE, ids=_id)
def test_dense_matches_mmasim(form):
    arch, kind, at, bt, dt, make = form
    L = params(arch, kind, at, bt, dt).L
    K = 3 * L                                     # three chained fused blocks
    rng = np.random.default_rng(hash(_id(form)) % 2**32)
    a, b, c = make_tile(rng, at, bt, dt, M, N, K, L)
    want = mmasim_dense(make(), a, b, c, at, bt, dt)
    for name, got in on_each_backend(lambda: mma(a, b, c, arch=arch, kind=kind, atype=at,
                                                 btype=bt, ctype=dt, dtype=dt)).items():
        assert got.dtype == want.dtype
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{name}: {len(bad)} of {got.size} differ; first at {bad[0]}: "
                               f"ptxsim {got[tuple(bad[0])]:#x} MMA-Sim {want[tuple(bad[0])]:#x}")


@pytest.mark.parametrize("form", DENSE, ids=_id)
def test_dense_zero_term_exponent_matches_mmasim(form):
    """Tiny products plus zero terms: pins the e_zero column of the table."""
    arch, kind, at, bt, dt, make = form
    p = params(arch, kind, at, bt, dt)
    rng = np.random.default_rng(hash(_id(form)) % 2**32 + 7)
    a, b, c = make_tiny_tile(rng, at, bt, dt, M, N, 2 * p.L, p.e_zero)
    want = mmasim_dense(make(), a, b, c, at, bt, dt)
    for name, got in on_each_backend(lambda: mma(a, b, c, arch=arch, kind=kind, atype=at,
                                                 btype=bt, ctype=dt, dtype=dt)).items():
        assert (got == want).all(), f"{name}: {(got != want).sum()} of {got.size} differ"


# (arch, kind, atype, btype, scale type, block, MMA-Sim constructor, K)
SCALED = (
    [("sm_100", "mxf8f6f4", a, b, "ue8m0", 32, (lambda a=a, b=b: TCGen05MMABlockScale(
        "Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{a}.{b}.ue8m0")), 32)
     for a in F8F6F4 for b in F8F6F4]
    + [("sm_120", "mxf8f6f4", a, b, "ue8m0", 32, (lambda a=a, b=b: MMABlockScale(
        "RTX Blackwell", f"m16n8k32.kind::mxf8f6f4.block32.f32.{a}.{b}.f32.ue8m0")), 32)
       for a in F8F6F4 for b in F8F6F4]
    + [("sm_100", kind, "e2m1", "e2m1", st, blk, (lambda kind=kind, st=st, blk=blk:
        TCGen05MMABlockScale("Blackwell", f"m128n8k64.kind::{kind}.block{blk}.f32.e2m1.e2m1.{st}")),
        K)
       for kind, st, blk in [("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 32),
                             ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue4m3", 16)]
       for K in (64, 192)]
    + [("sm_120", kind, "e2m1", "e2m1", st, blk, (lambda kind=kind, st=st, blk=blk: MMABlockScale(
        "RTX Blackwell", f"m16n8k64.kind::{kind}.block{blk}.f32.e2m1.e2m1.f32.{st}")), 64)
       for kind, st, blk in [("mxf4", "ue8m0", 32), ("mxf4nvf4", "ue8m0", 32),
                             ("mxf4nvf4", "ue8m0", 16), ("mxf4nvf4", "ue4m3", 16)]]
)


def _sid(form):
    return "-".join(map(str, form[:6])) + f"-K{form[7]}"


@pytest.mark.parametrize("form", SCALED, ids=_sid)
@pytest.mark.parametrize("seed", [0, 1])
def test_scaled_matches_mmasim(form, seed):
    arch, kind, at, bt, st, blk, make, K = form
    L = params(arch, kind, at, bt, "f32").L
    rng = np.random.default_rng([seed, hash(_sid(form)) % 2**32])
    a, b, c = make_tile(rng, at, bt, "f32", M, N, K, L)
    # scales: mostly near 1, some spread, NaN encodings (seed 1), ue4m3 zeros / subnormals
    sa = gen_bits(rng, st, (M, K // blk), p_special=0.03 * seed, p_zero=0.05, p_sub=0.05,
                  p_wide=0.2)
    sb = gen_bits(rng, st, (K // blk, N), p_special=0.03 * seed, p_zero=0.05, p_sub=0.05,
                  p_wide=0.2)
    if st == "ue4m3":                         # the sign bit is ignored: set it on some
        sa = sa | (rng.integers(0, 2, sa.shape) << 7).astype(sa.dtype)
    want = mmasim_scaled(make(), a, b, c, sa, sb, at, bt, st, packed=kind != "mxf8f6f4")
    for name, got in on_each_backend(lambda: mma(
            a, b, c, arch=arch, kind=kind, atype=at, btype=bt, ctype="f32", dtype="f32",
            scale_a=sa, scale_b=sb, scale_type=st, block=blk)).items():
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{name}: {len(bad)} of {got.size} differ; first at {bad[0]}: "
                               f"ptxsim {got[tuple(bad[0])]:#x} MMA-Sim {want[tuple(bad[0])]:#x}")


@pytest.mark.parametrize("form", SCALED, ids=_sid)
def test_scaled_zero_term_exponent_matches_mmasim(form):
    """Scales that push products / group sums just below e_zero, with zero terms present."""
    arch, kind, at, bt, st, blk, make, K = form
    p = params(arch, kind, at, bt, "f32")
    rng = np.random.default_rng(hash(_sid(form)) % 2**32 + 7)
    shift = p.e_zero // 2 if st == "ue8m0" else -6      # exponent of each scale
    a, b, c = make_tiny_tile(rng, at, bt, "f32", M, N, K, p.e_zero, scaled_exp=2 * shift)
    a[:, :16] = 0                                         # an all-zero group in every row
    sa = gen_bits(rng, st, (M, K // blk), p_zero=0.1, p_sub=0.3, p_wide=0.0, center=shift)
    sb = gen_bits(rng, st, (K // blk, N), p_zero=0.1, p_sub=0.3, p_wide=0.0, center=shift)
    want = mmasim_scaled(make(), a, b, c, sa, sb, at, bt, st, packed=kind != "mxf8f6f4")
    for name, got in on_each_backend(lambda: mma(
            a, b, c, arch=arch, kind=kind, atype=at, btype=bt, ctype="f32", dtype="f32",
            scale_a=sa, scale_b=sb, scale_type=st, block=blk)).items():
        assert (got == want).all(), f"{name}: {(got != want).sum()} of {got.size} differ"


# ---- both evaluation strategies of the fused model, and partial / long K --------------------

ORDINARY = [f for f in DENSE if f[0] == "sm_100"] + [f for f in DENSE if f[0] == "sm_90"][:4]


@pytest.mark.parametrize("engine,fraction", [
    ("numpy", 0.0), ("numpy", 1.0),
    pytest.param("c", None, marks=pytest.mark.skipif(
        "c" not in backend.available(), reason="compiled backend _fdpa_c not built"))],
    ids=["full-tile", "blas+gather", "compiled"])
@pytest.mark.parametrize("form", ORDINARY[::3], ids=_id)
def test_both_strategies_match_mmasim(form, engine, fraction, monkeypatch):
    """FULL_TILE_FRACTION 0 forces the elementwise whole-tile path of fdpa.py; 1 forces the
    float64 matrix product for exact outputs plus the gathered path for the rest.  Both are
    numpy strategies: they run under the numpy backend (the compiled loop has one strategy,
    run on the same tiles as the third case)."""
    from ptxsim.numerics import fdpa
    if fraction is not None:
        monkeypatch.setattr(fdpa, "FULL_TILE_FRACTION", fraction)
    arch, kind, at, bt, dt, make = form
    L = params(arch, kind, at, bt, dt).L
    rng = np.random.default_rng(hash(_id(form)) % 2**32 + 3)
    a, b, c = make_tile(rng, at, bt, dt, M, N, 2 * L, L)
    # ordinary data in half the rows, so that many outputs are exact
    a[:12] = gen_bits(rng, at, (12, 2 * L), p_wide=0.0, p_sub=0.0, p_zero=0.05)
    want = mmasim_dense(make(), a, b, c, at, bt, dt)
    with backend.use(engine):       # the knob above steers the numpy backend only
        got = mma(a, b, c, arch=arch, kind=kind, atype=at, btype=bt, ctype=dt, dtype=dt)
    assert (got == want).all(), f"{(got != want).sum()} of {got.size} differ"


@pytest.mark.parametrize("K", [5, 24, 40, 200])
@pytest.mark.parametrize("at,bt,dt", [("f16", "f16", "f32"), ("e5m2", "e3m2", "f16"),
                                      ("bf16", "bf16", "f32")])
def test_partial_and_long_K_match_mmasim(K, at, bt, dt):
    """K not a multiple of the block (last block partial) and K spanning many blocks."""
    kind = "f16" if at in ("f16", "bf16") else "f8f6f4"
    op = TCGen05MMA("Blackwell", f"m64n8k{16 if kind == 'f16' else 32}.kind::{kind}.{dt}.{at}.{bt}")
    rng = np.random.default_rng(K)
    a = gen_bits(rng, at, (M, K), p_special=0.01)
    b = gen_bits(rng, bt, (K, N), p_special=0.01)
    c = gen_bits(rng, dt, (M, N))
    want = mmasim_dense(op, a, b, c, at, bt, dt)
    for name, got in on_each_backend(lambda: mma(a, b, c, arch="sm_100", kind=kind, atype=at,
                                                 btype=bt, ctype=dt, dtype=dt)).items():
        assert (got == want).all(), f"{name}: {(got != want).sum()} of {got.size} differ"


def test_extreme_exponent_spread_matches_mmasim():
    """bf16 rows/columns whose maxima sit at different k (numpy backend: the BLAS emax weights
    underflow and the exact fallback runs): 2^127*2^-126 + 2^-126*2^127 = 4."""
    a = np.array([[0x7F00, 0x0080]] * 2, np.uint16)          # 2^127, 2^-126
    b = np.array([[0x0080] * 2, [0x7F00] * 2], np.uint16)    # 2^-126 / 2^127
    c = np.zeros((2, 2), np.uint32)
    op = TCGen05MMA("Blackwell", "m64n8k16.kind::f16.f32.bf16.bf16")
    want = mmasim_dense(op, a, b, c, "bf16", "bf16", "f32")
    assert (want == 0x40800000).all()
    for name, got in on_each_backend(lambda: mma(a, b, c, arch="sm_100", kind="f16",
                                                 atype="bf16", btype="bf16", ctype="f32",
                                                 dtype="f32")).items():
        assert (got == 0x40800000).all(), name


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_stress_random_forms_match_mmasim(seed):
    """More seeds over every dense and block-scaled form (run with -m slow)."""
    rng = np.random.default_rng(1000 + seed)
    for form in DENSE:
        arch, kind, at, bt, dt, make = form
        L = params(arch, kind, at, bt, dt).L
        a, b, c = make_tile(rng, at, bt, dt, M, N, int(rng.integers(1, 4)) * L, L)
        want = mmasim_dense(make(), a, b, c, at, bt, dt)
        for name, got in on_each_backend(lambda: mma(a, b, c, arch=arch, kind=kind, atype=at,
                                                     btype=bt, ctype=dt, dtype=dt)).items():
            assert (got == want).all(), f"{name} {_id(form)}: {(got != want).sum()} differ"
    for form in SCALED:
        arch, kind, at, bt, st, blk, make, K = form
        L = params(arch, kind, at, bt, "f32").L
        a, b, c = make_tile(rng, at, bt, "f32", M, N, K, L)
        sa = gen_bits(rng, st, (M, K // blk), p_special=0.02, p_wide=0.3)
        sb = gen_bits(rng, st, (K // blk, N), p_special=0.02, p_wide=0.3)
        want = mmasim_scaled(make(), a, b, c, sa, sb, at, bt, st, packed=kind != "mxf8f6f4")
        for name, got in on_each_backend(lambda: mma(
                a, b, c, arch=arch, kind=kind, atype=at, btype=bt, ctype="f32", dtype="f32",
                scale_a=sa, scale_b=sb, scale_type=st, block=blk)).items():
            assert (got == want).all(), f"{name} {_sid(form)}: {(got != want).sum()} differ"
