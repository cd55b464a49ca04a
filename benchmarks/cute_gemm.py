"""CuTe DSL dense f16 GEMM (tests/data/ptx/cute/cute_dense_gemm_f16_1cta.ptx: TMA loads,
tcgen05.mma, TMA-store epilogue) run by ptxsim's executor: wall time against numpy's float32
matmul of the same size in the same rounds, optionally against ptxsim as of another git revision
in the same process (alternating rounds), with the C bits compared.

    PYTHONPATH=src python benchmarks/cute_gemm.py [--size 1024] [--k 512] [--rounds R]
                                                  [--baseline REV]
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

import numpy as np

PTX = Path(__file__).parents[1] / "tests" / "data" / "ptx" / "cute" / \
    "cute_dense_gemm_f16_1cta.ptx"


def _run(pkg: str, text: str, a, b):
    ex = importlib.import_module(pkg + ".machine.executor")
    tmap = importlib.import_module(pkg + ".machine.tensormap").TensorMap
    parse = importlib.import_module(pkg + ".ptx").parse_module
    (m_, k), n = a.shape, b.shape[0]
    c = np.zeros((m_, n), np.float16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    # as tests/machine/test_exec_cute.py: A / B boxes 64 x 128 rows, SWIZZLE_128B; C 32 x 128
    ta = tmap.for_array(au, (64, 128), swizzle="128B", dtype="float16")
    tb = tmap.for_array(bu, (64, 128), swizzle="128B", dtype="float16")
    tc = tmap.for_array(cu, (32, 128), swizzle="64B", dtype="float16")
    mod = parse(text)
    t0 = time.perf_counter()
    ex.launch(mod, mod.entries[0].name, (m_ // 128, n // 128, 1), 128, cluster=(1, 1, 1),
              args=[bytes(32), ta, tb, tc], dynamic_shared=227 * 1024)
    return time.perf_counter() - t0, cu.copy()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024, help="M = N (multiple of 128)")
    ap.add_argument("--k", type=int, default=512, help="K (multiple of 64)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="also time ptxsim at this git revision")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((args.size, args.k)).astype(np.float16)
    b = rng.standard_normal((args.size, args.k)).astype(np.float16)
    text = PTX.read_text()
    pkgs = ["ptxsim"]
    if args.baseline:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _baseline import load_baseline, share_compiled_loop
        share_compiled_loop(load_baseline(args.baseline), args.baseline)
        pkgs.append("ptxsim_base")
    small = (a[:128, :64].copy(), b[:128, :64].copy())
    for p in pkgs:                                      # imports and first touch, untimed
        _run(p, text, *small)
    times, bits = {p: [] for p in pkgs + ["numpy"]}, {}
    af, bf = a.astype(np.float32), b.astype(np.float32)
    for r in range(args.rounds):
        for p in ((pkgs + ["numpy"]) if r % 2 == 0 else ["numpy"] + pkgs[::-1]):
            if p == "numpy":                      # the peer: float32 matmul, same size
                t0 = time.perf_counter()
                af @ bf.T
                times[p].append(time.perf_counter() - t0)
                continue
            t, c = _run(p, text, a, b)
            times[p].append(t)
            bits[p] = c
            print(f"round {r}: {p}: {t:.2f} s", flush=True)
    if args.baseline:
        print("C bits identical to the baseline's:",
              bool(np.array_equal(bits["ptxsim"], bits["ptxsim_base"])))
    ratios = [t / n for t, n in zip(times["ptxsim"], times["numpy"])]
    print(f"numpy float32 matmul of the same size: median {1e3 * np.median(times['numpy']):.1f} "
          f"ms; ptxsim / numpy = {np.median(ratios):.0f}x [{min(ratios):.0f}-{max(ratios):.0f}]")
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    print(f"max |C - float64 matmul| = {np.abs(bits['ptxsim'].view(np.float16) - ref).max():.3g}")
    del times["numpy"]
    for p, ts in times.items():
        name = "this tree" if p == "ptxsim" else args.baseline
        print(f"{name}: median {np.median(ts):.2f} s, min {min(ts):.2f}, max {max(ts):.2f} "
              f"({len(ts)} runs; {args.size}x{args.size}x{args.k}, "
              f"{(args.size // 128) ** 2} CTAs)")


if __name__ == "__main__":
    main()
