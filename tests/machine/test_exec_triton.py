"""Real Triton 3.9 sm_100a output (tests/data/ptx/triton, scripts/gen_triton_ptx.py) run by the
executor, against ptxsim.numerics stepped over the same logical matrices (bit-exact) and a
float64 numpy matmul (close)."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.numerics import mma

DATA = Path(__file__).parents[1] / "data" / "ptx" / "triton"


def _stepped(a_bits, b_bits, k_step, **kw):
    """D = A·B accumulated K-step by K-step as the tcgen05.mma sequence does (C starts +0)."""
    d = np.zeros((a_bits.shape[0], b_bits.shape[1]), np.uint32)
    for k in range(0, a_bits.shape[1], k_step):
        d = mma(a_bits[:, k:k + k_step], b_bits[k:k + k_step], d, arch="sm_100", **kw)
    return d


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 128, 192)])
def test_triton_matmul_bf16(M, N, K):
    # matmul_kernel(a, b, c, M, N, K, strides..., scratch, profile_scratch); BLOCK 128x128x64,
    # 4 warps, one CTA per 128x128 tile; each K block is 4 tcgen05.mma kind::f16 of K=16.
    rng = np.random.default_rng(M + K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), np.float32)
    launch((DATA / "matmul_bf16.ptx").read_text(), "matmul_kernel", (M // 128, N // 128), 128,
           args=[a.view(np.uint16), b.view(np.uint16), c, M, N, K, K, 1, N, 1, N, 1,
                 np.zeros(64, np.uint8), np.zeros(64, np.uint8)], dynamic_shared=160 * 1024)
    want = _stepped(a.view(np.uint16), b.view(np.uint16), 16, kind="f16", atype="bf16",
                    btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(c, ref, rtol=1e-5, atol=1e-4)
