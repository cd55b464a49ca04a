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
    run = launch((DATA / "matmul_bf16.ptx").read_text(), "matmul_kernel", (M // 128, N // 128), 128,
                 args=[a.view(np.uint16), b.view(np.uint16), c, M, N, K, K, 1, N, 1, N, 1,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)], dynamic_shared=160 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    want = _stepped(a.view(np.uint16), b.view(np.uint16), 16, kind="f16", atype="bf16",
                    btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(c, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 256, 320)])
def test_triton_matmul_bf16_cpasync(M, N, K):
    # the same kernel as Triton's JIT specialises it for contiguous, 16-divisible operands
    # (unit strides constant): its loads become cp.async with 3 stages (commit_group /
    # wait_group), several CTAs per wave: matmul_kernel(a, b, c, M, N, K, stride_am, stride_bk,
    # stride_cm, scratch, profile_scratch)
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), np.float32)
    run = launch((DATA / "matmul_bf16_cpasync.ptx").read_text(), "matmul_kernel",
                 (M // 128, N // 128), 128, args=[a.view(np.uint16), b.view(np.uint16), c, M, N, K,
                                                  K, N, N, np.zeros(64, np.uint8),
                                                  np.zeros(64, np.uint8)],
                 dynamic_shared=160 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    want = _stepped(a.view(np.uint16), b.view(np.uint16), 16, kind="f16", atype="bf16",
                    btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)


@pytest.mark.parametrize("name,threads,M,N,K", [("tma_matmul", 128, 256, 128, 320),
                                                 ("tma_matmul_ws", 256, 128, 256, 256)])
def test_triton_tma_matmul(name, threads, M, N, K):
    # tma_matmul_kernel(a_desc, M, K, K, 1, b_desc, ..., c_desc, ..., K, scratch, scratch):
    # Triton 3.9 passes each tensor descriptor as a 128-byte CUtensorMap followed by its shape
    # and strides. Boxes: A, B 128 rows x 64 bf16 (128 bytes, SWIZZLE_128B), C stored in two
    # 64-column halves. The _ws form is warp-specialised (256 threads, setmaxnreg, brx.idx).
    from ptxsim.machine.tensormap import TensorMap
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), ml_dtypes.bfloat16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    tm = [TensorMap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16")
          for x in (au, bu, cu)]
    run = launch((DATA / f"{name}.ptx").read_text(), "tma_matmul_kernel", (M // 128, N // 128),
                 threads, args=[tm[0], M, K, K, 1, tm[1], N, K, K, 1, tm[2], M, N, N, 1, K,
                                np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=200 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    d = _stepped(au, bu.T, 16, kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
    # epilogue: cvt.rn.bf16x2.f32 of the f32 accumulator == ml_dtypes' round-to-nearest-even
    want = d.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(cu, want)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.allclose(c.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_triton_matmul_fp8():
    # same kernel source as matmul_bf16 with e4m3 inputs and BLOCK_K = 128: tcgen05.mma
    # kind::f8f6f4 of K = 32
    M, N, K = 128, 128, 256
    rng = np.random.default_rng(8)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    c = np.zeros((M, N), np.float32)
    run = launch((DATA / "matmul_fp8.ptx").read_text(), "matmul_kernel", 1, 128,
                 args=[a, b, c, M, N, K, K, 1, N, 1, N, 1, np.zeros(64, np.uint8),
                       np.zeros(64, np.uint8)], dynamic_shared=200 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    want = _stepped(a, b, 32, kind="f8f6f4", atype="e4m3", btype="e4m3", ctype="f32",
                    dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)


def _pack_e2m1(x, axis):
    """Two e2m1 codes per byte along `axis`, element 2i in the low nibble (Triton's packing)."""
    x = np.moveaxis(x, axis, -1)
    p = (x[..., 0::2] | (x[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(np.moveaxis(p, -1, axis))


@pytest.mark.parametrize("fa,fb", [("e4m3", "e4m3"), ("e2m1", "e2m1"), ("e4m3", "e2m1")])
def test_triton_dot_scaled(fa, fb):
    # tl.dot_scaled 128x128x128 with ue8m0 scales per 32 K elements: tcgen05.cp of the scale
    # factors, tcgen05.mma kind::mxf8f6f4 (K = 32) or kind::mxf4 (K = 64) .block_scale.block32
    M = N = K = 128
    rng = np.random.default_rng(len(fa + fb))

    def logical(fmt, shape):
        if fmt == "e4m3":
            return rng.standard_normal(shape).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        return rng.integers(0, 16, shape).astype(np.uint8)          # every e2m1 code
    A, B = logical(fa, (M, K)), logical(fb, (K, N))
    a = _pack_e2m1(A, 1) if fa == "e2m1" else A
    b = _pack_e2m1(B, 0) if fb == "e2m1" else B
    sa = rng.integers(120, 134, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (N, K // 32)).astype(np.uint8)
    c = np.zeros((M, N), np.float32)
    run = launch((DATA / f"dot_scaled_{fa}_{fb}.ptx").read_text(), "dot_scaled_kernel", 1, 128,
                 args=[a, sa, b, sb, c, np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=200 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    kind, step = ("mxf4", 64) if fa == fb == "e2m1" else ("mxf8f6f4", 32)
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, step):
        d = mma(A[:, k:k + step], B[k:k + step], d, arch="sm_100", kind=kind, atype=fa,
                btype=fb, ctype="f32", dtype="f32", scale_a=sa[:, k // 32:(k + step) // 32],
                scale_b=sb.T[k // 32:(k + step) // 32], scale_type="ue8m0", block=32)
    assert np.array_equal(c.view(np.uint32), d)
    # and close to float64 numpy of the decoded, scaled operands
    from ptxsim.types import decode
    af = decode(A, fa).astype(np.float64) * np.repeat(2.0 ** (sa.astype(np.int64) - 127), 32, 1)
    bf = decode(B, fb).astype(np.float64) * np.repeat(2.0 ** (sb.T.astype(np.int64) - 127), 32,
                                                      0)
    ref = af @ bf
    assert np.allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_triton_num_ctas_2_cluster_matmul():
    # tests/machine/data/exec/gen_triton_cluster.py: the TMA matmul with num_ctas=2 (BLOCK_M 256
    # split over a 2-CTA cluster, .reqnctapercluster 2, %cluster_ctarank picks the A rows)
    from ptxsim.machine.tensormap import TensorMap
    ptx = (Path(__file__).parent / "data" / "exec" / "triton_matmul_2cta.ptx").read_text()
    M, N, K = 512, 256, 192
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), ml_dtypes.bfloat16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    tm = [TensorMap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16")
          for x in (au, bu, cu)]
    run = launch(ptx, "tma_matmul_kernel", (2 * M // 256, N // 128), 128,
                 args=[tm[0], M, K, K, 1, tm[1], N, K, K, 1, tm[2], M, N, N, 1, K,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)], dynamic_shared=98352)
    assert not run.findings, run.findings     # the sanitizer: clean
    d = _stepped(au, bu.T, 16, kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(cu, d.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
