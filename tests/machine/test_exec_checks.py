"""The run-time checks the docs promise (docs/STATUS.md "Checked at run time"), each made to fire
by a small kernel, and the same kernel without the fault running clean. Every kernel here is
accepted by ptxas 13.5 for sm_100a: the faults are in what the program does, not in its syntax.
"""
import numpy as np
import pytest

from ptxsim.errors import (AsyncProxyError, DeadlockError, MbarrierError, TmemLeakError,
                           UndefinedBehavior)
from ptxsim.machine.executor import launch

# ------------------------------------------------------------------ Tensor Memory leak at exit
# 9.7.16.7.1: "all of the Tensor Memory that was allocated ... must be deallocated ... before
# the kernel exits"
LEAK = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry leak(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r1, slot;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;
    bar.sync 0;
    ld.shared.u32 %r2, [slot];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r2;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    ret;
}
"""


def test_tensor_memory_still_allocated_at_exit_is_reported():
    out = np.zeros(1, np.uint32)
    with pytest.raises(TmemLeakError) as e:
        launch(LEAK, "leak", 1, 32, args=[out])
    msg = str(e.value)
    assert "line 16" in msg and "CTA (0, 0, 0)" in msg and "columns [0, 64)" in msg
    assert e.value.leaks == [(0, 64)] and e.value.cta == 0


def test_tensor_memory_leak_names_the_leaking_cta():
    # six CTAs in one wave; only %ctaid (1, 1) skips the dealloc
    one = LEAK.replace("    .reg .b64 %rd<4>;", "    .reg .b64 %rd<4>;\n    .reg .pred %p<2>;").replace(
        "    ret;", "    mov.u32 %r3, %ctaid.x;\n    mov.u32 %r4, %ctaid.y;\n"
        "    mad.lo.u32 %r5, %r4, 3, %r3;\n    setp.ne.u32 %p1, %r5, 4;\n"
        "    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 64;\n    ret;")
    with pytest.raises(TmemLeakError) as e:
        launch(one, "leak", (3, 2), 32, args=[np.zeros(1, np.uint32)])
    assert "CTA (1, 1, 0)" in str(e.value) and e.value.cta == 4


def test_no_leak_once_deallocated():
    fixed = LEAK.replace("    ret;", "    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 64;\n"
                                     "    ret;")
    out = np.zeros(1, np.uint32)
    launch(fixed, "leak", 1, 32, args=[out])
    assert out[0] == 0                               # lane 0, column 0 (the only allocation)


# ------------------------------------------------------------- tcgen05.alloc blocks (9.7.16.7.1)
# "If the requested amount of Tensor Memory is not available, tcgen05.alloc blocks until it
# becomes available": two warps each take all 512 columns; the second waits for the first's
# dealloc, then gets column 0 as well.
TWICE = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry twice(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 8 .b32 slot[2];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    mov.u32 %r3, slot;
    mad.lo.u32 %r4, %r2, 4, %r3;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 512;
    ld.shared.u32 %r5, [%r4];
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 512;
    ret;
}
"""


def test_alloc_waits_for_a_dealloc_of_another_warp():
    out = np.full(2, 0xFFFFFFFF, np.uint32)
    launch(TWICE, "twice", 1, 64, args=[out])
    assert out.tolist() == [0, 0]                    # 512 columns: only column 0 fits


def test_alloc_that_no_dealloc_can_satisfy_is_a_deadlock_naming_it():
    # one warp holds 512 columns while the other asks for 512: without the dealloc nothing
    # frees them (the first warp exits holding them: the wait never ends)
    held = TWICE.replace("    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 512;\n", "")
    with pytest.raises(DeadlockError) as e:
        launch(held, "twice", 1, 64, args=[np.zeros(2, np.uint32)])
    (w,) = e.value.waits
    assert w.warp == 1 and "tcgen05.alloc" in w.instruction and w.line == 13
    assert "tcgen05.alloc of 512 Tensor Memory columns" in w.reason
    assert "columns [0, 512)" in w.reason


# -------------------------------------------------------- plain access to a live mbarrier object
# 9.7.13.15: the object may be accessed only through mbarrier instructions until mbarrier.inval
PLAIN = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry plain(.param .u32 inval, .param .u32 generic)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<4>;
    .shared .align 8 .b64 bar;
    ld.param.u32 %r1, [inval];
    ld.param.u32 %r2, [generic];
    setp.ne.u32 %p1, %r1, 0;
    setp.ne.u32 %p2, %r2, 0;
    mbarrier.init.shared::cta.b64 [bar], 1;
    @%p1 mbarrier.inval.shared::cta.b64 [bar];
    @%p2 bra $L_generic;
    st.shared.u32 [bar+4], 7;
    ret;
$L_generic:
    mov.u64 %rd1, bar;
    cvta.shared.u64 %rd2, %rd1;
    ld.u32 %r3, [%rd2];
    ret;
}
"""


def test_plain_store_to_a_live_mbarrier_is_reported():
    with pytest.raises(MbarrierError) as e:
        launch(PLAIN, "plain", 1, 32, args=[0, 0])
    assert "line 17" in str(e.value) and "st.shared.u32" in str(e.value)


def test_plain_generic_load_of_a_live_mbarrier_is_reported():
    with pytest.raises(MbarrierError) as e:
        launch(PLAIN, "plain", 1, 32, args=[0, 1])
    assert "line 22" in str(e.value) and "ld.u32" in str(e.value)


@pytest.mark.parametrize("generic", [0, 1])
def test_plain_access_after_mbarrier_inval_is_fine(generic):
    launch(PLAIN, "plain", 1, 32, args=[1, generic])


# ----------------------------------------------- asynchronous operation in flight at CTA exit
# a bulk copy still writing the CTA's shared memory when the CTA exits writes freed memory:
# an error. A bulk store (shared::cta -> global, bulk async-group) still in flight completes at
# the exit: CUTLASS's sm100 TMA epilogue exits without cp.async.bulk.wait_group when it loads no
# source tensor (the PTX of CUTLASS example 70), and compute-sanitizer reports nothing there.
BULK = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry bulk(.param .u64 out, .param .u32 wait)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<4>;
    .shared .align 128 .b32 buf[32];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 4, %r2;
    mad.lo.u32 %r4, %r1, 3, 1;
    st.shared.u32 [%r3], %r4;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 ret;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r5, [wait];
    setp.eq.u32 %p2, %r5, 0;
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 128;
    cp.async.bulk.commit_group;
    @%p2 ret;
    cp.async.bulk.wait_group.read 0;
    ret;
}
"""


def test_bulk_store_in_flight_at_exit_completes():
    out = np.zeros(32, np.uint32)
    launch(BULK, "bulk", 1, 32, args=[out, 0])
    assert np.array_equal(out, 3 * np.arange(32) + 1)


BULK_LOAD = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry bulkload(.param .u64 src, .param .u32 wait)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<4>;
    .shared .align 128 .b32 buf[32];
    .shared .align 8 .b64 mbar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 ret;
    mov.u32 %r2, buf;
    mov.u32 %r6, mbar;
    mbarrier.init.shared::cta.b64 [%r6], 1;
    ld.param.u64 %rd1, [src];
    ld.param.u32 %r5, [wait];
    setp.eq.u32 %p2, %r5, 0;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r6], 128;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 128, [%r6];
    @%p2 ret;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r6], 0;
    @!%p3 bra WAIT;
    ret;
}
"""


def test_bulk_copy_in_flight_at_exit_is_reported():
    src = np.arange(32, dtype=np.uint32)
    with pytest.raises(AsyncProxyError) as e:
        launch(BULK_LOAD, "bulkload", 1, 32, args=[src, 0])
    msg = str(e.value)
    assert "CTA (0, 0, 0)" in msg and "line 22: @%p2 ret;" in msg   # the exit
    assert "line 21: cp.async.bulk.shared::cluster.global" in msg  # the copy in flight
    launch(BULK_LOAD, "bulkload", 1, 32, args=[src, 1])           # waited for: clean


def test_bulk_copy_waited_for_completes_before_exit():
    out = np.zeros(32, np.uint32)
    launch(BULK, "bulk", 1, 32, args=[out, 1])
    assert np.array_equal(out, 3 * np.arange(32) + 1)


# ---------------------------------------------------- .cta_group::2 after the peer CTA exited
# Table 46: "the peer CTA should be active and should not have exited"
PAIR = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry pair() .reqnctapercluster 2, 1, 1
{
    .reg .b32 %r<8>;
    .reg .pred %p<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r1, %cluster_ctarank;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 exit;
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r2], 32;
    ld.shared.u32 %r3, [slot];
    tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r3, 32;
    ret;
}
"""


def test_cta_pair_instruction_after_the_peer_exited_is_undefined():
    with pytest.raises(UndefinedBehavior, match="exited"):
        launch(PAIR, "pair", 2, 32)


# ======================================================= found by the sanitizer (issue #19)
# Each of these kernels has a fault the hardware may punish and that the bits do not show: the
# run completes, and the sanitizer (machine/sanitizer, docs/sanitizer.md) reports it with the
# PTX line; without it (sanitize="none") the run is silent. Before the sanitizer these were the
# "not checked at run time" examples.
NOWAIT = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry nowait(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
    bar.sync 0;
    ld.shared.u32 %r3, [slot];
    mad.lo.u32 %r4, %r1, 3, 1;
    tcgen05.st.sync.aligned.32x32b.x1.b32 [%r3], {%r4};
    tcgen05.wait::st.sync.aligned;
    tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r5}, [%r3];
    tcgen05.wait::ld.sync.aligned;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
    ret;
}
"""


@pytest.mark.parametrize("drop,kinds", [
    (None, []),
    # reading the ld's register before wait::ld is legal: a true register dependency is
    # respected (PTX ISA 9.7.16.6.4.5), and the ld completes with it
    ("tcgen05.wait::ld", []),
    # the ld reads what the st writes before wait::st, and the dealloc frees the st's columns
    ("tcgen05.wait::st", [("tmem-read-before-complete", 16), ("tmem-dealloc-in-flight", 23)])])
def test_missing_tcgen05_wait(drop, kinds):
    # ptxsim performs tcgen05.ld / st at issue, so the same bits come back either way: only the
    # sanitizer tells them apart
    src = NOWAIT if drop is None else "".join(
        line for line in NOWAIT.splitlines(keepends=True) if drop not in line)
    out = np.zeros(32, np.uint32)
    run = launch(src, "nowait", 1, 32, args=[out])
    assert np.array_equal(out, 3 * np.arange(32) + 1)
    assert [(f.kind, f.line) for f in run.findings] == kinds
    assert not launch(src, "nowait", 1, 32, args=[out], sanitize="none").findings


def test_missing_fence_proxy_async_is_reported():
    # the generic-proxy stores to buf are not fenced before the bulk copy (async proxy) reads
    # them ("accessing the same memory location across multiple proxies needs a cross-proxy
    # fence", PTX ISA 9.7.16.6.5); the bits are right, the sanitizer names the copy's line and
    # the unfenced store
    src = "".join(line for line in BULK.splitlines(keepends=True) if "fence.proxy" not in line)
    out = np.zeros(32, np.uint32)
    run = launch(src, "bulk", 1, 32, args=[out, 1])
    assert np.array_equal(out, 3 * np.arange(32) + 1)
    (f,) = run.findings
    assert (f.kind, f.line, f.earlier.line) == ("missing-proxy-fence", 21, 14)
    assert not launch(BULK, "bulk", 1, 32, args=[out, 1]).findings


EARLY = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry early(.param .u64 out, .param .u64 seen)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    .shared .align 128 .b32 buf[32];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 4, %r2;
    mad.lo.u32 %r4, %r1, 3, 1;
    st.shared.u32 [%r3], %r4;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 ret;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [seen];
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 128;
    cp.async.bulk.commit_group;
    ld.global.u32 %r5, [%rd1+4];
    st.global.u32 [%rd2], %r5;
    cp.async.bulk.wait_group.read 0;
    ret;
}
"""


def test_reading_a_bulk_copy_destination_before_its_wait_is_reported():
    # the ld.global of out[1] races with the copy writing it; ptxsim completes the copy lazily,
    # so the read sees the old contents (0): the sanitizer names the read and the copy
    out, seen = np.zeros(32, np.uint32), np.full(1, 0xFFFFFFFF, np.uint32)
    run = launch(EARLY, "early", 1, 32, args=[out, seen])
    assert seen[0] == 0 and np.array_equal(out, 3 * np.arange(32) + 1)
    (f,) = run.findings
    assert (f.kind, f.line, f.earlier.line) == ("async-read-before-complete", 23, 21)
    assert f.where == "global address 0x7f0000000004"


ZERO = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry zero(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .shared .align 4 .b32 never[32];
    ld.shared.u32 %r1, [never+64];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def test_reading_never_written_shared_memory_is_reported():
    # the ISA leaves the contents undefined; ptxsim's shared memory starts zeroed, and the
    # sanitizer's initcheck names the read (once per word: 32 threads, one finding)
    out = np.full(1, 0xFFFFFFFF, np.uint32)
    run = launch(ZERO, "zero", 1, 32, args=[out])
    assert out[0] == 0
    (f,) = run.findings
    assert (f.kind, f.line, f.count) == ("uninit-shared", 9, 32)
    assert f.where == "shared::cta offset 0x40 of CTA (0, 0, 0)"
