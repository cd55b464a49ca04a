"""The random/structured input list for the committed sm_90 capture (tests/data/hardware/mufu/mufu_f32_sm90.npz).

    python hardware/mufu/gen_inputs.py OUT.bin

2,048 structured inputs (each sign and biased exponent 0..255 with fraction 0, 1, 0x400000 and
0x7FFFFF: zeros, subnormals, powers of two, Inf, NaN) then 63,488 uniform random 32-bit patterns
(seed 20261121), so every exponent of each sign gets ~124 random significands."""
import sys

import numpy as np

s = np.arange(2, dtype=np.uint32)[:, None, None] << 31
e = np.arange(256, dtype=np.uint32)[None, :, None] << 23
f = np.array([0, 1, 0x400000, 0x7FFFFF], dtype=np.uint32)[None, None, :]
structured = (s | e | f).ravel()
rnd = np.random.default_rng(20261121).integers(0, 2 ** 32, 65536 - structured.size, dtype=np.uint64)
x = np.concatenate([structured, rnd.astype(np.uint32)])
x.astype("<u4").tofile(sys.argv[1])
