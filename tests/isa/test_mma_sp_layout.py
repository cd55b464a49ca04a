"""Fragment and metadata layouts of warp-level mma.sp against NVIDIA CuTe's layouts.

Each expected layout below is transcribed from CUTLASS (github.com/NVIDIA/cutlass, commit
7107b05535f8977f5ecb9d01ee203205b1fd9bc4) as CuTe (shape, stride) pairs and evaluated by the tiny
CuTe layout evaluator in this file: (thread, value) -> column-major index into the (rows, cols)
tile. Nothing here calls the code under test to make an expected value.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from ptxsim.isa import mma_fragments as fr


# ------------------------------------------------------------------ a minimal CuTe evaluator
def _flatten(shape, stride):
    if isinstance(shape, int):
        return [(shape, stride)]
    return [m for s, d in zip(shape, stride) for m in _flatten(s, d)]


def cute_eval(shape, stride, coord: int) -> int:
    """Index of a 1-D coordinate in a (possibly nested) CuTe layout: colexicographic split."""
    idx = 0
    for s, d in _flatten(shape, stride):
        idx += (coord % s) * d
        coord //= s
    return idx


def cute_size(shape) -> int:
    return int(np.prod([s for s, _ in _flatten(shape, shape)]))


def tv_table(layout, rows):
    """{(thread, value): (row, col)} of a CuTe (T, V) -> (rows, cols) layout."""
    (tshape, vshape), (tstride, vstride) = layout
    out = {}
    for t in range(cute_size(tshape)):
        for v in range(cute_size(vshape)):
            i = cute_eval(tshape, tstride, t) + cute_eval(vshape, vstride, v)
            out[t, v] = (i % rows, i // rows)
    return out


# ----------------------------------------------------- transcribed CuTe layouts (T32, V) -> tile
# include/cute/atom/mma_traits_sm80.hpp
SM80_16x8_Row = (((4, 8), (2, 2)), ((32, 1), (16, 8)))                     # (M16, N8) and A 16x8
SM80_16x8x16_F16_A = (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))        # (M16, K16)
SM80_16x8x16_F16_B = (((4, 8), (2, 2)), ((16, 1), (8, 64)))                # (N8, K16)
SM80_16x8x4_TF32_A = (((4, 8), 2), ((16, 1), 8))                           # (M16, K4)
SM80_16x8x8_TF32_A = (((4, 8), (2, 2)), ((16, 1), (8, 64)))                # (M16, K8)
SM80_16x8x8_TF32_B = (((4, 8), 2), ((8, 1), 32))                           # (N8, K8)
SM80_16x8x16_S8_A = (((4, 8), (4, 2)), ((64, 1), (16, 8)))                 # (M16, K16)
SM80_16x8x32_S8_A = (((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))        # (M16, K32)
SM80_16x8x32_S8_B = (((4, 8), (4, 2)), ((32, 1), (8, 128)))                # (N8, K32)
SM80_16x8x32_S4_A = (((4, 8), (8, 2)), ((128, 1), (16, 8)))                # (M16, K32)
SM80_16x8x64_S4_A = (((4, 8), (8, 2, 2)), ((128, 1), (16, 8, 512)))       # (M16, K64)
SM80_16x8x64_S4_B = (((4, 8), (8, 2)), ((64, 1), (8, 256)))                # (N8, K64)
# include/cute/atom/mma_traits_sm120_sparse.hpp (SM120_SPARSE_16x8x64_TN, _16x8x128_TN_VS)
SM120_SP_16x8x64_B = (((4, 8), (4, 4)), ((32, 1), (8, 128)))               # (N8, K64) bytes
SM120_SP_16x8x128_B = (((4, 8), (8, 4)), ((64, 1), (8, 256)))              # (N8, K128) nibbles

# (fragment under test, CuTe layout, rows of the CuTe tile, transpose?)
# The sparse A fragments equal the dense A fragments of the half-K shape (9.7.14.6.2 formulas).
A_CASES = {
    "f16 m16n8k16": (fr.a_fragment(16, 16), SM80_16x8_Row, 16),
    "f16 m16n8k32": (fr.a_fragment(32, 16), SM80_16x8x16_F16_A, 16),
    "tf32 m16n8k8": (fr.a_fragment(8, 32), SM80_16x8x4_TF32_A, 16),
    "tf32 m16n8k16": (fr.a_fragment(16, 32), SM80_16x8x8_TF32_A, 16),
    "u8 m16n8k32": (fr.a_fragment(32, 8), SM80_16x8x16_S8_A, 16),
    "u8 m16n8k64": (fr.a_fragment(64, 8), SM80_16x8x32_S8_A, 16),
    "u4 m16n8k64": (fr.a_fragment(64, 4), SM80_16x8x32_S4_A, 16),
    "u4 m16n8k128": (fr.a_fragment(128, 4), SM80_16x8x64_S4_A, 16),
}
B_CASES = {
    "f16 m16n8k16": (fr.b_fragment(16, 16), SM80_16x8x16_F16_B),
    "tf32 m16n8k8": (fr.b_fragment(8, 32), SM80_16x8x8_TF32_B),
    "u8 m16n8k32": (fr.b_fragment(32, 8), SM80_16x8x32_S8_B),
    "u8 m16n8k64": (fr.b_fragment(64, 8), SM120_SP_16x8x64_B),
    "u4 m16n8k64": (fr.b_fragment(64, 4), SM80_16x8x64_S4_B),
    "u4 m16n8k128": (fr.b_fragment(128, 4), SM120_SP_16x8x128_B),
}


def _value_position(fragment, t, v):
    """CuTe value v of thread t is the v-th element of the thread's registers, low bits first."""
    return fragment.row[v // fragment.per_reg, t, v % fragment.per_reg], \
        fragment.col[v // fragment.per_reg, t, v % fragment.per_reg]


@pytest.mark.parametrize("case", sorted(A_CASES))
def test_compressed_a_matches_cute(case):
    fragment, layout, rows = A_CASES[case]
    table = tv_table(layout, rows)
    assert len(table) == fragment.row.size
    for (t, v), (m, k) in table.items():
        assert _value_position(fragment, t, v) == (m, k), (case, t, v)


@pytest.mark.parametrize("case", sorted(B_CASES))
def test_b_matches_cute(case):
    fragment, layout = B_CASES[case]
    table = tv_table(layout, 8)                       # CuTe B tiles are (N, K)
    assert len(table) == fragment.row.size
    for (t, v), (n, k) in table.items():
        assert _value_position(fragment, t, v) == (k, n), (case, t, v)


def test_c_f32_matches_cute():
    fragment = fr.c_fragment(32)
    for (t, v), (m, n) in tv_table(SM80_16x8_Row, 16).items():
        assert _value_position(fragment, t, v) == (m, n)


def test_c_f16_spec_formula():
    # 9.7.14.5.x: f16 accumulators, c0,c1 in register 0 (row groupID), c2,c3 in register 1
    # (row groupID + 8); col = threadID_in_group*2 + (i & 1).
    fragment = fr.c_fragment(16)
    for lane, i in itertools.product(range(32), range(4)):
        g, t = lane >> 2, lane % 4
        assert (fragment.row[i // 2, lane, i % 2], fragment.col[i // 2, lane, i % 2]) == \
            (g + 8 * (i >= 2), 2 * t + (i & 1))


def test_b_f16_k32_spec_formula():
    # Figure 121 is missing; the dense pattern of B extended to 4 registers: row
    # threadID_in_group*2 + (i & 1) + 8*(i >> 1), col groupID (CUTLASS has no dense f16 k32 atom).
    fragment = fr.b_fragment(32, 16)
    for lane, i in itertools.product(range(32), range(8)):
        assert (fragment.row[i // 2, lane, i % 2], fragment.col[i // 2, lane, i % 2]) == \
            (2 * (lane % 4) + (i & 1) + 8 * (i >> 1), lane >> 2)


def test_pack_unpack_round_trip():
    rng = np.random.default_rng(1)
    for fragment in [fr.a_fragment(32, 16), fr.b_fragment(128, 4), fr.c_fragment(16)]:
        regs = rng.integers(0, 2**32, (fragment.nregs, 3, 32), dtype=np.uint64).astype(np.uint32)
        assert np.array_equal(fragment.pack(fragment.unpack(regs)), regs)


# ------------------------------------------------------------------------------- metadata
# include/cute/atom/mma_traits_sm90_gmma_sparse.hpp: ELayout_64x32 (f16/bf16 K=32),
# ELayout_64x16 (tf32 K=16), ELayout_64x64 (8-bit K=64). (T128, V) -> (M64, K), the 4th thread
# mode is the warp; the spec's wgmma sections (9.7.15.6.2) reuse the warp-level figures
# sparse-mma-metadata-16832-f16bf16 / -16816-tf32 / -16864-u8s8, so warp 0 is the mma.sp layout.
# A thread mode of stride 0 is the sparsity selector's choice of thread pair.
ELayout_64x32 = (((2, 2, 8, 4), (16, 2)), ((1024, 0, 1, 16), (64, 8)))
ELayout_64x16 = (((2, 2, 8, 4), (8, 2)), ((512, 0, 1, 16), (64, 8)))
ELayout_64x64 = (((2, 2, 8, 4), 32), ((8, 2048, 1, 16), 64))
# include/cute/atom/mma_traits_sm120_sparse.hpp: (T32, V) -> (M16, K)
SM120_SP_16x8x64_E = (((2, 2, 8), 32), ((8, 512, 1), 16))
SM120_SP_16x8x128_E = (((2, 2, 8), 64), ((8, 1024, 1), 16))

E_CASES = {
    # name: (K, pattern, element bits, CuTe layout, tile rows, selectors)
    "f16 m16n8k32": (32, "2:4", 16, ELayout_64x32, 64, (0, 1)),
    "tf32 m16n8k16": (16, "1:2", 32, ELayout_64x16, 64, (0, 1)),
    "u8 m16n8k64 (sm90)": (64, "2:4", 8, ELayout_64x64, 64, (0,)),
    "e4m3 m16n8k64 (sm120)": (64, "2:4", 8, SM120_SP_16x8x64_E, 16, (0,)),
    "e2m1 m16n8k128 (sm120)": (128, "4:8", 4, SM120_SP_16x8x128_E, 16, (0,)),
}


def _dense_span(k, pattern, unit):
    """Dense columns a metadata unit describes (9.7.14.6.1)."""
    if pattern == "1:2":
        return range(2 * unit, 2 * unit + 2)
    if pattern == "2:4":
        return range(4 * (unit // 2), 4 * (unit // 2) + 4)
    return range(8 * (unit // 2), 8 * (unit // 2) + 8)


@pytest.mark.parametrize("case", sorted(E_CASES))
def test_metadata_matches_cute(case):
    k, pattern, abits, layout, rows, selectors = E_CASES[case]
    meta = fr.metadata_layout(k, pattern, abits)
    table = tv_table(layout, rows)
    nvalues = max(v for _, v in table) + 1
    for selector in selectors:
        lanes = meta.lanes(selector)
        for (t, v), (m, kk) in table.items():
            if t >= 32:
                continue                                   # warps 1..3 of the warpgroup
            # CuTe's stride-0 mode: the pair chosen by the selector holds the value
            tid = t % 4
            if meta.threads < 4 and tid // meta.threads != selector:
                tid = (tid % meta.threads) + selector * meta.threads
            lane = 4 * (t // 4) + tid
            j = list(lanes[:, t // 4]).index(lane)
            field = (v * 32 // nvalues) // meta.field_bits     # fp4: two values per bit
            assert meta.row[j, t // 4, field] == m, (case, t, v)
            assert kk in _dense_span(k, pattern, meta.unit[j, t // 4, field]), (case, t, v)


def test_metadata_single_thread_shapes():
    # m16n8k16 f16 / m16n8k8 tf32: one thread per group (selector 0..3) holds rows g and g+8,
    # low half row g (CuTe ELayout_64x32 restricted to its first thread of a pair).
    for k, pattern, abits, fields_per_row in ((16, "2:4", 16, 8), (8, "1:2", 32, 4)):
        meta = fr.metadata_layout(k, pattern, abits)
        assert meta.threads == 1
        assert [list(meta.lanes(s)[0]) for s in range(4)] == [[4 * g + s for g in range(8)]
                                                              for s in range(4)]
        assert (meta.row[0, :, :fields_per_row] == np.arange(8)[:, None]).all()
        assert (meta.row[0, :, fields_per_row:] == np.arange(8)[:, None] + 8).all()


@pytest.mark.parametrize("k,pattern,abits,threads", [
    (16, "2:4", 16, 1), (32, "2:4", 16, 2), (8, "1:2", 32, 1), (16, "1:2", 32, 2),
    (32, "2:4", 8, 2), (64, "2:4", 8, 4), (64, "4:8", 4, 2), (128, "4:8", 4, 4)])
def test_metadata_threads_per_group(k, pattern, abits, threads):
    # 9.7.14.6.1: one thread (selector 0..3), a thread pair (0..1), or all four (0)
    meta = fr.metadata_layout(k, pattern, abits)
    assert meta.threads == threads
    # every (row, unit) of the 16-row A is covered exactly once
    cover = np.zeros((16, meta.units), dtype=int)
    np.add.at(cover, (meta.row, meta.unit), 1)
    assert (cover == 1).all()
