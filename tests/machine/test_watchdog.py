"""Deadlock report and step guard, with a real waiting situation built from the mbarrier model."""
import pytest

from ptxsim.errors import DeadlockError, OperandError, StepLimitExceeded
from ptxsim.machine.mbarrier import Mbarriers, NamedBarriers
from ptxsim.machine.memory import SharedMemory
from ptxsim.machine.watchdog import StepGuard, Wait, deadlock_error


def test_deadlock_report_lists_every_waiter_and_its_barrier():
    mb = Mbarriers(SharedMemory(1, 64))
    mb.init(0, 8, 1)
    mb.arrive(0, 8, expect_tx=4096)             # the TMA that should complete it never issued
    nb = NamedBarriers(1, 4)
    nb.arrive(0, 1, warp=2, count=128)
    waits = [Wait(0, 0, 41, "mbarrier.try_wait.parity.b64 p, [%r1], 0;", mb.describe(0, 8)),
             Wait(0, 1, 41, "mbarrier.try_wait.parity.b64 p, [%r1], 0;", mb.describe(0, 8)),
             Wait(0, 2, 77, "bar.sync 1, 128;", nb.describe(0, 1))]
    err = deadlock_error(waits, live_warps=3)
    assert isinstance(err, DeadlockError) and err.waits == waits
    msg = str(err)
    assert "all 3 live warps wait" in msg
    assert "tx-count 4096 bytes outstanding" in msg and "1 of 1 arrivals" in msg
    assert "CTA 0 warp 1, line 41: mbarrier.try_wait" in msg
    assert "bar 1: 32 of 128 threads arrived" in msg and "line 77: bar.sync 1, 128;" in msg
    assert msg.count("waiting on") == 2
    with pytest.raises(OperandError):
        deadlock_error([])


def test_step_guard_names_the_hot_line():
    g = StepGuard(limit=10)
    for _ in range(4):
        g.tick(2, line=12)
    g.tick(1, line=3)
    with pytest.raises(StepLimitExceeded, match="line 12 \\(10 steps\\)"):
        g.tick(2, line=12)
