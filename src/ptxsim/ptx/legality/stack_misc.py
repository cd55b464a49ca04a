"""Legality of the stack-manipulation (PTX ISA 9.7.17) and miscellaneous (9.7.19) instructions,
transcribed from shared/spec/tcgen05-chapter-stack-video-misc.txt."""
from __future__ import annotations

from ptxsim.ptx.legality.common import Check, Slot
from ptxsim.isa import stack as isa_stack
from ptxsim.isa.misc import FORMS, SETMAXNREG_TARGETS
from ptxsim.ptx.targets import ANY, Req

def _notes(form: str) -> Req:
    """The Target ISA notes of a 9.7.19 form, from the one table (isa/misc.py FORMS)."""
    return Req(*FORMS[form].targets) if FORMS[form].targets else ANY


STACK_TYPE = Slot.of(".type", ".u32 .u64", True)
SM52 = isa_stack.TARGETS            # sm_52 (9.7.17 Target ISA notes, isa/stack.py)


def _width(c: Check, q: dict) -> str:
    return "r64" if q.get(".type") == ".u64" else "r32"


def stacksave(c: Check) -> None:                       # 9.7.17.1
    s = "9.7.17.1"
    q = c.slots([STACK_TYPE], s)
    if c.count(1):
        c.operand(0, _width(c, q), "d")
    c.since(isa_stack.MIN_PTX, "stacksave", s)
    c.target(SM52, "stacksave", s)


def stackrestore(c: Check) -> None:                    # 9.7.17.2
    s = "9.7.17.2"
    q = c.slots([STACK_TYPE], s)
    if c.count(1):
        c.operand(0, _width(c, q), "a")
    c.since(isa_stack.MIN_PTX, "stackrestore", s)
    c.target(SM52, "stackrestore", s)


def alloca(c: Check) -> None:                          # 9.7.17.3
    s = "9.7.17.3"
    q = c.slots([STACK_TYPE], s)
    if c.count(2, 3, form="ptr, size{, immAlign}"):
        w = _width(c, q)
        c.operand(0, w, "ptr")
        c.operand(1, w + "|imm", "size")
        if len(c.i.operands) == 3 and c.operand(2, "imm", "immAlign"):
            v = c.imm(2)
            # "immAlign ... must be a power of 2 and must not exceed 2^23"
            if v is not None and (v <= 0 or v & (v - 1) or v > 1 << 23):
                c.err(f"immAlign = {v} of alloca must be a power of 2 not exceeding 2^23 ({s})")
    c.since(isa_stack.MIN_PTX, "alloca", s)
    c.target(SM52, "alloca", s)


def brkpt(c: Check) -> None:                           # 9.7.19.1
    s = "9.7.19.1"
    c.slots([], s)
    c.count(0)
    c.target(_notes("brkpt"), "brkpt", s)


def nanosleep(c: Check) -> None:                       # 9.7.19.2
    s = "9.7.19.2"
    c.slots([Slot.of(".type", ".u32", True)], s)
    if c.count(1):
        c.operand(0, "r32|imm", "t")
    c.since(FORMS["nanosleep"].since, "nanosleep", s)
    c.target(_notes("nanosleep"), "nanosleep", s)


def pmevent(c: Check) -> None:                         # 9.7.19.3
    s = "9.7.19.3"
    q = c.slots([Slot.of(".mask", ".mask")], s)
    if c.count(1) and c.operand(0, "imm", "a"):
        if q[".mask"]:
            c.imm_range(0, 0, 0xFFFF, "a (16-bit event mask)", s)
        else:
            c.imm_range(0, 0, 15, "a (event index)", s)
    form = "pmevent.mask" if q[".mask"] else "pmevent"
    c.since(FORMS[form].since, c.i.mnemonic, s)
    c.target(_notes(form), form, s)


def trap(c: Check) -> None:                            # 9.7.19.4
    c.slots([], "9.7.19.4")
    c.count(0)


# 9.7.19.5 Target ISA notes: the one table is isa/misc.py's (SETMAXNREG_TARGETS)
SETMAXNREG = Req(*SETMAXNREG_TARGETS)


def setmaxnreg(c: Check) -> None:                      # 9.7.19.5
    s = "9.7.19.5"
    c.slots([Slot.of(".action", ".inc .dec", True), Slot.of(".sync", ".sync", True),
             Slot.of(".aligned", ".aligned", True),
             # the spec lists .u32 only; ptxas 13.0 also accepts .s32 (tests/isa/test_misc.py)
             Slot.of(".type", ".u32 .s32", True)], s)
    if c.count(1) and c.operand(0, "imm", "imm-reg-count"):
        v = c.imm(0)
        # "must be in the range 24 to 256 (both inclusive) and must be a multiple of 8"
        if v is not None and not (24 <= v <= 256 and v % 8 == 0):
            c.err(f"imm-reg-count = {v} of setmaxnreg must be a multiple of 8 in [24, 256] ({s})")
    c.since((8, 0), "setmaxnreg", s)
    c.target(SETMAXNREG, "setmaxnreg", s)


RULES = {"stacksave": stacksave, "stackrestore": stackrestore, "alloca": alloca, "brkpt": brkpt,
         "nanosleep": nanosleep, "pmevent": pmevent, "trap": trap, "setmaxnreg": setmaxnreg}
