"""tcgen05.mma has one legality table (isa/tcgen05_mma.py SLOTS, RULES, PTX_VERSION_NOTES,
TARGET_NOTES), read by Tcgen05Mma.issues and by the validator (ptx/legality/tcgen05.py mma).

Expected verdicts are ptxas 13.0's (each case ran as a one-instruction kernel with
`ptxas -arch=<target>`, the message recorded here) or the spec's text (9.7.16.10.9.1-4,
Table 54)."""
from __future__ import annotations

import pytest

from ptxsim.isa import tcgen05_mma as M
from ptxsim.isa.tcgen05_mma import Tcgen05Mma
from ptxsim.ptx import errors_of, parse_instruction, validate

REGS = {**{f"%r{i}": ".b32" for i in range(8)}, **{f"%rd{i}": ".b64" for i in range(4)}}

# (target, PTX version, instruction, ptxas 13.0: None = assembles, else its message)
PTXAS = [
    ("sm_100f", "8.8", "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, 1;", None),
    ("sm_100f", "8.8", "tcgen05.mma.cta_group::1.kind::i8 [%r1], %rd1, %rd2, %r2, 1;",
     "Feature '.kind::i8' not supported on .target 'sm_100f'"),
    ("sm_100a", "8.6", "tcgen05.mma.cta_group::1.kind::i8 [%r1], %rd1, %rd2, %r2, 1;", None),
    ("sm_103a", "8.8", "tcgen05.mma.sp.cta_group::1.kind::mxf4.block_scale.block32 [%r1], %rd1, "
     "%rd2, [%r3], %r2, [%r4], [%r5], 1;", None),
    ("sm_103f", "8.8", "tcgen05.mma.sp.cta_group::1.kind::mxf4.block_scale.block32 [%r1], %rd1, "
     "%rd2, [%r3], %r2, [%r4], [%r5], 1;",
     "Feature '.kind::mxf4 with .sp modifier' not supported on .target 'sm_103f'"),
    ("sm_100a", "8.7", "tcgen05.mma.cta_group::1.kind::mxf4.block_scale [%r1], %rd1, %rd2, %r2, "
     "[%r4], [%r5], 1;", "Feature '.block32' requires PTX ISA .version 8.8 or later"),
    ("sm_100a", "8.6", "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%r1], "
     "%rd1, %rd2, %r2, [%r4], [%r5], 1;",
     "Feature '.kind::mxf4nvf4' requires PTX ISA .version 8.7 or later"),
]


@pytest.mark.parametrize("target,ptx,text,ptxas", PTXAS)
def test_both_layers_agree_with_ptxas(target, ptx, text, ptxas):
    inst = parse_instruction(text)
    errs = errors_of(validate(inst, target, ptx, registers=REGS))
    mma = Tcgen05Mma.from_opcode(inst.mnemonic, a_tmem=False)
    assert (not errs) == (ptxas is None), errs
    assert (not mma.issues(target, ptx)) == (ptxas is None)


def test_instruction_notes_need_a_ptx_version_at_the_isa_level():
    # With a PTX version every Target ISA note is judged here, with its "from PTX ISA 8.8"
    # qualifier (9.7.16.10.9.1: sm_100f "from PTX ISA 8.8"); without one, .kind::i8 & co. are
    # the instruction descriptor's (DescriptorError, tests/isa/test_tcgen05_mma_errors.py).
    assert Tcgen05Mma("i8").issues("sm_100f") == []
    assert "kind::i8" in str(Tcgen05Mma("i8").issues("sm_100f", "9.0")[0])
    assert Tcgen05Mma("f16").issues("sm_100f", "8.8") == []
    assert "sm_100f" in str(Tcgen05Mma("f16").issues("sm_100f", "8.7")[0])
    # .block16 / .block32: "requires sm_100f or sm_110f" families -> not on sm_120a
    assert Tcgen05Mma("mxf4", block_scale=True, scale_vec="block32").issues("sm_100f") == []
    assert Tcgen05Mma("mxf4", block_scale=True, scale_vec="block32").issues("sm_120a")


def test_validator_words_each_rule_from_the_table():
    s = "9.7.16.10.9.1"
    cases = {
        "tcgen05.mma.cta_group::1.kind::mxf4 [%r1], %rd1, %rd2, %r2, [%r4], [%r5], 1;":
            f".kind::mxf4 requires .block_scale for tcgen05.mma ({s})",
        "tcgen05.mma.cta_group::1.kind::f16.block_scale [%r1], %rd1, %rd2, %r2, [%r4], [%r5], 1;":
            f".block_scale is not valid with .kind::f16 ({s})",
        "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::4X [%r1], %rd1, %rd2, %r2, "
        "[%r4], [%r5], 1;": ".kind::mxf4 cannot be combined with .scale_vec::4X (Table 54)",
        "tcgen05.mma.cta_group::1.kind::f16.ashift [%r1], %rd1, %rd2, %r2, 1;":
            f".ashift requires matrix A in Tensor Memory ([a-tmem]) ({s})",
        "tcgen05.mma.cta_group::1.kind::i8 [%r1], %rd1, %rd2, %r2, 1, 3;":
            f"scale-input-d is only valid with .kind::f16 and .kind::tf32, not .kind::i8 ({s})",
        "tcgen05.mma.ws.cta_group::1.kind::mxf4 [%r1], %rd1, %rd2, %r2, 1;":
            ".kind::mxf4 is not valid for tcgen05.mma.ws (only .kind::f16, .kind::tf32, "
            ".kind::f8f6f4, .kind::i8) (9.7.16.10.9.3)",
    }
    for text, want in cases.items():
        got = [d.message for d in errors_of(validate(parse_instruction(text), "sm_100a", "9.0",
                                                     registers=REGS))]
        assert want in got, (text, got)


def test_the_validator_reads_the_isa_table():
    from ptxsim.ptx.legality import tcgen05 as leg
    # Table 54: the .scale_vectorsize each block-scaled kind takes
    assert leg.SCALE_VECTORSIZE == {
        ".kind::mxf8f6f4": {".scale_vec::1X", ".block32"},
        ".kind::mxf4": {".scale_vec::2X", ".block32"},
        ".kind::mxf4nvf4": {".scale_vec::2X", ".scale_vec::4X", ".block16", ".block32"}}
    assert leg.KINDS.split() == [".kind::f16", ".kind::tf32", ".kind::f8f6f4", ".kind::i8",
                                 ".kind::mxf8f6f4", ".kind::mxf4", ".kind::mxf4nvf4"]
    # 9.7.16.10.9.3: .ws is .cta_group::1 only, collectors b0-b3, no .block_scale / .ashift
    ws = {s.name: s.values for s in M.SLOTS[True]}
    assert ws[".cta_group"] == (".cta_group::1",)
    assert ".block_scale" not in ws and ".ashift" not in ws
    assert len(ws[".collector_usage"]) == 16
    # the rules the validator words itself (the others it states through slots / operand forms)
    assert {r.name for r in M.RULES if r.says} == {
        "ws_kind", "kind_needs_block_scale", "block_scale_kind", "scale_vec_needs_block_scale",
        "table54", "mxf4nvf4_explicit", "ashift_block_scale", "ashift_collector",
        "scale_input_d_kind", "ashift_a_tmem"}


def test_view_of_reads_the_written_qualifiers():
    q = {".kind": ".kind::mxf4nvf4", ".cta_group": ".cta_group::2", ".block_scale": ".block_scale",
         ".scale_vectorsize": ".scale_vec::4X", ".collector_usage": ".collector::a::fill"}
    v = M.view_of(q, sp=True, ws=False)
    assert (v.kind, v.cta_group, v.sparse, v.block_scale, v.scale_vec, v.collector) == \
        ("mxf4nvf4", 2, True, True, "4X", "a::fill")
    assert M.view_of({".scale_vectorsize": ".block16"}, False, False).scale_vec == "block16"


def test_execute_parsed_checks_the_ptx_isa_notes_when_given_a_version():
    from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, stage
    import numpy as np
    from ptxsim.errors import OperandError
    from ptxsim.isa.tcgen05_mma import execute_parsed
    rng = np.random.default_rng(0)
    cta, base = new_cta()
    regs = {"%r1": base,
            "%rd1": stage(cta.smem, gen_bits(rng, "bf16", (128, 16)), "bf16", "f16", 0).encode(),
            "%rd2": stage(cta.smem, gen_bits(rng, "bf16", (64, 16)), "bf16", "f16",
                          16384).encode(),
            "%r4": InstrDescriptor.make("f16", m=128, n=64, atype="bf16",
                                        btype="bf16").encode(), "%p1": 1}
    inst = parse_instruction("tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r4, %p1, 3;")
    before = cta.tmem.cells.copy()
    # "Argument scale-input-d ... supported on sm_100f ... from PTX ISA version 8.8"; tcgen05.mma
    # itself needs PTX ISA 8.6 (9.7.16.10.9.1 PTX ISA notes)
    with pytest.raises(OperandError, match="8.6"):
        execute_parsed(cta, inst, regs.__getitem__, "sm_100a", ptx_version="8.5")
    np.testing.assert_array_equal(cta.tmem.cells, before)          # refused before computing
    execute_parsed(cta, inst, regs.__getitem__, "sm_100a", ptx_version="8.6")
    assert not np.array_equal(cta.tmem.cells, before)
