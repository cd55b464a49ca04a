"""The async-group table (machine/async_proxy._GroupTable) keeps the last R commit bounds of
each thread; a wait_group N with N + 1 > R grows the ring. The groups committed before the
growth and older than the R kept must still complete at the wait (PTX ISA 9.7.9.24.x
cp.async.wait_group: all but the N most recent groups complete): Triton's fused-attention
backward (tutorial 06) waits with cp.async.wait_group 12 after 13+ commits and read stale shared
memory when they did not."""
import numpy as np

from ptxsim.machine.async_proxy import AsyncProxy


def _issue_and_commit(proxy, groups):
    ops = []
    for _ in range(groups):
        ops.append(proxy.issue(0, "cp_async", perform=None, threads=[0]))
        proxy.commit_groups([0], "cp_async")
    return ops


def test_wait_group_beyond_the_ring_completes_every_older_group():
    proxy = AsyncProxy()
    ops = _issue_and_commit(proxy, 20)           # 20 groups of one operation each (R = 8)
    proxy.wait_groups([0], "cp_async", 12)       # all but the 12 most recent: groups 0..7
    done = [op.done for op in ops]
    assert all(done[:8]), done                   # required (these were lost before the fix)
    # groups 8..12 may complete early (the oldest kept bound, group 12's, stands in for the
    # older ones: allowed, a copy may complete any time before its wait); the 7 newest stay
    assert not any(done[13:]), done


def test_wait_group_within_the_ring_is_exact():
    proxy = AsyncProxy()
    ops = _issue_and_commit(proxy, 6)
    proxy.wait_groups([0], "cp_async", 2)
    assert [op.done for op in ops] == [True] * 4 + [False] * 2
    proxy.wait_groups(np.array([0]), "cp_async", 0)
    assert all(op.done for op in ops)
