"""Per-instruction cost of the base instructions as the kernel executor calls them:
`ptxsim.isa.base.semantics(opcode)(*operands)` over 8,192 threads (register arrays of the
executor's dtypes: uint16/32/64 bits, bool predicates), against the same operation written as
plain numpy float32 / int32 arithmetic in the same run (the ratio is ptxsim / numpy).

    PYTHONPATH=src python benchmarks/base_ops.py [--threads 8192] [--reps 200] [--only add]

Times are medians of `--reps` calls (after one warm-up call), in microseconds.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ptxsim.isa.base import semantics

U16, U32, U64, F32 = np.uint16, np.uint32, np.uint64, np.float32


def _operands(n: int, rng):
    """Typical register contents: f32 values of moderate range, 32-bit integers, predicates."""
    f = lambda: rng.standard_normal(n).astype(F32).view(U32)            # noqa: E731
    h = lambda: rng.standard_normal(n).astype(np.float16).view(U16)     # noqa: E731
    hx2 = lambda: (h().astype(U32) | (h().astype(U32) << U32(16)))      # noqa: E731
    bf = lambda: (f() >> U32(16)).astype(U16)                            # noqa: E731
    bfx2 = lambda: (f() & U32(0xFFFF0000)) | (f() >> U32(16))           # noqa: E731
    i = lambda: rng.integers(0, 2**32, n, dtype=np.uint64).astype(U32)  # noqa: E731
    s = lambda: rng.integers(0, 32, n, dtype=np.uint64).astype(U32)     # noqa: E731
    w = lambda: rng.integers(0, 2**63, n, dtype=np.uint64)              # noqa: E731
    p = lambda: rng.random(n) < 0.5                                      # noqa: E731
    return f, h, hx2, bf, bfx2, i, s, w, p


def cases(n: int, rng):
    f, h, hx2, bf, bfx2, i, s, w, p = _operands(n, rng)
    fv = lambda x: x.view(F32)                                           # noqa: E731
    iv = lambda x: x.view(np.int32)                                      # noqa: E731
    a, b, c = f(), f(), f()
    x, y, z = i(), i(), i()
    sh, pr, pq = s(), p(), p()
    with np.errstate(all="ignore"):
        return [
            # (opcode, operands, the numpy operation it is compared with)
            ("add.s32", (x, y), lambda: iv(x) + iv(y)),
            ("add.u64", (w(), w()), lambda: iv(x) + iv(y)),
            ("sub.s32", (x, y), lambda: iv(x) - iv(y)),
            ("mul.lo.s32", (x, y), lambda: iv(x) * iv(y)),
            ("mul.hi.u32", (x, y), lambda: iv(x) * iv(y)),
            ("mul.wide.s32", (x, y), lambda: iv(x) * iv(y)),
            ("mad.lo.s32", (x, y, z), lambda: iv(x) * iv(y) + iv(z)),
            ("mad.wide.u32", (x, y, w()), lambda: iv(x) * iv(y) + iv(z)),
            ("shl.b32", (x, sh), lambda: x << sh),
            ("shr.u32", (x, sh), lambda: x >> sh),
            ("shr.s32", (x, sh), lambda: iv(x) >> iv(sh)),
            ("and.b32", (x, y), lambda: x & y),
            ("or.b32", (x, y), lambda: x | y),
            ("xor.b32", (x, y), lambda: x ^ y),
            ("and.pred", (pr, pq), lambda: pr & pq),
            ("min.s32", (x, y), lambda: np.minimum(iv(x), iv(y))),
            ("max.u32", (x, y), lambda: np.maximum(x, y)),
            ("selp.b32", (x, y, pr), lambda: np.where(pr, x, y)),
            ("setp.lt.s32", (x, y), lambda: iv(x) < iv(y)),
            ("setp.ne.and.u32", (x, y, pr), lambda: (x != y) & pr),
            ("setp.lt.f32", (a, b), lambda: fv(a) < fv(b)),
            ("setp.gtu.f32", (a, b), lambda: fv(a) > fv(b)),
            ("setp.eq.ftz.f32", (a, b), lambda: fv(a) == fv(b)),
            ("add.f32", (a, b), lambda: fv(a) + fv(b)),
            ("add.rn.f32", (a, b), lambda: fv(a) + fv(b)),
            ("sub.f32", (a, b), lambda: fv(a) - fv(b)),
            ("mul.rn.f32", (a, b), lambda: fv(a) * fv(b)),
            ("add.ftz.f32", (a, b), lambda: fv(a) + fv(b)),
            ("mul.ftz.f32", (a, b), lambda: fv(a) * fv(b)),
            ("fma.rn.f32", (a, b, c), lambda: fv(a) * fv(b) + fv(c)),
            ("fma.rn.ftz.f32", (a, b, c), lambda: fv(a) * fv(b) + fv(c)),
            ("min.f32", (a, b), lambda: np.fmin(fv(a), fv(b))),
            ("max.ftz.f32", (a, b), lambda: np.fmax(fv(a), fv(b))),
            ("neg.f32", (a,), lambda: -fv(a)),
            ("abs.f32", (a,), lambda: np.abs(fv(a))),
            ("cvt.rn.f16.f32", (a,), lambda: fv(a).astype(np.float16)),
            ("cvt.f32.f16", (h(),), lambda: fv(a).astype(np.float16)),
            ("cvt.rn.bf16.f32", (a,), lambda: fv(a).astype(np.float16)),
            ("cvt.f32.bf16", (bf(),), lambda: fv(a).astype(np.float16)),
            ("cvt.rn.f32.s32", (x,), lambda: iv(x).astype(F32)),
            ("cvt.rn.f32.u32", (x,), lambda: iv(x).astype(F32)),
            ("cvt.rzi.s32.f32", (a,), lambda: fv(a).astype(np.int32)),
            ("cvt.rni.s32.f32", (a,), lambda: fv(a).astype(np.int32)),
            ("cvt.u64.u32", (x,), lambda: x.astype(U64)),
            ("cvt.s64.s32", (x,), lambda: iv(x).astype(np.int64)),
            ("cvt.u32.u64", (w(),), lambda: x.astype(U64)),
            ("cvt.rn.f16x2.f32", (a, b), lambda: fv(a).astype(np.float16)),
            ("cvt.rn.bf16x2.f32", (a, b), lambda: fv(a).astype(np.float16)),
            ("add.rn.f16x2", (hx2(), hx2()), lambda: fv(a) + fv(b)),
            ("mul.rn.f16x2", (hx2(), hx2()), lambda: fv(a) * fv(b)),
            ("fma.rn.f16x2", (hx2(), hx2(), hx2()), lambda: fv(a) * fv(b) + fv(c)),
            ("add.rn.bf16x2", (bfx2(), bfx2()), lambda: fv(a) + fv(b)),
            ("fma.rn.bf16x2", (bfx2(), bfx2(), bfx2()), lambda: fv(a) * fv(b) + fv(c)),
        ] + _warp_cases(n, x, pr)


def _warp_cases(n, x, pr):
    """shfl / vote over (n // 32, 32) with every thread active and a full membermask (what the
    executor passes for converged warps)."""
    w = n // 32
    xs, ps = x.reshape(w, 32), pr.reshape(w, 32)
    full = np.full((w, 32), 0xFFFFFFFF, U32)
    act = {"active": np.ones((w, 32), bool)}
    cl = np.full((w, 32), 0x1F, U32)
    lane = np.arange(32)
    return [
        ("shfl.sync.bfly.b32", (xs, np.full((w, 32), 4, U32), cl, full), act,
         lambda: np.take_along_axis(xs, np.broadcast_to(lane ^ 4, (w, 32)), 1)),
        ("shfl.sync.idx.b32", (xs, np.zeros((w, 32), U32), cl, full), act,
         lambda: np.take_along_axis(xs, np.zeros((w, 32), np.intp), 1)),
        ("vote.sync.ballot.b32", (ps, full), act,
         lambda: np.packbits(ps, axis=1, bitorder="little")),
        ("vote.sync.any.pred", (ps, full), act, lambda: ps.any(1)),
    ]


def _median_us(fn, reps: int) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--only", default="", help="run the opcodes containing this text")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(2026)
    print(f"{'opcode':22s} {'ptxsim us':>10s} {'numpy us':>9s} {'ratio':>6s}   "
          f"({args.threads} threads, median of {args.reps})")
    for opcode, ops, *kw, ref in cases(args.threads, rng):
        if args.only not in opcode:
            continue
        fn = semantics(opcode)
        kw = kw[0] if kw else {}
        t = _median_us(lambda: fn(*ops, **kw), args.reps)
        with np.errstate(all="ignore"):
            t_np = _median_us(ref, args.reps)
        print(f"{opcode:22s} {t:10.1f} {t_np:9.1f} {t / t_np:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
