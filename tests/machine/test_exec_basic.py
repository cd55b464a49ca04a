"""Executor milestone 1: nvcc-compiled kernels (tests/machine/data/exec/basic.cu, compiled with
`nvcc -arch=sm_100a -ptx`, CUDA 13.0) against numpy computing the same math."""
from pathlib import Path

import numpy as np
import pytest

from ptxsim.errors import DeadlockError, StepLimitExceeded
from ptxsim.machine.executor import launch

PTX = (Path(__file__).parent / "data" / "exec" / "basic.ptx").read_text()


def test_vector_add_with_tail_guard():
    rng = np.random.default_rng(1)
    n = 1000                                  # 4 x 256 threads, the last 24 fail `i < n`
    a, b = rng.random(n, np.float32), rng.random(n, np.float32)
    c = np.full(n + 8, -7, np.float32)        # elements past n must stay untouched
    launch(PTX, "vadd", 4, 256, args=[a, b, c, n])
    assert np.array_equal(c[:n], a + b)       # add.f32 (.rn) == numpy's float32 add
    assert (c[n:] == -7).all()


def test_block_sum_with_shfl_bar_sync_and_atomics():
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, 3000).astype(np.int32)
    out = np.zeros(1, np.int32)
    launch(PTX, "block_sum", 12, 256, args=[x, out, 3000])
    assert out[0] == x.sum()


def test_grid_stride_loop_fma_and_float_atomic():
    rng = np.random.default_rng(3)
    n = 1500
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    z, out = np.zeros(n, np.float32), np.zeros(1, np.float32)
    a = np.float32(2.5)
    launch(PTX, "saxpy_dot", 3, 128, args=[x, y, a, out, z, n])
    # fma.rn.f32 is one rounding of the exact a*x+y: float64 holds a*x+y exactly here
    # (24+24-bit product, then one add of a value within range), so one cast rounds it once.
    ref = (np.float64(a) * x.astype(np.float64) + y).astype(np.float32)
    assert np.array_equal(z, ref)
    assert out[0] == pytest.approx((ref.astype(np.float64) * x).sum(), rel=1e-5)


def test_waiting_forever_ends_with_the_deadlock_report():
    flag = np.zeros(64, np.int32)
    with pytest.raises(DeadlockError) as e:
        launch(PTX, "hang", 2, 64, args=[flag])
    msg = str(e.value)
    assert "mbarrier 0x0 of CTA 0" in msg and "1 of 2 arrivals" in msg
    assert "mbarrier.try_wait.parity" in msg and "line " in msg
    assert len(e.value.waits) == 4          # 2 CTAs x 2 warps, each with its line
    assert (flag == 0).all()


def test_step_guard_stops_a_runaway_loop():
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry spin()
{
    .reg .b32 %r<2>;
    mov.u32 %r1, 0;
$L_top:
    add.s32 %r1, %r1, 1;
    bra.uni $L_top;
}
"""
    with pytest.raises(StepLimitExceeded, match="line 10"):
        launch(ptx, "spin", 1, 32, step_limit=1000)


SPIN = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry spin_flag(.param .u64 flag, .param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra $L_consumer;
    // warp 1: produce after some work
    mov.u32 %r2, 0;
$L_work:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p2, %r2, 50;
    @%p2 bra $L_work;
    st.volatile.global.u32 [%rd1], %r2;
    ret;
$L_consumer:
    // warp 0: spin on the flag with plain loads (no mbarrier)
    ld.volatile.global.u32 %r3, [%rd1];
    setp.eq.u32 %p2, %r3, 0;
    @%p2 bra $L_consumer;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def test_spin_loop_on_memory_lets_the_producer_warp_run():
    # lowest-pc-first alone would keep warp 0 spinning at the lower pc forever; warps that take
    # a backward branch give the other warps a turn
    flag, out = np.zeros(1, np.uint32), np.zeros(32, np.uint32)
    launch(SPIN, "spin_flag", 1, 64, args=[flag, out], step_limit=100_000)
    assert flag[0] == 50 and (out == 50).all()


def test_call_of_a_noinline_device_function():
    # use_call: out[i] = scale_add(a[i], 1, i % 4) with r = 2r + 1 repeated (i % 4) times, each
    # step one fma.rn.f32 (2r + 1 is exact in float64, so one float32 rounding per step)
    a = np.random.default_rng(4).random(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    launch(PTX, "use_call", 1, 128, args=[a, out, 100])
    ref = a.copy()
    for i in range(100):
        for _ in range(i % 4):
            ref[i] = np.float32(np.float64(ref[i]) * 2 + 1)
    assert np.array_equal(out, ref)


def test_distributed_shared_memory_in_a_cluster():
    # cooperative_groups map_shared_rank (mapa) + st.shared::cluster + barrier.cluster: every CTA
    # reads what its peer (rank ^ 1) wrote: 1000 * peer_rank + tid
    out = np.zeros(4 * 64, np.int32)
    launch(PTX, "dsmem_swap", 4, 64, args=[out])         # __cluster_dims__(2,1,1) -> 2 clusters
    got = out.reshape(4, 64)
    t = np.arange(64)
    for cta in range(4):
        assert np.array_equal(got[cta], 1000 * ((cta % 2) ^ 1) + t)


def test_atomics_and_sign_extending_loads():
    counters = np.zeros(5, np.int32)
    b = np.arange(-64, 64, 2).astype(np.int8)
    w = np.zeros(64, np.int32)
    launch(PTX, "atomics", 1, 64, args=[counters, b, w])
    t = np.arange(64)
    assert counters[0] == 64
    assert counters[1] == (t * 7 - 100).max() and counters[2] == (50 - t).min()
    assert 1 <= counters[3] <= 64          # one CAS wins (which one: any order is allowed)
    assert 0 <= counters[4] <= 63          # the last exchange, some thread's t
    assert np.array_equal(w, b.astype(np.int32))


def test_named_barrier_deadlock_names_the_count():
    # bar.sync 1, 64 with only warp 0 arriving (warp 1 exits at once): 32 of 64 threads
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry half_barrier()
{
    .reg .b32 %r<2>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra $L_out;
    bar.sync 1, 64;
$L_out:
    ret;
}
"""
    with pytest.raises(DeadlockError) as e:
        launch(ptx, "half_barrier", 1, 64)
    msg = str(e.value)
    assert "barrier 1 of CTA 0: 32 of 64 threads arrived" in msg
    assert "line 11: bar.sync 1, 64;" in msg


ST_ASYNC = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry sta(.param .u64 out) .reqnctapercluster 2, 1, 1
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 16 .b32 box[32];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 128;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    xor.b32 %r3, %r2, 1;
    mov.u32 %r4, box;
    mul.lo.u32 %r5, %r1, 4;
    add.u32 %r4, %r4, %r5;
    mapa.shared::cluster.u32 %r6, %r4, %r3;
    mov.u32 %r7, bar;
    mapa.shared::cluster.u32 %r8, %r7, %r3;
    mad.lo.u32 %r9, %r2, 100, %r1;
    st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r6], %r9, [%r8];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    ld.shared.u32 %r10, [%r4];
    ld.param.u64 %rd1, [out];
    mov.u32 %r11, %ctaid.x;
    mad.lo.u32 %r11, %r11, 32, %r1;
    mul.wide.u32 %rd2, %r11, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_st_async_to_the_peer_cta_completes_its_mbarrier():
    # each CTA of a 2-CTA cluster st.async's 100 * rank + tid into the peer's shared memory
    # (mapa) with complete-tx on the peer's mbarrier (expect-tx 128 = 32 x 4 bytes); ptxas-accepted
    out = np.zeros(64, np.uint32)
    launch(ST_ASYNC, "sta", 2, 32, args=[out])
    got = out.reshape(2, 32)
    assert np.array_equal(got[0], 100 + np.arange(32)) and np.array_equal(got[1], np.arange(32))


CP_ASYNC = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry cpa(.param .u64 src, .param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 16 .b8 buf[512];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 32;
    bar.sync 0;
    ld.param.u64 %rd1, [src];
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 16, %r2;
    cp.async.cg.shared.global [%r3], [%rd3], 16;
    cp.async.mbarrier.arrive.noinc.shared::cta.b64 [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    xor.b32 %r4, %r1, 31;
    mad.lo.u32 %r5, %r4, 16, %r2;
    ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%r5];
    ld.param.u64 %rd4, [out];
    add.s64 %rd5, %rd4, %rd2;
    st.global.v4.u32 [%rd5], {%r6, %r7, %r8, %r9};
    ret;
}
"""


def test_cp_async_with_mbarrier_arrive_noinc():
    # 32 threads cp.async 16 bytes each into shared memory and arrive (noinc) on an mbarrier of
    # 32 arrivals; after the wait each thread reads the row of thread 31 - tid (ptxas-accepted)
    src = np.arange(128, dtype=np.uint32)
    out = np.zeros(128, np.uint32)
    launch(CP_ASYNC, "cpa", 1, 32, args=[src, out])
    assert np.array_equal(out.reshape(32, 4), src.reshape(32, 4)[::-1])


LD_RED = """.version 8.8
.target sm_103a
.address_size 64
.visible .entry ldred(.param .u64 out)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
    bar.sync 0;
    ld.shared.u32 %r3, [slot];
    mul.lo.u32 %r4, %r1, 3;
    add.u32 %r5, %r4, 7;
    xor.b32 %r6, %r1, 5;
    sub.u32 %r7, 100, %r1;
    tcgen05.st.sync.aligned.32x32b.x4.b32 [%r3], {%r4, %r5, %r6, %r7};
    tcgen05.wait::st.sync.aligned;
    tcgen05.ld.red.sync.aligned.32x32b.x4.max.u32 {%r8, %r9, %r10, %r11}, %r12, [%r3];
    tcgen05.wait::ld.sync.aligned;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r12;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
    ret;
}
"""


def test_tcgen05_ld_red_max_on_sm_103a():
    # each lane stores 3t, 3t + 7, t ^ 5, 100 - t into 4 columns (tcgen05.st .32x32b.x4) and
    # reads them back with tcgen05.ld.red .max.u32 (ptxas-accepted for sm_103a)
    out = np.zeros(32, np.uint32)
    launch(LD_RED, "ldred", 1, 32, args=[out], target="sm_103a")
    t = np.arange(32)
    assert np.array_equal(out, np.maximum.reduce([3 * t, 3 * t + 7, t ^ 5, 100 - t]))
