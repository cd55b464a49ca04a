"""tcgen05_ld_ctas / tcgen05_st_ctas (several CTAs in one gather / scatter) against the per-CTA
tcgen05_ld / tcgen05_st, which place every cell by the spec's fragment figures (9.7.16.8.3,
Figures 183-187). The .32x32b case with every warp at its own lane quarter takes a slicing path
(`_rect_plan`); the others take the per-cell index path; both must give the per-CTA bits, and
refuse (None / False, nothing written) where a per-CTA check would raise."""
import numpy as np
import pytest

from ptxsim.isa import tmem_ldst
from ptxsim.isa.tmem import TensorMemory

N_CTAS, COLS = 3, 128


def _setup(rng, alloc=COLS):
    cells = rng.integers(0, 2**32, (N_CTAS, 128, 512), dtype=np.uint64).astype(np.uint32)
    tms = [TensorMemory(cells=cells[i]) for i in range(N_CTAS)]
    bases = [tm.alloc(alloc) for tm in tms]
    return cells, tms, bases


def _warps():
    # warps 0..3 of CTA 0, 1..2 of CTA 2, 3 of CTA 1: order by CTA row as the handler does
    which = np.array([0, 0, 0, 0, 1, 2, 2])
    wid = np.array([0, 1, 2, 3, 3, 1, 2])
    return which, wid


@pytest.mark.parametrize("shape,num,col", [("32x32b", 64, 0), ("32x32b", 32, 64),
                                           ("32x32b", 1, 127), ("16x64b", 8, 0),
                                           ("16x256b", 4, 16)])
def test_ld_ctas_equals_per_cta(shape, num, col):
    rng = np.random.default_rng(1)
    cells, tms, _ = _setup(rng)
    which, wid = _warps()
    taddr = ((32 * (wid % 4)) << 16) + col
    got = tmem_ldst.tcgen05_ld_ctas(tms, cells, which, shape, num, taddr, wid)
    want = np.concatenate([tmem_ldst.tcgen05_ld(tms[c], shape, num, taddr[which == c],
                                                warp_ids=wid[which == c]) for c in range(N_CTAS)])
    assert got is not None and got.dtype == np.uint32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,num,col", [("32x32b", 64, 0), ("32x32b", 2, 126),
                                           ("16x128b", 4, 8)])
def test_st_ctas_equals_per_cta(shape, num, col):
    rng = np.random.default_rng(2)
    cells, tms, _ = _setup(rng)
    ref_cells = cells.copy()
    ref = [TensorMemory(cells=ref_cells[i]) for i in range(N_CTAS)]
    for tm in ref:
        tm.alloc(COLS)
    which, wid = _warps()
    taddr = ((32 * (wid % 4)) << 16) + col
    nregs = tmem_ldst.fragment_map(shape, num).nregs
    regs = rng.integers(0, 2**32, (32 * wid.size, nregs), dtype=np.uint64).astype(np.uint32)
    assert tmem_ldst.tcgen05_st_ctas(tms, cells, which, shape, num, taddr, regs, wid)
    for c in range(N_CTAS):
        rows = np.repeat(which == c, 32)
        tmem_ldst.tcgen05_st(ref[c], shape, num, taddr[which == c], regs[rows],
                             warp_ids=wid[which == c])
    np.testing.assert_array_equal(cells, ref_cells)
    # .32x32b: thread t of warp w stored register j at lane 32 * (w % 4) + t, column col + j
    if shape == "32x32b":
        w = 4                                   # CTA 1's warp 3
        np.testing.assert_array_equal(cells[1, 96:128, col:col + nregs],
                                      regs[32 * w:32 * w + 32])


def test_unallocated_or_foreign_quarter_is_refused():
    rng = np.random.default_rng(3)
    cells, tms, _ = _setup(rng, alloc=32)           # columns 0..31 allocated
    before = cells.copy()
    which, wid = _warps()
    taddr = ((32 * (wid % 4)) << 16) + 16
    regs = np.zeros((32 * wid.size, 32), np.uint32)
    # columns 16..47: 32..47 are not allocated
    assert tmem_ldst.tcgen05_ld_ctas(tms, cells, which, "32x32b", 32, taddr, wid) is None
    assert not tmem_ldst.tcgen05_st_ctas(tms, cells, which, "32x32b", 32, taddr, regs, wid)
    np.testing.assert_array_equal(cells, before)
    # a warp at another warp's quarter: the general path (no slicing) decides
    bad = taddr.copy()
    bad[1] = (64 << 16) + 0                         # warp 1 names lane 64 (warp 2's quarter)
    assert tmem_ldst._rect_plan(tms, tmem_ldst.fragment_map("32x32b", 8), bad, wid, which,
                                None) is None


def test_columns_allocated_equals_the_column_mask():
    """`columns_allocated` walks the live allocations; it must agree with the (512,) mask of
    live columns for every range, including empty, negative-start and past-the-end ones."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        tm = TensorMemory()
        for k in sorted(rng.integers(5, 9, int(rng.integers(0, 5))).tolist(), reverse=True):
            if tm.try_alloc(2 ** k) is None:          # nCols never grows (9.7.16.7.1)
                break
        for s in list(tm.allocations):
            if rng.random() < 0.3:
                del tm.allocations[s]
        mask = tm.allocated_mask
        for a in range(-3, 520, 11):
            for b in range(a - 2, 530, 17):
                assert tm.columns_allocated(a, b) == bool(mask[a:b].all()), (a, b)


@pytest.mark.parametrize("rows", [[0, 1, 2], [2, 0], [1]])
def test_whole_ctas_in_quarter_order(rows):
    """Each CTA's four warps in quarter order (the Triton epilogue's form): the per-CTA slices
    give the per-CTA tcgen05_ld / tcgen05_st bits, for consecutive and scattered CTA rows."""
    rng = np.random.default_rng(5)
    cells, tms, _ = _setup(rng)
    ref_cells = cells.copy()
    ref = [TensorMemory(cells=ref_cells[i]) for i in range(N_CTAS)]
    for tm in ref:
        tm.alloc(COLS)
    which = np.repeat(rows, 4)
    wid = np.tile(np.arange(4), len(rows))
    taddr = ((32 * wid) << 16) + 8
    got = tmem_ldst.tcgen05_ld_ctas([tms[r] for r in sorted(rows)], cells, which, "32x32b",
                                    16, taddr, wid)
    want = np.concatenate([tmem_ldst.tcgen05_ld(tms[r], "32x32b", 16, taddr[:4],
                                                warp_ids=np.arange(4)) for r in rows])
    np.testing.assert_array_equal(got, want)
    regs = rng.integers(0, 2**32, (32 * wid.size, 16), dtype=np.uint64).astype(np.uint32)
    assert tmem_ldst.tcgen05_st_ctas([tms[r] for r in sorted(rows)], cells, which, "32x32b",
                                     16, taddr, regs, wid)
    for k, r in enumerate(rows):
        tmem_ldst.tcgen05_st(ref[r], "32x32b", 16, taddr[:4], regs[128 * k:128 * (k + 1)],
                             warp_ids=np.arange(4))
    np.testing.assert_array_equal(cells, ref_cells)
