"""numerics.mma_sparse: sparse MMA with a B row selection per output row (the model measured on
the H200, docs/numerics.md).

The independent formulation each test compares with: for every row r, the dense engine
`numerics.mma` (itself bit-exact with MMA-Sim) on the 1 x Ks stored row and the Ks x N matrix of
the B rows that row selects -- one output row at a time, by definition of the model.  Plus where
the model agrees with / parts from the dense model on the decompressed A (hand reasoning in the
docstrings), and the error paths.
"""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.errors import MmaTypeError, OperandError
from ptxsim.numerics import backend, mma, mma_sparse

from .oracle import gen_bits


@pytest.fixture(autouse=True, params=backend.available())
def numerics_backend(request):
    """Every test here runs under each numerics backend this installation has: "numpy"
    (fdpa.py, the specification) and, where built, "c" (the compiled _fdpa.c, the default);
    otherwise the numpy path would go untested here."""
    with backend.use(request.param):
        yield request.param

CASES = [
    dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32"),
    dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f16", dtype="f16"),
    dict(arch="sm_80", kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32"),
    dict(arch="sm_90", kind="tf32", atype="tf32", btype="tf32", ctype="f32", dtype="f32"),
    dict(arch="sm_90", kind="fp8_sync", atype="e4m3", btype="e5m2", ctype="f32", dtype="f32"),
    dict(arch="sm_90", kind="fp8_sync", atype="e5m2", btype="e5m2", ctype="f16", dtype="f16"),
    dict(arch="sm_100", kind="f8f6f4", atype="e2m1", btype="e3m2", ctype="f32", dtype="f32"),
    dict(arch="sm_120", kind="f8f6f4", atype="e4m3", btype="e4m3", ctype="f16", dtype="f16"),
    dict(arch="sm_90", kind="i8", atype="s8", btype="u8", ctype="s32", dtype="s32"),
]
SCALED = [("mxf8f6f4", "e4m3", "ue8m0", 32, 64), ("mxf4", "e2m1", "ue8m0", 32, 64),
          ("mxf4nvf4", "e2m1", "ue4m3", 16, 64), ("mxf4nvf4", "e2m1", "ue8m0", 16, 128)]


def operands(rng, kw, lead, M, Ks, N, p_special=0.02):
    if kw["kind"] == "i8":                  # 8-bit patterns; C near the int32 limits too
        a = rng.integers(0, 256, lead + (M, Ks)).astype(np.uint8)
        b = rng.integers(0, 256, lead + (M, Ks, N)).astype(np.uint8)
        c = (rng.integers(-2**31, 2**31, lead + (M, N)) & 0xFFFFFFFF).astype(np.uint32)
        return a, b, c
    a = gen_bits(rng, kw["atype"], lead + (M, Ks), p_special=p_special, p_wide=0.3)
    b = gen_bits(rng, kw["btype"], lead + (M, Ks, N), p_special=p_special, p_wide=0.3)
    return a, b, gen_bits(rng, kw["ctype"], lead + (M, N), p_special=p_special)


def per_row(a, b, c, **kw):
    """The definition: one dense engine call per row (1 x Ks) @ (Ks x N)."""
    lead = a.shape[:-1]
    out = np.empty(c.shape, np.uint16 if kw["dtype"] == "f16" else np.uint32)
    for idx in np.ndindex(*lead):
        extra = {}
        if "scale_a" in kw:
            extra = dict(scale_a=kw["scale_a"][idx][None], scale_b=kw["scale_b"][idx[:-1]])
        base = {k: v for k, v in kw.items() if k not in ("scale_a", "scale_b")}
        out[idx] = mma(a[idx][None], b[idx], c[idx][None], **base, **extra)[0]
    return out


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: "-".join(kw.values()))
def test_rows_equal_the_dense_engine_per_row(kw):
    rng = np.random.default_rng(abs(hash(tuple(kw.values()))) % 2**32)
    for lead, Ks in (((3,), 32), ((2, 2), 40), ((), 8)):       # leading axes, several blocks
        a, b, c = operands(rng, kw, lead, 16, Ks, 8)
        sat = {"satfinite": True} if kw["kind"] == "i8" and Ks == 40 else {}
        got = mma_sparse(a, b, c, **kw, **sat)
        assert got.shape == lead + (16, 8)
        assert (got == per_row(a, b, c, **kw, **sat)).all()


@pytest.mark.parametrize("kind,at,stype,block,Ks", SCALED)
def test_block_scaled_rows_equal_the_dense_engine_per_row(kind, at, stype, block, Ks):
    rng = np.random.default_rng(Ks + block)
    kw = dict(arch="sm_100", kind=kind, atype=at, btype=at, ctype="f32", dtype="f32")
    a, b, c = operands(rng, kw, (2,), 16, Ks, 8)
    sa = gen_bits(rng, stype, (2, 16, Ks // block), p_special=0.02, p_wide=0.3, p_zero=0.05)
    sb = gen_bits(rng, stype, (2, Ks // block, 8), p_special=0.02, p_wide=0.3, p_zero=0.05)
    kw.update(scale_a=sa, scale_b=sb, scale_type=stype, block=block)
    assert (mma_sparse(a, b, c, **kw) == per_row(a, b, c, **kw)).all()


def _decompressed(rng, fmt, M, K):
    """A 2:4 structured-sparse A: stored (M, K/2), logical (M, K), and the kept columns."""
    cols = np.sort(np.argsort(rng.random((M, K // 4, 4)), -1)[..., :2], -1)
    cols = (cols + 4 * np.arange(K // 4)[:, None]).reshape(M, K // 2)
    stored = gen_bits(rng, fmt, (M, K // 2), p_zero=0.0, p_wide=0.3)
    logical = np.zeros((M, K), stored.dtype)
    np.put_along_axis(logical, cols, stored, axis=1)
    return stored, logical, cols


def test_agrees_with_dense_of_decompressed_when_k_fits_one_block():
    """Logical K = 16 = L (sm_90 f16): both models are one fused block over the same nonzero
    products; the pruned zeros only add e_zero = -133 to the max, far below these operands'
    exponents, so every output agrees."""
    rng = np.random.default_rng(1)
    kw = dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    stored, logical, cols = _decompressed(rng, "f16", 16, 16)
    B = gen_bits(rng, "f16", (16, 8), p_zero=0.0, p_wide=0.3)
    c = gen_bits(rng, "f32", (16, 8), p_zero=0.0)
    assert (mma_sparse(stored, B[cols], c, **kw) == mma(logical, B, c, **kw)).all()


def test_parts_from_dense_of_decompressed_when_k_spans_blocks():
    """Logical K = 32 (m16n8k32 .sp f16, L = 16): the dense model on the decompressed A rounds
    (RZ to f32) after logical column 15; the sparse model sums the 16 stored products in one
    block.  They part when the first block's rounding drops bits the single block keeps.
    Hand case, B = 1, C = 0, stored products 2^4 (column 0), 2^-21 (column 1), -2^4 (column 31):
    dense: block 1 = 16 + 2^-21 (emax 4, grid 2^-21, exact, but 26 significant bits) -> RZ f32
    16.0; block 2: 16 - 16 = +0.  Sparse: one block, emax 4, grid 2^-21, all kept:
    2^-21 = 0x35000000."""
    kw = dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    f16 = lambda v: np.array(v, np.float16).view(np.uint16)
    logical = np.zeros((1, 32), np.uint16)
    logical[0, [0, 1, 31]] = f16([16.0, 2.0 ** -21, -16.0])
    stored = logical[:, [0, 1] + list(range(4, 32, 4))[:13] + [31]]       # 16 stored
    cols = np.array([[0, 1] + list(range(4, 32, 4))[:13] + [31]])
    B = f16(np.ones((32, 1)))
    c = np.zeros((1, 1), np.uint32)
    assert mma_sparse(stored, B[cols], c, **kw)[0, 0] == 0x35000000
    assert mma(logical, B, c, **kw)[0, 0] == 0


def test_pruned_positions_are_never_multiplied():
    """A NaN / Inf in a B row that no stored element of a row selects does not reach that row
    (H200: docs/mma-sp.md); the dense model on the decompressed A multiplies it by the pruned
    zero: Inf*0 = NaN."""
    kw = dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    rng = np.random.default_rng(2)
    stored, logical, cols = _decompressed(rng, "f16", 16, 16)
    B = gen_bits(rng, "f16", (16, 8), p_zero=0.0)
    skipped = np.setdiff1d(np.arange(16), cols[0])[0]      # a column row 0 prunes
    B[skipped] = 0x7C00                                      # +Inf
    c = np.zeros((16, 8), np.uint32)
    d_sparse = mma_sparse(stored, B[cols], c, **kw)
    d_dense = mma(logical, B, c, **kw)
    assert (d_dense[0] == 0x7FFFFFFF).all()
    assert not (d_sparse[0] == 0x7FFFFFFF).any()
    selects = (cols == skipped).any(axis=1)                  # rows that do multiply that row
    assert (d_sparse[selects] == d_dense[selects]).all()


def test_errors():
    kw = dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    a = np.zeros((16, 8), np.uint16)
    b = np.zeros((16, 8, 8), np.uint16)
    c = np.zeros((16, 8), np.uint32)
    with pytest.raises(OperandError, match="b_rows"):
        mma_sparse(a, b[:, :4], c, **kw)
    with pytest.raises(OperandError, match="c is"):
        mma_sparse(a, b, c[:8], **kw)
    with pytest.raises(OperandError):
        mma_sparse(a[0], b, c, **kw)
    with pytest.raises(OperandError, match="Ks = 0"):
        mma_sparse(a[:, :0], b[:, :0], c, **kw)
    with pytest.raises(OperandError, match="satfinite"):
        mma_sparse(a, b, c, **kw, satfinite=True)
    with pytest.raises(MmaTypeError):
        mma_sparse(a, b, c, **{**kw, "arch": "sm_70"})
    kw = dict(arch="sm_100", kind="mxf4", atype="e2m1", btype="e2m1", ctype="f32", dtype="f32",
              scale_type="ue8m0", block=32)
    a4, b4 = np.zeros((16, 64), np.uint8), np.zeros((16, 64, 8), np.uint8)
    with pytest.raises(OperandError, match="scale_a"):
        mma_sparse(a4, b4, c, **kw, scale_a=np.zeros((16, 1), np.uint8),
                   scale_b=np.zeros((2, 8), np.uint8))
    with pytest.raises(OperandError, match="scale_b"):
        mma_sparse(a4, b4, c, **kw, scale_a=np.zeros((16, 2), np.uint8),
                   scale_b=np.zeros((2, 16), np.uint8))


@pytest.mark.parametrize("kw,e_zero", [
    (dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32"), -133),
    (dict(arch="sm_90", kind="f16", atype="f16", btype="f16", ctype="f16", dtype="f16"), -21),
    (dict(arch="sm_100", kind="tf32", atype="tf32", btype="tf32", ctype="f32", dtype="f32"),
     -133),
])
def test_regimes_where_zero_terms_and_specials_decide(kw, e_zero):
    """The tiles of the dense differential tests, one B shared by every row (so the per-row
    dense engine sees exactly the dense tile): products just below e_zero with zero terms
    present (the only place e_zero sets the grid), wide spreads, subnormals, exact
    cancellation, all-zero blocks, NaN/Inf in A, B and C."""
    from .oracle import make_tile, make_tiny_tile
    rng = np.random.default_rng(-e_zero)
    for a, b, c in (make_tiny_tile(rng, kw["atype"], kw["btype"], kw["ctype"], 24, 16, 40,
                                   e_zero),
                    make_tile(rng, kw["atype"], kw["btype"], kw["ctype"], 24, 16, 40, 16)):
        b_rows = np.broadcast_to(b, (24,) + b.shape)
        assert (mma_sparse(a, b_rows, c, **kw) == mma(a, b, c, **kw)).all()


def test_block_scaled_zero_groups_and_zero_scales():
    """mxf4nvf4: groups of 16 whose products are all zero, and zero / NaN scales, count with
    e_zero = -139 (or NaN) exactly as the dense grouped model: tiny scales make it matter."""
    rng = np.random.default_rng(7)
    kw = dict(arch="sm_100", kind="mxf4nvf4", atype="e2m1", btype="e2m1", ctype="f32",
              dtype="f32", scale_type="ue8m0", block=16)
    a = gen_bits(rng, "e2m1", (16, 64), p_zero=0.3)
    b = gen_bits(rng, "e2m1", (64, 8), p_zero=0.3)
    a[:8, :16] = 0                                   # first group of rows 0-7: all zero
    b[16:32, 4:] = 0                                 # second group of columns 4-7: all zero
    sa = (rng.integers(0, 12, (16, 4)) + 127 - 150).astype(np.uint8)   # 2^-23 .. 2^-12
    sb = (rng.integers(0, 12, (4, 8)) + 127 - 150).astype(np.uint8)
    sa[3, 1], sb[2, 5] = 0xFF, 0                     # a NaN scale, and 2^-127
    c = gen_bits(rng, "f32", (16, 8), p_zero=0.5, p_sub=0.3, p_wide=0.0, center=-130)
    b_rows = np.broadcast_to(b, (16,) + b.shape)
    assert (mma_sparse(a, b_rows, c, **kw, scale_a=sa, scale_b=sb) ==
            mma(a, b, c, **kw, scale_a=sa, scale_b=sb)).all()
