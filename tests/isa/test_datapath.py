"""Data-path layouts A-G (9.7.16.10.5).

Independent sources: the 9.7.16.10.5 selection table (transcribed below as the test's own
table), CuTe's TMEM fragment atoms (include/cute/atom/mma_traits_sm100_frag.hpp at commit
7107b05535f8977f5ecb9d01ee203205b1fd9bc4, in CuTe's "virtual" address v = lane + 128 * column),
evaluated here, and FACTS.md section 4 formulas.
"""
import numpy as np
import pytest

from ptxsim.errors import LayoutError
from ptxsim.isa.datapath import (datapath_layout, layout_by_id, metadata_position,
                                 scale_factor_position)
from ptxsim.isa.tmem import TensorMemory
from ptxsim.isa.tmem_cp import tcgen05_cp
from ptxsim.isa.tmem_ldst import tcgen05_ld


def cute_eval(shape, stride, coord):
    if isinstance(shape, int):
        return coord * stride
    off = 0
    for s, d in zip(shape, stride):
        size = int(np.prod(_flat(s)))
        off += cute_eval(s, d, coord % size)
        coord //= size
    return off


def _flat(s):
    return [s] if isinstance(s, int) else [x for y in s for x in _flat(y)]


def cute_d_atom(layout_id, N):
    """(M-mode shape/stride, N-mode shape/stride) of CuTe's D atom per CTA."""
    return {
        "A": ((128, 1), (N, 128)),                        # tmem_frg 2SM M_MMA=128
        "B": ((64, 1), ((N // 2, 2), (128, 64))),         # tmem_frg 2SM M_MMA=64 "2x2"
        "D": ((128, 1), (N, 128)),                        # tmem_frg 1SM M_MMA=128
        "E": ((64, 1), ((N // 2, 2), (128, 64))),         # tmem_frg_ws M_MMA=64 "2x2"
        "F": (((16, 4), (1, 32)), (N, 128)),              # tmem_frg 1SM M_MMA=64
        "G": ((32, 1), ((N // 4, 4), (128, 32))),         # tmem_frg_ws M_MMA=32 "1x4"
    }[layout_id]


# 9.7.16.10.5 table: (M, cta_group, sparse, ws) -> layout id
SPEC_TABLE = [
    ((32, 1, False, True), "G"), ((32, 1, True, True), "G"),
    ((64, 1, False, True), "E"), ((64, 1, True, True), "E"),
    ((64, 1, False, False), "F"), ((64, 1, True, False), "F"),
    ((128, 1, False, False), "D"), ((128, 1, True, True), "D"),
    ((128, 2, False, False), "B"), ((128, 2, True, False), "C"),
    ((256, 2, False, False), "A"), ((256, 2, True, False), "A"),
]


@pytest.mark.parametrize("key,lid", SPEC_TABLE)
def test_selection_table(key, lid):
    M, g, sp, ws = key
    assert datapath_layout(M, g, sp, ws).id == lid


@pytest.mark.parametrize("key", [(32, 1, False, False), (256, 1, False, False),
                                 (64, 2, False, False), (16, 1, False, False)])
def test_no_layout(key):
    with pytest.raises(LayoutError):
        datapath_layout(*key)


def test_lane_alignments_from_table():
    assert layout_by_id("F").lane_alignments == (0, 16)
    assert layout_by_id("C").lane_alignments == (0, 16)
    assert layout_by_id("D").lane_alignments == (0,)
    with pytest.raises(LayoutError, match="alignment"):
        layout_by_id("D").d_position(0, 0, 64, lane_offset=16)


@pytest.mark.parametrize("lid", ["A", "B", "D", "E", "F", "G"])
@pytest.mark.parametrize("N", [64, 128, 256])
def test_d_placement_matches_cute_atoms(lid, N):
    L = layout_by_id(lid)
    (ms, md), (ns, nd) = cute_d_atom(lid, N)
    cta, lane, col, warp = L.d_placement(N)
    per_cta = L.m_per_cta
    for m in range(0, L.M, 3):
        for n in range(0, N, 5):
            v = cute_eval(ms, md, m % per_cta) + cute_eval(ns, nd, n)
            assert (lane[m, n], col[m, n]) == (v % 128, v // 128), (m, n)
            assert cta[m, n] == m // per_cta
            assert warp[m, n] == v % 128 // 32          # 9.7.16.8.1 access table
    # distinct cells per CTA
    for c in range(L.cta_group):
        sel = cta == c
        cells = lane[sel] * 512 + col[sel]
        assert np.unique(cells).size == cells.size


def test_facts_formulas():
    # FACTS section 4
    F = layout_by_id("F")
    m = np.arange(64)
    _, lane, _ = F.d_position(m, 0, 64)
    np.testing.assert_array_equal(lane, m % 16 + 32 * (m // 16))
    _, lane16, _ = F.d_position(m, 0, 64, lane_offset=16)
    np.testing.assert_array_equal(lane16, lane + 16)
    B = layout_by_id("B")
    cta, lane, col = B.d_position(70, 200, 256)      # CTA 1, lane 6 + 64, column 72
    assert (int(cta), int(lane), int(col)) == (1, 70, 72)
    C = layout_by_id("C")
    cta, lane, col = C.d_position(127, 9, 64)
    assert (int(cta), int(lane), int(col)) == (1, 15 + 96, 9)


def test_a_in_tmem():
    B = layout_by_id("B")
    # CuTe TmemAllocMode::Duplicated: SM1 subpartitions 0 and 2 hold A[64:96]
    cta, lanes, col = B.a_position(70, 3)
    assert int(cta) == 1 and list(lanes) == [6, 70] and int(col) == 3
    cta, lanes, _ = layout_by_id("D").a_position(100, 0)
    assert list(lanes) == [100]
    # layout E duplicates A like B (FlashMLA WS_TS, see test_layouts_ws.py); G has no source
    cta, lanes, _ = layout_by_id("E").a_position(9, 0)
    assert list(lanes) == [9, 73]
    with pytest.raises(LayoutError, match="not established"):
        layout_by_id("G").a_position(0, 0)


def test_metadata_matches_cute_e_frg():
    # CuTe tmem_e_frg: f16 atom ((8,2,8),(16,2)):((1,2048,16),(128,8)) in bit units,
    # tf32 atom ((8,2,8),(8,2)):((1,1024,16),(128,8)) in 2-bit units; v = lane + 128 * unit
    for kind, (ks, kd), unit_bits, K in (("f16", ((16, 2), (128, 8)), 1, 32),
                                         ("tf32", ((8, 2), (128, 8)), 2, 16)):
        mstride = (1, 2048, 16) if kind == "f16" else (1, 1024, 16)
        for m in range(128):
            for k in range(K):
                v = cute_eval((8, 2, 8), mstride, m) + cute_eval(ks, kd, k)
                lane, col, bit = metadata_position(m, k, kind)
                assert (lane, col * 32 + bit) == (v % 128, unit_bits * (v // 128))
    lane, col, bit = metadata_position(5, 40, "i8")
    assert (lane, col, bit) == (5, 1, 8)
    lane, col, bit = metadata_position(5, 70, "mxf4")
    assert (lane, col, bit) == (5, 1, 3)
    with pytest.raises(LayoutError):
        metadata_position(0, 0, "f16", M=64)


def test_scale_factors_copied_with_warpx4_land_where_datapath_says():
    # FACTS section 4: smem SF atom byte 16*(m%32) + 4*(m/32) + s, copied with .32x128b.warpx4
    sf = np.random.default_rng(3).integers(0, 256, (128, 4), dtype=np.uint8)
    atom = np.zeros(512, np.uint8)
    for m in range(128):
        for s in range(4):
            atom[16 * (m % 32) + 4 * (m // 32) + s] = sf[m, s]
    tm = TensorMemory()
    tm.alloc(32)
    tcgen05_cp(tm, "32x128b", 8, atom.reshape(32, 16), multicast="warpx4")
    m, s = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
    lanes, col, byte = scale_factor_position(m, s)
    for r in range(4):
        got = tm.cells[lanes[..., r], 8 + col].view(np.uint8).reshape(128, 4, 4)
        np.testing.assert_array_equal(got[m, s, byte], sf)
    # warp r of a warpgroup reads them with tcgen05.ld .32x32b from its own quarter
    regs = tcgen05_ld(tm, "32x32b", 4, np.repeat(32 * np.arange(4) << 16 | 8, 32),
                      warp_ids=[0, 1, 2, 3])
    assert regs[96 + 5, 2].tobytes() == bytes(sf[64 + 5])
