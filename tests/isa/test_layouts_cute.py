"""Tensor Memory placements of tcgen05.mma operands against NVIDIA's CUTLASS/CuTe, transcribed
here as data and evaluated by this test (not by ptxsim).

Sources (CUTLASS commit 7107b05535f8977f5ecb9d01ee203205b1fd9bc4, read, not run, not measured):
- include/cute/atom/mma_traits_sm100_frag.hpp: tmem_e_frg (metadata, M_MMA = 128 per CTA),
  tmem_e_frg_ws (metadata of .ws, M_MMA = 128 / 64 / 32), tmem_sf_frg (scale factors, 4x1 and
  2x2). CuTe's "virtual" address v: lane = v % 128, storage element = v // 128.
- include/cute/atom/mma_traits_sm100.hpp: the 2x1SM *_SS_SPARSE traits (M = 256 -> 128 rows per
  CTA) use tmem_e_frg; the 2x1SM block-scaled traits use ScaleFactorDuplicated2by2 for M = 128.
- include/cutlass/gemm/collective/sm103_blockscaled_mma_warpspecialized.hpp: K = 96 MMA i starts
  at scale-factor K index 3i (block32) / 6i (block16) of a tmem_sf_frg tensor with one scale
  factor per atom; mma_sm100_desc.hpp: the ID is the address byte (bits [30, 32)).
- examples/python/CuTeDSL/experimental/primitives/tcgen05/2cta_mma_blockscale_m128.py: layout B
  SFB (N = 256) copied with tcgen05.cp .64x128b.warpx2::01_23 from two adjacent 512-byte atoms.
"""
import warnings

import numpy as np
import pytest

from test_datapath import cute_eval

from ptxsim.errors import LayoutAssumptionWarning, LayoutError
from ptxsim.isa import sparsity
from ptxsim.isa.datapath import datapath_layout, layout_by_id
from ptxsim.isa.descriptors import InstrDescriptor
from ptxsim.isa.tcgen05_mma import (Tcgen05Mma, check_instruction, scale_factor_cells,
                                    write_scale_factors)
from ptxsim.isa.tmem import TensorMemory, tmem_address
from ptxsim.isa.tmem_cp import tcgen05_cp


def _size(shape):
    return int(np.prod(shape if isinstance(shape, int) else
                       [_size(s) for s in shape]))


# --------------------------------------------------------------------------------------------
# sparsity metadata
# --------------------------------------------------------------------------------------------
# (kind, M) -> (M mode, K mode, copy mode, bits per storage unit, logical K of one MMA).
# The copy mode is the extra size-2 / size-4 mode of tmem_e_frg_ws (stride 64 / 32 lanes); for the
# 8-bit atoms CuTe writes it inside the K mode, (64, 2):(128, 64), which is the same address set.
E_FRG = {
    ("tf32", 128): (((8, 2, 8), (1, 1024, 16)), ((8, 2), (128, 8)), (1, 0), 2, 16),
    ("f16", 128): (((8, 2, 8), (1, 2048, 16)), ((16, 2), (128, 8)), (1, 0), 1, 32),
    ("i8", 128): ((128, 1), (64, 128), (1, 0), 1, 64),
    ("mxf4", 128): ((128, 1), (128, 128), (1, 0), 0.5, 128),     # sparse_elem<16, uint8_t>
    ("tf32", 64): (((8, 2, 4), (1, 1024, 16)), ((8, 2), (128, 8)), (2, 64), 2, 16),
    ("tf32", 32): (((8, 2, 2), (1, 1024, 16)), ((8, 2), (128, 8)), (4, 32), 2, 16),
    ("f16", 64): (((8, 2, 4), (1, 2048, 16)), ((16, 2), (128, 8)), (2, 64), 1, 32),
    ("f16", 32): (((8, 2, 2), (1, 2048, 16)), ((16, 2), (128, 8)), (4, 32), 1, 32),
    ("i8", 64): ((64, 1), (64, 128), (2, 64), 1, 64),
    ("i8", 32): ((32, 1), (64, 128), (4, 32), 1, 64),
}


def cute_metadata(kind, M):
    """{(copy, m, stream bit) -> (lane, bit offset from the metadata address)} from the atom."""
    (ms, md), (ks, kd), (nc, cd), unit_bits, K = E_FRG[(kind, M)]
    out = {}
    for c in range(nc):
        for m in range(M):
            for k in range(_size(ks)):
                v = cute_eval(ms, md, m) + cute_eval(ks, kd, k) + c * cd
                lane, unit = v % 128, v // 128
                if unit_bits >= 1:                     # k is one element of unit_bits bits
                    for b in range(unit_bits):
                        out[(c, m, unit_bits * k + b)] = (lane, unit_bits * unit + b)
                elif k % 2 == 0:                       # fp4: two elements per metadata bit
                    out[(c, m, k // 2)] = (lane, unit // 2)
    return out, K


@pytest.mark.parametrize("kind,M", list(E_FRG))
def test_metadata_cells_match_cute(kind, M):
    """M = 128 per CTA (layouts D and A, CuTe tmem_e_frg -- the 2x1SM sparse traits hand it 128
    rows per CTA for M = 256) and the .ws copies of layouts E / G (tmem_e_frg_ws)."""
    want, K = cute_metadata(kind, M)
    lane, col, bit = sparsity.metadata_cells(kind, K, M=M, ws=M < 128)
    got = {(c, m, b): (int(lane[c, m, b]), 32 * int(col[c, m, b]) + int(bit[c, m, b]))
           for c in range(lane.shape[0]) for m in range(M) for b in range(lane.shape[2])}
    assert got == want


def test_m256_metadata_is_128_rows_per_cta():
    """Layout A (M = 256, .cta_group::2): CuTe SM100_MMA_*_2x1SM_SS_SPARSE use tmem_e_frg with
    the per-CTA M_MMA = 128, so each CTA holds the M = 128 placement of its own 128 rows."""
    assert datapath_layout(256, 2, sparse=True).m_per_cta == 128
    for kind in ("f16", "tf32", "i8", "f8f6f4", "mxf8f6f4", "mxf4nvf4"):
        K = {"tf32": 16, "f16": 32}.get(kind, 128 if kind.startswith("mxf4") else 64)
        lane, col, bit = sparsity.metadata_cells(kind, K, M=128)
        assert lane.shape[0] == 1 and lane.max() == 127


@pytest.mark.parametrize("kind", ["f16", "tf32", "i8"])
def test_half_datapath_metadata_still_has_no_source(kind):
    """Layouts F (M = 64) and C (M = 128 pair = 64 rows per CTA) both reach 64 rows without
    .ws: CuTe's tmem_e_frg static_asserts M_MMA == 128 (the 1SM M=64 and 2x1SM M=128 sparse
    traits cannot instantiate it), and Figures 262/264/266 are missing: LayoutError."""
    with pytest.raises(LayoutError, match="not established"):
        sparsity.metadata_cells(kind, 32, M=64, ws=False)


def test_ws_m32_a_in_tensor_memory_still_has_no_source():
    """No CuTe MMA atom reads A from Tensor Memory in .ws mode (no *_WS_TS in mma_sm100_umma);
    FlashMLA's WS_TS covers M = 64 only (layout E, test_layouts_ws.py)."""
    with pytest.raises(LayoutError, match="not established"):
        layout_by_id("G").a_position(0, 0)


# --------------------------------------------------------------------------------------------
# scale factors
# --------------------------------------------------------------------------------------------
def cute_sf_4x1(MN, nsf):
    """tmem_sf_frg 4x1 atom: (((32, MN/32), 4), (VS, NSF)) : (((1, 512), 32), (0, 128)).
    Returns {(i, s, r): (lane, column, byte)}; element e = v // 128 of 8-bit scale factors is
    column e // 4, byte e % 4."""
    out = {}
    for i in range(MN):
        for r in range(4):
            for s in range(nsf):
                v = cute_eval((32, MN // 32), (1, 512), i) + 32 * r + 128 * s
                out[(i, s, r)] = (v % 128, v // 128 // 4, v // 128 % 4)
    return out


def cute_sf_2x2(MN, nsf):
    """tmem_sf_frg 2x2 atom (SFB of layout B): (((32, MN/2/32), 2, 2), (VS, NSF)) :
    (((1, 512), 64, 32), (0, 128)); the last size-2 mode is the copy."""
    out = {}
    for i in range(MN):
        for r in range(2):
            for s in range(nsf):
                v = cute_eval(((32, MN // 64), 2), ((1, 512), 64), i) + 32 * r + 128 * s
                out[(i, s, r)] = (v % 128, v // 128 // 4, v // 128 % 4)
    return out


def ptxsim_sf(which, layout, count, nsf, sf_id=0, N=None, k96=False):
    lanes, cols, byte = scale_factor_cells(which, layout, count, nsf, sf_id, N, k96)
    return {(i, s, r): (int(lanes[i, s, r]), int(cols[i, s]), int(byte[i, s]))
            for i in range(count) for s in range(nsf) for r in range(lanes.shape[2])}


@pytest.mark.parametrize("nsf", [1, 2, 4])
def test_sf_4x1_matches_cute(nsf):
    D, A, B = datapath_layout(128), datapath_layout(256, 2), datapath_layout(128, 2)
    assert ptxsim_sf("A", D, 128, nsf) == cute_sf_4x1(128, nsf)
    assert ptxsim_sf("B", D, 256, nsf, N=256) == cute_sf_4x1(256, nsf)
    assert ptxsim_sf("A", A, 128, nsf) == cute_sf_4x1(128, nsf)
    assert ptxsim_sf("B", A, 128, nsf, N=128) == cute_sf_4x1(128, nsf)
    # SFA of layout B: 64 rows per CTA, still the 4x1 atom (CuTe passes Is_SFA -> 4x1)
    assert ptxsim_sf("A", B, 64, nsf) == cute_sf_4x1(64, nsf)


@pytest.mark.parametrize("N", [128, 256])
@pytest.mark.parametrize("nsf", [1, 2, 4])
def test_sfb_2x2_matches_cute(N, nsf):
    B = datapath_layout(128, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LayoutAssumptionWarning)
        assert ptxsim_sf("B", B, N, nsf, N=N) == cute_sf_2x2(N, nsf)


def test_sfb_2x2_n256_from_the_cute_dsl_example():
    """2cta_mma_blockscale_m128.py: one .64x128b.warpx2::01_23 copy reads two adjacent 128-N
    atoms (1024 bytes; row = 16 bytes, atom t = rows 32t..32t+31, column n of atom t at byte
    16*(n%32) + 4*((n%128)/32) + s) and writes a 128-lane x 4-column image the MMA reads."""
    rng = np.random.default_rng(1)
    sfb = rng.integers(0, 256, (256, 4), dtype=np.uint8)
    src = np.zeros(1024, np.uint8)
    for n in range(256):
        for s in range(4):
            src[512 * (n // 128) + 16 * (n % 32) + 4 * ((n % 128) // 32) + s] = sfb[n, s]
    tm = TensorMemory()
    tm.alloc(32)
    tcgen05_cp(tm, "64x128b", tmem_address(0, 4), src.reshape(64, 16), multicast="warpx2::01_23")
    lanes, cols, byte = scale_factor_cells("B", datapath_layout(128, 2), 256, 4, 0, 256)
    for r in range(2):
        got = (tm.cells[lanes[..., r], 4 + cols] >> (8 * byte).astype(np.uint32)) & 0xFF
        np.testing.assert_array_equal(got, sfb)


@pytest.mark.parametrize("N", [16, 64, 192])
def test_sfb_2x2_other_n_warns(N):
    B = datapath_layout(128, 2)
    with pytest.warns(LayoutAssumptionWarning, match=f"N = {N}"):
        scale_factor_cells("B", B, N, 1, 0, N)
    cells = np.zeros((128, 512), np.uint32)
    with pytest.warns(LayoutAssumptionWarning):
        write_scale_factors(cells, tmem_address(0, 0), np.ones((N, 1), np.uint8), "B", B, 0, N)


# ---- K = 96 (sm_103a) ----------------------------------------------------------------------
def cute_sf_k96(MN, vs, mma):
    """CUTLASS sm103 collective: tCtSFA_mma = tmem_sf_frg tensor of shape
    ((32, MN/32), (VS, 1)) tiled by (MN/128, K_SF); MMA i uses the tensor at K_SF index
    j0 = sf_stride * i, sf_stride = 3 (VS 32) / 6 (VS 16), and reads nsf = 96 / VS indices from
    there. tiled_product places K_SF index j at the complement of the atom's image {lane + 128*4c,
    c < MN/32}: (4, J/4) : (128, 128 * 4 * (MN/32)), i.e. v(j) = 128*(j%4) + 512*(MN/32)*(j//4).
    Returns the MMA's (sf_id, base column) and {(i, s, r): (lane, column - base, byte)}."""
    stride, nsf = {32: (3, 3), 16: (6, 6)}[vs]
    j0 = stride * mma
    base_v = 128 * (j0 % 4) + 512 * (MN // 32) * (j0 // 4)
    sf_id, base_col = base_v // 128 % 4, base_v // 128 // 4
    out = {}
    for i in range(MN):
        for r in range(4):
            for s in range(nsf):
                j = j0 + s
                v = (cute_eval((32, MN // 32), (1, 512), i) + 32 * r
                     + 128 * (j % 4) + 512 * (MN // 32) * (j // 4))
                out[(i, s, r)] = (v % 128, v // 128 // 4 - base_col, v // 128 % 4)
    return sf_id, out


@pytest.mark.parametrize("vs", [32, 16])
@pytest.mark.parametrize("mma", range(8))
def test_k96_scale_factors_match_cutlass_sm103(vs, mma):
    nsf = 96 // vs
    for lid, M, cta in (("D", 128, 1), ("A", 256, 2)):
        layout = datapath_layout(M, cta)
        sf_id, want = cute_sf_k96(128, vs, mma)                      # SFA: 128 rows per CTA
        assert ptxsim_sf("A", layout, 128, nsf, sf_id, k96=True) == want
        for N in (64, 128, 192, 256):                                 # SFB: MN = N rounded to 128
            sf_id, want = cute_sf_k96(-(-N // 128) * 128, vs, mma)
            got = ptxsim_sf("B", layout, N, nsf, sf_id, N=N, k96=True)
            assert got == {k: v for k, v in want.items() if k[0] < N}


def test_k96_ids_are_those_the_spec_allows():
    """9.7.16.10.7.2.4-5: block32 K=96 uses SFA_ID 0-3 (Figures 234-237), block16 K=96 only 0 and
    2 (Figures 238-239); CUTLASS's sequence of MMAs produces exactly these."""
    assert sorted({cute_sf_k96(128, 32, i)[0] for i in range(8)}) == [0, 1, 2, 3]
    assert sorted({cute_sf_k96(128, 16, i)[0] for i in range(8)}) == [0, 2]


def test_k96_sfb_group_depends_on_n_above_128():
    """The spec draws K=96 SFB separately for N <= 128 and N > 128 (Figures 243-258): the second
    group of 4 scale-factor bytes is 4 columns away for N <= 128 and 8 for N > 128."""
    D = datapath_layout(128)
    for N, group in ((128, 4), (144, 8), (256, 8), (16, 4)):
        _, cols, byte = scale_factor_cells("B", D, N, 3, 3, N, k96=True)   # ID 3: slots 3, 4, 5
        assert list(cols[0]) == [0, group, group] and list(byte[0]) == [3, 0, 1]


def test_k96_other_layouts_and_execution_are_named():
    with pytest.raises(LayoutError, match="K = 96"):
        scale_factor_cells("B", datapath_layout(128, 2), 128, 3, 0, 128, k96=True)
    with pytest.raises(LayoutError, match="K = 96"):
        scale_factor_cells("A", datapath_layout(128, 2), 64, 6, 0, 128, k96=True)
    mma = Tcgen05Mma("mxf4nvf4", cta_group=2, block_scale=True, scale_vec="block16")
    idesc = InstrDescriptor.make("mxf4nvf4", m=256, n=128, atype="e2m1", btype="e2m1",
                                 dtype="f32", scale_type="ue4m3", k96=True).encode()
    with pytest.raises(LayoutError, match="K = 96"):
        check_instruction(mma, idesc, target="sm_103a")
