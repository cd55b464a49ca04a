"""ptxsim.numerics.mma_batch: T independent MMAs in one call, each bit for bit what MMA-Sim
gives for it alone (the oracle), whatever the other batch entries hold.

Batch entries are chosen to disagree in every global decision the batched engine makes once
for the whole batch: the evaluation strategy (elementwise tile vs float64 matrix product), the
"wide exponent spread" emax path with its exact fallback, the finite / Inf-NaN summation, and the
chunking of the elementwise tile.  Those decisions belong to the numpy backend (fdpa.py): the
tests that steer them through its module-level knobs run under ``backend.use("numpy")`` (the
compiled backend ignores the knobs and is run on the same entries as a case of its own).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mmasim")
from mmasim.nv_ptx.sim import TCGen05MMA, TCGen05MMABlockScale  # noqa: E402

from ptxsim.errors import OperandError  # noqa: E402
from ptxsim.numerics import backend, fdpa, mma_batch  # noqa: E402

from .oracle import gen_bits, make_tile, mmasim_dense, mmasim_scaled, on_each_backend  # noqa

COMPILED = pytest.mark.skipif("c" not in backend.available(),
                              reason="compiled backend ptxsim.numerics._fdpa_c not built")


@pytest.fixture
def on_engine(engine):
    """Run the test under the numerics backend named by its `engine` parameter."""
    with backend.use(engine):
        yield engine

M, N = 24, 16


def _entries(rng, at, bt, dt, K, L):
    """Four (a, b, c) tiles of different character."""
    out = [make_tile(rng, at, bt, dt, M, N, K, L)]                    # every regime at once
    a = gen_bits(rng, at, (M, K), p_wide=0.0, p_sub=0.0, p_zero=0.05)   # ordinary: mostly exact
    b = gen_bits(rng, bt, (K, N), p_wide=0.0, p_sub=0.0, p_zero=0.05)
    out.append((a, b, gen_bits(rng, dt, (M, N), p_wide=0.0, p_sub=0.0)))
    a, b, c = (x.copy() for x in out[0])
    if at == "bf16":        # extreme spread: BLAS weights underflow, the exact fallback runs
        a[:2, :2] = [[0x7F00, 0x0080]] * 2
        b[:2, :2] = [[0x0080] * 2, [0x7F00] * 2]
    out.append((a, b, c))
    a = gen_bits(rng, at, (M, K), p_special=0.1)                       # Inf / NaN inputs
    b = gen_bits(rng, bt, (K, N), p_special=0.1)
    out.append((a, b, gen_bits(rng, dt, (M, N), p_special=0.1)))
    return out


FORMS = [("f16", "f16", "f32", "f16", 16), ("bf16", "bf16", "f32", "f16", 16),
         ("f16", "f16", "f16", "f16", 16), ("tf32", "tf32", "f32", "tf32", 8),
         ("e4m3", "e5m2", "f32", "f8f6f4", 32), ("e2m1", "e3m2", "f16", "f8f6f4", 32)]


@pytest.mark.parametrize("engine,fraction,refine,tile_terms", [
    ("numpy", 0.1, 0.35, 1 << 20), ("numpy", 0.0, 0.0, 1000), ("numpy", 1.0, 0.0, 1 << 20),
    ("numpy", 0.0, 1.01, 1 << 20), ("numpy", 0.8, 1.01, 1 << 20),
    pytest.param("c", 0.1, 0.35, 1 << 18, marks=COMPILED)],
    ids=["default", "full-tile-chunked", "blas+gather", "refine+tile", "refine+gather",
         "compiled"])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(f[:3]))
def test_batch_matches_mmasim_per_entry(form, engine, fraction, refine, tile_terms,
                                        on_engine, monkeypatch):
    monkeypatch.setattr(fdpa, "FULL_TILE_FRACTION", fraction)
    monkeypatch.setattr(fdpa, "REFINE_FRACTION", refine)   # > 1: the exact test always runs
    monkeypatch.setattr(fdpa, "TILE_TERMS", tile_terms)     # 1000: one entry per chunk
    at, bt, dt, kind, L = form
    rng = np.random.default_rng([len(at), L, ord(dt[1])])
    K = 2 * L + 4                                           # two blocks and a partial one
    ents = _entries(rng, at, bt, dt, K, L)
    a, b, c = (np.stack(x) for x in zip(*ents))
    got = mma_batch(a, b, c, arch="sm_100", kind=kind, atype=at, btype=bt, ctype=dt, dtype=dt)
    op = TCGen05MMA("Blackwell", f"m64n8k{L}.kind::{kind}.{dt}.{at}.{bt}")
    assert got.shape == (len(ents), M, N)
    for t, (ai, bi, ci) in enumerate(ents):
        want = mmasim_dense(op, ai, bi, ci, at, bt, dt)
        assert (got[t] == want).all(), f"entry {t}: {(got[t] != want).sum()} differ"


def test_batch_scaled_mxf8f6f4_and_grouped_match_mmasim():
    """Scale-folded (mxf8f6f4: batched) and grouped (mxf4nvf4: one MMA at a time) kinds."""
    rng = np.random.default_rng(5)
    T = 3
    for kind, at, st, blk, K in [("mxf8f6f4", "e4m3", "ue8m0", 32, 32),
                                 ("mxf8f6f4", "e2m3", "ue8m0", 32, 32),
                                 ("mxf4nvf4", "e2m1", "ue4m3", 16, 64)]:
        ents = [make_tile(rng, at, at, "f32", M, N, K, 32) for _ in range(T)]
        sa = gen_bits(rng, st, (T, M, K // blk), p_zero=0.05, p_sub=0.05, p_wide=0.2)
        sb = gen_bits(rng, st, (T, K // blk, N), p_zero=0.05, p_sub=0.05, p_wide=0.2)
        a, b, c = (np.stack(x) for x in zip(*ents))
        runs = on_each_backend(lambda: mma_batch(
            a, b, c, arch="sm_100", kind=kind, atype=at, btype=at, ctype="f32", dtype="f32",
            scale_a=sa, scale_b=sb, scale_type=st, block=blk))
        op = TCGen05MMABlockScale(
            "Blackwell", f"m128n8k{K}.kind::{kind}.block{blk}.f32.{at}.{at}.{st}")
        for t in range(T):
            want = mmasim_scaled(op, a[t], b[t], c[t], sa[t], sb[t], at, at, st,
                                 packed=kind != "mxf8f6f4")
            for name, got in runs.items():
                assert (got[t] == want).all(), \
                    f"{name} {kind} entry {t}: {(got[t] != want).sum()} differ"


def test_batch_errors():
    a = np.zeros((2, 4, 16), np.uint16)
    b = np.zeros((2, 16, 8), np.uint16)
    c = np.zeros((2, 4, 8), np.uint32)
    kw = dict(arch="sm_100", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    with pytest.raises(OperandError, match="batch sizes differ"):
        mma_batch(a, b[:1], c, **kw)
    with pytest.raises(OperandError, match=r"\(T, M, K\)"):
        mma_batch(a[0], b[0], c[0], **kw)
    with pytest.raises(OperandError, match="K dimensions differ"):
        mma_batch(a[:, :, :8], b, c, **kw)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "e4m3", "e2m1", "tf32"])
def test_exact_output_test_is_the_per_product_minimum(fmt):
    """The refined exactness test: min_k (lsb(a[i, k]) + lsb(b[k, j])) over nonzero finite
    products, by the BLAS max-finder, equals the brute-force minimum over the (L, M, N) tile."""
    from ptxsim.numerics.unpack import unpack
    rng = np.random.default_rng(len(fmt))
    L = 16
    a = unpack(gen_bits(rng, fmt, (2, L, 24), p_special=0.05, p_wide=0.5, p_sub=0.2), fmt)
    b = unpack(gen_bits(rng, fmt, (2, L, 16), p_special=0.05, p_wide=0.5, p_sub=0.2), fmt)
    anz, bnz = ~(a.zero | a.special), ~(b.zero | b.special)
    neg, _ = fdpa._prod_emax(-a.lsb, -b.lsb, anz, bnz)
    both = anz[:, :, :, None] & bnz[:, :, None, :]
    brute = np.where(both, a.lsb[:, :, :, None] + b.lsb[:, :, None, :], 4000).min(axis=1)
    want = np.where(both.any(axis=1), brute, 4000)          # no product: ZERO_EXP negated
    assert (-neg == want).all()


def _bf16(e, rng, shape):
    """bf16 bits of +-1.m * 2^e, random mantissas (e may be an array; -133 <= e <= 127)."""
    e = np.broadcast_to(e, shape)
    sub = e < -126                                            # subnormal: 2^e exactly
    sign = rng.integers(0, 2, shape) << 15
    norm = ((e + 127) << 7) | rng.integers(0, 128, shape)
    return (sign | np.where(sub, 1 << np.clip(e + 133, 0, 6), norm)).astype(np.uint16)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("c", marks=COMPILED)])
@pytest.mark.parametrize("gap", [97, 98, 99, 100, 101, 130])
def test_prescaled_float32_tile_at_its_limits_matches_mmasim(gap, engine, on_engine,
                                                             monkeypatch):
    """bf16 (float64 tile otherwise) through the float32 pre-scaled tile: row maxima and column
    maxima at different k so that D = alpha + beta - eprod is near PRESCALE_MAX_GAP = 99 (99:
    float32 path, 100+: float64), with the other elements spread down to subnormals so that
    scaled factors land around 2^-126 and products around the truncation grid.  The pre-scaled
    tile is a numpy-backend strategy: under "numpy" a spy checks that it was taken exactly when
    the gap allows it; "c" runs the same tiles through the compiled loop."""
    monkeypatch.setattr(fdpa, "FULL_TILE_FRACTION", 0.0)
    taken = []
    real = fdpa._prescaled_f32

    def spy(*args):
        out = real(*args)
        taken.append(out[0] is not None)
        return out
    monkeypatch.setattr(fdpa, "_prescaled_f32", spy)
    rng = np.random.default_rng(gap)
    Mt, Nt, K = 24, 16, 16
    hi_a, hi_b = 50, 49
    ea = rng.integers(-133, 20, (Mt, K))
    eb = rng.integers(-133, 20, (K, Nt))
    ea[:, 0], eb[1, :] = hi_a, hi_b                   # alpha at k = 0, beta at k = 1
    eprod = hi_a + hi_b - gap                         # the largest product: at k = 2
    ea[:, 2] = eprod // 2
    eb[2, :] = eprod - eprod // 2
    eb[0, :] = np.minimum(eprod - hi_a - 1, 20)       # keep the k = 0 / k = 1 products below
    ea[:, 1] = np.minimum(eprod - hi_b - 1, 20)
    a, b = _bf16(ea, rng, (Mt, K)), _bf16(eb, rng, (K, Nt))
    c = np.zeros((Mt, Nt), np.uint32)
    op = TCGen05MMA("Blackwell", "m64n8k16.kind::f16.f32.bf16.bf16")
    want = mmasim_dense(op, a, b, c, "bf16", "bf16", "f32")
    got = mma_batch(a[None], b[None], c[None], arch="sm_100", kind="f16", atype="bf16",
                    btype="bf16", ctype="f32", dtype="f32")[0]
    assert (got == want).all(), f"{(got != want).sum()} differ"
    if engine == "numpy":
        assert taken == [gap <= fdpa.PRESCALE_MAX_GAP]
    else:
        assert taken == []
