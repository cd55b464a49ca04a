"""The module's `.version` and the launch target reach the handlers' isa checks
(`Launch.ptx_version`, `Launch.target`): the stack instructions (isa/stack.py `check`, 9.7.17:
PTX ISA 7.3, sm_52) and mma.sp (`MmaSpForm.check_version`, 9.7.14.6.3). Each refusal is
ptxas 13.0's too (messages quoted below, run on the same text)."""
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import PtxValidationError

DATA = Path(__file__).parent / "data" / "exec"
HAND = (DATA / "stack_hand.ptx").read_text()
SP = (DATA / "mma_sp_ordered.ptx").read_text()


def test_launch_carries_the_module_version():
    run = ptxsim.launch(HAND, "loop", grid=1, block=32, args=[np.zeros(96, np.uint32)])
    assert run.ptx_version == "8.7" and run.target == "sm_100a"


def test_stack_before_ptx_7_3_is_refused_with_its_line():
    # ptxas: "line 17; error : Feature 'stacksave' requires PTX ISA .version 7.3 or later"
    old = HAND.replace(".version 8.7", ".version 7.2")
    # (refused when launched: `ptxsim.launch` runs `ptxsim check` first)
    with pytest.raises(PtxValidationError, match=r"PTX ISA (version )?7\.3") as e:
        ptxsim.launch(old, "loop", grid=1, block=32, args=[np.zeros(96, np.uint32)])
    assert e.value.line == 17                      # the first stacksave of `loop`


def test_stack_at_ptx_7_3_runs():
    # (.target sm_100a needs PTX ISA 8.6, so the module names sm_80: ptxas 13.5 takes it)
    ok = HAND.replace(".version 8.7", ".version 7.3").replace(".target sm_100a", ".target sm_80")
    out = np.zeros(96, np.uint32)
    ptxsim.launch(ok, "loop", grid=1, block=32, args=[out])
    assert out[64:].tolist() == [0xFFFD80] * 32    # as test_exec_gaps: (0xFFFDC0 - 64) & ~31


def test_stack_below_sm_52_is_refused():
    # 9.7.17 Target ISA notes: sm_52 or higher (ptxas -arch=sm_50: "not supported on .target")
    with pytest.raises(PtxValidationError, match="sm_52"):
        ptxsim.launch(HAND, "loop", grid=1, block=32, args=[np.zeros(96, np.uint32)],
                      target="sm_50")


def test_mma_sp_ordered_metadata_needs_ptx_8_5():
    # ptxas -arch=sm_90a at .version 8.4: "Feature '.sp::ordered_metadata' requires PTX ISA
    # .version 8.5 or later"
    old = SP.replace(".version 8.5", ".version 8.4")
    with pytest.raises(PtxValidationError, match=r"8\.5 or later, (not|module is) 8\.4"):
        ptxsim.launch(old, "k", grid=1, block=32, args=[np.zeros(32, np.float32)],
                      target="sm_90a")


def test_mma_sp_ordered_metadata_at_8_5_runs():
    """A all 1.0 (f16 0x3C00), B all 1.0, C 0, metadata 0x4444 (columns 0 and 1 of every group
    of four): each D element sums 8 kept products of 1 * 1 = 8.0."""
    out = np.zeros(32, np.float32)
    ptxsim.launch(SP, "k", grid=1, block=32, args=[out], target="sm_90a")
    assert out.tolist() == [8.0] * 32


# tcgen05 Tensor Memory handlers check their row's notes (isa/tmem*.py FORMS) against the launch
# target once per instruction. ptxas 13.0 on this text with -arch=sm_90a: "line 9; error :
# Instruction 'tcgen05.alloc' not supported on .target 'sm_90a'"; with -arch=sm_100a it assembles.
TMEM_ALLOC = """
.version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  .shared .align 16 .b32 slot;
  mov.u32 %r1, slot;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;
  ld.shared.b32 %r2, [%r1];
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
  ret;
}
"""


def test_tensor_memory_instruction_on_a_target_without_it_is_refused_with_its_line():
    with pytest.raises(PtxValidationError, match="sm_90a") as e:
        ptxsim.launch(TMEM_ALLOC, "k", 1, 32, args=[np.zeros(4, np.uint32)], target="sm_90a")
    assert e.value.line == 10                      # the tcgen05.alloc line of this text


def test_tensor_memory_instructions_run_on_sm_100a():
    run = ptxsim.launch(TMEM_ALLOC, "k", 1, 32, args=[np.zeros(4, np.uint32)], target="sm_100a")
    assert run.target == "sm_100a" and run.steps > 0
