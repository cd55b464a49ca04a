"""Every thread of a CTA issuing one of the asynchronous / bookkeeping instructions at once:
the results are those the instruction's definition gives (each thread's copy, its own group,
its own request), and the Python work of the handler does not grow with the number of issuing
threads (issue #21: no handler iterates over threads in Python). The cost is bounded by counting
Python function calls of the whole launch for 32 and for 1,024 issuing threads: the scheduler
runs the same steps, so the counts may differ only by a small constant.

The kernels are hand-written PTX accepted by ptxas 13.5 (-arch=sm_100a);
`test_kernels_accepted_by_ptxas` checks that where ptxas is installed.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ptxsim.isa.descriptors import SmemDescriptor
from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap

HEAD = """.version 8.8
.target sm_100a
.address_size 64
"""

# each thread copies its 16 bytes with cp.async (full) and again with src-size = tid % 16
# (the bytes beyond src-size are zero-filled, 9.7.9.23), commit_group, wait_group 0
CP_ASYNC = HEAD + """.visible .entry cp_async_all(.param .u64 pin, .param .u64 pout)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[16384];
    .shared .align 16 .b8 part[16384];
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    mul.wide.u32 %rd5, %r1, 32;
    add.s64 %rd6, %rd2, %rd5;
    shl.b32 %r3, %r1, 4;
    mov.u32 %r2, buf;
    add.u32 %r4, %r2, %r3;
    mov.u32 %r5, part;
    add.u32 %r6, %r5, %r3;
    and.b32 %r7, %r1, 15;
    cp.async.cg.shared.global [%r4], [%rd4], 16;
    cp.async.ca.shared.global [%r6], [%rd4], 16, %r7;
    cp.async.commit_group;
    cp.async.wait_group 0;
    ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r4];
    st.global.v4.u32 [%rd6], {%r8, %r9, %r10, %r11};
    ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [%r6];
    st.global.v4.u32 [%rd6+16], {%r8, %r9, %r10, %r11};
    ret;
}
"""

# each thread: expect-tx 16 bytes on one mbarrier (count = threads), a bulk copy global ->
# shared with complete-tx, the wait, then a bulk copy shared -> global in its own bulk group
BULK = HEAD + """.visible .entry bulk_all(.param .u64 pin, .param .u64 pout)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 16 .b8 buf[16384];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ntid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], %r10;
    bar.sync 0;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.u32 %r4, %r2, %r3;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd4], 16, [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    cp.async.bulk.global.shared::cta.bulk_group [%rd5], [%r4], 16;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;
}
"""

# each thread: a TMA tile load of its own 8-row box (16 bytes x 8 rows of a uint8 map) into
# its own 128 bytes of shared memory, the wait, then a TMA store of that box to the second map
TMA = HEAD + """.extern .shared .align 128 .b8 buf[];
.visible .entry tma_all(.param .align 64 .b8 tx[128], .param .align 64 .b8 ty[128])
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ntid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], %r10;
    bar.sync 0;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 7;
    add.u32 %r4, %r2, %r3;
    shl.b32 %r5, %r1, 3;
    mov.u32 %r6, 0;
    mov.u64 %rd1, tx;
    cvta.param.u64 %rd2, %rd1;
    mov.u64 %rd3, ty;
    cvta.param.u64 %rd4, %rd3;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 128;
    cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd2, {%r6, %r5}], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd4, {%r6, %r5}], [%r4];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;
}
"""

# every thread replaces dimension 1 of one tensor map in global memory with 8 + tid
REPLACE = HEAD + """.visible .entry replace_all(.param .u64 pmap)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [pmap];
    mov.u32 %r1, %tid.x;
    add.u32 %r2, %r1, 8;
    tensormap.replace.tile.global_dim.global.b1024.b32 [%rd1], 1, %r2;
    ret;
}
"""

# every thread of the first CTA asks to cancel a cluster (its own 16-byte response, one
# mbarrier expecting 16 bytes per thread) and records whether its request canceled one
CLC = HEAD + """.visible .entry clc_all(.param .u64 out)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .reg .b128 %h;
    .shared .align 16 .b8 resp[16384];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ntid.x;
    mov.u32 %r2, %ctaid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], %r10;
    bar.sync 0;
    mov.u32 %r3, resp;
    shl.b32 %r4, %r1, 4;
    add.u32 %r5, %r3, %r4;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
    clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r5], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    ld.shared.b128 %h, [%r5];
    clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p3, %h;
    selp.u32 %r6, 1, 2, %p3;
    mad.lo.u32 %r7, %r2, %r10, %r1;
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
    ret;
}
"""

# warp 0 allocates 32 Tensor Memory columns; every thread then issues tcgen05.cp of the same
# 128 x 256b source, tcgen05.shift of the first 32 lanes and tcgen05.commit (one arrive each on
# an mbarrier expecting every thread); after the wait warp 0 reads lanes 0-31 back
TCGEN05 = HEAD + """.visible .entry tc_all(.param .u64 pdesc, .param .u64 pshift, .param .u64 out)
{
    .reg .b32 %r<48>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 128 .b8 src[4096];
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 taddr;
    ld.param.u64 %rd1, [pdesc];
    ld.param.u64 %rd5, [pshift];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ntid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [taddr], 32;
    setp.eq.u32 %p3, %r1, 0;
    @%p3 mbarrier.init.shared::cta.b64 [bar], %r10;
    and.b32 %r2, %r1, 1023;
    shl.b32 %r3, %r2, 2;
    mov.u32 %r4, src;
    add.u32 %r5, %r4, %r3;
    st.shared.u32 [%r5], %r2;
    fence.proxy.async.shared::cta;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    ld.shared.u32 %r6, [taddr];
    tcgen05.cp.cta_group::1.128x256b [%r6], %rd1;
    setp.ne.u64 %p2, %rd5, 0;
    @%p2 tcgen05.shift.cta_group::1.down [%r6];
    tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
    tcgen05.fence::after_thread_sync;
    @!%p1 bra $L_done;
    tcgen05.ld.sync.aligned.32x32b.x8.b32 {%r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27}, [%r6];
    tcgen05.wait::ld.sync.aligned;
    mul.wide.u32 %rd3, %r1, 32;
    add.s64 %rd4, %rd2, %rd3;
    st.global.v4.u32 [%rd4], {%r20, %r21, %r22, %r23};
    st.global.v4.u32 [%rd4+16], {%r24, %r25, %r26, %r27};
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r6, 32;
$L_done:
    ret;
}
"""

KERNELS = {"cp_async_all": CP_ASYNC, "bulk_all": BULK, "tma_all": TMA,
           "replace_all": REPLACE, "clc_all": CLC, "tc_all": TCGEN05}
PTXAS = next((p for p in ("/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas",
                           shutil.which("ptxas")) if p and os.path.exists(p)), None)


def _calls(fn) -> int:
    """Python function calls made while fn() runs."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event == "call":
            n += 1
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


def _bounded(run):
    """run(threads) -> (calls with 32 threads, calls with 1,024); the second may exceed the
    first by a constant only (a loop over threads would add thousands)."""
    run(32)                                         # compile caches, imports
    small = _calls(lambda: run(32))
    large = _calls(lambda: run(1024))
    assert large < small + 300, (small, large)
    return small, large


def test_cp_async_all_threads():
    def run(T):
        rng = np.random.default_rng(T)
        src = rng.integers(0, 256, (T, 16), dtype=np.uint8)
        out = np.zeros((T, 32), np.uint8)
        launch(CP_ASYNC, "cp_async_all", 1, T, args=[src, out])
        n = np.arange(T) % 16
        part = np.where(np.arange(16)[None, :] < n[:, None], src, 0)   # zero beyond src-size
        assert np.array_equal(out[:, :16], src) and np.array_equal(out[:, 16:], part)
    _bounded(run)


def test_bulk_copies_all_threads():
    def run(T):
        src = np.random.default_rng(T).integers(0, 256, (T, 16), dtype=np.uint8)
        out = np.zeros((T, 16), np.uint8)
        launch(BULK, "bulk_all", 1, T, args=[src, out])
        assert np.array_equal(out, src)
    _bounded(run)


def test_tma_load_and_store_all_threads():
    def run(T):
        x = np.random.default_rng(T).integers(0, 256, (8 * T, 16), dtype=np.uint8)
        y = np.zeros_like(x)
        launch(TMA, "tma_all", 1, T, args=[TensorMap.for_array(x, (16, 8)),
                                           TensorMap.for_array(y, (16, 8))],
               dynamic_shared=128 * T)
        assert np.array_equal(y, x)
    _bounded(run)


def test_tensormap_replace_all_threads():
    def run(T):
        base = np.zeros((64, 16), np.float32)
        tm = TensorMap.for_array(base, (16, 8))
        from ptxsim.machine.memory import GlobalMemory
        image = np.frombuffer(tm.bind(GlobalMemory()).to_bytes(), np.uint8).copy()
        before = TensorMap.from_bytes(image.tobytes())
        launch(REPLACE, "replace_all", 1, T, args=[image])
        # the threads replace the same field in thread order: the last value (8 + T - 1) stays
        assert TensorMap.from_bytes(image.tobytes()) == before.replaced("global_dim", T + 7, 1)
    _bounded(run)


def test_clusterlaunchcontrol_all_threads():
    def run(T):
        out = np.zeros(4 * T, np.uint32)
        launch(CLC, "clc_all", 4, T, args=[out], max_resident_ctas=1)
        # CTA 0's first three requests (thread order) cancel CTAs 1..3, which never run; the
        # others find every cluster started
        want = np.zeros(4 * T, np.uint32)
        want[:T] = 2
        want[:3] = 1
        assert np.array_equal(out, want)
    _bounded(run)


def _tc_run(T, shift):
    # the cp source: each thread stored its index at byte 4 tid of shared memory; K-major, no swizzle: 8-row x 16-byte core matrices,
    # rows 16 bytes apart inside one, SBO = 128 between the 8-row groups, LBO = 2048 between the
    # two 16-byte halves of a row (9.7.16.3.3 canonical layout)
    desc = SmemDescriptor.make(start_address=0, lbo=2048, sbo=128).encode()
    out = np.zeros((32, 8), np.uint32)
    launch(TCGEN05, "tc_all", 1, T, args=[desc, int(shift), out])
    return out


def _tc_expected(T, shift_times):
    words = np.where(np.arange(1024) < T, np.arange(1024), 0).astype(np.uint32)
    rows = np.zeros((32, 8), np.uint32)
    for r in range(32):
        for j in range(8):
            half, w = divmod(j, 4)                    # 16-byte half of the 32-byte row
            addr = (r % 8) * 16 + (r // 8) * 128 + half * 2048 + 4 * w
            rows[r, j] = words[addr // 4]
    src = np.maximum(np.arange(32) - shift_times, 0)  # row i holds row max(i - k, 0)
    return rows[src]


def test_tcgen05_cp_commit_all_threads():
    def run(T):
        out = _tc_run(T, shift=False)
        # every thread's copy is the same copy: the 32 lanes of warp 0 hold rows 0..31
        assert np.array_equal(out, _tc_expected(T, 0))
    _bounded(run)


def test_tcgen05_shift_all_threads():
    def run(T):
        out = _tc_run(T, shift=True)
        # T shifts of the same block, one after another: row i holds row max(i - T, 0)
        assert np.array_equal(out, _tc_expected(T, T))
    _bounded(run)


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_accepted_by_ptxas(name, tmp_path):
    f = tmp_path / f"{name}.ptx"
    f.write_text(KERNELS[name])
    got = subprocess.run([PTXAS, "-arch=sm_100a", str(f), "-o", str(tmp_path / "a.cubin")],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
