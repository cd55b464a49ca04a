"""``mma``: bits of A, B, C (+ scales) and (arch, kind, types) -> bits of D.

The one entry point every MMA in ptxsim goes through (tcgen05.mma, warp-level mma, mma.sp with
the decompressed A).  Checks legality (params.py), unpacks the bits (unpack.py), and runs the
fused dot-product model (fdpa.py) or the integer model (integer.py).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.numerics import fdpa
from ptxsim.numerics.integer import int_mma
from ptxsim.numerics.params import check_types, params
from ptxsim.numerics.unpack import Unpacked, raw_bits, unpack, unpack_int

_OUT_DTYPE = {"f32": np.uint32, "s32": np.uint32, "f16": np.uint16}


def _fold_scale(x: Unpacked, s: Unpacked, block: int, axis: int) -> Unpacked:
    """Multiply each element by its block's scale (exact: ue8m0 scales are powers of two)."""
    sv = np.repeat(s.value, block, axis=axis)
    se = np.repeat(s.exp, block, axis=axis)
    special = x.special | np.repeat(s.special, block, axis=axis)
    with np.errstate(invalid="ignore"):
        value = x.value * sv
    exp = np.where(x.zero | special, x.exp, x.exp + se)
    lsb = np.where(x.zero | special, x.lsb, x.lsb + se)
    return Unpacked(value, exp, x.zero & ~special, special, lsb)


def mma(a, b, c, *, arch: str, kind: str, atype: str, btype: str, ctype: str, dtype: str,
        scale_a=None, scale_b=None, scale_type: str | None = None, block: int | None = None,
        satfinite: bool = False) -> np.ndarray:
    """D = A*B + C with the tensor core's arithmetic, on raw bits.

    a: (M, K) raw bits of A, one element per entry in the low bits (f6: low 6 bits, f4: low 4
       bits, tf32: the f32 container).  b: (K, N).  c: (M, N) raw bits of C (f32 / s32 as 32-bit,
       f16 as 16-bit).  scale_a: (M, K/block) and scale_b: (K/block, N) raw bits of the scale
       factors (block-scaled kinds).  K is the logical K: for sparse MMA pass the decompressed A.
       satfinite: integer kinds clamp instead of wrapping.
    Returns D's raw bits, (M, N), uint32 (f32 / s32) or uint16 (f16).
    """
    check_types(arch, kind, atype, btype, ctype, dtype, scale_type, block)
    A = raw_bits(a, atype, "a")
    B = raw_bits(b, btype, "b")
    C = raw_bits(c, ctype, "c")
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2:
        raise OperandError(f"a, b, c must be 2-D, got shapes {A.shape}, {B.shape}, {C.shape}")
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K:
        raise OperandError(f"a is {M}x{K} but b is {K2}x{N}: the K dimensions differ")
    if C.shape != (M, N):
        raise OperandError(f"c is {C.shape[0]}x{C.shape[1]}, expected {M}x{N} (M x N)")
    if K == 0:
        raise OperandError("K = 0: an MMA needs at least one column of A")
    if kind != "i8" and satfinite:
        raise OperandError(f"satfinite applies to integer kinds only, not kind::{kind}")

    if kind == "i8":
        return int_mma(unpack_int(A, atype), unpack_int(B, btype), unpack_int(C, ctype),
                       satfinite)

    p = params(arch, kind, atype, btype, dtype)
    ua, ub, uc = unpack(A, atype), unpack(B, btype), unpack(C, ctype)
    if scale_type is None:
        cdt = np.float32 if fdpa.products_fit_f32(atype, btype) else np.float64
        return fdpa.fused(ua, ub, uc, p, p.rho, dtype, cdt)

    if K % block:
        raise OperandError(f"K = {K} is not a multiple of the scale block size {block}")
    nsf = K // block
    SA = raw_bits(scale_a, scale_type, "scale_a") if scale_a is not None else None
    SB = raw_bits(scale_b, scale_type, "scale_b") if scale_b is not None else None
    if SA is None or SA.shape != (M, nsf):
        raise OperandError(f"scale_a must be {M}x{nsf} (M x K/block) for K = {K}, block = "
                           f"{block}; got {None if SA is None else SA.shape}")
    if SB is None or SB.shape != (nsf, N):
        raise OperandError(f"scale_b must be {nsf}x{N} (K/block x N) for K = {K}, block = "
                           f"{block}; got {None if SB is None else SB.shape}")
    usa, usb = unpack(SA, scale_type), unpack(SB, scale_type)
    if p.model == "grouped":
        if K % p.G:
            raise OperandError(f"K = {K} is not a multiple of the group size {p.G}")
        return fdpa.grouped(ua, ub, uc, usa, usb, block, p, p.rho)
    ua = _fold_scale(ua, usa, block, axis=1)
    ub = _fold_scale(ub, usb, block, axis=0)
    return fdpa.fused(ua, ub, uc, p, p.rho, dtype, np.float64)
