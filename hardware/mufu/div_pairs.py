"""Operand pairs for the div.approx / div.full capture: python div_pairs.py A.bin B.bin
400 special x special pairs, 65,536 uniform random bit pairs, then pairs whose exponents differ
by -130..130 (results across the whole range, subnormal and overflowing ones included); seed
20261122. 262,144 pairs in all."""
import sys

import numpy as np

sp = np.array([0, 1, 0x7FFFFF, 0x800000, 0x3F800000, 0x3FC00000, 0x7E800000, 0x7E800001,
               0x7F000000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x00400000, 0x40400000,
               0x5E800000, 0x20800000, 0x1000000, 0x7EFFFFFF, 0x3F7FFFFF, 0x00000002], np.uint32)
sp = np.concatenate([sp, sp | np.uint32(0x80000000)])[:20]
sa, sb = np.meshgrid(sp, sp)
g = np.random.default_rng(20261122)
n = 262144 - 400
ua = g.integers(0, 2 ** 32, 65536, dtype=np.uint64).astype(np.uint32)
ub = g.integers(0, 2 ** 32, 65536, dtype=np.uint64).astype(np.uint32)
m = n - 65536
ea = g.integers(1, 255, m)
eb = np.clip(ea + g.integers(-130, 131, m), 0, 255)
fa, fb = g.integers(0, 1 << 23, m), g.integers(0, 1 << 23, m)
s = g.integers(0, 4, m)
na = ((s & 1) << 31 | ea << 23 | fa).astype(np.uint32)
nb = ((s >> 1) << 31 | eb << 23 | fb).astype(np.uint32)
a = np.concatenate([sa.ravel(), ua, na]).astype("<u4")
b = np.concatenate([sb.ravel(), ub, nb]).astype("<u4")
a.tofile(sys.argv[1])
b.tofile(sys.argv[2])
