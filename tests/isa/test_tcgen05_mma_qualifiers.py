"""Every operand and qualifier of tcgen05.mma changes the result the way 9.7.16.10 says.
Expected values come from numerics.mma on operands transformed here by hand (sign bits flipped,
rows shifted, columns zeroed, C scaled by a power of two), or from hand arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

from test_tcgen05_mma_kit import (InstrDescriptor, gen_bits, new_cta, new_pair, numerics,
                                  read_d, stage)

from ptxsim.errors import (CollectorBufferError, DescriptorError, OperandError,
                           SparsityMetadataError)
from ptxsim.isa import sparsity
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, a_tmem_words, tcgen05_mma, write_scale_factors
from ptxsim.isa.datapath import datapath_layout
from ptxsim.isa.tmem import tmem_address

BF16 = dict(kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
M, N, K = 128, 32, 16
A_AT, B_AT = 0, 16384


def ref(a, b_nk, c, **kw):
    return numerics.mma(a, b_nk.T, c, arch="sm_100", **{**BF16, **kw})


def sparse_ref(a_logical, b_nk, c, keep, **kw):
    """The sparse model (numerics.mma_sparse; measured on sm_90, assumed for tcgen05): each
    output one fused dot product of the kept elements of its row with the B rows at the kept
    positions `keep` of every chunk of 4, blocks counted in stored elements."""
    m, k = a_logical.shape
    cols = (4 * np.arange(k // 4)[:, None] + np.array(keep)).reshape(-1)      # (K/2,)
    b_rows = np.broadcast_to(b_nk.T[cols], (m, cols.size, b_nk.shape[0]))
    return numerics.mma_sparse(a_logical[:, cols], b_rows, c, arch="sm_100", **{**BF16, **kw})


def setup(seed=0, m=M, n=N, kind="f16", atype="bf16", btype="bf16", k=K, pair=False,
          a_major="K", b_major="K", swizzle="128B"):
    rng = np.random.default_rng(seed)
    state, base = new_pair() if pair else new_cta()
    A = gen_bits(rng, atype, (m, k))
    B = gen_bits(rng, btype, (n, k))
    ctas = state.ctas if pair else (state,)
    mc, nc = m // len(ctas), n // len(ctas)
    for c, cta in enumerate(ctas):
        da = stage(cta.smem, A[c * mc:(c + 1) * mc], atype, kind, A_AT, a_major, swizzle)
        db = stage(cta.smem, B[c * nc:(c + 1) * nc], btype, kind, B_AT, b_major, swizzle)
    return state, base, A, B, da.encode(), db.encode(), rng


def idesc(m=M, n=N, **kw):
    args = dict(kind="f16", atype="bf16", btype="bf16", dtype="f32")
    args.update(kw)
    kind = args.pop("kind")
    return InstrDescriptor.make(kind, m=m, n=n, **args).encode()


def preload_d(cta, base, C):
    """Write an accumulator into layout D (lane m, column n) as tcgen05.st would."""
    cta.tmem.cells[:C.shape[0], base:base + C.shape[1]] = C


# ---- enable-input-d -----------------------------------------------------------------------
def test_enable_input_d_false_ignores_d_true_accumulates():
    cta, base, A, B, da, db, rng = setup()
    C = gen_bits(rng, "f32", (M, N)).astype(np.uint32)
    preload_d(cta, base, C)
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(),
                enable_input_d=False)
    np.testing.assert_array_equal(read_d(cta, base, M, N), ref(A, B, np.zeros((M, N), np.uint32)))
    preload_d(cta, base, C)
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(),
                enable_input_d=True)
    np.testing.assert_array_equal(read_d(cta, base, M, N), ref(A, B, C))


# ---- scale-input-d ------------------------------------------------------------------------
def test_scale_input_d_hand_values():
    """A = 0: D = C * 2^-s exactly (9.7.16.10.9.1: D = A*B + D * 2^-scale-input-d)."""
    cta, base = new_cta()
    C = np.full((M, N), np.float32(3.0)).view(np.uint32)
    C[1] = np.float32(-1.5).view(np.uint32)
    preload_d(cta, base, C)
    da = stage(cta.smem, np.zeros((M, K), np.uint16), "bf16", "f16", A_AT)
    db = stage(cta.smem, np.zeros((N, K), np.uint16), "bf16", "f16", B_AT)
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da.encode(), b_desc=db.encode(),
                idesc=idesc(), enable_input_d=True, scale_input_d=3)
    d = read_d(cta, base, M, N).view(np.float32)
    assert d[0, 0] == 0.375 and d[1, 5] == -0.1875


@pytest.mark.parametrize("s", [1, 7, 15])
def test_scale_input_d_equals_prescaled_c(s):
    cta, base, A, B, da, db, rng = setup(seed=s)
    C = (rng.standard_normal((M, N)) * 100).astype(np.float32)
    preload_d(cta, base, C.view(np.uint32))
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(),
                enable_input_d=True, scale_input_d=s)
    c_scaled = (C * np.float32(2.0 ** -s)).view(np.uint32)     # exact: stays normal
    np.testing.assert_array_equal(read_d(cta, base, M, N), ref(A, B, c_scaled))


def test_scale_input_d_tf32():
    cta, base, A, B, da, db, rng = setup(kind="tf32", atype="tf32", btype="tf32", k=8)
    C = (rng.standard_normal((M, N)) * 8).astype(np.float32)
    preload_d(cta, base, C.view(np.uint32))
    tcgen05_mma(cta, kind="tf32", d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(kind="tf32", atype="tf32", btype="tf32"), scale_input_d=2)
    expect = numerics.mma(A, B.T, (C / 4).view(np.uint32), arch="sm_100", kind="tf32",
                          atype="tf32", btype="tf32", ctype="f32", dtype="f32")
    np.testing.assert_array_equal(read_d(cta, base, M, N), expect)


# ---- disable-output-lane ------------------------------------------------------------------
def test_disable_output_lane_keeps_masked_lanes():
    cta, base, A, B, da, db, rng = setup()
    old = gen_bits(rng, "f32", (M, N)).astype(np.uint32)
    preload_d(cta, base, old)
    mask = np.array([0b101, 0, 0, 0x80000000], np.uint32)    # lanes 0, 2, 127
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(),
                enable_input_d=False, disable_output_lane=mask)
    got = read_d(cta, base, M, N)
    new = ref(A, B, np.zeros((M, N), np.uint32))
    kept = np.zeros(M, bool)
    kept[[0, 2, 127]] = True
    np.testing.assert_array_equal(got[kept], old[kept])
    np.testing.assert_array_equal(got[~kept], new[~kept])


def test_disable_output_lane_cta_pair_eight_words():
    pair, base, A, B, da, db, rng = setup(m=256, pair=True)
    mask = np.zeros(8, np.uint32)
    mask[4] = 1                                            # odd CTA, lane 0 (docs: assumption)
    for c in pair.ctas:
        preload_d(c, base, np.full((128, N), 0xDEAD, np.uint32))
    tcgen05_mma(pair, kind="f16", cta_group=2, d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(m=256), enable_input_d=False, disable_output_lane=mask)
    new = ref(A, B, np.zeros((256, N), np.uint32))
    np.testing.assert_array_equal(read_d(pair.even, base, 128, N), new[:128])
    odd = read_d(pair.odd, base, 128, N)
    assert (odd[0] == 0xDEAD).all()
    np.testing.assert_array_equal(odd[1:], new[129:])


# ---- negate / transpose -------------------------------------------------------------------
@pytest.mark.parametrize("neg_a,neg_b", [(1, 0), (0, 1), (1, 1)])
def test_negate_flips_sign_bits(neg_a, neg_b):
    cta, base, A, B, da, db, rng = setup(seed=2)
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(negate_a=bool(neg_a), negate_b=bool(neg_b)), enable_input_d=False)
    expect = ref(A ^ np.uint16(0x8000 * neg_a), B ^ np.uint16(0x8000 * neg_b),
                 np.zeros((M, N), np.uint32))
    np.testing.assert_array_equal(read_d(cta, base, M, N), expect)


@pytest.mark.parametrize("ta,tb", [(1, 0), (0, 1), (1, 1)])
def test_transpose_reads_mn_major(ta, tb):
    """Transpose bits = MN-major operands (9.7.16.10.6): same logical product."""
    cta, base, A, B, da, db, rng = setup(seed=4, a_major="MN" if ta else "K",
                                         b_major="MN" if tb else "K", swizzle="64B")
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(transpose_a=bool(ta), transpose_b=bool(tb)), enable_input_d=False)
    np.testing.assert_array_equal(read_d(cta, base, M, N), ref(A, B, np.zeros((M, N), np.uint32)))
    # reading the same bytes K-major (transpose bit off) gives another matrix
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(),
                enable_input_d=False)
    assert (read_d(cta, base, M, N) != ref(A, B, np.zeros((M, N), np.uint32))).any()


# ---- saturate (i8), f16 D packing ------------------------------------------------------------
def test_i8_saturate_clamps_instead_of_wrapping():
    cta, base = new_cta()
    A = np.full((M, 32), 127, np.uint8)                  # s8 127
    B = np.full((N, 32), 255, np.uint8)                  # u8 255
    da = stage(cta.smem, A, "s8", "i8", A_AT)
    db = stage(cta.smem, B, "u8", "i8", B_AT)
    C = np.full((M, N), 0x7FFF0000, np.uint32)           # near INT32_MAX
    for sat, expect in ((False, (0x7FFF0000 + 32 * 127 * 255) & 0xFFFFFFFF), (True, 0x7FFFFFFF)):
        preload_d(cta, base, C)
        tcgen05_mma(cta, kind="i8", d_tmem=base, a_desc=da.encode(), b_desc=db.encode(),
                    idesc=idesc(kind="i8", atype="s8", btype="u8", dtype="s32", saturate=sat))
        assert (read_d(cta, base, M, N) == expect).all()


def test_f16_d_one_element_per_word_low_half():
    """9.7.16.10.4.1: a 16-bit D element sits in the low 16 bits of its 32-bit word."""
    cta, base, A, B, da, db, rng = setup(atype="f16", btype="f16")
    cta.tmem.cells[:M, base:base + N] = 0xFFFF0000
    tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(atype="f16", btype="f16", dtype="f16"), enable_input_d=False)
    raw = read_d(cta, base, M, N)
    assert (raw >> 16 == 0).all()
    expect = numerics.mma(A, B.T, np.zeros((M, N), np.uint16), arch="sm_100", kind="f16",
                          atype="f16", btype="f16", ctype="f16", dtype="f16")
    np.testing.assert_array_equal(raw.astype(np.uint16), expect)


# ---- block scaling: scale-factor ids, .scale_vectorsize aliases ------------------------------
def _mx_setup(kind="mxf4nvf4", stype="ue8m0", seed=6):
    rng = np.random.default_rng(seed)
    cta, base = new_cta()
    A = gen_bits(rng, "e2m1", (M, 64))
    B = gen_bits(rng, "e2m1", (N, 64))
    da = stage(cta.smem, A, "e2m1", kind, A_AT).encode()
    db = stage(cta.smem, B, "e2m1", kind, B_AT).encode()
    return cta, base, A, B, da, db, rng


@pytest.mark.parametrize("kind,vec,nsf,ids", [
    ("mxf4nvf4", "2X", 2, (0, 2)), ("mxf4nvf4", "2X", 2, (2, 0)),   # half-word, 9.7.16.10.7.2.2
    ("mxf8f6f4", "1X", 1, (3, 1)), ("mxf8f6f4", "1X", 1, (1, 2)),   # byte offset, 9.7.16.10.7.2.1
])
def test_scale_factor_ids_select_sub_columns(kind, vec, nsf, ids):
    """SFA_ID / SFB_ID pick the byte (1X) or half-word (2X) of each Tensor Memory word; the
    other bytes hold different scales that must not be used."""
    rng = np.random.default_rng(6)
    cta, base = new_cta()
    fmt, K_ = ("e2m1", 64) if kind != "mxf8f6f4" else ("e4m3", 32)
    A, B = gen_bits(rng, fmt, (M, K_)), gen_bits(rng, fmt, (N, K_))
    da = stage(cta.smem, A, fmt, kind, A_AT).encode()
    db = stage(cta.smem, B, fmt, kind, B_AT).encode()
    lay = datapath_layout(128)
    id_a, id_b = ids
    sfa = rng.integers(120, 134, (M, nsf)).astype(np.uint8)
    sfb = rng.integers(120, 134, (N, nsf)).astype(np.uint8)
    for i in range(0, 4, nsf):          # junk scales in every other sub-column
        write_scale_factors(cta.tmem.cells, tmem_address(0, 200), sfa if i == id_a else
                            rng.integers(100, 110, (M, nsf)).astype(np.uint8), "A", lay, sf_id=i)
        write_scale_factors(cta.tmem.cells, tmem_address(0, 208), sfb if i == id_b else
                            rng.integers(100, 110, (N, nsf)).astype(np.uint8), "B", lay, sf_id=i,
                            N=N)
    tcgen05_mma(cta, kind=kind, block_scale=True, scale_vec=vec, d_tmem=base, a_desc=da,
                b_desc=db, scale_a_tmem=tmem_address(0, 200), scale_b_tmem=tmem_address(0, 208),
                idesc=idesc(kind=kind, atype=fmt, btype=fmt, scale_type="ue8m0",
                            scale_a_id=id_a, scale_b_id=id_b), enable_input_d=False)
    expect = numerics.mma(A, B.T, np.zeros((M, N), np.uint32), arch="sm_100", kind=kind,
                          atype=fmt, btype=fmt, ctype="f32", dtype="f32", scale_a=sfa,
                          scale_b=sfb.T, scale_type="ue8m0", block=32)
    np.testing.assert_array_equal(read_d(cta, base, M, N), expect)


def test_scale_factor_placement_hand_example():
    """SFA row 37, scale 1, ID 2 at lanes 5 + 32r, column 1, byte 3 (CuTe tmem_sf_frg 4x1)."""
    cells = np.zeros((128, 512), np.uint32)
    sc = np.zeros((128, 2), np.uint8)
    sc[37, 1] = 0xAB
    write_scale_factors(cells, tmem_address(0, 10), sc, "A", datapath_layout(128), sf_id=2)
    assert set(zip(*np.nonzero(cells))) == {(5 + 32 * r, 11) for r in range(4)}
    assert cells[5, 11] == 0xAB << 24


@pytest.mark.parametrize("kind,vecs", [("mxf4", [None, "block32", "2X"]),
                                       ("mxf8f6f4", [None, "block32", "1X"]),
                                       ("mxf4nvf4", ["block16", "4X"]),
                                       ("mxf4nvf4", ["block32", "2X"])])
def test_scale_vec_aliases_give_the_same_result(kind, vecs):
    cta, base, A, B, da, db, rng = _mx_setup(kind)
    nsf = 4 if vecs[-1] == "4X" else 2
    lay = datapath_layout(128)
    write_scale_factors(cta.tmem.cells, tmem_address(0, 200),
                        rng.integers(120, 134, (M, nsf)).astype(np.uint8), "A", lay)
    write_scale_factors(cta.tmem.cells, tmem_address(0, 208),
                        rng.integers(120, 134, (N, nsf)).astype(np.uint8), "B", lay, N=N)
    outs = []
    for v in vecs:
        tcgen05_mma(cta, kind=kind, block_scale=True, scale_vec=v, d_tmem=base, a_desc=da,
                    b_desc=db, scale_a_tmem=tmem_address(0, 200),
                    scale_b_tmem=tmem_address(0, 208), enable_input_d=False,
                    idesc=idesc(kind=kind, atype="e2m1", btype="e2m1", scale_type="ue8m0"))
        outs.append(read_d(cta, base, M, N))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    if nsf == 4:   # 4 scales differ from 2: the vector size really changes the result
        tcgen05_mma(cta, kind=kind, block_scale=True, scale_vec="2X", d_tmem=base, a_desc=da,
                    b_desc=db, scale_a_tmem=tmem_address(0, 200),
                    scale_b_tmem=tmem_address(0, 208), enable_input_d=False,
                    idesc=idesc(kind=kind, atype="e2m1", btype="e2m1", scale_type="ue8m0"))
        assert (read_d(cta, base, M, N) != outs[0]).any()


# ---- .ashift ----------------------------------------------------------------------------------
def test_ashift_shifts_a_rows_down():
    cta, base, A, B, da, db, rng = setup(seed=8)
    cta.tmem.cells[:M, 300:308] = a_tmem_words(A, "bf16", "f16")
    tcgen05_mma(cta, kind="f16", ashift=True, d_tmem=base, a_tmem=tmem_address(0, 300),
                b_desc=db, idesc=idesc(), enable_input_d=False)
    shifted = np.concatenate([A[:1], A[:-1]])          # row m uses row m-1; row 0 keeps its own
    np.testing.assert_array_equal(read_d(cta, base, M, N),
                                  ref(shifted, B, np.zeros((M, N), np.uint32)))


def test_a_tmem_words_hand_packing():
    """Two bf16 per 32-bit column, element 0 in the low half (as tcgen05.st .pack::16b)."""
    w = a_tmem_words(np.array([[0x1111, 0x2222, 0x3333, 0x4444]], np.uint16), "bf16", "f16")
    assert w.tolist() == [[0x22221111, 0x44443333]]
    w = a_tmem_words(np.array([[1, 2, 3, 4]], np.uint8), "e2m1", "mxf8f6f4")   # bits [5:2]
    assert w.tolist() == [[0x100C0804]]
    w = a_tmem_words(np.arange(1, 9, dtype=np.uint8)[None], "e2m1", "mxf4")    # two per byte
    assert w.tolist() == [[0x87654321]]


# ---- collector buffers ------------------------------------------------------------------------
def _mma(cta, base, da, db, collector, **kw):
    return tcgen05_mma(cta, kind="f16", collector=collector, d_tmem=base, a_desc=da, b_desc=db,
                       idesc=idesc(), enable_input_d=False, **kw)


def test_collector_fill_use_lastuse():
    cta, base, A, B, da, db, rng = setup()
    expect = ref(A, B, np.zeros((M, N), np.uint32))
    _mma(cta, base, da, db, "a::fill")
    _mma(cta, base, da, db, "a::use")
    _mma(cta, base, da, db, "a::lastuse")
    np.testing.assert_array_equal(read_d(cta, base, M, N), expect)
    with pytest.raises(CollectorBufferError, match="without a live"):
        _mma(cta, base, da, db, "a::use")           # lastuse discarded the buffer


@pytest.mark.parametrize("between", ["a::discard", None])
def test_collector_use_after_discard_is_an_error(between):
    cta, base, A, B, da, db, rng = setup()
    _mma(cta, base, da, db, "a::fill")
    _mma(cta, base, da, db, between)                 # default is ::discard (9.7.16.10.9.1)
    with pytest.raises(CollectorBufferError):
        _mma(cta, base, da, db, "a::use")


def test_collector_use_after_memory_changed_is_an_error():
    cta, base, A, B, da, db, rng = setup()
    _mma(cta, base, da, db, "a::fill")
    cta.smem[A_AT:A_AT + 16] ^= 0xFF
    with pytest.raises(CollectorBufferError, match="changed"):
        _mma(cta, base, da, db, "a::use")


def test_collector_use_of_another_operand_is_an_error():
    cta, base, A, B, da, db, rng = setup()
    _mma(cta, base, da, db, "a::fill")
    other = stage(cta.smem, A, "bf16", "f16", 40960).encode()
    with pytest.raises(CollectorBufferError, match="filled from"):
        _mma(cta, base, other, db, "a::use")


# ---- .ws: layouts E/G, B collector buffers, zero-column mask, max shift -----------------------
@pytest.mark.parametrize("m,n", [(32, 64), (64, 64), (128, 64)])
def test_ws_data_path_layouts(m, n):
    """Layouts G (M=32), E (M=64), D (M=128) of .ws (FACTS section 4 / CuTe tmem_frg_ws)."""
    cta, base, A, B, da, db, rng = setup(m=m, n=n, seed=m)
    tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(m=m, n=n), enable_input_d=False)
    expect = ref(A, B, np.zeros((m, n), np.uint32))
    mm, nn = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    if m == 32:
        lane, col = mm + 32 * (nn // (n // 4)), nn % (n // 4)
    elif m == 64:
        lane, col = mm + 64 * (nn // (n // 2)), nn % (n // 2)
    else:
        lane, col = mm, nn
    np.testing.assert_array_equal(cta.tmem.cells[lane, base + col], expect)


def test_ws_collector_buffers_are_independent():
    cta, base, A, B, da, db, rng = setup(n=64)
    kw = dict(kind="f16", ws=True, d_tmem=base, a_desc=da, b_desc=db, idesc=idesc(n=64))
    tcgen05_mma(cta, collector="b1::fill", **kw)
    tcgen05_mma(cta, collector="b1::use", **kw)
    with pytest.raises(CollectorBufferError):
        tcgen05_mma(cta, collector="b2::use", **kw)
    tcgen05_mma(cta, collector="b1::lastuse", **kw)
    with pytest.raises(CollectorBufferError):
        tcgen05_mma(cta, collector="b1::use", **kw)


def test_ws_max_shift_accepted_only_with_ws():
    cta, base, A, B, da, db, rng = setup(n=64)
    tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(n=64, max_shift=2), enable_input_d=False)
    np.testing.assert_array_equal(read_d(cta, base, M, 64),
                                  ref(A, B, np.zeros((M, 64), np.uint32)))
    with pytest.raises(DescriptorError, match="max_shift"):
        tcgen05_mma(cta, kind="f16", d_tmem=base, a_desc=da, b_desc=db,
                    idesc=idesc(n=64, max_shift=2))


def test_ws_zero_column_mask_and_shift():
    """Mask bit 1 zeroes a B column; a column shift s uses B columns s..s+N-1 (9.7.16.4.3)."""
    cta, base, A, B, da, db, rng = setup(n=72)          # B has 72 rows staged: room to shift
    from ptxsim.isa.descriptors import ZeroColumnMaskDescriptor
    desc = ZeroColumnMaskDescriptor.make(skip=3, use=5, shift=4)
    mask = desc.mask(M, 64)
    tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(n=64), enable_input_d=False, zero_column_mask=desc.encode())
    Bs = B[4:68].copy()
    Bs[mask] = 0
    assert mask.sum() > 0 and not mask.all()
    np.testing.assert_array_equal(read_d(cta, base, M, 64),
                                  ref(A, Bs, np.zeros((M, 64), np.uint32)))


# ---- sparsity selector --------------------------------------------------------------------------
def _sparse_f16_setup(seed=10, n=N):
    rng = np.random.default_rng(seed)
    cta, base = new_cta()
    Alog = gen_bits(rng, "bf16", (M, 32), zero_frac=0.0)
    Alog.reshape(M, 8, 4)[:, :, 1::2] = 0                       # positions 0 and 2 kept
    comp, nib = sparsity.compress(Alog, "f16")
    assert (nib == 0b1000).all()
    B = gen_bits(rng, "bf16", (n, 32))
    da = stage(cta.smem, comp, "bf16", "f16", A_AT).encode()
    db = stage(cta.smem, B, "bf16", "f16", B_AT).encode()
    return cta, base, Alog, B, nib, da, db


@pytest.mark.parametrize("selector", [0, 1, 2, 3])
def test_sparsity_selector_is_a_column_offset_for_f16(selector):
    cta, base, Alog, B, nib, da, db = _sparse_f16_setup()
    sparsity.write_metadata(cta.tmem.cells, 0, 400 + selector, nib, "f16")
    kw = dict(kind="f16", sparse=True, d_tmem=base, a_desc=da, b_desc=db,
              sp_meta_tmem=tmem_address(0, 400), enable_input_d=False)
    tcgen05_mma(cta, idesc=idesc(sparse=True, selector=selector), **kw)
    np.testing.assert_array_equal(read_d(cta, base, M, N),
                                  sparse_ref(Alog, B, np.zeros((M, N), np.uint32), (0, 2)))
    if selector:    # column 400 is all zeros = metadata 0b0000, which is undefined
        with pytest.raises(SparsityMetadataError):
            tcgen05_mma(cta, idesc=idesc(sparse=True, selector=0), **kw)


def test_sparse_metadata_other_positions_change_the_result():
    cta, base, Alog, B, nib, da, db = _sparse_f16_setup()
    sparsity.write_metadata(cta.tmem.cells, 0, 400, np.full_like(nib, 0b1101), "f16")  # (1, 3)
    tcgen05_mma(cta, kind="f16", sparse=True, d_tmem=base, a_desc=da, b_desc=db,
                sp_meta_tmem=tmem_address(0, 400), idesc=idesc(sparse=True),
                enable_input_d=False)
    moved = np.zeros_like(Alog)
    moved.reshape(M, 8, 4)[:, :, 1::2] = Alog.reshape(M, 8, 4)[:, :, 0::2]
    np.testing.assert_array_equal(read_d(cta, base, M, N),
                                  sparse_ref(moved, B, np.zeros((M, N), np.uint32), (1, 3)))


def test_keywords_or_instruction_not_both():
    cta, base, A, B, da, db, rng = setup()
    with pytest.raises(OperandError, match="not both"):
        tcgen05_mma(cta, Tcgen05Mma("f16"), kind="f16", d_tmem=base, a_desc=da, b_desc=db,
                    idesc=idesc())


def test_layout_f_lane_alignment_16_with_a_in_tmem():
    """M = 64 (layout F) at lane alignment 16: A row m and D row m at lane (m%16) + 32*(m/16)
    + 16 (FACTS section 4 / CuTe tmem_frg, half data path)."""
    cta, base, A, B, da, db, rng = setup(m=64, n=32, seed=12)
    m = np.arange(64)
    lanes = m % 16 + 32 * (m // 16) + 16
    cta.tmem.cells[lanes, 300:308] = a_tmem_words(A, "bf16", "f16")
    tcgen05_mma(cta, kind="f16", d_tmem=tmem_address(16, base), a_tmem=tmem_address(16, 300),
                b_desc=db, idesc=idesc(m=64), enable_input_d=False)
    np.testing.assert_array_equal(cta.tmem.cells[lanes, base:base + 32],
                                  ref(A, B, np.zeros((64, 32), np.uint32)))
    assert not cta.tmem.cells[m % 16 + 32 * (m // 16), base:base + 32].any()


def test_ws_sparse_m128():
    """tcgen05.mma.ws.sp, M = 128 (layout D, metadata as M = 128)."""
    cta, base, Alog, B, nib, da, db = _sparse_f16_setup(n=64)
    sparsity.write_metadata(cta.tmem.cells, 0, 400, nib, "f16")
    tcgen05_mma(cta, kind="f16", ws=True, sparse=True, d_tmem=base, a_desc=da, b_desc=db,
                sp_meta_tmem=tmem_address(0, 400), idesc=idesc(n=64, sparse=True),
                enable_input_d=False)
    np.testing.assert_array_equal(read_d(cta, base, M, 64),
                                  sparse_ref(Alog, B, np.zeros((M, 64), np.uint32), (0, 2)))


@pytest.mark.parametrize("m", [64, 32])
@pytest.mark.parametrize("kind,fmt,K_", [("f16", "bf16", 32), ("i8", "s8", 64)])
def test_ws_sparse_m64_m32(m, kind, fmt, K_):
    """.ws.sp with M = 64 / 32: metadata copies in every lane group (CuTe tmem_e_frg_ws), D in
    layouts E / G."""
    rng = np.random.default_rng(m)
    cta, base = new_cta()
    Alog = gen_bits(rng, fmt, (m, K_), zero_frac=0.0)
    Alog.reshape(m, -1, 4)[:, :, [0, 3]] = 0                       # positions 1, 2 kept
    comp, nib = sparsity.compress(Alog, kind)
    B = gen_bits(rng, fmt, (64, K_))
    da = stage(cta.smem, comp, fmt, kind, A_AT).encode()
    db = stage(cta.smem, B, fmt, kind, B_AT).encode()
    sparsity.write_metadata(cta.tmem.cells, 0, 400, nib, kind, M=m, ws=True)
    dt = "s32" if kind == "i8" else "f32"
    tcgen05_mma(cta, kind=kind, ws=True, sparse=True, d_tmem=base, a_desc=da, b_desc=db,
                sp_meta_tmem=tmem_address(0, 400), enable_input_d=False,
                idesc=idesc(m=m, n=64, kind=kind, atype=fmt, btype=fmt, dtype=dt, sparse=True))
    expect = sparse_ref(Alog, B, np.zeros((m, 64), np.uint32), (1, 2), kind=kind, atype=fmt,
                        btype=fmt, ctype=dt, dtype=dt)
    mm, nn = np.meshgrid(np.arange(m), np.arange(64), indexing="ij")
    g = 128 // m                                              # column groups: 2 (E), 4 (G)
    lane, col = mm + m * (nn // (64 // g)), nn % (64 // g)
    np.testing.assert_array_equal(cta.tmem.cells[lane, base + col], expect)


def test_tf32_transpose_needs_128b_32b_atom_swizzle():
    """9.7.16.10.1: tf32 transpose only with 128B swizzling with 32B atomicity (Table 52)."""
    from ptxsim.errors import LayoutError
    kw = dict(kind="tf32", atype="tf32", btype="tf32", k=8, seed=14)
    cta, base, A, B, da, db, rng = setup(a_major="MN", b_major="MN", swizzle="128B_base32B", **kw)
    idesc_t = idesc(kind="tf32", atype="tf32", btype="tf32", transpose_a=True, transpose_b=True)
    tcgen05_mma(cta, kind="tf32", d_tmem=base, a_desc=da, b_desc=db, idesc=idesc_t,
                enable_input_d=False)
    expect = numerics.mma(A, B.T, np.zeros((M, N), np.uint32), arch="sm_100", kind="tf32",
                          atype="tf32", btype="tf32", ctype="f32", dtype="f32")
    np.testing.assert_array_equal(read_d(cta, base, M, N), expect)
    cta, base, A, B, da, db, rng = setup(swizzle="128B", **kw)      # a 128B descriptor
    with pytest.raises(LayoutError, match="32B atomicity"):
        tcgen05_mma(cta, kind="tf32", d_tmem=base, a_desc=da, b_desc=db,
                    idesc=idesc(kind="tf32", atype="tf32", btype="tf32", transpose_a=True))


def test_failed_mma_changes_nothing():
    """An MMA that raises leaves D and the collector buffers as they were."""
    cta, base, A, B, da, db, rng = setup()
    _mma(cta, base, da, db, "a::fill")
    before = cta.tmem.cells.copy()
    from ptxsim.errors import TmemAccessError
    with pytest.raises(TmemAccessError):               # D columns 500..531: past column 511,
        tcgen05_mma(cta, kind="f16", collector="a::discard", d_tmem=tmem_address(0, 500),
                    a_desc=da, b_desc=db, idesc=idesc())   # found after A was read
    np.testing.assert_array_equal(cta.tmem.cells, before)
    _mma(cta, base, da, db, "a::use")                 # the fill is still live


def test_ws_zero_column_mask_submasks_m64():
    """M = 64: two N/2-bit sub-masks with their own start counts / first spans (Table 45)."""
    from ptxsim.isa.descriptors import ZeroColumnMaskDescriptor
    cta, base, A, B, da, db, rng = setup(m=64, n=64, seed=21)
    desc = ZeroColumnMaskDescriptor.make(start_count=(1, 0, 0, 0), first_span=(0, 1, 0, 0),
                                         skip=2, use=3)
    mask = desc.mask(64, 64)
    assert mask[:32].tolist() != mask[32:].tolist()
    tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_desc=da, b_desc=db,
                idesc=idesc(m=64, n=64), enable_input_d=False, zero_column_mask=desc.encode())
    Bz = np.where(mask[:, None], np.uint16(0), B)
    expect = ref(A, Bz, np.zeros((64, 64), np.uint32))
    mm, nn = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(cta.tmem.cells[mm + 64 * (nn // 32), base + nn % 32], expect)
