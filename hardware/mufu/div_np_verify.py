"""Device side: ptxsim's div.approx / div.full model (numpy) against the hardware for 2^26 pairs
(half uniform random bits, half with exponents within +-40 of each other), 16 processes.
    python3 div_np_verify.py DIV_BINARY SRC"""
import multiprocessing as mp
import subprocess
import sys
import types

import numpy as np

BIN, SRC = sys.argv[1], sys.argv[2]
FORMS = [("div.approx.f32", False, False), ("div.approx.ftz.f32", True, False),
         ("div.full.f32", False, True), ("div.full.ftz.f32", True, True)]


def chunk(args):
    k, lo, hi = args
    pkg = types.ModuleType("ptxsim")
    pkg.__path__ = [SRC + "/ptxsim"]
    sys.modules["ptxsim"] = pkg
    from ptxsim.isa import floating as F
    name, ftz, full = FORMS[k]
    got = F.div(A[lo:hi], B[lo:hi], type="f32", ftz=ftz, **({"full": True} if full else {"approx": True}))
    bad = np.nonzero(got != Y[k, lo:hi])[0]
    return k, hi - lo, bad.size, [(hex(A[lo + i]), hex(B[lo + i]), hex(Y[k, lo + i])) for i in bad[:3]]


if __name__ == "__main__":
    g = np.random.default_rng(20261123)
    n = 1 << 26
    A = g.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    B = g.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    h = n // 2
    eb = (B[h:] >> 23) & 0xFF
    ea = np.clip(eb.astype(np.int64) + g.integers(-40, 41, n - h), 0, 255).astype(np.uint32)
    A[h:] = (A[h:] & np.uint32(0x807FFFFF)) | (ea << 23)
    A.astype("<u4").tofile("/tmp/div_a.bin")
    B.astype("<u4").tofile("/tmp/div_b.bin")
    subprocess.run([BIN, "list", "/tmp/div_a.bin", "/tmp/div_b.bin", "/tmp/div_y.bin"], check=True)
    Y = np.fromfile("/tmp/div_y.bin", "<u4").reshape(4, n)
    step = 1 << 20
    jobs = [(k, lo, lo + step) for k in range(4) for lo in range(0, n, step)]
    mp.set_start_method("fork")
    res = {k: [0, 0, []] for k in range(4)}
    with mp.Pool(16) as pool:
        for k, m, b, ex in pool.imap_unordered(chunk, jobs):
            res[k][0] += m
            res[k][1] += b
            res[k][2] += ex
    for k in range(4):
        print(f"NPVERIFY {FORMS[k][0]:20s} pairs {res[k][0]} mismatches {res[k][1]}", res[k][2][:3])
