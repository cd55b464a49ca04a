"""The recorded-replay inputs of the f64 approximations (32,768 u64): uniform bit patterns,
positive normals with a uniform exponent, the exponent extremes, subnormals, negatives, [1, 4),
and the special values (NaNs whose upper fraction bits are 0 included).
    python hardware/mufu/gen_f64_inputs.py OUT.bin"""
import sys

import numpy as np

rng = np.random.default_rng(20261121)
U = np.uint64


def pack(hi, lo):
    return (np.asarray(hi, U) << U(32)) | np.asarray(lo, U)


def rnd(n, bits):
    return rng.integers(0, 1 << bits, n, dtype=np.uint64)


parts = [
    rnd(8192, 64),                                                     # any bit pattern
    pack((rng.integers(1, 2047, 8192, dtype=np.uint64) << U(20)) | rnd(8192, 20), rnd(8192, 32)),
    pack((rng.choice([1, 2, 3, 1021, 1022, 1023, 1024, 1025, 2044, 2045, 2046], 4096).astype(U)
          << U(20)) | rnd(4096, 20), rnd(4096, 32)),                  # exponent extremes
    pack(rnd(2048, 20), rnd(2048, 32)),                                # positive subnormals
    pack(U(0x80000000) | rnd(2048, 31), rnd(2048, 32)),                # negatives
    pack(U(0x3FF00000) + rnd(4096, 21), rnd(4096, 32)),                # [1, 4)
    pack(U(0x7FF00000) | rnd(1024, 20), rnd(1024, 32)),                # +Inf / NaNs
    pack(U(0xFFF00000) | rnd(1024, 20), rnd(1024, 32)),                # -Inf / NaNs
]
special = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF0000000000001,
           0x7FF00000FFFFFFFF, 0xFFF0000000000001, 0x7FF8000000000000, 0x7FF4000000000123,
           0xFFF8000000000000, 0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
           0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0x3FF0000000000001, 0x4000000000000000,
           0x3FEFFFFFFFFFFFFF, 0x7FE0000000000000, 0x7FD0000000000000, 0x7FE0000100000000,
           0x7FD0000100000000, 0xBFF0000000000000, 0x8000000000000001, 0x0000000100000000]
special += [(e << 52) | (m << 32) for e in range(0, 2047, 7) for m in (0, 1, 0xFFFFF)]
x = np.concatenate(parts + [np.array(special, U)])
x = np.concatenate([x, rnd(32768 - x.size, 64)])
assert x.size == 32768
x.astype("<u8").tofile(sys.argv[1])
print(x.size, "inputs ->", sys.argv[1])
