"""Video instructions through ptxsim.execute: same bits as the recorded H200 vectors' semantics,
guards per thread. Expected values are worked out by hand from 9.7.18 (and docs/video.md)."""
import numpy as np

import ptxsim


def _r(values):
    v = np.zeros(32, np.uint32)
    v[:len(values)] = values
    return v


def test_vadd4_sat_through_execute():
    # vadd4.u32.u32.u32.sat: byte-wise unsigned add, saturating at 0xff (9.7.18.2.3).
    a = _r([0x01FF7F80, 0x00000000])
    b = _r([0x01017F80, 0xFFFFFFFF])
    out = ptxsim.execute("vadd4.u32.u32.u32.sat %r1, %r2, %r3, %r4;",
                         {"%r2": a, "%r3": b, "%r4": np.zeros(32, np.uint32)})
    assert out["%r1"][0] == 0x02FFFEFF and out["%r1"][1] == 0xFFFFFFFF


def test_scalar_vmax_with_selectors_and_thread_guard():
    # vmax.s32.s32.s32 with .b0 selectors: sign-extended bytes; guard-false threads keep d.
    a = _r([0x000000FE, 0x00000005])          # b0 = -2, 5
    b = _r([0x00000003, 0x000000F0])          # b0 = 3, -16
    p = _r([1, 0])
    old = _r([0xDEAD, 0xBEEF])
    out = ptxsim.execute("@%p1 vmax.s32.s32.s32 %r1, %r2.b0, %r3.b0;",
                         {"%r1": old, "%r2": a, "%r3": b, "%p1": p})
    assert out["%r1"][0] == 3 and out["%r1"][1] == 0xBEEF
