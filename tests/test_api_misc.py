"""ptxsim.execute on the misc instructions: guards apply per thread, effects land in the state."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import TrapExecuted

if not hasattr(pytest.importorskip("ptxsim.ptx"), "parse_instruction"):
    pytest.skip("needs the PTX front end", allow_module_level=True)
from ptxsim.isa.misc import MiscState, Sleep  # noqa: E402


def _guard(threads):
    p = np.zeros(64, np.uint32)
    p[list(threads)] = 1
    return p


def test_guarded_trap_names_only_the_guarded_threads():
    # trap is not .aligned (9.7.19.4): a per-thread guard is legal; threads 3 and 40 trap.
    with pytest.raises(TrapExecuted) as exc:
        ptxsim.execute("@%p1 trap;", {"%p1": _guard([3, 40])}, target="sm_90a")
    assert exc.value.threads == (3, 40)


def test_guard_false_everywhere_traps_nobody():
    assert ptxsim.execute("@%p1 trap;", {"%p1": _guard([])}, target="sm_90a") == {}


def test_nanosleep_events_reach_the_callers_state():
    state = MiscState(warps=2)
    t = np.full(64, 100, np.uint32)
    ptxsim.execute("@!%p1 nanosleep.u32 %r1;", {"%p1": _guard(range(32)), "%r1": t},
                   target="sm_90a", state=state)
    sleeps = [e for e in state.events if isinstance(e, Sleep)]
    assert sleeps, "nanosleep left no event"
    slept = np.asarray(state.slept_ns)
    assert (slept[:32] == 0).all() and (slept[32:] > 0).all()   # only warp 1's threads slept
