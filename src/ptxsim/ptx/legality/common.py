"""The machinery the per-family legality tables use: qualifier slots, operand kinds, immediate
ranges, target / PTX-version requirements. Tables live in the family modules; this file only
knows how to compare an Instruction against them and word the diagnostics."""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.ptx.instruction import (Address, Immediate, Instruction, Label, Register,
                                    RegisterPair, SourceLoc, Vector)
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


@dataclass(frozen=True)
class Slot:
    """One qualifier position of a syntax line: `.shape = { .16x64b, ... }`."""
    name: str
    values: frozenset
    required: bool = False

    @staticmethod
    def of(name: str, values, required: bool = False) -> "Slot":
        return Slot(name, frozenset(values.split() if isinstance(values, str) else values), required)


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
        got: dict = {s.name: None for s in slots}
        for q in self.i.qualifiers:
            owners = [s for s in slots if q in s.values]
            if not owners:
                self.err(f"qualifier '{q}' is not valid for {self.name} ({section})")
                continue
            free = [s for s in owners if got[s.name] is None]
            if not free:
                self.err(f"qualifier '{q}' conflicts with '{got[owners[0].name]}' "
                         f"(only one {owners[0].name} allowed for {self.name}, {section})")
                continue
            got[free[0].name] = q
        for s in slots:
            if s.required and got[s.name] is None:
                opts = ", ".join(sorted(s.values))
                self.err(f"{self.name} requires a {s.name} qualifier (one of {opts}) ({section})")
        return got

    def forbid(self, cond: bool, msg: str) -> None:
        if cond:
            self.err(msg)

    # -- operands ----------------------------------------------------------------------------
    def count(self, lo: int, hi: int | None = None, form: str = "") -> bool:
        n = len(self.i.operands)
        hi = lo if hi is None else hi
        if not lo <= n <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            self.err(f"{self.name} takes {want} operands{(' (' + form + ')') if form else ''}, got {n}")
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
        ok = False
        for k in allowed:
            if k == "imm" and kind == "imm":
                ok = True
            elif k == "addr" and kind == "addr":
                ok = True
            elif k == "vec" and kind == "vec":
                ok = True
            elif k in ("r16", "r32", "r64", "reg", "pred") and kind == "reg":
                if getattr(op, "negated", False) and k != "pred":
                    continue
                w = self.ctx.width(op)
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
            if _kind(e) != "reg" or (self.ctx.width(e) not in (None, int(elem[1:]))):
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

    # -- target / version ------------------------------------------------------------------
    def target(self, req: Req, what: str, section: str) -> None:
        if not req.ok(self.ctx.target, self.ctx.ptx):
            self.err(f"{what} is not supported on .target {self.ctx.target} with PTX ISA "
                     f"{vstr(self.ctx.ptx)} (supported: {req}) ({section})")

    def since(self, version: tuple[int, int], what: str, section: str) -> None:
        if self.ctx.ptx < version:
            self.err(f"{what} requires PTX ISA version {vstr(version)} or later, module is "
                     f"{vstr(self.ctx.ptx)} ({section})")


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
