"""The vocabulary of the legality tables: a PTX ISA syntax block written as data.

A `Form` is one syntax line of the spec ("setmaxnreg.action.sync.aligned.u32 imm-reg-count;")
with its qualifier `Slot`s, its `Operand`s (kind, and for an immediate its `Imm` range), the
PTX ISA version that introduced it (`since`) and its Target ISA notes (`Req`, from
ptxsim.isa.targets). Each instruction family transcribes its forms once, in its isa module, with
the spec section; two consumers read the same rows:

* the isa module itself, through `check_form` (raises PtxValidationError on the first problem,
  before anything is computed), and
* the front-end validator (ptxsim.ptx.legality.common.Check.form), which matches a parsed
  Instruction against the same Form and words one diagnostic per problem with its location.

This module has no parser dependency: operands are plain values here (an int for an immediate,
a str for a register name), and `match_slots` returns problems as data for each caller to word.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import PtxValidationError
from ptxsim.isa.targets import ANY, Req, parse_target, parse_version, vstr  # noqa: F401

__all__ = ["Slot", "Imm", "Operand", "Form", "SlotProblem", "match_slots", "count_problem",
           "check_form", "check_notes", "register_kinds", "Req", "ANY"]


@dataclass(frozen=True)
class Slot:
    """One qualifier position of a syntax line: `.shape = { .16x64b, ... }`. At most one of
    `values` (in the spec's order) may be written, in any order among the slots, as ptxas
    accepts; `required`: one must be."""
    name: str
    values: tuple
    required: bool = False

    @staticmethod
    def of(name: str, values, required: bool = False) -> "Slot":
        vals = values.split() if isinstance(values, str) else values
        if isinstance(vals, (set, frozenset)):
            vals = sorted(vals)
        return Slot(name, tuple(dict.fromkeys(vals)), required)


@dataclass(frozen=True)
class Imm:
    """The legal values of an immediate operand: `lo` <= v <= `hi`, a multiple of `step`, and a
    power of two when `pow2`. `what` names the value in diagnostics ("event index")."""
    lo: int
    hi: int
    step: int = 1
    pow2: bool = False
    what: str = ""

    def ok(self, v: int) -> bool:
        v = int(v)
        if self.pow2 and (v <= 0 or v & (v - 1)):
            return False
        return self.lo <= v <= self.hi and v % self.step == 0

    def rule(self) -> str:
        """The constraint in words, as the diagnostics state it."""
        if self.pow2 and self.lo > 1:
            return f"a power of 2 in [{self.lo}, {self.hi}]"
        if self.pow2:
            return f"a power of 2 not exceeding 2^{self.hi.bit_length() - 1}"
        if self.step > 1:
            return f"a multiple of {self.step} in [{self.lo}, {self.hi}]"
        return f"in [{self.lo}, {self.hi}]"


# Operand kinds, '|'-separated: r16 r32 r64 reg pred imm addr vec; "rT" is a register of the
# width the `.type` slot names (.u32 -> r32, .u64 -> r64; r32 when the slot is empty).
REGISTER_KINDS = ("r16", "r32", "r64", "reg", "pred", "rT")
TYPE_WIDTH = {".u32": "r32", ".s32": "r32", ".b32": "r32", ".u64": "r64", ".s64": "r64",
              ".b64": "r64"}


@dataclass(frozen=True)
class Operand:
    """One operand of a syntax line: the spec's name, the kinds it may be, the range when it is
    an immediate, and whether it may be left out (`{, immAlign}`)."""
    name: str
    kinds: str
    imm: Imm | None = None
    optional: bool = False


def register_kinds(kinds: str, chosen: dict) -> str:
    """`kinds` with "rT" resolved against the qualifiers matched to slots (`chosen`)."""
    if "rT" not in kinds:
        return kinds
    return kinds.replace("rT", TYPE_WIDTH.get(chosen.get(".type"), "r32"))


@dataclass(frozen=True)
class Form:
    """One instruction form (a syntax line of the spec), with its section in `source`."""
    name: str
    opcode: str
    slots: tuple = ()
    operands: tuple = ()
    since: tuple = (1, 0)
    req: Req = ANY
    source: str = ""

    @property
    def operand_counts(self) -> tuple[int, int]:
        need = sum(1 for o in self.operands if not o.optional)
        return need, len(self.operands)

    @property
    def syntax(self) -> str:
        """The operand list as the spec writes it: 'ptr, size{, immAlign}'."""
        out = ""
        for k, o in enumerate(self.operands):
            sep = ", " if k else ""
            out += "{" + sep + o.name + "}" if o.optional else sep + o.name
        return out


@dataclass(frozen=True)
class SlotProblem:
    """What `match_slots` found wrong: kind "unknown" (no slot takes `qualifier`), "repeated"
    (its slot already holds `previous`) or "missing" (a required `slot` is empty)."""
    kind: str
    slot: Slot | None = None
    qualifier: str | None = None
    previous: str | None = None

    def message(self, name: str, section: str) -> str:
        """The diagnostic, as the validator words it (`name`: the instruction)."""
        if self.kind == "unknown":
            return f"qualifier '{self.qualifier}' is not valid for {name} ({section})"
        if self.kind == "repeated":
            return (f"qualifier '{self.qualifier}' conflicts with '{self.previous}' "
                    f"(only one {self.slot.name} allowed for {name}, {section})")
        opts = ", ".join(sorted(self.slot.values))
        return f"{name} requires a {self.slot.name} qualifier (one of {opts}) ({section})"


def count_problem(name: str, n: int, lo: int, hi: int | None = None, form: str = "") -> str | None:
    """The diagnostic for `n` operands where `lo`..`hi` are legal (None when legal)."""
    hi = lo if hi is None else hi
    if lo <= n <= hi:
        return None
    want = str(lo) if lo == hi else f"{lo} to {hi}"
    return f"{name} takes {want} operands{(' (' + form + ')') if form else ''}, got {n}"


# flags ptxas 13.5 accepts written twice (`bar.sync.sync`, `sin.approx.approx`,
# `add.sat.sat.s32`); any other repeated qualifier is "Multiple ... modifiers specified"
REPEATABLE = frozenset({".sync", ".approx", ".sat", ".shiftamt", ".relu", ".uni"})


def match_slots(slots, qualifiers) -> tuple[dict, list[SlotProblem]]:
    """Match every qualifier to one slot (order-free). Returns slot name -> qualifier (None when
    empty) and the problems, in the order a reader meets them."""
    got: dict = {s.name: None for s in slots}
    problems: list[SlotProblem] = []
    for q in qualifiers:
        owners = [s for s in slots if q in s.values]
        if not owners:
            problems.append(SlotProblem("unknown", None, q))
            continue
        free = [s for s in owners if got[s.name] is None]
        if not free:
            if q in REPEATABLE and got[owners[0].name] == q:
                continue            # a flag written twice (`.sync.sync`): ptxas 13.5 accepts it
            problems.append(SlotProblem("repeated", owners[0], q, got[owners[0].name]))
            continue
        got[free[0].name] = q
    for s in slots:
        if s.required and got[s.name] is None:
            problems.append(SlotProblem("missing", s))
    return got, problems


def _is_imm(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _shape_kind(op) -> str | None:
    """"addr" for "[...]", "vec" for "{...}" or a tuple / list of registers, else None."""
    if isinstance(op, (tuple, list)):
        return "vec"
    if isinstance(op, str) and op[:1] in "[{" and op:
        return "addr" if op[0] == "[" else "vec"
    return None


def check_form(form: Form, qualifiers=(), operands=(), target: str | None = None,
               ptx_version=None) -> dict:
    """Raise PtxValidationError unless `form.opcode qualifiers operands` is legal on `target`
    (None: not checked) with PTX ISA `ptx_version` (None: the newest). Operands: int for an
    immediate, str for a register name, "[..]" for an address, "{..}" or a tuple for a vector
    (register widths and vector lengths are the validator's business). Returns slot name ->
    qualifier."""
    where = f"'{form.opcode}{''.join(qualifiers)}' ({form.source})"
    got, problems = match_slots(form.slots, qualifiers)
    if problems:
        said = []
        for p in problems:
            if p.kind == "unknown":
                said.append(f"unexpected qualifier {p.qualifier}")
            elif p.kind == "repeated":
                said.append(f"{p.qualifier} and {p.previous} both fill {p.slot.name}, only one "
                            "is allowed")
            else:
                said.append(f"needs exactly one of {' or '.join(p.slot.values)}, got none")
        raise PtxValidationError(f"{where}: {'; '.join(said)}")
    lo, hi = form.operand_counts
    if not lo <= len(operands) <= hi:
        n = str(lo) if lo == hi else f"{lo} to {hi}"
        raise PtxValidationError(f"{where}: takes {n} operand{'s' if hi != 1 else ''}, got "
                                 f"{len(operands)}")
    for spec, op in zip(form.operands, operands):
        kinds = spec.kinds.split("|")
        is_reg_kind = any(k in REGISTER_KINDS for k in kinds)
        shape = _shape_kind(op)
        if shape or all(k in ("addr", "vec") for k in kinds):
            if shape not in kinds:
                want = " or ".join({"addr": "an address [..]", "vec": "a vector {..}"}.get(k, k)
                                   for k in kinds)
                raise PtxValidationError(f"{where}: operand {spec.name} must be {want}, got "
                                         f"{op!r}")
            continue
        if _is_imm(op):
            if "imm" not in kinds:
                raise PtxValidationError(f"{where}: operand {spec.name} must be a register, "
                                         f"got {op!r}")
            if spec.imm is not None and not spec.imm.ok(op):
                r = spec.imm
                why = (f"must be {r.rule()}" if r.pow2 or (r.lo <= op <= r.hi) else
                       f"outside [{r.lo}, {r.hi}]")
                raise PtxValidationError(f"{where}: immediate {int(op)} {why}")
        elif not (isinstance(op, str) and is_reg_kind):
            kind = "an immediate" if not is_reg_kind else (
                "a register or an immediate" if "imm" in kinds else "a register")
            raise PtxValidationError(f"{where}: operand must be {kind} ({spec.name}), got {op!r}")
    check_notes(form, target, ptx_version, where)
    return got


def check_notes(form: Form, target: str | None = None, ptx_version=None,
                where: str | None = None) -> None:
    """The PTX ISA and Target ISA notes of one row: raise PtxValidationError unless `form` is
    available with PTX ISA `ptx_version` (None: not checked) on `target` (None: not checked),
    exactly as the validator's Check.since / Check.target judge them."""
    where = where or f"'{form.name}' ({form.source})"
    ptx = None if ptx_version is None else parse_version(ptx_version)
    if ptx is not None and ptx < form.since:
        raise PtxValidationError(f"{where}: needs PTX ISA {vstr(form.since)} or later, got "
                                 f"{vstr(ptx)}")
    if target is not None and not form.req.ok(parse_target(target), ptx):  # parses the name
        raise PtxValidationError(f"{where}: not supported on target {target} (supported: "
                                 f"{form.req})")
