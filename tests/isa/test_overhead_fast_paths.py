"""Fast paths of the tcgen05.mma operand reads (docs/performance.md, issue 10, third pass) give the
bits of the general path and keep its errors: the word gather of whole aligned elements in
shared memory, and the per-column-range allocation check of a rectangular D."""
import sys

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, stage

from ptxsim.errors import TmemAccessError
from ptxsim.isa.smem_layout import (_gather_plan, canonical_descriptor, matrix_to_smem,
                                    smem_to_matrix)
from ptxsim.isa.tcgen05_mma import tcgen05_mma

little_endian_host = pytest.mark.skipif(sys.byteorder != "little",
                                        reason="the word gather runs on little-endian hosts only")


def _by_hand_k_major_none(smem, start, rows, cols, elem_bytes):
    """K-major, no swizzle, canonical strides (spec Figure 188 convention; canonical_descriptor):
    element (mn, k) sits in 16-byte chunk start + (mn % 8) * 16 + (mn // 8) * SBO + (k // t) * LBO
    with SBO = 128, LBO = 128 * ceil(rows / 8), t = 16 / elem_bytes elements per chunk, at byte
    (k % t) * elem_bytes of the chunk, little-endian."""
    t = 16 // elem_bytes
    sbo, lbo = 128, 128 * -(-rows // 8)
    out = np.zeros((rows, cols), np.uint64)
    for mn in range(rows):
        for k in range(cols):
            a = start + (mn % 8) * 16 + (mn // 8) * sbo + (k // t) * lbo + (k % t) * elem_bytes
            out[mn, k] = int.from_bytes(bytes(smem[a:a + elem_bytes]), "little")
    return out


@little_endian_host
@pytest.mark.parametrize("fmt, elem_bytes, dtype", [("bf16", 2, np.uint16), ("e4m3", 1, np.uint8),
                                                    ("tf32", 4, np.uint32)])
def test_word_gather_matches_hand_derived_addresses(fmt, elem_bytes, dtype):
    rng = np.random.default_rng(7)
    smem = rng.integers(0, 256, 16384, dtype=np.uint8)
    rows, cols = 24, 32 // elem_bytes
    desc = canonical_descriptor(fmt, rows, cols, "K", "none", start=1024)
    _, _, _, _, elem = _gather_plan(desc, fmt, None, rows, cols, "K", smem.size)
    assert elem is not None                       # whole aligned words: the word gather runs
    got = smem_to_matrix(smem, desc, fmt, rows, cols, "K")
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _by_hand_k_major_none(smem, 1024, rows, cols, elem_bytes))


@little_endian_host
@pytest.mark.parametrize("fmt", ["bf16", "e4m3", "tf32"])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("major", ["K", "MN"])
def test_word_gather_equals_byte_gather_and_writer(fmt, swizzle, major):
    """The word path (contiguous smem) against the byte path (the same bytes in a strided
    view, which the word path refuses) and against matrix_to_smem's placement."""
    if fmt == "tf32" and major == "MN":           # only 128B with 32B atomicity (Table 52)
        if swizzle != "128B":
            pytest.skip("tf32 MN-major exists only as 128B_base32B")
        swizzle = "128B_base32B"
    rng = np.random.default_rng(3)
    rows, cols = 64, 16 if major == "K" else 32
    if fmt == "tf32" and major == "K":
        cols = 8
    desc = canonical_descriptor(fmt, rows, cols, major, swizzle, start=2048)
    bits = {"bf16": 16, "e4m3": 8, "tf32": 32}[fmt]
    m = rng.integers(0, 1 << bits, (rows, cols), dtype=np.uint64)
    smem = rng.integers(0, 256, 32768, dtype=np.uint8)
    matrix_to_smem(m, smem, desc, fmt, major)
    strided = np.zeros(2 * smem.size, np.uint8)[::2]
    strided[:] = smem
    words = smem_to_matrix(smem, desc, fmt, rows, cols, major)
    byte_path = smem_to_matrix(strided, desc, fmt, rows, cols, major)
    np.testing.assert_array_equal(words, byte_path)
    np.testing.assert_array_equal(words, m)


@pytest.mark.parametrize("fmt, kind", [("e2m1", "f8f6f4"), ("e3m2", "f8f6f4"), ("e2m1", "mxf4")])
def test_sub_byte_formats_keep_the_byte_path(fmt, kind):
    desc = canonical_descriptor(fmt, 16, 32 if kind == "mxf4" else 16, "K", "none", kind=kind)
    cols = 32 if kind == "mxf4" else 16
    _, _, _, _, elem = _gather_plan(desc, fmt, kind, 16, cols, "K", 8192)
    assert elem is None


def test_d_allocation_check_names_first_unallocated_cell_and_follows_dealloc():
    rng = np.random.default_rng(0)
    cta, base = new_cta(ncols=128)
    da = stage(cta.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 0).encode()
    db = stage(cta.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 16384).encode()
    idesc = InstrDescriptor.make("f16", m=128, n=128, atype="bf16", btype="bf16").encode()
    run = lambda col: tcgen05_mma(cta, kind="f16", d_tmem=base + col, a_desc=da,  # noqa: E731
                                  b_desc=db, idesc=idesc)
    run(0)                                        # columns 0..127: allocated
    with pytest.raises(TmemAccessError, match="not allocated") as e:
        run(64)                                   # columns 64..191: 128 is the first hole
    assert (e.value.lane, e.value.column) == (0, 128)
    cta.tmem.dealloc(base, 128)                   # the same D block again: now unallocated
    with pytest.raises(TmemAccessError, match="not allocated") as e:
        run(0)
    assert (e.value.lane, e.value.column) == (0, 0)
    cta.tmem.strict = False                       # checks off: the rectangle is written
    run(0)


@pytest.mark.parametrize("batched", [False, True])
def test_result_c_is_the_accumulator_read_before_d_is_written(batched):
    """C is read as a view of Tensor Memory; MmaResult.c must still hold the C that was read
    (not the D written over it), alone and through tcgen05_mma_batch."""
    from ptxsim.isa.tcgen05_mma import Tcgen05Mma, tcgen05_mma_batch
    rng = np.random.default_rng(5)
    idesc = InstrDescriptor.make("f16", m=128, n=64, atype="bf16", btype="bf16").encode()
    calls, before = [], []
    for _ in range(2 if batched else 1):
        cta, base = new_cta(ncols=128)
        da = stage(cta.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 0).encode()
        db = stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 16384).encode()
        c0 = rng.integers(0, 1 << 30, (128, 64)).astype(np.uint32)   # positive f32 bit patterns
        cta.tmem.cells[:, 32:96] = c0                                # D / C at column 32
        before.append(c0)
        calls.append((cta, Tcgen05Mma("f16"), dict(d_tmem=base + 32, a_desc=da, b_desc=db,
                                                   idesc=idesc)))
    if batched:
        results = [finish() for finish in tcgen05_mma_batch(calls)]
    else:
        results = [tcgen05_mma(cta, mma, **ops) for cta, mma, ops in calls]
    for (cta, _, _), res, c0 in zip(calls, results, before):
        np.testing.assert_array_equal(res.c[0], c0)
        np.testing.assert_array_equal(cta.tmem.cells[:, 32:96], res.d[0])
        assert not np.array_equal(res.d[0], c0)                      # D really replaced C
        assert not np.shares_memory(res.c[0], cta.tmem.cells)
