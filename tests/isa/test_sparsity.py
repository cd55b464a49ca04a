"""Sparsity of tcgen05.mma.sp (9.7.16.10.8): metadata values, decompression, placement in
Tensor Memory. Expected values are worked by hand from the spec's index lists and FACTS.md
section 4 (CuTe tmem_e_frg)."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.errors import OperandError, SparsityMetadataError
from ptxsim.isa import sparsity

X, Y = 0x1111, 0x2222      # two stored element bit patterns


@pytest.mark.parametrize("nib,expect", [
    # 2:4: nibble = idx0 | idx1 << 2, stored element i goes to position idx_i (9.7.16.10.8.2)
    (0b0100, [X, Y, 0, 0]), (0b1000, [X, 0, Y, 0]), (0b1100, [X, 0, 0, Y]),
    (0b1001, [0, X, Y, 0]), (0b1101, [0, X, 0, Y]), (0b1110, [0, 0, X, Y]),
    (0b0110, [0, Y, X, 0]),          # (idx0, idx1) = (2, 1): listed by the spec too
])
def test_2of4_values(nib, expect):
    out = sparsity.decompress(np.array([[X, Y]], np.uint16), np.array([[nib]]), "f16")
    assert out.tolist() == [expect]


def test_tf32_1of2_values():
    """9.7.16.10.8.1: 0b0100 -> first element, 0b1110 -> second."""
    out = sparsity.decompress(np.array([[X, Y]], np.uint32), np.array([[0b0100, 0b1110]]), "tf32")
    assert out.tolist() == [[X, 0, 0, Y]]


def test_fp4_pairs():
    """9.7.16.10.8.3: the two indices name 2-element sub-chunks of the 8-element chunk."""
    comp = np.array([[1, 2, 3, 4]], np.uint8)
    out = sparsity.decompress(comp, np.array([[0b1101]]), "mxf4")        # pairs 1 and 3
    assert out.tolist() == [[0, 0, 1, 2, 0, 0, 3, 4]]


@pytest.mark.parametrize("kind", ["f16", "i8", "mxf4"])
def test_only_the_listed_values_are_meaningful(kind):
    legal = {0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b0110, 0b1110}
    g = sparsity.granularity(kind)
    for v in range(16):
        comp = np.ones((1, g.chunk // 2), np.uint8)
        if v in legal:
            sparsity.decompress(comp, np.array([[v]]), kind)
        else:
            with pytest.raises(SparsityMetadataError):
                sparsity.decompress(comp, np.array([[v]]), kind)


def test_tf32_other_values_are_undefined():
    for v in range(16):
        if v not in (0b0100, 0b1110):
            with pytest.raises(SparsityMetadataError, match="undefined"):
                sparsity.decompress(np.ones((1, 1), np.uint32), np.array([[v]]), "tf32")


@pytest.mark.parametrize("kind,K", [("f16", 32), ("tf32", 16), ("i8", 64), ("mxf4nvf4", 128)])
def test_compress_round_trip_and_refuses_dense(kind, K):
    rng = np.random.default_rng(0)
    g = sparsity.granularity(kind)
    units = g.chunk // g.unit
    keep = np.argsort(rng.random((8, K // g.chunk, units)), axis=-1) < units // 2
    mask = np.repeat(keep, g.unit, axis=-1).reshape(8, K)
    dense = np.where(mask, rng.integers(1, 255, (8, K)), 0).astype(np.uint8)
    comp, nib = sparsity.compress(dense, kind)
    assert comp.shape == (8, K // 2)
    np.testing.assert_array_equal(sparsity.decompress(comp, nib, kind), dense)
    with pytest.raises(OperandError, match="sparse"):
        sparsity.compress(np.ones((8, K), np.uint8), kind)


# ---- metadata in Tensor Memory (M = 128, FACTS section 4) -----------------------------------
def _one_nibble(kind, K, row, chunk, value=0b1001):
    g = sparsity.granularity(kind)
    nib = np.zeros((128, K // g.chunk), np.uint8)
    nib[row, chunk] = value
    cells = np.zeros((128, 512), np.uint32)
    sparsity.write_metadata(cells, 0, 100, nib, kind)
    return cells


def test_f16_metadata_placement():
    """f16: element k of row m at lane (m%8) + 8*((k/16)%2) + 16*(m/16), bit (k%16) +
    16*((m/8)%2). Row 13, chunk 5 (k = 20..23): lane 5 + 8 + 0 = 13, bits 4..7 + 16 = 20..23."""
    cells = _one_nibble("f16", 32, 13, 5, 0b1001)
    assert list(zip(*np.nonzero(cells))) == [(13, 100)]
    assert cells[13, 100] == 0b1001 << 20


def test_tf32_metadata_placement():
    """tf32: two bits per element, element k at lane (m%8) + 8*((k/8)%2) + 16*(m/16), bit
    2*(k%8) + 16*((m/8)%2). Row 40, chunk 6 (k = 12, 13): lane 0 + 8 + 32 = 40, bit 8 + 16."""
    cells = _one_nibble("tf32", 16, 40, 6, 0b1110)
    assert list(zip(*np.nonzero(cells))) == [(40, 100)]
    assert cells[40, 100] == 0b1110 << 24


def test_8bit_metadata_placement():
    """8-bit kinds: lane m, bit k over two columns. Row 99, chunk 9 (k = 36..39): column 101,
    bits 4..7."""
    cells = _one_nibble("i8", 64, 99, 9)
    assert list(zip(*np.nonzero(cells))) == [(99, 101)]
    assert cells[99, 101] == 0b1001 << 4


def test_fp4_metadata_placement():
    """fp4 kinds: lane m, bit k/2. Row 3, chunk 15 (k = 120..127): bits 60..63 -> column 101,
    bits 28..31."""
    cells = _one_nibble("mxf4", 128, 3, 15)
    assert list(zip(*np.nonzero(cells))) == [(3, 101)]
    assert cells[3, 101] == 0b1001 << 28


def test_read_metadata_inverse_and_selector():
    rng = np.random.default_rng(1)
    nib = rng.choice(list(sparsity.MEANINGFUL_2OF4), (128, 8)).astype(np.uint8)
    cells = np.zeros((128, 512), np.uint32)
    sparsity.write_metadata(cells, 0, 7, nib, "f16", selector=3)
    np.testing.assert_array_equal(sparsity.read_metadata(cells, 0, 7, "f16", 32, selector=3), nib)
    assert not cells[:, 7].any() and cells[:, 10].any()
    with pytest.raises(OperandError, match="selector"):
        sparsity.selector_column("i8", 1)
    assert sparsity.selector_column("mxf8f6f4", 3) == 0      # assumed 0 (9.7.16.10.8.4.5)


def test_ws_metadata_copies_hand_example():
    """.ws M = 64 / 32 (CuTe tmem_e_frg_ws): rows placed as for M = 128, the whole block
    repeated at lane +64 (M = 64) or +32, +64, +96 (M = 32). f16 row 13, chunk 5 -> lane 13."""
    for M, lanes in ((64, [13, 77]), (32, [13, 45, 77, 109])):
        nib = np.zeros((M, 8), np.uint8)
        nib[13, 5] = 0b1001
        cells = np.zeros((128, 512), np.uint32)
        sparsity.write_metadata(cells, 0, 100, nib, "f16", M=M, ws=True)
        assert sorted(zip(*np.nonzero(cells))) == [(lane, 100) for lane in lanes]
        assert (cells[lanes, 100] == 0b1001 << 20).all()
        np.testing.assert_array_equal(sparsity.read_metadata(cells, 0, 100, "f16", 32, M=M,
                                                             ws=True), nib)


def test_ws_metadata_copies_must_agree():
    from ptxsim.errors import UndefinedBehavior
    nib = np.full((64, 16), 0b0100, np.uint8)
    cells = np.zeros((128, 512), np.uint32)
    sparsity.write_metadata(cells, 0, 0, nib, "i8", M=64, ws=True)
    cells[64 + 5, 1] ^= 1 << 7
    with pytest.raises(UndefinedBehavior, match="copies"):
        sparsity.read_metadata(cells, 0, 0, "i8", 64, M=64, ws=True)


def test_non_ws_m64_metadata_not_established():
    from ptxsim.errors import LayoutError
    with pytest.raises(LayoutError, match="not established"):
        sparsity.metadata_cells("f16", 32, M=64)


def test_undefined_metadata_on_a_chunk_of_zeros_runs_with_a_warning():
    """CUTLASS's SM90StructuredSparseCompressor writes metadata 0b0000 (both indices 0, which
    9.7.16.10.8 leaves undefined) for a chunk whose four elements are zero. Both stored values
    are zero, so the chunk adds nothing whatever the hardware does with the repeated index:
    ptxsim runs it, warning; the same metadata over a non-zero value stays an error."""
    from ptxsim.errors import SpecDeviationWarning
    one, two, neg0 = 0x3C00, 0x4000, 0x8000            # f16 1.0, 2.0, -0.0
    nib = np.array([[0b0000, 0b0100]])                  # chunk 0: idx 0, 0; chunk 1: idx 0, 1
    for zeros in ([0, 0], [neg0, 0]):
        stored = np.array([zeros + [one, two]], np.uint16)
        with pytest.warns(SpecDeviationWarning, match="0b0000 .*both stored values"):
            dense = sparsity.decompress(stored, nib, "f16")
        assert dense.tolist() == [[0, 0, 0, 0, one, two, 0, 0]] or \
            dense.tolist() == [[neg0, 0, 0, 0, one, two, 0, 0]]
    with pytest.raises(SparsityMetadataError, match="0b0000"):
        sparsity.decompress(np.array([[one, 0, one, two]], np.uint16), nib, "f16")
    # i8: 0x80 is -128, not a zero
    with pytest.raises(SparsityMetadataError):
        sparsity.decompress(np.array([[0x80, 0, 1, 2]], np.uint8), nib, "i8")
