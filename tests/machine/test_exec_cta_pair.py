"""CTA pairs as CUTLASS's 2-SM kernels use them (issue #18): tcgen05.alloc / dealloc
.cta_group::2 issued by one warp of each CTA of the pair at different times (a collective: the
first waits for its peer, 9.7.16.7.1), and a CTA's own shared address carrying its rank in bits
24+, so that clearing bit 24 (CUTLASS's Sm100MmaPeerBitMask, `and.b32 %r, %r, -16777217` in the
PTX of CUTLASS example 70) names the even CTA's mbarrier. Every kernel here is accepted by ptxas
13.5 for sm_100a (checked below when ptxas is on this machine).
"""
import shutil
import subprocess

import numpy as np
import pytest

from ptxsim.errors import DeadlockError, UndefinedBehavior
from ptxsim.machine.executor import launch

PAIR = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry pair(.param .u64 out, .param .u32 delay)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .reg .pred %p<4>;
    .shared .align 8 .b64 mbar;
    .shared .align 4 .b32 slot;
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r9, %tid.x;
    setp.eq.u32 %p0, %r1, 0;
    setp.eq.u32 %p2, %r9, 0;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r5, [delay];
    @%p0 mbarrier.init.shared::cta.b64 [mbar], 1;
    // the even CTA reaches its alloc later than the odd one (a loop of `delay` iterations)
    @!%p0 bra ALLOC;
    mov.u32 %r6, 0;
SPIN:
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p1, %r6, %r5;
    @%p1 bra SPIN;
ALLOC:
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r2], 64;
    tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    ld.shared.u32 %r3, [slot];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    @%p2 st.global.u32 [%rd3], %r3;
    @%p0 bra EVEN;
    // odd CTA: its own mbarrier's address with bit 24 cleared is the even CTA's mbarrier
    mov.u32 %r4, mbar;
    and.b32 %r4, %r4, -16777217;
    @%p2 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4];
    st.global.u32 [%rd1+12], %r4;
    tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r3, 64;
    bra DONE;
EVEN:
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [mbar], 0;
    @!%p3 bra WAIT;
    @%p2 st.global.u32 [%rd1+8], 1;
    mov.u32 %r4, mbar;
    st.global.u32 [%rd1+16], %r4;
    tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r3, 64;
DONE:
    ret;
}
"""


def _ptxas_accepts(ptx, tmp_path):
    ptxas = shutil.which("ptxas")
    for cand in ("/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas",):
        if ptxas is None and shutil.os.path.exists(cand):
            ptxas = cand
    if ptxas is None:
        pytest.skip("ptxas is not on this machine")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([ptxas, "-arch=sm_100a", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_pair_kernel_is_valid_ptx(tmp_path):
    _ptxas_accepts(PAIR, tmp_path)


@pytest.mark.parametrize("delay", [0, 200])
def test_pair_alloc_at_different_times_and_peer_mbarrier_by_bit_24(delay):
    out = np.zeros(5, np.uint32)
    launch(PAIR, "pair", (2, 1, 1), 32, cluster=(2, 1, 1), args=[out, delay])
    # one collective allocation: the same address (lane 0, column 0) stored in both CTAs
    assert out[0] == 0 and out[1] == 0
    # the odd CTA's arrive reached the even CTA's mbarrier (else the even CTA waits forever)
    assert out[2] == 1
    # the odd CTA's address with bit 24 cleared is the even CTA's own address of the variable
    assert out[3] == out[4] and out[4] >> 24 == 0


def test_alloc_pair_waits_for_its_peer_forever_without_it():
    # the odd CTA never issues the alloc: the even CTA's warp waits for it (a hang on a GPU)
    ptx = PAIR.replace("    @!%p0 bra ALLOC;", "    @!%p0 bra SKIP;").replace(
        "    barrier.cluster.arrive.release.aligned;",
        "SKIP:\n    barrier.cluster.arrive.release.aligned;")
    with pytest.raises(DeadlockError, match="peer CTA 1 to issue tcgen05.alloc.cta_group::2"):
        launch(ptx, "pair", (2, 1, 1), 32, cluster=(2, 1, 1),
               args=[np.zeros(5, np.uint32), 0])


def test_peer_exiting_while_its_pair_waits_is_undefined():
    # Table 46: the peer CTA of a .cta_group::2 instruction must be active
    ptx = PAIR.replace("    @!%p0 bra ALLOC;", "    @!%p0 bra SKIP;").replace(
        "    barrier.cluster.arrive.release.aligned;", "SKIP:\n    @!%p0 ret;\n"
        "    barrier.cluster.arrive.release.aligned;")
    with pytest.raises(UndefinedBehavior, match="CTA 1 exits while the warp of its peer CTA 0 "
                       "waits for it in tcgen05.alloc.cta_group::2"):
        launch(ptx, "pair", (2, 1, 1), 32, cluster=(2, 1, 1),
               args=[np.zeros(5, np.uint32), 0])
