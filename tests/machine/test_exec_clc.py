"""clusterlaunchcontrol: a work-stealing persistent kernel (hand-written PTX, accepted by ptxas
13.0) cancels not-yet-started CTAs and processes their tiles itself."""
import numpy as np

from ptxsim.machine.executor import launch

PTX = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry clc(.param .u64 out, .param .u64 who)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .reg .b128 %h;
    .shared .align 16 .b8 resp[16];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [who];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r9, 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
$L_tile:
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    add.u32 %r4, %r2, 1000;
    @%p1 st.global.u32 [%rd4], %r4;
    @%p1 st.global.u32 [%rd5], %r3;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
    @%p1 clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [resp], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r9;
    @!%p2 bra $L_wait;
    xor.b32 %r9, %r9, 1;
    ld.shared.b128 %h, [resp];
    clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p3, %h;
    @!%p3 bra $L_done;
    clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %r2, %h;
    bar.sync 0;
    bra.uni $L_tile;
$L_done:
    ret;
}
"""


def test_try_cancel_steals_the_clusters_of_later_waves():
    n = 40
    out = np.zeros(n, np.uint32)
    who = np.full(n, 99, np.uint32)
    launch(PTX, "clc", n, 32, args=[out, who], max_resident_ctas=4)
    # every tile processed exactly once (each wrote 1000 + tile) ...
    assert np.array_equal(out, 1000 + np.arange(n))
    # ... the first wave (CTAs 0..3) canceled all 36 later CTAs and did their tiles
    assert set(who.tolist()) <= {0, 1, 2, 3}
    assert (who[:4] == np.arange(4)).all()


def test_try_cancel_fails_when_every_cluster_has_started():
    out = np.zeros(8, np.uint32)
    who = np.full(8, 99, np.uint32)
    launch(PTX, "clc", 8, 32, args=[out, who])       # one wave: nothing left to cancel
    assert np.array_equal(out, 1000 + np.arange(8)) and np.array_equal(who, np.arange(8))
