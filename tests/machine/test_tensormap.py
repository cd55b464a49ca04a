"""Tensor maps and TMA copies against an independent re-derivation of the CUDA driver API's
documented semantics (cuda.h 13.0, cuTensorMapEncodeTiled), written out here element by element:

* the box holds ceil(boxDim[i] / elementStrides[i]) elements along dimension i, elementStrides[0]
  ignored without interleave ("TMA doesn't support the stride for dimension zero");
* box element (j0, j1, ...) reads global coordinate c[i] + j[i] * elementStrides[i]; outside
  [0, globalDim[i]) it is out of bounds: zero (or NaN with OOB_FILL_NAN_REQUEST_ZERO_FMA);
* in shared memory the box is dense, dimension 0 fastest; with a swizzle every row of dimension 0
  takes the whole swizzle span (measured on an H200, see test_tma_hardware.py: rows narrower
  than the span are padded);
* swizzle, from cuda.h's own example over int4 chunks of 128-byte rows:
  128B: smem[y][x] <-> smem[y][(y % 8) ^ x];  64B: (y % 4) ^ x;  32B: (y % 2) ^ x;
  128B_ATOM_32B ("swizzle 32B chunks within 128B span"): 32-byte chunk x of row y at (y % 4) ^ x;
  128B_ATOM_64B (PTX ISA 5.5.7, the 64-byte atomicity table "0 1 2 3 | 4 5 6 7 / 4 5 6 7 |
  0 1 2 3, pattern repeats"): 64-byte chunk x of row y at (y % 2) ^ x.
"""
import itertools
import math

import numpy as np
import pytest

from ptxsim.errors import IllegalInstructionError, MemoryAccessError, OperandError, \
    TensorMapError, TrapError, UndefinedBehavior, UnsupportedFeature
from ptxsim.isa.smem_layout import canonical_descriptor, smem_to_matrix
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.tensormap import (TensorMap, bulk_global_to_shared, bulk_shared_to_global,
                                      bulk_shared_to_shared, multicast_ranks, tma_load_tile,
                                      tma_store_tile)


def swizzled(addr: int, mode: str) -> int:
    """cuda.h's int4-chunk swizzle tables, as arithmetic on one byte address."""
    y, within = addr // 128, addr % 128
    if mode == "none":
        return addr
    if mode in ("128B_atom_32B", "128B_atom_64B"):
        atom = 32 if mode == "128B_atom_32B" else 64
        x, b = within // atom, within % atom
        return y * 128 + ((y % (128 // atom)) ^ x) * atom + b
    rows = {"128B": 8, "64B": 4, "32B": 2}[mode]
    x, b = within // 16, within % 16
    return y * 128 + ((y % rows) ^ x) * 16 + b


def reference_load(A, tm, coords, smem_size, dst, fill):
    """Element-by-element TMA tile load per the driver documentation (module docstring)."""
    e = A.itemsize
    es = [1] + list(tm.element_strides[1:])
    n = [math.ceil(b / s) for b, s in zip(tm.box_dim, es)]
    out = np.zeros(smem_size, np.uint8)
    span = {"none": n[0] * e, "32B": 32, "64B": 64}.get(tm.swizzle, 128)
    for p, j in enumerate(itertools.product(*[range(k) for k in reversed(n)])):
        j = j[::-1]                                    # j[0] = innermost, fastest
        c = [coords[i] + j[i] * es[i] for i in range(len(n))]
        if all(0 <= c[i] < tm.global_dim[i] for i in range(len(n))):
            val = A[tuple(reversed(c))].tobytes()
        else:
            val = fill
        for b in range(e):
            out[swizzled(dst + (p // n[0]) * span + (p % n[0]) * e + b, tm.swizzle)] = val[b]
    return out


@pytest.mark.parametrize("swizzle, inner", [("none", 32), ("32B", 16), ("64B", 32), ("128B", 64),
                                            ("128B_atom_32B", 64), ("128B_atom_64B", 64)])
def test_2d_tile_load_with_swizzle_and_oob(swizzle, inner):
    g = GlobalMemory()
    A = np.arange(40 * 72, dtype=np.uint16).reshape(40, 72)     # 40 rows x 72 columns
    tm = TensorMap.for_array(A, (inner, 16), swizzle=swizzle).bind(g, "A")
    smem = np.zeros(8192, np.uint8)
    for coords in [(8, 0), (64, 32), (-8, -4)]:                  # inside; both OOB edges
        smem[:] = 0
        n = tma_load_tile(tm, coords, g, smem, 2048)
        assert n == inner * 16 * 2                                # complete-tx = whole box
        np.testing.assert_array_equal(smem, reference_load(A, tm, coords, 8192, 2048, b"\0\0"))


def test_3d_element_strides_and_nan_fill():
    g = GlobalMemory()
    A = (np.arange(6 * 10 * 24, dtype=np.float32) + 1).reshape(6, 10, 24)
    tm = TensorMap.encode_tiled("float32", 3, A, (24, 10, 6), (96, 960), (8, 5, 3),
                                (2, 2, 3), oob_fill="nan_request_zero_fma").bind(g)
    assert tm.box_elements == (8, 3, 1)           # elementStrides[0] ignored: 8, ceil(5/2), 1
    smem = np.zeros(1024, np.uint8)
    tma_load_tile(tm, (20, 7, 4), g, smem, 128)
    nan = np.float32(np.nan).tobytes()
    ref = reference_load(A, tm, (20, 7, 4), 1024, 128, nan)
    got = smem[128:128 + tm.box_bytes].view(np.float32)
    exp = ref[128:128 + tm.box_bytes].view(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exp))
    np.testing.assert_array_equal(got[~np.isnan(got)], exp[~np.isnan(exp)])
    assert np.isnan(got).sum() == 8 * 3 - 4 * 2    # columns 24.. and row 11 are outside


@pytest.mark.parametrize("rank", [1, 5])
def test_rank_1_and_5(rank):
    g = GlobalMemory()
    shape = (64,) if rank == 1 else (3, 2, 4, 5, 8)
    A = np.arange(math.prod(shape), dtype=np.uint32).reshape(shape)
    box = (16,) if rank == 1 else (4, 3, 2, 2, 2)
    tm = TensorMap.for_array(A, box).bind(g)
    coords = (56,) if rank == 1 else (4, 3, 3, 1, 2)
    smem = np.zeros(1024, np.uint8)
    tma_load_tile(tm, coords, g, smem, 256)
    np.testing.assert_array_equal(smem, reference_load(A, tm, coords, 1024, 256, b"\0" * 4))


def test_narrow_rows_are_padded_to_the_swizzle_span():
    g = GlobalMemory()
    A = np.arange(16 * 32, dtype=np.uint16).reshape(16, 32)
    tm = TensorMap.for_array(A, (32, 16), swizzle="128B").bind(g)    # 64-byte rows
    assert tm.box_bytes == 1024 and tm.smem_footprint == 2048
    smem = np.zeros(4096, np.uint8)
    tma_load_tile(tm, (0, 0), g, smem, 1024)
    np.testing.assert_array_equal(smem, reference_load(A, tm, (0, 0), 4096, 1024, b"\0\0"))
    assert smem[1024 + 64:1024 + 128].sum() == 0 and smem[1024 + 128:1024 + 130].any()


def test_unaligned_inner_coordinate_faults():
    """Measured on an H200: a box starting at a global address that is not 16-byte aligned
    (inner coordinate x element size not a multiple of 16) faults with an illegal instruction."""
    g = GlobalMemory()
    A = np.zeros((8, 64), np.uint16)
    tm = TensorMap.for_array(A, (32, 8)).bind(g)
    smem = np.zeros(4096, np.uint8)
    for c0 in (4, -4, 50):
        with pytest.raises(IllegalInstructionError, match="illegal instruction"):
            tma_load_tile(tm, (c0, 0), g, smem, 1024)
        with pytest.raises(TrapError):
            tma_store_tile(tm, (c0, 0), g, smem, 1024)
    tma_load_tile(tm, (-8, 0), g, smem, 1024)      # -16 bytes: aligned, OOB-filled


def test_tile_store_skips_oob_and_roundtrips():
    g = GlobalMemory()
    A = np.arange(20 * 64, dtype=np.uint16).reshape(20, 64)
    B = np.zeros_like(A)
    tma = TensorMap.for_array(A, (64, 8), swizzle="128B").bind(g, "A")
    tmb = TensorMap.for_array(B, (64, 8), swizzle="128B").bind(g, "B")
    smem = np.zeros(4096, np.uint8)
    for row in (0, 8, 16):                       # rows 16..23: 20..23 are outside
        tma_load_tile(tma, (0, row), g, smem, 1024)
        tma_store_tile(tmb, (0, row), g, smem, 1024)
    np.testing.assert_array_equal(B, A)
    # a store whose box hangs over the edge writes only the inside
    C = np.full((4, 64), 7, np.uint16)
    tmc = TensorMap.for_array(C, (64, 8), swizzle="128B").bind(g, "C")
    smem[:] = 0
    tma_store_tile(tmc, (0, 2), g, smem, 1024)
    assert (C[:2] == 7).all() and (C[2:] == 0).all()


@pytest.mark.parametrize("major", ["K", "MN"])
def test_tma_and_tcgen05_agree_on_the_128B_layout(major):
    """A TMA box loaded with 128B swizzle is the canonical 128B operand layout that tcgen05 reads
    through a shared-memory descriptor (isa.smem_layout, checked against CuTe elsewhere)."""
    g = GlobalMemory()
    rng = np.random.default_rng(1)
    M = K = 64
    if major == "K":      # A (M x K) row-major: inner dimension K, 64 bf16 = 128 bytes
        A = rng.integers(0, 2**16, (M, K), dtype=np.uint16)
        tm = TensorMap.for_array(A, (64, M), swizzle="128B", dtype="bfloat16").bind(g)
        expect = A
    else:                 # A stored K x M (M contiguous): the MN-major operand
        A = rng.integers(0, 2**16, (K, M), dtype=np.uint16)
        tm = TensorMap.for_array(A, (64, K), swizzle="128B", dtype="bfloat16").bind(g)
        expect = A.T
    smem = np.zeros(16384, np.uint8)
    tma_load_tile(tm, (0, 0), g, smem, 1024)
    desc = canonical_descriptor("bf16", M, K, major, "128B", start=1024)
    np.testing.assert_array_equal(smem_to_matrix(smem, desc, "bf16", M, K, major), expect)


def test_encode_rules():
    A = 0x7F00_0000_0000
    ok = dict(dtype="float16", rank=2, global_address=A, global_dim=(64, 64),
              global_strides=(128,), box_dim=(64, 8))
    TensorMap.encode_tiled(**ok)
    cases = [
        (dict(rank=3), "globalDim"),          # the driver reads `rank` entries of each array
        (dict(rank=6), "tensorRank"),
        (dict(global_address=A + 8), "globalAddress"),
        (dict(global_dim=(0, 64)), r"globalDim\[0\]"),
        (dict(global_strides=(136,)), "multiple of 16"),
        (dict(global_strides=(2**40,)), "2\\^40"),
        (dict(box_dim=(64, 257)), r"boxDim\[1\]"),
        (dict(box_dim=(4, 8)), "multiple of 16"),                 # 8 bytes inner
        (dict(box_dim=(64, 8), swizzle="64B"), "swizzle span"),   # 128 bytes > 64
        (dict(dtype="int32", oob_fill="nan_request_zero_fma", global_strides=(256,),
              box_dim=(16, 8)), "floating-point"),
        (dict(swizzle="CU_TENSOR_MAP_SWIZZLE_96B"), "swizzle"),
        (dict(dtype="float17"), "tensorDataType"),
    ]
    for change, msg in cases:
        with pytest.raises(TensorMapError, match=msg):
            TensorMap.encode_tiled(**{**ok, **change})
    with pytest.raises(TensorMapError, match="elementStrides"):
        TensorMap.encode_tiled(**ok, element_strides=(1, 9))
    # enum spellings: CUDA names and integers are accepted
    t = TensorMap.encode_tiled(**{**ok, "dtype": 6}, swizzle="CU_TENSOR_MAP_SWIZZLE_128B")
    assert t.dtype == "float16" and t.swizzle == "128B"


def test_binary_image_and_replace():
    tm = TensorMap.encode_tiled("bfloat16", 3, 0x7F00_0000_1000, (64, 32, 2**32), (128, 4096),
                                (64, 32, 1), (1, 2, 3), swizzle="128B", l2_promotion="256B")
    blob = tm.to_bytes()
    assert len(blob) == 128 and TensorMap.from_bytes(blob) == tm
    assert TensorMap.from_bytes(np.frombuffer(blob, np.uint8)) == tm
    # a zeroed block is what the TMA unit reads as a rank-1 uint8 map of one element (every
    # field holds value - 1; H200 tensormap.replace records, tests/cuda/test_tensormap_driver.py)
    z = TensorMap.from_bytes(bytes(128))
    assert (z.rank, z.dtype, z.global_dim, z.box_dim, z.global_address) == (1, "uint8", (1,), (1,), 0)
    with pytest.raises(UndefinedBehavior, match="element type"):
        TensorMap.from_bytes(bytes([0] * 8 + [0x80, 0x07]) + bytes(118))      # code 15
    t2 = tm.replaced("global_dim", 100, ordinal=1)
    assert t2.global_dim == (64, 100, 2**32)
    assert tm.replaced("global_address", 0x7F00_0000_2000).global_address == 0x7F00_0000_2000
    with pytest.raises(TensorMapError):
        tm.replaced("global_address", 0x7F00_0000_2008)
    with pytest.raises(OperandError):
        tm.replaced("box_dim", 8, ordinal=3)


def test_unsupported_modes_are_named():
    g = GlobalMemory()
    A = np.zeros((8, 64), np.uint16)
    smem = np.zeros(4096, np.uint8)
    tm = TensorMap.for_array(A, (64, 8), swizzle="128B_atom_32B_flip_8B").bind(g)
    with pytest.raises(UnsupportedFeature):
        tma_load_tile(tm, (0, 0), g, smem, 1024)
    tm = TensorMap.for_array(A, (64, 8)).bind(g)
    with pytest.raises(MemoryAccessError, match="128-byte aligned"):
        tma_load_tile(tm, (0, 0), g, smem, 1040)
    with pytest.raises(MemoryAccessError, match="leave"):
        tma_load_tile(tm, (0, 0), g, smem, 4096 - 128)


def test_bulk_copies_and_multicast():
    g = GlobalMemory()
    src = np.arange(256, dtype=np.uint8)
    dst = np.zeros(256, np.uint8)
    a, b = g.map(src), g.map(dst)
    s0, s1 = np.zeros(512, np.uint8), np.zeros(512, np.uint8)
    assert bulk_global_to_shared(g, a + 32, s0, 64, 96) == 96
    np.testing.assert_array_equal(s0[64:160], src[32:128])
    bulk_shared_to_shared(s0, 64, s1, 256, 96)
    np.testing.assert_array_equal(s1[256:352], src[32:128])
    bulk_shared_to_global(s1, 256, g, b + 16, 96)
    np.testing.assert_array_equal(dst[16:112], src[32:128])
    with pytest.raises(OperandError, match="multiple of 16"):
        bulk_global_to_shared(g, a, s0, 0, 24)
    with pytest.raises(MemoryAccessError, match="16-byte aligned"):
        bulk_global_to_shared(g, a + 8, s0, 0, 16)
    assert multicast_ranks(0b1011, 4) == [0, 1, 3]
    with pytest.raises(UndefinedBehavior, match="beyond the cluster"):
        multicast_ranks(0b10000, 4)
