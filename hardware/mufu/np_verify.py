"""Device side: ptxsim's numpy model (src/ptxsim/isa/floating.py) against the real instructions,
chunk by chunk (CuPy runs the capture kernels of mufu.cubin), on all cores, within a time budget.

    python3 np_verify.py CUBIN SRC BUDGET_S

Items: every 2^24-input chunk of all 2^32 inputs for the five .ftz forms; for the non-.ftz forms
the sign/exponent bins where their SASS differs from the .ftz form (|a| < 2^-126; rcp also
|a| >= 2^126; ex2 also a <= -126). Prints per form the inputs checked and the mismatches."""
import multiprocessing as mp
import sys
import time

import numpy as np

CUBIN, SRC, BUDGET = sys.argv[1], sys.argv[2], float(sys.argv[3])
KERNELS = ["_Z13range_rcp_ftzPjjy", "_Z9range_rcpPjjy", "_Z15range_rsqrt_ftzPjjy",
           "_Z11range_rsqrtPjjy", "_Z14range_sqrt_ftzPjjy", "_Z10range_sqrtPjjy",
           "_Z13range_ex2_ftzPjjy", "_Z9range_ex2Pjjy", "_Z13range_lg2_ftzPjjy",
           "_Z9range_lg2Pjjy"]
NAMES = ["rcp.approx.ftz.f32", "rcp.approx.f32", "rsqrt.approx.ftz.f32", "rsqrt.approx.f32",
         "sqrt.approx.ftz.f32", "sqrt.approx.f32", "ex2.approx.ftz.f32", "ex2.approx.f32",
         "lg2.approx.ftz.f32", "lg2.approx.f32"]


def items():
    its = []
    for k in (0, 2, 4, 6, 8):
        its += [(k, c << 24, 1 << 24) for c in range(256)]
    P = 1 << 23
    bins = {1: [0, 256] + list(range(253, 256)) + list(range(256 + 253, 512)),
            3: [0, 256], 5: [0, 256], 9: [0, 256], 7: [0, 256] + list(range(256 + 133, 512))}
    for k, bs in bins.items():
        its += [(k, b * P, P) for b in bs]
    order = np.random.default_rng(1).permutation(len(its))   # spread the budget evenly
    return [its[i] for i in order]


def init():
    global F, CP, MOD
    import types
    pkg = types.ModuleType("ptxsim")        # skip ptxsim/__init__ (it imports the PTX parser)
    pkg.__path__ = [SRC + "/ptxsim"]
    sys.modules["ptxsim"] = pkg
    from ptxsim.isa import floating as F_
    import cupy as cp
    F, CP = F_, cp
    MOD = cp.RawModule(path=CUBIN)


def call(k, u):
    ftz = k % 2 == 0
    fn = [lambda u, f: F.rcp(u, type="f32", approx=True, ftz=f), lambda u, f: F.rsqrt(u, ftz=f),
          lambda u, f: F.sqrt(u, type="f32", approx=True, ftz=f), lambda u, f: F.ex2(u, ftz=f),
          lambda u, f: F.lg2(u, ftz=f)][k // 2]
    return fn(u, ftz)


def work(item):
    k, start, n = item
    if time.time() > T_END:
        return k, 0, 0, []
    d = CP.empty(n, CP.uint32)
    MOD.get_function(KERNELS[k])(((n + 255) // 256,), (256,), (d, np.uint32(start), np.uint64(n)))
    hw = CP.asnumpy(d)
    u = (np.uint64(start) + np.arange(n, dtype=np.uint64)).astype(np.uint32)
    got = call(k, u).astype(np.uint32)
    bad = np.nonzero(got != hw)[0]
    ex = [(int(u[i]), int(hw[i]), int(got[i])) for i in bad[:4]]
    return k, n, bad.size, ex


if __name__ == "__main__":
    T_END = time.time() + BUDGET
    mp.set_start_method("fork")
    its = items()
    t0 = time.time()
    checked, bad, ex = np.zeros(10, np.int64), np.zeros(10, np.int64), [[] for _ in range(10)]
    with mp.Pool(16, initializer=init) as pool:
        for k, n, b, e in pool.imap_unordered(work, its):
            checked[k] += n
            bad[k] += b
            ex[k] += e
    print(f"numpy model vs hardware, {time.time() - t0:.0f} s")
    for k in range(10):
        print(f"NPVERIFY {NAMES[k]:22s} checked {checked[k]} mismatches {bad[k]}",
              [tuple(hex(v) for v in t) for t in ex[k][:4]])
