"""mbarrier, named barriers and barrier.cluster. Expected states are derived by hand from the
PTX ISA rules (9.7.13.15): a phase completes when pending arrivals and tx-count are both zero;
the phase then flips and pending reloads the expected count; try_wait.parity(p) succeeds when
the current phase parity differs from p."""
import numpy as np
import pytest

from ptxsim.errors import BarrierError, MbarrierError, OperandError
from ptxsim.machine.mbarrier import (ClusterBarrier, Mbarriers, NamedBarriers, decode, encode,
                                     pending_count)
from ptxsim.machine.memory import SharedMemory


@pytest.fixture
def mb():
    return Mbarriers(SharedMemory(2, 1024))


def st(mb, off=64, cta=0):
    s = mb.state(cta, off)
    return s["phase"], s["pending"], s["expected"], s["tx_count"]


def test_encoding_roundtrip_extremes():
    for ph, pend, exp, tx in [(0, 0, 1, 0), (1, 2**20 - 1, 2**20 - 1, -(2**20 - 1)),
                              (1, 5, 7, 2**20 - 1)]:
        assert tuple(int(x) for x in decode(encode(ph, pend, exp, tx))) == (ph, pend, exp, tx)


def test_init_and_parity_idiom(mb):
    mb.init(0, 64, 3)
    assert st(mb) == (0, 3, 3, 0)
    # a fresh barrier: waiting for parity 1 (the "preceding" phase) succeeds at once; this is
    # the producer's first wait on an "empty" barrier in CUTLASS pipelines
    assert mb.test_wait_parity(0, 64, 1)[0] and not mb.test_wait_parity(0, 64, 0)[0]
    mb.arrive([0, 0], [64, 64])
    assert st(mb) == (0, 1, 3, 0) and not mb.test_wait_parity(0, 64, 0)[0]
    mb.arrive(0, 64)
    assert st(mb) == (1, 3, 3, 0)
    assert mb.test_wait_parity(0, 64, 0)[0] and not mb.test_wait_parity(0, 64, 1)[0]


def test_state_token_and_pending_count(mb):
    mb.init(0, 64, 4)
    tok = mb.arrive([0, 0, 0], [64, 64, 64])
    # token = object before each thread's arrive, threads in order: pending 4, 3, 2
    assert pending_count(tok).tolist() == [4, 3, 2]
    assert not mb.test_wait(0, 64, tok[0])[0]
    mb.arrive(0, 64)
    assert mb.test_wait(0, 64, tok).all()        # that phase completed


def test_expect_tx_complete_tx_both_orders(mb):
    mb.init(0, 64, 1)
    mb.arrive(0, 64, expect_tx=4096)              # arrive.expect_tx: pending 0, tx 4096
    assert st(mb) == (0, 0, 1, 4096)
    mb.complete_tx(0, 64, 1024)
    assert st(mb) == (0, 0, 1, 3072)
    assert mb.complete_tx(0, 64, 3072)[0]         # tx reaches 0 with no pending: completes
    assert st(mb) == (1, 1, 1, 0)
    # the copy may land before expect_tx: tx-count goes negative meanwhile (legal range)
    mb.complete_tx(0, 64, 512)
    assert st(mb) == (1, 1, 1, -512)
    mb.arrive(0, 64, expect_tx=512)
    assert st(mb) == (0, 1, 1, 0)


def test_tx_range_errors(mb):
    mb.init(0, 64, 2)
    mb.expect_tx(0, 64, 2**20 - 1)
    with pytest.raises(MbarrierError, match="overflow"):
        mb.expect_tx(0, 64, 1)
    mb.init(0, 128, 2)
    mb.complete_tx(0, 128, 2**20 - 1)
    with pytest.raises(MbarrierError, match="underflow"):
        mb.complete_tx(0, 128, 1)


def test_misuse_is_named(mb):
    with pytest.raises(MbarrierError, match="not initialised"):
        mb.arrive(0, 64)
    with pytest.raises(MbarrierError, match="not initialised"):
        mb.test_wait_parity(0, 64, 0)
    with pytest.raises(MbarrierError, match="8-byte aligned"):
        mb.init(0, 66, 1)
    with pytest.raises(MbarrierError, match="outside 1 .. 2"):
        mb.init(0, 64, 0)
    with pytest.raises(MbarrierError, match="outside 1 .. 2"):
        mb.init(0, 64, 2**20)
    mb.init(0, 64, 1)
    with pytest.raises(MbarrierError, match="valid mbarrier"):
        mb.init(0, 64, 1)
    with pytest.raises(MbarrierError, match="ordinary load/store"):
        mb.check_plain_access([0], [68], 4)
    mb.check_plain_access([0], [72], 4)          # the next word is free
    mb.inval(0, 64)
    with pytest.raises(MbarrierError) as e:
        mb.arrive(0, 64)
    assert e.value.address == 64 and e.value.cta == 0
    mb.init(0, 64, 1)                             # re-init after inval is fine
    with pytest.raises(OperandError):
        mb.test_wait_parity(0, 64, 2)


def test_no_complete_and_pending_underflow(mb):
    mb.init(0, 64, 2)
    mb.arrive(0, 64, no_complete=True)
    with pytest.raises(MbarrierError, match="noComplete"):
        mb.arrive(0, 64, no_complete=True)
    mb.init(1, 64, 1)
    mb.expect_tx(1, 64, 16)
    mb.arrive(1, 64)                              # pending 0, waiting for 16 bytes
    with pytest.raises(MbarrierError, match="negative"):
        mb.arrive(1, 64)


def test_arrive_drop(mb):
    mb.init(0, 64, 3)
    mb.arrive(0, 64, drop=True)                   # expected 3 -> 2, pending 3 -> 2
    assert st(mb) == (0, 2, 2, 0)
    mb.arrive([0, 0], [64, 64])
    assert st(mb) == (1, 2, 2, 0)                 # next phase expects 2


def test_one_instruction_crossing_phases(mb):
    # 5 threads arrive on a barrier expecting 2: completes after the 2nd and the 4th
    mb.init(0, 64, 2)
    tok = mb.arrive([0] * 5, [64] * 5)
    assert st(mb) == (0, 1, 2, 0)                 # two flips, then one pending arrival
    assert [int(decode(t)[0]) for t in tok] == [0, 0, 1, 1, 0]


def test_several_objects_and_ctas_in_one_call(mb):
    mb.init([0, 0, 1], [64, 72, 64], [2, 1, 1])
    mb.arrive([0, 0, 0, 1], [64, 72, 64, 64])
    assert st(mb, 64, 0) == (1, 2, 2, 0)          # two arrivals of two: flipped
    assert st(mb, 72, 0) == (1, 1, 1, 0)
    assert st(mb, 64, 1) == (1, 1, 1, 0)
    # the object bits live in shared memory
    assert mb.shared.data[1, 64:72].view(np.uint64)[0] == encode(1, 1, 1, 0)


def test_named_barrier_counts_warps():
    nb = NamedBarriers(n_ctas=1, warps_per_cta=4)
    assert nb.arrive(0, 0, warp=0) is None
    assert nb.arrive(0, 0, warp=1) is None
    assert nb.arrive(0, 0, warp=2) is None
    released, _ = nb.arrive(0, 0, warp=3)
    assert sorted(released) == [0, 1, 2, 3]
    # bar.arrive (producer) + bar.sync (consumer) with 64 threads on barrier 1
    assert nb.arrive(0, 1, warp=0, count=64, wait=False) is None
    released, _ = nb.arrive(0, 1, warp=2, count=64)
    assert released == [2]
    with pytest.raises(BarrierError, match="multiple of the warp size"):
        nb.arrive(0, 2, warp=0, count=48)
    nb.arrive(0, 3, warp=0, count=96)
    with pytest.raises(BarrierError, match="expecting 64"):
        nb.arrive(0, 3, warp=1, count=64)


def test_named_barrier_red_and_exit():
    nb = NamedBarriers(n_ctas=1, warps_per_cta=2)
    nb.arrive(0, 0, warp=0, red=("popc", np.arange(32) < 5))
    _, res = nb.arrive(0, 0, warp=1, red=("popc", np.arange(32) < 7))
    assert res == 12
    # warp 1 exits while warp 0 waits at bar.sync 0 (all non-exited warps): it completes
    nb.arrive(0, 0, warp=0)
    assert nb.exit_warp(0, 1) == [(0, [0])]


def test_cluster_barrier():
    cb = ClusterBarrier(n_clusters=1, threads_per_cluster=4)
    assert not cb.arrive(0, [0, 1])
    assert not cb.wait(0, [0, 1]).any()
    assert cb.arrive(0, [2, 3])
    assert cb.wait(0, [0, 1, 2, 3]).all()
    with pytest.raises(BarrierError, match="without a prior"):
        cb.wait(0, [0])
    cb.arrive(0, [0])
    with pytest.raises(BarrierError, match="twice"):
        cb.arrive(0, [0])
    # exited threads no longer count
    assert cb.exit_threads(0, [1, 2, 3])


def test_matches_h200_probe():
    """hardware/tma/tma_probe.cu `mbar_kernel`, run on an H200 (sm_90a) 2026-11-21,
    printed `mbar 1 0 4 1 1`: fresh init(4) -> test_wait.parity(1) true, parity(0) false;
    pending_count of the first arrive's token = 4; after arrive, arrive(2), complete_tx(64)
    (tx-count -64) and arrive.expect_tx(64) the phase is complete (parity(0) true) and the first
    token's phase tests complete."""
    mb = Mbarriers(SharedMemory(1, 64))
    mb.init(0, 0, 4)
    hw = [1, 0, 4, 1, 1]
    got = [int(mb.test_wait_parity(0, 0, 1)[0]), int(mb.test_wait_parity(0, 0, 0)[0])]
    tok = mb.arrive(0, 0)
    got.append(int(pending_count(tok)[0]))
    mb.arrive(0, 0, 2)
    mb.complete_tx(0, 0, 64)
    mb.arrive(0, 0, expect_tx=64)
    got += [int(mb.test_wait_parity(0, 0, 0)[0]), int(mb.test_wait(0, 0, tok)[0])]
    assert got == hw


def test_describe_for_deadlock_reports(mb):
    mb.init(0, 64, 2)
    mb.arrive(0, 64, expect_tx=4096)
    assert mb.describe(0, 64) == ("mbarrier 0x40 of CTA 0: phase 0 (parity 0) incomplete, 1 of 2 "
                                  "arrivals, tx-count 4096 bytes outstanding")
    assert "not initialised" in mb.describe(1, 64)
