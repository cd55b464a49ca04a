"""Semantics of warp-level mma.sp (ptxsim.isa.mma_sp) on hand-built operands.

Expected values come from numpy on the dense matrices built here (small integers, so every sum is
exact in any arithmetic), from the PTX ISA text (9.7.14.6.1, 9.7.14.3, Table 37), from ptxas 13.0
(run in this session on the instruction texts listed in LEGALITY) and from the H200 fault
recorded in FACTS.md §5. The arithmetic engine is injected (`engine=`) so these tests check the
fragment gathering, metadata, selector and scatter logic independently of ptxsim.numerics.
"""
from __future__ import annotations

from types import SimpleNamespace as NS

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import (IllegalInstructionError, OperandError, PtxValidationError,
                           SparsityMetadataError, UndefinedBehavior)
from ptxsim.isa import mma_sp as sp

RNG = np.random.default_rng(20261121)

# ------------------------------------------------------------------ exact reference engines
_FLOAT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _decode(bits, t):
    bits = np.asarray(bits, dtype=np.uint32)
    if t in ("f32", "tf32"):
        return (bits & (0xFFFFE000 if t == "tf32" else 0xFFFFFFFF)).view(np.float32).astype(np.float64)
    if t in _FLOAT:
        return bits.astype(np.uint16).view(_FLOAT[t]).astype(np.float64)
    if t == "e4m3":
        return bits.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    width = {"u8": 8, "s8": 8, "u4": 4, "s4": 4, "s32": 32}[t]
    v = bits.astype(np.int64)
    return np.where(v >= 1 << (width - 1), v - (1 << width), v) if t[0] == "s" else v


def _encode(values, t):
    if t == "f32":
        return values.astype(np.float32).view(np.uint32)
    if t == "f16":
        return values.astype(np.float16).view(np.uint16).astype(np.uint32)
    return (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def exact_engine(a, b, c, *, atype, btype, ctype, dtype, satfinite=False, **_):
    """numerics.mma_sparse's contract -- a (W, 16, K/2) stored A, b (W, 16, K/2, 8) the B rows
    each row's metadata selects, c (W, 16, 8) -- computed in float64 / int64: exact for the
    small values these tests use."""
    acc = np.einsum("wmk,wmkn->wmn", _decode(a, atype), _decode(b, btype)) + _decode(c, ctype)
    if satfinite:
        acc = np.clip(acc, -2**31, 2**31 - 1)
    return _encode(acc, dtype)


# -------------------------------------------------------------------- operand construction
def _elem_bits(values, t):
    if t in _FLOAT:
        return values.astype(_FLOAT[t]).view(np.uint16).astype(np.uint32)
    if t == "tf32":
        return values.astype(np.float32).view(np.uint32)
    if t == "e4m3":
        return values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).astype(np.uint32)
    width = {"u8": 8, "s8": 8, "u4": 4, "s4": 4}[t]
    return (values.astype(np.int64) & ((1 << width) - 1)).astype(np.uint32)


def _values(t, shape):
    if t[0] == "u":
        return RNG.integers(0, 4, shape).astype(np.float64)
    return RNG.integers(-3, 4, shape).astype(np.float64)


def sparse_operands(form: sp.MmaSpForm, warps: int, *, ordered=True):
    """A dense A obeying the form's sparsity pattern, its stored elements and metadata fields
    (9.7.14.6.1), B and C; returns (dense A values, idx (W,16,units), compressed values)."""
    k = form.k
    if form.pattern == "1:2":        # one of each 2-wide chunk; field 0b0100 (pos 0) / 0b1110
        pos = RNG.integers(0, 2, (warps, 16, k // 2))
        idx = np.where(pos == 1, 0b1110, 0b0100).astype(np.uint32)
        cols = 2 * np.arange(k // 2) + pos
    else:
        group = 4 if form.pattern == "2:4" else 8        # 4:8 keeps 2 of the 4 pairs
        slots = np.sort(np.argsort(RNG.random((warps, 16, k // group, 4)), axis=-1)[..., :2], -1)
        if not ordered:
            slots = slots[..., ::-1]
        idx = slots.reshape(warps, 16, -1).astype(np.uint32)
        if form.pattern == "2:4":
            cols = (4 * np.arange(k // 4)[:, None] + slots).reshape(warps, 16, -1)
        else:
            pair = (8 * np.arange(k // 8)[:, None] + 2 * slots).reshape(warps, 16, -1)
            cols = (pair[..., None] + np.arange(2)).reshape(warps, 16, -1)
    stored = _values(form.atype, (warps, 16, k // 2))
    dense = np.zeros((warps, 16, k))
    np.put_along_axis(dense, cols, stored, axis=-1)
    return dense, idx, stored


def registers(form, dense_unused, idx, stored, B, C, selector):
    a = form.a.pack(_elem_bits(stored, form.atype))
    b = form.b.pack(_elem_bits(B, form.btype))
    c = form.c.pack(_encode(C, form.ctype))
    e = form.metadata.pack(idx, selector)
    return a, b, c, e


FORMS = {
    "f16 k16 f32": sp.MmaSpForm(16, "f32", "f16", "f16", "f32"),
    "f16 k16 f16": sp.MmaSpForm(16, "f16", "f16", "f16", "f16", ordered=True),
    "f16 k32 f32": sp.MmaSpForm(32, "f32", "f16", "f16", "f32", ordered=True),
    "bf16 k32": sp.MmaSpForm(32, "f32", "bf16", "bf16", "f32"),
    "tf32 k8": sp.MmaSpForm(8, "f32", "tf32", "tf32", "f32"),
    "tf32 k16": sp.MmaSpForm(16, "f32", "tf32", "tf32", "f32", ordered=True),
    "e4m3 k64": sp.MmaSpForm(64, "f32", "e4m3", "e4m3", "f32"),
    "s8 k32": sp.MmaSpForm(32, "s32", "s8", "u8", "s32"),
    "u8 k64 sat": sp.MmaSpForm(64, "s32", "u8", "s8", "s32", satfinite=True),
    "s4 k64": sp.MmaSpForm(64, "s32", "s4", "s4", "s32", ordered=True),
    "u4 k128": sp.MmaSpForm(128, "s32", "u4", "s4", "s32"),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_sparse_mma_equals_dense_product_of_decompressed_a(name):
    form = FORMS[name]
    warps = 3
    for selector in form.selectors:
        if form.atype == "f16" and form.k == 32 and form.dtype == "f32" and selector > 1:
            continue
        dense, idx, stored = sparse_operands(form, warps, ordered=True)
        B = _values(form.btype, (warps, form.k, 8))
        C = RNG.integers(-50, 50, (warps, 16, 8)).astype(np.float64)
        a, b, c, e = registers(form, dense, idx, stored, B, C, selector)
        d = sp.mma_sp(form, a, b, c, e, selector, engine=exact_engine)
        got = _decode(form.d.unpack(d), form.dtype)
        assert np.array_equal(got, dense @ B + C), (name, selector)


def test_metadata_only_from_the_selected_threads():
    # garbage in the lanes the selector does not name must not matter (9.7.14.6.1)
    form = FORMS["f16 k16 f32"]
    dense, idx, stored = sparse_operands(form, 2)
    B, C = _values("f16", (2, 16, 8)), np.zeros((2, 16, 8))
    for selector in range(4):
        a, b, c, e = registers(form, dense, idx, stored, B, C, selector)
        lanes = np.arange(32)
        e = np.where(lanes % 4 == selector, e, np.uint32(0xFFFFFFFF))      # 0b1111: undefined
        d = sp.mma_sp(form, a, b, c, e.astype(np.uint32), selector, engine=exact_engine)
        assert np.array_equal(_decode(form.d.unpack(d), "f32"), dense @ B)


def test_sp_accepts_decreasing_indices_ordered_refuses_them():
    # .sp: any two distinct indices; .sp::ordered_metadata: increasing from the LSB, else UB
    plain = sp.MmaSpForm(32, "s32", "s8", "s8", "s32")
    dense, idx, stored = sparse_operands(plain, 2, ordered=False)     # idx0 > idx1 everywhere
    B, C = _values("s8", (2, 32, 8)), np.zeros((2, 16, 8))
    a, b, c, e = registers(plain, dense, idx, stored, B, C, 0)
    d = sp.mma_sp(plain, a, b, c, e, 0, engine=exact_engine)
    assert np.array_equal(_decode(plain.d.unpack(d), "s32"), dense @ B)
    ordered = sp.MmaSpForm(32, "s32", "s8", "s8", "s32", ordered=True)
    with pytest.raises(SparsityMetadataError) as err:
        sp.mma_sp(ordered, a, b, c, e, 0, engine=exact_engine)
    # warp 0, row 0, chunk 0 comes from lane 0 (selector 0: thread pair 0, 1; row g -> lane 4g)
    assert (err.value.warp, err.value.row, err.value.chunk, err.value.lane) == (0, 0, 0, 0)


def test_repeated_index_is_undefined_and_gather_sums_both():
    form = sp.MmaSpForm(16, "f32", "f16", "f16", "f32")
    dense, idx, stored = sparse_operands(form, 1)
    idx[0, 5, 2:4] = 3                      # row 5, chunk 1: 0b1111, undefined (9.7.14.6.1)
    B, C = _values("f16", (1, 16, 8)), np.zeros((1, 16, 8))
    a, b, c, e = registers(form, dense, idx, stored, B, C, 1)
    with pytest.raises(SparsityMetadataError) as err:
        sp.mma_sp(form, a, b, c, e, 1, engine=exact_engine)
    assert (err.value.row, err.value.chunk, err.value.lane) == (5, 1, 4 * 5 + 1)
    # "gather": both stored elements of the chunk multiply B row 4 + 3 (H200 behaviour, docs)
    d = sp.mma_sp(form, a, b, c, e, 1, engine=exact_engine, undefined_metadata="gather")
    expect = dense[0] @ B[0]
    expect[5] -= dense[0, 5, 4:8] @ B[0, 4:8]
    expect[5] += (stored[0, 5, 2] + stored[0, 5, 3]) * B[0, 7]
    assert np.array_equal(_decode(form.d.unpack(d), "f32")[0], expect)


def test_tf32_metadata_other_than_0100_1110_is_undefined():
    form = FORMS["tf32 k8"]
    dense, idx, stored = sparse_operands(form, 1)
    idx[0, 9, 3] = 0b1000
    a, b, c, e = registers(form, dense, idx, stored, np.zeros((1, 8, 8)), np.zeros((1, 16, 8)), 0)
    for mode in sp.UNDEFINED_METADATA:
        with pytest.raises(SparsityMetadataError):
            sp.mma_sp(form, a, b, c, e, 0, engine=exact_engine, undefined_metadata=mode)


def _zeros(form):
    return (np.zeros((form.a.nregs, 1, 32), np.uint32), np.zeros((form.b.nregs, 1, 32), np.uint32),
            np.zeros((form.c.nregs, 1, 32), np.uint32))


@pytest.mark.parametrize("form,selector,error", [
    # ptxas 13.0: "value '2' out of range, expected to be in range [0..1]"
    (sp.MmaSpForm(32, "f32", "bf16", "bf16", "f32"), 2, PtxValidationError),
    (sp.MmaSpForm(32, "f16", "f16", "f16", "f16"), 3, PtxValidationError),
    (sp.MmaSpForm(64, "s32", "s8", "s8", "s32"), 1, PtxValidationError),
    (sp.MmaSpForm(16, "f32", "tf32", "tf32", "f32"), 2, PtxValidationError),
    (sp.MmaSpForm(8, "f32", "tf32", "tf32", "f32"), 4, PtxValidationError),
    # FACTS §5 / hw captures: assembles, then faults with an illegal instruction on the H200
    (sp.MmaSpForm(32, "f32", "f16", "f16", "f32"), 2, IllegalInstructionError),
    (sp.MmaSpForm(32, "f32", "f16", "f16", "f32", ordered=True), 3, IllegalInstructionError),
])
def test_selector_errors(form, selector, error):
    a, b, c = _zeros(form)
    with pytest.raises(error):
        sp.mma_sp(form, a, b, c, np.zeros((1, 32), np.uint32), selector, engine=exact_engine)


# (instruction text, target, ptxas 13.0 accepts) -- run in this session with
# `ptxas -arch=<target>` on a kernel holding the one instruction.
R = lambda p, n: "{" + ", ".join(f"%{p}{i}" for i in range(n)) + "}"
OPS4 = f"{R('d', 4)}, {R('a', 4)}, {R('b', 4)}, {R('c', 4)}, %e, 0"
SCALE = ", %sa, {%ba, %ta}, %sb, {%bb, %tb}"
LEGALITY = [
    (f"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 {R('d', 4)}, {R('a', 2)}, {R('b', 2)}, {R('c', 2)}, %e, 0", "sm_90a", False),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32 {OPS4}", "sm_89", True),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32 {OPS4}", "sm_80", False),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32 {OPS4}", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f16.e4m3.e4m3.f16 {R('d', 2)}, {R('a', 4)}, {R('b', 4)}, {R('c', 2)}, %e, 0", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f16.e4m3.e4m3.f16 {R('d', 2)}, {R('a', 4)}, {R('b', 4)}, {R('c', 2)}, %e, 0", "sm_90a", False),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.f16.e4m3.e4m3.f16 {R('d', 2)}, {R('a', 4)}, {R('b', 4)}, {R('c', 2)}, %e, 0", "sm_120a", False),
    (f"mma.sp.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {R('d', 4)}, {R('a', 2)}, {R('b', 2)}, {R('c', 4)}, %e, 0", "sm_120a", False),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32 {OPS4}", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32 {OPS4}", "sm_120f", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32 {OPS4}", "sm_120", False),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32 {OPS4}", "sm_100a", False),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32 {OPS4}", "sm_120a", False),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e3m2.e2m1.f32.ue8m0 {OPS4}{SCALE}", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0 {OPS4}{SCALE}", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0 {OPS4}{SCALE}", "sm_121a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0 {OPS4}{SCALE}", "sm_120f", False),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3 {OPS4}{SCALE}", "sm_120a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue4m3 {OPS4}{SCALE}", "sm_120a", False),
    (f"mma.sp.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32 {R('d', 4)}, {R('a', 2)}, {R('b', 2)}, {R('c', 4)}, %e, 0", "sm_90a", True),
    (f"mma.sp.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.s4.s32 {R('d', 4)}, {R('a', 2)}, {R('b', 2)}, {R('c', 4)}, %e, 0", "sm_90a", True),
    (f"mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {R('d', 4)}, {R('a', 2)}, {R('b', 2)}, {R('c', 4)}, %e, 0", "sm_80", True),
]


def mini_parse(text: str):
    """Just enough of a PTX instruction parser for these tests (the front end is tested
    elsewhere): opcode, dotted qualifiers, operands as registers / immediates / vectors."""
    import re
    head, ops = text.rstrip(";").split(None, 1)
    parts = head.split(".")

    def op(tok):
        tok = tok.strip()
        if tok.startswith("{"):
            return NS(elements=tuple(op(x) for x in tok[1:-1].split(",")))
        if tok[0].isdigit():
            return NS(value=int(tok, 0))
        return NS(name=tok)
    return NS(opcode=parts[0], qualifiers=tuple("." + p for p in parts[1:]), predicate=None,
              operands=tuple(op(t) for t in re.findall(r"\{[^}]*\}|[^,\s]+", ops)), text=text)


def _accepts(text, target):
    inst = mini_parse(text)
    try:
        form = sp.form_of(inst)
        form.check_target(target)
        form.check_selector(inst.operands[5].value)
    except PtxValidationError:
        return False
    return True


@pytest.mark.parametrize("text,target,ptxas", LEGALITY)
def test_legality_agrees_with_ptxas(text, target, ptxas):
    assert _accepts(text, target) == ptxas


def test_form_of_reads_the_qualifiers():
    form = sp.form_of(mini_parse(LEGALITY[15][0]))       # mxf4 without .scale_vec: 2X default
    assert (form.k, form.kind, form.stype, form.scale_vec, form.pattern, form.element_bits) == \
        (128, "mxf4", "ue8m0", "2X", "4:8", 4)
    form = sp.form_of(mini_parse(LEGALITY[19][0]))
    assert (form.satfinite, form.atype, form.btype, form.ordered) == (True, "u8", "s8", False)
    with pytest.raises(PtxValidationError):
        sp.form_of(mini_parse("mma.sp.sync.aligned.m16n8k16.row.f32.f16.f16.f32 {%d0}, {%a0}, "
                              "{%b0}, {%c0}, %e, 0"))            # no .col


def test_block_scale_selectors_follow_table_37():
    form = sp.form_of(mini_parse(LEGALITY[14][0]))        # mxf4, scale_vec::2X
    lane = np.arange(32, dtype=np.uint32)
    # byte j of lane l holds 4*l + j: every scale names its source
    data = ((4 * lane[:, None] + np.arange(4)) << (8 * np.arange(4))).sum(1).astype(np.uint32)
    sa, sb = sp.scale_matrices(form, data[None], data[None], 2, 1, 0, 3)
    # thread-id-a 1: lanes 4g+2 (row g) and 4g+3 (row g+8); byte-id-a 2: bytes 2, 3 (9.7.14.3)
    assert sa.shape == (1, 16, 2) and sb.shape == (1, 2, 8)
    for g in range(8):
        assert list(sa[0, g]) == [4 * (4 * g + 2) + 2, 4 * (4 * g + 2) + 3]
        assert list(sa[0, g + 8]) == [4 * (4 * g + 3) + 2, 4 * (4 * g + 3) + 3]
        # thread-id-b 3: lane 4g+3 holds column g; byte-id-b 0: bytes 0, 1
        assert list(sb[0, :, g]) == [4 * (4 * g + 3), 4 * (4 * g + 3) + 1]
    with pytest.raises(UndefinedBehavior):                # Table 37: byte-id 1 with 2X
        sp.scale_matrices(form, data[None], data[None], 1, 0, 0, 0)


def test_block_scaled_mma_passes_the_selected_scales_to_the_engine():
    form = sp.form_of(mini_parse(LEGALITY[13][0]))        # mxf8f6f4 1X, e3m2 x e2m1
    seen = {}

    def engine(a, b, c, **kw):
        seen.update(kw)
        return np.zeros(c.shape, np.uint32)
    a, b, c = _zeros(form)
    dense, idx, stored = sparse_operands(form, 1)
    e = form.metadata.pack(idx, 0)
    sa = np.full((1, 32), 0x7F7E7D7C, np.uint32)
    sp.mma_sp(form, a, b, c, e, 0, target="sm_120a", engine=engine,
              scale=(sa, sa, 3, 0, 1, 2))
    # 1X: one scale per row / column over the 32 stored elements (K = 64 dense)
    assert seen["block"] == 32 and seen["scale_type"] == "ue8m0"
    assert (seen["scale_a"] == 0x7F).all() and (seen["scale_b"] == 0x7D).all()
    assert seen["scale_a"].shape == (1, 16, 1) and seen["scale_b"].shape == (1, 1, 8)


def test_f8f6f4_containers_are_stripped():
    # 9.7.14.6.3: e2m1 sits in bits [5:2] of its byte, e3m2 / e2m3 in [5:0]
    form = sp.MmaSpForm(64, "f32", "e2m1", "e3m2", "f32", ordered=True, kind="f8f6f4")
    x = np.array([0b11_0110_11, 0b00_1010_00], dtype=np.uint32)
    assert list(sp.element_bits(form, "e2m1", x)) == [0b0110, 0b1010]
    assert list(sp.element_bits(form, "e3m2", x)) == [0b011011, 0b101000]


def test_target_requirements():
    with pytest.raises(PtxValidationError):
        sp.MmaSpForm(64, "f32", "e4m3", "e4m3", "f32").check_target("sm_86")
    sp.MmaSpForm(64, "f32", "e4m3", "e4m3", "f32").check_target("sm_89")
    with pytest.raises(OperandError):
        sp.parse_target("hopper")


def test_undefined_metadata_mode_is_checked():
    form = FORMS["f16 k16 f32"]
    a, b, c = _zeros(form)
    with pytest.raises(OperandError):
        sp.mma_sp(form, a, b, c, np.zeros((1, 32), np.uint32), 0, engine=exact_engine,
                  undefined_metadata="whatever")


def test_with_numerics_engine_k16_equals_dense_on_decompressed_a():
    """K/2 <= terms per block and finite inputs: the stored-element dot product and the dense
    product of the decompressed A are the same fused sum (FACTS §1 model)."""
    numerics = pytest.importorskip("ptxsim.numerics")
    if not hasattr(numerics, "mma"):
        pytest.skip("ptxsim.numerics.mma not merged yet")
    form = sp.MmaSpForm(16, "f32", "f16", "f16", "f32")
    dense, idx, stored = sparse_operands(form, 2)
    stored = stored + RNG.random(stored.shape)          # not exactly summable any more
    B = RNG.random((2, 16, 8)) - 0.5
    C = RNG.random((2, 16, 8))
    a, b, c, e = registers(form, dense, idx, stored, B, C, 0)
    d = sp.mma_sp(form, a, b, c, e, 0)
    decompressed = sp.decompress(form, form.a.unpack(a), idx, 0)
    for w in range(2):
        ref = numerics.mma(decompressed[w], form.b.unpack(b)[w], form.c.unpack(c)[w], arch="sm_90",
                           kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
        assert np.array_equal(form.d.unpack(d)[w], ref)
