"""Uniform probe warps (every element of A, of B and of C the same value), one per question:

 0  A=+1, B=-0, C=-0   every term is -0: sign of an exact zero result
 1  A=-1, B=+0, C=-0   the same with the signs swapped
 2  A=-0, B=-0, C=-0   products +0, C -0
 3  A=+1, B=-0, C=+0   products -0, C +0
 4  A=B=big, C=0       positive overflow of the product sum (tf32/bf16: 2^64*2^64 per product;
                       f16/fp8: the largest finite value, which cannot overflow f32)
 5  A=big, B=-big, C=0 negative overflow
 6  C=FLT_MAX, products summing to ulp(FLT_MAX) = 2^104 (tf32/bf16): the exact sum is 2^128,
                       RZ gives FLT_MAX (IEEE) or +Inf; f16/fp8: C=FLT_MAX, products max*max
 7  C=+Inf, A=big, B=-big: an Inf accumulator against an overflowing product sum
Layout-free (uniform), so they read the same for every fragment layout.
"""
from __future__ import annotations

import numpy as np

ONE = {"f16": 0x3C00, "bf16": 0x3F80, "tf32": 0x3F800000, "e4m3": 0x38, "e5m2": 0x3C}
NEG = {"f16": 0x8000, "bf16": 0x8000, "tf32": 0x80000000, "e4m3": 0x80, "e5m2": 0x80}
MAXF = {"f16": 0x7BFF, "e4m3": 0x7E, "e5m2": 0x7B}
C_BITS = {"f32": dict(pz=0, nz=0x80000000, max=0x7F7FFFFF, inf=0x7F800000),
          "f16": dict(pz=0, nz=0x8000, max=0x7BFF, inf=0x7C00)}
NPROBES = 8


def pow2(t: str, e: int) -> int:
    """Bits of 2^e in a type with the f32 exponent range."""
    if t == "bf16":
        return (127 + e) << 7
    if t == "tf32":
        return (127 + e) << 23
    raise ValueError(t)


def probe_values(form: dict) -> list[tuple[int, int, int]]:
    """(a bits, b bits, c bits) per probe."""
    at, bt, ct = form["atype"], form["btype"], form["ctype"]
    k = int(form["shape"].split("k")[1])
    c = C_BITS[ct]
    wide = at in ("bf16", "tf32")
    sign_a, sign_b = NEG[at], NEG[bt]
    if wide:
        big_a, big_b = pow2(at, 64), pow2(bt, 64)
        lg = k.bit_length() - 1                     # k a power of two
        e = 104 - lg                                # k products of 2^e: sum 2^104
        p6 = (pow2(at, e // 2), pow2(bt, e - e // 2))
    else:
        big_a, big_b = MAXF[at], MAXF[bt]
        p6 = (big_a, big_b)
    return [
        (ONE[at], sign_b, c["nz"]),
        (ONE[at] | sign_a, 0, c["nz"]),
        (sign_a, sign_b, c["nz"]),
        (ONE[at], sign_b, c["pz"]),
        (big_a, big_b, c["pz"]),
        (big_a, big_b | sign_b, c["pz"]),
        (p6[0], p6[1], c["max"]),
        (big_a, big_b | sign_b, c["inf"]),
    ]


def _fill(bits: int, width: int) -> np.uint32:
    per = 32 // width
    return np.uint32(sum(bits << (width * s) for s in range(per)))


def probe_registers(form: dict) -> dict[str, np.ndarray]:
    """{register: uint32 (32 * NPROBES,)} for the probe warps."""
    regs = {}
    vals = probe_values(form)
    cw = 16 if form["ctype"] == "f16" else 32
    for name in form["inputs"]:
        p, i = name[1], int(name[2:])
        width = {"a": form["a_bits"], "b": form["b_bits"], "c": cw}[p]
        col = {"a": 0, "b": 1, "c": 2}[p]
        regs[name] = np.repeat(np.array([_fill(v[col], width) for v in vals], np.uint32), 32)
    return regs
