"""End to end: block-scaled mxf8f6f4 operands brought into shared memory by TMA loads of the
packed tensor-map types - B as e2m1 through 16U4_ALIGN16B (.b4x16_p64), as e2m3 / e3m2 through
16U6_ALIGN16B (.b6x16_p32), A as e4m3 through a uint8 map, all with the 128B swizzle, as Triton's
block_scaled_matmul (mixed) and CuTe DSL's blockscaled GEMM load them - and read by
tcgen05.mma .kind::mxf8f6f4 .block_scale.block32 through K-major 128B descriptors stepped along
K give the D bits of
  (1) the same MMAs on operands written into shared memory another way (the layout functions,
      smem_layout.matrix_to_smem, which place element j of a 16-byte chunk at bit j * bits),
  (2) ptxsim.numerics on the logical matrices, step by step,
  (3) MMA-Sim (an independent model validated by its authors on a B200), step by step.
The global bytes are packed here from the element values (element x of a row at bits
[b*x, b*x + b), little endian; PTX ISA 5.5.1.1.1 "packed contiguously in the global memory")."""
from __future__ import annotations

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, read_d, ref_steps, stage

from ptxsim.isa.smem_layout import canonical_descriptor
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, tcgen05_mma
from ptxsim.isa.tmem import tmem_address
from ptxsim.isa.tmem_cp import tcgen05_cp
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.tensormap import TensorMap, tma_load_tile

KIND, K_STEP = "mxf8f6f4", 32
MAP = {"e2m1": ("16u4_align16b", 4), "e2m3": ("16u6_align16b", 6), "e3m2": ("16u6_align16b", 6)}


def packed_rows(bits_matrix: np.ndarray, bits: int) -> np.ndarray:
    rows = []
    for row in bits_matrix:
        word = sum(int(v) << (bits * x) for x, v in enumerate(row))
        rows.append(list(word.to_bytes(len(row) * bits // 8, "little")))
    return np.array(rows, np.uint8)


def cp_scales(cta, col, scales):
    """tcgen05.cp.32x128b.warpx4 of the 512-byte scale atom (scale s of row i at byte
    16*(i%32) + 4*(i/32) + s; FACTS section 4)."""
    atom = np.zeros(512, np.uint8)
    i = np.arange(scales.shape[0])
    atom[16 * (i % 32) + 4 * (i // 32)] = scales[:, 0]
    tcgen05_cp(cta.tmem, "32x128b", tmem_address(0, col), atom.reshape(32, 16),
               multicast="warpx4")


def run(cta, base, a_desc, b_desc, btype, M, N, sfa, sfb):
    idesc = InstrDescriptor.make(KIND, m=M, n=N, atype="e4m3", btype=btype, dtype="f32",
                                 sparse=False, scale_type="ue8m0").encode()
    mma = Tcgen05Mma(KIND, cta_group=1, sparse=False, a_tmem=False, block_scale=True,
                     scale_vec="block32")
    for s in range(len(sfa)):
        cp_scales(cta, 256 + 8 * s, sfa[s])
        cp_scales(cta, 256 + 8 * s + 4, sfb[s])
        tcgen05_mma(cta, mma, d_tmem=base, a_desc=a_desc.advance(K_STEP * s).encode(),
                    b_desc=b_desc.advance(K_STEP * s).encode(), idesc=idesc,
                    enable_input_d=s > 0, scale_a_tmem=tmem_address(0, 256 + 8 * s),
                    scale_b_tmem=tmem_address(0, 256 + 8 * s + 4))
    return read_d(cta, base, M, N)


@pytest.mark.parametrize("btype", ["e2m1", "e2m3", "e3m2"])
def test_operands_loaded_by_packed_tma_give_the_reference_bits(btype):
    M, N, K = 128, 64, 128
    rng = np.random.default_rng({"e2m1": 1, "e2m3": 2, "e3m2": 3}[btype])
    A = gen_bits(rng, "e4m3", (M, K))
    B = gen_bits(rng, btype, (N, K))
    sfa = [rng.integers(120, 134, (M, 1)).astype(np.uint8) for _ in range(K // K_STEP)]
    sfb = [rng.integers(120, 134, (N, 1)).astype(np.uint8) for _ in range(K // K_STEP)]
    dtype, bits = MAP[btype]

    # through TMA, as the kernels do
    g = GlobalMemory()
    Bg = packed_rows(B, bits)                                     # (N, K * bits / 8)
    ta = TensorMap.encode_tiled("uint8", 2, A, (K, M), (K,), (128, M), swizzle="128B").bind(g)
    tb = TensorMap.encode_tiled(dtype, 2, Bg, (K, N), (Bg.shape[1],), (128, N),
                                swizzle="128B").bind(g)
    cta, base = new_cta()
    assert tma_load_tile(ta, (0, 0), g, cta.smem, 0) == M * K
    assert tma_load_tile(tb, (0, 0), g, cta.smem, 32768) == N * K * bits // 8
    da = canonical_descriptor("e4m3", M, K, "K", "128B", start=0, kind=KIND)
    db = canonical_descriptor(btype, N, K, "K", "128B", start=32768, kind=KIND)
    got = run(cta, base, da, db, btype, M, N, sfa, sfb)

    # (1) the same MMAs on operands written by the layout functions
    cta2, base2 = new_cta()
    da2 = stage(cta2.smem, A, "e4m3", KIND, 0)
    db2 = stage(cta2.smem, B, btype, KIND, 32768)
    np.testing.assert_array_equal(got, run(cta2, base2, da2, db2, btype, M, N, sfa, sfb))

    # (2) ptxsim.numerics on the logical matrices
    ref = np.zeros((M, N), np.uint32)
    for s in range(K // K_STEP):
        ks = slice(K_STEP * s, K_STEP * (s + 1))
        ref = ref_steps([A[:, ks]], [B[:, ks].T], ref, kind=KIND, atype="e4m3", btype=btype,
                        ctype="f32", dtype="f32", scale_a=sfa[s], scale_b=sfb[s].T,
                        scale_type="ue8m0", block=32)
    np.testing.assert_array_equal(got, ref)
    assert np.isfinite(got.view(np.float32)).all() and got.any()

    # (3) MMA-Sim, step by step (D of one step the C of the next)
    mmasim = pytest.importorskip("mmasim.nv_ptx.sim")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    op = mmasim.TCGen05MMABlockScale(
        "Blackwell", f"m{M}n{N}k{K_STEP}.kind::{KIND}.block32.f32.e4m3.{btype}.ue8m0")
    small = (lambda x: torch.from_numpy((x << 2).astype(np.uint8))) if btype == "e2m1" else \
        (lambda x: torch.from_numpy(x.astype(np.uint8)))   # MMA-Sim: e2m1 in bits [5:2]
    e8 = lambda x: torch.from_numpy(x.astype(np.uint8)).view(torch.float8_e8m0fnu)  # noqa: E731
    d = torch.zeros((M, N), dtype=torch.float32)
    for s in range(K // K_STEP):
        ks = slice(K_STEP * s, K_STEP * (s + 1))
        a = torch.from_numpy(A[:, ks].copy()).view(torch.float8_e4m3fn)
        d = op(a, small(B[:, ks].T.copy()), d, e8(sfa[s]), e8(sfb[s].T.copy()))
    np.testing.assert_array_equal(got, d.view(torch.int32).numpy().astype(np.uint32))
