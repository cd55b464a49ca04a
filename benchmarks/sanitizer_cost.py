"""The sanitizer's cost (issue #19: "the Triton bf16 1024^3 benchmark with the default
sanitizer is at most 2x the time without"): Triton 3.9's matmul_bf16 kernel
(tests/data/ptx/triton/matmul_bf16.ptx) on a 1024^3 problem, launched with sanitize="none",
"default" and "full" in alternation for R rounds in one process (the parse cached first), CPU
time of each launch, the median ratio to "none", and the check that every mode computes the same
bits and finds nothing.

    PYTHONPATH=src python benchmarks/sanitizer_cost.py [--size 1024] [--rounds 3] [--full]
        [--variant ld|cp_async|tma|all]

--variant picks the form of the kernel (benchmarks/triton_matmul.py's): `ld` matmul_bf16.ptx
(ld.global + st.shared, the default), `cp_async` matmul_bf16_cpasync.ptx (Triton's
JIT-specialised cp.async pipeline), `tma` tma_matmul.ptx (TMA loads and store); `all` the three in
one process, one after the other, and the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap
from ptxsim.ptx import parse_module

TRITON = Path(__file__).parents[1] / "tests" / "data" / "ptx" / "triton"
VARIANTS = {"ld": "matmul_bf16.ptx", "cp_async": "matmul_bf16_cpasync.ptx",
            "tma": "tma_matmul.ptx"}


def run(ptx, n: int, a, b, mode: str, variant: str = "ld"):
    au, bu = a.view(np.uint16), b.view(np.uint16)
    scratch = [np.zeros(64, np.uint8), np.zeros(64, np.uint8)]
    if variant == "tma":
        c = np.zeros((n, n), np.uint16)
        tm = [TensorMap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16")
              for x in (au, np.ascontiguousarray(bu.T), c)]      # the kernel reads B as (N, K)
        args = [tm[0], n, n, n, 1, tm[1], n, n, n, 1, tm[2], n, n, n, 1, n] + scratch
        kernel, shared = "tma_matmul_kernel", 200 * 1024
    else:
        c = np.zeros((n, n), np.float32)
        strides = [n, 1, n, 1, n, 1] if variant == "ld" else [n, n, n]
        args = [au, bu, c, n, n, n] + strides + scratch
        kernel, shared = "matmul_kernel", 160 * 1024
    t = time.process_time()
    r = launch(ptx, kernel, (n // 128, n // 128), 128, args=args, dynamic_shared=shared,
               sanitize=mode)
    return time.process_time() - t, r, c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="also time sanitize='full'")
    ap.add_argument("--variant", choices=sorted(VARIANTS) + ["all"], default="ld")
    args = ap.parse_args()
    if args.variant != "all":
        measure(args, args.variant)
        return
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for v in ("ld", "cp_async", "tma"):
        measure(args, v)
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


def measure(args, variant: str) -> None:
    n = args.size
    ptx = parse_module((TRITON / VARIANTS[variant]).read_text())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    modes = ["none", "default"] + (["full"] if args.full else [])
    run(ptx, 128, a[:128, :128].copy(), b[:128, :128].copy(), "none", variant)  # warm up
    times = {m: [] for m in modes}
    bits = {}
    for _ in range(args.rounds):
        for m in modes:
            dt, r, c = run(ptx, n, a, b, m, variant)
            times[m].append(dt)
            bits.setdefault(m, c.copy())
            assert np.array_equal(bits[m], c), m
            assert not r.findings.errors, (m, r.findings)
    assert all(np.array_equal(bits["none"], bits[m]) for m in modes)
    base = statistics.median(times["none"])
    print(f"Triton bf16 matmul ({VARIANTS[variant]}) {n}x{n}x{n}, CPU seconds per launch "
          f"(median of {args.rounds}):")
    for m in modes:
        med = statistics.median(times[m])
        print(f"  sanitize={m:8s} {med:6.2f} s   ratio {med / base:4.2f}   "
              f"(runs: {', '.join(f'{t:.2f}' for t in times[m])})")
    print("same bits in every mode; no error findings")


if __name__ == "__main__":
    main()
