"""Production code that relies on hardware behaviour the PTX ISA text forbids runs as the
hardware runs it, with a SpecDeviationWarning naming the PTX line (DESIGN.md; issue #18):

- DeepGEMM's epilogue passes the Tensor Memory lane field 0 from every warp of the epilogue
  warpgroup ("the hardware ignores the warp index bits"); 9.7.16.8.1 allows warp w%4 only lanes
  32*(w%4)..+31. The warp reads its own quarter.
- ThunderKittens passes a generic address (`(uint64_t)&addr`) as the .shared::cta destination
  of tcgen05.alloc (9.7.16.7.1: an address in .shared::cta). The window offset is used.

Kernels accepted by ptxas 13.5 (the rules broken are about values, not syntax); results are
hand-derived."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ptxsim.errors import SpecDeviationWarning, TmemAccessError
from ptxsim.machine.executor import launch

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

EPILOGUE = """.version 8.6
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 lane_field)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r10, [lane_field];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 32;
    bar.sync 0;
    ld.shared.u32 %r3, [slot];
    shl.b32 %r4, %r2, 21;
    add.u32 %r5, %r3, %r4;
    add.u32 %r6, %r1, 1000;
    tcgen05.st.sync.aligned.32x32b.x1.b32 [%r5], {%r6};
    tcgen05.wait::st.sync.aligned;
    shl.b32 %r7, %r10, 16;
    add.u32 %r8, %r3, %r7;
    tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r9}, [%r8];
    tcgen05.wait::ld.sync.aligned;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    bar.sync 0;
    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
    ret;
}
"""
LD_LINE = EPILOGUE.splitlines().index(
    "    tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r9}, [%r8];") + 1


def test_deepgemm_lane_field_0_from_every_epilogue_warp():
    out = np.zeros(128, np.uint32)
    with pytest.warns(SpecDeviationWarning, match=f"line {LD_LINE}: .*taddr lane 0") as w:
        launch(EPILOGUE, "k", 1, 128, args=[out, 0])
    assert "DeepGEMM" in str(w[0].message)
    assert np.array_equal(out, 1000 + np.arange(128))     # every warp read its own lanes


def test_lane_field_of_the_own_quarter_does_not_warn():
    # warp w giving lane 32 * w is what the ISA allows: lane_field = 32 * (tid / 32) would be
    # per-warp; lane field 0 is legal for warp 0 only, so a 32-thread launch runs silently
    out = np.zeros(32, np.uint32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecDeviationWarning)
        launch(EPILOGUE, "k", 1, 32, args=[out, 0])
    assert np.array_equal(out, 1000 + np.arange(32))


def test_refusing_spec_deviations_is_one_filter():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecDeviationWarning)
        with pytest.raises(SpecDeviationWarning):
            launch(EPILOGUE, "k", 1, 128, args=[np.zeros(128, np.uint32), 0])


GENERIC_ALLOC = """.version 8.6
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [out];
    mov.u32 %r3, 57005;
    st.shared.u32 [slot], %r3;
    mov.u64 %rd2, slot;
    cvta.shared.u64 %rd2, %rd2;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%rd2], 64;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    ld.shared.u32 %r1, [slot];
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 st.global.u32 [%rd1], %r1;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 64;
    ret;
}
"""


def test_thunderkittens_generic_address_to_tcgen05_alloc():
    out = np.full(1, 0xFFFFFFFF, np.uint32)
    line = GENERIC_ALLOC.splitlines().index(
        "    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%rd2], 64;") + 1
    with pytest.warns(SpecDeviationWarning, match=f"line {line}: .*generic address") as w:
        launch(GENERIC_ALLOC, "k", 1, 32, args=[out])
    assert "ThunderKittens" in str(w[0].message)
    assert out[0] == 0                  # the allocated address (column 0) replaced 0xDEAD in slot


def test_a_shape_crossing_its_quarter_stays_an_error():
    ptx = EPILOGUE.replace("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r9}, [%r8];",
                           "tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r9}, [%r8];")
    with pytest.raises(TmemAccessError):
        launch(ptx, "k", 1, 32, args=[np.zeros(32, np.uint32), 24])


@pytest.mark.parametrize("ptx", [EPILOGUE, GENERIC_ALLOC], ids=["epilogue", "generic_alloc"])
def test_kernels_are_accepted_by_ptxas(ptx):
    ok, msg = ptxas135.verdict(ptx)
    assert ok, msg
