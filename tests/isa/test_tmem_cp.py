"""tcgen05.cp (+ decompression, multicast, cta_group::2) and tcgen05.shift (9.7.16.9).

Independent sources: the spec text (16 elements + padding per 16 bytes; shapes; multicast warp
pairs; shift of all rows but the last, lane alignment 32), FACTS.md section 2 (e2m1 in bits
[5:2], e3m2/e2m3 in bits [5:0] of the 8-bit container), ml_dtypes (values of every 4/6-bit
code), and CuTe's SM100_UTCCP_* traits for which warp quarter receives which rows.
"""
import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import LayoutError, OperandError, TmemAccessError, UndefinedBehavior
from ptxsim.isa.tmem import CtaPair, TensorMemory, tmem_address
from ptxsim.isa.tmem_cp import (cp_rows_from_smem, decompress_b4x16_p64, decompress_b6x16_p32,
                                tcgen05_cp, tcgen05_shift_down)


def pack4(codes):
    """16 four-bit codes -> 16 bytes: element i at bits 4i.. of a little-endian 64-bit word."""
    v = sum(int(c) << (4 * i) for i, c in enumerate(codes))
    return np.frombuffer(v.to_bytes(8, "little") + bytes([0xEE] * 8), np.uint8)


def pack6(codes):
    """16 six-bit codes -> 16 bytes: element i at bits 6i.. of a little-endian 96-bit word."""
    v = sum(int(c) << (6 * i) for i, c in enumerate(codes))
    return np.frombuffer(v.to_bytes(12, "little") + bytes([0xDD] * 4), np.uint8)


@pytest.mark.parametrize("pos", range(16))
def test_decompress_every_4bit_code_at_every_position(pos):
    chunks = []
    for code in range(16):
        codes = [(code + 5 * i + 3) % 16 for i in range(16)]
        codes[pos] = code
        chunks.append(pack4(codes))
    out = decompress_b4x16_p64(np.stack(chunks))
    for code, row in enumerate(out):
        assert row[pos] == code << 2                       # FACTS section 2: bits [5:2]
        assert np.all(row & 0b11000011 == 0)               # container bits outside [5:2] zero
        # the value is preserved: ml_dtypes e2m1 of the code == of the container's bits [5:2]
        a = np.array([code], np.uint8).view(ml_dtypes.float4_e2m1fn)
        b = np.array([row[pos] >> 2], np.uint8).view(ml_dtypes.float4_e2m1fn)
        assert a.astype(np.float32)[0] == b.astype(np.float32)[0]


@pytest.mark.parametrize("pos", range(16))
def test_decompress_every_6bit_code_at_every_position(pos):
    chunks = []
    for code in range(64):
        codes = [(code * 7 + 11 * i + 1) % 64 for i in range(16)]
        codes[pos] = code
        chunks.append(pack6(codes))
    out = decompress_b6x16_p32(np.stack(chunks))
    for code, row in enumerate(out):
        assert row[pos] == code                            # bits [5:0], top two bits zero
        for fmt in (ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn):
            a = np.array([code], np.uint8).view(fmt).astype(np.float32)[0]
            b = np.array([row[pos]], np.uint8).view(fmt).astype(np.float32)[0]
            assert a == b


def test_decompress_ignores_padding():
    a = pack4(range(16)).copy()
    b = a.copy()
    b[8:] = 0
    np.testing.assert_array_equal(decompress_b4x16_p64(a), decompress_b4x16_p64(b))
    c = pack6(range(16)).copy()
    d = c.copy()
    d[12:] = 0
    np.testing.assert_array_equal(decompress_b6x16_p32(c), decompress_b6x16_p32(d))


def _tm():
    t = TensorMemory()
    t.alloc(512)
    return t


def _rows(n, nbytes, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, nbytes), dtype=np.uint8)


def _words(row):
    return [int.from_bytes(bytes(row[4 * k:4 * k + 4]), "little") for k in range(len(row) // 4)]


@pytest.mark.parametrize("shape,nrows,nbytes", [("128x256b", 128, 32), ("128x128b", 128, 16)])
def test_cp_full_height(shape, nrows, nbytes):
    t = _tm()
    rows = _rows(nrows, nbytes)
    tcgen05_cp(t, shape, tmem_address(0, 40), rows)
    for r in range(nrows):
        assert list(t.cells[r, 40:40 + nbytes // 4]) == _words(rows[r])
    assert np.count_nonzero(t.cells[:, :40]) == 0
    assert np.count_nonzero(t.cells[:, 40 + nbytes // 4:]) == 0


def test_cp_4x256b_one_row_per_quarter():
    # CuTe SM100_UTCCP_4dp256bit: copy row i -> logical row 32*i
    t = _tm()
    rows = _rows(4, 32, 1)
    tcgen05_cp(t, "4x256b", tmem_address(5, 8), rows)
    for i in range(4):
        assert list(t.cells[5 + 32 * i, 8:16]) == _words(rows[i])
    assert np.count_nonzero(t.cells) == np.count_nonzero(rows.view("<u4"))


# Which source rows each warp quarter receives (CuTe ValID broadcast modes; spec: "warps 0 and 2
# form a pair; warps 1 and 3 form a pair", "each warp in the warp pair receive half of the data")
MULTICAST_ROWS = {
    ("64x128b", "warpx2::02_13"): {0: range(0, 32), 1: range(32, 64), 2: range(0, 32),
                                   3: range(32, 64)},
    ("64x128b", "warpx2::01_23"): {0: range(0, 32), 1: range(0, 32), 2: range(32, 64),
                                   3: range(32, 64)},
    ("32x128b", "warpx4"): {w: range(0, 32) for w in range(4)},
}


@pytest.mark.parametrize("shape,mc", sorted(MULTICAST_ROWS))
def test_cp_multicast(shape, mc):
    t = _tm()
    nrows = int(shape.split("x")[0])
    rows = _rows(nrows, 16, 2)
    tcgen05_cp(t, shape, tmem_address(0, 100), rows, multicast=mc)
    for w, src in MULTICAST_ROWS[(shape, mc)].items():
        for i, r in enumerate(src):
            assert list(t.cells[32 * w + i, 100:104]) == _words(rows[r])


def test_cp_with_decompression_lands_containers():
    t = _tm()
    codes = [(3 * i + 1) % 16 for i in range(16)]
    rows = np.tile(np.concatenate([pack4(codes), pack4(codes[::-1])]), (128, 1))
    tcgen05_cp(t, "128x256b", 0, rows, decompress_fmt="b8x16.b4x16_p64")
    got = t.cells[7, 0:8].view(np.uint8)
    np.testing.assert_array_equal(got[:16], np.array(codes, np.uint8) << 2)
    np.testing.assert_array_equal(got[16:], np.array(codes[::-1], np.uint8) << 2)
    codes6 = [(5 * i + 2) % 64 for i in range(16)]
    rows6 = np.tile(pack6(codes6), (128, 1))
    tcgen05_cp(t, "128x128b", tmem_address(0, 64), rows6, decompress_fmt="b8x16.b6x16_p32")
    np.testing.assert_array_equal(t.cells[100, 64:68].view(np.uint8), codes6)


def test_cp_cta_pair_each_cta_own_rows():
    p = CtaPair()
    p.alloc(32)
    rows = np.stack([_rows(128, 16, 3), _rows(128, 16, 4)])
    tcgen05_cp(p, "128x128b", 0, rows, cta_group=2)
    assert list(p.even.cells[9, 0:4]) == _words(rows[0, 9])
    assert list(p.odd.cells[9, 0:4]) == _words(rows[1, 9])
    same = _rows(128, 16, 5)
    tcgen05_cp(p, "128x128b", 0, same, cta_group=2)
    np.testing.assert_array_equal(p.even.cells, p.odd.cells)
    p.odd_exited = True
    with pytest.raises(UndefinedBehavior):
        tcgen05_cp(p, "128x128b", 0, same, cta_group=2)


@pytest.mark.parametrize("shape,mc,dec,msg", [
    ("64x128b", None, None, "warpx2"),
    ("32x128b", "warpx2::01_23", None, "warpx4"),
    ("128x256b", "warpx4", None, "no multicast"),
    ("256x128b", None, None, "not one of"),
    ("128x128b", None, "b8x16.b2x16", "decompression"),
])
def test_cp_legality(shape, mc, dec, msg):
    with pytest.raises(OperandError, match=msg):
        tcgen05_cp(_tm(), shape, 0, _rows(128, 16), multicast=mc, decompress_fmt=dec)


def test_cp_bounds_shape_and_allocation():
    with pytest.raises(OperandError, match="source must be"):
        tcgen05_cp(_tm(), "128x256b", 0, _rows(128, 16))
    with pytest.raises(TmemAccessError):
        tcgen05_cp(_tm(), "128x128b", tmem_address(1, 0), _rows(128, 16))
    with pytest.raises(TmemAccessError):
        tcgen05_cp(_tm(), "128x128b", tmem_address(0, 510), _rows(128, 16))
    t = TensorMemory()
    t.alloc(32)
    with pytest.raises(TmemAccessError, match="not allocated"):
        tcgen05_cp(t, "128x256b", tmem_address(0, 28), _rows(128, 32))


def test_shift_down():
    t = _tm()
    t.cells[:] = np.arange(128 * 512, dtype=np.uint32).reshape(128, 512)
    before = t.cells.copy()
    tcgen05_shift_down(t, tmem_address(32, 16))
    # rows 32..62 moved to 33..63 in columns 16..23; row 32 unchanged; rest untouched
    np.testing.assert_array_equal(t.cells[33:64, 16:24], before[32:63, 16:24])
    np.testing.assert_array_equal(t.cells[32, 16:24], before[32, 16:24])
    mask = np.ones_like(before, bool)
    mask[33:64, 16:24] = False
    np.testing.assert_array_equal(t.cells[mask], before[mask])


def test_shift_alignment_and_pair():
    with pytest.raises(TmemAccessError, match="aligned to 32"):
        tcgen05_shift_down(_tm(), tmem_address(16, 0))
    p = CtaPair()
    p.alloc(32)
    p.odd.cells[0, 0:8] = 9
    tcgen05_shift_down(p, 0, cta_group=2)
    assert np.all(p.odd.cells[1, 0:8] == 9) and np.all(p.even.cells[:32, :8] == 0)


def test_cp_rows_from_smem_no_swizzle():
    # K-major canonical, no swizzle: 8-row x 16-byte core matrices; row r chunk k at
    # start + (r//8)*SBO + (r%8)*16 + k*LBO.  Here LBO = 128 B, SBO = 256 B, start = 1024.
    smem = np.random.default_rng(7).integers(0, 256, 64 * 1024, dtype=np.uint8)
    desc = (1024 >> 4) | ((128 >> 4) << 16) | ((256 >> 4) << 32) | (1 << 46)
    rows = cp_rows_from_smem(smem, desc, "128x256b")
    assert rows.shape == (128, 32)
    for r in (0, 7, 8, 77, 127):
        for k in (0, 1):
            a = 1024 + (r // 8) * 256 + (r % 8) * 16 + k * 128
            np.testing.assert_array_equal(rows[r, 16 * k:16 * k + 16], smem[a:a + 16])


def test_cp_rows_from_smem_128b_swizzle():
    # K-major 128B swizzle (FACTS section 3, CuTe): row r chunk k sits at
    # start + (r//8)*SBO + (r%8)*128 + 16k, then address bits [4,7) ^= bits [7,10).
    smem = np.random.default_rng(8).integers(0, 256, 64 * 1024, dtype=np.uint8)
    desc = (2048 >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 46) | (2 << 61)
    rows = cp_rows_from_smem(smem, desc, "128x256b")
    for r in (0, 1, 7, 8, 77, 127):
        for k in (0, 1):
            a = 2048 + (r // 8) * 1024 + (r % 8) * 128 + 16 * k
            a ^= ((a >> 7) & 7) << 4
            np.testing.assert_array_equal(rows[r, 16 * k:16 * k + 16], smem[a:a + 16])


def test_cp_and_shift_keep_one_cta_group_per_kernel():
    from ptxsim.errors import CtaGroupMismatch
    p = CtaPair()
    p.alloc(32)                                   # .cta_group::2
    with pytest.raises(CtaGroupMismatch):
        tcgen05_cp(p.even, "128x128b", 0, _rows(128, 16))
    with pytest.raises(CtaGroupMismatch):
        tcgen05_shift_down(p.odd, 0)
    t = _tm()                                     # .cta_group::1
    with pytest.raises(CtaGroupMismatch):
        tcgen05_cp((t, TensorMemory()), "128x128b", 0, _rows(128, 16), cta_group=2)
