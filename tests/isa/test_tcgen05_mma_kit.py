"""Helpers for the tcgen05.mma tests: build a CTA the way a kernel would (operands written into
shared memory with the layout functions, descriptors encoded, metadata and scale factors placed
in Tensor Memory) and the independent reference (numerics.mma on the logical matrices, or
MMA-Sim). No tests here."""
from __future__ import annotations

import numpy as np
import pytest

descriptors = pytest.importorskip("ptxsim.isa.descriptors", reason="needs branch desc")
smem_layout = pytest.importorskip("ptxsim.isa.smem_layout", reason="needs branch desc")
pytest.importorskip("ptxsim.numerics.params", reason="needs branch numerics")
import ptxsim.numerics as numerics  # noqa: E402  (numerics.mma: the engine's entry point)

from ptxsim.isa.cta import CtaPairState, CtaState  # noqa: E402
from ptxsim.isa.tmem import tmem_address  # noqa: E402
from ptxsim.isa.tmem_ldst import tcgen05_ld  # noqa: E402
from ptxsim.types.formats import get_format  # noqa: E402

InstrDescriptor = descriptors.InstrDescriptor
SmemDescriptor = descriptors.SmemDescriptor
ARCH = "sm_100"


def gen_bits(rng, fmt: str, shape, zero_frac: float = 0.1) -> np.ndarray:
    """Random finite raw bits of `fmt` with varied exponents (no NaN / Inf)."""
    f = get_format(fmt)
    if f.kind != "float":
        return rng.integers(0, 1 << f.bits, shape).astype(np.uint8 if f.bits <= 8 else np.uint32)
    eb, mb = f.ebits, f.mbits
    emax_field = (1 << eb) - 1
    top = emax_field - 1 if f.nan == "ieee" else emax_field
    e = np.clip(f.bias + rng.integers(-4, 4, shape), 0, top)
    m = rng.integers(0, 1 << mb, shape) if mb else np.zeros(shape, np.int64)
    if f.nan == "all_ones":
        m = np.where((e == emax_field) & (m == (1 << mb) - 1), m - 1, m)
    s = rng.integers(0, 2, shape) if f.signed else 0
    bits = (s << (eb + mb)) | (e << mb) | m
    bits = np.where(rng.random(shape) < zero_frac, 0, bits)
    if fmt == "tf32":
        bits = bits << 13
    return bits.astype(np.uint32 if f.storage_bits > 16 else
                       np.uint16 if f.storage_bits > 8 else np.uint8)


def stage(smem: np.ndarray, matrix: np.ndarray, fmt: str, kind: str, start: int,
          major: str = "K", swizzle: str = "128B") -> SmemDescriptor:
    """Write (rows, cols) element bits at `start` in a canonical layout; return its descriptor."""
    rows, cols = matrix.shape
    d = smem_layout.canonical_descriptor(fmt, rows, cols, major, swizzle, start=start, kind=kind)
    smem_layout.matrix_to_smem(matrix, smem, d, fmt, major, kind=kind)
    return d


def k_step_bytes(fmt: str, kind: str, k: int) -> int:
    """Bytes of one row that k elements of `fmt` take in shared memory (K-major)."""
    p = smem_layout.smem_packing(fmt, kind)
    return k * p.layout_bits // 8


def read_d(cta: CtaState, d_tmem: int, M: int, N: int, f16: bool = False) -> np.ndarray:
    """tcgen05.ld .32x32b.x{N} by the four warps of a warpgroup (layout D: lane m, column n)."""
    lane0, col0 = d_tmem >> 16, d_tmem & 0xFFFF
    parts, c = [], 0
    while c < N:                        # .x1 ... .x128, powers of two (Table 47)
        num = 1 << min(7, (N - c).bit_length() - 1)
        taddr = np.array([tmem_address(lane0 + 32 * w, col0 + c) for w in range(4)])
        parts.append(tcgen05_ld(cta.tmem, "32x32b", num, taddr, warp_ids=np.arange(4)))
        c += num
    d = np.concatenate(parts, axis=1)[:M]
    return (d & 0xFFFF).astype(np.uint16) if f16 else d


def ref_steps(a_steps, b_steps, c0, **kw) -> np.ndarray:
    """numerics.mma over K steps in order, D of one step the C of the next."""
    d = c0
    for a, b in zip(a_steps, b_steps):
        d = numerics.mma(a, b, d, arch=ARCH, **kw)
    return d


def new_cta(ncols: int = 512, smem_bytes: int = 64 * 1024) -> tuple[CtaState, int]:
    cta = CtaState.new(smem_bytes)
    base = cta.tmem.alloc(ncols)
    return cta, base


def new_pair(ncols: int = 512, smem_bytes: int = 64 * 1024) -> tuple[CtaPairState, int]:
    pair = CtaPairState.new(smem_bytes)
    base = pair.tmem_pair.alloc(ncols)
    return pair, base
