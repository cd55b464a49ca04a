"""Shared-memory layouts: the spec's worked examples (Figures 188-192 parameter tables and exact
CuTe layouts), the swizzles against CuTe's definition as FACTS §3 states it, hand-derived packing
bytes, and matrix -> bytes -> matrix round trips for every legal combination."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ptxsim.errors import DescriptorError, LayoutError
from ptxsim.isa.descriptors import SmemDescriptor
from ptxsim.isa.smem_layout import (SWIZZLES, canonical_descriptor, element_locations, footprint,
                                    layout_issues, matrix_to_smem, smem_packing, smem_to_matrix,
                                    swizzle_address)


# ----------------------------------------------------------------------------------------------
# Swizzles: CuTe's definition as written in FACTS §3 (independent of the code under test)
# ----------------------------------------------------------------------------------------------
def facts_swizzle(addr: int, mode: str) -> int:
    if mode == "128B":            # address bits [4,7) ^= [7,10)
        return addr ^ (((addr >> 7) & 7) << 4)
    if mode == "64B":             # [4,6) ^= [7,9)
        return addr ^ (((addr >> 7) & 3) << 4)
    if mode == "32B":             # bit 4 ^= bit 7
        return addr ^ (((addr >> 7) & 1) << 4)
    if mode == "128B_base32B":    # [5,7) ^= [7,9)
        return addr ^ (((addr >> 7) & 3) << 5)
    return addr


@pytest.mark.parametrize("mode", list(SWIZZLES))
def test_swizzle_matches_cute_definition(mode):
    addr = np.arange(1 << 14)
    want = np.array([facts_swizzle(int(a), mode) for a in addr])
    assert (swizzle_address(addr, mode) == want).all()


# ----------------------------------------------------------------------------------------------
# The spec's worked examples, 9.7.16.3.3 (Figures 188-192)
# ----------------------------------------------------------------------------------------------
def cute_mode(i, shape, stride):
    """Offset of flat index i in one (possibly nested, flattened here) CuTe mode: colexicographic."""
    off = 0
    for s, d in zip(shape, stride):
        off += (i % s) * d
        i //= s
    return off


FIGURES = [
    # fig, major, swizzle, fmt, bytes, exact layout (mode MN, mode K), LBO, SBO, LBO enc, SBO enc
    (188, "K", "none", "tf32", 4, ((8, 2), (4, 32)), ((4, 4), (1, 64)), 64 * 4, 32 * 4, 16, 8),
    (189, "K", "32B", "tf32", 4, ((8, 2), (8, 64)), ((4, 4), (1, 4)), 16, 64 * 4, 1, 16),
    (190, "MN", "none", "bf16", 2, ((8, 1, 2), (1, 8, 64)), ((8, 2), (8, 128)), 128 * 2, 64 * 2, 16, 8),
    (191, "MN", "32B", "bf16", 2, ((8, 2, 2), (1, 8, 128)), ((8, 2), (16, 256)), 128 * 2, 256 * 2, 16, 32),
    (192, "MN", "64B", "bf16", 2, ((8, 4, 2), (1, 8, 256)), ((8, 2), (32, 512)), 256 * 2, 512 * 2, 32, 64),
]


@pytest.mark.parametrize("fig,major,swz,fmt,nbytes,mode_mn,mode_k,lbo,sbo,lbo_enc,sbo_enc", FIGURES)
def test_spec_figure_exact_layout(fig, major, swz, fmt, nbytes, mode_mn, mode_k, lbo, sbo, lbo_enc,
                                  sbo_enc):
    desc = SmemDescriptor.make(start_address=0, lbo=lbo, sbo=sbo, swizzle=swz)
    assert (desc.lbo, desc.sbo) == (lbo_enc, sbo_enc)          # "Encoding of LBO/SBO"
    rows, cols = int(np.prod(mode_mn[0])), int(np.prod(mode_k[0]))
    addr, shift = element_locations(desc, smem_packing(fmt), rows, cols, major)
    for mn, k in itertools.product(range(rows), range(cols)):
        elem = cute_mode(mn, *mode_mn) + cute_mode(k, *mode_k)
        assert addr[mn, k] == facts_swizzle(elem * nbytes, swz), (fig, mn, k)
    assert not shift.any()


@pytest.mark.parametrize("fig,major,swz,fmt,nbytes,mode_mn,mode_k,lbo,sbo,lbo_enc,sbo_enc", FIGURES)
def test_canonical_descriptor_reproduces_spec_parameters(fig, major, swz, fmt, nbytes, mode_mn,
                                                         mode_k, lbo, sbo, lbo_enc, sbo_enc):
    rows, cols = int(np.prod(mode_mn[0])), int(np.prod(mode_k[0]))
    if fig == 189:
        cols = 8      # one 32-byte swizzle row of K; the figure's 16 columns overlap rows (see docs)
    d = canonical_descriptor(fmt, rows, cols, major, swz)
    assert (d.lbo, d.sbo) == (lbo_enc, sbo_enc)


def test_figure189_full_width_overlaps_rows():
    # The spec's exact layout for Figure 189 maps (mn, k=8) and (mn+1, k=0) to the same element
    # offset; writing such a matrix must be refused rather than silently clobbered.
    desc = SmemDescriptor.make(start_address=0, lbo=16, sbo=256, swizzle="32B")
    with pytest.raises(LayoutError, match="same shared-memory location"):
        matrix_to_smem(np.zeros((16, 16), np.uint32), np.zeros(2048, np.uint8), desc, "tf32", "K")


# ----------------------------------------------------------------------------------------------
# Hand-derived bytes
# ----------------------------------------------------------------------------------------------
def test_bf16_128B_k_major_row1_chunk_is_swapped():
    # row 1 starts at byte 128 (bits [7,10) = 1); its first 16-byte chunk (k 0..7) is XORed to
    # chunk 1 -> bytes 144..159. Element (1, 0) = 0xBEEF -> smem[144] = 0xEF, smem[145] = 0xBE.
    desc = canonical_descriptor("bf16", 8, 64, "K", "128B")
    m = np.zeros((8, 64), np.uint16)
    m[1, 0] = 0xBEEF
    smem = matrix_to_smem(m, np.zeros(1024, np.uint8), desc, "bf16", "K")
    assert list(np.flatnonzero(smem)) == [144, 145] and smem[144] == 0xEF and smem[145] == 0xBE


def test_mxf4_two_e2m1_per_byte_low_nibble_first():
    desc = canonical_descriptor("e2m1", 8, 32, "K", "none", kind="mxf4")
    m = np.zeros((8, 32), np.uint8)
    m[0, 0], m[0, 1], m[0, 31] = 0x1, 0x2, 0x7
    smem = matrix_to_smem(m, np.zeros(256, np.uint8), desc, "e2m1", "K", kind="mxf4")
    assert smem[0] == 0x21 and smem[15] == 0x70 and smem[1:15].sum() == 0


def test_f8f6f4_e2m1_sixteen_per_chunk_with_8_byte_gap():
    # CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: 16 x 4-bit packed in 8 bytes, then 8 bytes padding.
    desc = canonical_descriptor("e2m1", 8, 32, "K", "none", kind="f8f6f4")
    m = np.zeros((8, 32), np.uint8)
    m[0, 15] = 0xF          # last element of chunk 0 -> high nibble of byte 7
    m[0, 16] = 0x3          # first element of the next K chunk (LBO = 128 * 1 = 128 bytes)
    smem = np.full(512, 0xAA, np.uint8)
    matrix_to_smem(m, smem, desc, "e2m1", "K", kind="f8f6f4")
    assert smem[7] == 0xF0 and (smem[8:16] == 0xAA).all()      # padding untouched
    assert smem[128] == 0x03


def test_f8f6f4_six_bit_packing():
    # 16U6_ALIGN16B: element j at bits [6j, 6j+6) of the chunk; j=1 all ones -> bits 6..11:
    # byte0 = 0b11000000, byte1 = 0b00001111; bytes 12..15 are padding.
    desc = canonical_descriptor("e3m2", 8, 16, "K", "none", kind="mxf8f6f4")
    m = np.zeros((8, 16), np.uint8)
    m[0, 1] = 0x3F
    smem = matrix_to_smem(m, np.zeros(256, np.uint8), desc, "e3m2", "K", kind="mxf8f6f4")
    assert smem[0] == 0xC0 and smem[1] == 0x0F and smem[2:16].sum() == 0
    back = smem_to_matrix(smem, desc, "e3m2", 8, 16, "K", kind="mxf8f6f4")
    assert (back == m).all()


def test_tf32_is_a_little_endian_32bit_container():
    desc = canonical_descriptor("tf32", 8, 4, "K", "none")
    m = np.zeros((8, 4), np.uint32)
    m[0, 0] = 0x3F800000
    smem = matrix_to_smem(m, np.zeros(256, np.uint8), desc, "tf32", "K")
    assert list(smem[:4]) == [0x00, 0x00, 0x80, 0x3F]


def test_base_offset_moves_the_pattern_start():
    # Pattern starting at 0x180 (not 1024-aligned): base offset (0x180 >> 7) & 7 = 3, and row r of
    # the pattern is XORed with r (model documented in docs/descriptors.md; not measured).
    desc = canonical_descriptor("bf16", 8, 64, "K", "128B", start=0x180)
    assert desc.base_offset == 3
    addr, _ = element_locations(desc, smem_packing("bf16"), 8, 64, "K")
    assert addr[0, 0] == 0x180 and addr[1, 0] == 0x200 + 16 and addr[7, 0] == 0x180 + 7 * 128 + 7 * 16


# ----------------------------------------------------------------------------------------------
# Legality (Table 52, 53, 49 notes)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,kind,major,swz,ok", [
    ("tf32", None, "MN", "128B_base32B", True),
    ("tf32", None, "MN", "128B", False),            # 32-bit MN-major: only 128B-32B-atom
    ("bf16", None, "MN", "128B_base32B", False),    # 16-bit MN-major: all but 128B-32B-atom
    ("e4m3", None, "MN", "64B", True),
    ("e2m1", "f8f6f4", "MN", "none", False),        # 4-bit cannot be MN-major
    ("e2m3", "mxf8f6f4", "MN", "128B", False),      # 6-bit cannot be MN-major
    ("bf16", None, "K", "128B_base32B", False),     # no K-major atom for 32B atomicity
    ("e2m1", "mxf4", "K", "32B", True),
])
def test_layout_legality(fmt, kind, major, swz, ok):
    assert (layout_issues(smem_packing(fmt, kind), major, swz) == []) == ok
    if not ok:
        with pytest.raises(LayoutError):
            canonical_descriptor(fmt, 32, 32, major, swz, kind=kind)


def test_sub_byte_needs_kind_and_bad_inputs_raise():
    with pytest.raises(LayoutError, match="kind"):
        smem_packing("e2m1")
    desc = canonical_descriptor("bf16", 8, 8, "K", "none")
    with pytest.raises(LayoutError, match="outside"):
        smem_to_matrix(np.zeros(64, np.uint8), desc, "bf16", 8, 8, "K")
    with pytest.raises(LayoutError, match="fit"):
        matrix_to_smem(np.full((8, 8), 0x1FFFF, np.uint32), np.zeros(256, np.uint8), desc, "bf16")
    with pytest.raises(DescriptorError):       # swizzle code 3 is invalid (Table 40)
        smem_to_matrix(np.zeros(256, np.uint8), desc.encode() | 3 << 61, "bf16", 8, 8, "K")


# ----------------------------------------------------------------------------------------------
# Round trips: every legal (format, kind, major, swizzle), compact and strided, any start
# ----------------------------------------------------------------------------------------------
OPERANDS = [("tf32", None), ("f16", None), ("bf16", None), ("e4m3", None), ("e5m2", None),
            ("s8", None), ("u8", None), ("e2m1", "f8f6f4"), ("e2m3", "f8f6f4"), ("e3m2", "mxf8f6f4"),
            ("e2m1", "mxf4"), ("e2m1", "mxf4nvf4")]
LEGAL = [(f, k, major, swz) for (f, k), major, swz in itertools.product(OPERANDS, ("K", "MN"), SWIZZLES)
         if not layout_issues(smem_packing(f, k), major, swz)]


def _shape(packing, major, swz, mn_atoms, k_atoms):
    t = packing.per_chunk
    w = {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32B": 128}[swz]
    if major == "K":
        return 8 * mn_atoms, (w // 16 * t if swz != "none" else t) * (k_atoms if swz == "none" else 1)
    return t * (w // 16) * mn_atoms, (4 if swz == "128B_base32B" else 8) * k_atoms


def test_every_legal_combination_is_covered():
    # K-major: 12 operands x 4 swizzles (none, 32B, 64B, 128B) = 48; MN-major (Table 52): tf32 with
    # 128B-32B-atom only = 1, six 8/16-bit types x 4 = 24, 4/6-bit types none -> 73
    assert len(LEGAL) == 73


@pytest.mark.parametrize("fmt,kind,major,swz", LEGAL)
def test_round_trip_compact(fmt, kind, major, swz):
    packing = smem_packing(fmt, kind)
    rng = np.random.default_rng(hash((fmt, kind, major, swz)) & 0xFFFF)
    for start in (0, 0x400, 0x2480):     # 0x2480: pattern not on its boundary -> base offset
        rows, cols = _shape(packing, major, swz, 2, 3)
        desc = canonical_descriptor(fmt, rows, cols, major, swz, start=start, kind=kind)
        m = rng.integers(0, 1 << packing.bits, size=(rows, cols), dtype=np.uint64).astype(packing.dtype)
        smem = np.zeros(footprint(desc, fmt, rows, cols, major, kind=kind), np.uint8)
        matrix_to_smem(m, smem, desc, fmt, major, kind=kind)
        assert (smem_to_matrix(smem, desc, fmt, rows, cols, major, kind=kind) == m).all()
        # every non-padding bit of the footprint from `start` on is used exactly once
        used_bits = rows * cols * packing.bits
        assert used_bits == (footprint(desc, fmt, rows, cols, major, kind=kind) - start) * 8 \
            * packing.bits // packing.layout_bits


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(LEGAL), st.integers(1, 3), st.integers(1, 3), st.integers(0, 3),
       st.integers(0, 3), st.integers(0, 15))
def test_round_trip_with_gaps(combo, mn_atoms, k_atoms, lbo_pad, sbo_pad, start_chunk):
    fmt, kind, major, swz = combo
    packing = smem_packing(fmt, kind)
    rows, cols = _shape(packing, major, swz, mn_atoms, k_atoms)
    compact = canonical_descriptor(fmt, rows, cols, major, swz, kind=kind)
    align = 1024 if swz != "none" else 16
    start = start_chunk * align
    lbo = compact.lbo_bytes + (lbo_pad * align if not (major == "K" and swz != "none") else 0)
    sbo = compact.sbo_bytes + sbo_pad * align
    if major == "K" and swz == "none":       # K chunks step by LBO: keep it past all MN rows
        lbo = max(lbo, sbo * mn_atoms)
    if major == "MN" and swz == "none":      # 9.7.16.3.3: SBO steps MN atoms, LBO steps K groups
        lbo = max(lbo, sbo * mn_atoms)
    elif major == "MN":                      # swizzled: LBO steps MN atoms, SBO steps K groups
        sbo = max(sbo, lbo * mn_atoms)
    desc = SmemDescriptor.make(start_address=start, lbo=lbo, sbo=sbo, swizzle=swz)
    m = np.random.default_rng(start + lbo + sbo).integers(
        0, 1 << packing.bits, size=(rows, cols), dtype=np.uint64).astype(packing.dtype)
    smem = np.zeros(footprint(desc, fmt, rows, cols, major, kind=kind), np.uint8)
    matrix_to_smem(m, smem, desc, fmt, major, kind=kind)
    assert (smem_to_matrix(smem, desc, fmt, rows, cols, major, kind=kind) == m).all()


def test_inverse_direction_bytes_to_matrix_to_bytes():
    desc = canonical_descriptor("bf16", 64, 64, "K", "128B", start=0x800)
    smem = np.random.default_rng(1).integers(0, 256, size=0x800 + 64 * 128, dtype=np.uint8)
    m = smem_to_matrix(smem, desc, "bf16", 64, 64, "K")
    again = matrix_to_smem(m, np.zeros_like(smem), desc, "bf16", "K")
    assert (again[0x800:] == smem[0x800:]).all()


# ----------------------------------------------------------------------------------------------
# sm_103a absolute leading-dimension address (K = 96 fp4, 48 bytes) -- the CUTLASS SM103 scheme
# ----------------------------------------------------------------------------------------------
def test_absolute_lbo_k96_matches_cutlass_buffer_scheme():
    # Two K-major 128B-swizzled buffers of 8 rows x 256 e2m1 (128 bytes) at 0 and 0x400, holding
    # K columns 0..255 and 256..511 of one matrix. CUTLASS's third K=96 step reads K 192..287:
    # start = buffer0 + 96 bytes, LBO (absolute) = buffer1 (cute mma_traits_sm100 SM103 unpack).
    big = np.random.default_rng(7).integers(0, 16, size=(8, 512), dtype=np.uint8)
    smem = np.zeros(0x800, np.uint8)
    for i, base in enumerate((0, 0x400)):
        d = canonical_descriptor("e2m1", 8, 256, "K", "128B", start=base, kind="mxf4")
        matrix_to_smem(big[:, 256 * i: 256 * (i + 1)], smem, d, "e2m1", "K", kind="mxf4")
    step = SmemDescriptor.make(start_address=96, lbo=0x400, sbo=1024, swizzle="128B",
                               lbo_mode="absolute")
    got = smem_to_matrix(smem, step, "e2m1", 8, 96, "K", kind="mxf4")
    assert (got == big[:, 192:288]).all()
    first = SmemDescriptor.make(start_address=0, lbo=0x400, sbo=1024, swizzle="128B",
                                lbo_mode="absolute")
    assert (smem_to_matrix(smem, first, "e2m1", 8, 96, "K", kind="mxf4") == big[:, :96]).all()


def test_large_operand_is_fast():
    import time
    desc = canonical_descriptor("bf16", 256, 64, "K", "128B")
    m = np.random.default_rng(0).integers(0, 1 << 16, size=(256, 64), dtype=np.uint16)
    t = time.perf_counter()
    smem = matrix_to_smem(m, np.zeros(footprint(desc, "bf16", 256, 64), np.uint8), desc, "bf16")
    back = smem_to_matrix(smem, desc, "bf16", 256, 64)
    assert (back == m).all() and time.perf_counter() - t < 1.0


def test_read_operand_takes_everything_from_the_idesc():
    from ptxsim.isa.descriptors import InstrDescriptor
    # B of a transposed (N-major) bf16 MMA, N=64, K=16, 64B swizzle
    idesc = InstrDescriptor.make("f16", m=128, n=64, atype="bf16", btype="bf16", transpose_b=True)
    bdesc = canonical_descriptor("bf16", 64, 16, "MN", "64B", start=0x1000)
    b = np.random.default_rng(3).integers(0, 1 << 16, size=(64, 16), dtype=np.uint16)
    smem = matrix_to_smem(b, np.zeros(0x1000 + 64 * 16 * 2, np.uint8), bdesc, "bf16", "MN")
    from ptxsim.isa.smem_layout import read_operand
    assert (read_operand(smem, bdesc.encode(), idesc, "B") == b).all()
    # sparse A is read compressed (K/2 columns); a tf32 transpose without 128B-32B-atom is refused
    sp = InstrDescriptor.make("tf32", m=64, n=64, atype="tf32", btype="tf32", sparse=True,
                              transpose_a=True)
    with pytest.raises(LayoutError, match="128B swizzling with 32B atomicity"):
        read_operand(smem, canonical_descriptor("bf16", 64, 16, "MN", "64B"), sp, "A")
    adesc = canonical_descriptor("tf32", 64, 8, "MN", "128B_base32B")
    assert read_operand(np.zeros(4096, np.uint8), adesc, sp, "A").shape == (64, 8)
