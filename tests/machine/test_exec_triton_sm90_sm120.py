"""Real Triton 3.9 output for sm_90a (wgmma) and sm_120a (mma.sync, ldmatrix / stmatrix, block-
scaled mma) run by the executor: the kernels of scripts/gen_triton_ptx.py (--arch 90 / 120; the
PTX is stored xz-compressed in tests/data/ptx/triton/sm90a, sm120a), against ptxsim.numerics
stepped over the same logical matrices in the order the kernel issues its MMAs (bit-exact), and
float64 numpy (close). The sm_90a e4m3 x e2m1 dot_scaled kernel declares the same register
names with different types in sibling inline-asm blocks: it is bit-exact only because the
executor scopes `.reg` per { } block (machine/program.py). Triton 3.9 cannot warp-specialise the TMA matmul for sm_90a (its
NVGPUWarpSpecialization pass fails), so sm_90a has six kernels, sm_120a seven."""
from __future__ import annotations

import lzma
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.numerics import mma

DATA = Path(__file__).parents[1] / "data" / "ptx" / "triton"
ARCH = {"sm90a": ("sm_90a", "sm_90"), "sm120a": ("sm_120a", "sm_120")}


def ptx(target, name):
    return lzma.decompress((DATA / target / f"{name}.ptx.xz").read_bytes()).decode()


def stepped(a_bits, b_bits, k_step, arch, **kw):
    """D = A·B accumulated K-step by K-step, C starting at +0."""
    d = np.zeros((a_bits.shape[0], b_bits.shape[1]), np.uint32)
    for k in range(0, a_bits.shape[1], k_step):
        d = mma(a_bits[:, k:k + k_step], b_bits[k:k + k_step], d, arch=arch, **kw)
    return d


@pytest.mark.parametrize("target", ["sm90a", "sm120a"])
@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 128, 192)])
def test_matmul_bf16(target, M, N, K):
    tgt, arch = ARCH[target]
    rng = np.random.default_rng(M + K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), np.float32)
    run = launch(ptx(target, "matmul_bf16"), "matmul_kernel", (M // 128, N // 128), 128,
                 args=[a.view(np.uint16), b.view(np.uint16), c, M, N, K, K, 1, N, 1, N, 1,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)], dynamic_shared=160 * 1024,
                 target=tgt)
    assert not run.findings, run.findings     # the sanitizer: clean
    want = stepped(a.view(np.uint16), b.view(np.uint16), 16, arch, kind="f16", atype="bf16",
                   btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)
    assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", ["sm90a", "sm120a"])
def test_matmul_fp8(target):
    # BLOCK_K = 128: wgmma m64nNk32 e4m3 (sm_90a: the Hopper wgmma fp8 row, E8M13) or
    # mma.sync m16n8k32 e4m3 (sm_120a: native, its f8f6f4 row)
    tgt, arch = ARCH[target]
    M, N, K = 128, 128, 256
    rng = np.random.default_rng(8)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    c = np.zeros((M, N), np.float32)
    run = launch(ptx(target, "matmul_fp8"), "matmul_kernel", 1, 128,
                 args=[a, b, c, M, N, K, K, 1, N, 1, N, 1, np.zeros(64, np.uint8),
                       np.zeros(64, np.uint8)], dynamic_shared=200 * 1024, target=tgt)
    assert not run.findings, run.findings     # the sanitizer: clean
    kind = "f8f6f4" if target == "sm90a" else "fp8_sync"
    want = stepped(a, b, 32, arch, kind=kind, atype="e4m3", btype="e4m3", ctype="f32",
                   dtype="f32")
    assert np.array_equal(c.view(np.uint32), want)


@pytest.mark.parametrize("target,name", [("sm90a", "tma_matmul"), ("sm120a", "tma_matmul"),
                                         ("sm120a", "tma_matmul_ws")])
def test_tma_matmul(target, name):
    from ptxsim.machine.tensormap import TensorMap
    tgt, arch = ARCH[target]
    M, N, K = 256, 128, 320
    threads = 128 if name == "tma_matmul" else 256
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), ml_dtypes.bfloat16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    tm = [TensorMap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16")
          for x in (au, bu, cu)]
    run = launch(ptx(target, name), "tma_matmul_kernel", (M // 128, N // 128), threads,
                 args=[tm[0], M, K, K, 1, tm[1], N, K, K, 1, tm[2], M, N, N, 1, K,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)], dynamic_shared=200 * 1024,
                 target=tgt)
    assert not run.findings, run.findings     # the sanitizer: clean
    d = stepped(au, bu.T, 16, arch, kind="f16", atype="bf16", btype="bf16", ctype="f32",
                dtype="f32")
    assert np.array_equal(cu, d.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


def _pack_e2m1(x, axis):
    """Two e2m1 codes per byte along `axis`, element 2i in the low nibble (Triton's packing)."""
    x = np.moveaxis(x, axis, -1)
    p = (x[..., 0::2] | (x[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(np.moveaxis(p, -1, axis))


def _dot_scaled_inputs(fa, fb):
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
    return A, B, a, b, sa, sb


def _run_dot_scaled(target, fa, fb, a, b, sa, sb):
    c = np.zeros((128, 128), np.float32)
    run = launch(ptx(target, f"dot_scaled_{fa}_{fb}"), "dot_scaled_kernel", 1, 128,
                 args=[a, sa, b, sb, c, np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=200 * 1024, target=ARCH[target][0])
    assert not run.findings, run.findings     # the sanitizer: clean
    return c


@pytest.mark.parametrize("fa,fb", [("e4m3", "e4m3"), ("e2m1", "e2m1")])
def test_dot_scaled_sm120a_block_scaled_mma(fa, fb):
    # tl.dot_scaled 128x128x128, ue8m0 scales per 32 K: mma.sync kind::mxf8f6f4 .scale_vec::1X
    # (K = 32) or kind::mxf4nvf4 .scale_vec::2X (K = 64), selectors {0, 0}
    A, B, a, b, sa, sb = _dot_scaled_inputs(fa, fb)
    c = _run_dot_scaled("sm120a", fa, fb, a, b, sa, sb)
    kind, step = ("mxf4nvf4", 64) if fa == "e2m1" else ("mxf8f6f4", 32)
    d = np.zeros((128, 128), np.uint32)
    for k in range(0, 128, step):
        d = mma(A[:, k:k + step], B[k:k + step], d, arch="sm_120", kind=kind, atype=fa,
                btype=fb, ctype="f32", dtype="f32", scale_a=sa[:, k // 32:(k + step) // 32],
                scale_b=sb.T[k // 32:(k + step) // 32], scale_type="ue8m0", block=32)
    assert np.array_equal(c.view(np.uint32), d)
    from ptxsim.types import decode
    af = decode(A, fa).astype(np.float64) * np.repeat(2.0 ** (sa.astype(np.int64) - 127), 32, 1)
    bf = decode(B, fb).astype(np.float64) * np.repeat(2.0 ** (sb.T.astype(np.int64) - 127), 32, 0)
    ref = af @ bf
    assert np.allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def _bf16_scaled(X, fmt, scales, axis):
    """Triton's upcast of a scaled operand: every element decoded and multiplied by its
    block's 2^(s - 127) in bf16 (cvt to bf16, mul.bf16 -- exact for these values and scales)."""
    from ptxsim.types import decode
    s = np.repeat(2.0 ** (scales.astype(np.int64) - 127), 32, axis)
    v = decode(X, fmt).astype(np.float64) * s
    out = v.astype(np.float32).astype(ml_dtypes.bfloat16)
    assert np.array_equal(out.astype(np.float64), v)               # exact
    return out.view(np.uint16)


@pytest.mark.parametrize("target,fa,fb", [("sm90a", "e4m3", "e4m3"), ("sm90a", "e2m1", "e2m1"),
                                          ("sm90a", "e4m3", "e2m1"), ("sm120a", "e4m3", "e2m1")])
def test_dot_scaled_bf16_upcast(target, fa, fb):
    # no block-scaled MMA used: Triton upcasts A and B to bf16 (cvt.rn.f16x2.e4m3x2 +
    # cvt.bf16.f16 / cvt.rn.bf16x2.e4m3x2, e2m1 codes through prmt / cvt.rn.bf16x2.e2m1x2),
    # multiplies by the scales (mul.bf16x2), and runs bf16 wgmma (K = 16) / mma.sync m16n8k16
    A, B, a, b, sa, sb = _dot_scaled_inputs(fa, fb)
    c = _run_dot_scaled(target, fa, fb, a, b, sa, sb)
    a16 = _bf16_scaled(A, fa, sa, 1)
    b16 = _bf16_scaled(B, fb, sb.T, 0)
    k = np.arange(128)
    if target == "sm120a":
        # the mma.sync steps do not take K in order: Triton feeds the upcast fp4 operand from
        # its packed bytes, so step p of each 64-wide half takes K = 8i + 2p + {0, 1}, i < 8
        # (read off the A operand of each mma.sync the kernel issues); the fused sum of a step
        # is order-free, the set of K per step is not
        k = np.array([h + 8 * i + 2 * p + j for h in (0, 64) for p in range(4) for i in range(8)
                      for j in range(2)])
        assert sorted(k) == list(range(128))
    d = stepped(a16[:, k], b16[k], 16, ARCH[target][1], kind="f16", atype="bf16",
                btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c.view(np.uint32), d)
