"""ptxsim.numerics.mma vs MMA-Sim: same instructions, same input bits, one run.

    PYTHONPATH=src python benchmarks/mma_vs_mmasim.py [--repeat N] [--baseline REV]

Shapes: tcgen05 kind::f16 m128n256k16 (f16 -> f32), kind::f8f6f4 m128n256k32 (e4m3 -> f32),
kind::mxf4nvf4 m128n256k64 (e2m1, ue4m3 scales, block16).  Both run single-threaded (BLAS and
torch), best of N.  Prints MAC/s of each, the ratio, and whether the D bits are identical.
--baseline REV also times ptxsim as of git revision REV (e.g. main) in the same rounds, so the
before / after ratios see the same machine load.  --backend numpy times the numpy
implementation (fdpa.py) instead of the compiled loop (_fdpa.c), which is the default when built.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, ".."))

from ptxsim.numerics import mma  # noqa: E402


def best_of(fns, repeat):
    """Best-of-`repeat` times of each function, in alternating rounds so all see the same
    machine load; in each round each runs once untimed (warm caches) and once timed.
    Returns [(best time, first result)]."""
    outs = [fn() for fn in fns]
    times = [[] for _ in fns]
    for r in range(repeat):
        order = list(zip(fns, times))
        for fn, acc in (order if r % 2 == 0 else order[::-1]):   # no first-in-round bias
            fn()
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return [(min(t), o) for t, o in zip(times, outs)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--baseline", metavar="REV", help="also time ptxsim at this git revision")
    ap.add_argument("--data", choices=["mixed", "normal"], default="mixed",
                    help="mixed: raw bits mixing ordinary values, wide exponents, subnormals and "
                         "zeros (oracle.gen_bits); normal: N(0,1) values rounded to each format")
    ap.add_argument("--backend", choices=["c", "numpy"], default=None,
                    help="numerics backend to time (default: the active one)")
    args = ap.parse_args()
    from ptxsim.numerics import backend
    if args.backend:
        backend.select(args.backend)
    print(f"ptxsim numerics backend: {backend.active()} (available: "
          f"{', '.join(backend.available())})")
    import torch
    from mmasim.nv_ptx.sim import TCGen05MMA, TCGen05MMABlockScale
    from tests.numerics.oracle import gen_bits, mmasim_dense, mmasim_scaled
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    M, N = 128, 256
    if args.data == "normal":
        import ml_dtypes
        dts = {"f16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn,
               "e2m1": ml_dtypes.float4_e2m1fn, "ue4m3": ml_dtypes.float8_e4m3fn,
               "f32": np.float32}
        uint = {1: np.uint8, 2: np.uint16, 4: np.uint32}

        def gen_bits(rng, fmt, shape):          # noqa: F811 -- the "normal" generator
            x = rng.standard_normal(shape)
            if fmt == "ue4m3":
                x = np.abs(x) + 0.5
            v = x.astype(dts[fmt])
            bits = v.view(uint[v.dtype.itemsize])
            return bits & 0xF if fmt == "e2m1" else bits
    cases = []
    # f16 m128n256k16
    a, b = gen_bits(rng, "f16", (M, 16)), gen_bits(rng, "f16", (16, N))
    c = gen_bits(rng, "f32", (M, N))
    op = TCGen05MMA("Blackwell", "m128n256k16.kind::f16.f32.f16.f16")
    cases.append(("kind::f16 m128n256k16 f16->f32", 16,
                  lambda f=mma: f(a, b, c, arch="sm_100", kind="f16", atype="f16", btype="f16",
                                  ctype="f32", dtype="f32"),
                  lambda: mmasim_dense(op, a, b, c, "f16", "f16", "f32")))
    # e4m3 m128n256k32
    a8, b8 = gen_bits(rng, "e4m3", (M, 32)), gen_bits(rng, "e4m3", (32, N))
    op8 = TCGen05MMA("Blackwell", "m128n256k32.kind::f8f6f4.f32.e4m3.e4m3")
    cases.append(("kind::f8f6f4 m128n256k32 e4m3->f32", 32,
                  lambda f=mma: f(a8, b8, c, arch="sm_100", kind="f8f6f4", atype="e4m3",
                                  btype="e4m3", ctype="f32", dtype="f32"),
                  lambda: mmasim_dense(op8, a8, b8, c, "e4m3", "e4m3", "f32")))
    # mxf4nvf4 m128n256k64, ue4m3 block16
    a4, b4 = gen_bits(rng, "e2m1", (M, 64)), gen_bits(rng, "e2m1", (64, N))
    sa, sb = gen_bits(rng, "ue4m3", (M, 4)), gen_bits(rng, "ue4m3", (4, N))
    op4 = TCGen05MMABlockScale("Blackwell",
                               "m128n256k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")
    cases.append(("kind::mxf4nvf4 m128n256k64 e2m1 ue4m3 block16", 64,
                  lambda f=mma: f(a4, b4, c, arch="sm_100", kind="mxf4nvf4", atype="e2m1",
                                  btype="e2m1", ctype="f32", dtype="f32", scale_a=sa,
                                  scale_b=sb, scale_type="ue4m3", block=16),
                  lambda: mmasim_scaled(op4, a4, b4, c, sa, sb, "e2m1", "e2m1", "ue4m3", True)))
    base = None
    if args.baseline:
        sys.path.insert(0, HERE)
        from _baseline import load_baseline
        load_baseline(args.baseline)
        from ptxsim_base.numerics import mma as base
    head = f"{'instruction':48s} {'ptxsim MAC/s':>13s} {'MMA-Sim MAC/s':>14s} {'ratio':>7s}"
    print(head + (f" {args.baseline + ' ratio':>12s}" if base else "") + "  bits")
    for name, K, ours, theirs in cases:
        fns = [ours, theirs]
        if base is not None:
            fns.append(lambda ours=ours: ours(base))
        res = best_of(fns, args.repeat)
        (t_ours, d_ours), (t_theirs, d_theirs) = res[:2]
        macs = M * N * K
        same = all(np.array_equal(d_ours, d) for _, d in res[1:])
        same = "identical" if same else "DIFFER"
        extra = f" {t_theirs / res[2][0]:11.1f}x" if base is not None else ""
        print(f"{name:48s} {macs / t_ours:13.3e} {macs / t_theirs:14.3e} "
              f"{t_theirs / t_ours:6.1f}x{extra}  {same}")


if __name__ == "__main__":
    main()
