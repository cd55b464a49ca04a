"""The asynchronous-operation model against the ordering rules of PTX ISA 9.7.16.6 and the
canonical patterns of 9.7.16.6.4 / 9.7.16.12.1 (Example 1: cp, commit, try_wait.parity loop)."""
import numpy as np
import pytest

from ptxsim.errors import AsyncProxyError, OperandError
from ptxsim.machine.async_proxy import AsyncProxy
from ptxsim.machine.mbarrier import Mbarriers
from ptxsim.machine.memory import GlobalMemory, SharedMemory
from ptxsim.machine.tensormap import TensorMap, tma_load_tile


def test_lazy_effects_wait_for_progress_and_keep_issue_order():
    log = []
    p = AsyncProxy()
    p.issue(0, "cp", lambda: log.append("cp"), cta_group=1)
    p.issue(0, "mma", lambda: log.append("mma1"), cta_group=1)
    p.issue(0, "mma", lambda: log.append("mma2"), cta_group=1)
    assert log == [] and len(p) == 3
    # pipelined pairs cp -> mma -> mma (9.7.16.6.2) complete in issue order
    assert p.progress(2) == 2 and log == ["cp", "mma1"]
    p.progress()
    assert log == ["cp", "mma1", "mma2"] and len(p) == 0


def test_commit_signals_after_tracked_operations():
    """9.7.16.12.1 Example 1: tcgen05.cp; tcgen05.commit [mbar]; loop try_wait.parity 0."""
    mb = Mbarriers(SharedMemory(1, 256))
    mb.init(0, 8, 1)
    tmem = {"cell": 0}
    p = AsyncProxy()
    p.issue(7, "cp", lambda: tmem.update(cell=42), cta_group=1)
    p.commit(7, 1, lambda: mb.arrive(0, 8), what="line 3: tcgen05.commit")
    assert not mb.try_wait_parity(0, 8, 0)[0]        # nothing completed yet: keep looping
    p.progress(1)                                     # the cp completes ...
    assert tmem["cell"] == 42 and not mb.try_wait_parity(0, 8, 0)[0]
    p.progress()                                      # ... then the commit's arrive-on
    assert mb.try_wait_parity(0, 8, 0)[0]


def test_eager_completes_at_issue():
    log = []
    p = AsyncProxy(eager=True)
    p.issue(0, "mma", lambda: log.append(1), cta_group=2)
    assert log == [1] and len(p) == 0


def test_wait_ld_st_complete_only_that_thread():
    log = []
    p = AsyncProxy()
    p.issue(1, "mma", lambda: log.append("mma@1"), cta_group=1)
    p.issue(0, "ld", lambda: log.append("ld@0"))
    p.issue(0, "st", lambda: log.append("st@0"))
    p.issue(2, "ld", lambda: log.append("ld@2"))
    p.wait(0, "ld")
    # thread 0's ld is done; thread 1's mma and thread 2's ld are not (not ordered with it)
    assert log == ["ld@0"]
    p.wait(0, "st")
    assert log == ["ld@0", "st@0"]
    with pytest.raises(OperandError):
        p.wait(0, "mma")


def test_bulk_groups_wait_group_n():
    """cp.async.bulk.wait_group N: at most the N most recent groups may stay pending."""
    log = []
    p = AsyncProxy()
    for g in range(3):
        p.issue(0, "bulk", lambda g=g: log.append(g))
        p.commit_group(0, "bulk")
    p.issue(0, "bulk", lambda: log.append("uncommitted"))
    p.wait_group(0, "bulk", 1)                        # groups 0 and 1 complete, 2 may not
    assert log == [0, 1]
    p.wait_group(0, "bulk", 0)
    assert log == [0, 1, 2]                           # the uncommitted op is not waited for
    assert len(p.uncommitted(0, "bulk")) == 1
    assert p.commit_group(0, "bulk") == 3             # empty or not, groups are numbered
    with pytest.raises(OperandError):
        p.wait_group(0, "bulk", -1)


def test_cp_async_mbarrier_arrive():
    mb = Mbarriers(SharedMemory(1, 64))
    mb.init(0, 0, 1)
    done = []
    p = AsyncProxy()
    p.issue(3, "cp_async", lambda: done.append("copy"))
    p.arrive_when_done(3, lambda: mb.arrive(0, 0))
    p.progress()
    assert done == ["copy"] and mb.state(0, 0)["phase"] == 1


def test_tma_producer_consumer_round():
    """One pipeline stage: arrive.expect_tx(box bytes), TMA load with complete_tx on the same
    mbarrier; the consumer's try_wait.parity(0) succeeds only after the copy has landed."""
    g = GlobalMemory()
    A = np.arange(16 * 64, dtype=np.uint16).reshape(16, 64)
    tm = TensorMap.for_array(A, (64, 16), swizzle="128B").bind(g)
    sh = SharedMemory(1, 8192)
    mb = Mbarriers(sh)
    mb.init(0, 0, 1)
    p = AsyncProxy()
    mb.arrive(0, 0, expect_tx=tm.box_bytes)
    assert mb.state(0, 0)["tx_count"] == 2048
    p.issue(0, "bulk", lambda: tma_load_tile(tm, (0, 0), g, sh.cta_view(0), 1024),
            signal=lambda: mb.complete_tx(0, 0, tm.box_bytes))
    assert not mb.try_wait_parity(0, 0, 0)[0]
    assert not sh.data[0, 1024:3072].any()            # not landed yet
    p.progress()
    assert mb.try_wait_parity(0, 0, 0)[0]
    assert sh.data[0, 1024:1026].view(np.uint16)[0] == 0   # row 0, chunk 0 unswizzled


def test_exit_with_operations_in_flight():
    p = AsyncProxy()
    p.issue(5, "bulk", lambda: None, what="line 9: cp.async.bulk.tensor.2d.global.shared::cta")
    with pytest.raises(AsyncProxyError, match="line 9"):
        p.check_exit(range(0, 32))
    p.check_exit(range(32, 64))                       # another CTA's threads: fine
    p.progress()
    p.check_exit(range(0, 32))


def test_issue_errors():
    p = AsyncProxy()
    with pytest.raises(OperandError):
        p.issue(0, "mma", None)                       # no cta_group
    with pytest.raises(OperandError):
        p.issue(0, "teleport", None)


def test_tma_multicast_to_a_cluster_with_per_cta_signals():
    """.multicast::cluster ctaMask 0b1011 from rank 1 of a 4-CTA cluster, .cta_group::1: the box
    lands at the same offset in ranks 0, 1, 3 and each of those CTAs' own mbarrier gets the
    complete-tx (PTX 9.7.9.25)."""
    from ptxsim.machine.memory import Memory
    from ptxsim.machine.tensormap import issue_tma_load, tma_load_targets
    m = Memory(n_ctas=4, threads_per_cta=32, cluster_size=4, static_shared=4096)
    A = np.arange(8 * 64, dtype=np.uint16).reshape(8, 64)
    tm = TensorMap.for_array(A, (64, 8), swizzle="128B").bind(m.global_)
    mb = Mbarriers(m.shared)
    mb.init([0, 1, 2, 3], [0, 0, 0, 0], 1)
    for c in range(4):
        mb.arrive(c, 0, expect_tx=tm.box_bytes)
    p = AsyncProxy()
    issue_tma_load(p, 32, tm, (0, 0), m, mb, cta=1, dst=1024, mbar=0, cta_mask=0b1011)
    p.progress()
    got = [bool(mb.try_wait_parity(c, 0, 0)[0]) for c in range(4)]
    assert got == [True, True, False, True]
    for c in (0, 1, 3):
        np.testing.assert_array_equal(m.shared.data[c, 1024:2048], m.shared.data[1, 1024:2048])
    assert not m.shared.data[2, 1024:].any()            # (its mbarrier sits at 0..7)
    assert m.shared.data[1, 1024:1026].view(np.uint16)[0] == 0
    # .cta_group::2: the signal goes to the destination or its peer, by the parity of mbar's CTA
    assert tma_load_targets(1, 1, 0, 4, 0b1111, 2) == [(0, 0), (1, 0), (2, 2), (3, 2)]
    assert tma_load_targets(1, 1, 1, 4, 0b0011, 2) == [(0, 1), (1, 1)]
    assert tma_load_targets(1, 1, 1, 4) == [(1, 1)]
