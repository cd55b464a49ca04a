"""Per-thread register inputs for the warp-level mma.sp captures (hardware/mma_sp/mma_sp_forms.py) and replay.

A form is described by a small dict (see ``hardware/mma_sp/README.md``): element types of A, B and C, register
counts, and the metadata flavour. ``mma_sp_inputs(form, warps)`` returns {register name: uint32
array of shape (32*warps,)} for the registers %a0.., %b0.., %c0.., %e (and the block-scale
operands when the form has them), deterministic in (instruction text, warps).

Warps are split into regimes (``REGIMES``):
- ``random``  (warps 0..63): finite values with a narrow exponent range (about 2^-4..2^4) and
  random signs, so sums cancel and alignment/truncation matter; integers uniform; tf32 operands
  carry random bits in the 13 ignored low bits;
- ``special`` (64..79): each element independently a subnormal (20%), +-0 (10%), +-Inf (2%), NaN
  (1%, random payload), a huge (12%) or tiny (15%) normal, raw random bits (5%), or a narrow normal; integer C near INT32_MAX/INT32_MIN and
  A/B at their extremes (saturation);
- ``anymeta`` (80..87): like random but the metadata word is arbitrary 32-bit (unsorted and equal
  indices included). For .sp::ordered_metadata such metadata is undefined behaviour in the spec.

Valid metadata: every 4-bit chunk is idx0 | idx1 << 2 with idx0 < idx1 (2:4), for tf32 one of
0b0100 / 0b1110 (1:2, FACTS.md section 4).
"""
from __future__ import annotations

import numpy as np

from ptxsim.testing.gen import Stream

REGIMES = (("random", 64), ("special", 16), ("anymeta", 8))
WARPS = sum(n for _, n in REGIMES)

META_2_4 = np.array([0x4, 0x8, 0xC, 0x9, 0xD, 0xE], dtype=np.uint32)  # (0,1)(0,2)(0,3)(1,2)(1,3)(2,3)
META_1_2 = np.array([0x4, 0xE], dtype=np.uint32)

# (exponent bits, mantissa bits) of each float element type, and its container width
FLOAT_BITS = {"f16": (5, 10, 16), "bf16": (8, 7, 16), "tf32": (8, 23, 32), "f32": (8, 23, 32),
              "e4m3": (4, 3, 8), "e5m2": (5, 2, 8)}
INT_BITS = {"u8": (8, False), "s8": (8, True), "u4": (4, False), "s4": (4, True), "s32": (32, True)}


def _narrow_float(s: Stream, n: int, ebits: int, mbits: int) -> np.ndarray:
    bias = (1 << (ebits - 1)) - 1
    spread = min(4, bias - 1) if ebits > 2 else 1
    e = bias + s.below(n, 2 * spread + 1) - spread
    m = s.u32(n) & ((1 << mbits) - 1)
    sign = s.below(n, 2)
    return ((sign << (ebits + mbits)) | (e << mbits) | m).astype(np.uint32)


def _special_float(s: Stream, n: int, ebits: int, mbits: int, name: str) -> np.ndarray:
    width = 1 + ebits + mbits
    emax = (1 << ebits) - 1
    mmask = (1 << mbits) - 1
    sign = s.below(n, 2).astype(np.uint32) << (ebits + mbits)
    mant = s.u32(n) & mmask
    # category thresholds in percent: subnormal 20, zero 10, Inf 2, NaN 1, huge 12, tiny 15,
    # raw bits 5, narrow normal 35
    pct = s.below(n, 100)
    cat = np.searchsorted(np.array([20, 30, 32, 33, 45, 60, 65]), pct, side="right")
    e_big = emax - 1 - s.below(n, 2)
    e_small = 1 + s.below(n, 2)
    if name == "e4m3":      # no Inf; S.1111.111 is NaN, S.1111.xxx otherwise finite
        e_big = np.full(n, emax)
        inf = (emax << mbits) | (mmask - 1)      # largest finite
        nan = (emax << mbits) | mmask
    else:
        inf = emax << mbits
        nan = (emax << mbits) | np.maximum(mant, 1)
    out = np.select(
        [cat == 0, cat == 1, cat == 2, cat == 3, cat == 4, cat == 5, cat == 6],
        [mant,                                   # subnormal (or zero)
         np.zeros(n, np.int64),                  # zero
         np.full(n, inf),                        # Inf
         nan,                                    # NaN
         (e_big << mbits) | mant,                # huge
         (e_small << mbits) | mant,              # tiny normal
         s.u32(n) & ((1 << (width - 1)) - 1)],   # raw random bits
        _narrow_float(s, n, ebits, mbits) & ((1 << (ebits + mbits)) - 1))
    return (sign | out).astype(np.uint32)


def _elements(s: Stream, n: int, etype: str, regime: str) -> np.ndarray:
    """n element bit patterns (uint32, right-aligned) of type etype."""
    if etype in FLOAT_BITS:
        ebits, mbits, cont = FLOAT_BITS[etype]
        if etype == "tf32":   # tf32 value in the high 19 bits, junk in the 13 ignored bits
            hi = (_elements(s, n, "tf32core", regime) << 13)
            return (hi | (s.u32(n) & 0x1FFF)).astype(np.uint32)
        if regime == "special":
            return _special_float(s, n, ebits, mbits, etype)
        return _narrow_float(s, n, ebits, mbits)
    if etype == "tf32core":
        return (_special_float(s, n, 8, 10, "tf32") if regime == "special"
                else _narrow_float(s, n, 8, 10))
    bits, signed = INT_BITS[etype]
    mask = (1 << bits) - 1 if bits < 32 else 0xFFFFFFFF
    r = s.u32(n) & np.uint32(mask)
    if regime != "special":
        return r
    if etype == "s32":
        near = s.below(n, 1 << 20).astype(np.uint32)
        top = np.uint32(0x7FFFFFFF) - near
        bot = np.uint32(0x80000000) + near
        return np.select([s.below(n, 3) == 0, s.below(n, 2) == 0], [top, bot], r).astype(np.uint32)
    ext = np.array([0, 1, mask, mask >> 1, (mask >> 1) + 1], dtype=np.uint32)
    return np.where(s.below(n, 2) == 0, s.choice(n, ext), r).astype(np.uint32)


def _pack(elems: np.ndarray, per_reg: int, width: int) -> np.ndarray:
    """Pack (..., per_reg) element bit patterns into uint32, element 0 in the low bits."""
    e = elems.reshape(-1, per_reg).astype(np.uint64)
    sh = (np.arange(per_reg, dtype=np.uint64) * np.uint64(width))
    return (e << sh).sum(axis=1, dtype=np.uint64).astype(np.uint32)


def _regs(s: Stream, threads: int, nregs: int, etype: str, container: int, regime: str):
    per = 32 // container
    el = _elements(s, threads * nregs * per, etype, regime)
    return _pack(el, per, container).reshape(threads, nregs).T


def mma_sp_inputs(form: dict, warps: int = WARPS, regimes=REGIMES) -> dict[str, np.ndarray]:
    """Inputs for every warp: {reg: uint32 (32*warps,)}. form keys: instruction, atype, btype,
    ctype, a_regs, b_regs, c_regs, meta ('2:4' | '1:2'), and the container widths a_bits/b_bits."""
    s = Stream(0xA11CE, form["instruction"])
    T = 32 * warps
    regs = {f"%a{i}": np.zeros(T, np.uint32) for i in range(form["a_regs"])}
    regs |= {f"%b{i}": np.zeros(T, np.uint32) for i in range(form["b_regs"])}
    regs |= {f"%c{i}": np.zeros(T, np.uint32) for i in range(form["c_regs"])}
    regs["%e"] = np.zeros(T, np.uint32)
    w0 = 0
    for regime, nw in regimes:
        w1 = min(w0 + nw, warps)
        if w1 <= w0:
            break
        t = 32 * (w1 - w0)
        sl = slice(32 * w0, 32 * w1)
        vreg = "special" if regime == "special" else "random"
        for name, n, et, cb in (("a", form["a_regs"], form["atype"], form["a_bits"]),
                                ("b", form["b_regs"], form["btype"], form["b_bits"]),
                                ("c", form["c_regs"], form["ctype"], 32 if form["ctype"] in ("f32", "s32") else 16)):
            block = _regs(s, t, n, et, cb, vreg)
            for i in range(n):
                regs[f"%{name}{i}"][sl] = block[i]
        if regime == "anymeta":
            regs["%e"][sl] = s.u32(t)
        else:
            table = META_1_2 if form["meta"] == "1:2" else META_2_4
            nib = s.choice(t * 8, table).reshape(t, 8).astype(np.uint64)
            regs["%e"][sl] = (nib << (np.arange(8, dtype=np.uint64) * np.uint64(4))).sum(
                axis=1, dtype=np.uint64).astype(np.uint32)
        w0 = w1
    return regs
