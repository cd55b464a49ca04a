"""A in Tensor Memory for the .ws data-path layout E (M = 64, "2x2").

Source: DeepSeek FlashMLA (github deepseek-ai/FlashMLA, commit 9241ae3e, read, not run here, not
measured): csrc/kerutils/include/kerutils/device/sm100/gemm.cuh defines
SM100_MMA_F16BF16_WS_TS_NOELECT ("tcgen05.mma.ws.cta_group::1.kind::f16 [d], [a], b, idesc") whose
A fragment "actually should be 'duplicated'"; csrc/sm100/prefill/sparse/fwd/head64 uses it with
M = B_H = 64, N = 128 as an "implicit dual gemm": Q (64 x 128 bf16 per tile) is viewed as 128 rows
x 64 columns and copied with tcgen05.cp .128x256b, so lanes 0..63 hold Q[:, 0:64] and lanes
64..127 hold Q[:, 64:128]; B (K) is viewed as 2*B_TOPK rows the same way, and the two halves of
D are summed afterwards. That is only right if lane half h, which holds D columns
[h*N/2, (h+1)*N/2) (layout E, CuTe tmem_frg_ws), multiplies with the A copy in its own lanes.

The expected D below is numerics.mma on hand-split operands; the A words are packed by hand
(two bf16 per 32-bit column, element 2j in bits [15:0], 9.7.16.10.4.2) and D is read from the
raw cells at lane m + 64*(n / 64), column n % 64.
"""
import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, ref_steps, stage

from ptxsim.errors import LayoutError
from ptxsim.isa.datapath import layout_by_id
from ptxsim.isa.tcgen05_mma import tcgen05_mma
from ptxsim.isa.tmem import tmem_address

M, N, K = 64, 128, 16
D_COL, A_COL = 0, 300


def _words(a):
    a = a.astype(np.uint32)
    return a[:, 0::2] | (a[:, 1::2] << 16)


def _run(a_lo, a_hi, B, dtype="f32"):
    cta, base = new_cta()
    cta.tmem.cells[0:64, A_COL:A_COL + K // 2] = _words(a_lo)
    cta.tmem.cells[64:128, A_COL:A_COL + K // 2] = _words(a_hi)
    db = stage(cta.smem, B, "bf16", "f16", 0).encode()
    idesc = InstrDescriptor.make("f16", m=M, n=N, atype="bf16", btype="bf16",
                                 dtype=dtype).encode()
    tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base + D_COL, a_tmem=tmem_address(0, A_COL),
                b_desc=db, idesc=idesc, enable_input_d=False)
    cells = cta.tmem.cells
    m, n = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    return cells[m + 64 * (n // 64), D_COL + n % 64]


def test_layout_e_a_duplicated_equals_dense_numerics():
    rng = np.random.default_rng(21)
    A = gen_bits(rng, "bf16", (M, K))
    B = gen_bits(rng, "bf16", (N, K))
    got = _run(A, A, B)
    want = ref_steps([A], [B.T], np.zeros((M, N), np.uint32), kind="f16", atype="bf16",
                     btype="bf16", ctype="f32", dtype="f32")
    np.testing.assert_array_equal(got, want)


def test_layout_e_dual_gemm_each_half_reads_its_own_copy():
    """FlashMLA's dual GEMM: D[:, :64] = A_lo B[:64]^T, D[:, 64:] = A_hi B[64:]^T."""
    rng = np.random.default_rng(22)
    a_lo, a_hi = gen_bits(rng, "bf16", (M, K)), gen_bits(rng, "bf16", (M, K))
    B = gen_bits(rng, "bf16", (N, K))
    got = _run(a_lo, a_hi, B)
    kw = dict(kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
    zero = np.zeros((M, N // 2), np.uint32)
    want = np.concatenate([ref_steps([a_lo], [B[:64].T], zero, **kw),
                           ref_steps([a_hi], [B[64:].T], zero, **kw)], axis=1)
    np.testing.assert_array_equal(got, want)
    # and the sum of the two halves is Q.K over 32 columns, as the kernel uses it
    assert not np.array_equal(got[:, :64], got[:, 64:])


def test_a_position_layout_e_lanes():
    cta, lanes, col = layout_by_id("E").a_position(np.array([0, 5, 63]), 7)
    assert lanes.tolist() == [[0, 64], [5, 69], [63, 127]] and col.tolist() == [7, 7, 7]


def test_layout_g_a_still_has_no_source():
    cta, base = new_cta()
    rng = np.random.default_rng(3)
    db = stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 0).encode()
    idesc = InstrDescriptor.make("f16", m=32, n=64, atype="bf16", btype="bf16").encode()
    with pytest.raises(LayoutError, match="M = 32"):
        tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_tmem=tmem_address(0, 300),
                    b_desc=db, idesc=idesc)
