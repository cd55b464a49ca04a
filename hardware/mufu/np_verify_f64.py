"""Device side: ptxsim's numpy f64 approximations (src/ptxsim/isa/floating.py) against the real
instructions (k_list of f64.cubin, run by CuPy): chunks of 2^22 consecutive upper words, each
with a hashed lower word (another hash than f64.cu's), on all cores, within a time budget; the
two table forms over all 2^32 upper words first, then rsqrt.approx.f64 (the special chunks
first, then in random order).      python3 np_verify_f64.py CUBIN SRC BUDGET_S"""
import multiprocessing as mp
import sys
import time

import numpy as np

CUBIN, SRC, BUDGET = sys.argv[1], sys.argv[2], float(sys.argv[3])
OPS = ["rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64", "rsqrt.approx.f64"]
CH = 1 << 22


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


def work(item):
    op, c = item
    if time.time() > T_END:
        return op, 0, 0, []
    hi = np.uint64(c * CH) + np.arange(CH, dtype=np.uint64)
    h = (hi * np.uint64(0x2545F4914F6CDD1D) + np.uint64(c)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    lo = (h >> np.uint64(29)) & np.uint64(0xFFFFFFFF)
    x = (hi << np.uint64(32)) | lo
    if op == 0:
        got = F.rcp(x, type="f64", approx=True, ftz=True)
    else:
        got = F.rsqrt(x, type="f64", ftz=(op == 1))
    d_in = CP.asarray(x)
    d = CP.empty(CH, CP.uint64)
    MOD.get_function("k_list")(((CH + 255) // 256,), (256,), (np.int32(op), d_in, d, np.uint64(CH)))
    hw = CP.asnumpy(d)
    b = np.nonzero(got != hw)[0]
    return op, CH, b.size, [(OPS[op], hex(int(x[i])), hex(int(hw[i])), hex(int(got[i]))) for i in b[:3]]


if __name__ == "__main__":
    T_END = time.time() + BUDGET
    mp.set_start_method("fork")
    n = (1 << 32) // CH
    its = [(op, c) for op in (0, 1) for c in range(n)]
    first = [0, 1, n // 2 - 1, n // 2, n // 2 + 1, n - 1]       # subnormals, Inf/NaN, negatives
    rest = [c for c in np.random.default_rng(1).permutation(n) if c not in first]
    its += [(2, int(c)) for c in first + rest]
    t0 = time.time()
    checked, bad, exs = [0] * 3, [0] * 3, []
    with mp.Pool(16, initializer=init) as pool:
        for op, k, b, ex in pool.imap(work, its):
            checked[op] += k
            bad[op] += b
            exs += ex
    print(f"numpy model vs hardware, {time.time() - t0:.0f} s")
    for op in range(3):
        print(f"NPVERIFY {OPS[op]:22s} checked {checked[op]} of 2^32 upper words, mismatches "
              f"{bad[op]}", [e for e in exs if e[0] == OPS[op]][:4])
