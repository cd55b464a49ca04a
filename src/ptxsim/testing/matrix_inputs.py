"""Deterministic inputs for the warp- and warpgroup-level matrix captures (hardware/mma_sync sweep,
hardware/wgmma, hardware/matrix) and their replay tests.

Layout-free: every register (or shared-memory) slot of an element type gets an element drawn on
its own, so the same bits are generated whatever the fragment layout is; the layout under test
only decides which of them meet. Two regimes (as ptxsim.testing.mma_sp_inputs): "random" (finite,
narrow exponent range, random signs; integers uniform) and "special" (subnormals, zeros, Inf,
NaN with random payloads, huge and tiny values, raw bits; integer extremes). Streams are keyed by
a name (the instruction text plus a tag), so a recorded file stores only outputs and a checksum.
"""
from __future__ import annotations

import numpy as np

from ptxsim.testing.gen import Stream
from ptxsim.testing.mma_sp_inputs import _elements

SEED = 0x5EED90
# container width of one element in a register / in shared memory
WIDTH = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s32": 32, "e4m3": 8,
         "e5m2": 8, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "b1": 1, "b16": 16, "b8": 8}


def _f64(s: Stream, n: int, regime: str) -> np.ndarray:
    """n f64 bit patterns: narrow normals (2^-4..2^4) or the special mix; NaNs quiet and
    signalling with random payloads."""
    sign = s.below(n, 2).astype(np.uint64) << np.uint64(63)
    mant = s.u64(n) & np.uint64((1 << 52) - 1)
    e = (1023 - 4 + s.below(n, 9)).astype(np.uint64)
    narrow = sign | (e << np.uint64(52)) | mant
    if regime != "special":
        return narrow
    pct = s.below(n, 100)
    cat = np.searchsorted(np.array([20, 30, 33, 38, 48, 60, 65]), pct, side="right")
    e_big = (2046 - s.below(n, 2)).astype(np.uint64)
    e_small = (1 + s.below(n, 2)).astype(np.uint64)
    inf = np.uint64(0x7FF) << np.uint64(52)
    snan = inf | np.maximum(mant & np.uint64((1 << 51) - 1), np.uint64(1))
    qnan = inf | np.uint64(1 << 51) | (mant & np.uint64((1 << 51) - 1))
    out = np.select([cat == 0, cat == 1, cat == 2, cat == 3, cat == 4, cat == 5, cat == 6],
                    [mant, np.zeros(n, np.uint64), np.full(n, inf),
                     np.where(s.below(n, 2) == 0, qnan, snan), (e_big << np.uint64(52)) | mant,
                     (e_small << np.uint64(52)) | mant, s.u64(n) & np.uint64((1 << 63) - 1)],
                    narrow & np.uint64((1 << 63) - 1))
    return sign | out


def elements(s: Stream, n: int, etype: str, regime: str) -> np.ndarray:
    """n element bit patterns of `etype`, right-aligned (uint64 for f64, else uint32)."""
    if etype == "f64":
        return _f64(s, n, regime)
    if etype in ("b1", "b16", "b8"):
        return s.u32(n) & np.uint32((1 << WIDTH[etype]) - 1)
    return _elements(s, n, etype, regime)


def registers(name: str, etype: str, nregs: int, threads: int, regime: str,
              reg_bits: int = 32) -> np.ndarray:
    """(nregs, threads) registers, each full of independent `etype` elements (uint64 when
    reg_bits is 64)."""
    s = Stream(SEED, f"{name}|{etype}|{regime}")
    w = WIDTH[etype]
    per = max(1, reg_bits // w)
    el = elements(s, nregs * threads * per, etype, regime).astype(np.uint64)
    el = el.reshape(nregs, threads, per)
    sh = (np.arange(per, dtype=np.uint64) * np.uint64(w))
    packed = np.bitwise_or.reduce(el << sh, axis=-1)
    return packed.astype(np.uint64 if reg_bits == 64 else np.uint32)


def smem_image(name: str, etype: str, nbytes: int, regime: str) -> np.ndarray:
    """`nbytes` of shared memory, every `etype` slot (up to 32 bits) an independent element
    (uint8)."""
    words = registers(name, etype, 1, -(-nbytes // 4), regime)[0]
    return words.view(np.uint8)[:nbytes].copy()


# ------------------------------------------------------------------ mma.sync sweep (sm_90a)
def mma_sync_warps(form) -> tuple[int, int]:
    """(random warps, special warps) of one form in the sweep: 36 + 12 for floating-point forms,
    12 + 4 for the exact integer / single-bit ones."""
    return (12, 4) if form.atype in ("u8", "s8", "u4", "s4", "b1") else (36, 12)


def mma_sync_registers(form) -> dict[str, np.ndarray]:
    """{%a0.. %b0.. %c0..: (32*W,) uint32 (uint64 for .f64)} for every warp of `form`
    (an isa.mma_sync.MmaForm), random warps first."""
    out = {}
    wide = 64 if form.atype == "f64" else 32
    for regime, warps in zip(("random", "special"), mma_sync_warps(form)):
        t = 32 * warps
        for p, fr, et in (("a", form.a, form.atype), ("b", form.b, form.btype),
                          ("c", form.c, form.ctype)):
            regs = registers(f"{form.text}|{p}", et, fr.nregs, t, regime, wide)
            for i in range(fr.nregs):
                out.setdefault(f"%{p}{i}", []).append(regs[i])
    return {k: np.concatenate(v) for k, v in out.items()}
