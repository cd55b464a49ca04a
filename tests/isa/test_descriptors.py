"""Descriptors: encodings checked against hand derivations from Tables 40-45 and CuTe's bit-field
structs, round trips over the legal field space, and one named error per illegal field value."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ptxsim.errors import DescriptorError
from ptxsim.isa.descriptors import (BLOCK_SCALED_KINDS, KIND_ABTYPE_CODES, KIND_DTYPES, MMA_KINDS,
                                    MMA_SHAPES, InstrDescriptor, SmemDescriptor,
                                    ZeroColumnMaskDescriptor, base_offset_for, idesc_layout,
                                    mma_k, shape_issues)


# ----------------------------------------------------------------------------------------------
# Instruction descriptor: known encodings (hand-derived from Table 42/43/44)
# ----------------------------------------------------------------------------------------------
def test_f16_bf16_m128_n256_hand_encoding():
    # dtype F32=1 <<4 = 0x10; atype BF16=1 <<7 = 0x80; btype BF16=1 <<10 = 0x400;
    # N>>3 = 32 <<17 = 0x400000; M>>4 = 8 <<24 = 0x8000000  -> 0x08400490
    d = InstrDescriptor.make("f16", m=128, n=256, atype="bf16", btype="bf16", dtype="f32")
    assert d.encode() == 0x08400490
    assert d.issues() == []


def test_i8_saturate_hand_encoding():
    # sat bit3 = 0x8; dtype S32=2 <<4 = 0x20; atype s8=1 <<7 = 0x80; btype u8=0;
    # N=64 -> 8<<17 = 0x100000; M=64 -> 4<<24 = 0x4000000          -> 0x041000a8
    d = InstrDescriptor.make("i8", m=64, n=64, atype="s8", btype="u8", dtype="s32", saturate=True)
    assert d.encode() == 0x041000A8
    assert d.issues() == []


def test_mxf8f6f4_hand_encoding_and_e2m1_code_5():
    # sparse bit2 = 0x4; scale_b_id=1 <<4 = 0x10; atype E2M1=5 <<7 = 0x280; btype E4M3=0;
    # N=128 -> 16<<17 = 0x200000; scale UE8M0=1 <<23 = 0x800000; M=128 -> 1<<27 = 0x8000000;
    # scale_a_id=3 <<29 = 0x60000000                                 -> 0x68a00294
    d = InstrDescriptor.make("mxf8f6f4", m=128, n=128, atype="e2m1", btype="e4m3", sparse=True,
                             scale_a_id=3, scale_b_id=1)
    assert d.encode() == 0x68A00294
    assert d.issues() == []


def test_mxf4nvf4_e2m1_is_code_1_and_ue4m3_is_0():
    # atype E2M1=1 <<7 = 0x80; btype 1 <<10 = 0x400; scale_b_id 2 <<4 = 0x20; N=256 -> 32 <<17 =
    # 0x400000; scale UE4M3 = 0 (bit 23 clear); M=256 -> 2 <<27 = 0x10000000; scale_a_id 2 <<29 =
    # 0x40000000; K=96 -> bit 31 = 0x80000000
    d = InstrDescriptor.make("mxf4nvf4", m=256, n=256, atype="e2m1", btype="e2m1",
                             scale_type="ue4m3", scale_a_id=2, scale_b_id=2, k96=True)
    assert d.encode() == 0x80000000 | 0x40000000 | 0x10000000 | 0x400000 | 0x400 | 0x80 | 0x20
    assert d.issues(cta_group=2, target="sm_103a", scale_vec="block16") == []


def test_mxf4_idesc_saying_m64_is_rejected_with_reason():
    # FACTS §5: ptxas accepts tcgen05.mma.sp kind::mxf4 with an idesc saying M=64 (Table 42 style,
    # M>>4 = 4 in bits 24-28 -> bit 26). Table 44 has bits 24-26 reserved and M>>7 in 27-28.
    v = (4 << 24) | (16 << 17) | (1 << 23) | (1 << 10) | (1 << 7) | (1 << 2)
    errs = InstrDescriptor.decode(v, "mxf4").issues(sparse=True)
    fields = {e.field for e in errs}
    assert "reserved" in fields and "m" in fields
    assert any("M = 64" in e.why for e in errs)


def test_decode_examples_by_name():
    d = InstrDescriptor.decode(0x08400490, "f16")
    assert (d.m, d.n, d.k, d.dtype_name, d.atype_name, d.btype_name) == (128, 256, 16, "f32", "bf16", "bf16")
    assert InstrDescriptor.decode(0x08400490, "f16").fields_table()[0][1] == "Sparsity selector"


# ----------------------------------------------------------------------------------------------
# Table 39 transcription spot checks (read off the table row by row)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,ws,cta,sparse,m,n,ok", [
    ("f16", False, 1, False, 64, 8, True),
    ("f16", False, 1, False, 64, 12, False),       # steps of 8
    ("f16", False, 2, False, 128, 24, False),      # cta_group::2: steps of 16
    ("f16", False, 2, True, 256, 256, True),
    ("f16", True, 1, False, 32, 256, True),
    ("f16", True, 1, True, 32, 256, False),        # .ws sparse: N = {64, 128}
    ("f16", True, 2, False, 64, 64, False),        # .ws cta_group::2 invalid
    ("tf32", False, 1, True, 128, 256, True),
    ("i8", False, 1, False, 128, 24, True),
    ("i8", False, 1, False, 128, 40, False),       # steps of 16 after N > 32
    ("i8", False, 1, False, 128, 48, True),
    ("i8", False, 2, False, 128, 48, False),       # cta_group::2: steps of 32
    ("i8", False, 2, False, 128, 96, True),
    ("mxf8f6f4", False, 1, False, 64, 64, False),  # only M = 128
    ("mxf8f6f4", False, 2, True, 128, 64, False),  # sparse cta_group::2: only M = 256
    ("mxf8f6f4", False, 2, True, 256, 64, True),
    ("mxf4", False, 1, True, 128, 8, True),
    ("mxf4nvf4", False, 2, False, 128, 16, True),
    ("mxf4", True, 1, False, 128, 64, False),      # .ws invalid
])
def test_table39_rows(kind, ws, cta, sparse, m, n, ok):
    if ws and kind in BLOCK_SCALED_KINDS:
        assert not [r for r in MMA_SHAPES if r.kind == kind and r.ws]
        return
    assert (shape_issues(kind, m, n, sparse=sparse, ws=ws, cta_group=cta) == []) == ok


def test_k_per_kind():
    # Table 39: K = 8/16 tf32, 16/32 f16, 32/64 f8f6f4 mxf8f6f4 i8, 64/128 mxf4 mxf4nvf4
    assert [mma_k(k, False) for k in MMA_KINDS] == [8, 16, 32, 32, 32, 64, 64]
    assert [mma_k(k, True) for k in MMA_KINDS] == [16, 32, 64, 64, 64, 128, 128]


def test_k96_needs_sm103a():
    d = InstrDescriptor.make("mxf4", m=256, n=128, atype="e2m1", btype="e2m1", k96=True)
    assert d.issues(cta_group=2, target="sm_103a") == []
    errs = d.issues(cta_group=2, target="sm_100a")
    assert errs and "9.7.16.2.1.1" in errs[0].why


# ----------------------------------------------------------------------------------------------
# Round trips over the legal field space
# ----------------------------------------------------------------------------------------------
def _type_combos(kind):
    for d in KIND_DTYPES[kind]:
        for a, b in itertools.product(KIND_ABTYPE_CODES[kind], repeat=2):
            if kind == "f16" and (a != b or (d == "f16" and a == "bf16")):
                continue
            yield d, a, b


def test_every_table39_shape_round_trips_and_is_legal():
    count = 0
    for row in MMA_SHAPES:
        d0, a, b = next(_type_combos(row.kind))
        target = "sm_103a" if row.feature else "sm_100a"
        for m, n in itertools.product(row.m, row.n):
            desc = InstrDescriptor.make(row.kind, m=m, n=n, atype=a, btype=b, dtype=d0,
                                        sparse=row.sparse, k96=row.k == 96)
            v = desc.encode()
            back = InstrDescriptor.decode(v, row.kind)
            assert back == desc and back.encode() == v
            assert (back.m, back.n, back.k) == (m, n, row.k)
            assert back.issues(sparse=row.sparse, ws=row.ws, cta_group=row.cta_group,
                               target=target) == [], (row, m, n)
            count += 1
    assert count > 1000


def test_every_type_and_flag_combination_round_trips():
    for kind in MMA_KINDS:
        shape = next(r for r in MMA_SHAPES if r.kind == kind and not r.ws and not r.sparse)
        for (dt, a, b), na, nb, ta, tb in itertools.product(_type_combos(kind), (0, 1), (0, 1),
                                                            (0, 1), (0, 1)):
            desc = InstrDescriptor.make(kind, m=shape.m[-1], n=256 if shape.cta_group == 2 else 128,
                                        atype=a, btype=b, dtype=dt, negate_a=na, negate_b=nb,
                                        transpose_a=ta, transpose_b=tb)
            back = InstrDescriptor.decode(desc.encode(), kind)
            assert back == desc
            assert (back.dtype_name, back.atype_name, back.btype_name) == (dt, a, b)
            legal = not ((kind == "i8" and (na or nb)) or
                         (kind in ("mxf4", "mxf4nvf4") and (ta or tb)) or
                         (ta and a in ("e2m1", "e2m3", "e3m2")) or (tb and b in ("e2m1", "e2m3", "e3m2")))
            assert (back.issues(cta_group=shape.cta_group) == []) == legal, (kind, dt, a, b, na, nb, ta, tb)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(MMA_KINDS))
def test_any_32bit_value_decodes_and_reencodes(v, kind):
    d = InstrDescriptor.decode(v, kind)
    assert d.encode() == v
    d.issues()          # never crashes; every problem is a DescriptorError
    d.fields_table()


# ----------------------------------------------------------------------------------------------
# Every illegal field value -> DescriptorError naming field, value and the spec rule
# ----------------------------------------------------------------------------------------------
def _base(kind):
    a = next(iter(KIND_ABTYPE_CODES[kind]))
    return InstrDescriptor.make(kind, m=128, n=128, atype=a, btype=a,
                                dtype=KIND_DTYPES[kind][-1])


@pytest.mark.parametrize("kind", MMA_KINDS)
def test_each_reserved_bit_is_named(kind):
    base = _base(kind).encode()
    _, reserved, table = idesc_layout(kind)
    for bit in range(32):
        if reserved >> bit & 1:
            errs = InstrDescriptor.decode(base | 1 << bit, kind).issues()
            assert errs and errs[0].field == "reserved" and errs[0].value == 1 << bit
            assert table in errs[0].why


@pytest.mark.parametrize("kind", MMA_KINDS)
def test_each_illegal_type_code_is_named(kind):
    layout, _, table = idesc_layout(kind)
    base = _base(kind)
    width = {f.name: f.width for f in layout}
    legal = set(KIND_ABTYPE_CODES[kind].values())
    for field in ("atype", "btype"):
        for code in range(1 << width[field]):
            errs = base.__class__(**{**base.__dict__, field: code}).issues()
            named = [e for e in errs if e.field == field and "type code" in e.why]
            assert bool(named) == (code not in legal), (field, code)
            if named:
                assert table in named[0].why
    if kind not in BLOCK_SCALED_KINDS:
        for code in range(4):
            errs = base.__class__(**{**base.__dict__, "dtype": code}).issues()
            legal_d = {0: "f16", 1: "f32", 2: "s32"}.get(code) in KIND_DTYPES[kind]
            assert any(e.field == "dtype" for e in errs) != legal_d


def _rebuild(d, **kw):
    return InstrDescriptor(**{**d.__dict__, **kw})


@pytest.mark.parametrize("desc,quals,field,table", [
    (_rebuild(_base("f16"), saturate=1), {}, "saturate", "Table 42"),
    (_rebuild(_base("i8"), negate_a=1), {}, "negate_a", "Table 49"),
    (_rebuild(_base("mxf4"), transpose_b=1), {}, "transpose_b", "Table 49"),
    (InstrDescriptor.make("f8f6f4", m=128, n=128, atype="e2m3", btype="e4m3", transpose_a=True),
     {}, "transpose_a", "Table 52"),
    (InstrDescriptor.make("f8f6f4", m=128, n=8, atype="e4m3", btype="e4m3", transpose_b=True),
     {}, "n_dim", "Table 50"),
    (InstrDescriptor.make("i8", m=256, n=48, atype="s8", btype="s8", dtype="s32", transpose_b=True),
     {"cta_group": 2}, "n", "Table 39"),
    (_rebuild(_base("f16"), sparsity_selector=2), {}, "sparsity_selector", "Table 42"),
    (_rebuild(_base("f8f6f4"), sparsity=1, sparsity_selector=1), {}, "sparsity_selector",
     "9.7.16.10.8.4.5"),
    (_rebuild(_base("f16"), max_shift=1), {}, "max_shift", "Table 42"),
    (_rebuild(_base("mxf4"), scale_type=0), {}, "scale_type", "Table 44"),
    (_rebuild(_base("mxf4nvf4"), scale_type=0), {"scale_vec": "block32"}, "scale_type", "Table 55"),
    (_rebuild(_base("mxf4"), scale_a_id=1), {}, "scale_a_id", "Table 44"),
    (_rebuild(_base("mxf4nvf4"), scale_b_id=2), {"scale_vec": "4X"}, "scale_b_id", "9.7.16.10.7.2.3"),
    (_rebuild(_base("f16"), m_dim=3), {}, "m", "Table 39"),
    (_rebuild(_base("f16"), n_dim=0), {}, "n", "Table 39"),
    (_base("f16"), {"sparse": True}, "sparsity", "bit 2"),
    (_base("f16"), {"ws": True, "cta_group": 2}, "cta_group", "Table 39"),
    (_base("mxf8f6f4"), {"ws": True}, "kind", "Table 39"),
    (_rebuild(_base("mxf4"), k_dim=1, sparsity=1), {"target": "sm_103a"}, "k_dim", "Table 44"),
    (_base("i8"), {"target": "sm_100f"}, "kind", "9.7.16.10.9.1"),
    (InstrDescriptor.make("f16", m=128, n=128, atype="f16", btype="bf16"), {}, "btype", "Table 39"),
    (InstrDescriptor.make("f16", m=128, n=128, atype="bf16", btype="bf16", dtype="f16"), {},
     "atype", "Table 39"),
])
def test_illegal_value_names_field_and_rule(desc, quals, field, table):
    errs = desc.issues(**quals)
    named = [e for e in errs if e.field == field]
    assert named, [str(e) for e in errs]
    assert table in named[0].why
    with pytest.raises(DescriptorError) as info:
        desc.validate(**quals)
    assert "field '" in str(info.value) and "instruction descriptor" in str(info.value)


def test_unencodable_values_raise():
    with pytest.raises(DescriptorError, match="multiple of 16"):
        InstrDescriptor.make("f16", m=72, n=64, atype="f16", btype="f16")
    with pytest.raises(DescriptorError, match="multiple of 128"):
        InstrDescriptor.make("mxf4", m=64, n=64, atype="e2m1", btype="e2m1")
    with pytest.raises(DescriptorError, match="6-bit field"):
        InstrDescriptor.make("f16", m=128, n=512, atype="f16", btype="f16").encode()
    with pytest.raises(DescriptorError) as info:
        InstrDescriptor.make("f16", m=128, n=64, atype="e4m3", btype="f16")
    assert info.value.field == "atype"


# ----------------------------------------------------------------------------------------------
# Shared-memory descriptor (Table 40, 41)
# ----------------------------------------------------------------------------------------------
def test_smem_hand_encoding():
    # start 0x400 -> 0x40; LBO 16 -> 1 <<16; SBO 1024 -> 64 <<32; fixed 0b001 <<46; 128B = 2 <<61
    d = SmemDescriptor.make(start_address=0x400, lbo=16, sbo=1024, swizzle="128B")
    assert d.encode() == 0x40 | 1 << 16 | 64 << 32 | 1 << 46 | 2 << 61 == 0x4000404000010040
    assert d.issues() == []


def test_hopper_style_descriptor_without_bit46_is_flagged():
    # A wgmma (sm_90) descriptor has no version bit; tcgen05 needs bits 46-48 = 0b001 (Table 40).
    errs = SmemDescriptor.decode(0x4000004000010040).issues()
    assert [e.field for e in errs] == ["fixed_46"] and "Table 40" in errs[0].why


@pytest.mark.parametrize("code", [3, 5, 7])
def test_invalid_swizzle_codes(code):
    v = SmemDescriptor.make(start_address=0, sbo=1024).encode() | code << 61
    errs = SmemDescriptor.decode(v).issues()
    assert errs[0].field == "swizzle" and errs[0].value == code


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_any_64bit_smem_value_round_trips(v):
    d = SmemDescriptor.decode(v)
    assert d.encode() == v
    d.issues(target="sm_103a")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.integers(0, 0x3FFF),
       st.sampled_from(["none", "128B_base32B", "128B", "64B", "32B"]), st.integers(0, 7))
def test_legal_smem_fields_round_trip(start, lbo, sbo, swizzle, base):
    d = SmemDescriptor.make(start_address=start << 4, lbo=lbo << 4, sbo=sbo << 4, swizzle=swizzle,
                            base_offset=base)
    back = SmemDescriptor.decode(d.encode())
    assert (back.start_bytes, back.lbo_bytes, back.sbo_bytes, back.swizzle_name, back.base_offset) \
        == (start << 4, lbo << 4, sbo << 4, swizzle, base)
    assert back.issues() == []


def test_smem_alignment_and_range():
    for field in ("start_address", "lbo", "sbo"):
        kw = {"start_address": 0, "lbo": 16, "sbo": 0, field: 0x108}
        with pytest.raises(DescriptorError, match="16-byte aligned") as info:
            SmemDescriptor.make(**kw)
        assert info.value.field == field
    with pytest.raises(DescriptorError, match="0x3fff0"):
        SmemDescriptor.make(start_address=0x40000, sbo=0)


def test_absolute_lbo_mode_rules():
    ok = SmemDescriptor.make(start_address=0x60, lbo=0x400, sbo=1024, swizzle="128B",
                             lbo_mode="absolute")
    assert ok.issues(target="sm_103a", major="K") == []
    assert [e.field for e in ok.issues(target="sm_100a")] == ["lbo_mode"]
    assert [e.field for e in ok.issues(target="sm_103a", major="MN")] == ["lbo_mode"]
    sw64 = SmemDescriptor.make(start_address=0, lbo=0x400, sbo=512, swizzle="64B", lbo_mode="absolute")
    assert "9.7.16.3.1.2.1" in sw64.issues(target="sm_103a")[0].why
    based = SmemDescriptor.make(start_address=0x80, lbo=0x400, sbo=1024, swizzle="128B",
                                base_offset=1, lbo_mode="absolute")
    assert [e.field for e in based.issues(target="sm_103a")] == ["base_offset"]


def test_base_offset_formula_table41():
    # Table 41: 0 on the 1024/512/256-byte boundary; else (pattern start >> 7) & 7
    assert base_offset_for(0x2400, "128B") == 0
    assert base_offset_for(0x2480, "128B") == 1
    assert base_offset_for(0x2780, "128B") == 7
    assert base_offset_for(0x0200, "64B") == 0
    assert base_offset_for(0x0380, "64B") == 7
    assert base_offset_for(0x0100, "32B") == 0
    assert base_offset_for(0x0180, "32B") == 3


def test_advance_along_k_adds_bytes_over_16():
    d = SmemDescriptor.make(start_address=0x400, sbo=1024, swizzle="128B")
    assert d.advance(32).encode() == d.encode() + 2


# ----------------------------------------------------------------------------------------------
# Zero-column mask descriptor (Table 45): the spec's four examples
# ----------------------------------------------------------------------------------------------
def _zc(sc, fs, nzm, skip_field, use_field, shift):
    # the spec lists {sc3, sc2, sc1, sc0} high to low and gives the raw field values
    return ZeroColumnMaskDescriptor(*reversed(sc), *reversed(fs), non_zero_mask=nzm,
                                    skip_span=skip_field, use_span=use_field, column_shift=shift)


def _bits(s):
    # the spec's masks are written MSB..LSB, truncated on the left ("0b ... 111 0000")
    return [int(c) for c in reversed(s.replace(" ", ""))]


def test_zcol_example1_non_zero_mask_off():
    d = _zc((0, 0, 0, 0), (0, 0, 0, 0), 0, 4, 3, 0)
    assert d.mask_int(128, 64) == 0


def test_zcol_example2_m128():
    d = _zc((0, 0, 0, 0), (0, 0, 0, 0), 1, 2, 3, 0)
    want = _bits("111 0000 111 0000")
    assert list(d.mask(128, 64)[:len(want)].astype(int)) == want


def test_zcol_example3_m64():
    d = _zc((0, 0, 0, 0), (0, 0, 0, 1), 1, 2, 3, 0)
    m = d.mask(64, 64).astype(int)
    for sub, text in enumerate(["111 0000 111 0000 111", "0000 111 0000 111 0000"]):
        want = _bits(text)
        assert list(m[32 * sub: 32 * sub + len(want)]) == want


def test_zcol_example4_m32_with_shift():
    d = _zc((1, 2, 1, 0), (0, 0, 1, 1), 1, 2, 3, 2)
    m = d.mask(32, 128).astype(int)
    for sub, text in enumerate(["0000 111 0000 111", "0000 111 0000 11", "111 0000 111 00",
                                "111 0000 111 000"]):
        want = _bits(text)
        assert list(m[32 * sub: 32 * sub + len(want)]) == want, sub
    assert d.column_shift == 2 and d.issues(m=32, n=128) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_zcol_any_value_round_trips(v):
    d = ZeroColumnMaskDescriptor.decode(v)
    assert d.encode() == v
    d.issues(m=64, n=128)


def test_zcol_illegal_values():
    d = ZeroColumnMaskDescriptor.make(skip=2, use=2, shift=20)
    assert [e.field for e in d.issues(m=32, n=64)] == ["column_shift"]
    assert d.issues(m=128, n=64) == []
    assert [e.field for e in ZeroColumnMaskDescriptor.make(skip=2, use=2, shift=33).issues()] \
        == ["column_shift"]
    assert ZeroColumnMaskDescriptor.decode(1 << 37).issues()[0].field == "reserved"
    assert ZeroColumnMaskDescriptor.make(skip=1, use=1).issues(m=32, n=30)[0].field == "n"
    # start count past the first span: undefined by the spec -> named error
    bad = ZeroColumnMaskDescriptor.make(start_count=(4, 0, 0, 0), skip=3, use=4)
    assert bad.issues()[0].field == "sc0"
    with pytest.raises(DescriptorError):
        bad.mask(128, 64)


def test_zcol_mask_vectorised_matches_period():
    d = ZeroColumnMaskDescriptor.make(skip=5, use=11)
    m = d.mask(128, 256)
    assert m.dtype == np.bool_ and m.sum() == sum(1 for c in range(256) if c % 16 >= 11)


# ----------------------------------------------------------------------------------------------
# Target table against the ptxas oracle
# ----------------------------------------------------------------------------------------------
_PTX = """.version 9.0
.target {target}
.address_size 64
.visible .entry k() {{
  .reg .b32 r<6>; .reg .b64 d<3>; .reg .pred p;
  mov.b32 r0, 0; mov.b64 d0, 0; mov.b64 d1, 0; mov.b32 r1, 0; mov.b32 r2, 0; mov.b32 r3, 0;
  setp.eq.u32 p, r0, 0;
  {insn}
  ret;
}}
"""


@pytest.mark.parametrize("target", ["sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f"])
def test_target_table_agrees_with_ptxas(target, tmp_path):
    import shutil
    import subprocess
    from ptxsim.isa import targets
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    cases = {
        "tcgen05.mma.kind::i8": "tcgen05.mma.cta_group::1.kind::i8 [r0], d0, d1, r1, p;",
        "tcgen05.mma.sp.kind::mxf4": "tcgen05.mma.sp.cta_group::1.kind::mxf4.block_scale "
                                     "[r0], d0, d1, [r3], r1, [r2], [r2], p;",
    }
    for feature, insn in cases.items():
        f = tmp_path / "t.ptx"
        f.write_text(_PTX.format(target=target, insn=insn))
        res = subprocess.run([ptxas, f"-arch={target}", str(f), "-o", "/dev/null"],
                             capture_output=True, text=True)
        assert (res.returncode == 0) == targets.supports(target, feature), (feature, res.stderr)


@st.composite
def legal_idesc(draw):
    """A legal (descriptor, qualifiers) pair drawn from the rule tables, independently of issues()."""
    row = draw(st.sampled_from(MMA_SHAPES))
    kind = row.kind
    m, n = draw(st.sampled_from(row.m)), draw(st.sampled_from(row.n))
    dt, a, b = draw(st.sampled_from(list(_type_combos(kind))))
    neg_ok = kind != "i8"
    na, nb = (draw(st.booleans()), draw(st.booleans())) if neg_ok else (False, False)
    def can_transpose(t):
        return kind not in ("mxf4", "mxf4nvf4") and t not in ("e2m1", "e2m3", "e3m2")
    ta = draw(st.booleans()) if can_transpose(a) else False
    tb = draw(st.booleans()) if can_transpose(b) else False
    if tb and b in ("e4m3", "e5m2", "s8", "u8") and n % (16 * row.cta_group):   # Table 50
        tb = False
    kw = dict(m=m, n=n, atype=a, btype=b, dtype=dt, sparse=row.sparse, negate_a=na, negate_b=nb,
              transpose_a=ta, transpose_b=tb)
    if kind in BLOCK_SCALED_KINDS:
        ids = (0, 1, 2, 3) if kind == "mxf8f6f4" else (0, 2)
        kw.update(scale_a_id=draw(st.sampled_from(ids)), scale_b_id=draw(st.sampled_from(ids)),
                  scale_type=draw(st.sampled_from(["ue8m0", "ue4m3"] if kind == "mxf4nvf4" else ["ue8m0"])),
                  k96=row.k == 96)
    else:
        kw.update(selector=draw(st.integers(0, 3)) if row.sparse and kind in ("f16", "tf32") else 0,
                  saturate=draw(st.booleans()) if kind == "i8" else False,
                  max_shift=draw(st.integers(0, 3)) if row.ws else 0)
    quals = dict(sparse=row.sparse, ws=row.ws, cta_group=row.cta_group,
                 target="sm_103a" if row.feature else "sm_100a")
    return InstrDescriptor.make(kind, **kw), quals, kw


@settings(max_examples=400, deadline=None)
@given(legal_idesc())
def test_any_legal_combination_round_trips_and_validates(case):
    desc, quals, kw = case
    back = InstrDescriptor.decode(desc.encode(), desc.kind)
    assert back == desc
    assert (back.m, back.n, back.atype_name, back.btype_name) == (kw["m"], kw["n"], kw["atype"], kw["btype"])
    assert back.issues(**quals) == [], [str(e) for e in back.issues(**quals)]
