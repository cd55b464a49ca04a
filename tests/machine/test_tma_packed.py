"""TMA through the packed sub-byte tensor-map types (CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B /
16U4_ALIGN16B / 16U6_ALIGN16B; PTX .b4x16 / .b4x16_p64 / .b6x16_p32 and .b6p2x16) against a
derivation of the documented layouts written out here element by element (PTX ISA 5.5.1.1.1
"Padding and alignment of the sub-byte types", cuda.h's CUtensorMapDataType comment):

* global memory: the elements of a row packed contiguously, element x at bits [b*x, b*x + b)
  of the row's bytes, little endian (b = 4 or 6): `pack_row` builds the bytes from the values
  with Python integers;
* a load: box element j of a row lands in the row's 16-byte shared-memory chunk j // 16 at
  bits [b*(j%16), b*(j%16) + b); with .b4x16_p64 / .b6x16_p32 bytes 8..15 / 12..15 of each chunk
  are padding ("un-initialized"; ptxsim writes zeros, which these tests pin); box rows are 128
  bytes apart; a swizzle moves whole 16-byte chunks (cuda.h's int4 tables; the 64-byte atoms of
  PTX 5.5.7: 64-byte half x of 128-byte line y at x ^ (y % 2));
* a store through 16U6_ALIGN16B (.b6p2x16): byte j of a row's 128 shared-memory bytes holds
  element j in bits 0-5; bits 6-7 are discarded;
* out-of-bound elements read as zero and are not written; complete-tx counts the packed bytes
  (Triton's block_scaled_matmul expects 34,304 bytes for a 128 x 128 e4m3 tile, a 256-row box of
  128 e2m1 through 16U4_ALIGN16B (16,384) and its two scale boxes (512 + 1,024)).
The restrictions: PTX ISA 9.7.9.25.5.1 (restrictions on tensor copies of sub-byte types) and
cuda.h's cuTensorMapEncodeTiled requirements, each case naming its rule.
"""
import dataclasses

import numpy as np
import pytest

from ptxsim.errors import (IllegalInstructionError, TensorCopyError, TensorMapError,
                           TrapError)
from ptxsim.machine.memory import GlobalMemory, SharedMemory
from ptxsim.machine.tensormap import (TensorMap, check_packed_copy, tma_load_tile,
                                      tma_load_tiles, tma_store_tile, tma_store_tiles)
from ptxsim.machine.tma_modes import gather4_load, im2col_load, reduce_tensor_tile, \
    scatter4_store

BITS = {"16u4_align8b": 4, "16u4_align16b": 4, "16u6_align16b": 6}
FILL = 0xEE                       # shared memory before a copy: shows what the copy writes


def pack_row(values, bits: int) -> bytes:
    """A row of b-bit values packed contiguously, value x at bits [b*x, b*x + b), little endian."""
    word = 0
    for x, v in enumerate(values):
        word |= int(v) << (bits * x)
    return word.to_bytes(len(values) * bits // 8, "little")


def unpack_row(data: bytes, bits: int, n: int) -> list[int]:
    word = int.from_bytes(bytes(data), "little")
    return [(word >> (bits * x)) & ((1 << bits) - 1) for x in range(n)]


def chunk_at(addr: int, swizzle: str) -> int:
    """Where the 16-byte chunk at unswizzled address `addr` lands (cuda.h / PTX 5.5.7 tables)."""
    y, x = addr // 128, addr % 128 // 16
    if swizzle == "none":
        return addr
    if swizzle == "128B":
        return y * 128 + ((y % 8) ^ x) * 16
    atom = {"128B_atom_32B": 32, "128B_atom_64B": 64}[swizzle]
    per = atom // 16
    return y * 128 + ((y % (128 // atom)) ^ (x // per)) * atom + (x % per) * 16


def tensor(dtype, rows=24, dim0=256, seed=0, pad=32):
    """(values (rows, dim0), the packed global bytes (rows, stride)): a row stride of the packed
    row plus `pad` bytes (a multiple of 32, as the 16-byte-aligned types require)."""
    bits = BITS[dtype]
    V = np.random.default_rng(seed).integers(0, 1 << bits, (rows, dim0))
    stride = dim0 * bits // 8 + pad
    G = np.zeros((rows, stride), np.uint8)
    for r in range(rows):
        G[r, :dim0 * bits // 8] = list(pack_row(V[r], bits))
    return V, G


def make_map(dtype, G, dim0, box_rows, swizzle="none", g=None, box0=128):
    g = g or GlobalMemory()
    rows, stride = G.shape
    return TensorMap.encode_tiled(dtype, 2, G, (dim0, rows), (stride,), (box0, box_rows),
                                  swizzle=swizzle).bind(g), g


def expected_load(V, dtype, coords, box_rows, dst, swizzle, size, box0=128):
    """The shared memory a load leaves, element by element (module docstring)."""
    bits = BITS[dtype]
    padded = dtype != "16u4_align8b"
    out = np.full(size, FILL, np.uint8)
    row_bytes = box0 if padded else box0 // 2
    pitch = 128 if swizzle != "none" else row_bytes
    c0, c1 = coords
    for r in range(box_rows):
        for grp in range(box0 // 16):
            word = 0
            for p in range(16):
                x, y = c0 + 16 * grp + p, c1 + r
                ok = 0 <= y < V.shape[0] and 0 <= x < V.shape[1]
                word |= (int(V[y, x]) if ok else 0) << (bits * p)
            n = 16 if padded else 8
            a = dst + r * pitch + n * grp
            a = chunk_at(a, swizzle) if padded else a
            if not padded and swizzle != "none":        # 8-byte groups: swizzle per byte
                for b, byte in enumerate(word.to_bytes(8, "little")):
                    u = dst + r * pitch + 8 * grp + b
                    out[chunk_at(u - u % 16, swizzle) + u % 16] = byte
                continue
            out[a:a + n] = list(word.to_bytes(n, "little"))     # data, then zero padding
    return out


@pytest.mark.parametrize("dtype", ["16u4_align16b", "16u6_align16b", "16u4_align8b"])
@pytest.mark.parametrize("swizzle", ["none", "128B", "128B_atom_32B"])
def test_load_places_each_element_as_documented(dtype, swizzle):
    V, G = tensor(dtype)
    tm, g = make_map(dtype, G, 256, 16, swizzle)
    bits = BITS[dtype]
    # inside; both inner edges out of bounds; rows past the far edge (24 rows)
    for coords in [(128, 0), (0, 8), (-128, 0), (256, -4), (128, 16)]:
        smem = np.full(8192, FILL, np.uint8)
        n = tma_load_tile(tm, coords, g, smem, 2048)
        assert n == 128 * 16 * bits // 8                      # complete-tx: packed bytes
        np.testing.assert_array_equal(
            smem, expected_load(V, dtype, coords, 16, 2048, swizzle, 8192))


def test_the_box_of_triton_block_scaled_matmul_counts_16384_bytes():
    """Triton's tutorial 10 (mixed: e4m3 x e2m1) expects 34,304 bytes per stage: 16,384 for the
    128 x 128 e4m3 tile, 512 + 1,024 for its scale boxes, so 16,384 for the (128, 256) box of
    its 16U4_ALIGN16B map (fp4_padded) - 64 bytes per row of 128 elements, not 128."""
    tm = TensorMap.encode_tiled("16u4_align16b", 2, 0x7F00_0000_0000, (256, 256), (128,),
                                (128, 256), swizzle="128B")
    assert tm.box_bytes == 34304 - 16384 - 512 - 1024
    assert tm.smem_footprint == 256 * 128                     # 16 bytes per 16 elements
    u6 = dataclasses.replace(tm, dtype="16u6_align16b", global_strides=(192,))
    assert u6.box_bytes == 256 * 96 and u6.smem_footprint == 256 * 128


@pytest.mark.parametrize("swizzle", ["none", "128B", "128B_atom_32B", "128B_atom_64B"])
def test_b6p2x16_store_packs_the_low_six_bits_of_each_byte(swizzle):
    V, G = tensor("16u6_align16b", rows=20, seed=3)
    tm, g = make_map("16u6_align16b", G, 256, 8, swizzle)
    rng = np.random.default_rng(7)
    before = G.copy()
    for c0, c1 in [(0, 0), (128, 8), (128, 16)]:           # the last box: rows 20.. outside
        smem = rng.integers(0, 256, 4096).astype(np.uint8)   # junk in bits 6-7 too
        assert tma_store_tile(tm, (c0, c1), g, smem, 1024) == 8 * 96
        for r in range(8):
            y = c1 + r
            if y >= 20:
                continue
            vals = []
            for grp in range(8):
                a = chunk_at(1024 + r * 128 + 16 * grp, swizzle)
                vals += [int(b) & 0x3F for b in smem[a:a + 16]]
            before[y, c0 * 6 // 8:(c0 + 128) * 6 // 8] = list(pack_row(vals, 6))
        np.testing.assert_array_equal(G, before)             # nothing else written


def p32_to_p2x16(chunk: np.ndarray) -> np.ndarray:
    """One .b6x16_p32 chunk (12 packed bytes + padding) as 16 .b6p2x16 bytes, by hand."""
    return np.array(unpack_row(bytes(chunk[:12]), 6, 16), np.uint8)


def test_six_bit_round_trip_load_unpack_store():
    """global -> shared (.b6x16_p32) -> each chunk unpacked to one byte per element (what
    tcgen05.cp / ldmatrix decompression produce) -> global (.b6p2x16): the tensor comes back."""
    V, G = tensor("16u6_align16b", rows=16, seed=5)
    tm, g = make_map("16u6_align16b", G, 256, 8, "128B")
    out = np.zeros_like(G)
    tmo = TensorMap.encode_tiled("16u6_align16b", 2, out, (256, 16), (G.shape[1],), (128, 8),
                                 swizzle="128B").bind(g)
    smem = np.zeros(4096, np.uint8)
    for c0 in (0, 128):
        for c1 in (0, 8):
            tma_load_tile(tm, (c0, c1), g, smem, 1024)
            chunks = smem[1024:1024 + 1024].reshape(-1, 16).copy()
            smem[1024:2048] = np.concatenate([p32_to_p2x16(c) for c in chunks])
            tma_store_tile(tmo, (c0, c1), g, smem, 1024)
    np.testing.assert_array_equal(out[:, :192], G[:, :192])
    assert not out[:, 192:].any()                         # the stride's padding: untouched


def test_four_bit_unpadded_round_trip():
    V, G = tensor("16u4_align8b", rows=16, seed=9)
    tm, g = make_map("16u4_align8b", G, 256, 8, "128B")
    out = np.zeros_like(G)
    tmo = TensorMap.encode_tiled("16u4_align8b", 2, out, (256, 16), (G.shape[1],), (128, 8),
                                 swizzle="128B").bind(g)
    smem = np.zeros(4096, np.uint8)
    for c in [(0, 0), (128, 0), (0, 8), (128, 8)]:
        tma_load_tile(tm, c, g, smem, 1024)
        tma_store_tile(tmo, c, g, smem, 1024)
    np.testing.assert_array_equal(out, G)


@pytest.mark.parametrize("dtype", ["16u4_align16b", "16u6_align16b"])
def test_many_boxes_at_once_equal_box_by_box(dtype):
    """The batched copies (one gather, one scatter; what a kernel's step issues) give the per-box
    bytes: 6 boxes into 3 CTAs, some out of bounds."""
    V, G = tensor(dtype, rows=40, seed=11)
    tm, g = make_map(dtype, G, 256, 8, "128B")
    coords = np.array([[0, 0], [128, 8], [0, 36], [-128, 0], [128, 16], [0, 24]])
    ctas, offs = np.array([0, 1, 2, 0, 1, 2]), np.array([1024, 1024, 1024, 2048, 2048, 2048])
    sh = SharedMemory(3, 4096)
    sh.data[:] = FILL
    tma_load_tiles(tm, coords, g, sh, ctas, offs)
    for c, cta, off in zip(coords, ctas, offs):
        one = np.full(4096, FILL, np.uint8)
        tma_load_tile(tm, tuple(c), g, one, int(off))
        np.testing.assert_array_equal(sh.data[cta, off:off + 1024], one[off:off + 1024])
    if dtype == "16u6_align16b":                 # stores of the in-bound boxes, batched
        out = np.zeros_like(G)
        tmo = dataclasses.replace(tm, global_address=g.map(out))
        keep = (coords >= 0).all(axis=1)
        tma_store_tiles(tmo, coords[keep], g, sh, ctas[keep], offs[keep])
        ref = np.zeros_like(G)
        tmr = dataclasses.replace(tm, global_address=g.map(ref))
        for c, cta, off in zip(coords[keep], ctas[keep], offs[keep]):
            tma_store_tile(tmr, tuple(c), g, sh.cta_view(int(cta)), int(off))
        np.testing.assert_array_equal(out, ref)
        assert out.any()


def test_gather4_and_scatter4_rows():
    """.tile::gather4 of four rows of a 16U6_ALIGN16B map: each row as a one-row tile box
    (5.5.3.4: "all other constraints and rules of the tile mode apply"); .tile::scatter4 back
    through .b6p2x16 after unpacking."""
    V, G = tensor("16u6_align16b", rows=12, seed=13)
    g = GlobalMemory()
    tm = TensorMap.encode_tiled("16u6_align16b", 2, G, (256, 12), (G.shape[1],), (128, 1),
                                swizzle="128B").bind(g)
    rows = [7, 2, 11, 30]                                  # the last one outside: zeros
    smem = np.full(4096, FILL, np.uint8)
    assert gather4_load(tm, [128] + rows, g, smem, 1024) == 4 * 96
    four = np.stack([V[y] if y < 12 else np.zeros(256, V.dtype) for y in rows])
    np.testing.assert_array_equal(smem, expected_load(four, "16u6_align16b", (128, 0), 4, 1024,
                                                      "128B", 4096))
    out = np.zeros_like(G)
    tmo = dataclasses.replace(tm, global_address=g.map(out))
    chunks = smem[1024:1536].reshape(-1, 16).copy()
    smem[1024:1536] = np.concatenate([p32_to_p2x16(c) for c in chunks])
    assert scatter4_store(tmo, [128] + rows, g, smem, 1024) == 4 * 96
    for y in rows[:3]:
        np.testing.assert_array_equal(out[y, 96:192], G[y, 96:192])
    assert not out[[0, 1, 3, 4, 5, 6, 8, 9, 10]].any() and not out[:, :96].any()


def test_im2col_channels_of_a_packed_map():
    """.im2col through a 16U4_ALIGN16B map (cuda.h: channelsPerPixel must be 128): each pixel's
    128 channels as one padded 128-byte row; NWC tensor, N = 1, W = 6."""
    bits, W, C = 4, 6, 256
    V = np.random.default_rng(17).integers(0, 16, (W, C))
    G = np.array([list(pack_row(V[w], bits)) for w in range(W)], np.uint8)   # (W, 128)
    g = GlobalMemory()
    tm = TensorMap.encode_im2col("16u4_align16b", 3, G, (C, W, 1), (128, 128 * W), (0,), (0,),
                                 128, 4).bind(g)
    smem = np.full(2048, FILL, np.uint8)
    assert im2col_load(tm, (128, 1, 0), (0,), g, smem, 512) == 4 * 64
    for p in range(4):                                       # pixels w = 1 .. 4
        row = smem[512 + 128 * p:512 + 128 * (p + 1)].reshape(8, 16)
        vals = sum((unpack_row(bytes(c[:8]), 4, 16) for c in row), [])
        assert vals == list(V[1 + p, 128:])
        assert not row[:, 8:].any()                           # padding written as zeros


def test_multicast_of_a_packed_box_signals_the_packed_bytes():
    """.multicast::cluster (issue_tma_load, the model the H200 multicast capture checks for
    other types): the padded box lands in each masked CTA, whose mbarrier, armed with the
    packed byte count (8 x 64), completes its phase; the others stay untouched."""
    from ptxsim.machine.async_proxy import AsyncProxy
    from ptxsim.machine.mbarrier import Mbarriers
    from ptxsim.machine.memory import Memory
    from ptxsim.machine.tensormap import issue_tma_load
    V, G = tensor("16u4_align16b", rows=8, seed=23)
    m = Memory(n_ctas=4, threads_per_cta=128, cluster_size=4, static_shared=4096 + 8)
    m.shared.data[:, :4096] = FILL
    tm = TensorMap.encode_tiled("16u4_align16b", 2, G, (256, 8), (G.shape[1],), (128, 8),
                                swizzle="128B").bind(m.global_)
    mb = Mbarriers(m.shared)
    mb.init([0, 1, 2, 3], 4096, 1)
    mask = 0b1101
    for r in range(4):
        mb.arrive(r, 4096, expect_tx=8 * 64 if mask >> r & 1 else 0)
    p = AsyncProxy()
    issue_tma_load(p, 128, tm, (128, 0), m, mb, cta=1, dst=1024, mbar=4096, cta_mask=mask)
    p.progress()
    want = expected_load(V, "16u4_align16b", (128, 0), 8, 1024, "128B", 4096)
    for r in range(4):
        if mask >> r & 1:
            np.testing.assert_array_equal(m.shared.data[r, :4096], want)
            assert bool(mb.try_wait_parity(r, 4096, 0)[0])
        else:
            assert (m.shared.data[r, :4096] == FILL).all()


# ------------------------------------------------------------------------------ restrictions
def test_encoder_rules_of_the_packed_types():
    """cuda.h's cuTensorMapEncodeTiled requirements for 16U4_ALIGN16B / 16U6_ALIGN16B (and the
    packed types' refusal on a compute capability 9.x device, which the H200's driver measured)."""
    A = 0x7F00_0000_0000
    ok = dict(dtype="16u6_align16b", rank=2, global_address=A, global_dim=(256, 8),
              global_strides=(192,), box_dim=(128, 8), swizzle="128B")
    TensorMap.encode_tiled(**ok)
    TensorMap.encode_tiled(**{**ok, "swizzle": "128B_atom_64B"})      # 16U6: store only
    cases = [
        (dict(global_address=A + 16), "32-byte aligned"),
        (dict(global_dim=(192, 8)), "multiple of 128"),
        (dict(global_strides=(208,)), "multiple of 32"),
        (dict(box_dim=(64, 8)), "must be 128"),
        (dict(swizzle="32B", box_dim=(128, 8)), "swizzle"),
        (dict(swizzle="128B_atom_32B_flip_8B"), "supports only"),
        (dict(dtype="16u4_align16b", swizzle="128B_atom_64B"), "supports only"),
        (dict(oob_fill="nan_request_zero_fma"), "floating-point"),
        (dict(dtype="16u4_align8b", global_dim=(255, 8)), "multiple of 2"),
    ]
    for change, msg in cases:
        with pytest.raises(TensorMapError, match=msg):
            TensorMap.encode_tiled(**{**ok, **change})
    with pytest.raises(TensorMapError, match="sm_100"):
        TensorMap.encode_tiled(**ok, cc=(9, 0))
    with pytest.raises(TensorMapError, match="channelsPerPixel"):
        TensorMap.encode_im2col("16u6_align16b", 3, A, (256, 8, 1), (192, 1536), (0,), (0,),
                                64, 8)


def _legal_u6():
    V, G = tensor("16u6_align16b", rows=16)
    return make_map("16u6_align16b", G, 256, 8, "128B")


def test_copy_restrictions_of_the_sub_byte_types():
    """PTX ISA 9.7.9.25.5.1: maps that tensormap.replace (or hand-written bytes) can make and
    cuTensorMapEncodeTiled cannot, and copies the rules forbid, each a TensorCopyError naming
    its restriction."""
    tm, g = _legal_u6()
    smem = np.zeros(4096, np.uint8)
    R = dataclasses.replace
    cases = [
        (tm, (64, 0), False, "restriction 7"),            # first coordinate not a multiple of 128
        (tm, (-64, 0), False, "restriction 7"),
        (R(tm, box_dim=(64, 8)), (0, 0), False, "restriction 5"),
        (R(tm, global_dim=(192, 16)), (0, 0), False, "restriction 6"),
        (R(tm, global_strides=(208,)), (0, 0), False, "restriction 8"),
        (R(tm, global_address=tm.global_address + 16), (0, 0), False, "restriction 8"),
        (R(tm, swizzle="64B"), (0, 0), False, "restriction 9"),
        (R(tm, swizzle="32B"), (0, 0), True, "restriction 9"),
        (R(tm, oob_fill="nan_request_zero_fma"), (0, 0), False, "restriction 4"),
        (R(tm, dtype="16u4_align16b", global_strides=(160,)), (0, 0), True, "restriction 2"),
    ]
    for m, c, store, rule in cases:
        with pytest.raises(TensorCopyError, match=rule):
            (tma_store_tile if store else tma_load_tile)(m, c, g, smem, 1024)
    with pytest.raises(TensorCopyError, match="restriction 1"):
        reduce_tensor_tile(tm, (0, 0), g, smem, 1024, "add")
    with pytest.raises(TensorCopyError, match="restriction 3"):
        check_packed_copy(tm, [(0, 0)], target="sm_120a")
    check_packed_copy(tm, [(0, 0)], store=True, target="sm_120a")      # stores are fine there
    # sm_103a's .b6p2x16 stores (the exception list): 48-byte boxes, coordinates of 64
    half = R(tm, box_dim=(64, 8))
    check_packed_copy(half, [(64, 0)], store=True, target="sm_103a")
    check_packed_copy(tm, [(64, 0)], store=True, target="sm_103a")
    with pytest.raises(TensorCopyError, match="restriction 7"):
        check_packed_copy(tm, [(64, 0)], store=True, target="sm_100a")
    with pytest.raises(TensorCopyError, match="restriction 5"):
        check_packed_copy(half, [(0, 0)], target="sm_103a")            # loads: no exception
    # 16U4_ALIGN8B: the 16-byte box alignment of every type (c0 x 4 bits), an illegal
    # instruction as measured for the others on the H200
    V, G = tensor("16u4_align8b", rows=8)
    t8, g8 = make_map("16u4_align8b", G, 256, 8)
    for c0 in (2, 16, -16):
        with pytest.raises(IllegalInstructionError, match="16 bytes"):
            tma_load_tile(t8, (c0, 0), g8, smem, 1024)
        with pytest.raises(TrapError):
            tma_store_tile(t8, (c0, 0), g8, smem, 1024)
    tma_load_tile(t8, (-32, 0), g8, smem, 1024)                       # aligned, OOB-filled
    with pytest.raises(TensorCopyError, match="restriction 1"):
        reduce_tensor_tile(t8, (0, 0), g8, smem, 1024, "add")


# ------------------------------------------------------------------------- in a kernel
# Thread 0 expects the packed bytes of a 128 x 8 box of a 16U6_ALIGN16B map (8 x 96 = 768) on an
# mbarrier, loads the box at (c0, 0) with the 128B swizzle, waits, copies the 1,024 shared-memory
# bytes to `out`, unpacks each 16-byte chunk to one byte per element in place (bits 6j.. of the
# chunk's first 12 bytes -> byte j), fences the proxy and stores the box back through `smap` at
# (c0, 0) (.b6p2x16). A wrong complete-tx count leaves the mbarrier phase open: a deadlock.
TMA_KERNEL = """.version {version}
.target {target}
.address_size 64
.visible .entry k(.param .align 64 .b8 tmap[128], .param .align 64 .b8 smap[128],
                  .param .u64 out, .param .u32 c0)
{{
    .reg .b32 %r<24>;
    .reg .b64 %rd<12>;
    .reg .pred %p<4>;
    .shared .align 1024 .b8 tile[1024];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    ld.param.u64 %rd5, [out];
    ld.param.u32 %r7, [c0];
    mov.u32 %r8, 0;
    mov.u64 %rd1, tmap;
    cvta.param.u64 %rd1, %rd1;
    mov.u64 %rd2, smap;
    cvta.param.u64 %rd2, %rd2;
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 768;
    cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd1, {{%r7, %r8}}], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    mov.u32 %r9, 0;
$L_chunk:
    mov.u32 %r10, tile;
    add.u32 %r10, %r10, %r9;
    ld.shared.v4.b32 {{%r2, %r3, %r4, %r5}}, [%r10];
    cvt.u64.u32 %rd6, %r9;
    add.s64 %rd7, %rd5, %rd6;
    st.global.v4.b32 [%rd7], {{%r2, %r3, %r4, %r5}};
    mov.b64 %rd8, {{%r2, %r3}};
    mov.u32 %r11, 0;
$L_elem:
    setp.eq.u32 %p3, %r11, 10;
    @%p3 mov.b64 %rd9, {{%r3, %r4}};
    @%p3 shr.b64 %rd8, %rd9, 28;
    and.b64 %rd10, %rd8, 63;
    cvt.u32.u64 %r12, %rd10;
    add.u32 %r13, %r10, %r11;
    st.shared.u8 [%r13], %r12;
    shr.b64 %rd8, %rd8, 6;
    add.u32 %r11, %r11, 1;
    setp.lt.u32 %p3, %r11, 16;
    @%p3 bra $L_elem;
    add.u32 %r9, %r9, 16;
    setp.lt.u32 %p3, %r9, 1024;
    @%p3 bra $L_chunk;
    fence.proxy.async.shared::cta;
    cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd2, {{%r7, %r8}}], [tile];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_done:
    ret;
}}
"""


def kernel(target):
    return TMA_KERNEL.format(target=target, version="8.7" if target == "sm_120a" else "8.6")


def _kernel_maps(rows=8):
    V, G = tensor("16u6_align16b", rows=rows, seed=21)
    back = np.zeros_like(G)
    maps = [TensorMap.encode_tiled("16u6_align16b", 2, x, (256, rows), (G.shape[1],), (128, 8),
                                   swizzle="128B") for x in (G, back)]
    return V, G, back, maps


def test_kernel_loads_and_stores_through_the_six_bit_map():
    from ptxsim.machine.executor import launch
    V, G, back, (tm, sm) = _kernel_maps()
    out = np.zeros(1024, np.uint8)
    launch(kernel("sm_100a"), "k", 1, 32, args=[tm, sm, out, 128])
    np.testing.assert_array_equal(out, expected_load(V, "16u6_align16b", (128, 0), 8, 0, "128B",
                                                     1024))
    np.testing.assert_array_equal(back[:, 96:192], G[:, 96:192])     # the unpacked store
    assert not back[:, :96].any() and not back[:, 192:].any()


def test_kernel_copy_restrictions_name_the_line():
    from ptxsim.machine.executor import launch
    _, _, _, (tm, sm) = _kernel_maps()
    with pytest.raises(TensorCopyError, match=r"line 2\d.*restriction 7"):
        launch(kernel("sm_100a"), "k", 1, 32,
               args=[tm, sm, np.zeros(1024, np.uint8), 64])
    with pytest.raises(TensorCopyError, match=r"line 2\d.*sm_120a.*restriction 3"):
        launch(kernel("sm_120a"), "k", 1, 32,
               args=[tm, sm, np.zeros(1024, np.uint8), 128])


def test_tma_kernel_is_accepted_by_ptxas():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1]))
    import ptxas135
    for target in ("sm_100a", "sm_120a"):
        ok, msg = ptxas135.verdict(kernel(target), target)
        assert ok, msg
