"""CuTe DSL Blackwell kernels (nvidia-cutlass-dsl 4.8.1 compiling NVIDIA's own examples,
tests/data/ptx/cute, scripts/gen_cute_ptx.py) run by the executor, against ptxsim.numerics
stepped over the same logical matrices."""
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap
from ptxsim.numerics import mma
from ptxsim.ptx import parse_module

DATA = Path(__file__).parents[1] / "data" / "ptx" / "cute"


@pytest.mark.parametrize("name,cluster,b_rows,obj", [("cute_dense_gemm_f16_1cta", 1, 128, 32),
                                                      ("cute_dense_gemm_f16_2cta", 2, 64, 64)])
def test_cute_dense_gemm(name, cluster, b_rows, obj):
    # DenseGemmKernel(f32 accumulator, use_2cta, tiler (128|256, 128), cluster, TMA store), f16
    # K-major A (M, K) and B (N, K), C (M, N) f16. Parameter 0 is the TiledMMA's runtime state
    # (accumulate flag, negate bits, disable-output-lane mask): all zero. Tensor maps as CuTe's
    # host code builds them: A box 64 x 128 rows, B box 64 x 128 rows (1-CTA) or 64 rows per CTA
    # (2-CTA: each CTA holds half of B's N), SWIZZLE_128B; C epilogue box 32 x 128, SWIZZLE_64B.
    M, N, K = 256, 256, 128
    rng = np.random.default_rng(cluster)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    au, bu, cu = a.view(np.uint16), b.view(np.uint16), c.view(np.uint16)
    ta = TensorMap.for_array(au, (64, 128), swizzle="128B", dtype="float16")
    tb = TensorMap.for_array(bu, (64, b_rows), swizzle="128B", dtype="float16")
    tc = TensorMap.for_array(cu, (32, 128), swizzle="64B", dtype="float16")
    m = parse_module((DATA / f"{name}.ptx").read_text())
    run = launch(m, m.entries[0].name, (M // 128, N // 128, 1), 128, cluster=(cluster, 1, 1),
                 args=[bytes(obj), ta, tb, tc], dynamic_shared=227 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, 16):                     # kind::f16 MMAs of K = 16, C starts at +0
        d = mma(au[:, k:k + 16], bu.T[k:k + 16], d, arch="sm_100", kind="f16", atype="f16",
                btype="f16", ctype="f32", dtype="f32")
    # epilogue cvt.rn.f16x2.f32 == numpy's round-to-nearest-even float32 -> float16
    want = d.view(np.float32).astype(np.float16).view(np.uint16)
    assert np.array_equal(cu, want)


def fastdivmod(d: int) -> bytes:
    """CuTe's FastDivmod parameter struct (12 bytes: divisor, multiplier, shift1, shift2), as the
    kernels use it: q = (((x - hi(x*m)) >> s1) + hi(x*m)) >> s2 (Granlund-Montgomery, the
    round-up multiplier; the PTX shows exactly this sequence: mul.hi, sub, shr, add, shr)."""
    import struct
    length = (d - 1).bit_length()
    m = ((1 << 32) * ((1 << length) - d)) // d + 1
    return struct.pack("<IIBBxx", d, m & 0xFFFFFFFF, min(length, 1), max(length - 1, 0))


def test_fastdivmod_helper_divides():
    x = np.arange(0, 5000, dtype=np.uint64)
    for d in (1, 2, 3, 4, 7, 148):
        _, m, s1, s2 = __import__("struct").unpack("<IIBBxx", fastdivmod(d))
        hi = (x * np.uint64(m)) >> np.uint64(32)
        q = (((x - hi) >> np.uint64(s1)) + hi) >> np.uint64(s2)
        assert np.array_equal(q, x // d)


@pytest.mark.parametrize("name,cluster,dt,kind,kstep,a_box,b_box,obj", [
    ("cute_persistent_gemm_fp8_1cta", 1, "e4m3", "f8f6f4", 32, (128, 128), (128, 256), 32),
    ("cute_persistent_gemm_bf16_2cta", 2, "bf16", "f16", 16, (64, 128), (64, 128), 64)])
def test_cute_persistent_gemm(name, cluster, dt, kind, kstep, a_box, b_box, obj):
    # PersistentDenseGemmKernel: 192 threads (TMA, MMA and 4 epilogue warps), static problem
    # 512 x 256 x 512 (the fake tensors it was compiled for), bf16 C. Tiles 128 x 256 (fp8) or
    # 256 x 256 per 2-CTA cluster (bf16): 4 resp. 2 tiles, run by 2 persistent CTAs / clusters
    # (grid z = 2), so each loops over two tiles. Parameters 4..7: FastDivmod of the tile counts
    # along M and N (then cluster shape, unused here).
    import ml_dtypes
    M, N, K = 512, 256, 512
    rng = np.random.default_rng(5)
    np_dt = ml_dtypes.float8_e4m3fn if dt == "e4m3" else ml_dtypes.bfloat16
    bits = np.uint8 if dt == "e4m3" else np.uint16
    a = rng.standard_normal((M, K)).astype(np_dt).view(bits)
    b = rng.standard_normal((N, K)).astype(np_dt).view(bits)
    c = np.zeros((M, N), np.uint16)
    tdt = "uint8" if dt == "e4m3" else "bfloat16"
    ta = TensorMap.for_array(a, a_box, swizzle="128B", dtype=tdt)
    tb = TensorMap.for_array(b, b_box, swizzle="128B", dtype=tdt)
    tc = TensorMap.for_array(c, (32, 128), swizzle="64B", dtype="bfloat16")
    tile_m = 128 * cluster
    m = parse_module((DATA / f"{name}.ptx").read_text())
    run = launch(m, m.entries[0].name, (cluster, 1, 2), 192, cluster=(cluster, 1, 1),
                 args=[bytes(obj), ta, tb, tc, fastdivmod(M // tile_m), fastdivmod(N // 256),
                       fastdivmod(1), fastdivmod(1)], dynamic_shared=227 * 1024)
    assert not run.findings, run.findings     # the sanitizer: clean
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, kstep):
        d = mma(a[:, k:k + kstep], b.T[k:k + kstep], d, arch="sm_100", kind=kind, atype=dt,
                btype=dt, ctype="f32", dtype="f32")
    want = d.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(c, want)


def _sf_atoms(s):
    """(MN, K/32) ue8m0 scales -> CuTe's scale-factor atoms (tile_atom_to_shape_SF, K-major):
    512-byte atoms of 128 rows x 4 scales, byte 16*(m%32) + 4*((m/32)%4) + k%4 (FACTS section
    4; CUTLASS create_and_reorder_scale_factor_tensor), K atoms contiguous, then M tiles."""
    mn, sk = s.shape
    out = np.zeros((mn // 128, sk // 4, 512), np.uint8)
    m, k = np.arange(mn)[:, None], np.arange(sk)[None, :]
    out[m // 128, k // 4, 16 * (m % 32) + 4 * ((m // 32) % 4) + k % 4] = s
    return out


def test_cute_blockscaled_persistent_mxf8_gemm():
    # Sm100BlockScaledPersistentDenseGemmKernel(sf_vec 32, tiler 128x128, cluster 1x1), e4m3 A/B
    # K-major, ue8m0 scales, f16 C. Parameters: TiledMMA states (12 bytes each, zero), then per
    # TMA tensor its CUtensorMap and its (dim0, dim1, dim2) u32 shape, tile counts (M/128, N/128,
    # L), FastDivmods of the tile counts, cluster shape. The scale-factor maps copy one 512-byte
    # atom per (M tile, K tile) (expect-tx 33792 = 2 x 16384 + 2 x 512 in the PTX); they are
    # expressed here as 64 x u64 boxes over the atom array.
    import struct

    import ml_dtypes
    M, N, K = 256, 256, 256
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    sa = rng.integers(118, 129, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(118, 129, (N, K // 32)).astype(np.uint8)
    SA, SB = _sf_atoms(sa), _sf_atoms(sb)
    c = np.zeros((M, N), np.uint16)
    tri = lambda x, y, z: struct.pack("<III", x, y, z)  # noqa: E731
    ta = TensorMap.encode_tiled("uint8", 3, a, (K, M, 1), (K, M * K), (128, 128, 1),
                                swizzle="128B")
    tb = TensorMap.encode_tiled("uint8", 3, b, (K, N, 1), (K, N * K), (128, 128, 1),
                                swizzle="128B")

    def sfmap(S):
        rm, rk, _ = S.shape
        return TensorMap.encode_tiled("uint64", 4, S, (64, rm, rk, 1),
                                      (512 * rk, 512, 512 * rk * rm), (64, 1, 1, 1))
    tc = TensorMap.encode_tiled("float16", 3, c, (N, M, 1), (N * 2, M * N * 2), (32, 128, 1),
                                swizzle="64B")
    m = parse_module((DATA / "cute_blockscaled_mxf8_1cta.ptx").read_text())
    run = launch(m, m.entries[0].name, (1, 1, 2), 192, dynamic_shared=227 * 1024,
                 args=[bytes(12), bytes(12), ta, tri(M, K, 1), tb, tri(N, K, 1), sfmap(SA),
                       tri(M, K, 1), sfmap(SB), tri(N, K, 1), tc, tri(M, N, 1), M // 128,
                       N // 128, 1, fastdivmod(M // 128), fastdivmod(N // 128), 1, 1, 1,
                       fastdivmod(1), fastdivmod(1)])
    assert not run.findings, run.findings     # the sanitizer: clean
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, 32):
        d = mma(a[:, k:k + 32], b.T[k:k + 32], d, arch="sm_100", kind="mxf8f6f4", atype="e4m3",
                btype="e4m3", ctype="f32", dtype="f32", scale_a=sa[:, k // 32:k // 32 + 1],
                scale_b=sb.T[k // 32:k // 32 + 1], scale_type="ue8m0", block=32)
    want = d.view(np.float32).astype(np.float16)
    assert np.isfinite(want).all()
    assert np.array_equal(c, want.view(np.uint16))


@pytest.mark.parametrize("name,vec,sf,kind,n_tile", [
    ("cute_blockscaled_nvf4_2cta", 16, "ue4m3", "mxf4nvf4", 256),
    ("cute_blockscaled_mxf4_2cta", 32, "ue8m0", "mxf4", 128)])
def test_cute_blockscaled_persistent_fp4_2cta(name, vec, sf, kind, n_tile):
    # Sm100BlockScaledPersistentDenseGemmKernel, e2m1 A/B (packed two per byte along K, element
    # 2i in the low nibble), cluster 2x1, .cta_group::2, tiles 256 x n_tile per cluster. A/B tensor
    # maps use CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B (coordinates in 4-bit elements: the PTX steps
    # K by 256 per 128-byte row); each CTA loads 128 rows of A and n_tile/2 rows of B. Scale
    # factors: SFA box = the row's K atoms of one k-tile (256 / vec / 4), SFB multicast to both
    # CTAs, each CTA one N atom (nvf4: the k-tile's K atoms) or one K atom (mxf4), offset by its
    # rank. (A box of both N atoms for nvf4 overlapped the two CTAs' copies and spilled a zero-
    # filled atom into the next stage's buffer: found by the sanitizer, docs/sanitizer.md.)
    # Tile counts: P12 = M / 128 (CTA tiles), P13 = N / n_tile; FastDivmods of the cluster
    # tiles M / 256 and N / n_tile.
    import struct
    M, N, K = 512, 256, 512
    rng = np.random.default_rng(vec)
    A = rng.integers(0, 16, (M, K)).astype(np.uint8)          # every e2m1 code
    B = rng.integers(0, 16, (N, K)).astype(np.uint8)
    pack = lambda x: (x[:, 0::2] | (x[:, 1::2] << 4)).astype(np.uint8)  # noqa: E731
    lo, hi = (0x30, 0x40) if sf == "ue4m3" else (120, 132)
    sa = rng.integers(lo, hi, (M, K // vec)).astype(np.uint8)
    sb = rng.integers(lo, hi, (N, K // vec)).astype(np.uint8)
    SA, SB = _sf_atoms(sa), _sf_atoms(sb)
    c = np.zeros((M, N), np.uint16)
    tri = lambda x, y, z: struct.pack("<III", x, y, z)  # noqa: E731
    ta = TensorMap.encode_tiled("16u4_align8b", 3, pack(A), (K, M, 1), (K // 2, M * K // 2),
                                (256, 128, 1), swizzle="128B")
    tb = TensorMap.encode_tiled("16u4_align8b", 3, pack(B), (K, N, 1), (K // 2, N * K // 2),
                                (256, n_tile // 2, 1), swizzle="128B")
    k_atoms = 256 // vec // 4

    def sfmap(S, box):          # atoms indexed (K atom, MN atom), one 512-byte atom = 64 x u64
        rm, rk, _ = S.shape
        return TensorMap.encode_tiled("uint64", 4, S, (64, rk, rm, 1),
                                      (512, 512 * rk, 512 * rk * rm), (64,) + box + (1,))
    tsa = sfmap(SA, (k_atoms, 1))
    tsb = sfmap(SB, (k_atoms, 1) if kind == "mxf4nvf4" else (1, 1))
    tc = TensorMap.encode_tiled("float16", 3, c, (N, M, 1), (N * 2, M * N * 2), (32, 128, 1),
                                swizzle="64B")
    m = parse_module((DATA / f"{name}.ptx").read_text())
    run = launch(m, m.entries[0].name, (2, 1, 2), 192, cluster=(2, 1, 1), dynamic_shared=227 * 1024,
                 args=[bytes(12), bytes(12), ta, tri(M, K, 1), tb, tri(N, K, 1), tsa, tri(M, K, 1),
                       tsb, tri(N, K, 1), tc, tri(M, N, 1), M // 128, N // n_tile, 1,
                       fastdivmod(M // 256), fastdivmod(N // n_tile), 1, 1, 1, fastdivmod(1),
                       fastdivmod(1)])
    assert not run.findings, run.findings     # the sanitizer: clean
    d = np.zeros((M, N), np.uint32)
    for k in range(0, K, 64):                  # K = 64 per fp4 MMA
        d = mma(A[:, k:k + 64], B.T[k:k + 64], d, arch="sm_100", kind=kind, atype="e2m1",
                btype="e2m1", ctype="f32", dtype="f32", scale_a=sa[:, k // vec:(k + 64) // vec],
                scale_b=sb.T[k // vec:(k + 64) // vec], scale_type=sf, block=vec)
    want = d.view(np.float32).astype(np.float16)
    assert np.isfinite(want).all()
    assert np.array_equal(c, want.view(np.uint16))
