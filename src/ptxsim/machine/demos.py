"""The bundled demo kernels (`ptxsim demo`): tcgen05 GEMMs written in CUDA C++ with inline PTX
(src/ptxsim/data/kernels/tcgen05_demo.cu, compiled with `nvcc -arch=sm_100a -ptx`, CUDA 13.0).
Each demo runs its kernel on random data and checks D two ways: bit for bit against
`ptxsim.numerics.mma` stepped over K on the same logical matrices, and against a float64 numpy
matmul of the decoded (and scaled) operands."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from ptxsim.machine.executor import launch
from ptxsim.numerics import mma


@dataclass
class DemoResult:
    name: str
    what: str
    bit_exact: bool
    max_rel_err: float          # max |D - float64 reference| / max |reference|
    seconds: float
    steps: int


KERNELS = Path(__file__).resolve().parents[1] / "data" / "kernels"


def kernel_ptx() -> str:
    return (KERNELS / "tcgen05_demo.ptx").read_text()


def _rel(d: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(d.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-300))


def dense_bf16(ptx: str, rng, K: int = 64) -> DemoResult:
    A = rng.standard_normal((128, K)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((64, K)).astype(ml_dtypes.bfloat16)
    D = np.zeros((128, 64), np.float32)
    t = time.perf_counter()
    run = launch(ptx, "dense_bf16_gemm", 1, 128,
                 args=[A.view(np.uint16), B.view(np.uint16), D, K],
                 dynamic_shared=(128 + 64) * K * 2 + 16)
    dt = time.perf_counter() - t
    d = np.zeros((128, 64), np.uint32)
    for k in range(0, K, 16):
        d = mma(A.view(np.uint16)[:, k:k + 16], B.view(np.uint16).T[k:k + 16], d, arch="sm_100",
                kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    return DemoResult("dense_bf16_gemm", f"tcgen05.mma kind::f16 bf16, 128x64x{K}",
                      bool(np.array_equal(d, D.view(np.uint32))), _rel(D, ref), dt, run.steps)


def sparse_f16_metadata_words(nib: np.ndarray, K: int) -> np.ndarray:
    """sparse_f16_gemm's metadata argument: the (128, K/4) 2:4 metadata values as Tensor Memory
    words per lane, one column per 32-K instruction (FACTS section 4), flattened."""
    from ptxsim.isa import sparsity
    lane, _, bit = sparsity.metadata_cells("f16", 32)
    E = np.zeros((128, K // 32), np.uint32)
    for s in range(K // 32):
        n = nib[:, 8 * s:8 * s + 8].astype(np.uint64)
        stream = ((n[:, :, None] >> np.arange(4, dtype=np.uint64)) & np.uint64(1)).reshape(128, 32)
        np.bitwise_or.at(E[:, s], lane[0].ravel(),
                         (stream.ravel() << bit[0].ravel().astype(np.uint64)).astype(np.uint32))
    return E


def sparse_f16(ptx: str, rng) -> DemoResult:
    from ptxsim.isa import sparsity
    K = 64
    A = rng.standard_normal((128, K)).astype(np.float16)
    keep = np.zeros((128, K), bool)                       # 2 of every 4 along K
    pick = np.argsort(rng.random((128, K // 4, 4)), axis=2)[:, :, :2]
    np.put_along_axis(keep.reshape(128, K // 4, 4), pick, True, axis=2)
    A[~keep] = 0
    Ac, nib = sparsity.compress(A.view(np.uint16), "f16")
    E = sparse_f16_metadata_words(nib, K)
    B = rng.standard_normal((64, K)).astype(np.float16)
    D = np.zeros((128, 64), np.float32)
    t = time.perf_counter()
    run = launch(ptx, "sparse_f16_gemm", 1, 128,
                 args=[Ac.astype(np.uint16), B.view(np.uint16), E.ravel(), D],
                 dynamic_shared=128 * K + 64 * K * 2 + 16)
    dt = time.perf_counter() - t
    # reference: numerics.mma_sparse (the sparse arithmetic: one fused dot product over the
    # stored elements of a row times the B rows its metadata selects), one call per instruction;
    # stored element k of row m sits at logical column 4 (k // 2) + its 2-bit metadata index
    from ptxsim.numerics import mma_sparse
    d = np.zeros((128, 64), np.uint32)
    Bt = B.view(np.uint16)                                     # (N, K): B^T
    for s in range(K // 32):
        ks = np.arange(16)
        idx = (nib[:, 8 * s + ks // 2].astype(np.int64) >> (2 * (ks % 2))) & 3   # (128, 16)
        cols = 32 * s + 4 * (ks // 2) + idx
        b_rows = Bt.T[cols]                                    # (128, 16, 64)
        d = mma_sparse(Ac[:, 16 * s:16 * s + 16].astype(np.uint16), b_rows, d, arch="sm_100",
                       kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    return DemoResult("sparse_f16_gemm", "tcgen05.mma.sp kind::f16 2:4, 128x64x64",
                      bool(np.array_equal(d, D.view(np.uint32))), _rel(D, ref), dt, run.steps)


def mxf8(ptx: str, rng) -> DemoResult:
    K = 128
    A = rng.standard_normal((128, K)).astype(ml_dtypes.float8_e4m3fn)
    B = rng.standard_normal((64, K)).astype(ml_dtypes.float8_e4m3fn)
    SA = rng.integers(120, 135, (128, 4)).astype(np.uint8)     # ue8m0: 2^(s-127)
    SB = rng.integers(120, 135, (64, 4)).astype(np.uint8)
    D = np.zeros((128, 64), np.float32)
    t = time.perf_counter()
    run = launch(ptx, "mxf8_gemm", 1, 128,
                 args=[A.view(np.uint8), B.view(np.uint8), SA.view("<u4").ravel(),
                       SB.view("<u4").ravel(), D],
                 dynamic_shared=192 * K + 16)
    dt = time.perf_counter() - t
    d = np.zeros((128, 64), np.uint32)
    for k in range(K // 32):
        d = mma(A.view(np.uint8)[:, 32 * k:32 * k + 32], B.view(np.uint8).T[32 * k:32 * k + 32], d,
                arch="sm_100", kind="mxf8f6f4", atype="e4m3", btype="e4m3", ctype="f32",
                dtype="f32", scale_a=SA[:, k:k + 1], scale_b=SB.T[k:k + 1], scale_type="ue8m0",
                block=32)
    sa = np.repeat(2.0 ** (SA.astype(np.float64) - 127), 32, axis=1)
    sb = np.repeat(2.0 ** (SB.astype(np.float64) - 127), 32, axis=1)
    ref = (A.astype(np.float64) * sa) @ (B.astype(np.float64) * sb).T
    return DemoResult("mxf8_gemm", "tcgen05.mma kind::mxf8f6f4 e4m3 block_scale.block32, "
                      "128x64x128", bool(np.array_equal(d, D.view(np.uint32))), _rel(D, ref), dt,
                      run.steps)


DEMOS = {"dense": dense_bf16, "sparse": sparse_f16, "mxf8": mxf8}


def run_demos(names=None, seed: int = 0) -> list[DemoResult]:
    ptx = kernel_ptx()
    rng = np.random.default_rng(seed)
    return [DEMOS[n](ptx, rng) for n in (names or DEMOS)]
