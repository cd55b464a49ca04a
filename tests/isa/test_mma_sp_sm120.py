"""sm_120a-only mma.sp forms (no hardware here) against MMA-Sim's RTX Blackwell dense models.

MMA-Sim has no sparse model. The H200 measurements (docs/mma-sp.md) show that a sparse MMA is,
per row m, the dense fused dot product over the K/2 stored elements of A's row m with the rows of
B the metadata selects. Under that (documented) hypothesis the sm_120 sparse forms are MMA-Sim's
dense mma of half the K: m16n8k64 kind::f8f6f4 -> m16n8k32.kind::f8f6f4, mxf8f6f4 1X ->
m16n8k32 block32, mxf4 2X / mxf4nvf4 -> m16n8k64 block32 / block16. Each row is computed by
MMA-Sim on its own gathered B. Scale registers are filled per 9.7.14.3 and CuTe's SM120
SFALayout / SFBLayout (thread-id-a pair: first lane row g, second row g+8; lane 4g+thread-id-b
holds column g).
"""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.isa import mma_sp as sp

torch = pytest.importorskip("torch")
mmasim = pytest.importorskip("mmasim.nv_ptx.sim")
numerics = pytest.importorskip("ptxsim.numerics")
if not hasattr(numerics, "mma"):
    pytest.skip("ptxsim.numerics.mma not merged yet", allow_module_level=True)

RNG = np.random.default_rng(120)
# finite raw-bit generators per element type (sign | exponent | mantissa, NaN avoided)
WIDTH = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}


def elements(t, shape):
    bits = RNG.integers(0, 1 << WIDTH[t], shape)
    if t == "e4m3":
        bits = np.where((bits & 0x7F) == 0x7F, bits - 1, bits)          # S.1111.111 is NaN
    if t == "e5m2":
        bits = np.where((bits & 0x7C) == 0x7C, bits & 0x83, bits)      # no Inf/NaN
    return bits.astype(np.uint32)


def container(t, bits):
    """9.7.14.6.3: e2m1 in bits [5:2] of its byte, e3m2 / e2m3 in [5:0]."""
    return bits << 2 if t == "e2m1" else bits


def ordered_metadata(form, warps):
    group = 4 if form.pattern == "2:4" else 8
    slots = np.sort(np.argsort(RNG.random((warps, 16, form.k // group, 4)), -1)[..., :2], -1)
    return slots.reshape(warps, 16, -1).astype(np.uint32)


def gathered_b(form, idx, B):
    """(W, 16, K/2, 8): B rows the metadata selects for every stored element of every row."""
    u = np.arange(idx.shape[-1])
    if form.pattern == "2:4":
        cols = 4 * (u // 2) + idx.astype(np.int64)
    else:
        pair = 8 * (u // 2) + 2 * idx.astype(np.int64)
        cols = (pair[..., None] + np.arange(2)).reshape(idx.shape[:-1] + (-1,))
    return np.take_along_axis(B[:, None], cols[..., None], axis=2)


def to_torch(bits, t):
    if t == "f32":
        return torch.from_numpy(bits.astype(np.uint32).view(np.int32)).view(torch.float32)
    if t == "f16":
        return torch.from_numpy(bits.astype(np.uint16).view(np.int16)).view(torch.float16)
    if t in ("e3m2", "e2m3", "e2m1"):
        return torch.from_numpy(container(t, bits).astype(np.uint8))
    dt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "ue8m0": torch.float8_e8m0fnu,
          "ue4m3": torch.float8_e4m3fn}[t]
    return torch.from_numpy(bits.astype(np.uint8)).view(dt)


def from_torch(t):
    if t.dtype == torch.float16:
        return t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    return t.view(torch.int32).numpy().view(np.uint32)


def pack_fp4(bits, axis):
    """MMA-Sim's packed fp4: element 2i in the HIGH nibble (mmasim/arithmetic/helper.py)."""
    even = np.take(bits, np.arange(0, bits.shape[axis], 2), axis=axis)
    odd = np.take(bits, np.arange(1, bits.shape[axis], 2), axis=axis)
    return torch.from_numpy(((even << 4) | odd).astype(np.uint8))


F8F6F4 = [(a, b, d) for a, b, d in [("e4m3", "e5m2", "f32"), ("e3m2", "e2m1", "f32"),
                                    ("e2m3", "e4m3", "f16"), ("e2m1", "e2m1", "f16"),
                                    ("e5m2", "e3m2", "f32")]]


@pytest.mark.parametrize("atype,btype,dtype", F8F6F4)
def test_kind_f8f6f4_equals_mmasim_per_row(atype, btype, dtype):
    form = sp.MmaSpForm(64, dtype, atype, btype, dtype, ordered=True, kind="f8f6f4")
    W = 1
    stored = elements(atype, (W, 16, 32))
    B = elements(btype, (W, 64, 8))
    cbits = 16 if dtype == "f16" else 32
    C = (RNG.integers(0, 0x3C00, (W, 16, 8)) if cbits == 16 else
         (RNG.random((W, 16, 8)).astype(np.float32) * 4 - 2).view(np.uint32)).astype(np.uint32)
    idx = ordered_metadata(form, W)
    a = form.a.pack(container(atype, stored))
    b = form.b.pack(container(btype, B))
    d = sp.mma_sp(form, a, b, form.c.pack(C), form.metadata.pack(idx, 0), 0, target="sm_120a")
    got = form.d.unpack(d)
    op = mmasim.MMA("RTX Blackwell", f"m16n8k32.kind::f8f6f4.{dtype}.{atype}.{btype}.{dtype}")
    bsel = gathered_b(form, idx, B)
    for w in range(W):
        for m in range(16):
            ref = from_torch(op(to_torch(stored[w], atype), to_torch(bsel[w, m], btype),
                                to_torch(C[w], dtype)))
            assert np.array_equal(got[w, m], ref[m]), (w, m)


SCALED = [  # (kind, scale_vec, stype, a, b, mmasim shape_and_type, packed fp4)
    ("mxf8f6f4", "1X", "ue8m0", "e4m3", "e2m1",
     "m16n8k32.kind::mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0", False),
    ("mxf8f6f4", "1X", "ue8m0", "e3m2", "e2m3",
     "m16n8k32.kind::mxf8f6f4.block32.f32.e3m2.e2m3.f32.ue8m0", False),
    ("mxf4", "2X", "ue8m0", "e2m1", "e2m1", "m16n8k64.kind::mxf4.block32.f32.e2m1.e2m1.f32.ue8m0",
     True),
    ("mxf4nvf4", "2X", "ue8m0", "e2m1", "e2m1",
     "m16n8k64.kind::mxf4nvf4.block32.f32.e2m1.e2m1.f32.ue8m0", True),
    ("mxf4nvf4", "4X", "ue4m3", "e2m1", "e2m1",
     "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3", True),
    ("mxf4nvf4", "4X", "ue8m0", "e2m1", "e2m1",
     "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue8m0", True),
]


def scale_registers(sfa, sfb, byte_a, thread_a, byte_b, thread_b):
    """scale_A (W,16,n) / scale_B (W,n,8) bytes -> scale-a-data / scale-b-data (W,32), other
    lanes and bytes random (they must not matter)."""
    W, _, n = sfa.shape
    ra = RNG.integers(0, 2**32, (W, 32), dtype=np.uint64).astype(np.uint32)
    rb = RNG.integers(0, 2**32, (W, 32), dtype=np.uint64).astype(np.uint32)
    for g in range(8):
        for half in range(2):
            lane = 4 * g + 2 * thread_a + half
            for j in range(n):
                sh = 8 * (byte_a + j)
                ra[:, lane] = (ra[:, lane] & ~np.uint32(0xFF << sh)) | (sfa[:, g + 8 * half, j] << sh)
        lane = 4 * g + thread_b
        for j in range(n):
            sh = 8 * (byte_b + j)
            rb[:, lane] = (rb[:, lane] & ~np.uint32(0xFF << sh)) | (sfb[:, j, g] << sh)
    return ra, rb


@pytest.mark.parametrize("case", SCALED, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in SCALED])
def test_block_scaled_equals_mmasim_per_row(case):
    kind, vec, stype, atype, btype, mmasim_form, packed = case
    k = 64 if kind == "mxf8f6f4" else 128
    form = sp.MmaSpForm(k, "f32", atype, btype, "f32", ordered=True, kind=kind, stype=stype,
                        scale_vec=vec)
    n = form.scale_count
    W = 1
    stored = elements(atype, (W, 16, k // 2))
    B = elements(btype, (W, k, 8))
    C = (RNG.random((W, 16, 8)).astype(np.float32) - 0.5).view(np.uint32)
    idx = ordered_metadata(form, W)
    lo, hi = (118, 136) if stype == "ue8m0" else (0x30, 0x40)        # scales near 1
    sfa = RNG.integers(lo, hi, (W, 16, n)).astype(np.uint32)
    sfb = RNG.integers(lo, hi, (W, n, 8)).astype(np.uint32)
    sel = {1: (3, 1, 2, 3), 2: (2, 0, 0, 2), 4: (0, 1, 0, 1)}[n]      # legal per Table 37
    ra, rb = scale_registers(sfa, sfb, *sel)
    to_reg = (lambda t, x: x) if packed else container
    a = form.a.pack(to_reg(atype, stored))
    b = form.b.pack(to_reg(btype, B))
    d = sp.mma_sp(form, a, b, form.c.pack(C), form.metadata.pack(idx, 0), 0, target="sm_120a",
                  scale=(ra, rb) + sel)
    got = form.d.unpack(d)
    op = mmasim.MMABlockScale("RTX Blackwell", mmasim_form)
    bsel = gathered_b(form, idx, B)
    for w in range(W):
        A_t = pack_fp4(stored[w], 1) if packed else to_torch(stored[w], atype)
        for m in range(16):
            B_t = pack_fp4(bsel[w, m], 0) if packed else to_torch(bsel[w, m], btype)
            ref = from_torch(op(A_t, B_t, to_torch(C[w], "f32"), to_torch(sfa[w], stype),
                                to_torch(sfb[w], stype)))
            assert np.array_equal(got[w, m], ref[m]), (w, m)
