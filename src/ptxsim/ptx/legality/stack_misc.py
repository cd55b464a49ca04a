"""Legality of the stack-manipulation (PTX ISA 9.7.17) and miscellaneous (9.7.19) instructions.

The tables are the isa modules' (isa/stack.py FORMS, isa/misc.py FORMS: slots, operands,
immediate ranges, PTX ISA and Target ISA notes, each row with its section); this module only
picks the row and lets `Check.form` word the diagnostics. No cross-field rule of these families
lies outside the rows."""
from __future__ import annotations

from ptxsim.isa import misc as isa_misc
from ptxsim.isa import stack as isa_stack
from ptxsim.ptx.legality.common import Check

# 9.7.19.5 Target ISA notes: the one table is isa/misc.py's
SETMAXNREG = isa_misc.FORMS["setmaxnreg"].req


def stack(c: Check) -> None:                           # 9.7.17.1-3
    c.form(isa_stack.FORMS[c.i.opcode])


def misc(c: Check) -> None:                            # 9.7.19.1-5
    c.form(isa_misc.form_of(c.i.opcode, c.i.qualifiers))


RULES = {**{op: stack for op in isa_stack.FORMS}, **{op: misc for op in isa_misc.OPCODES}}
