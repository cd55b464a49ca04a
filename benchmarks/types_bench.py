"""Throughput of ptxsim.types.decode / encode: Melem/s on 1M elements, one core.

Run: PYTHONPATH=src python benchmarks/types_bench.py
Peer for comparison: ml_dtypes' numpy casts (which round twice from float64 via float32, so they
are a speed reference, not a correctness one).
"""
import time

import ml_dtypes
import numpy as np

from ptxsim.types import decode, encode

N = 1 << 20
REPEAT = 5


def best(fn):
    fn()
    t = min(_timed(fn) for _ in range(REPEAT))
    return N / t / 1e6


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N) * 4.0
    rows = []
    for name, bits, kw, peer in [
        ("e4m3", 8, dict(satfinite=True), ml_dtypes.float8_e4m3fn),
        ("e2m1", 4, dict(satfinite=True), ml_dtypes.float4_e2m1fn),
        ("f16", 16, dict(), np.float16),
        ("bf16", 16, dict(), ml_dtypes.bfloat16),
        ("tf32", 32, dict(rounding="rna"), None),
        ("ue8m0", 8, dict(rounding="rp"), ml_dtypes.float8_e8m0fnu),
    ]:
        codes = rng.integers(0, 1 << min(bits, 16), N) if name != "tf32" else \
            rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
        dec = best(lambda: decode(codes, name))
        enc = best(lambda: encode(x, name, **kw))
        ref = best(lambda: x.astype(peer)) if peer is not None else float("nan")
        rows.append((name, dec, enc, ref))
    print(f"{'format':8s} {'decode Melem/s':>15s} {'encode Melem/s':>15s} {'ml_dtypes cast':>15s}")
    for name, dec, enc, ref in rows:
        print(f"{name:8s} {dec:15.1f} {enc:15.1f} {ref:15.1f}")


if __name__ == "__main__":
    main()
