"""The matcher of the legality tables: compares a parsed Instruction with a family's table and
words the diagnostics (with the source location). The table vocabulary (Slot, Operand, Imm,
Form, Req) is ptxsim.isa.legality's, shared with the isa modules that execute the instructions;
`Check.form` judges an Instruction against one `Form` row, as `isa.legality.check_form` does."""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.ptx.instruction import (Address, Immediate, Instruction, Label, Register,
                                    RegisterPair, SourceLoc, Vector)
from ptxsim.isa.legality import Form, Slot, count_problem, match_slots, register_kinds  # noqa: F401 (Slot re-exported)
from ptxsim.ptx.targets import Req, Target, vstr


@dataclass(frozen=True)
class Diagnostic:
    """One finding: `severity` is "error" or "warning"."""
    severity: str
    message: str
    loc: SourceLoc = field(default_factory=SourceLoc)
    opcode: str | None = None

    def __str__(self) -> str:
        return f"{self.loc}: {self.severity}: {self.message}"


# Register widths by declared type (PTX ISA 5.2 "Types").
_WIDTH = {".pred": "pred"}
for _w, _ts in ((8, ".b8 .u8 .s8"), (16, ".b16 .u16 .s16 .f16 .bf16"),
                (32, ".b32 .u32 .s32 .f32 .f16x2 .bf16x2"), (64, ".b64 .u64 .s64 .f64"),
                (128, ".b128")):
    for _t in _ts.split():
        _WIDTH[_t] = _w


@dataclass
class Context:
    target: Target
    ptx: tuple[int, int]
    regtypes: dict | None = None          # register name -> declared type, when known
    function: object = None               # the Function being validated (kernel-level rules)
    state: dict = field(default_factory=dict)
    address_size: int = 64

    def width(self, op) -> object:
        """Declared width of a register operand (8/16/32/64/128/"pred"), None when unknown."""
        if self.regtypes is None or not isinstance(op, (Register, Label)):
            return None
        t = self.regtypes.get(op.name)
        return _WIDTH.get(t) if t else None


class Check:
    """Compares one instruction with a family's tables and collects diagnostics."""

    def __init__(self, inst: Instruction, ctx: Context, out: list, name: str | None = None):
        self.i, self.ctx, self.out = inst, ctx, out
        self.name = name or inst.opcode
        self.failed = False

    # -- reporting --------------------------------------------------------------------------
    def err(self, msg: str) -> None:
        self.failed = True
        self.out.append(Diagnostic("error", msg, self.i.loc, self.i.opcode))

    def warn(self, msg: str) -> None:
        self.out.append(Diagnostic("warning", msg, self.i.loc, self.i.opcode))

    # -- qualifiers -------------------------------------------------------------------------
    def slots(self, slots: list[Slot], section: str) -> dict:
        """Match every qualifier to one slot (order-free). Unknown, repeated and missing
        qualifiers are errors. Returns slot name -> qualifier (or None)."""
        got, problems = match_slots(slots, self.i.qualifiers)
        for p in problems:
            self.err(p.message(self.name, section))
        return got

    def form(self, f: Form) -> dict:
        """Judge the instruction against one row of an isa table (ptxsim.isa.legality.Form):
        qualifier slots, operand count, operand kinds, immediate ranges, PTX ISA version and
        Target ISA notes, in that order. Returns slot name -> qualifier."""
        s = f.source
        q = self.slots(list(f.slots), s)
        lo, hi = f.operand_counts
        if self.count(lo, hi, form=f.syntax if lo != hi else ""):
            for idx, spec in enumerate(f.operands[:len(self.i.operands)]):
                if self.operand(idx, register_kinds(spec.kinds, q), spec.name) and spec.imm:
                    self.imm_rule(idx, spec, s)
        self.notes(f)
        return q

    def notes(self, f: Form, what: str | None = None) -> None:
        """The row's PTX ISA notes (`since`) and Target ISA notes (`req`), as
        isa.legality.check_notes judges them; `what` names the feature (default: the form)."""
        self.since(f.since, what or f.name, f.source)
        self.target(f.req, what or f.name, f.source)

    def forbid(self, cond: bool, msg: str) -> None:
        if cond:
            self.err(msg)

    # -- operands ----------------------------------------------------------------------------
    def count(self, lo: int, hi: int | None = None, form: str = "") -> bool:
        msg = count_problem(self.name, len(self.i.operands), lo, hi, form)
        if msg:
            self.err(msg)
            return False
        return True

    def operand(self, idx: int, kinds: str, what: str) -> bool:
        """Check operand `idx` against `kinds`, '|'-separated among: r16 r32 r64 reg pred imm
        addr vec (any register width for `reg`)."""
        if idx >= len(self.i.operands):
            return False
        op = self.i.operands[idx]
        allowed = kinds.split("|")
        kind = _kind(op)
        if getattr(op, "minus", False) and self.i.opcode != "vmad":
            self.err(f"operand {idx + 1} ({what}) of {self.name}: '-{op.name}', operand negation "
                     "is not allowed here")
            return False
        ok = False
        for k in allowed:
            if k == "imm" and kind == "imm":
                ok = not op.is_float      # the family tables' constants are integers
            elif k == "bits32" and kind == "imm":
                ok = op.is_float and op.width == 32   # ptxas 13.5 takes 0f3F800000, refuses 7
            elif k == "addr" and kind == "addr":
                ok = True
            elif k == "vec" and kind == "vec":
                ok = True
            elif k in ("r16", "r32", "r64", "reg", "pred") and kind == "reg":
                if getattr(op, "negated", False) and k != "pred":
                    continue
                w = self.ctx.width(op)
                t = self.ctx.regtypes.get(op.name) if self.ctx.regtypes is not None else None
                if t in _FLOAT_REGS and k not in ("reg", "pred"):
                    continue       # ptxas: "Arguments mismatch" for a float register here
                if w is None or k == "reg" or (k == "pred" and w == "pred") or \
                        (k != "pred" and w == int(k[1:])):
                    ok = True
        if not ok:
            self.err(f"operand {idx + 1} ({what}) of {self.name} must be "
                     f"{_describe(allowed)}, got '{op}'")
        return ok

    def vector(self, idx: int, size: int | set, what: str, elem: str = "r32") -> None:
        op = self.i.operands[idx] if idx < len(self.i.operands) else None
        if not isinstance(op, Vector):
            return
        sizes = {size} if isinstance(size, int) else set(size)
        if len(op) not in sizes:
            want = " or ".join(map(str, sorted(sizes)))
            self.err(f"operand {idx + 1} ({what}) of {self.name} must be a vector of {want} "
                     f"registers, got {len(op)}")
        for e in op.elements:
            # ptxas 13.5 accepts a predicate register as an element (and only that other kind)
            if _kind(e) != "reg" or (self.ctx.width(e) not in (None, int(elem[1:]), "pred")):
                self.err(f"element '{e}' of operand {idx + 1} ({what}) of {self.name} must be a "
                         f"{elem[1:]}-bit register")
                break

    def imm(self, idx: int):
        op = self.i.operands[idx] if idx < len(self.i.operands) else None
        return op.value if isinstance(op, Immediate) and not op.is_float else None

    def imm_range(self, idx: int, lo: int, hi: int, what: str, section: str) -> None:
        v = self.imm(idx)
        if v is not None and not lo <= v <= hi:
            self.err(f"operand {idx + 1} ({what}) of {self.name} = {v} is out of range "
                     f"[{lo}, {hi}] ({section})")

    def imm_rule(self, idx: int, spec, section: str) -> None:
        """Operand `idx` against its `Operand.imm` rule (when it is an integer immediate)."""
        v, rule = self.imm(idx), spec.imm
        if v is None or rule.ok(v):
            return
        if rule.pow2 and rule.lo > 1:        # "within the range [32, 512] ... power of 2"
            why = (f"in the range [{rule.lo}, {rule.hi}]" if not rule.lo <= v <= rule.hi
                   else "a power of 2")
            self.err(f"{spec.name} = {v} of {self.name} must be {why} ({section})")
        elif rule.step > 1 or rule.pow2:
            self.err(f"{spec.name} = {v} of {self.name} must be {rule.rule()} ({section})")
        else:
            what = spec.name + (f" ({rule.what})" if rule.what else "")
            self.imm_range(idx, rule.lo, rule.hi, what, section)

    # -- target / version ------------------------------------------------------------------
    def target(self, req: Req, what: str, section: str) -> None:
        if not req.ok(self.ctx.target, self.ctx.ptx):
            self.err(f"{what} is not supported on .target {self.ctx.target} with PTX ISA "
                     f"{vstr(self.ctx.ptx)} (supported: {req}) ({section})")

    def since(self, version: tuple[int, int], what: str, section: str) -> None:
        if self.ctx.ptx < version:
            self.err(f"{what} requires PTX ISA version {vstr(version)} or later, module is "
                     f"{vstr(self.ctx.ptx)} ({section})")


def is_note(d: "Diagnostic") -> bool:
    """A diagnostic from a PTX ISA or Target ISA note (the form exists, but not for this
    .target or .version), as the validators word them."""
    m = d.message
    return ("not supported on .target" in m or "requires PTX ISA version" in m
            or "is not supported on target" in m)


_FLOAT_REGS = frozenset({".f16", ".f32", ".f64"})     # .f16x2 passes as a 32-bit integer (ptxas)


def _kind(op) -> str:
    if isinstance(op, Immediate):
        return "imm"
    if isinstance(op, Address):
        return "addr"
    if isinstance(op, Vector):
        return "vec"
    if isinstance(op, Register):
        return "reg"
    if isinstance(op, Label):
        return "reg" if op.offset == 0 else "sym"
    if isinstance(op, RegisterPair):
        return "pair"
    return "other"


_NAMES = {"r16": "a 16-bit register", "r32": "a 32-bit register", "r64": "a 64-bit register",
          "reg": "a register", "pred": "a predicate", "imm": "an immediate", "addr": "an address [..]",
          "vec": "a vector {..}"}


def _describe(kinds) -> str:
    return " or ".join(_NAMES.get(k, k) for k in kinds)
