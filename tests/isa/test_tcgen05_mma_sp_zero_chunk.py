"""tcgen05.mma.sp over CUTLASS's metadata for an all-zero chunk (CUTLASS example 83).

CUTLASS's structured-sparse compressor (transform/kernel/sm90_sparse_gemm_compressor.hpp,
MetadataOneChunk2to4) starts every chunk's metadata at 0b0000 and ORs in idx << 2*i for each
non-zero element it keeps; a chunk of four zeros keeps none, so it stores two zeros under
0b0000 (both indices 0), a value 9.7.16.10.8.2 does not list. ptxsim runs such a chunk with a
SpecDeviationWarning (both stored values are zero, so it adds nothing); the same value over a
non-zero stored element stays a SparsityMetadataError. These tests build the compressed A and
metadata by CUTLASS's rule, here, and compare D with the dense product of the logical A (small
integers: exact in f32), for M = 128 (cta_group::1) and M = 256 across a CTA pair (the
example's `tcgen05.mma.sp.cta_group::2.kind::f16`)."""
from __future__ import annotations

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, new_cta, new_pair, read_d, stage

from ptxsim.errors import SparsityMetadataError, SpecDeviationWarning
from ptxsim.isa import sparsity
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, tcgen05_mma
from ptxsim.isa.tmem import tmem_address

K, N = 32, 64                       # .kind::f16 sparse: K = 32 logical (16 stored) per MMA
ZERO_CHUNKS = [(109, 6), (3, 0), (200, 7), (255, 2)]   # (row, chunk); rows >= 128 need M = 256


def cutlass_compress(a: np.ndarray):
    """CUTLASS's SM90StructuredSparseCompressor rule for 2:4 (K-major, 16-bit A): keep the
    non-zero elements in order; one non-zero at position 3 -> (0, 3) with a zero first; one
    elsewhere -> (p, 3) with a zero second; none -> two zeros and metadata 0b0000."""
    M, Kl = a.shape
    stored = np.zeros((M, Kl // 2), np.uint16)
    nib = np.zeros((M, Kl // 4), np.uint8)
    for m in range(M):
        for j in range(Kl // 4):
            chunk = a[m, 4 * j:4 * j + 4]
            idx = [i for i in range(4) if chunk[i] & 0x7FFF]
            vals = [chunk[i] for i in idx]
            if len(idx) == 1:
                idx, vals = ([0, 3], [0, vals[0]]) if idx[0] == 3 else \
                            ([idx[0], 3], [vals[0], 0])
            for p, (i, v) in enumerate(zip(idx, vals)):
                stored[m, 2 * j + p] = v
                nib[m, j] |= i << (2 * p)
    return stored, nib


def logical_a(rng, M):
    """(M, K) f16 bits of small integers, 2:4 sparse (two non-zeros per chunk, random places),
    with the ZERO_CHUNKS all zero."""
    vals = rng.integers(1, 5, (M, K)) * rng.choice([-1, 1], (M, K))
    keep = np.zeros((M, K // 4, 4), bool)
    pos = np.argsort(rng.random((M, K // 4, 4)), axis=-1)[..., :2]
    np.put_along_axis(keep, pos, True, axis=-1)
    a = np.where(keep.reshape(M, K), vals, 0).astype(np.float16)
    for m, j in ZERO_CHUNKS:
        if m < M:
            a[m, 4 * j:4 * j + 4] = 0
    return a


def run(M, stored, nib, b):
    """One tcgen05.mma.sp (A and B in shared memory, metadata at column 256 of each CTA)."""
    pair = M == 256
    state, base = new_pair() if pair else new_cta()
    ctas = state.ctas if pair else (state,)
    Mc, Nc = M // len(ctas), N // len(ctas)
    for c, cta in enumerate(ctas):
        rows = slice(c * Mc, (c + 1) * Mc)
        da = stage(cta.smem, stored[rows], "f16", "f16", 0)
        db = stage(cta.smem, b[c * Nc:(c + 1) * Nc], "f16", "f16", 32768)
        sparsity.write_metadata(cta.tmem.cells, 0, 256, nib[rows], "f16")
    idesc = InstrDescriptor.make("f16", m=M, n=N, atype="f16", btype="f16", dtype="f32",
                                 sparse=True).encode()
    tcgen05_mma(state, Tcgen05Mma("f16", cta_group=len(ctas), sparse=True), d_tmem=base,
                a_desc=da.encode(), b_desc=db.encode(), sp_meta_tmem=tmem_address(0, 256),
                idesc=idesc, enable_input_d=False)
    return np.concatenate([read_d(c, base, Mc, N) for c in ctas])


@pytest.mark.parametrize("M", [128, 256])
def test_zero_chunk_metadata_0b0000_runs_and_adds_nothing(M):
    rng = np.random.default_rng(83)
    a = logical_a(rng, M)
    b = (rng.integers(-4, 5, (N, K))).astype(np.float16)
    stored, nib = cutlass_compress(a.view(np.uint16))
    for m, j in ZERO_CHUNKS:
        if m < M:
            assert nib[m, j] == 0 and not stored[m, 2 * j:2 * j + 2].any()
    with pytest.warns(SpecDeviationWarning, match="0b0000"):
        d = run(M, stored, nib, b.view(np.uint16))
    expect = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)
    np.testing.assert_array_equal(d.view(np.float32), expect)


@pytest.mark.filterwarnings("ignore::ptxsim.errors.SpecDeviationWarning")   # the other chunks
@pytest.mark.parametrize("M", [128, 256])
def test_0b0000_over_a_non_zero_stored_value_stays_an_error(M):
    rng = np.random.default_rng(84)
    a = logical_a(rng, M)
    b = (rng.integers(-4, 5, (N, K))).astype(np.float16)
    stored, nib = cutlass_compress(a.view(np.uint16))
    m, j = ZERO_CHUNKS[-1] if M == 256 else ZERO_CHUNKS[0]
    stored[m, 2 * j + 1] = np.float16(1).view(np.uint16)       # 1.0 under 0b0000
    with pytest.raises(SparsityMetadataError, match="0b0000") as e:
        run(M, stored, nib, b.view(np.uint16))
    assert (e.value.row, e.value.chunk) == (m, j)


def test_stored_positions_by_hand():
    """Stored element i of chunk j sits at logical column chunk*j + idx_i; nibble idx0 | idx1 << 2
    (9.7.16.10.8.2); tf32 0b0100 -> 0, 0b1110 -> 1 (9.7.16.10.8.1); fp4 indices name pairs
    (9.7.16.10.8.3)."""
    got = sparsity.stored_positions(np.array([[0b0100, 0b1110, 0b0110, 0b1001]]), "f16")
    assert got.tolist() == [[0, 1, 6, 7, 10, 9, 13, 14]]
    assert sparsity.stored_positions(np.array([[0b0000]]), "f16").tolist() == [[0, 0]]
    assert sparsity.stored_positions(np.array([[0b0100, 0b1110]]), "tf32").tolist() == [[0, 3]]
    assert sparsity.stored_positions(np.array([[0b1101]]), "mxf4").tolist() == [[2, 3, 6, 7]]


@pytest.mark.filterwarnings("ignore::ptxsim.errors.SpecDeviationWarning")
def test_zero_chunk_meets_the_b_row_its_indices_name():
    """0b0000 names position 0 twice: the chunk's two stored zeros meet B row 4j, so an Inf
    there makes the output NaN (0 * Inf), as a pruned-away row would not (docs/tcgen05-mma.md)."""
    rng = np.random.default_rng(85)
    a = logical_a(rng, 128)
    b = (rng.integers(-4, 5, (N, K))).astype(np.float16)
    m, j = ZERO_CHUNKS[0]
    b[5, 4 * j] = np.inf
    b[6, 4 * j + 1] = np.inf              # a row the chunk's indices do not name
    stored, nib = cutlass_compress(a.view(np.uint16))
    d = run(128, stored, nib, b.view(np.uint16)).view(np.float32)
    assert np.isnan(d[m, 5])
    assert d[m, 6] == (a[m].astype(np.float64) @ np.where(np.isinf(b[6]), 0, b[6]))
