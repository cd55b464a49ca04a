"""`validate(module_or_instruction, target=None, ptx_version=None) -> list[Diagnostic]`.

Instruction families with tables transcribed from the spec (tcgen05.*, mma.sp, video, stack,
misc) are checked qualifier by qualifier, operand by operand, against target and PTX version.
Every other instruction parses generically and is accepted (no false errors on real compiler
output). Module level: .version/.target consistency, undefined registers and branch labels
(scoped), and the kernel-wide tcgen05 `.cta_group` rule.
"""
from __future__ import annotations

from ptxsim.errors import PtxValidationError
from ptxsim.ptx.instruction import (Address, Group, Instruction, Label, Register, SourceLoc,
                                    SpecialRegister, Vector)
from ptxsim.ptx.legality import matrix, mma_sp, stack_misc, tcgen05, video
from ptxsim.ptx.legality.common import Check, Context, Diagnostic
from ptxsim.ptx.module import Block, Function, Module, RegisterTable
from ptxsim.ptx.targets import (LATEST_PTX, RENAMED, TARGET_MIN_PTX, compatible, parse_target,
                                parse_version, vstr)

RULES = {**tcgen05.RULES, **mma_sp.RULES, **video.RULES, **stack_misc.RULES, **matrix.RULES}
__all__ = ["validate", "Diagnostic", "RULES", "errors_of"]


def validate(obj, target: str | None = None, ptx_version=None,
             registers: dict | None = None) -> list[Diagnostic]:
    """Validate a Module or a single Instruction. Returns diagnostics (errors and warnings),
    in source order. `target` defaults to the module's .target (else sm_100a), `ptx_version`
    to the module's .version (else the newest the spec texts describe). For a single
    instruction, `registers` may map register names to their PTX types ({"%rd1": ".b64"}) so
    that operand widths are checked as in a module."""
    if isinstance(obj, Instruction):
        t = parse_target(target or "sm_100a")
        v = parse_version(ptx_version) if ptx_version is not None else LATEST_PTX
        out: list[Diagnostic] = []
        check_instruction(obj, Context(t, v, dict(registers) if registers else None), out)
        return out
    if isinstance(obj, Module):
        return _validate_module(obj, target, ptx_version)
    raise TypeError(f"validate() takes a Module or an Instruction, not {type(obj).__name__}")


def errors_of(diags) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]


def check_instruction(inst: Instruction, ctx: Context, out: list) -> None:
    rule = RULES.get(inst.opcode)
    if rule is not None:
        rule(Check(inst, ctx, out))


# ----------------------------------------------------------------------------------- module
def _validate_module(m: Module, target, ptx_version) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    here = SourceLoc(1, 1, m.filename)
    if m.version is None and ptx_version is None:
        out.append(Diagnostic("error", "missing .version directive", here))
    try:
        v = parse_version(ptx_version if ptx_version is not None else (m.version or vstr(LATEST_PTX)))
    except PtxValidationError as exc:
        out.append(Diagnostic("error", exc.message, here))
        v = LATEST_PTX
    if v > LATEST_PTX:
        out.append(Diagnostic("warning", f".version {vstr(v)} is newer than the PTX ISA texts ptxsim "
                              f"implements ({vstr(LATEST_PTX)}); validating with {vstr(LATEST_PTX)} rules",
                              here))
    if m.target is None and target is None:
        out.append(Diagnostic("error", "missing .target directive", here))
    try:
        mt = parse_target(m.target) if m.target else None
    except PtxValidationError as exc:
        out.append(Diagnostic("error", exc.message, here))
        mt = None
    t = mt or parse_target(target or "sm_100a")
    if target is not None and mt is not None:
        arch = parse_target(target)
        if not compatible(mt, arch):
            out.append(Diagnostic("error", f"PTX for .target {mt} cannot be compiled for {arch}", here))
    if t.name in RENAMED and v >= (9, 0):
        # ptxas 13.0 still assembles .target sm_101a/f with .version 9.0 (tests/isa/
        # test_targets.py): a deprecated name, not an error.
        out.append(Diagnostic("warning", f".target {t} was renamed {RENAMED[t.name]} in PTX ISA 9.0; "
                              f"ptxas 13.0 still accepts the old name", here))
    need = TARGET_MIN_PTX.get(t.name)
    if need and v < need:
        out.append(Diagnostic("error", f".target {t} requires PTX ISA version {vstr(need)} or later, "
                              f"module is {vstr(v)}", here))
    for f in m.functions:
        if f.body is None:
            continue
        regtypes = RegisterTable(f.registers, {p.name: p.type for p in f.params + (f.return_params or [])
                                               if p.space == ".reg"})
        ctx = Context(t, v, regtypes, f)
        symbols = {x.name for x in m.variables} | {p.name for p in f.params + (f.return_params or [])} \
            | {g.name for g in m.functions} | {x.name for x in f.body.walk() if hasattr(x, "space") and hasattr(x, "name")}
        _check_block(f.body, ctx, out, [], symbols)
        _cta_group_rule(f, out)
    out.sort(key=lambda d: (d.loc.line or 0, d.loc.col or 0))
    return out


def _check_block(block: Block, ctx: Context, out: list, scopes: list, symbols: set) -> None:
    scopes = scopes + [set(block.labels)]
    visible = set().union(*scopes)
    for s in block.statements:
        if isinstance(s, Block):
            _check_block(s, ctx, out, scopes, symbols)
        elif isinstance(s, Instruction):
            check_instruction(s, ctx, out)
            _check_names(s, ctx, out, visible, symbols)


def _check_names(inst: Instruction, ctx: Context, out: list, labels: set, symbols: set) -> None:
    """Registers must be declared (.reg); branch targets must be labels in an enclosing scope."""
    def regs(op):
        if isinstance(op, SpecialRegister):
            return
        if isinstance(op, Register):
            yield op
        elif isinstance(op, (Vector, Group)):
            for e in op.elements:
                yield from regs(e)
        elif hasattr(op, "first"):
            yield op.first
            yield op.second
    for op in inst.operands:
        for r in regs(op):
            if r.name.startswith("%") and r.name not in ctx.regtypes and r.name != "_":
                out.append(Diagnostic("error", f"register '{r.name}' is not declared", inst.loc, inst.opcode))
        if isinstance(op, Address) and op.base and op.base.startswith("%") \
                and op.base not in ctx.regtypes and op.base not in symbols:
            out.append(Diagnostic("error", f"register '{op.base}' is not declared", inst.loc, inst.opcode))
    if inst.predicate and inst.predicate.name not in ctx.regtypes:
        out.append(Diagnostic("error", f"predicate '{inst.predicate.name}' is not declared", inst.loc, inst.opcode))
    if inst.opcode == "bra" and inst.operands and isinstance(inst.operands[0], Label):
        name = inst.operands[0].name
        if name not in labels:
            out.append(Diagnostic("error", f"branch target '{name}' is not a label in scope", inst.loc, inst.opcode))


def _cta_group_rule(f: Function, out: list) -> None:
    """9.7.16.7.1 and others: "All tcgen05 instructions within a kernel must specify the same
    value for the .cta_group qualifier." """
    first = None
    for i in f.instructions:
        if i.opcode.startswith("tcgen05.") and (g := i.get(".cta_group")):
            if first is None:
                first = (g, i)
            elif g != first[0]:
                out.append(Diagnostic("error", f"{i.opcode} uses {g} but this kernel already uses "
                                      f"{first[0]} (line {first[1].loc.line}); all tcgen05 instructions "
                                      f"of a kernel must use the same .cta_group (9.7.16.7.1)",
                                      i.loc, i.opcode))
                return
