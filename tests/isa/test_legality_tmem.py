"""The Tensor Memory legality table at the isa level (isa/tmem.py, tmem_ldst.py, tmem_cp.py
FORMS): the isa checks and the functions' optional target / PTX version, against ptxas 13.0
verdicts recorded here (each ran as a one-instruction kernel, `ptxas -arch=<target>`), and the
spec's Target ISA notes (9.7.16.7.1 ... 9.7.16.12.1)."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.errors import PtxValidationError, TmemAllocError
from ptxsim.isa import tmem, tmem_cp, tmem_ldst
from ptxsim.isa.legality import Imm
from ptxsim.ptx import parse_instruction

# (target, PTX version, instruction, ptxas 13.0 verdict: None = assembles, else its message)
PTXAS = [
    ("sm_100a", "8.8", "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {%r1, %r2}, %r4, [%r3];",
     "Instruction 'tcgen05.ld.red' not supported on .target 'sm_100a'"),
    ("sm_103a", "8.8", "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {%r1, %r2}, %r4, [%r3];",
     None),
    ("sm_103a", "8.7", "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {%r1, %r2}, %r4, [%r3];",
     "Feature 'tcgen05.ld.red' requires PTX ISA .version 8.8 or later"),
    ("sm_100f", "8.8", "tcgen05.shift.cta_group::1.down [%r1];",
     "Instruction 'tcgen05.shift' not supported on .target 'sm_100f'"),
    ("sm_103a", "8.8", "tcgen05.shift.cta_group::1.down [%r1];", None),
    ("sm_90a", "8.6", "tcgen05.wait::ld.sync.aligned;",
     "Instruction 'tcgen05.wait' not supported on .target 'sm_90a'"),
    ("sm_100a", "8.6", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 48;",
     "Argument 1 of 'tcgen05.alloc' instruction: value must be power of 2"),
    ("sm_100a", "8.6", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster."
     "multicast::cluster.b64 [%rd1];", "Arguments mismatch for instruction 'tcgen05.commit'"),
    ("sm_100a", "8.6", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster."
     "multicast::cluster.b64 [%rd1], %rs1;", None),
    ("sm_100a", "8.6", "tcgen05.st.sync.aligned.16x32bx2.x2.b32 [%r3], {%r1, %r2};",
     "Unexpected number of arguments specified for tcgen05.st with shape '.16x32bx2'"),
    ("sm_100a", "8.6", "tcgen05.cp.cta_group::1.128x256b.b6x16_p32.b8x16 [%r1], %rd1;",
     "Illegal modifier '.b6x16_p32.b8x16' for instruction 'tcgen05.cp'"),
]

MODULE = {"tcgen05.ld": tmem_ldst, "tcgen05.st": tmem_ldst, "tcgen05.wait": tmem_ldst,
          "tcgen05.cp": tmem_cp, "tcgen05.shift": tmem_cp}


def _operand(op):
    if hasattr(op, "value") and not hasattr(op, "name"):
        return int(op.value)
    return getattr(op, "name", str(op))


@pytest.mark.parametrize("target,ptx,text,ptxas", PTXAS)
def test_isa_check_agrees_with_ptxas(target, ptx, text, ptxas):
    inst = parse_instruction(text)
    check = MODULE.get(inst.opcode, tmem).check
    args = (inst.opcode, inst.qualifiers, tuple(_operand(o) for o in inst.operands), target, ptx)
    if ptxas is None:
        check(*args)
    else:
        with pytest.raises(PtxValidationError):
            check(*args)


def test_functions_check_the_notes_when_given_a_target():
    # Known difference 1 of docs/legality.md, closed: the functions refuse what ptxas refuses.
    cells = np.zeros((tmem.N_LANES, tmem.N_COLUMNS), np.uint32)
    with pytest.raises(PtxValidationError, match="sm_100a"):      # ld.red: not on sm_100a
        tmem_ldst.tcgen05_ld_red(cells, "32x32b", 2, "min", "f32", 0, target="sm_100a")
    with pytest.raises(PtxValidationError, match="8.8"):          # ld.red: PTX ISA 8.8
        tmem_ldst.tcgen05_ld_red(cells, "32x32b", 2, "min", "f32", 0, target="sm_103a",
                                 ptx_version="8.7")
    regs, red = tmem_ldst.tcgen05_ld_red(cells, "32x32b", 2, "min", "f32", 0, target="sm_103a",
                                         ptx_version="8.8")
    assert regs.shape == (32, 2) and red.shape == (32,)
    with pytest.raises(PtxValidationError, match="sm_90a"):
        tmem_ldst.tcgen05_ld(cells, "32x32b", 1, 0, target="sm_90a")
    with pytest.raises(PtxValidationError, match="8.6"):
        tmem_ldst.tcgen05_st(cells, "32x32b", 1, 0, np.zeros((32, 1), np.uint32),
                             target="sm_100a", ptx_version="8.5")
    with pytest.raises(PtxValidationError):
        tmem_ldst.tcgen05_wait("ld", target="sm_120a")
    with pytest.raises(PtxValidationError, match="sm_100f"):      # shift: arch-specific only
        tmem_cp.tcgen05_shift_down(cells, 0, target="sm_100f")
    with pytest.raises(PtxValidationError):
        tmem_cp.tcgen05_cp(cells, "128x256b", 0, np.zeros((128, 32), np.uint8),
                           target="sm_90a")
    tm = tmem.TensorMemory()
    with pytest.raises(PtxValidationError, match="sm_90a"):
        tm.alloc(32, target="sm_90a")
    assert tm.allocations == {}                                  # refused before allocating
    assert tm.alloc(32, target="sm_100f", ptx_version="8.8") == 0
    with pytest.raises(PtxValidationError):                      # family: from PTX ISA 8.8
        tm.dealloc(0, 32, target="sm_100f", ptx_version="8.7")
    tm.dealloc(0, 32, target="sm_110f", ptx_version="9.0")
    with pytest.raises(PtxValidationError):
        tmem.CtaPair().relinquish_alloc_permit(target="sm_120f")
    # without a target nothing is checked, as before
    tmem_ldst.tcgen05_ld(cells, "32x32b", 1, 0)


def test_table47_in_the_one_table():
    # Table 47: .16x128b has 2 registers at .x1, .16x256b 4; .x128 of .16x128b is NA
    assert tmem_ldst.registers_of("16x128b", 64) == 128
    assert tmem_ldst.registers_of("16x128b", 128) is None
    assert tmem_ldst.registers_of("16x256b", 32) == 128
    assert tmem_ldst.registers_of("16x256b", 64) is None
    assert tmem_ldst.MAX_NUM == {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32,
                                 "16x32bx2": 128}
    with pytest.raises(PtxValidationError, match="128 registers"):
        tmem_ldst.check("tcgen05.ld", (".sync", ".aligned", ".16x256b", ".x64", ".b32"),
                        ("{%r1}", "[%r2]"))


def test_the_validator_reads_the_isa_rows():
    from ptxsim.ptx.legality import tcgen05 as leg
    assert leg.LD_RED_TARGETS is tmem_ldst.LD_RED_TARGETS
    assert leg.SHIFT_TARGETS is tmem_cp.SHIFT_TARGETS
    assert leg._FORMS["tcgen05.alloc"] is tmem.FORMS["tcgen05.alloc"]
    assert leg.SHAPES_LDST == {".32x32b": 1, ".16x64b": 1, ".16x128b": 2, ".16x256b": 4,
                               ".16x32bx2": 1}
    assert leg.CP_SHAPES.split() == [".128x256b", ".4x256b", ".128x128b", ".64x128b", ".32x128b"]


def test_ld_red_rules_and_split_operand():
    red = (".red", ".sync", ".aligned", ".32x32b", ".x2", ".min", ".abs", ".u32")
    with pytest.raises(PtxValidationError, match="only for"):     # .abs only with .f32
        tmem_ldst.check("tcgen05.ld", red, ("{%r1, %r2}", "%r3", "[%r4]"))
    one = (".red", ".sync", ".aligned", ".32x32b", ".x1", ".max", ".f32")
    with pytest.raises(PtxValidationError, match="at least"):
        tmem_ldst.check("tcgen05.ld", one, ("{%r1}", "%r3", "[%r4]"))
    split = (".sync", ".aligned", ".16x32bx2", ".x1", ".b32")
    assert tmem_ldst.check("tcgen05.ld", split, ("{%r1}", "[%r4]", 8)).name == "tcgen05.ld"
    with pytest.raises(PtxValidationError, match="takes 3"):
        tmem_ldst.check("tcgen05.ld", split, ("{%r1}", "[%r4]"))
    with pytest.raises(PtxValidationError, match="takes 2"):
        tmem_ldst.check("tcgen05.ld", (".sync", ".aligned", ".32x32b", ".x1", ".b32"),
                        ("{%r1}", "[%r4]", 8))


def test_check_form_knows_addresses_and_vectors():
    with pytest.raises(PtxValidationError, match="address"):
        tmem.check("tcgen05.alloc", (".cta_group::1", ".sync", ".aligned", ".b32"), ("%r1", 32))
    with pytest.raises(PtxValidationError, match="vector"):
        tmem_ldst.check("tcgen05.st", (".sync", ".aligned", ".32x32b", ".x1", ".b32"),
                        ("[%r1]", "%r2"))
    tmem_ldst.check("tcgen05.st", (".sync", ".aligned", ".32x32b", ".x2", ".b32"),
                    ("[%r1]", ("%r2", "%r3")))


def test_ncols_rule_wording():
    # 9.7.16.7.1: "within the range [32, 512] ... must be power of 2"
    assert Imm(32, 512, pow2=True).rule() == "a power of 2 in [32, 512]"
    for n, ok in ((16, False), (32, True), (48, False), (512, True), (1024, False)):
        assert tmem.NCOLS.ok(n) is ok
    with pytest.raises(TmemAllocError, match="power of two"):   # the allocator keeps its class
        tmem.TensorMemory().alloc(48)
