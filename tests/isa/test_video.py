"""Video instructions: parsing/legality errors, hand-derived values from the spec pseudocode, and
the hardware deviations (each expected value below is a row of the H200 capture, written out by
hand with the derivation, so the test stands without the vector file)."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.errors import OperandError, PtxValidationError
from ptxsim.isa import video


def run(text, a, b, c=0, d=0):
    regs = {"%a": np.array([a], np.uint32), "%b": np.array([b], np.uint32),
            "%c": np.array([c], np.uint32), "%d": np.array([d], np.uint32)}
    return int(video.execute(text, regs)["%d"][0])


# ---------------------------------------------------------------- spec pseudocode, by hand
def test_vadd_signed_bytes_saturate():
    # a.b0 = 0x7f (127), b.b0 = 0x01 -> 128; .sat to s32 range keeps 128 = 0x80
    assert run("vadd.s32.s32.s32.sat %d, %a.b0, %b.b0;", 0x7F, 0x01) == 0x80
    # s32 word + s32 word overflow: 0x7fffffff + 1 clamps to S32_MAX
    assert run("vadd.s32.s32.s32.sat %d, %a, %b;", 0x7FFFFFFF, 1) == 0x7FFFFFFF
    assert run("vadd.s32.s32.s32 %d, %a, %b;", 0x7FFFFFFF, 1) == 0x80000000


def test_selectors_sign_extend_per_type():
    # a.h1 = 0x8000: as s32 -> -32768, as u32 -> 32768; minus b.b0 = 1
    assert run("vsub.s32.s32.u32 %d, %a.h1, %b.b0;", 0x80000000, 1) == (-32769) & 0xFFFFFFFF
    assert run("vsub.s32.u32.u32 %d, %a.h1, %b.b0;", 0x80000000, 1) == 32767


def test_vabsdiff_vmin_vmax():
    assert run("vabsdiff.u32.s32.s32 %d, %a.b1, %b.b2;", 0x0000_8000, 0x007F_0000) == 255  # |-128-127|
    assert run("vmin.s32.s32.s32 %d, %a, %b;", 0xFFFFFFFF, 1) == 0xFFFFFFFF
    assert run("vmax.u32.u32.u32 %d, %a, %b;", 0xFFFFFFFF, 1) == 0xFFFFFFFF


def test_merge_low_positions_follow_spec():
    # optMerge .b2: (tmp & 0xff) << 16 | c & 0xff00ffff ; tmp = 3 + 4
    assert run("vadd.u32.u32.u32 %d.b2, %a, %b, %c;", 3, 4, 0xAABBCCDD) == 0xAA07CCDD
    assert run("vadd.u32.u32.u32 %d.h0, %a, %b, %c;", 3, 4, 0xAABBCCDD) == 0xAABB0007


def test_secondary_add_and_vset():
    assert run("vset.u32.u32.lt %d, %a, %b;", 1, 2) == 1
    assert run("vset.s32.s32.lt %d, %a, %b;", 1, 0xFFFFFFFF) == 0          # 1 < -1 false
    assert run("vset.u32.u32.ge.add %d, %a, %b, %c;", 5, 5, 41) == 42
    assert run("vadd.u32.u32.u32.add %d, %a, %b, %c;", 1, 2, 0xFFFFFFFF) == 2   # wraps


def test_shifts_clamp_and_wrap():
    assert run("vshl.u32.u32.u32.clamp %d, %a, %b;", 1, 40) == 0           # 40 -> 32: 1<<32
    assert run("vshl.u32.u32.u32.wrap %d, %a, %b;", 1, 33) == 2            # 33 & 31 = 1
    assert run("vshr.s32.s32.u32.clamp %d, %a, %b;", 0x80000000, 255) == 0xFFFFFFFF
    assert run("vshr.u32.u32.u32.wrap %d, %a, %b;", 0x80000000, 63) == 1   # 63 & 31


def test_vmad_forms():
    assert run("vmad.u32.u32.u32 %d, %a.b0, %b.b0, %c;", 200, 100, 7) == 20007
    assert run("vmad.s32.s32.s32 %d, -%a, %b, %c;", 3, 4, 20) == 8
    assert run("vmad.s32.u32.u32.po %d, %a, %b, %c;", 3, 4, 5) == 18         # 12 + 5 + 1
    assert run("vmad.u32.u32.u32.shr7 %d, %a.h0, %b.h0, %c;", 1000, 1000, 0) == 1000000 >> 7


def test_simd_defaults_and_mask():
    # vadd2 defaults: a.h10, b.h32 (b's halves), mask h10
    assert run("vadd2.u32.u32.u32 %d, %a, %b, %c;", 0x0002_0001, 0x0020_0010) == 0x0022_0011
    # mask .h0: lane 1 comes from c
    assert run("vadd2.u32.u32.u32 %d.h0, %a, %b, %c;", 0x0002_0001, 0x0020_0010, 0xBEEF_0000) == 0xBEEF_0011
    # .add accumulates the selected lanes into c
    assert run("vadd4.u32.u32.u32.add %d, %a, %b, %c;", 0x01010101, 0x01010101, 100) == 108
    # vavrg rounds half up for non-negative sums: (1 + 2 + 1) >> 1 = 2
    assert run("vavrg4.u32.u32.u32 %d.b0, %a, %b, %c;", 1, 2, 0) == 2
    # .sat: signed byte lanes clamp to 127
    assert run("vadd4.s32.s32.s32.sat %d, %a, %b, %c;", 0x7F, 0x01, 0) == 0x7F


# ---------------------------------------------------------------- hardware deviations (docs/video.md)
def test_hw_merge_h1_keeps_high_half_in_place():
    # tmp = 0 + 0xff = 0xff; spec: d = 0x00ff << 16 | c.h0 = 0x00fffa00; H200: tmp & 0xffff0000
    assert run("vadd.u32.u32.u32 %d.h1, %a.b1, %b.b2, %c;", 0, 0xFFFFFFFF, 0x20E8FA00) == 0x0000FA00


def test_hw_subword_saturation_sends_negatives_to_max():
    # tmp = 0 + sext(0xff) = -1; spec clamps to -1 -> byte 0xff; H200 writes S8_MAX = 0x7f
    assert run("vadd.s32.s32.s32.sat %d.b0, %a, %b.b0, %c;", 0, 0xFFFFFFFF, 0x20E8FA00) == 0x20E8FA7F
    # unsigned: 0 - 0xff = -255; spec 0; H200 U8_MAX
    assert run("vsub.u32.u32.u32.sat %d.b1, %a, %b.b3, %c;", 0, 0xFFFFFFFF, 0x20E8FA00) == 0x20E8FF00


def test_hw_unsigned_word_saturation_has_no_upper_clamp():
    # |0xffffffff - (-1)| = 2^32: spec clamps to 0xffffffff, H200 wraps to 0
    assert run("vabsdiff.u32.u32.s32.sat %d, %a, %b.b0;", 0xFFFFFFFF, 0xFFFFFFFF) == 0


def test_hw_secondary_max_after_32_bit_truncation():
    # a.h1 + b = 0xffff + 0x80000000 = 0x8000ffff (sign bit set after truncation to 32 bits);
    # the H200 compares its sign-extension as unsigned 64-bit, so it beats c = 0xe56a20f3
    assert run("vadd.u32.u32.u32.sat.max %d, %a.h1, %b, %c;", 0xFFFFFFFF, 0x80000000, 0xE56A20F3) == 0x8000FFFF


def test_hw_vmad_unsigned_word_multiplies_signed():
    # a.h1 = 0xffff, b = 0xffffffff: the H200 multiplies b as -1, so a*b = -0xffff (spec:
    # 0xfffeffff0001). With b negated the product flips: t = 0xffff + sext(c), then >> 15
    # (arithmetic, the result is signed because of the negation).
    c = 0xBCFB0E51
    t = 0xFFFF + (c - (1 << 32))
    assert run("vmad.u32.u32.u32.shr15 %d, %a.h1, -%b, %c;", 0xFFFFFFFF, 0xFFFFFFFF, c) == (t >> 15) & 0xFFFFFFFF


def test_hw_vset_secondary_signedness_follows_atype():
    # vset.s32.u32: 0 > 0 is false -> tmp 0; .max against c = 0x8023ffc2 read as signed: 0 wins
    assert run("vset.s32.u32.gt.max %d, %a, %b, %c;", 0, 0, 0x8023FFC2) == 0


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("text", [
    "vadd.u32.u32 %d, %a, %b;",                          # missing btype
    "vadd.u32.u32.f32 %d, %a, %b;",                      # bad type
    "vshl.u32.u32.s32.clamp %d, %a, %b;",                # btype must be u32
    "vshl.u32.u32.u32 %d, %a, %b;",                      # mode required
    "vadd2.u32.u32.u32.sat.add %d, %a, %b, %c;",         # .sat with .add
    "vmad.s32.s32.s32 %d, -%a, %b, -%c;",                # (a xor b) and c negated
    "vmad.s32.s32.s32.po %d, -%a, %b, %c;",              # negation in .po mode
    "vadd.u32.u32.u32.add %d.b0, %a, %b, %c;",           # merge and secondary op
    "vadd.u32.u32.u32.add %d, %a, %b;",                  # secondary op without c
    "vadd.u32.u32.u32 %d, %a.b4, %b;",                   # scalar selector out of range
    "vadd4.u32.u32.u32 %d, %a.b8000, %b, %c;",           # SIMD selector digit 8
    "vadd2.u32.u32.u32 %d.b0, %a, %b, %c;",              # byte mask on a 2-way op
    "vavrg.u32.u32.u32 %d, %a, %b;",                     # no scalar vavrg
    "vset.u32.u32 %d, %a, %b;",                          # vset needs a comparison
    "vadd.u32.u32.u32 %d, -%a, %b;",                     # negation outside vmad
    "vadd4.u32.u32.u32 %d, %a.b1024, %b, %c;",           # ptxas 13.0 cannot lex .b1024
])
def test_illegal_forms_raise(text):
    with pytest.raises(PtxValidationError):
        video.parse(text)


def test_missing_register_and_shape_mismatch():
    with pytest.raises(OperandError):
        video.execute("vadd.u32.u32.u32.add %d, %a, %b, %c;", {"%a": np.zeros(2, np.uint32),
                                                               "%b": np.zeros(2, np.uint32)})
    ins = video.parse("vadd.u32.u32.u32 %d, %a, %b;")
    with pytest.raises(OperandError):
        video.evaluate(ins, np.zeros(2, np.uint32), np.zeros(3, np.uint32))


def test_vset2_merge_takes_unmasked_lanes_from_c():
    # lane 0: a.h0 = 1 vs b.h0 (default bsel .h32 -> lane 0 is b's low half) = 1 -> eq -> 1;
    # lane 1 not in mask .h0 -> c.h1 = 0xbeef (the text says "from b", pseudocode and HW: c)
    assert run("vset2.u32.u32.eq %d.h0, %a, %b, %c;", 0x00020001, 0x00050001, 0xBEEF0000) == 0xBEEF0001


def test_target_and_ptx_version_notes():
    regs = {"%a": np.zeros(32, np.uint32), "%b": np.zeros(32, np.uint32), "%c": np.zeros(32, np.uint32)}
    video.execute("vadd.u32.u32.u32 %d, %a, %b;", regs, target="sm_20", ptx_version=(2, 0), warps=1)
    with pytest.raises(PtxValidationError, match="sm_30"):
        video.execute("vadd2.u32.u32.u32 %d, %a, %b, %c;", regs, target="sm_21")
    with pytest.raises(PtxValidationError, match="PTX ISA 3.0"):
        video.execute("vset4.u32.u32.eq %d, %a, %b, %c;", regs, ptx_version=(2, 3))
    with pytest.raises(PtxValidationError, match="unknown target"):
        video.execute("vadd.u32.u32.u32 %d, %a, %b;", regs, target="hopper")
    with pytest.raises(OperandError, match="64"):
        video.execute("vadd.u32.u32.u32 %d, %a, %b;", regs, warps=2)
