"""``mma``: bits of A, B, C (+ scales) and (arch, kind, types) -> bits of D.

The one entry point every MMA in ptxsim goes through (tcgen05.mma, warp-level mma, mma.sp with
the decompressed A).  Checks legality (params.py), unpacks the bits (unpack.py), and runs the
fused dot-product model (fdpa.py) or the integer model (integer.py).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.numerics import backend, emulated, fdpa
from ptxsim.numerics.integer import INT32_MAX, INT32_MIN, int_mma
from ptxsim.numerics.params import check_types, params
from ptxsim.numerics.unpack import Unpacked, decode, raw_bits, unpack, unpack_int
from ptxsim.types.formats import FORMATS

_OUT_DTYPE = {"f32": np.uint32, "s32": np.uint32, "f16": np.uint16}
BATCH_OUTPUTS = 1 << 16      # outputs per sub-batch of mma_batch


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


# ---- the compiled path (backend "c"): operands go to _fdpa.c as values and exponents --------

def _c_values(C: np.ndarray, ctype: str) -> np.ndarray:
    """C's exact values, f32 C as a float32 view of its bits (the compiled loop widens it row by
    row and derives the exponents itself), f16 C as float64."""
    if ctype == "f32":
        return np.ascontiguousarray(C, np.uint32).view(np.float32)
    return unpack(C, ctype).value


# e2m1 bits -> twice the value (the grouped kinds' elements, as _fdpa.c takes them), from the
# format table's own decoder
_E2M1_HALVES = fdpa.e2m1_halves(decode(np.arange(16, dtype=np.uint32), "e2m1").value)


def _c_operand(x: Unpacked, s: Unpacked | None, block: int | None, axis: int):
    """Values and alignment exponents of A or B, block scales folded in (as `_fold_scale`:
    exact, ue8m0 scales are powers of two; the exponents of zero / Inf / NaN products are never
    read, so they need no masking here)."""
    if s is None:
        return x.value, x.exp
    with np.errstate(invalid="ignore"):
        return (x.value * np.repeat(s.value, block, axis=axis),
                x.exp + np.repeat(s.exp, block, axis=axis))


def _c_fused(cm, A, B, C, p, atype, btype, ctype, dtype, SA, SB, scale_type, block):
    """The fused model for a batch (A (T, M, K), B (T, K, N), C (T, M, N)) in _fdpa.c."""
    usa = usb = None
    if scale_type is not None:
        usa, usb = unpack(SA, scale_type), unpack(SB, scale_type)
    av, ae = _c_operand(unpack(A, atype), usa, block, axis=2)
    bv, be = _c_operand(unpack(B, btype), usb, block, axis=1)
    return fdpa.c_fused(cm, av, ae, bv, be, _c_values(C, ctype), None, p, p.rho, dtype,
                        rows=False, c_emin=FORMATS[ctype].emin)


PARALLEL_MACS = 1 << 22      # a batch this large (multiply-adds) is split over the threads


def _split(T: int, M: int, N: int, K: int) -> list:
    """(batch slice, row slice) pieces of a (T, M, N, K) batch for `backend.threads()` threads:
    whole MMAs when there are enough of them, else row blocks; one piece when small."""
    n = backend.threads()
    if n <= 1 or T * M * N * K < PARALLEL_MACS:
        return [(slice(0, T), slice(0, M))]
    if T >= n:
        cuts = np.linspace(0, T, n + 1).astype(int)
        return [(slice(a, b), slice(0, M)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    rows = np.linspace(0, M, -(-n // T) + 1).astype(int)
    return [(slice(t, t + 1), slice(a, b)) for t in range(T)
            for a, b in zip(rows[:-1], rows[1:]) if b > a]


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
    backend.check_float_environment()
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
    if M == 0 or N == 0:                             # no outputs: nothing to compute
        return np.zeros((M, N), _OUT_DTYPE[dtype])

    if kind == "i8":
        return int_mma(unpack_int(A, atype), unpack_int(B, btype), unpack_int(C, ctype),
                       satfinite)

    p = params(arch, kind, atype, btype, dtype)
    if p.model == "emulated":
        return emulated.mma(A, B, C, p, atype, btype, dtype, rows=False)
    cm = backend.c_module()
    if cm is not None and p.model == "fused" and scale_type is None:
        return _c_fused(cm, A[None], B[None], C[None], p, atype, btype, ctype, dtype,
                        None, None, None, None)[0]
    ua, ub = unpack(A, atype), unpack(B, btype)
    if scale_type is None:
        cdt = np.float32 if fdpa.products_fit_f32(atype, btype) else np.float64
        return fdpa.fused(ua, ub, unpack(C, ctype), p, p.rho, dtype, cdt)

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
        if cm is not None:
            return fdpa.c_grouped(cm, np.take(_E2M1_HALVES, A), np.take(_E2M1_HALVES, B), usa,
                                  usb, _c_values(C, ctype), block, p, rows=False)
        return fdpa.grouped(ua, ub, unpack(C, ctype), usa, usb, block, p, p.rho)
    if cm is not None:
        return _c_fused(cm, A[None], B[None], C[None], p, atype, btype, ctype, dtype,
                        SA[None], SB[None], scale_type, block)[0]
    ua = _fold_scale(ua, usa, block, axis=1)
    ub = _fold_scale(ub, usb, block, axis=0)
    return fdpa.fused(ua, ub, unpack(C, ctype), p, p.rho, dtype, np.float64)


def mma_batch(a, b, c, *, arch: str, kind: str, atype: str, btype: str, ctype: str,
              dtype: str, scale_a=None, scale_b=None, scale_type: str | None = None,
              block: int | None = None, satfinite: bool = False) -> np.ndarray:
    """T independent MMAs of one instruction form in one call: a (T, M, K), b (T, K, N),
    c (T, M, N), scale_a (T, M, K/block), scale_b (T, K/block, N).  Returns D bits (T, M, N),
    batch entry t bit-identical to ``mma(a[t], b[t], c[t], ...)``.

    The fused kinds (tf32, f16, f8f6f4, mxf8f6f4, warp-level forms of those) run as one batched
    computation (fdpa.fused_batch); integer, grouped (mxf4 / mxf4nvf4) and emulated forms are
    computed one MMA at a time.
    """
    backend.check_float_environment()
    check_types(arch, kind, atype, btype, ctype, dtype, scale_type, block)
    A = raw_bits(a, atype, "a")
    B = raw_bits(b, btype, "b")
    C = raw_bits(c, ctype, "c")
    if A.ndim != 3 or B.ndim != 3 or C.ndim != 3:
        raise OperandError(f"mma_batch: a (T, M, K), b (T, K, N), c (T, M, N); got shapes "
                           f"{A.shape}, {B.shape}, {C.shape}")
    (T, M, K), (T2, K2, N) = A.shape, B.shape
    if T2 != T or C.shape[0] != T:
        raise OperandError(f"mma_batch: batch sizes differ: a {T}, b {T2}, c {C.shape[0]}")
    if K2 != K:
        raise OperandError(f"a is {M}x{K} but b is {K2}x{N}: the K dimensions differ")
    if C.shape[1:] != (M, N):
        raise OperandError(f"c is {C.shape[1]}x{C.shape[2]}, expected {M}x{N} (M x N)")
    if K == 0:
        raise OperandError("K = 0: an MMA needs at least one column of A")
    if kind != "i8" and satfinite:
        raise OperandError(f"satfinite applies to integer kinds only, not kind::{kind}")
    if M == 0 or N == 0:                             # no outputs: nothing to compute
        return np.zeros((T, M, N), _OUT_DTYPE[dtype])
    p = params(arch, kind, atype, btype, dtype) if kind != "i8" else None
    cm = backend.c_module()
    batched = p is not None and T > 0 and (
        p.model == "fused" or (p.model == "grouped" and cm is not None))
    if not batched:
        kw = dict(arch=arch, kind=kind, atype=atype, btype=btype, ctype=ctype, dtype=dtype,
                  scale_type=scale_type, block=block, satfinite=satfinite)
        out = np.empty((T, M, N), _OUT_DTYPE[dtype])
        for t in range(T):
            out[t] = mma(A[t], B[t], C[t], scale_a=None if scale_a is None else scale_a[t],
                         scale_b=None if scale_b is None else scale_b[t], **kw)
        return out
    if scale_type is not None:
        if K % block:
            raise OperandError(f"K = {K} is not a multiple of the scale block size {block}")
        nsf = K // block
        SA = raw_bits(scale_a, scale_type, "scale_a") if scale_a is not None else None
        SB = raw_bits(scale_b, scale_type, "scale_b") if scale_b is not None else None
        if SA is None or SA.shape != (T, M, nsf):
            raise OperandError(f"scale_a must be {(T, M, nsf)} (T x M x K/block) for K = {K}, "
                               f"block = {block}; got {None if SA is None else SA.shape}")
        if SB is None or SB.shape != (T, nsf, N):
            raise OperandError(f"scale_b must be {(T, nsf, N)} (T x K/block x N) for K = {K}, "
                               f"block = {block}; got {None if SB is None else SB.shape}")
    if p.model == "grouped":                     # compiled: the whole batch in one call
        if K % p.G:
            raise OperandError(f"K = {K} is not a multiple of the group size {p.G}")
        return fdpa.c_grouped(cm, np.take(_E2M1_HALVES, A), np.take(_E2M1_HALVES, B),
                              unpack(SA, scale_type), unpack(SB, scale_type),
                              _c_values(C, ctype), block, p, rows=False)
    if cm is not None:
        SA, SB = (SA, SB) if scale_type else (None, None)
        parts = _split(T, M, N, K)
        if len(parts) == 1:
            return _c_fused(cm, A, B, C, p, atype, btype, ctype, dtype, SA, SB, scale_type,
                            block)
        # independent pieces on the pool's threads (the compiled loop releases the GIL); each
        # entry's bits are those of the whole call
        outs = backend.run_parallel(
            lambda t, m: _c_fused(cm, A[t, m], B[t], C[t, m], p, atype, btype, ctype, dtype,
                                  None if SA is None else SA[t, m],
                                  None if SB is None else SB[t], scale_type, block),
            parts)
        out = np.empty((T, M, N), outs[0].dtype)
        for (t, m), o in zip(parts, outs):
            out[t, m] = o
        return out
    # sub-batches of about BATCH_OUTPUTS outputs: the (T, M, N) work arrays stay in cache
    # (measured: 64 MMAs of 128x128x16 in one piece are slower than one at a time)
    step = max(1, BATCH_OUTPUTS // (M * N))
    out = np.empty((T, M, N), _OUT_DTYPE[dtype])
    for t0 in range(0, T, step):
        sl = slice(t0, t0 + step)
        ua, ub, uc = unpack(A[sl], atype), unpack(B[sl], btype), unpack(C[sl], ctype)
        if scale_type is None:
            cdt = np.float32 if fdpa.products_fit_f32(atype, btype) else np.float64
            out[sl] = fdpa.fused_batch(ua, ub, uc, p, p.rho, dtype, cdt)
        else:
            usa, usb = unpack(SA[sl], scale_type), unpack(SB[sl], scale_type)
            ua = _fold_scale(ua, usa, block, axis=2)
            ub = _fold_scale(ub, usb, block, axis=1)
            out[sl] = fdpa.fused_batch(ua, ub, uc, p, p.rho, dtype, np.float64)
    return out


def mma_sparse(a, b_rows, c, *, arch: str, kind: str, atype: str, btype: str, ctype: str,
               dtype: str, scale_a=None, scale_b=None, scale_type: str | None = None,
               block: int | None = None, satfinite: bool = False) -> np.ndarray:
    """Sparse MMA as the H200 computes it: each output is ONE fused dot product over the K_s
    stored elements of its row of A times the B rows the metadata selects for that row, the
    engine's blocks of L terms counted in stored elements; pruned positions are never multiplied.

    a: (..., M, Ks) raw bits of the stored (compressed) A.  b_rows: (..., M, Ks, N), for row m
       the B rows its metadata selects: b_rows[..., m, k, :] = B[col(m, k), :].
    c: (..., M, N).  Leading axes are independent MMAs (e.g. warps).
    scale_a: (..., M, Ks/block), scale_b: (..., Ks/block, N), block counted in stored elements.
    Other arguments as `mma`.  Returns D bits (..., M, N).
    """
    backend.check_float_environment()
    check_types(arch, kind, atype, btype, ctype, dtype, scale_type, block)
    A = raw_bits(a, atype, "a")
    B = raw_bits(b_rows, btype, "b_rows")
    C = raw_bits(c, ctype, "c")
    if A.ndim < 2 or B.ndim != A.ndim + 1 or C.ndim != A.ndim:
        raise OperandError(f"mma_sparse: a (..., M, Ks), b_rows (..., M, Ks, N), c (..., M, N); "
                           f"got shapes {A.shape}, {B.shape}, {C.shape}")
    lead, (M, K) = A.shape[:-2], A.shape[-2:]
    N = B.shape[-1]
    if B.shape[:-1] != A.shape:
        raise OperandError(f"b_rows is {B.shape}, expected {A.shape + (N,)} (a's shape + N)")
    if C.shape != lead + (M, N):
        raise OperandError(f"c is {C.shape}, expected {lead + (M, N)}")
    if K == 0:
        raise OperandError("Ks = 0: a sparse MMA needs at least one stored element per row")
    if kind != "i8" and satfinite:
        raise OperandError(f"satfinite applies to integer kinds only, not kind::{kind}")
    R = int(np.prod(lead, dtype=np.int64)) * M
    A2, B2, C2 = A.reshape(R, K), B.reshape(R, K, N), C.reshape(R, N)
    out_shape = lead + (M, N)
    if R == 0 or N == 0:                             # no outputs: nothing to compute
        return np.zeros(out_shape, _OUT_DTYPE[dtype])

    if kind == "i8":
        av, bv = unpack_int(A2, atype), unpack_int(B2, btype)
        d = np.einsum("rk,rkn->rn", av, bv) + unpack_int(C2, ctype)
        if satfinite:
            d = np.clip(d, INT32_MIN, INT32_MAX)
        return (d & 0xFFFFFFFF).astype(np.uint32).reshape(out_shape)

    p = params(arch, kind, atype, btype, dtype)
    if p.model == "emulated":
        return emulated.mma(A2, B2, C2, p, atype, btype, dtype, rows=True).reshape(out_shape)
    ua, ub, uc = unpack(A2, atype), unpack(B2, btype), unpack(C2, ctype)
    if scale_type is None:
        return fdpa.fused_rows(ua, ub, uc, p, p.rho, dtype).reshape(out_shape)

    if K % block:
        raise OperandError(f"Ks = {K} is not a multiple of the scale block size {block}")
    nsf = K // block
    SA = raw_bits(scale_a, scale_type, "scale_a") if scale_a is not None else None
    SB = raw_bits(scale_b, scale_type, "scale_b") if scale_b is not None else None
    if SA is None or SA.shape != lead + (M, nsf):
        raise OperandError(f"scale_a must be {lead + (M, nsf)} (..., M, Ks/block) for Ks = {K}, "
                           f"block = {block}; got {None if SA is None else SA.shape}")
    if SB is None or SB.shape != lead + (nsf, N):
        raise OperandError(f"scale_b must be {lead + (nsf, N)} (..., Ks/block, N) for Ks = {K}, "
                           f"block = {block}; got {None if SB is None else SB.shape}")
    SB_rows = np.broadcast_to(SB[..., None, :, :], lead + (M, nsf, N)).reshape(R, nsf, N)
    usa, usb = unpack(SA.reshape(R, nsf), scale_type), unpack(SB_rows, scale_type)
    if p.model == "grouped":
        if K % p.G:
            raise OperandError(f"Ks = {K} is not a multiple of the group size {p.G}")
        return fdpa.grouped_rows(ua, ub, uc, usa, usb, block, p, p.rho).reshape(out_shape)
    ua = _fold_scale(ua, usa, block, axis=1)
    ub = _fold_scale(ub, usb, block, axis=1)
    return fdpa.fused_rows(ua, ub, uc, p, p.rho, dtype).reshape(out_shape)
