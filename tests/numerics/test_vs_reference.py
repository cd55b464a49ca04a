"""The vectorised engine against the naive one-output-at-a-time reference (reference.py), on
forms MMA-Sim does not model: kind f8f6f4 fp8 on sm_90 (the wgmma row; warp-level mma fp8 on sm_90
is kind fp8_sync, checked against the H200 in test_hw_mma_sync.py) and sm_100, mixed C/D types, block-scaled
K > 64 (K = 96 is sm_103's three-scale form), 2:4-sparse A (pruned elements zero), integers.
The engine runs under each numerics backend (numpy fdpa.py and the compiled _fdpa.c:
oracle.on_each_backend) against one reference value."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.numerics import mma

from .oracle import gen_bits, on_each_backend
from .reference import ref_mma

CASES = [
    dict(arch="sm_90", kind="f8f6f4", atype="e4m3", btype="e5m2", ctype="f32", dtype="f32"),
    dict(arch="sm_90", kind="f8f6f4", atype="e5m2", btype="e5m2", ctype="f16", dtype="f16"),
    dict(arch="sm_100", kind="f8f6f4", atype="e4m3", btype="e4m3", ctype="f32", dtype="f32"),
    dict(arch="sm_80", kind="f16", atype="f16", btype="f16", ctype="f16", dtype="f32"),
    dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f16"),
    dict(arch="sm_120", kind="f8f6f4", atype="e2m1", btype="e3m2", ctype="f16", dtype="f32"),
    dict(arch="sm_100", kind="tf32", atype="tf32", btype="tf32", ctype="f32", dtype="f32"),
]


def _ab(rng, kw, M, N, K, sparse=False):
    a = gen_bits(rng, kw["atype"], (M, K), p_special=0.01, p_wide=0.3)
    b = gen_bits(rng, kw["btype"], (K, N), p_special=0.01, p_wide=0.3)
    if sparse:                                   # 2:4 structured sparsity: keep 2 of every 4
        keep = np.zeros((M, K), bool)
        for g in range(0, K, 4):
            idx = np.argsort(rng.random((M, 4)), axis=1)[:, :2] + g
            np.put_along_axis(keep, idx, True, axis=1)
        a = np.where(keep, a, 0).astype(a.dtype)
    c = gen_bits(rng, kw["ctype"], (M, N), p_special=0.02)
    return a, b, c


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse2of4"])
@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(kw.values()))
def test_engine_matches_reference(kw, sparse):
    rng = np.random.default_rng(abs(hash(tuple(kw.values()))) % 2**32 + sparse)
    a, b, c = _ab(rng, kw, 6, 5, 72, sparse)
    want = ref_mma(a, b, c, **kw)
    for name, got in on_each_backend(lambda: mma(a, b, c, **kw)).items():
        assert (got == want).all(), f"{name}: {(got != want).sum()} differ"


@pytest.mark.parametrize("kind,stype,block,K", [("mxf4nvf4", "ue4m3", 16, 96),
                                                ("mxf4", "ue8m0", 32, 96),
                                                ("mxf4nvf4", "ue8m0", 32, 128),
                                                ("mxf8f6f4", "ue8m0", 32, 64)])
def test_block_scaled_long_K_matches_reference(kind, stype, block, K):
    rng = np.random.default_rng(K + block)
    at = "e2m1" if kind != "mxf8f6f4" else "e4m3"
    kw = dict(arch="sm_100", kind=kind, atype=at, btype=at, ctype="f32", dtype="f32")
    a, b, c = _ab(rng, kw, 6, 5, K)
    sa = gen_bits(rng, stype, (6, K // block), p_special=0.03, p_wide=0.3, p_zero=0.05)
    sb = gen_bits(rng, stype, (K // block, 5), p_special=0.03, p_wide=0.3, p_zero=0.05)
    kw.update(scale_a=sa, scale_b=sb, scale_type=stype, block=block)
    want = ref_mma(a, b, c, **kw)
    for name, got in on_each_backend(lambda: mma(a, b, c, **kw)).items():
        assert (got == want).all(), f"{name}: {(got != want).sum()} differ"


@pytest.mark.parametrize("at,bt", [("s8", "u8"), ("u4", "s4"), ("s4", "s4")])
@pytest.mark.parametrize("sat", [False, True])
def test_integer_matches_reference(at, bt, sat):
    rng = np.random.default_rng(7)
    wa = 8 if "8" in at else 4
    wb = 8 if "8" in bt else 4
    a = rng.integers(0, 1 << wa, (6, 64)).astype(np.uint8)
    b = rng.integers(0, 1 << wb, (64, 5)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (6, 5)).astype(np.int32)
    c[0] = 2**31 - 1                            # force overflow on some outputs
    kw = dict(arch="sm_80", kind="i8", atype=at, btype=bt, ctype="s32", dtype="s32",
              satfinite=sat)
    assert (mma(a, b, c, **kw) == ref_mma(a, b, c, **kw)).all()


def test_reference_itself_matches_mmasim():
    """The reference is trusted only because it agrees with MMA-Sim where both apply."""
    pytest.importorskip("mmasim")
    from mmasim.nv_ptx.sim import TCGen05MMA, TCGen05MMABlockScale

    from .oracle import mmasim_dense, mmasim_scaled
    rng = np.random.default_rng(11)
    for at, bt, dt, kind, k in [("f16", "f16", "f16", "f16", 16),
                                ("bf16", "bf16", "f32", "f16", 16),
                                ("e5m2", "e2m3", "f32", "f8f6f4", 32)]:
        kw = dict(arch="sm_100", kind=kind, atype=at, btype=bt, ctype=dt, dtype=dt)
        a, b, c = _ab(rng, kw, 6, 5, 2 * k)
        op = TCGen05MMA("Blackwell", f"m64n8k{k}.kind::{kind}.{dt}.{at}.{bt}")
        assert (ref_mma(a, b, c, **kw) == mmasim_dense(op, a, b, c, at, bt, dt)).all()
    kw = dict(arch="sm_100", kind="mxf4nvf4", atype="e2m1", btype="e2m1", ctype="f32",
              dtype="f32")
    a, b, c = _ab(rng, kw, 6, 5, 64)
    sa = gen_bits(rng, "ue4m3", (6, 4), p_special=0.03, p_wide=0.3, p_zero=0.05)
    sb = gen_bits(rng, "ue4m3", (4, 5), p_special=0.03, p_wide=0.3, p_zero=0.05)
    op = TCGen05MMABlockScale("Blackwell", "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")
    want = mmasim_scaled(op, a, b, c, sa, sb, "e2m1", "e2m1", "ue4m3", True)
    assert (ref_mma(a, b, c, scale_a=sa, scale_b=sb, scale_type="ue4m3", block=16, **kw)
            == want).all()
