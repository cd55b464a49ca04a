"""The sm_120a dense mma.sync forms (no hardware here) against MMA-Sim's RTX Blackwell models:
every .kind::f8f6f4 pair (m16n8k32, and m16n8k16 as MMA-Sim's k32 with the upper 16 K zero --
one fused block of 32 either way), every block-scaled kind / scale vector / scale type with
selectors across Table 37, fp8 without a kind, and f16 / bf16 / tf32. The same matrices go to
both: ptxsim through the registers (fragments, 8-bit containers, packed fp4, scale selectors),
MMA-Sim on the logical matrices."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.isa import mma_sync as ms

torch = pytest.importorskip("torch")
mmasim = pytest.importorskip("mmasim.nv_ptx.sim")
from test_mma_sp_sm120 import (container, elements, from_torch, pack_fp4,  # noqa: E402
                               scale_registers, to_torch)

RNG = np.random.default_rng(121)
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
WIDTH = {"f16": 16, "bf16": 16, "tf32": 32}


def accum(dtype, shape):
    if dtype == "f16":
        return RNG.integers(0, 0x3C00, shape).astype(np.uint32) | (RNG.integers(0, 2, shape) << 15).astype(np.uint32)
    return (RNG.random(shape).astype(np.float32) * 4 - 2).view(np.uint32)


def floats(t, shape):
    if t == "tf32":
        return (RNG.random(shape).astype(np.float32) * 4 - 2).view(np.uint32)
    v = (RNG.random(shape) * 4 - 2).astype(np.float32)
    if t == "f16":
        return v.astype(np.float16).view(np.uint16).astype(np.uint32)
    return (v.view(np.uint32) >> 16).astype(np.uint32)                  # bf16, truncated


def torch_of(bits, t):
    if t in ("f16", "f32") or t in F8F6F4:
        return to_torch(bits, t)
    if t == "bf16":
        return torch.from_numpy(bits.astype(np.uint16).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(bits.astype(np.uint32).view(np.int32)).view(torch.float32)  # tf32


def run(form, A, B, C, scale=None, pad_k=0):
    """ptxsim through the registers, and MMA-Sim; returns (ours, reference) D bits."""
    fp4 = form.kind in ("mxf4", "mxf4nvf4")
    reg = (lambda t, x: x) if fp4 or form.kind is None else container
    d = ms.mma_sync(form, form.a.pack(reg(form.atype, A)), form.b.pack(reg(form.btype, B)),
                    form.c.pack(C), target="sm_120a", scale=scale)
    return form.d.unpack(d), A, B


@pytest.mark.parametrize("a", F8F6F4)
@pytest.mark.parametrize("b", F8F6F4)
@pytest.mark.parametrize("k,dtype", [(32, "f32"), (32, "f16"), (16, "f32")])
def test_kind_f8f6f4(a, b, k, dtype):
    form = ms.MmaForm(16, 8, k, dtype, a, b, dtype, kind="f8f6f4")
    A, B, C = elements(a, (2, 16, k)), elements(b, (2, k, 8)), accum(dtype, (2, 16, 8))
    got, _, _ = run(form, A, B, C)
    op = mmasim.MMA("RTX Blackwell", f"m16n8k32.kind::f8f6f4.{dtype}.{a}.{b}.{dtype}")
    pad = lambda x, ax: np.concatenate([x, np.zeros_like(x)], axis=ax) if k == 16 else x
    for w in range(2):
        ref = from_torch(op(to_torch(pad(A[w], 1), a), to_torch(pad(B[w], 0), b),
                            to_torch(C[w], dtype)))
        assert np.array_equal(got[w], ref), w


SCALED = [  # kind, scale_vec, stype, mmasim name, selectors (byte-a, thread-a, byte-b, thread-b)
    ("mxf8f6f4", "1X", "ue8m0", "m16n8k32.kind::mxf8f6f4.block32.f32.{a}.{b}.f32.ue8m0", (2, 1, 3, 2)),
    ("mxf4", "2X", "ue8m0", "m16n8k64.kind::mxf4.block32.f32.e2m1.e2m1.f32.ue8m0", (2, 0, 0, 3)),
    ("mxf4nvf4", "2X", "ue8m0", "m16n8k64.kind::mxf4nvf4.block32.f32.e2m1.e2m1.f32.ue8m0", (0, 1, 2, 1)),
    ("mxf4nvf4", "4X", "ue4m3", "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3", (0, 0, 0, 2)),
    ("mxf4nvf4", "4X", "ue8m0", "m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue8m0", (0, 1, 0, 3)),
]


CASES = [(c, pair) for c in SCALED for pair in
         ([("e4m3", "e2m1"), ("e3m2", "e5m2"), ("e2m1", "e2m1"), ("e2m3", "e4m3")]
          if c[0] == "mxf8f6f4" else [("e2m1", "e2m1")])]


@pytest.mark.parametrize("case,pair", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{a}-{b}"
                                                  for c, (a, b) in CASES])
def test_block_scaled(case, pair):
    kind, vec, stype, name, sel = case
    a, b = pair
    k = 32 if kind == "mxf8f6f4" else 64
    form = ms.MmaForm(16, 8, k, "f32", a, b, "f32", kind=kind, block_scale=True, stype=stype,
                      scale_vec=vec)
    n = form.scale_count
    A, B, C = elements(a, (1, 16, k)), elements(b, (1, k, 8)), accum("f32", (1, 16, 8))
    lo, hi = (118, 136) if stype == "ue8m0" else (0x30, 0x40)
    sfa = RNG.integers(lo, hi, (1, 16, n)).astype(np.uint32)
    sfb = RNG.integers(lo, hi, (1, n, 8)).astype(np.uint32)
    ra, rb = scale_registers(sfa, sfb, *sel)
    got, _, _ = run(form, A, B, C, scale=(ra, rb) + sel)
    op = mmasim.MMABlockScale("RTX Blackwell", name.format(a=a, b=b))
    fp4 = kind != "mxf8f6f4"
    A_t = pack_fp4(A[0], 1) if fp4 else to_torch(A[0], a)
    B_t = pack_fp4(B[0], 0) if fp4 else to_torch(B[0], b)
    ref = from_torch(op(A_t, B_t, to_torch(C[0], "f32"), to_torch(sfa[0], stype),
                        to_torch(sfb[0], stype)))
    assert np.array_equal(got[0], ref)


@pytest.mark.parametrize("shape,a,b,dtype", [
    ((16, 8, 32), "e4m3", "e5m2", "f32"), ((16, 8, 32), "e5m2", "e5m2", "f16"),
    ((16, 8, 16), "e4m3", "e4m3", "f32"), ((16, 8, 16), "e5m2", "e4m3", "f16"),
    ((16, 8, 16), "f16", "f16", "f32"), ((16, 8, 16), "f16", "f16", "f16"),
    ((16, 8, 8), "f16", "f16", "f32"), ((16, 8, 16), "bf16", "bf16", "f32"),
    ((16, 8, 8), "bf16", "bf16", "f32"), ((16, 8, 8), "tf32", "tf32", "f32"),
    ((16, 8, 4), "tf32", "tf32", "f32")])
def test_plain_forms(shape, a, b, dtype):
    m, n, k = shape
    form = ms.MmaForm(m, n, k, dtype, a, b, dtype)
    gen = (lambda t, s: elements(t, s)) if a in F8F6F4 else floats
    A, B, C = gen(a, (2, m, k)), gen(b, (2, k, n)), accum(dtype, (2, m, n))
    got, _, _ = run(form, A, B, C)
    op = mmasim.MMA("RTX Blackwell", f"m{m}n{n}k{k}.{dtype}.{a}.{b}.{dtype}")
    for w in range(2):
        ref = from_torch(op(torch_of(A[w], a), torch_of(B[w], b), to_torch(C[w], dtype)))
        assert np.array_equal(got[w], ref), w
