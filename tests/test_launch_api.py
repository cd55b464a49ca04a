"""ptxsim.launch / ptxsim.execute through the executor's dispatch (hand-derived values)."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import PtxValidationError, BreakpointTrap, ExecutionError, OperandError


def test_execute_base_instruction_over_two_warps():
    r = ptxsim.execute("add.s32 %r1, %r2, -5;", {"%r2": np.arange(64, dtype=np.uint32)})
    assert r["%r1"].dtype == np.uint32
    assert np.array_equal(r["%r1"].view(np.int32), np.arange(64) - 5)


def test_execute_64_bit_registers_are_uint64():
    # mad.wide.u32: 0xFFFFFFFF * 2 + 1 = 0x1_FFFF_FFFF (needs all 64 bits)
    r = ptxsim.execute("mad.wide.u32 %rd1, %r2, %r3, %rd4;",
                       {"%r2": np.full(32, 0xFFFFFFFF, np.uint32),
                        "%r3": np.full(32, 2, np.uint32), "%rd4": np.ones(32, np.uint64)})
    assert r["%rd1"].dtype == np.uint64 and (r["%rd1"] == 0x1FFFFFFFF).all()


def test_execute_predicate_destination_and_guard():
    r = ptxsim.execute("setp.lt.f32 %p1, %f1, %f2;",
                       {"%f1": np.arange(32, dtype=np.float32), "%f2": np.full(32, 3, np.float32)})
    assert np.array_equal(r["%p1"], np.arange(32) < 3)
    # cvt.rn.bf16x2.f32 d, a, b: a in the upper half (1.5 -> 0x3FC0), b in the lower (-2 ->
    # 0xC000); guard-false lanes keep their old value 7
    r = ptxsim.execute("@%p2 cvt.rn.bf16x2.f32 %r1, %f1, %f2;",
                       {"%f1": np.full(32, 1.5, np.float32), "%f2": np.full(32, -2, np.float32),
                        "%p2": np.arange(32) % 2 == 0, "%r1": np.full(32, 7, np.uint32)})
    assert np.array_equal(r["%r1"], np.where(np.arange(32) % 2 == 0, 0x3FC0C000, 7))


def test_execute_warp_collective():
    # shfl.sync.down by 1 with c = 31: lane i reads lane i+1; lane 31 keeps its own, p false
    r = ptxsim.execute("shfl.sync.down.b32 %r1|%p1, %r2, 1, 31, -1;",
                       {"%r2": np.arange(32, dtype=np.uint32) * 10})
    assert np.array_equal(r["%r1"], np.r_[np.arange(1, 32), 31] * 10)
    assert np.array_equal(r["%p1"], np.arange(32) < 31)


def test_execute_missing_register_is_named():
    with pytest.raises(OperandError, match="%r3"):
        ptxsim.execute("add.s32 %r1, %r2, %r3;", {"%r2": np.zeros(32, np.uint32)})


def test_unknown_instruction_in_a_kernel_is_named():
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k()
{
    .reg .b32 %r<2>;
    frobnicate.b32 %r1, %r1;
    ret;
}
"""
    # refused before it runs: launch checks the module as `ptxsim check` does
    with pytest.raises(PtxValidationError, match=":7:5: .*frobnicate") as e:
        ptxsim.launch(ptx, "k", 1, 32)
    assert e.value.line == 7


def test_brkpt_in_a_kernel_goes_through_the_misc_family():
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 33;
    @%p1 brkpt;
    ret;
}
"""
    with pytest.raises(BreakpointTrap):
        ptxsim.launch(ptx, "k", 1, 64, args=[np.zeros(1, np.uint32)])
    ptxsim.launch(ptx, "k", 1, 32, args=[np.zeros(1, np.uint32)])   # thread 33 absent: no trap


def test_launch_writes_into_torch_tensors():
    torch = pytest.importorskip("torch")
    from pathlib import Path
    ptx = (Path(__file__).parent / "machine" / "data" / "exec" / "basic.ptx").read_text()
    a = torch.arange(100, dtype=torch.float32)
    b = torch.full((100,), 0.5)
    c = torch.zeros(100)
    ptxsim.launch(ptx, "vadd", 1, 128, args=[a, b, c, 100])
    assert torch.equal(c, a + 0.5)


def test_progress_bar_does_not_change_results(capsys):
    from pathlib import Path
    ptx = (Path(__file__).parent / "machine" / "data" / "exec" / "basic.ptx").read_text()
    x = np.arange(1000, dtype=np.int32)
    out = np.zeros(1, np.int32)
    ptxsim.launch(ptx, "block_sum", 4, 256, args=[x, out, 1000], progress=True,
                  max_resident_ctas=2)                  # two waves of two CTAs
    assert out[0] == x.sum()


def test_video_instruction_in_execute_and_in_a_kernel():
    # vadd4.u32.u32.u32.sat: per-byte unsigned saturating add (9.7.18.2.3), hand-derived:
    # 0x01FF7F10 + 0x01010101 -> bytes 02, FF (saturated), 80, 11
    a = np.full(32, 0x01FF7F10, np.uint32)
    b = np.full(32, 0x01010101, np.uint32)
    c = np.zeros(32, np.uint32)
    r = ptxsim.execute("vadd4.u32.u32.u32.sat %r1, %r2, %r3, %r4;",
                       {"%r2": a, "%r3": b, "%r4": c})
    assert (r["%r1"] == 0x02FF8011).all()
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    mov.u32 %r2, 0x01FF7F10;
    mov.u32 %r3, 0x01010101;
    mov.u32 %r4, 0;
    vadd4.u32.u32.u32.sat %r1, %r2, %r3, %r4;
    ld.param.u64 %rd1, [out];
    mov.u32 %r5, %tid.x;
    mul.wide.u32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
    out = np.zeros(32, np.uint32)
    ptxsim.launch(ptx, "k", 1, 32, args=[out])
    assert (out == 0x02FF8011).all()


def test_execute_tcgen05_ld_and_st_on_a_given_cta_state():
    # tcgen05.st then tcgen05.ld (.32x32b.x2) through ptxsim.execute on the caller's CtaState:
    # warp 0 owns lanes 0..31; lane t, columns c0 and c0 + 1 receive 10 t and 10 t + 1
    from ptxsim.isa.cta import CtaState
    cta = CtaState.new(smem_bytes=1024)
    taddr = cta.tmem.alloc(32)
    t = np.arange(32, dtype=np.uint32)
    ptxsim.execute("tcgen05.st.sync.aligned.32x32b.x2.b32 [%r3], {%r1, %r2};",
                   {"%r1": 10 * t, "%r2": 10 * t + 1, "%r3": np.full(32, taddr, np.uint32)},
                   state=cta)
    assert np.array_equal(cta.tmem.cells[:32, taddr & 0xFFFF], 10 * t)
    r = ptxsim.execute("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r4, %r5}, [%r3];",
                       {"%r3": np.full(32, taddr, np.uint32)}, state=cta)
    assert np.array_equal(r["%r4"], 10 * t) and np.array_equal(r["%r5"], 10 * t + 1)
