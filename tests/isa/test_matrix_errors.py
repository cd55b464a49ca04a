"""The named errors docs/mma-sync.md promises for dense mma, wgmma and the matrix moves."""
import numpy as np
import pytest

from ptxsim.errors import OperandError, PtxValidationError, UndefinedBehavior, UnsupportedFeature
from ptxsim.isa import matrix as mx
from ptxsim.isa import mma_sync as ms
from ptxsim.machine.executor import launch
from ptxsim.ptx import parse_instruction


def test_kind_mxf8f6f4_without_block_scale_is_legal_but_not_executed():
    form = ms.form_of(parse_instruction(
        "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.f32.e4m3.e4m3.f32 {%r0, %r1, %r2, %r3}, "
        "{%r4, %r5, %r6, %r7}, {%r8, %r9}, {%r10, %r11, %r12, %r13};"))
    form.check_target("sm_100a")
    z = lambda n: np.zeros((n, 1, 32), np.uint32)
    with pytest.raises(UnsupportedFeature, match="block_scale"):
        ms.mma_sync(form, z(4), z(2), z(4), target="sm_120a")


def test_dense_mma_needs_its_operand_counts_and_qualifiers():
    with pytest.raises(PtxValidationError, match="no such form"):
        ms.form_of(parse_instruction("mma.sync.aligned.m16n8k16.row.row.f32.f16.f16.f32 "
                                     "{%r0}, {%r1}, {%r2}, {%r3};"))
    with pytest.raises(PtxValidationError, match=".sync"):
        ms.form_of(parse_instruction("mma.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                                     "{%r0}, {%r1}, {%r2}, {%r3};"))
    inst = parse_instruction("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0, %d1}, "
                             "{%a0, %a1, %a2, %a3}, {%b0, %b1}, {%c0, %c1, %c2, %c3};")
    regs = {n: np.zeros(32, np.uint32) for n in
            ["%d0", "%d1", "%a0", "%a1", "%a2", "%a3", "%b0", "%b1", "%c0", "%c1", "%c2", "%c3"]}
    from ptxsim.isa.regs import RegisterFile
    with pytest.raises(OperandError, match="needs 4 registers"):
        ms.execute_mma_sync(inst, RegisterFile(regs, 1, "t"), "sm_90a")


def test_an_older_target_refuses_the_form():
    form = ms.form_of(parse_instruction("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
                                        "{%r0}, {%r1}, {%r2}, {%r3};"))
    with pytest.raises(PtxValidationError, match="sm_90"):
        form.check_target("sm_89")
    with pytest.raises(PtxValidationError, match="7.8"):
        form.check_version("7.0")


def test_ldmatrix_rows_must_be_16_byte_aligned():
    form = mx.form_of(parse_instruction("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r0}, [%r1];"))
    addr = np.arange(32)[None] * 16
    addr[0, 3] += 8
    with pytest.raises(UndefinedBehavior, match="lane 3"):
        mx.ldmatrix(form, np.zeros(1024, np.uint8), addr)


def test_matrix_shapes_that_do_not_exist_are_named():
    for text, what in [("ldmatrix.sync.aligned.m16n16.x1.shared.b8 {%r0, %r1}, [%r2];", "requires"),
                       ("ldmatrix.sync.aligned.m8n16.x1.trans.b8x16.b4x16_p64 {%r0}, [%r2];",
                        "takes no"),
                       ("ldmatrix.sync.aligned.m16n16.x4.trans.b8 {%r0, %r1}, [%r2];", ".x4"),
                       ("ldmatrix.sync.aligned.m16n8.x1.trans.b8 {%r0}, [%r2];", "does not exist"),
                       ("stmatrix.sync.aligned.m16n8.x1.trans.b16 [%r2], {%r0};", "does not exist")]:
        with pytest.raises(PtxValidationError, match=what):
            mx.form_of(parse_instruction(text))


WG = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .reg .f32 %d<4>;
  .reg .b64 %da, %db;
  .reg .b32 %t;
  .reg .pred %p, %q;
  mov.u32 %t, %tid.x;
  mov.b64 %da, 0;
  mov.b64 %db, 0;
  {setup}
  setp.ne.u32 %q, 1, 0;
  wgmma.fence.sync.aligned;
  {guard}wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%d0, %d1, %d2, %d3}}, %da, %db, %q, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ret;
}}
"""


@pytest.mark.parametrize("setup,guard,why", [
    ("", "@%p ", "all 128 threads"),                        # half a warpgroup
    ("cvt.u64.u32 %db, %t;", "", "b-desc differs"),          # a per-thread descriptor
])
def test_wgmma_warpgroup_rules(setup, guard, why):
    pre = "setp.lt.u32 %p, %t, 64;" if guard else ""
    src = WG.format(setup=pre + setup, guard=guard)
    with pytest.raises(UndefinedBehavior, match=why):
        launch(src, "k", 1, 128, args=[np.zeros(4, np.uint32)], target="sm_90a",
               dynamic_shared=4096)


def test_wgmma_accumulator_read_before_its_wait_is_not_checked():
    """docs/STATUS.md 'Not checked at run time': wgmma.mma_async is performed at issue, so a
    program that reads D before wgmma.wait_group (a race on the GPU) runs without a report."""
    src = WG.format(setup="", guard="").replace(
        "  wgmma.commit_group.sync.aligned;",
        "  mov.f32 %d3, %d0;\n  wgmma.commit_group.sync.aligned;")
    launch(src, "k", 1, 128, args=[np.zeros(4, np.uint32)], target="sm_90a", dynamic_shared=4096)


def test_8_bit_shapes_need_ptx_8_6_and_an_sm_100a_class_target():
    """ptxas 13.5: "Modifier '.m16n16' requires PTX ISA .version 8.6 or later"; sm_90a refuses."""
    form = mx.form_of(parse_instruction("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 "
                                        "{%r0, %r1}, [%r2];"))
    mx.check(form, "sm_100a", "8.6")
    mx.check(form, "sm_120f", "9.0")
    with pytest.raises(PtxValidationError, match="8.6"):
        mx.check(form, "sm_100a", "8.5")
    with pytest.raises(PtxValidationError, match="sm_90a"):
        mx.check(form, "sm_90a", "8.7")
