"""Each sanitizer check made to fire by a small kernel, and the same kernel with the fault fixed
running clean (docs/sanitizer.md lists the checks; the real-kernel mutants are in
test_sanitizer_mutants.py). Every kernel here is accepted by ptxas for sm_100a
(test_kernels_assemble, when ptxas is on the machine): the faults are in what the program does.
The expected finding (kind, line, earlier line) is read off the kernel text.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ptxsim.cli import main
from ptxsim.errors import MemoryAccessError, OperandError, TmemLeakError
from ptxsim.machine.executor import launch

HEAD = ".version 8.8\n.target sm_100a\n.address_size 64\n"


def line_of(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, line in enumerate(text.split("\n"), 1) if needle in line]
    return hits[nth]


def found(run) -> list:
    return [(f.kind, f.line) for f in run.findings]


# ------------------------------------------------------------------------------- racecheck
RACE = HEAD + """.visible .entry race(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    .shared .align 4 .b32 w;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 32;
    @%p1 st.shared.u32 [w], 7;
    // SYNC
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra $L_end;
    ld.shared.u32 %r2, [w];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r2;
$L_end:
    ret;
}
"""


def test_shared_race_between_warps():
    # warp 1 writes a word warp 0 reads: compute-sanitizer 2025.3.1 racecheck reported no hazard
    # for the same program on an H200 (hardware/sanitizer, race_shared)
    run = launch(RACE, "race", 1, 64, args=[np.zeros(1, np.uint32)])
    (f,) = run.findings
    assert (f.kind, f.line) == ("race-shared", line_of(RACE, "ld.shared"))
    assert f.earlier.line == line_of(RACE, "st.shared") and "warp 1" in f.earlier.what
    assert (f.cta, f.warp, f.lane) == ((0, 0, 0), 0, 0)
    assert f.where == "shared::cta offset 0x0 of CTA (0, 0, 0)"
    fixed = RACE.replace("// SYNC", "bar.sync 0;")
    assert not launch(fixed, "race", 1, 64, args=[np.zeros(1, np.uint32)]).findings


SAME = HEAD + """.visible .entry same(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 w;
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    VALUE
    bar.sync 0;
    ld.shared.u32 %r3, [w];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r3;
    ret;
}
"""


def test_two_warps_writing_one_word_in_one_instruction():
    # different values: which remains is undefined; the same value (Triton's warp-specialised
    # setup stores one constant from every thread) is harmless
    racy = SAME.replace("VALUE", "st.shared.u32 [w], %r2;")
    assert found(launch(racy, "same", 1, 64, args=[np.zeros(1, np.uint32)])) == [
        ("race-shared", line_of(racy, "st.shared"))]
    same = SAME.replace("VALUE", "st.shared.u32 [w], 5;")
    assert not launch(same, "same", 1, 64, args=[np.zeros(1, np.uint32)]).findings


GRACE = HEAD + """.visible .entry g(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
    mov.u32 %r2, %ctaid.x;
    add.u32 %r3, %r2, 1;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r3;
$L_end:
    ret;
}
"""


@pytest.mark.parametrize("resident", [None, 1])
def test_global_race_between_ctas(resident):
    # two CTAs store different values to one global word: full mode's racecheck (one wave, and
    # one CTA per wave); compute-sanitizer racecheck does not check global memory
    run = launch(GRACE, "g", 2, 32, args=[np.zeros(1, np.uint32)], sanitize="full",
                 max_resident_ctas=resident)
    (f,) = run.findings
    st = line_of(GRACE, "st.global")
    assert (f.kind, f.line, f.earlier.line) == ("race-global", st, st)
    other = (0, 0, 0) if f.cta == (1, 0, 0) else (1, 0, 0)
    assert f.cta in ((0, 0, 0), (1, 0, 0)) and f"CTA {other}" in f.earlier.what
    assert not launch(GRACE, "g", 2, 32, args=[np.zeros(1, np.uint32)]).findings  # default


LOCK = HEAD + """.visible .entry lock(.param .u64 data, .param .u64 mutex)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [mutex];
$L_spin:
    atom.global.acquire.gpu.cas.b32 %r2, [%rd2], 0, 1;
    setp.ne.u32 %p2, %r2, 0;
    @%p2 bra $L_spin;
    ld.global.u32 %r3, [%rd1];
    add.u32 %r3, %r3, 1;
    st.global.u32 [%rd1], %r3;
    atom.global.release.gpu.exch.b32 %r4, [%rd2], 0;
$L_end:
    ret;
}
"""


def test_a_spin_lock_orders_the_ctas():
    # the read-modify-write of data is ordered by the lock's acquire / release (atomics on the
    # mutex word are synchronisation): full mode reports nothing, and the count is right
    data, mutex = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    run = launch(LOCK, "lock", 4, 32, args=[data, mutex], sanitize="full")
    assert not run.findings and data[0] == 4


CLUSTER = HEAD + """.visible .entry cl(.param .u64 out) .reqnctapercluster 2, 1, 1
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    .shared .align 4 .b32 s;
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, s;
    setp.ne.u32 %p1, %r1, 1;
    @%p1 bra $L_skip;
    mapa.shared::cluster.u32 %r3, %r2, 0;
    st.shared::cluster.u32 [%r3], 9;
$L_skip:
    // SYNC
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra $L_end;
    ld.shared.u32 %r4, [s];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r4;
$L_end:
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    ret;
}
"""


def test_distributed_shared_memory_race_and_the_cluster_barrier():
    # CTA 1 stores into CTA 0's shared memory, CTA 0 reads it: a race across the cluster
    # (compute-sanitizer 2025.3.1 reported none: cluster_race); barrier.cluster orders them
    run = launch(CLUSTER, "cl", 2, 32, args=[np.zeros(1, np.uint32)])
    (f,) = [f for f in run.findings if f.kind == "race-shared"]
    assert f.line == line_of(CLUSTER, "ld.shared") and f.cta == (0, 0, 0)
    assert f.earlier.line == line_of(CLUSTER, "st.shared::cluster")
    assert "CTA (1, 0, 0)" in f.earlier.what
    fixed = CLUSTER.replace("// SYNC", "barrier.cluster.arrive.aligned;\n"
                                       "    barrier.cluster.wait.aligned;")
    out = np.zeros(1, np.uint32)
    assert not launch(fixed, "cl", 2, 32, args=[out]).findings and out[0] == 9


# ----------------------------------------------------------------- asynchronous proxy
BULK_IN = HEAD + """.visible .entry bin(.param .u64 src, .param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 128 .b32 buf[32];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 4, %r2;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_wait;
    mbarrier.init.shared::cta.b64 [bar], 1;
    ld.param.u64 %rd1, [src];
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [bar], 128;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 128, [bar];
$L_wait:
    bar.sync 0;
    // EARLY
$L_loop:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_loop;
    // LATE
    ld.shared.u32 %r4, [%r3];
    ld.param.u64 %rd3, [out];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    st.global.u32 [%rd5], %r4;
    ret;
}
"""


@pytest.mark.parametrize("where,access,kind", [
    ("// EARLY", "ld.shared.u32 %r9, [%r3];", "async-read-before-complete"),
    ("// EARLY", "st.shared.u32 [%r3], %r1;", "async-dest-overwritten")])
def test_bulk_copy_destination_touched_before_its_mbarrier(where, access, kind):
    # compute-sanitizer 2025.3.1 racecheck reports both (bulk_read_before_wait,
    # bulk_dst_overwrite) on an H200
    bad = BULK_IN.replace(where, access)
    src = np.arange(32, dtype=np.uint32) * 3
    run = launch(bad, "bin", 1, 32, args=[src, np.zeros(32, np.uint32)])
    (f,) = [f for f in run.findings if f.kind == kind]
    assert f.line == line_of(bad, access.split(" ")[0] + " ") or f.line == line_of(bad, access)
    assert f.earlier.line == line_of(bad, "cp.async.bulk")
    good = BULK_IN.replace("// LATE", access)
    out = np.zeros(32, np.uint32)
    assert not launch(good, "bin", 1, 32, args=[src, out]).findings


WAR = HEAD + """.visible .entry war(.param .u64 src, .param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 128 .b32 buf[32];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    and.b32 %r5, %r1, 31;
    mad.lo.u32 %r3, %r5, 4, %r2;
    st.shared.u32 [%r3], %r5;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_read;
    mbarrier.init.shared::cta.b64 [bar], 1;
$L_read:
    bar.sync 0;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra $L_copy;
    ld.shared.u32 %r4, [%r3];
    ld.param.u64 %rd3, [out];
    st.global.u32 [%rd3], %r4;
    // RELEASE
    ret;
$L_copy:
    // ACQUIRE
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra $L_done;
    fence.proxy.async.shared::cta;
    ld.param.u64 %rd1, [src];
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [bar], 128;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 128, [bar];
$L_loop:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_loop;
$L_done:
    ret;
}
"""


def test_copy_into_shared_memory_another_warp_still_reads():
    # warp 1 reads buf while warp 0 refills it with a bulk copy: a producer that did not wait
    # for its consumer (the "empty" barrier of a pipeline)
    src = np.arange(32, dtype=np.uint32)
    run = launch(WAR, "war", 1, 64, args=[src, np.zeros(1, np.uint32)])
    fs = [f for f in run.findings if f.kind == "async-overwrites-unread"]
    assert fs and fs[0].line == line_of(WAR, "cp.async.bulk")
    assert fs[0].earlier.line == line_of(WAR, "ld.shared")
    fixed = WAR.replace("// RELEASE", "bar.arrive 1, 64;").replace("// ACQUIRE",
                                                                  "bar.sync 1, 64;")
    assert not launch(fixed, "war", 1, 64, args=[src, np.zeros(1, np.uint32)]).findings


CPASYNC = HEAD + """.visible .entry cpa(.param .u64 src, .param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .shared .align 16 .b32 buf[32];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 4, %r2;
    ld.param.u64 %rd1, [src];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    cp.async.ca.shared.global [%r3], [%rd3], 4;
    cp.async.commit_group;
    // EARLY
    cp.async.wait_group 0;
    ld.shared.u32 %r4, [%r3];
    ld.param.u64 %rd4, [out];
    add.s64 %rd5, %rd4, %rd2;
    st.global.u32 [%rd5], %r4;
    ret;
}
"""


def test_cp_async_destination_read_before_wait_group():
    # compute-sanitizer 2025.3.1 racecheck reports this one too (as a warning)
    bad = CPASYNC.replace("// EARLY", "ld.shared.u32 %r5, [%r3];")
    src = np.arange(32, dtype=np.uint32)
    run = launch(bad, "cpa", 1, 32, args=[src, np.zeros(32, np.uint32)])
    kinds = found(run)
    assert ("async-read-before-complete", line_of(bad, "%r5, [%r3]")) in kinds
    out = np.zeros(32, np.uint32)
    assert not launch(CPASYNC, "cpa", 1, 32, args=[src, out]).findings
    assert np.array_equal(out, src)


def test_cp_async_read_before_wait_group_in_one_cta_of_several():
    # the copies of all CTAs of a step are one record without clusters (docs/sanitizer.md,
    # "Modes and cost"), each CTA's part observed by its own warps: CTA 0 waits, CTA 1 reads
    # first; the finding is CTA 1's, with the copy its own thread issued
    bad = CPASYNC.replace("// EARLY", """{
    .reg .pred %p;
    .reg .b32 %c;
    mov.u32 %c, %ctaid.x;
    setp.eq.u32 %p, %c, 1;
    @%p ld.shared.u32 %r5, [%r3];
    }""")
    src = np.arange(32, dtype=np.uint32)
    run = launch(bad, "cpa", 3, 32, args=[src, np.zeros(32, np.uint32)])
    (f,) = [f for f in run.findings if f.kind == "async-read-before-complete"]
    assert f.line == line_of(bad, "%r5, [%r3]") and f.cta == (1, 0, 0)
    assert f.earlier.line == line_of(bad, "cp.async.ca") and "CTA (1, 0, 0)" in f.earlier.what
    # (the copy has not landed either: CTA 1's read of bytes no one wrote yet)
    assert {(g.kind, g.cta) for g in run.findings} == {("async-read-before-complete", (1, 0, 0)),
                                                       ("uninit-shared", (1, 0, 0))}


# --------------------------------------------------------------------------- Tensor Memory
LDST = HEAD + """.visible .entry ldst(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
    bar.sync 0;
    ld.shared.u32 %r3, [slot];
    tcgen05.st.sync.aligned.32x32b.x1.b32 [%r3], {%r1};
    tcgen05.wait::st.sync.aligned;
    tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r5}, [%r3];
    // WAIT
    tcgen05.st.sync.aligned.32x32b.x1.b32 [%r3], {%r3};
    tcgen05.wait::st.sync.aligned;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r5;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
    ret;
}
"""


def test_tensor_memory_overwritten_before_wait_ld():
    # the load's registers are used only after the cells are stored again: without
    # tcgen05.wait::ld the load may read the new values (the anti-dependency wait::ld guards,
    # PTX ISA 9.7.16.6.4.5)
    run = launch(LDST, "ldst", 1, 32, args=[np.zeros(1, np.uint32)])
    (f,) = run.findings
    st2 = line_of(LDST, "tcgen05.st.", 1)
    assert (f.kind, f.line, f.earlier.line) == ("tmem-overwrite-in-flight", st2,
                                                line_of(LDST, "tcgen05.ld"))
    assert "tcgen05.wait::ld is missing" in f.message
    assert f.where == "Tensor Memory lane 0 column 0 of CTA (0, 0, 0)"
    fixed = LDST.replace("// WAIT", "tcgen05.wait::ld.sync.aligned;")
    assert not launch(fixed, "ldst", 1, 32, args=[np.zeros(1, np.uint32)]).findings


UNINIT_TMEM = HEAD + """.visible .entry ut(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b32 slot;
    mov.u32 %r2, slot;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;
    bar.sync 0;
    ld.shared.u32 %r3, [slot];
    tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r5}, [%r3];
    tcgen05.wait::ld.sync.aligned;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r5;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;
    ret;
}
"""


def test_reading_tensor_memory_no_one_wrote():
    # freshly allocated columns hold whatever the last kernel left: ptxsim's start zeroed
    run = launch(UNINIT_TMEM, "ut", 1, 32, args=[np.zeros(1, np.uint32)])
    (f,) = run.findings
    assert (f.kind, f.line, f.count) == ("uninit-tmem", line_of(UNINIT_TMEM, "tcgen05.ld"), 32)


def test_tensor_memory_shadow_kept_from_an_earlier_launch_starts_empty():
    # the Tensor Memory shadows of a finished wave are kept for the next one (sanitizer/core.py
    # _TM_POOL): a launch that wrote the cells, then one that reads them unwritten, still finds
    # the uninitialised read; and the clean kernel stays clean when run again
    fixed = LDST.replace("// WAIT", "tcgen05.wait::ld.sync.aligned;")
    for _ in range(2):
        assert not launch(fixed, "ldst", 1, 32, args=[np.zeros(1, np.uint32)]).findings
    # and after one without its dealloc (the dealloc clears the cells' shadow itself)
    leak = fixed.replace("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r3, 32;", "")
    assert leak != fixed
    with pytest.raises(TmemLeakError):
        launch(leak, "ldst", 1, 32, args=[np.zeros(1, np.uint32)])
    (f,) = launch(UNINIT_TMEM, "ut", 1, 32, args=[np.zeros(1, np.uint32)]).findings
    assert (f.kind, f.count) == ("uninit-tmem", 32)


# ---------------------------------------------------------------- registers, mbarriers
UREG = HEAD + """.visible .entry ur(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 mov.u32 %r2, 5;
    add.u32 %r3, %r2, 1;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r3;
    ret;
}
"""


def test_uninitialised_register_in_full_mode():
    # lanes 16..31 read %r2, which only lanes 0..15 wrote
    run = launch(UREG, "ur", 1, 32, args=[np.zeros(1, np.uint32)], sanitize="full")
    (f,) = run.findings
    assert (f.kind, f.line, f.lane, f.count) == ("uninit-register", line_of(UREG, "add.u32"),
                                                 16, 16)
    assert f.severity == "warning"
    assert not launch(UREG, "ur", 1, 32, args=[np.zeros(1, np.uint32)]).findings


PHASES = HEAD + """.visible .entry ph(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 8 .b64 bar;
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.shared::cta.b64 %rd1, [bar];
$L_a:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
    @!%p1 bra $L_a;
    mbarrier.arrive.shared::cta.b64 %rd2, [bar];
    // WAIT
    mbarrier.arrive.shared::cta.b64 %rd3, [bar];
$L_b:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], PARITY;
    @!%p2 bra $L_b;
    ld.param.u64 %rd4, [out];
    st.global.u32 [%rd4], 1;
    ret;
}
"""


def test_mbarrier_phase_skipped_in_full_mode():
    # two phases complete between the waits; waiting on parity 0 again returns for the third
    # phase: the second was never waited for (a parity confusion: the wait meant phase 2)
    bad = PHASES.replace("PARITY", "0")
    run = launch(bad, "ph", 1, 1, args=[np.zeros(1, np.uint32)], sanitize="full")
    (f,) = run.findings
    assert (f.kind, f.line) == ("mbarrier-phase-skipped", line_of(bad, "%p2, [bar]"))
    assert "phase 3" in f.message and "phase 1" in f.message
    assert not launch(bad, "ph", 1, 1, args=[np.zeros(1, np.uint32)]).findings   # default
    ok = bad.replace("// WAIT", "$L_c:\n    mbarrier.try_wait.parity.shared::cta.b64 %p1, "
                                "[bar], 1;\n    @!%p1 bra $L_c;")
    assert not launch(ok, "ph", 1, 1, args=[np.zeros(1, np.uint32)], sanitize="full").findings


OVER = HEAD + """.visible .entry over(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_arrive;
    mbarrier.init.shared::cta.b64 [bar], COUNT;
$L_arrive:
    bar.sync 0;
    mbarrier.arrive.shared::cta.b64 %rd1, [bar];
    ret;
}
"""


def test_mbarrier_overflow():
    # 64 arrivals on a barrier expecting 1: the H200 stops the kernel ("unspecified launch
    # failure"), compute-sanitizer synccheck says "Barrier overflow" (mbar_over_arrive)
    bad = OVER.replace("COUNT", "1")
    (f,) = launch(bad, "over", 1, 64, args=[np.zeros(1, np.uint32)]).findings
    assert (f.kind, f.line) == ("mbarrier-overflow", line_of(bad, "mbarrier.arrive"))
    assert "64 arrivals" in f.message and "1 pending" in f.message
    assert not launch(OVER.replace("COUNT", "64"), "over", 1, 64,
                      args=[np.zeros(1, np.uint32)]).findings


BULK_OUT = HEAD + """.visible .entry bout(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    .shared .align 128 .b32 buf[32];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mad.lo.u32 %r3, %r1, 4, %r2;
    st.shared.u32 [%r3], %r1;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_after;
    ld.param.u64 %rd1, [out];
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 128;
    cp.async.bulk.commit_group;
    // WAIT
$L_after:
    bar.sync 0;
    st.shared.u32 [%r3], 7;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 ret;
    cp.async.bulk.wait_group 0;
    ret;
}
"""


def test_bulk_store_source_overwritten_before_wait_group_read():
    # compute-sanitizer 2025.3.1 reports nothing for this (bulk_src_overwrite); the copy may
    # still read the source when the st.shared rewrites it
    out = np.zeros(32, np.uint32)
    (f,) = launch(BULK_OUT, "bout", 1, 32, args=[out]).findings
    assert (f.kind, f.line) == ("async-source-overwritten", line_of(BULK_OUT, "], 7;"))
    assert f.earlier.line == line_of(BULK_OUT, "cp.async.bulk.global")
    fixed = BULK_OUT.replace("// WAIT", "cp.async.bulk.wait_group.read 0;")
    assert not launch(fixed, "bout", 1, 32, args=[out]).findings


WGMMA = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry wg(.param .u64 out)
{
  .reg .f32 %d<4>;
  .reg .b64 %da, %db, %rd<4>;
  .reg .b32 %r<8>;
  .reg .pred %q, %p;
  .shared .align 128 .b16 a[1024];
  .shared .align 128 .b16 b[128];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, a;
  mov.u32 %r3, b;
  shl.b32 %r4, %r1, 4;
  add.u32 %r5, %r2, %r4;
  st.shared.v4.b32 [%r5], {%r1, %r1, %r1, %r1};
  add.u32 %r6, %r3, %r4;
  setp.lt.u32 %p, %r1, 16;
  @%p st.shared.v4.b32 [%r6], {%r1, %r1, %r1, %r1};
  fence.proxy.async.shared::cta;
  bar.sync 0;
  shr.u32 %r7, %r2, 4;
  cvt.u64.u32 %da, %r7;
  or.b64 %da, %da, 0x0000000800400000;
  shr.u32 %r7, %r3, 4;
  cvt.u64.u32 %db, %r7;
  or.b64 %db, %db, 0x0000000800080000;
  mov.f32 %d0, 0f00000000;
  mov.f32 %d1, 0f00000000;
  mov.f32 %d2, 0f00000000;
  mov.f32 %d3, 0f00000000;
  setp.ne.u32 %q, 1, 0;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%d0, %d1, %d2, %d3}, %da, %db, %q, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  // OVERWRITE
  wgmma.wait_group.sync.aligned 0;
  ld.param.u64 %rd1, [out];
  st.global.f32 [%rd1], %d0;
  ret;
}
"""


def test_wgmma_operand_overwritten_before_its_wait_group():
    # sm_90a: compute-sanitizer 2025.3.1 reports nothing (wgmma_operand_overwrite), and the
    # H200 gave the right numbers; the PTX ISA (9.7.15.6) forbids the write before wait_group
    bad = WGMMA.replace("// OVERWRITE", "st.shared.v4.b32 [%r5], {%r1, %r1, %r1, %r1};")
    run = launch(bad, "wg", 1, 128, args=[np.zeros(1, np.float32)], target="sm_90a")
    (f,) = run.findings
    assert (f.kind, f.line) == ("async-source-overwritten", line_of(bad, "[%r5]", 1))
    assert f.earlier.line == line_of(bad, "wgmma.mma_async")
    assert not launch(WGMMA, "wg", 1, 128, args=[np.zeros(1, np.float32)],
                      target="sm_90a").findings
    unfenced = WGMMA.replace("  fence.proxy.async.shared::cta;\n", "")
    (f,) = launch(unfenced, "wg", 1, 128, args=[np.zeros(1, np.float32)],
                  target="sm_90a").findings
    assert (f.kind, f.line) == ("missing-proxy-fence", line_of(unfenced, "wgmma.mma_async"))


# ------------------------------------------------------------------ interface and errors
def test_an_error_while_an_instruction_runs_names_its_line():
    bad = HEAD + """.visible .entry oob(.param .u64 out)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1+64], 1;
    ret;
}
"""
    with pytest.raises(MemoryAccessError) as e:
        launch(bad, "oob", 1, 32, args=[np.zeros(4, np.uint32)])
    assert "line 8" in str(e.value) and "st.global.u32" in str(e.value)
    assert e.value.ptx_line == 8


def test_sanitize_option_is_checked():
    with pytest.raises(OperandError):
        launch(RACE, "race", 1, 64, args=[np.zeros(1, np.uint32)], sanitize="strict")
    with pytest.raises(OperandError):
        launch(RACE, "race", 1, 64, args=[np.zeros(1, np.uint32)], schedule="shuffle")
    assert not launch(RACE, "race", 1, 64, args=[np.zeros(1, np.uint32)],
                      sanitize="none").findings


def test_a_launch_split_across_workers_reports_the_one_process_findings(tmp_path):
    # ptxsim.launch(workers=2) runs each wave in a forked worker (docs/distributed.md): the
    # workers' findings come back and add up to those of the run in one process
    import ptxsim
    from ptxsim.errors import OneWorkerWarning
    kw = dict(args=[np.zeros(1, np.uint32)], max_resident_ctas=1)
    one = ptxsim.launch(RACE, "race", 4, 64, **kw)
    two = ptxsim.launch(RACE, "race", 4, 64, workers=2, **kw)
    assert two.distribution.workers == 2
    assert [(f.kind, f.line, f.count) for f in two.findings] == \
        [(f.kind, f.line, f.count) for f in one.findings] == \
        [("race-shared", line_of(RACE, "ld.shared"), 4)]
    # a trace is one process's timeline: such a launch runs in one worker
    with pytest.warns(OneWorkerWarning, match="trace"):
        traced = ptxsim.launch(RACE, "race", 4, 64, workers=2, trace=tmp_path / "t.json", **kw)
    assert traced.distribution.workers == 1 and (tmp_path / "t.json").exists()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_schedule_keeps_the_bits_and_the_findings(seed):
    out = np.zeros(32, np.uint32)
    src = np.arange(32, dtype=np.uint32) * 7
    run = launch(CPASYNC, "cpa", 1, 32, args=[src, out], schedule=f"random:{seed}")
    assert not run.findings and np.array_equal(out, src)
    run = launch(RACE, "race", 1, 64, args=[np.zeros(1, np.uint32)], schedule=f"random:{seed}")
    assert found(run) == [("race-shared", line_of(RACE, "ld.shared"))]


def test_cli_reports_findings(tmp_path, capsys):
    path = tmp_path / "race.ptx"
    path.write_text(RACE)
    assert main(["run", str(path), "--block", "64", "--arg", "zeros:uint32:1", "--json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)
    assert (f["kind"], f["line"], f["severity"], f["tool"]) == (
        "race-shared", line_of(RACE, "ld.shared"), "error", "racecheck")
    assert f["earlier"]["line"] == line_of(RACE, "st.shared") and f["file"] == str(path)
    assert main(["run", str(path), "--block", "64", "--arg", "zeros:uint32:1"]) == 1
    text = capsys.readouterr().out
    assert "race-shared" in text and "1 error(s)" in text
    assert main(["run", str(path), "--block", "64", "--arg", "zeros:uint32:1",
                 "--sanitize", "none"]) == 0
    trace = tmp_path / "t.json"
    fixed = tmp_path / "fixed.ptx"
    fixed.write_text(RACE.replace("// SYNC", "bar.sync 0;"))
    assert main(["run", str(fixed), "--block", "64", "--arg", "zeros:uint32:1", "--trace",
                 str(trace)]) == 0
    assert json.loads(trace.read_text())["traceEvents"]


# ------------------------------------------------------------------------ ptxas accepts them
KERNELS = {"race": RACE, "same": SAME.replace("VALUE", "st.shared.u32 [w], %r2;"),
           "g": GRACE, "lock": LOCK, "cl": CLUSTER, "bin": BULK_IN, "war": WAR,
           "cpa": CPASYNC, "ldst": LDST, "ut": UNINIT_TMEM, "ur": UREG,
           "ph": PHASES.replace("PARITY", "0"), "over": OVER.replace("COUNT", "1"),
           "bout": BULK_OUT, "wg": WGMMA}


def _ptxas():
    for p in (os.path.join(sys.prefix, "lib", "python3.11", "site-packages", "nvidia", "cu13",
                           "bin", "ptxas"), shutil.which("ptxas")):
        if p and os.path.exists(p):
            return p
    return None


@pytest.mark.skipif(_ptxas() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_assemble(name, tmp_path):
    src = tmp_path / f"{name}.ptx"
    src.write_text(KERNELS[name])
    arch = "sm_90a" if ".target sm_90a" in KERNELS[name] else "sm_100a"
    got = subprocess.run([_ptxas(), f"-arch={arch}", str(src), "-o", str(tmp_path / "a.cubin")],
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr


ELECTED_THEN_BARRIER = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  .shared .align 4 .b8 buf[128];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [out];
  and.b32 %r2, %r1, 31;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra $L_join;
  mov.u32 %r3, 0;
  mov.u32 %r5, buf;
$L_loop:
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, 5;
  @%p2 bra $L_loop;
  shr.u32 %r4, %r1, 5;
  shl.b32 %r4, %r4, 2;
  add.u32 %r5, %r5, %r4;
  st.shared.u32 [%r5], %r3;
$L_join:
  bar.sync 0;
  ld.shared.u32 %r6, [buf];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
"""


@pytest.mark.parametrize("lanes_skip_barrier", [False, True])
def test_lanes_that_diverge_and_meet_at_the_same_barrier_are_not_divergent(lanes_skip_barrier):
    """`if (elect_one) { loop; store } __syncthreads();` (DeepGEMM's sm100 GEMM, CUDA's usual
    pattern): lane 0 of each warp runs a loop the other lanes skip, then every lane reaches the
    same bar.sync, so the warp executes it together once it reconverges; the scheduler sees the
    lanes arrive at different steps, which is no finding. Control: lane 0 of each warp jumping
    past the barrier (the others wait at it) is divergent-aligned."""
    import numpy as np
    from ptxsim.machine.executor import launch
    ptx = ELECTED_THEN_BARRIER
    if lanes_skip_barrier:
        ptx = ptx.replace("$L_join:\n  bar.sync 0;", "  bra $L_end;\n$L_join:\n  bar.sync 0;") \
                 .replace("  ret;\n}", "$L_end:\n  ret;\n}")
    out = np.zeros(64, np.uint32)
    run = launch(ptx, "k", 1, 64, args=[out], sanitize="default")
    kinds = {f.kind for f in run.findings}
    if lanes_skip_barrier:
        assert "divergent-aligned" in kinds, str(run.findings)
    else:
        assert kinds == set(), str(run.findings)
        assert (out == 5).all()
