"""ptxsim.isa.legality: the table vocabulary shared by the isa modules and the validator.

Expected values are the spec's words, worked by hand here: 9.7.19.5 (imm-reg-count "in the
range 24 to 256 (both inclusive) and must be a multiple of 8"), 9.7.17.3 ("immAlign ... must be
a power of 2 and must not exceed 2^23"; syntax "alloca.type ptr, size{, immAlign};"), 9.7.19.3
(pmevent a in 0..15), and ptxas 13.0 verdicts recorded in tests/isa/test_misc.py.
"""
import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import misc, stack
from ptxsim.isa.legality import Form, Imm, Operand, Slot, check_form, match_slots, register_kinds
from ptxsim.isa.targets import AtLeast, Req


def test_imm_rules_from_the_spec_text():
    setmaxnreg = Imm(24, 256, 8)
    assert [v for v in range(0, 300) if setmaxnreg.ok(v)] == list(range(24, 257, 8))
    align = Imm(1, 1 << 23, pow2=True)
    assert [v for v in range(-4, 70) if align.ok(v)] == [1, 2, 4, 8, 16, 32, 64]
    assert align.ok(1 << 23) and not align.ok(1 << 24) and not align.ok((1 << 23) - 1)
    assert align.rule() == "a power of 2 not exceeding 2^23"
    assert setmaxnreg.rule() == "a multiple of 8 in [24, 256]"


def test_match_slots_is_order_free_and_reports_every_problem():
    slots = (Slot.of(".action", ".inc .dec", True), Slot.of(".sync", ".sync", True))
    got, problems = match_slots(slots, (".sync", ".dec"))
    assert got == {".action": ".dec", ".sync": ".sync"} and problems == []
    got, problems = match_slots(slots, (".inc", ".dec", ".foo"))
    assert [(p.kind, p.qualifier, p.previous) for p in problems] == [
        ("repeated", ".dec", ".inc"), ("unknown", ".foo", None), ("missing", None, None)]
    assert problems[2].slot.name == ".sync"


def test_slot_keeps_the_spec_order():
    assert Slot.of(".action", ".inc .dec").values == (".inc", ".dec")


def test_form_syntax_and_counts_follow_the_syntax_line():
    alloca = stack.FORMS["alloca"]
    assert alloca.syntax == "ptr, size{, immAlign}"
    assert alloca.operand_counts == (2, 3)
    assert misc.FORMS["trap"].operand_counts == (0, 0)


def test_register_kinds_follow_the_type_slot():
    assert register_kinds("rT|imm", {".type": ".u64"}) == "r64|imm"
    assert register_kinds("rT", {".type": ".u32"}) == "r32"
    assert register_kinds("rT", {".type": None}) == "r32"
    assert register_kinds("r32|imm", {}) == "r32|imm"


TOY = Form("toy", "toy", (Slot.of(".type", ".u32 .s32", True),),
           (Operand("a", "imm", Imm(0, 15)), Operand("b", "r32|imm", optional=True)),
           (7, 0), Req(AtLeast(70)), "x.y")


@pytest.mark.parametrize("quals,ops,target,ptx,msg", [
    ((".u32", ".s32"), (1,), None, None, "both fill .type"),
    ((), (1,), None, None, "needs exactly one of .u32 or .s32"),
    ((".u32", ".x"), (1,), None, None, "unexpected qualifier .x"),
    ((".u32",), (), None, None, "takes 1 to 2 operands, got 0"),
    ((".u32",), (16,), None, None, r"immediate 16 outside \[0, 15\]"),
    ((".u32",), ("r1",), None, None, "operand must be an immediate"),
    ((".u32",), (1, 2.5), None, None, "operand must be a register or an immediate"),
    ((".u32",), (1,), None, "6.9", "needs PTX ISA 7.0 or later, got 6.9"),
    ((".u32",), (1,), "sm_62", None, "not supported on target sm_62"),
    ((".u32",), (1,), "sm62", None, "unknown target"),
])
def test_check_form_names_the_problem(quals, ops, target, ptx, msg):
    with pytest.raises(PtxValidationError, match=msg):
        check_form(TOY, quals, ops, target, ptx)


def test_check_form_accepts_a_legal_instance():
    assert check_form(TOY, (".s32",), (15, "r1"), "sm_70", "7.0") == {".type": ".s32"}


def test_stack_check_matches_ptxas_rules():
    # 9.7.17: PTX ISA 7.3, sm_52; .u32/.u64 only; immAlign a power of two <= 2^23
    stack.check("alloca", (".u64",), ("rd1", 16, 1 << 23), "sm_52", "7.3")
    stack.check("stacksave", (".u32",), ("r1",), "sm_90a", "9.0")
    for quals, ops, t, v in [((".u64",), ("rd1", 16, 3), "sm_52", "7.3"),
                             ((".u64",), ("rd1", 16, 1 << 24), "sm_52", "7.3"),
                             ((".b32",), ("r1", 16), "sm_52", "7.3"),
                             ((".u64",), ("rd1", 16), "sm_50", "7.3"),
                             ((".u64",), ("rd1", 16), "sm_52", "7.2")]:
        with pytest.raises(PtxValidationError):
            stack.check("alloca", quals, ops, t, v)


def test_vocabulary_has_no_parser_dependency():
    src = Path(__file__).parents[2] / "src/ptxsim/isa/legality.py"
    imports = [n for n in ast.walk(ast.parse(src.read_text()))
               if isinstance(n, (ast.Import, ast.ImportFrom))]
    mods = [n.module for n in imports if isinstance(n, ast.ImportFrom)]
    assert not any(m and m.startswith("ptxsim.ptx") for m in mods), mods


def test_validator_reads_the_isa_rows():
    """One table per family: the front end's rules for misc and stack take their rows from the
    isa modules (the consistency guard is true by construction for them)."""
    from ptxsim.ptx.legality import common, stack_misc
    assert common.Slot is Slot
    assert stack_misc.SETMAXNREG is misc.FORMS["setmaxnreg"].req
    assert set(stack_misc.RULES) == set(stack.FORMS) | set(misc.OPCODES)


# ------------------------------------------------------------------------------------ video
# ptxas 13.0 verdicts, -arch=sm_90a, .version 9.0 (recorded 2026-11-21; re-run below when ptxas
# is installed). Both layers read isa/video.py SYNTAX + problems, so both must give ptxas's
# verdict. The first two were rejected by the isa parser before the tables were merged (it
# read the types positionally); the last three were accepted by the validator.
VIDEO_PTXAS = [
    ("vadd.sat.u32.u32.u32 %r1, %r2, %r3;", True),
    ("vadd.u32.sat.u32.u32 %r1, %r2, %r3;", True),
    ("vset.eq.u32.u32 %r1, %r2, %r3;", True),
    ("vadd2.add.u32.u32.u32 %r1, %r2, %r3, %r4;", True),
    ("vadd4.u32.u32.u32 %r1, %r2.b1023, %r3, %r4;", True),
    ("vshl.u32.clamp.u32.u32 %r1, %r2, %r3;", True),
    ("vmad.po.u32.u32.u32 %r1, %r2, %r3, %r4;", True),
    ("vadd.u32.u32.u32.u32 %r1, %r2, %r3;", False),     # "Unexpected instruction types"
    ("vmad.s32.s32.s32 -%r1, %r2, %r3, %r4;", False),   # "Operand negation limited to ..."
    ("vadd4.u32.u32.u32 %r1, %r2.b1024, %r3, %r4;", False),  # "Parsing error near '.b1024'"
]
VIDEO_REGS = {f"%r{i}": ".b32" for i in range(8)}


@pytest.mark.parametrize("text,ok", VIDEO_PTXAS)
def test_video_both_layers_follow_ptxas(text, ok):
    from ptxsim.isa import video
    from ptxsim.ptx import errors_of, parse_instruction, validate
    errs = errors_of(validate(parse_instruction(text), "sm_90a", "9.0", registers=VIDEO_REGS))
    assert (errs == []) == ok, errs
    if ok:
        video.parse(text)
    else:
        with pytest.raises(PtxValidationError):
            video.parse(text)


def test_video_order_free_types_decode_as_dtype_atype_btype():
    from ptxsim.isa import video
    ins = video.parse("vsub.sat.s32.u32.s32 %r1, %r2, %r3;")
    assert (ins.dtype, ins.atype, ins.btype, ins.sat) == ("s32", "u32", "s32", True)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_video_recorded_verdicts_still_hold_live(tmp_path):
    wrong = []
    for text, ok in VIDEO_PTXAS:
        src = (".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
               f".reg .b32 %r<8>;\n{text}\nret;\n}}\n")
        (tmp_path / "v.ptx").write_text(src)
        got = subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "v.ptx"), "-o",
                              "/dev/null"], capture_output=True).returncode == 0
        if got != ok:
            wrong.append(text)
    assert wrong == []


# ----------------------------------------------------------------------------------- mma.sp
# Register counts per thread, worked by hand: A holds 16 x K/2 stored elements, B K x 8, spread
# over 32 threads of 32-bit registers: regs = elements * bits / (32 * 32); mxf4/mxf4nvf4 pack
# e2m1 at 4 bits. Max sparsity selector: ptxas 13.0's limits, measured one shape at a time (the
# validator's former hand-written ROWS table).
MMA_SP_FACTS = [  # (K, atype, kind, A regs, B regs, max selector)
    (16, "f16", None, 16 * 8 * 16 // 1024, 16 * 8 * 16 // 1024, 3),
    (32, "f16", None, 16 * 16 * 16 // 1024, 32 * 8 * 16 // 1024, 1),
    (16, "bf16", None, 2, 2, 3), (32, "bf16", None, 4, 4, 1),
    (8, "tf32", None, 16 * 4 * 32 // 1024, 8 * 8 * 32 // 1024, 3),
    (16, "tf32", None, 16 * 8 * 32 // 1024, 16 * 8 * 32 // 1024, 1),
    (64, "e4m3", None, 16 * 32 * 8 // 1024, 64 * 8 * 8 // 1024, 0),
    (64, "e2m1", "f8f6f4", 4, 4, 0), (64, "e3m2", "mxf8f6f4", 4, 4, 0),
    (128, "e2m1", "mxf4", 16 * 64 * 4 // 1024, 128 * 8 * 4 // 1024, 0),
    (128, "e2m1", "mxf4nvf4", 4, 4, 0),
    (32, "s8", None, 16 * 16 * 8 // 1024, 32 * 8 * 8 // 1024, 1), (64, "u8", None, 4, 4, 0),
    (64, "s4", None, 16 * 32 * 4 // 1024, 64 * 8 * 4 // 1024, 1), (128, "u4", None, 4, 4, 0),
]


@pytest.mark.parametrize("k,atype,kind,a_regs,b_regs,max_f", MMA_SP_FACTS)
def test_mma_sp_shape_facts(k, atype, kind, a_regs, b_regs, max_f):
    from ptxsim.isa import mma_sp
    a, b, sel = mma_sp.shape_facts(k, atype, kind)
    assert (a, b, sel.start, sel.stop - 1) == (a_regs, b_regs, 0, max_f)


def test_mma_sp_validator_rows_are_the_isa_rows():
    from ptxsim.isa import mma_sp
    from ptxsim.ptx.legality import mma_sp as leg
    assert len(leg.ROWS) == sum(len(r.shapes) for r in mma_sp.LEGAL)
    assert leg.SCALE == {  # 9.7.14.3 Table 36, with the omitted .scale_vec_size as None
        ".kind::mxf4": {None: {".ue8m0"}, ".scale_vec::2X": {".ue8m0"}},
        ".kind::mxf4nvf4": {".scale_vec::2X": {".ue8m0"}, ".scale_vec::4X": {".ue8m0", ".ue4m3"}},
        ".kind::mxf8f6f4": {None: {".ue8m0"}, ".scale_vec::1X": {".ue8m0"}}}


@pytest.mark.parametrize("quals,ok_from", [
    # 9.7.14.6.3 PTX ISA notes: mma.sp 7.1; .e4m3/.e5m2 8.4; ::ordered_metadata 8.5;
    # .f16 accumulators with .e4m3/.e5m2 and the .kind forms 8.7
    ("mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", (7, 1)),
    ("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e5m2.f32", (8, 4)),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", (8, 5)),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f16.e4m3.e4m3.f16", (8, 7)),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e2m1.e3m2.f32",
     (8, 7)),
])
def test_mma_sp_ptx_isa_notes_in_the_isa_table(quals, ok_from):
    from types import SimpleNamespace
    from ptxsim.isa import mma_sp
    form = mma_sp.form_of(SimpleNamespace(opcode="mma",
                                          qualifiers=tuple("." + q for q in quals.split(".")[1:])))
    form.check_version(f"{ok_from[0]}.{ok_from[1]}")
    before = (ok_from[0], ok_from[1] - 1) if ok_from[1] else (ok_from[0] - 1, 9)
    with pytest.raises(PtxValidationError, match=f"PTX ISA {ok_from[0]}.{ok_from[1]}"):
        form.check_version(f"{before[0]}.{before[1]}")
