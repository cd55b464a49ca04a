"""`ptxsim.execute` sizes a destination the caller did not pass from the instruction's own
destination type (found by the H200 base-instruction sweep: it used the wrong type for these two
and truncated the result silently).  Expected values derived by hand from the PTX ISA."""
import numpy as np

import ptxsim


def test_slct_64_bit_destination_named_first():
    # slct.dtype.ctype d, a, b, c (9.7.8.2): d = c >= 0 ? a : b, d of .dtype (here 64-bit)
    c = np.arange(32, dtype=np.int64) - 16
    r = ptxsim.execute("slct.u64.s32 %rd1, %rd2, %rd3, %r4;",
                       {"%rd2": np.full(32, 0x123456789, np.uint64),
                        "%rd3": np.full(32, 7, np.uint64),
                        "%r4": c.astype(np.uint32)})
    assert r["%rd1"].dtype == np.uint64
    assert r["%rd1"].tolist() == [0x123456789 if x >= 0 else 7 for x in c]


def test_cvt_pack_writes_32_bits():
    # cvt.pack.sat.u16.s32 d, a, b (9.7.9.21): d = {sat_u16(a), sat_u16(b)}, a in the upper half
    r = ptxsim.execute("cvt.pack.sat.u16.s32 %r1, %r2, %r3;",
                       {"%r2": np.full(32, 70000, np.uint32), "%r3": np.full(32, 5, np.uint32)})
    assert r["%r1"].dtype == np.uint32 and (r["%r1"] == 0xFFFF0005).all()
