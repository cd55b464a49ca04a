"""Test helpers: random raw-bit operands, and MMA-Sim (the differential oracle) on the same bits.

MMA-Sim (PyPI mmasim 2.1.1; Microsoft, arXiv:2511.10909) models were validated by their authors
on real A100/H100/B200/RTX-5090.  Its conventions differ from ptxsim's input convention:
f6 elements sit in bits [5:0] of a byte, f4 in bits [5:2] (FACTS section 2); packed fp4 (mxf4,
mxf4nvf4) holds element 2i in the HIGH nibble (mmasim/arithmetic/helper.py unpack_uint8_to_fp4).
"""
from __future__ import annotations

import numpy as np

from ptxsim.types.formats import FORMATS

NP_VIEW = {8: np.uint8, 16: np.int16, 32: np.int32}


def _torch():
    """torch is needed only to talk to MMA-Sim; imported on first use, single-threaded."""
    import torch
    torch.set_num_threads(1)
    return torch


def _torch_dtype(fmt_name):
    torch = _torch()
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
            "tf32": torch.float32, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
            "ue8m0": torch.float8_e8m0fnu, "ue4m3": torch.float8_e4m3fn}[fmt_name]


def gen_bits(rng, fmt_name: str, shape, p_special: float = 0.0, p_zero: float = 0.15,
             p_sub: float = 0.1, p_wide: float = 0.15, center: int = 0) -> np.ndarray:
    """Random raw bits of `fmt_name`: a mixture of normal-ish values around 2^center, values with
    any finite exponent, subnormals, zeros, and (with p_special) NaN/Inf encodings."""
    f = FORMATS[fmt_name]
    eb, mb = f.ebits, f.mbits
    emaxf = (1 << eb) - 1
    top = emaxf - 1 if f.nan == "ieee" else emaxf          # largest finite exponent field
    probs = np.array([max(0.0, 1 - p_special - p_zero - p_sub - p_wide), p_wide, p_sub, p_zero,
                      p_special])
    cat = rng.choice(5, size=shape, p=probs / probs.sum())
    near = np.clip(f.bias + center + rng.integers(-3, 4, shape), 1, top)
    wide = rng.integers(1, top + 1, shape)
    e = np.select([cat == 0, cat == 1], [near, wide], 0)
    m = rng.integers(0, 1 << mb, shape) if mb else np.zeros(shape, np.int64)
    if f.nan == "all_ones" and mb:   # e4m3: S.1111.111 is NaN; keep finite ones finite
        m = np.where((e == emaxf) & (m == (1 << mb) - 1) & (cat != 4), m - 1, m)
    elif f.nan == "all_ones":        # ue8m0: 0xFF is NaN
        e = np.where((e == emaxf) & (cat != 4), e - 1, e)
    m = np.where(cat == 3, 0, m)
    if f.nan == "ieee":
        spec_e, spec_m = emaxf, rng.integers(0, 2, shape) * rng.integers(1, 1 << mb, shape)
    elif f.nan == "all_ones":
        spec_e, spec_m = emaxf, (1 << mb) - 1
    else:
        spec_e, spec_m = e, m
    e = np.where(cat == 4, spec_e, e)
    m = np.where(cat == 4, spec_m, m)
    s = rng.integers(0, 2, shape) if f.signed else 0
    bits = (s << (eb + mb)) | (e << mb) | m
    if fmt_name == "tf32":
        bits = (bits << 13) | rng.integers(0, 1 << 13, shape)   # low bits ignored by hardware
    return bits.astype(np.uint32 if f.storage_bits > 16 else
                       np.uint16 if f.storage_bits > 8 else np.uint8)


def to_torch(bits: np.ndarray, fmt_name: str):
    """Raw bits (ptxsim convention) -> the tensor MMA-Sim takes for that type."""
    torch = _torch()
    if fmt_name in ("e2m3", "e3m2"):
        return torch.from_numpy(bits.astype(np.uint8))
    if fmt_name == "e2m1":
        return torch.from_numpy((bits.astype(np.uint8) << 2).astype(np.uint8))
    width = FORMATS[fmt_name].storage_bits if fmt_name != "ue4m3" else 8
    t = torch.from_numpy(bits.astype(np.int64).astype(NP_VIEW[width]) if width > 8
                         else bits.astype(np.uint8))
    return t.view(_torch_dtype(fmt_name))


def pack_fp4_k(bits: np.ndarray, axis: int):
    """Two e2m1 per byte along K, MMA-Sim order (element 2i in the high nibble)."""
    torch = _torch()
    b = bits.astype(np.uint8)
    even = np.take(b, np.arange(0, b.shape[axis], 2), axis=axis)
    odd = np.take(b, np.arange(1, b.shape[axis], 2), axis=axis)
    return torch.from_numpy(((even << 4) | odd).astype(np.uint8))


def from_torch(t) -> np.ndarray:
    torch = _torch()
    if t.dtype == torch.float16:
        return t.view(torch.int16).numpy().astype(np.uint16)
    return t.view(torch.int32).numpy().astype(np.uint32)


def mmasim_dense(op, a_bits, b_bits, c_bits, atype, btype, ctype) -> np.ndarray:
    """Run an MMA-Sim MMAOperation on ptxsim-convention raw bits; return D bits."""
    d = op(to_torch(a_bits, atype), to_torch(b_bits, btype), to_torch(c_bits, ctype))
    return from_torch(d)


def mmasim_scaled(op, a_bits, b_bits, c_bits, sa_bits, sb_bits, atype, btype, stype,
                  packed: bool) -> np.ndarray:
    """Run an MMA-Sim MMABlockScaleOperation; fp4 kinds get MMA-Sim's packing."""
    if packed:
        A, B = pack_fp4_k(a_bits, 1), pack_fp4_k(b_bits, 0)
    else:
        A, B = to_torch(a_bits, atype), to_torch(b_bits, btype)
    d = op(A, B, to_torch(c_bits, "f32"), to_torch(sa_bits, stype), to_torch(sb_bits, stype))
    return from_torch(d)


def sign_bit(fmt_name: str) -> int:
    f = FORMATS[fmt_name]
    return 1 << (31 if fmt_name == "tf32" else f.ebits + f.mbits)


def make_tile(rng, atype, btype, ctype, M, N, K, L):
    """One tile whose row / column groups exercise different regimes at once:
    rows 0-3 ordinary, 4-7 wide exponent spread, 8-11 subnormal-heavy, 12-15 exact pairwise
    cancellation (with columns 8-11), 16-19 an all-zero first block, 20-23 NaN/Inf encodings;
    columns 0-3 ordinary, 4-7 wide, 8-11 cancellation partners, 12-13 all-zero second block,
    14-15 specials.  C: ordinary, zero, subnormal and special entries."""
    assert M >= 24 and N >= 16
    a = gen_bits(rng, atype, (M, K)).astype(np.int64)
    a[4:8] = gen_bits(rng, atype, (4, K), p_wide=0.7)
    a[8:12] = gen_bits(rng, atype, (4, K), p_sub=0.6)
    a[20:24] = gen_bits(rng, atype, (4, K), p_special=0.05)
    a[12:16, 1::2] = a[12:16, 0::2]
    a[16:20, :min(L, K)] = 0
    b = gen_bits(rng, btype, (K, N)).astype(np.int64)
    b[:, 4:8] = gen_bits(rng, btype, (K, 4), p_wide=0.7)
    b[:, 14:16] = gen_bits(rng, btype, (K, 2), p_special=0.05)
    b[1::2, 8:12] = b[0::2, 8:12] ^ sign_bit(btype)
    if K > L:
        b[L:2 * L, 12:14] = 0
    c = gen_bits(rng, ctype, (M, N), p_zero=0.2, p_sub=0.1)
    c[12:16, 8:12] = 0
    c[22:24] = gen_bits(rng, ctype, (2, N), p_special=0.3)
    return a.astype(a_dtype(atype)), b.astype(a_dtype(btype)), c


def a_dtype(t):
    w = FORMATS[t].storage_bits
    return np.uint32 if w > 16 else np.uint16 if w > 8 else np.uint8


def make_tiny_tile(rng, atype, btype, ctype, M, N, K, e_zero, scaled_exp=0):
    """Products whose exponents sit just below `e_zero` (the exponent a zero term counts with),
    with zero terms present: the only regime where e_zero decides the alignment grid.
    `scaled_exp`: exponent the scales contribute (block-scaled kinds), subtracted here."""
    ca = (e_zero - scaled_exp) // 2 - 3
    a = gen_bits(rng, atype, (M, K), p_zero=0.2, p_sub=0.2, p_wide=0.0, center=ca)
    b = gen_bits(rng, btype, (K, N), p_zero=0.2, p_sub=0.2, p_wide=0.0, center=ca)
    c = gen_bits(rng, ctype, (M, N), p_zero=0.7, p_sub=0.3, p_wide=0.0)
    return a, b, c


def on_each_backend(fn) -> dict:
    """fn() under every numerics backend this installation has -- "numpy" (fdpa.py, the
    specification) and, where built, "c" (the compiled _fdpa.c) -- as {name: result}, so that
    one oracle value checks both (the active backend alone would leave the other untested)."""
    from ptxsim.numerics import backend
    out = {}
    for name in backend.available():
        with backend.use(name):
            out[name] = fn()
    return out
