"""CuTe DSL Blackwell kernels (nvidia-cutlass-dsl 4.8.1 compiling NVIDIA's own examples,
tests/data/ptx/cute, scripts/gen_cute_ptx.py) run by the executor, against ptxsim.numerics
stepped over the same logical matrices."""
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap
from ptxsim.numerics import mma
from ptxsim.ptx import parse_module

DATA = Path(__file__).parents[1] / "data" / "ptx" / "cute"


@pytest.mark.parametrize("name,cluster,b_rows,obj", [("cute_dense_gemm_f16_1cta", 1, 128, 32),
                                                      ("cute_dense_gemm_f16_2cta", 2, 64, 64)])
def test_cute_dense_gemm(name, cluster, b_rows, obj):
    # DenseGemmKernel(f32 accumulator, use_2cta, tiler (128|256, 128), cluster, TMA store), f16
    # K-major A (M, K) and B (N, K), C (M, N) f16. Parameter 0 is the TiledMMA's runtime state
    # (accumulate flag, negate bits, disable-output-lane mask): all zero. Tensor maps as CuTe's
    # host code builds them: A box 64 x 128 rows, B box 64 x 128 rows (1-CTA) or 64 rows per CTA
    # (2-CTA: each CTA holds half of B's N), SWIZZLE_128B; C epilogue box 32 x 128, SWIZZLE_64B.
    M, N, K = 256, 256, 128
    rng = np.random.default_rng(cluster)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    ta = TensorMap.for_array(au, (64, 128), swizzle="128B", dtype="float16")
    tb = TensorMap.for_array(bu, (64, b_rows), swizzle="128B", dtype="float16")
    tc = TensorMap.for_array(cu, (32, 128), swizzle="64B", dtype="float16")
    m = parse_module((DATA / f"{name}.ptx").read_text())
    launch(m, m.entries[0].name, (M // 128, N // 128, 1), 128, cluster=(cluster, 1, 1),
           args=[bytes(obj), ta, tb, tc], dynamic_shared=227 * 1024)
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, 16):                     # kind::f16 MMAs of K = 16, C starts at +0
        d = mma(au[:, k:k + 16], bu.T[k:k + 16], d, arch="sm_100", kind="f16", atype="f16",
                btype="f16", ctype="f32", dtype="f32")
    # epilogue cvt.rn.f16x2.f32 == numpy's round-to-nearest-even float32 -> float16
    want = d.view(np.float32).astype(np.float16).view(np.uint16)
    assert np.array_equal(cu, want)
