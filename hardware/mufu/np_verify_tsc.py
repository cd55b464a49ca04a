"""Device side: ptxsim's numpy tanh / sin / cos (src/ptxsim/isa/floating.py) against the real
instructions (range kernels of tsc.cubin, run by CuPy), every 2^24-input chunk of all 2^32 inputs,
on all cores, within a time budget. sin / cos: the numpy code is the same with and without .ftz,
so each chunk is compared with both hardware forms.

    python3 np_verify_tsc.py CUBIN SRC BUDGET_S"""
import multiprocessing as mp
import sys
import time

import numpy as np

CUBIN, SRC, BUDGET = sys.argv[1], sys.argv[2], float(sys.argv[3])
FORMS = {"tanh": ["range_tanh"], "sin": ["range_sin", "range_sin_ftz"],
         "cos": ["range_cos", "range_cos_ftz"]}


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
    name, start, n = item
    if time.time() > T_END:
        return name, 0, {}, []
    u = (np.uint64(start) + np.arange(n, dtype=np.uint64)).astype(np.uint32)
    got = getattr(F, name)(u).astype(np.uint32)
    bad, ex = {}, []
    for k in FORMS[name]:
        d = CP.empty(n, CP.uint32)
        MOD.get_function(k)(((n + 255) // 256,), (256,), (d, np.uint32(start), np.uint64(n)))
        hw = CP.asnumpy(d)
        b = np.nonzero(got != hw)[0]
        bad[k] = b.size
        ex += [(k, int(u[i]), int(hw[i]), int(got[i])) for i in b[:3]]
    return name, n, bad, ex


if __name__ == "__main__":
    T_END = time.time() + BUDGET
    mp.set_start_method("fork")
    its = [(nm, c << 24, 1 << 24) for nm in FORMS for c in range(256)]
    its = [its[i] for i in np.random.default_rng(1).permutation(len(its))]
    t0 = time.time()
    checked = {k: 0 for ks in FORMS.values() for k in ks}
    bad = dict.fromkeys(checked, 0)
    exs = []
    with mp.Pool(16, initializer=init) as pool:
        for name, n, b, ex in pool.imap_unordered(work, its):
            for k in FORMS[name]:
                checked[k] += n if k in b else 0
                bad[k] += b.get(k, 0)
            exs += ex
    print(f"numpy model vs hardware, {time.time() - t0:.0f} s")
    for k in checked:
        print(f"NPVERIFY {k:16s} checked {checked[k]} mismatches {bad[k]}",
              [tuple(hex(v) if isinstance(v, int) else v for v in t) for t in exs if t[0] == k][:4])
