"""Every illegal combination of Table 39 and every undefined case the spec names ends in a named
ptxsim error. Table 39 is transcribed again here, by hand, from the spec text."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, new_pair, stage

from ptxsim.errors import (CollectorBufferError, CtaGroupMismatch, DescriptorError, LayoutError,
                           OperandError, PtxsimError, SparsityMetadataError, TmemAccessError,
                           UndefinedBehavior)
from ptxsim.isa import sparsity
from ptxsim.isa.datapath import datapath_layout
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, check_instruction, tcgen05_mma, write_scale_factors
from ptxsim.isa.tmem import tmem_address

N8 = set(range(8, 257, 8))
N16 = set(range(16, 257, 16))
I8_N1 = {8, 16, 24, 32} | set(range(48, 257, 16))
I8_N2 = set(range(32, 257, 32))
MX = ("mxf8f6f4", "mxf4", "mxf4nvf4")
TYPES = {"f16": ("bf16", "f32"), "tf32": ("tf32", "f32"), "f8f6f4": ("e4m3", "f32"),
         "i8": ("s8", "s32"), "mxf8f6f4": ("e4m3", "f32"), "mxf4": ("e2m1", "f32"),
         "mxf4nvf4": ("e2m1", "f32")}


def table39(kind, ws, cta, sparse):
    """(allowed M, allowed N) or None (Invalid), from Table 39 of 9.7.16.2.1."""
    if ws:
        if cta == 2 or kind in MX:
            return None
        return {32, 64, 128}, ({64, 128} if sparse else {64, 128, 256})
    if kind in MX:
        if cta == 1:
            return {128}, N8
        return ({256} if sparse else {128, 256}), N16
    if cta == 1:
        return {64, 128}, (I8_N1 if kind == "i8" else N8)
    return {128, 256}, (I8_N2 if kind == "i8" else N16)


SAMPLE_N = (8, 16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 136, 192, 256)


@pytest.mark.parametrize("kind", list(TYPES))
def test_table39_every_combination(kind):
    t, d = TYPES[kind]
    checked = legal_seen = 0
    for ws, cta, sparse, m, n in itertools.product((False, True), (1, 2), (False, True),
                                                   (32, 64, 128, 256), SAMPLE_N):
        row = table39(kind, ws, cta, sparse)
        legal = row is not None and m in row[0] and n in row[1]
        mma = Tcgen05Mma(kind, cta_group=cta, sparse=sparse, ws=ws, block_scale=kind in MX,
                         scale_vec="block32" if kind in MX else None)
        try:
            idesc = InstrDescriptor.make(kind, m=m, n=n, atype=t, btype=t, dtype=d,
                                         sparse=sparse).encode()
            check_instruction(mma, idesc)
            ok = True
        except (DescriptorError, OperandError, LayoutError) as e:
            ok = False
            assert str(e)
        assert ok == legal, (kind, ws, cta, sparse, m, n)
        checked += 1
        legal_seen += legal
    assert checked == 2 * 2 * 2 * 4 * len(SAMPLE_N) and legal_seen > 20


@pytest.mark.parametrize("qual,why", [
    (dict(kind="f16", ws=True, cta_group=2), ".ws exists only"),
    (dict(kind="mxf4", ws=True), ".ws takes"),
    (dict(kind="mxf4"), "need .block_scale"),
    (dict(kind="f16", block_scale=True), "only for .kind::mx"),
    (dict(kind="mxf4nvf4", block_scale=True), "explicitly specified"),
    (dict(kind="mxf4", block_scale=True, scale_vec="4X"), "Table 54"),
    (dict(kind="mxf8f6f4", block_scale=True, scale_vec="2X"), "Table 54"),
    (dict(kind="f8f6f4", scale_input_d=1), "only valid for .kind::tf32"),
    (dict(kind="f16", scale_input_d=16), r"\[0, 15\]"),
    (dict(kind="f16", ws=True, scale_input_d=1), ".ws has no scale-input-d"),
    (dict(kind="f16", ws=True, has_disable_output_lane=True), ".ws has no disable"),
    (dict(kind="mxf4", block_scale=True, has_disable_output_lane=True), "no disable"),
    (dict(kind="f16", has_zero_column_mask=True), ".ws only"),
    (dict(kind="f16", a_tmem=False, ashift=True), "needs A in Tensor Memory"),
    (dict(kind="f16", a_tmem=True, ashift=True, collector="a::fill"), "illegal"),
    (dict(kind="f16", a_tmem=True, ashift=True, collector="a::use"), "illegal"),
    (dict(kind="f16", a_tmem=True, ws=True, ashift=True), ".ws has no .ashift"),
    (dict(kind="f16", collector="b0::fill"), "collector buffer is ::a"),
    (dict(kind="f16", ws=True, collector="a::fill"), "::b0, ::b1"),
    (dict(kind="f16", collector="a::keep"), "op must be"),
])
def test_qualifier_rules(qual, why):
    with pytest.raises(OperandError, match=why):
        Tcgen05Mma(**qual).validate()


def test_target_notes():
    Tcgen05Mma("f16", scale_input_d=3).validate("sm_100f")
    with pytest.raises(OperandError, match="scale-input-d needs"):
        Tcgen05Mma("f16", scale_input_d=3).validate("sm_110a")
    Tcgen05Mma("mxf4", block_scale=True, scale_vec="block32").validate("sm_100f")
    with pytest.raises(OperandError, match="arch-specific"):
        Tcgen05Mma("mxf4", block_scale=True, scale_vec="2X").validate("sm_100f")
    idesc = InstrDescriptor.make("i8", m=128, n=64, atype="s8", btype="s8", dtype="s32").encode()
    with pytest.raises(DescriptorError, match="i8"):
        check_instruction(Tcgen05Mma("i8"), idesc, target="sm_100f")


@pytest.mark.parametrize("kw,err,why", [
    (dict(negate_a=True, kind="i8", atype="s8", btype="s8", dtype="s32"), DescriptorError,
     "negate"),
    (dict(transpose_a=True, kind="mxf4", atype="e2m1", btype="e2m1", scale_type="ue8m0"),
     DescriptorError, "transpose"),
    (dict(kind="mxf4nvf4", atype="e2m1", btype="e2m1", scale_type="ue4m3"), DescriptorError,
     "UE4M3"),
    (dict(kind="mxf4", atype="e2m1", btype="e2m1", scale_type="ue8m0", scale_a_id=1),
     DescriptorError, "Scale Factor Data ID"),
    (dict(kind="f8f6f4", atype="e4m3", btype="e4m3", sparse=True, selector=1), DescriptorError,
     "selector"),
])
def test_descriptor_rules_reach_the_instruction(kw, err, why):
    kind = kw["kind"]
    mma = Tcgen05Mma(kind, sparse=kw.get("sparse", False), block_scale=kind in MX,
                     scale_vec="2X" if kind in MX else None)
    idesc = InstrDescriptor.make(m=128, n=64, **kw).encode()
    with pytest.raises(err, match=why):
        check_instruction(mma, idesc)


def test_ashift_needs_m_128_or_256():
    idesc = InstrDescriptor.make("f16", m=64, n=64, atype="bf16", btype="bf16").encode()
    with pytest.raises(OperandError, match="M = 128 or M = 256"):
        check_instruction(Tcgen05Mma("f16", a_tmem=True, ashift=True), idesc)


# ---- undefined at run time --------------------------------------------------------------------
def _f16(cta, base, **kw):
    rng = np.random.default_rng(0)
    for c in getattr(cta, "ctas", (cta,)):
        da = stage(c.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 0).encode()
        db = stage(c.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 16384).encode()
    idesc = InstrDescriptor.make("f16", m=kw.pop("m", 128), n=64, atype="bf16",
                                 btype="bf16").encode()
    return tcgen05_mma(cta, kind=kw.pop("kind", "f16"), d_tmem=kw.pop("d_tmem", base), a_desc=da,
                       b_desc=db, idesc=idesc, **kw)


@pytest.mark.parametrize("value", [0b0000, 0b0101, 0b1111, 0b0001, 0b0111, 0b1011, 0b0010])
def test_meaningless_metadata_is_undefined(value):
    rng = np.random.default_rng(1)
    cta, base = new_cta()
    da = stage(cta.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 0).encode()
    db = stage(cta.smem, gen_bits(rng, "bf16", (64, 32)), "bf16", "f16", 16384).encode()
    nib = np.full((128, 8), 0b0100, np.uint8)
    nib[77, 5] = value
    sparsity.write_metadata(cta.tmem.cells, 0, 400, nib, "f16")
    idesc = InstrDescriptor.make("f16", m=128, n=64, atype="bf16", btype="bf16",
                                 sparse=True).encode()
    with pytest.raises(SparsityMetadataError, match="undefined") as e:
        tcgen05_mma(cta, kind="f16", sparse=True, d_tmem=base, a_desc=da, b_desc=db,
                    sp_meta_tmem=tmem_address(0, 400), idesc=idesc)
    assert (e.value.row, e.value.chunk) == (77, 5)


def test_scale_factors_not_duplicated_is_undefined():
    rng = np.random.default_rng(2)
    cta, base = new_cta()
    da = stage(cta.smem, gen_bits(rng, "e2m1", (128, 64)), "e2m1", "mxf4", 0).encode()
    db = stage(cta.smem, gen_bits(rng, "e2m1", (64, 64)), "e2m1", "mxf4", 16384).encode()
    lay = datapath_layout(128)
    write_scale_factors(cta.tmem.cells, tmem_address(0, 200), np.full((128, 2), 127, np.uint8),
                        "A", lay)
    write_scale_factors(cta.tmem.cells, tmem_address(0, 208), np.full((64, 2), 127, np.uint8),
                        "B", lay, N=64)
    cta.tmem.cells[96 + 3, 201] ^= 1                       # one copy of row 35 differs
    idesc = InstrDescriptor.make("mxf4", m=128, n=64, atype="e2m1", btype="e2m1",
                                 scale_type="ue8m0").encode()
    with pytest.raises(UndefinedBehavior, match="duplicated"):
        tcgen05_mma(cta, kind="mxf4", block_scale=True, d_tmem=base, a_desc=da, b_desc=db,
                    scale_a_tmem=tmem_address(0, 200), scale_b_tmem=tmem_address(0, 208),
                    idesc=idesc)


def test_peer_cta_exited_is_undefined():
    pair, base = new_pair()
    pair.odd.exited = True
    with pytest.raises(UndefinedBehavior, match="exited"):
        _f16(pair, base, cta_group=2, m=256)


def test_mixed_cta_group_in_one_kernel():
    cta, base = new_cta()            # alloc used .cta_group::1
    with pytest.raises(OperandError, match="CTA pair"):
        _f16(cta, base, cta_group=2, m=256)
    pair, base2 = new_pair()
    with pytest.raises(OperandError, match="one CTA"):
        _f16(pair, base2)
    pair.even.tmem.cta_group = 1     # a CTA whose earlier tcgen05 used ::1
    with pytest.raises(CtaGroupMismatch):
        _f16(pair, base2, cta_group=2, m=256)


def test_d_outside_allocation():
    cta, base = new_cta(ncols=32)
    with pytest.raises(TmemAccessError, match="not allocated"):
        _f16(cta, base)              # N = 64 columns > 32 allocated


def test_d_lane_alignment():
    cta, base = new_cta()
    with pytest.raises(TmemAccessError, match="alignment"):
        _f16(cta, base, d_tmem=tmem_address(16, 0))
    _f16(cta, base, d_tmem=tmem_address(16, 0), m=64)        # layout F: 0 or 16


def test_disable_output_lane_vector_size():
    cta, base = new_cta()
    with pytest.raises(OperandError, match="vector of 4"):
        _f16(cta, base, disable_output_lane=np.zeros(8, np.uint32))


def test_collector_use_without_fill():
    cta, base = new_cta()
    with pytest.raises(CollectorBufferError):
        _f16(cta, base, collector="a::use")


def test_a_in_tmem_cannot_be_transposed():
    cta, base = new_cta()
    rng = np.random.default_rng(3)
    db = stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 16384).encode()
    idesc = InstrDescriptor.make("f16", m=128, n=64, atype="bf16", btype="bf16",
                                 transpose_a=True).encode()
    with pytest.raises(OperandError, match="transposed"):
        tcgen05_mma(cta, kind="f16", d_tmem=base, a_tmem=tmem_address(0, 300), b_desc=db,
                    idesc=idesc)


def test_operands_must_match_the_form():
    cta, base = new_cta()
    with pytest.raises(OperandError, match="sp-meta-tmem"):
        _f16(cta, base, sp_meta_tmem=0)
    with pytest.raises(OperandError, match="exactly one"):
        tcgen05_mma(cta, kind="f16", d_tmem=base, b_desc=0, idesc=0)


def test_unestablished_layouts_are_named():
    """Sparse metadata for M=64 without .ws and A in Tensor Memory for M=32 .ws: LayoutError."""
    rng = np.random.default_rng(4)
    cta, base = new_cta()
    da = stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 0).encode()
    db = stage(cta.smem, gen_bits(rng, "bf16", (64, 32)), "bf16", "f16", 16384).encode()
    idesc = InstrDescriptor.make("f16", m=64, n=64, atype="bf16", btype="bf16",
                                 sparse=True).encode()
    with pytest.raises(LayoutError, match="not established"):
        tcgen05_mma(cta, kind="f16", sparse=True, d_tmem=base, a_desc=da, b_desc=db,
                    sp_meta_tmem=tmem_address(0, 400), idesc=idesc)
    # A in Tensor Memory: layout E (M = 64 .ws) is placed now (test_layouts_ws.py); G is not
    idesc = InstrDescriptor.make("f16", m=32, n=64, atype="bf16", btype="bf16").encode()
    with pytest.raises(LayoutError):
        tcgen05_mma(cta, kind="f16", ws=True, d_tmem=base, a_tmem=tmem_address(0, 300),
                    b_desc=db, idesc=idesc)


def test_every_error_is_a_ptxsim_error():
    for cls in (CollectorBufferError, SparsityMetadataError):
        assert issubclass(cls, UndefinedBehavior) and issubclass(cls, PtxsimError)


def test_half_data_path_layouts_need_one_lane_alignment():
    """Layout F / C: A, D and metadata use the same lane alignment (9.7.16.10.5, .8.5)."""
    rng = np.random.default_rng(5)
    cta, base = new_cta()
    db = stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16", 16384).encode()
    idesc = InstrDescriptor.make("f16", m=64, n=64, atype="bf16", btype="bf16").encode()
    with pytest.raises(TmemAccessError, match="same lane alignment"):
        tcgen05_mma(cta, kind="f16", d_tmem=tmem_address(16, 0), a_tmem=tmem_address(0, 300),
                    b_desc=db, idesc=idesc)


def test_eight_bit_transpose_b_n_limits():
    """Table 50: 8-bit transpose B needs N in 16..256 step 16 (cta_group::1)."""
    ok = InstrDescriptor.make("i8", m=128, n=32, atype="s8", btype="s8", dtype="s32",
                              transpose_b=True).encode()
    check_instruction(Tcgen05Mma("i8"), ok)
    bad = InstrDescriptor.make("i8", m=128, n=24, atype="s8", btype="s8", dtype="s32",
                               transpose_b=True).encode()
    with pytest.raises(DescriptorError, match="Table 50"):
        check_instruction(Tcgen05Mma("i8"), bad)
