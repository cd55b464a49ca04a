"""One Triton matmul kernel, run the two ways a GPU-less user can run it, in the same process on
the same inputs: Triton's own interpreter (TRITON_INTERPRET=1 semantics) and ptxsim (the sm_100a
PTX Triton compiles, executed). Reports each one's wall time, the ratio, and whether each result
equals the hardware model's bits: ptxsim.numerics stepped over the logical matrices the way the
compiled kernel issues its tcgen05.mma (K = 16 per instruction for f16 / bf16, f32 accumulator
from +0), which is validated bit for bit against MMA-Sim elsewhere in the suite.

    python benchmarks/triton_vs_interpreter.py [--size 256] [--dtypes float16 bfloat16]
                                               [--rounds 1]

Needs triton==3.9.0 and CPU torch (pip install '.[triton]'). The first ptxsim call compiles the
kernel (Triton + ptxas), outside the timing; the interpreter has nothing to compile. Triton's
interpreter needs TRITON_INTERPRET=1 before `import triton` (its tl.* helpers are @jit functions
decorated then), so it runs in a child process of this run (`--worker`), on the same seeded
inputs, timing the same kernel call; the rounds alternate between the two. ptxsim is timed with
its sanitizer on (the default mode a user gets) and off (sanitize="none"); both give the same bits
and the sanitizer finds nothing in this kernel.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import triton
import triton.language as tl



def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr,
           BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + om[:, None] * sam + (k * BK + ok)[None, :] * sak)
        b = tl.load(b_ptr + (k * BK + ok)[:, None] * sbk + on[None, :] * sbn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc)


MODES = ("default", "none")        # the sanitizer's mode (default: on, as a user runs it)


def inputs(n: int, dtype: str):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(getattr(torch, dtype))
    b = torch.randn(n, n, generator=g).to(getattr(torch, dtype))
    return a, b


def model_bits(a: torch.Tensor, b: torch.Tensor, dtype: str) -> np.ndarray:
    from ptxsim.numerics import mma
    kind = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    ab, bb = a.view(torch.uint16).numpy(), b.view(torch.uint16).numpy()
    d = np.zeros((a.shape[0], b.shape[1]), np.uint32)
    for k in range(0, a.shape[1], 16):
        d = mma(ab[:, k:k + 16], bb[k:k + 16], d, arch="sm_100", kind="f16", atype=kind,
                btype=kind, ctype="f32", dtype="f32")
    return d


def run(kernel, a, b, n):
    c = torch.zeros(n, n)
    t = time.perf_counter()
    kernel[(n // 128, n // 128)](a, b, c, n, n, n, *a.stride(), *b.stride(), *c.stride(),
                                 BM=128, BN=128, BK=64)
    return time.perf_counter() - t, c


def worker(n: int, dtype: str, out: str) -> int:
    """In a TRITON_INTERPRET=1 process: one interpreted run; its seconds and result to `out`."""
    a, b = inputs(n, dtype)
    t, c = run(triton.jit(matmul), a, b, n)
    np.savez(out, seconds=t, bits=c.numpy().view(np.uint32))
    return 0


def interpreted(n: int, dtype: str):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.npz")
        subprocess.run([sys.executable, __file__, "--worker", "--size", str(n), "--dtypes", dtype,
                        "--out", out], check=True, env=dict(os.environ, TRITON_INTERPRET="1"))
        r = np.load(out)
        return float(r["seconds"]), r["bits"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256, help="M = N = K (a multiple of 128)")
    ap.add_argument("--dtypes", nargs="*", default=["float16", "bfloat16"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    n = args.size
    if args.worker:
        return worker(n, args.dtypes[0], args.out)
    import ptxsim.triton as pt
    pt.use("sm_100a")
    on_ptxsim = triton.jit(matmul)
    print(f"matmul {n}^3, 128x128x64 tiles, 4 warps; Triton {triton.__version__}, "
          f"ptxsim target {pt.target()}")
    for dtype in args.dtypes:
        a, b = inputs(n, dtype)
        want = model_bits(a, b, dtype)
        run(on_ptxsim, a, b, n)                           # compile (untimed)
        t_sim = {m: [] for m in MODES}
        t_int = []
        for _ in range(args.rounds):                      # alternate: all see the same load
            for m in MODES:
                pt.use("sm_100a", sanitize=m)
                ts, c = run(on_ptxsim, a, b, n)
                t_sim[m].append(ts)
                if m == "default":
                    c_sim = c
                    assert len(pt.last_launch().findings) == 0, pt.last_launch().findings
                else:
                    assert torch.equal(c.view(torch.int32), c_sim.view(torch.int32))
            ti, int_bits = interpreted(n, dtype)
            t_int.append(ti)
        pt.use("sm_100a", sanitize="default")
        ti = min(t_int)
        sim_bits = c_sim.numpy().view(np.uint32)
        diff = np.abs(int_bits.view(np.float32).astype(np.float64) -
                      want.view(np.float32).astype(np.float64))
        times = ", ".join(f"ptxsim (sanitize={m}) {min(t_sim[m]):.2f} s" for m in MODES)
        ratios = ", ".join(f"{m} {min(t_sim[m]) / ti:.2f}" for m in MODES)
        print(f"{dtype}: {times}, interpreter {ti:.2f} s; ptxsim / interpreter: {ratios}")
        print(f"  ptxsim == hardware model bits: {np.array_equal(sim_bits, want)}"
              f" ({int((sim_bits != want).sum())} of {want.size} differ)")
        print(f"  interpreter == hardware model bits: {np.array_equal(int_bits, want)}"
              f" ({int((int_bits != want).sum())} of {want.size} differ, largest difference "
              f"{diff.max():.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
