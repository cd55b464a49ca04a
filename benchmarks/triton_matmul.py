"""Triton 3.9 bf16 matmul (tests/data/ptx/triton/matmul_bf16.ptx, sm_100a) on a 1024^3 problem
run by ptxsim's executor: wall time, and the ratio to numpy's float32 matmul of the same size in
the same run. Also checks the result bit for bit against ptxsim.numerics.

    PYTHONPATH=src python benchmarks/triton_matmul.py [--size 1024]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from ptxsim.machine.executor import launch
from ptxsim.numerics import mma

PTX = Path(__file__).parents[1] / "tests" / "data" / "ptx" / "triton" / "matmul_bf16.ptx"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--no-check", action="store_true")
    n = ap.parse_args().size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    c = np.zeros((n, n), np.float32)
    ptx = PTX.read_text()
    t0 = time.perf_counter()
    run = launch(ptx, "matmul_kernel", (n // 128, n // 128), 128,
                 args=[a.view(np.uint16), b.view(np.uint16), c, n, n, n, n, 1, n, 1, n, 1,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=160 * 1024)
    t_sim = time.perf_counter() - t0
    af, bf = a.astype(np.float32), b.astype(np.float32)
    t0 = time.perf_counter()
    ref = af @ bf
    t_np = time.perf_counter() - t0
    print(f"ptxsim Triton bf16 matmul {n}x{n}x{n}: {t_sim:.2f} s wall "
          f"({run.steps} scheduler steps, {n // 128 * n // 128} CTAs)")
    print(f"numpy float32 matmul same size: {t_np * 1e3:.2f} ms; ratio {t_sim / t_np:.0f}x")
    print(f"max |ptxsim - numpy f32| = {np.abs(c - ref).max():.3g}")
    if not ap.parse_args().no_check:
        d = np.zeros((n, n), np.uint32)
        for k in range(0, n, 16):
            d = mma(a.view(np.uint16)[:, k:k + 16], b.view(np.uint16)[k:k + 16], d,
                    arch="sm_100", kind="f16", atype="bf16", btype="bf16", ctype="f32",
                    dtype="f32")
        print("bit-exact vs ptxsim.numerics stepped over K:",
              bool(np.array_equal(d, c.view(np.uint32))))


if __name__ == "__main__":
    main()
