"""Miscellaneous instructions (PTX ISA 9.7.19): brkpt, nanosleep, pmevent, trap, setmaxnreg.

Expected values come from (a) ptxas 13.0 verdicts recorded below (and re-checked live when ptxas
is installed), (b) H200 measurements recorded below (programs in docs/misc.md), (c) the spec text,
with the arithmetic worked by hand in the test.
"""
import shutil
import subprocess
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptxsim.errors import (BreakpointTrap, DeadlockError, OperandError, PtxValidationError,
                           SetmaxnregIgnored, TrapError, TrapExecuted, UndefinedBehavior)
from ptxsim.isa import misc
from ptxsim.isa.misc import MiscState

PTXAS = shutil.which("ptxas")

# --------------------------------------------------------------------- ptxas 13.0 verdicts
# (target, .version, .maxnreg or None, instruction(s), ptxas accepts, scope)
# scope "insn": decided by the instruction alone, so misc.check must agree;
# "module": a .target/.version pairing or a whole-program register check (C7406) that is not
# the instruction's legality; the live test re-checks those against ptxas too.
SMR = "setmaxnreg.{}.sync.aligned.u32 {};"
VERDICTS = [
    # setmaxnreg (9.7.19.5)
    ("sm_90a", "8.0", None, SMR.format("inc", 192), True, "insn"),   # info C7508: ignored
    ("sm_90a", "8.0", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_100a", "8.6", 128, SMR.format("dec", 64), True, "insn"),
    ("sm_90", "8.0", 128, SMR.format("dec", 64), False, "insn"),     # not on sm_90
    ("sm_90a", "8.0", 128, SMR.format("dec", 60), False, "insn"),    # not a multiple of 8
    ("sm_90a", "8.0", 128, SMR.format("dec", 16), False, "insn"),    # below 24
    ("sm_90a", "8.0", 128, SMR.format("inc", 264), False, "insn"),   # above 256
    ("sm_90a", "8.0", 128, SMR.format("inc", 256), True, "insn"),
    ("sm_90a", "8.0", 128, SMR.format("dec", 24), True, "insn"),
    ("sm_90a", "8.0", 128, SMR.format("inc", "0xC0"), True, "insn"),
    ("sm_90a", "8.0", 128, SMR.format("inc", -8), False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.u32 192;", False, "insn"),      # .aligned missing
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.aligned.u32 192;", False, "insn"),   # .sync missing
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.aligned.sync.u32 192;", True, "insn"),  # any order
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned.s32 192;", True, "insn"),  # ptxas > spec
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned.b32 192;", False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned.u64 192;", False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned 192;", False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.sync.aligned.u32 192;", False, "insn"),  # no action
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.dec.sync.aligned.u32 192;", False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned.u32 r1;", False, "insn"),
    ("sm_90a", "8.0", 128, "setmaxnreg.inc.sync.aligned.u32 192, 8;", False, "insn"),
    ("sm_90a", "8.0", 128, "@p setmaxnreg.inc.sync.aligned.u32 192;", True, "insn"),
    ("sm_90a", "7.8", 128, SMR.format("inc", 192), False, "insn"),   # needs PTX ISA 8.0
    ("sm_100f", "8.8", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_103f", "8.8", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_103a", "8.8", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_100", "8.8", 128, SMR.format("inc", 192), False, "insn"),
    ("sm_120a", "8.7", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_120f", "8.8", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_121a", "8.8", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_110a", "9.0", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_110f", "9.0", 128, SMR.format("inc", 192), True, "insn"),
    ("sm_89", "8.0", 128, SMR.format("inc", 192), False, "insn"),
    ("sm_100f", "8.7", 128, SMR.format("inc", 192), False, "module"),  # sm_100f needs PTX 8.8
    ("sm_90a", "8.0", 128, SMR.format("dec", 200), False, "module"),  # C7406: above .maxnreg
    ("sm_90a", "8.0", 128, SMR.format("inc", 64), True, "module"),    # undefined at run time
    ("sm_90a", "8.0", 128, SMR.format("dec", 64) + " " + SMR.format("dec", 96), True, "module"),
    # brkpt (9.7.19.1)
    ("sm_90a", "8.0", None, "brkpt;", True, "insn"),
    ("sm_90a", "8.0", None, "@p brkpt;", True, "insn"),
    ("sm_90a", "8.0", None, "brkpt 1;", False, "insn"),
    ("sm_90a", "8.0", None, "brkpt.u32;", False, "insn"),
    ("sm_100a", "8.6", None, "brkpt;", True, "insn"),
    # trap (9.7.19.4)
    ("sm_90a", "8.0", None, "trap;", True, "insn"),
    ("sm_90a", "8.0", None, "@!p trap;", True, "insn"),
    ("sm_90a", "8.0", None, "trap 0;", False, "insn"),
    ("sm_90a", "8.0", None, "trap.u32;", False, "insn"),
    ("sm_100a", "8.6", None, "trap;", True, "insn"),
    # nanosleep (9.7.19.2)
    ("sm_90a", "8.0", None, "nanosleep.u32 r1;", True, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u32 42;", True, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u32 0;", True, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u32 0xFFFFFFFF;", True, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u32 4294967296;", True, "insn"),  # low 32 bits: RZ
    ("sm_90a", "8.0", None, "nanosleep.u32 -1;", True, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.s32 r1;", False, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.b32 r1;", False, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u64 r1;", False, "insn"),
    ("sm_90a", "8.0", None, "nanosleep r1;", False, "insn"),
    ("sm_90a", "8.0", None, "nanosleep.u32 r1, r2;", False, "insn"),
    ("sm_90a", "8.0", None, "@p nanosleep.u32 r1;", True, "insn"),
    ("sm_75", "6.3", None, "nanosleep.u32 r1;", True, "insn"),
    ("sm_100a", "8.6", None, "nanosleep.u32 r1;", True, "insn"),
    # pmevent (9.7.19.3)
    ("sm_90a", "8.0", None, "pmevent 1;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent 0;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent 15;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent 16;", False, "insn"),
    ("sm_90a", "8.0", None, "pmevent -1;", False, "insn"),
    ("sm_90a", "8.0", None, "pmevent r1;", False, "insn"),
    ("sm_90a", "8.0", None, "pmevent.mask 0xff;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent.mask 0xffff;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent.mask 0x10000;", False, "insn"),
    ("sm_90a", "8.0", None, "pmevent.mask 0;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent.mask r1;", False, "insn"),
    ("sm_90a", "8.0", None, "pmevent.u32 1;", False, "insn"),
    ("sm_90a", "8.0", None, "@p pmevent 7;", True, "insn"),
    ("sm_90a", "8.0", None, "pmevent 1, 2;", False, "insn"),
    ("sm_100a", "8.6", None, "pmevent.mask 0xff;", True, "insn"),
    ("sm_120a", "8.7", None, "pmevent 3;", True, "insn"),
]


def split(text: str):
    """'@p setmaxnreg.inc.sync.aligned.u32 0xC0;' -> ('setmaxnreg', ('.inc', ...), (192,))."""
    text = text.strip().rstrip(";")
    if text.startswith("@"):
        text = text.split(None, 1)[1]
    head, _, rest = text.partition(" ")
    opcode, *quals = head.split(".")
    ops = []
    for tok in filter(None, (t.strip() for t in rest.split(","))):
        try:
            ops.append(int(tok, 0))
        except ValueError:
            ops.append(tok)
    return opcode, tuple("." + q for q in quals), tuple(ops)


@pytest.mark.parametrize("target,version,maxnreg,body,ok,scope",
                         [v for v in VERDICTS if v[5] == "insn"])
def test_check_agrees_with_ptxas(target, version, maxnreg, body, ok, scope):
    opcode, quals, ops = split(body)
    if ok:
        misc.check(opcode, quals, ops, target, version)
    else:
        with pytest.raises(PtxValidationError):
            misc.check(opcode, quals, ops, target, version)


def _assemble(target, version, maxnreg, body, tmp_path):
    src = "\n".join([f".version {version}", f".target {target}", ".address_size 64",
                     ".visible .entry k()" + (f" .maxnreg {maxnreg}" if maxnreg else ""), "{",
                     ".reg .b32 r<4>;", ".reg .pred p;", body, "ret;", "}", ""])
    path = tmp_path / "k.ptx"
    path.write_text(src)
    out = subprocess.run([PTXAS, f"-arch={target}", str(path), "-o", "/dev/null"],
                         capture_output=True, text=True)
    return out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
def test_recorded_verdicts_still_hold_live(tmp_path):
    wrong = []
    for target, version, maxnreg, body, ok, _ in VERDICTS:
        got, log = _assemble(target, version, maxnreg, body, tmp_path)
        if got != ok:
            wrong.append((target, version, body, ok, log.strip()[:200]))
    assert not wrong


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
def test_ptxas_ignores_setmaxnreg_without_entry_register_count(tmp_path):
    # 9.7.19.5: "Otherwise, the setmaxnreg instruction may have no effect."  ptxas says so.
    ok, log = _assemble("sm_90a", "8.0", None, SMR.format("inc", 192), tmp_path)
    assert ok and "C7508" in log and "ignored" in log
    ok, log = _assemble("sm_90a", "8.0", 128, SMR.format("inc", 192), tmp_path)
    assert ok and "C7508" not in log


# --------------------------------------------------------------------- legality table, spec
def test_setmaxnreg_target_notes_transcribed():
    # 9.7.19.5 Target ISA notes, line by line.
    legal = [("sm_90a", "8.0"), ("sm_100a", "8.6"), ("sm_101a", "8.6"), ("sm_120a", "8.7"),
             ("sm_100f", "8.8"), ("sm_103f", "8.8"), ("sm_103a", "8.8"), ("sm_101f", "8.8"),
             ("sm_120f", "8.8"), ("sm_121f", "8.8"), ("sm_121a", "8.8"), ("sm_110a", "9.0"),
             ("sm_110f", "9.0")]
    # (sm_110a/f before PTX 9.0 are not targets at all: that is the .target check's business)
    illegal = [("sm_90", "8.0"), ("sm_100", "8.8"), ("sm_89", "8.0"), ("sm_103a", "8.7"),
               ("sm_121a", "8.7"), ("sm_103f", "8.7"), ("sm_120", "8.7"), ("sm_80", "8.0"),
               ("sm_101", "8.6"), ("sm_121", "8.8")]
    for t, v in legal:
        misc.check("setmaxnreg", (".dec", ".sync", ".aligned", ".u32"), (64,), t, v)
    for t, v in illegal:
        with pytest.raises(PtxValidationError, match="not supported on target"):
            misc.check("setmaxnreg", (".dec", ".sync", ".aligned", ".u32"), (64,), t, v)


def test_version_and_target_notes_of_the_other_instructions():
    # brkpt: PTX 1.0, sm_11+; nanosleep: PTX 6.3, sm_70+; pmevent: 1.4, all targets;
    # pmevent.mask: 3.0, sm_20+; trap: 1.0, all targets.
    misc.check("brkpt", (), (), "sm_11", "1.0")
    with pytest.raises(PtxValidationError, match="sm_11 or higher"):
        misc.check("brkpt", (), (), "sm_10", "1.0")
    misc.check("nanosleep", (".u32",), ("r",), "sm_70", "6.3")
    with pytest.raises(PtxValidationError, match="PTX ISA 6.3"):
        misc.check("nanosleep", (".u32",), ("r",), "sm_70", "6.2")
    with pytest.raises(PtxValidationError, match="sm_70 or higher"):
        misc.check("nanosleep", (".u32",), ("r",), "sm_62", "6.3")
    misc.check("pmevent", (), (3,), "sm_10", "1.4")
    with pytest.raises(PtxValidationError, match="PTX ISA 1.4"):
        misc.check("pmevent", (), (3,), "sm_10", "1.3")
    misc.check("pmevent", (".mask",), (3,), "sm_20", "3.0")
    with pytest.raises(PtxValidationError, match="PTX ISA 3.0"):
        misc.check("pmevent", (".mask",), (3,), "sm_20", (2, 3))
    with pytest.raises(PtxValidationError, match="sm_20 or higher"):
        misc.check("pmevent", (".mask",), (3,), "sm_13", "3.0")
    misc.check("trap", (), (), "sm_10", "1.0")
    for bad_target in ("sm100a", "compute", "sm_100x"):
        with pytest.raises(PtxValidationError, match="unknown target"):
            misc.check("trap", (), (), bad_target)
    with pytest.raises(PtxValidationError, match="malformed PTX ISA version"):
        misc.check("trap", (), (), "sm_90a", "eight")
    with pytest.raises(PtxValidationError, match="not a miscellaneous instruction"):
        misc.check("exit")


# --------------------------------------------------------------------------------- trap
def test_trap_aborts_naming_threads():
    s = MiscState(4)
    with pytest.raises(TrapExecuted) as e:
        misc.trap(s, [37, 38, 100])
    assert isinstance(e.value, TrapError)
    assert e.value.threads == (37, 38, 100)
    assert "warp 1 lanes 5-6; warp 3 lane 4" in str(e.value)
    assert isinstance(s.events[-1], misc.Trap)
    assert s.events[-1].threads.tolist() == [37, 38, 100]
    assert s.events[-1].warps.tolist() == [1, 3]


def test_trap_with_no_active_thread_does_nothing():
    s = MiscState(2)
    assert misc.trap(s, np.zeros(64, bool)) is None
    assert misc.trap(s, []) is None
    assert s.events == []


def test_trap_active_mask_forms_agree():
    mask = np.zeros(64, bool)
    mask[[3, 40]] = True
    for active in (mask, np.array([3, 40]), [40, 3]):
        with pytest.raises(TrapExecuted) as e:
            misc.trap(MiscState(2), active)
        assert e.value.threads == (3, 40)


@pytest.mark.parametrize("active", [np.ones(32, bool), np.array([64]), np.array([-1]),
                                    np.array([0.5]), np.ones((2, 32), bool)])
def test_bad_active_masks_are_named_errors(active):
    with pytest.raises(OperandError):
        misc.trap(MiscState(2), active)


# -------------------------------------------------------------------------------- brkpt
def test_brkpt_without_debugger_aborts_like_trap():
    # H200: brkpt and trap both assemble to BPT.TRAP 0x1 and end the launch with
    # 'unspecified launch failure' (docs/misc.md, measurement 1).
    s = MiscState(2)
    with pytest.raises(BreakpointTrap) as e:
        misc.brkpt(s, [5])
    assert isinstance(e.value, TrapExecuted) and e.value.threads == (5,)
    assert "warp 0 lane 5" in str(e.value)
    assert isinstance(s.events[-1], misc.Breakpoint)


def test_brkpt_under_a_logging_debugger_resumes():
    s = MiscState(2, breakpoints="resume")
    ev = misc.brkpt(s)
    assert ev is s.events[-1]
    assert ev.threads.tolist() == list(range(64))


# ---------------------------------------------------------------------------- nanosleep
# H200 (sm_90a), %globaltimer delta around one nanosleep.u32 of a full warp (ns): t -> measured.
# The t = 0 row is the measuring overhead.
H200_SLEEP_NS = {0: 192, 100: 192, 1000: 448, 10_000: 2720, 100_000: 53_856, 500_000: 58_720,
                 1_000_000: 96_928, 1_048_576: 864_512, 1_100_000: 552_544, 2_000_000: 157_280,
                 10_000_000: 246_560, 0xFFFFFFFF: 625_184}


def test_nanosleep_bound_holds_for_every_measured_delay():
    # 9.7.19.2: actual sleep in [0, 2t], at most 1 ms.  Hand values of the bound:
    hand = {0: 0, 100: 200, 1000: 2000, 10_000: 20_000, 100_000: 200_000, 500_000: 1_000_000,
            1_000_000: 1_000_000, 0xFFFFFFFF: 1_000_000}
    for t, bound in hand.items():
        ev = misc.nanosleep(MiscState(1), t)
        assert (ev.bound_ns == bound).all()
    overhead = H200_SLEEP_NS[0]
    for t, ns in H200_SLEEP_NS.items():
        ev = misc.nanosleep(MiscState(1), t)
        assert ns - overhead <= ev.bound_ns[0], t
        assert (0 <= ev.duration_ns).all() and (ev.duration_ns <= ev.bound_ns).all()


def test_nanosleep_warp_wakes_together_at_its_shortest_delay():
    # H200: lanes 0-15 t=1000, lanes 16-31 t=200000 -> every lane measured 928 ns;
    # lane 0 t=0, lanes 1-31 t=500000 -> every lane 192 ns (the overhead).
    t = np.r_[np.full(16, 1000), np.full(16, 200_000)].astype(np.uint32)
    ev = misc.nanosleep(MiscState(1), t)
    assert ev.duration_ns.tolist() == [1000] * 32
    assert ev.requested_ns.tolist() == t.tolist()
    assert ev.bound_ns.tolist() == [2000] * 16 + [400_000] * 16
    t = np.r_[0, np.full(31, 500_000)].astype(np.uint32)
    assert misc.nanosleep(MiscState(1), t).duration_ns.tolist() == [0] * 32


def test_nanosleep_per_warp_durations_and_inactive_lanes():
    s = MiscState(2)
    t = np.r_[np.full(32, 5000), np.full(32, 3_000_000)].astype(np.uint32)
    active = np.ones(64, bool)
    active[0] = False                      # an exited lane does not sleep
    t[0] = 7                               # ...and does not shorten the warp's sleep
    ev = misc.nanosleep(s, t, active)
    assert ev.threads.tolist() == list(range(1, 64))
    assert ev.duration_ns.tolist() == [5000] * 31 + [1_000_000] * 32
    assert s.slept_ns[0] == 0 and s.slept_ns[1] == 5000 and s.slept_ns[63] == 1_000_000
    misc.nanosleep(s, 10, np.arange(32))
    assert s.slept_ns[1] == 5010 and s.slept_ns[63] == 1_000_000


def test_nanosleep_immediate_keeps_low_32_bits():
    # SASS (ptxas 13.0, H200 run): 4294967296 -> NANOSLEEP RZ; -2 -> NANOSLEEP 0xfffffffe.
    assert misc.nanosleep(MiscState(1), 4294967296).requested_ns[0] == 0
    assert misc.nanosleep(MiscState(1), -2).requested_ns[0] == 0xFFFFFFFE
    assert misc.nanosleep(MiscState(1), -2).duration_ns[0] == 1_000_000


def test_nanosleep_register_operand_errors():
    with pytest.raises(OperandError, match="shape"):
        misc.nanosleep(MiscState(2), np.zeros(32, np.uint32))
    with pytest.raises(OperandError, match="32-bit"):
        misc.nanosleep(MiscState(1), np.full(32, 1 << 33, np.int64))
    with pytest.raises(OperandError, match="32-bit"):
        misc.nanosleep(MiscState(1), np.zeros(32, np.float64))
    ev = misc.nanosleep(MiscState(1), np.full(32, -1, np.int32))   # int32 bits, reinterpreted
    assert ev.requested_ns[0] == 0xFFFFFFFF


# ------------------------------------------------------------------------------ pmevent
def test_pmevent_index_is_a_one_hot_mask():
    # SASS (H200 run): 'pmevent 1' -> PMTRIG 0x2, 'pmevent.mask 0x5' -> PMTRIG 0x5.
    s = MiscState(2)
    assert misc.pmevent(s, 1).mask == 0x2
    assert misc.pmevent(s, 0x5, mask=True).indices == (0, 2)


def test_pmevent_counts_once_per_executing_warp():
    # CUDA __prof_trigger / prof_trigger_0x: "Increments per warp".
    s = MiscState(3)
    misc.pmevent(s, 7, np.arange(20, 40))          # threads of warps 0 and 1
    misc.pmevent(s, 0x8081, np.arange(64, 96), mask=True)   # warp 2: events 0, 7, 15
    expected = np.zeros(16, np.int64)
    expected[7] = 2 + 1
    expected[0] = 1
    expected[15] = 1
    assert s.pm_counters.tolist() == expected.tolist()
    misc.pmevent(s, 0, mask=True)                  # triggers no event
    assert s.pm_counters.tolist() == expected.tolist()
    assert s.events[-1].indices == ()
    assert misc.pmevent(s, 3, np.zeros(96, bool)) is None


def test_pmevent_operand_errors():
    with pytest.raises(PtxValidationError, match=r"outside \[0, 15\]"):
        misc.pmevent(MiscState(1), 16)
    with pytest.raises(PtxValidationError, match=r"outside \[0, 65535\]"):
        misc.pmevent(MiscState(1), 0x10000, mask=True)
    with pytest.raises(PtxValidationError, match="immediate"):
        misc.pmevent(MiscState(1), "r1")


# --------------------------------------------------------------------------- setmaxnreg
WG = [np.arange(128 * g, 128 * (g + 1)) for g in range(8)]


def _inc(s, n, active=None, **kw):
    return misc.setmaxnreg(s, ".inc", n, active, **kw)


def _dec(s, n, active=None, **kw):
    return misc.setmaxnreg(s, ".dec", n, active, **kw)


def test_h200_dec_then_inc_across_warpgroups():
    # H200, .maxnreg 128, 256 threads: wg1 dec 64 and wg0 inc 192 both complete.
    # Pool by hand: wg1 releases (128-64)*128 threads = 8192, wg0 takes (192-128)*128 = 8192.
    s = MiscState(8, maxnreg=128)
    ev = _dec(s, 64, WG[1])
    assert s.pool == 8192 and ev.before.tolist() == [128] * 4 and ev.after.tolist() == [64] * 4
    ev = _inc(s, 192, WG[0])
    assert s.pool == 0 and ev.blocked.size == 0
    assert s.nreg.tolist() == [192] * 4 + [64] * 4


def test_h200_inc_from_empty_pool_blocks_forever():
    # H200: one warpgroup, .maxnreg 128, inc 192 or 256 -> the kernel hangs (pool starts empty).
    for n in (192, 256):
        s = MiscState(4, maxnreg=128)
        with pytest.raises(DeadlockError, match="needs .* more registers"):
            _inc(s, n)
        assert s.nreg.tolist() == [128] * 4 and s.pool == 0 and s.events == []


def test_h200_registers_of_exited_warps_do_not_return_to_the_pool():
    # H200: 256 threads, wg1 returns at once, wg0 inc 192 -> hangs.
    s = MiscState(8, maxnreg=128)
    with pytest.raises(DeadlockError):
        _inc(s, 192, WG[0])


def test_h200_a_warpgroup_is_granted_whole_or_not_at_all():
    # H200: wg1 dec 64 (pool 8192), wg0 inc 256 needs (256-128)*128 = 16384. Per warp 4096:
    # two warps would fit, yet none of wg0's four warps got past the instruction.
    s = MiscState(8, maxnreg=128)
    _dec(s, 64, WG[1])
    ev = _inc(s, 256, WG[0], complete=False)
    assert ev.blocked.tolist() == [0, 1, 2, 3]
    assert s.nreg.tolist() == [128] * 4 + [64] * 4 and s.pool == 8192
    # one warp arriving alone is blocked as well: its warpgroup's whole increase is missing
    ev = _inc(s, 256, np.arange(32), complete=False)
    assert ev.blocked.tolist() == [0]
    with pytest.raises(DeadlockError):
        _inc(s, 256, WG[0])


def test_h200_dec_sync_inc_back_within_a_warpgroup():
    # H200 mode 3: dec 64; bar.sync; inc 128 -> completes. Pool: +8192 then -8192.
    s = MiscState(4, maxnreg=128)
    _dec(s, 64)
    assert s.pool == 8192
    s.warpgroup_sync()
    _inc(s, 128)
    assert s.pool == 0 and s.nreg.tolist() == [128] * 4


def test_h200_chained_sequences_complete():
    # H200 mode 6: wg1 {dec 64; sync; dec 32}, wg0 {inc 192; sync; inc 200} -> completes.
    # Pool by hand: +64*128 = 8192; wg0 -8192 -> 0; wg1 +32*128 = 4096; wg0 -8*128 = 1024 -> 3072.
    s = MiscState(8, maxnreg=128)
    _dec(s, 64, WG[1])
    _inc(s, 192, WG[0])
    s.warpgroup_sync()
    _dec(s, 32, WG[1])
    assert s.pool == 4096
    _inc(s, 200, WG[0])
    assert s.pool == 3072
    assert s.nreg.tolist() == [200] * 4 + [32] * 4
    # H200 mode 8: wg1 dec 64, wg0 inc 184: pool 8192 - 56*128 = 1024.
    s = MiscState(8, maxnreg=128)
    _dec(s, 64, WG[1])
    _inc(s, 184, WG[0])
    assert s.pool == 1024


def test_h200_entry_count_is_held_in_steps_of_eight():
    # H200, .maxnreg 100 (ptxas: 'Used 100 registers'):
    #   128 threads, inc 104 -> completes (nothing taken from the empty pool): 100 is held as 104;
    #   128 threads, inc 112 -> hangs (needs (112-104)*128 = 1024 from an empty pool);
    #   256 threads, wg1 dec 24, wg0 inc 184 -> completes: frees (104-24)*128 = 10240, takes
    #   (184-104)*128 = 10240 (with 100 held it would need 10752 > 9728 and hang);
    #   256 threads, wg1 dec 24, wg0 inc 192 -> hangs (needs 11264 > 10240).
    assert [misc.entry_budget(n) for n in (100, 128, 20, 255, None)] == [104, 128, 24, 256, 0]
    s = MiscState(4, maxnreg=100)
    _inc(s, 104)
    assert s.pool == 0 and s.nreg.tolist() == [104] * 4
    with pytest.raises(DeadlockError):
        _inc(MiscState(4, maxnreg=100), 112)
    s = MiscState(8, maxnreg=100)
    _dec(s, 24, WG[1])
    assert s.pool == 10240
    _inc(s, 184, WG[0])
    assert s.pool == 0
    s = MiscState(8, maxnreg=100)
    _dec(s, 24, WG[1])
    with pytest.raises(DeadlockError, match="needs 11264 more registers"):
        _inc(s, 192, WG[0])


def test_inc_below_current_count_is_undefined():
    # 9.7.19.5 ".inc ... should be less than or equal to imm-reg-count. Otherwise undefined";
    # H200 mode 4 (inc 64 from 128): 'an illegal instruction was encountered'.
    s = MiscState(4, maxnreg=128)
    with pytest.raises(UndefinedBehavior, match="warp 0 holds 128"):
        _inc(s, 64)
    _inc(s, 128)                                     # equal is fine: nothing to take
    assert s.pool == 0


def test_dec_above_current_count_is_undefined():
    s = MiscState(4, maxnreg=128)
    with pytest.raises(UndefinedBehavior, match="smaller than imm-reg-count"):
        _dec(s, 136)
    _dec(s, 128)
    assert s.pool == 0


def test_partial_warp_is_undefined():
    s = MiscState(4, maxnreg=128)
    active = np.ones(128, bool)
    active[40] = False
    with pytest.raises(UndefinedBehavior, match="lanes 0-7, 9-31 of warp 1"):
        _dec(s, 64, active)


def test_not_all_warps_of_the_warpgroup_is_undefined():
    s = MiscState(4, maxnreg=128)
    with pytest.raises(UndefinedBehavior, match="not by warp\\(s\\) 3"):
        _dec(s, 64, np.arange(96))
    # a CTA of 6 warps: warpgroup 1 has only warps 4 and 5, it can never be whole
    s = MiscState(6, maxnreg=128)
    with pytest.raises(UndefinedBehavior, match="warpgroup 1 but not by warp\\(s\\) 6, 7"):
        _dec(s, 64, np.arange(128, 192))
    with pytest.raises(UndefinedBehavior, match="single warp|warpgroup 0"):
        _dec(MiscState(1, maxnreg=128), 64)


def test_second_setmaxnreg_before_sync_is_undefined():
    s = MiscState(4, maxnreg=128)
    _dec(s, 64)
    with pytest.raises(UndefinedBehavior, match="has not synchronised"):
        _dec(s, 32)
    s.warpgroup_sync(0)
    _dec(s, 32)
    assert s.nreg.tolist() == [32] * 4 and s.pool == (64 + 32) * 128


def test_executor_mode_warps_arrive_one_by_one():
    s = MiscState(4, maxnreg=128)
    for w in range(4):
        ev = _dec(s, 64, np.arange(32 * w, 32 * w + 32), complete=False)
        assert ev.warp_ids.tolist() == [w]
        assert s.pool == (w + 1) * 64 * 32
    s.warpgroup_sync()
    s.finish()


def test_executor_mode_mismatched_instructions_are_undefined():
    s = MiscState(4, maxnreg=128)
    _dec(s, 64, np.arange(32), complete=False)
    with pytest.raises(UndefinedBehavior, match="executed setmaxnreg.dec 64"):
        _dec(s, 96, np.arange(32, 64), complete=False)
    with pytest.raises(UndefinedBehavior, match="executed setmaxnreg.dec 64"):
        _inc(s, 192, np.arange(32, 64), complete=False)


def test_executor_mode_missing_warps_found_at_sync_and_exit():
    s = MiscState(8, maxnreg=128)
    _dec(s, 64, np.arange(64), complete=False)                 # warps 0, 1 of warpgroup 0
    with pytest.raises(UndefinedBehavior, match="warp\\(s\\) 0, 1 of warpgroup 0 but not by "
                                                "warp\\(s\\) 2, 3 before the warpgroup"):
        s.warpgroup_sync(0)
    s = MiscState(8, maxnreg=128)
    _dec(s, 64, np.arange(128, 160), complete=False)
    s.warpgroup_sync(0)                                         # warpgroup 0 did nothing: fine
    with pytest.raises(UndefinedBehavior, match="before the kernel exited"):
        s.finish()
    with pytest.raises(OperandError, match="warpgroup 2 does not exist"):
        s.warpgroup_sync(2)


def test_setmaxnreg_without_entry_register_count_has_no_effect():
    # 9.7.19.5 "Otherwise, the setmaxnreg instruction may have no effect"; ptxas C7508.
    s = MiscState(4)
    with pytest.warns(SetmaxnregIgnored, match="no effect"):
        ev = _inc(s, 192)
    assert ev.effective is False and s.pool == 0 and s.events == [ev]


def test_setmaxnreg_legality_errors():
    s = MiscState(4, maxnreg=128)
    for n in (16, 60, 264, -8):
        with pytest.raises(PtxValidationError):
            _dec(s, n)
    with pytest.raises(PtxValidationError, match="not supported on target sm_90"):
        _dec(s, 64, target="sm_90")
    with pytest.raises(PtxValidationError, match="PTX ISA 8.0"):
        _dec(s, 64, target="sm_90a", ptx_version="7.8")
    with pytest.raises(PtxValidationError, match=".inc or .dec"):
        misc.setmaxnreg(s, ".up", 64)
    with pytest.raises(PtxValidationError):
        misc.setmaxnreg(s, ".dec", 64, type=".b32")
    misc.setmaxnreg(s, "dec", 64, type=".s32")       # ptxas 13.0 accepts .s32
    assert s.nreg.tolist() == [64] * 4 and s.events[-1].action == ".dec"


@pytest.mark.parametrize("kw", [dict(warps=0), dict(warps=2, maxnreg=0),
                                dict(warps=2, maxnreg=256), dict(warps=2, pool=-1),
                                dict(warps=2, breakpoints="stop")])
def test_state_arguments_are_checked(kw):
    with pytest.raises(OperandError):
        MiscState(**kw)


# -------------------------------------------------------------------- executor adapter
class Regs:
    def __init__(self, **regs):
        self.regs = regs

    def read(self, name):
        return self.regs[name]


def _inst(opcode, quals=(), operands=(), predicate=None):
    return SimpleNamespace(opcode=opcode, qualifiers=quals, operands=operands,
                           predicate=predicate)


def _reg(name):
    return SimpleNamespace(name=name)


def _imm(v):
    return SimpleNamespace(value=v, text=str(v))


def test_adapter_applies_the_guard_per_thread():
    p = np.zeros(64, np.uint32)
    p[[9, 33]] = 1
    s = MiscState(2)
    inst = _inst("trap", predicate=SimpleNamespace(name="p", negated=False))
    with pytest.raises(TrapExecuted) as e:
        misc.handle_instruction(inst, Regs(p=p), "sm_100a", state=s)
    assert e.value.threads == (9, 33)
    inst = _inst("pmevent", (), (_imm(4),), SimpleNamespace(name="p", negated=True))
    assert misc.handle_instruction(inst, Regs(p=p), "sm_100a", state=s) == {}
    assert s.pm_counters[4] == 2 and s.events[-1].threads.size == 62


def test_adapter_reads_registers_and_immediates():
    s = MiscState(1, maxnreg=168)
    t = np.arange(32, dtype=np.uint32) + 100
    misc.handle_instruction(_inst("nanosleep", (".u32",), (_reg("r1"),)), Regs(r1=t), state=s)
    assert s.events[-1].duration_ns.tolist() == [100] * 32
    with pytest.raises(UndefinedBehavior, match="warpgroup 0"):
        misc.handle_instruction(_inst("setmaxnreg", (".dec", ".sync", ".aligned", ".u32"),
                                      (_imm(40),)), Regs(), state=s)
    s = MiscState(4, maxnreg=168)
    misc.handle_instruction(_inst("setmaxnreg", (".dec", ".sync", ".aligned", ".u32"),
                                  (_imm(40),)), Regs(), state=s)
    assert s.pool == (168 - 40) * 128
    misc.handle_instruction(_inst("pmevent", (".mask",), (_imm(0x3),)), Regs(), state=s)
    assert s.pm_counters[:2].tolist() == [4, 4]
    with pytest.raises(PtxValidationError, match="operand must be an immediate"):
        misc.handle_instruction(_inst("pmevent", (), (_reg("r1"),)), Regs(), state=s)
    with pytest.raises(BreakpointTrap):
        misc.handle_instruction(_inst("brkpt"), Regs(), state=s)


def test_describe_threads_is_compact():
    assert misc.describe_threads(np.arange(64)) == "warp 0 lanes 0-31; warp 1 lanes 0-31"
    assert misc.describe_threads(np.arange(0, 320, 32)).endswith("and 4 more warps")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repr(misc.nanosleep(MiscState(1), 5))


# ------------------------------------------------------------- property: register accounting
_COUNTS = st.sampled_from(range(24, 257, 8))


@given(maxnreg=st.integers(1, 255), pool=st.sampled_from([0, 1024, 8192, 65536]),
       ops=st.lists(st.tuples(st.integers(0, 1), st.sampled_from([".inc", ".dec"]), _COUNTS),
                    max_size=12))
def test_setmaxnreg_moves_registers_between_warps_and_pool(maxnreg, pool, ops):
    # Oracle written from the spec's rules (9.7.19.5) and the measured whole-warpgroup grant:
    # .dec needs held >= n and frees (held-n)*128; .inc needs held <= n and (n-held)*128 in the
    # pool, else it blocks for ever. Registers only move, so warps + pool is constant.
    s = MiscState(8, maxnreg=maxnreg, pool=pool)
    entry = max(24, (maxnreg + 7) // 8 * 8)      # held in steps of 8, at least 24 (measured)
    held, free = [entry, entry], pool
    total = 8 * 32 * entry + pool
    for wg, action, n in ops:
        if action == ".dec":
            expect = UndefinedBehavior if held[wg] < n else None
        else:
            expect = (UndefinedBehavior if held[wg] > n else
                      DeadlockError if (n - held[wg]) * 128 > free else None)
        if expect is None:
            misc.setmaxnreg(s, action, n, WG[wg])
            free += (held[wg] - n) * 128
            held[wg] = n
        else:
            with pytest.raises(expect):
                misc.setmaxnreg(s, action, n, WG[wg])
        s.warpgroup_sync()
        assert s.nreg.tolist() == [held[0]] * 4 + [held[1]] * 4
        assert s.pool == free
        assert int(s.nreg.sum()) * 32 + s.pool == total
