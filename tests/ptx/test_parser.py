"""Parser: objects, operands, immediates, scopes, errors. Expected values are hand-derived from
the PTX ISA text (instruction examples of 9.7.16-9.7.19) and IEEE-754 bit patterns."""
import struct

import pytest

from ptxsim.errors import PtxSyntaxError
from ptxsim.ptx import (Address, Block, Group, Immediate, Label, LabelDef, Register, RegisterPair,
                        SpecialRegister, Vector, parse_instruction, parse_module)


def test_tcgen05_mma_fields():
    i = parse_instruction("@!p tcgen05.mma.cta_group::1.kind::tf32 [taddr0], adesc, bdesc, idesc, "
                          "{m0, m1, m2, m3}, p")
    assert i.opcode == "tcgen05.mma"
    assert i.qualifiers == (".cta_group::1", ".kind::tf32")
    assert i.predicate.name == "p" and i.predicate.negated
    assert [o.kind for o in i.operands] == ["addr", "reg", "reg", "reg", "vec", "reg"]
    assert i.operands[0] == Address("taddr0", 0)
    assert i.operands[4] == Vector(tuple(Register(f"m{k}") for k in range(4)))
    assert i.value(".kind") == "tf32" and i.get(".cta_group") == ".cta_group::1"
    assert i.loc.line == 1 and i.loc.col == 5


def test_qualifier_order_tolerance():
    a = parse_instruction("tcgen05.cp.cta_group::1.warpx4.32x128b [t], d")
    b = parse_instruction("tcgen05.cp.cta_group::1.32x128b.warpx4 [t], d;")
    assert a.qualifiers != b.qualifiers                 # source order is kept ...
    assert a.has(".32x128b", ".warpx4") and b.has(".warpx4", ".32x128b")   # ... queries ignore it
    assert set(a.qualifiers) == set(b.qualifiers)


@pytest.mark.parametrize("text, opcode, quals", [
    ("tcgen05.fence::before_thread_sync", "tcgen05.fence", ("::before_thread_sync",)),
    ("tcgen05.wait::ld.sync.aligned", "tcgen05.wait", ("::ld", ".sync", ".aligned")),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, b, c, e, 1",
     "mma", (".sp::ordered_metadata", ".sync", ".aligned", ".m16n8k16", ".row", ".col", ".f32",
             ".bf16", ".bf16", ".f32")),
    ("tcgen05.mma.ws.sp.cta_group::1.kind::i8 [d], a, b, [m], i, p", "tcgen05.mma",
     (".ws", ".sp", ".cta_group::1", ".kind::i8")),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [a], [b, {c, d}], [e]",
     "cp.async.bulk.tensor", (".2d", ".shared::cluster", ".global", ".mbarrier::complete_tx::bytes")),
    ("vadd4.u32.u32.u32.sat %r1, %r2, %r3, %r4", "vadd4", (".u32", ".u32", ".u32", ".sat")),
    ("trap", "trap", ()),
    ("ld.param.u64 %rd1, [p+8]", "ld", (".param", ".u64")),
])
def test_opcode_split(text, opcode, quals):
    i = parse_instruction(text)
    assert (i.opcode, i.qualifiers) == (opcode, quals)


def test_immediates_raw_bits():
    i = parse_instruction("mov.b32 %f1, 0f3F800000")
    imm = i.operands[1]
    assert imm.is_float and imm.value == 1.0 and imm.raw == 0x3F800000 and imm.width == 32
    d = parse_instruction("mov.b64 %fd1, 0dC000000000000000").operands[1]
    assert d.value == -2.0 and d.raw == 0xC000000000000000 and d.width == 64
    nan = parse_instruction("mov.b32 %f1, 0f7FC00001").operands[1]
    assert nan.raw == 0x7FC00001                        # NaN payload kept exactly
    assert struct.pack("<I", nan.raw) == struct.pack("<f", nan.value)
    ints = parse_instruction("add.s32 %r1, 0x10, -16").operands
    assert ints[1].value == 16 and ints[2].value == -16 and ints[2].raw == 2**64 - 16
    assert parse_instruction("add.s32 %r1, 017, 0b101").operands[1:] == (
        Immediate(15, "017", False, 15), Immediate(5, "0b101", False, 5))   # octal, binary


def test_operand_kinds():
    i = parse_instruction("setp.lt.s32 %p1|%p2, %tid.x, 5")
    assert i.operands[0] == RegisterPair(Register("%p1"), Register("%p2"))
    assert isinstance(i.operands[1], SpecialRegister) and str(i.operands[1]) == "%tid.x"
    v = parse_instruction("vadd.s32.u32.s32.sat %r1.h1, %r2.b0, -%r3, %r4")
    assert v.operands[0].selector == ".h1" and v.operands[1].selector == ".b0"
    assert v.operands[2].minus
    a = parse_instruction("st.global.b32 [%rd1+-16], %r1").operands[0]
    assert a == Address("%rd1", -16)
    b = parse_instruction("bra $L__BB0_2").operands[0]
    assert b == Label("$L__BB0_2")
    c = parse_instruction("call.uni (retval0), vprintf, (param0, param1)")
    assert isinstance(c.operands[0], Group) and c.operands[1] == Label("vprintf")
    t = parse_instruction("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r2, %r3}], [%r1]")
    assert t.operands[0].vector == Vector((Register("%r2"), Register("%r3")))


MODULE = r"""
//
// header comment
//
.version 8.7
.target sm_100a
.address_size 64

.extern .shared .align 16 .b8 global_smem[];
.global .align 1 .b8 msg[3] = {72, 105, 0};

.visible .entry kern(
	.param .u64 .ptr .global .align 1 kern_param_0,
	.param .align 64 .b8 kern_param_1[128]
)
.reqntid 128, 1, 1
.maxnreg 168
.reqnctapercluster 2, 1, 1
.explicitcluster
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<4>;
	.loc	1 23 0
	ld.param.u64 	%rd1, [kern_param_0];
	/* block
	   comment */
	{
	.reg .pred waitComplete;
	waitLoop:
	mbarrier.try_wait.parity.shared::cta.b64 waitComplete, [%r1], %r2;
	@!waitComplete bra waitLoop;
	}
	{
	.reg .pred waitComplete;
	waitLoop:
	@!waitComplete bra waitLoop;
	}
$L__BB0_2:
	ret;
}
.func (.param .b32 func_retval0) helper(.param .b64 helper_param_0) .noreturn;
	.file	1 "/tmp/a.py"
	.section	.debug_abbrev
	{
.b8 1
.b8 17
	}
"""


def test_module_structure():
    m = parse_module(MODULE, "k.ptx")
    assert (m.version, m.target, m.address_size) == ("8.7", "sm_100a", 64)
    assert m.files == {1: "/tmp/a.py"} and m.sections[0][0] == ".debug_abbrev"
    smem, msg = m.variables
    assert (smem.space, smem.type, smem.align, smem.dims, smem.linkage) == (".shared", ".b8", 16, (None,), (".extern",))
    assert msg.init == [72, 105, 0] and msg.dims == (3,)
    k, helper = m.functions
    assert k.is_entry and k.name == "kern" and k.linkage == (".visible",)
    assert k.directives == {".reqntid": (128, 1, 1), ".maxnreg": (168,),
                            ".reqnctapercluster": (2, 1, 1), ".explicitcluster": ()}
    p0, p1 = k.params
    assert (p0.name, p0.type, p0.align, p0.attrs) == ("kern_param_0", ".u64", 1, (".u64", ".ptr", ".global"))
    assert (p1.type, p1.align, p1.dims) == (".b8", 64, (128,))
    regs = {d.type: d.names for d in k.registers if d.names[0].startswith("%")}
    assert regs[".b32"] == tuple(f"%r{i}" for i in range(10))          # %r<10> -> %r0..%r9
    assert helper.body is None and helper.return_params[0].name == "func_retval0"
    assert ".noreturn" in helper.directives


def test_labels_are_scoped():
    k = parse_module(MODULE).functions[0]
    blocks = [s for s in k.body.statements if isinstance(s, Block)]
    assert len(blocks) == 2
    assert all(set(b.labels) == {"waitLoop"} for b in blocks)           # same name, two scopes
    assert set(k.body.labels) == {"$L__BB0_2"}
    # bare `waitComplete` is declared with .reg in its scope -> a Register, not a Label
    wait = [i for i in k.instructions if i.opcode == "mbarrier.try_wait"][0]
    assert wait.operands[0] == Register("waitComplete")


@pytest.mark.parametrize("text, line, col", [
    (".version 8.7\n.target sm_100a\n.entry k() {\n  add.s32 %r1, ;\n}\n", 4, 16),
    (".version 8.7\n.target sm_100a\n.entry k() {\n  add.s32 %r1, %r2, %r3\n}\n", 5, 1),
    (".version 8.7\n.target sm_100a\n.entry k() {\n  ret;\n", 4, 6),      # unclosed { at EOF
    (".version 8.7\n.target sm_100a\n.entry k() {\n  mov.b32 %r1, #3;\n}\n", 4, 16),
])
def test_syntax_errors_have_positions(text, line, col):
    with pytest.raises(PtxSyntaxError) as e:
        parse_module(text, "x.ptx")
    assert (e.value.line, e.value.col) == (line, col)
    assert str(e.value).startswith("x.ptx:") and "error:" in str(e.value)


def test_parse_instruction_errors():
    with pytest.raises(PtxSyntaxError):
        parse_instruction("tcgen05.mma [a], ")
    with pytest.raises(PtxSyntaxError):
        parse_instruction("")


def test_label_definitions_in_module():
    k = parse_module(MODULE).functions[0]
    labels = [s.name for s in k.body.walk() if isinstance(s, LabelDef)]
    assert labels == ["waitLoop", "waitLoop", "$L__BB0_2"]


def test_register_ranges_are_not_expanded():
    from ptxsim.ptx import RegDecl
    from ptxsim.ptx.module import RegisterTable
    k = parse_module(".version 9.0\n.target sm_100a\n.entry k() {\n.reg .b32 %r<100000000>, %x;\n"
                     ".reg .pred %p<2>;\nret;\n}\n").functions[0]
    d = k.registers[0]
    assert isinstance(d, RegDecl) and d.items == (("%r", 100000000), ("%x", None))
    table = RegisterTable(k.registers)
    # %r<N> declares %r0 .. %r(N-1) (PTX ISA 5.4.1 "parameterized variable names")
    assert table.get("%r99999999") == ".b32" and table.get("%x") == ".b32"
    assert "%r100000000" not in table and "%r01" not in table and "%p2" not in table
    assert table.get("%p1") == ".pred"


def test_nvcc_style_module():
    """A hand-written module in nvcc's style (ptxas 13.0 -arch=sm_90a accepts it)."""
    from pathlib import Path
    from ptxsim.ptx import errors_of, validate
    path = Path(__file__).parents[1] / "data/ptx/handwritten/nvcc_style.ptx"
    m = parse_module(path.read_text(), str(path))
    assert errors_of(validate(m)) == []
    byname = {v.name: v for v in m.variables}
    assert byname["cscale"].init == 1.0 and byname["cscale"].space == ".const"     # 0f3F800000
    assert byname["neg"].init == [-5, 7]
    assert [f.name for f in m.functions] == ["vprintf", "_Z6kernelPfi"]
    k = m.function("_Z6kernelPfi")
    assert k.directives == {".maxntid": (256, 1, 1), ".minnctapersm": (2,)}
    call = next(i for i in k.instructions if i.opcode == "call")
    assert str(call) == "call.uni (retval0), vprintf, (param0, param1);"
    mov = next(i for i in k.instructions if i.opcode == "mov" and i.operands[0].name == "%r5")
    assert mov.operands[1] == Register("%v", ".y")
    fma = next(i for i in k.instructions if i.opcode == "fma")
    assert [o.raw for o in fma.operands[2:]] == [0x3F000000, 0xBF800000]


def test_a_managed_variable_declaration():
    # nvcc 13.0 writes `__managed__ int x;` as `.global .attribute(.managed) .align 4 .u32 x;`
    from ptxsim.ptx import parse_module
    m = parse_module(".version 9.0\n.target sm_100a\n.address_size 64\n"
                     ".global .attribute(.managed) .align 4 .u32 managed_total;\n")
    (v,) = m.variables
    assert (v.name, v.type, v.align) == ("managed_total", ".u32", 4)
    assert ".attribute(.managed)" in v.attrs
