"""`validate(module_or_instruction, target=None, ptx_version=None) -> list[Diagnostic]`.

Instruction families with tables transcribed from the spec (tcgen05.*, mma.sp, video, stack,
misc) are checked qualifier by qualifier, operand by operand, against target and PTX version.
Every other instruction parses generically and is accepted (no false errors on real compiler
output). Module level: .version/.target consistency, undefined registers and branch labels
(scoped), and the kernel-wide tcgen05 `.cta_group` rule.
"""
from __future__ import annotations

from ptxsim.errors import PtxValidationError
from ptxsim.ptx.gcpause import paused
from ptxsim.ptx.instruction import (Address, Group, Immediate, Instruction, Label, Register, RegisterPair,
                                    SourceLoc, SpecialRegister, Vector)
from ptxsim.isa.targets import (PTXAS_LATEST, PTXAS_TARGET_MIN_PTX, PTXAS_TARGETS,
                                PTXAS_VERSIONS, TARGET_OPTIONS)
from ptxsim.ptx.legality import generic, matrix, mma_sp, stack_misc, tcgen05, video
from ptxsim.ptx.legality.common import Check, Context, Diagnostic
from ptxsim.ptx.legality.forms import IGNORABLE, REG_TYPES
from ptxsim.ptx.module import (Block, Directive, Function, LabelDef, Module, RegDecl,
                               RegisterTable, ScopedRegisters, Variable)
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
        env = None
        regs = None
        if registers:
            regs = ScopedRegisters(RegisterTable((), dict(registers)))
            env = generic._Env(regs, None, None, 64)
        check_instruction(obj, Context(t, v, regs), out, env)
        return out
    if isinstance(obj, Module):
        with paused():
            return _validate_module(obj, target, ptx_version)
    raise TypeError(f"validate() takes a Module or an Instruction, not {type(obj).__name__}")


def errors_of(diags) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]


def check_instruction(inst: Instruction, ctx: Context, out: list, env=None) -> None:
    rule = RULES.get(inst.opcode)
    if rule is not None:
        tmp: list = []
        rule(Check(inst, ctx, tmp))
        unknown = [q for q in inst.qualifiers if q in IGNORABLE and
                   any(d.severity == "error" and f"'{q}' is not valid" in d.message for d in tmp)]
        if unknown:
            # ptxas ignores a qualifier of this list where it means nothing (forms.IGNORABLE)
            kept = tuple(q for q in inst.qualifiers if q not in unknown)
            retry: list = []
            rule(Check(Instruction(inst.opcode, kept, inst.operands, inst.predicate, inst.loc,
                                   inst.text), ctx, retry))
            if not any(d.severity == "error" for d in retry):
                tmp = retry
        out.extend(tmp)
        if inst.opcode in _BOTH and not (inst.opcode == "mma" and _sparse(inst)) and \
                not any(d.severity == "error" for d in tmp):
            # the family table judges the form; the syntax lines add what it leaves out
            # (operand count and kinds, register types, state spaces, repeated qualifiers)
            generic.check(inst, ctx, out, env if env is not None else _LONE)
        return
    generic.check(inst, ctx, out, env if env is not None else _LONE)


_BOTH = frozenset({"ldmatrix", "stmatrix", "movmatrix"})


def _sparse(inst) -> bool:
    return any(q.startswith(".sp") for q in inst.qualifiers)


_LONE = generic._Env(None, None, None, 64)


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
    if m.version is not None and ptx_version is None and v not in PTXAS_VERSIONS:
        out.append(Diagnostic("error", f"unsupported .version {m.version} (ptxas 13.5 knows "
                              f"2.3 to {vstr(PTXAS_LATEST)})", here))
    elif v > LATEST_PTX:
        out.append(Diagnostic("warning", f".version {vstr(v)} is newer than the PTX ISA texts ptxsim "
                              f"implements ({vstr(LATEST_PTX)}); validating with {vstr(LATEST_PTX)} rules",
                              here))
    if m.target is None and target is None:
        out.append(Diagnostic("error", "missing .target directive", here))
    mt = None
    for name in m.targets:
        if name in TARGET_OPTIONS:
            if name == "map_f64_to_f32":
                out.append(Diagnostic("error", ".target option map_f64_to_f32 is not supported "
                                      "with sm_13 or higher", here))
            continue
        try:
            tt = parse_target(name)
        except PtxValidationError:
            out.append(Diagnostic("error", f"unsupported .target '{name}'", here))
            continue
        if tt.name not in PTXAS_TARGETS:
            out.append(Diagnostic("error", f"unsupported .target '{name}'", here))
            continue
        if mt is not None:
            out.append(Diagnostic("error", f"more than one SM name in .target ({mt}, {tt})", here))
            continue
        mt = tt
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
    need = PTXAS_TARGET_MIN_PTX.get(t.name)
    if need and v < need:
        out.append(Diagnostic("error", f".target {t} requires PTX ISA version {vstr(need)} or later, "
                              f"module is {vstr(v)}", here))
    if m.address_size not in (None, 32, 64):
        out.append(Diagnostic("error", f".address_size {m.address_size}: must be 32 or 64", here))
    asize = m.address_size or 64
    module_symbols = {x.name for x in m.variables} | {g.name for g in m.functions}
    module_spaces = {x.name: x.space for x in m.variables}
    for f in m.functions:
        if f.body is None:
            continue
        params = {p.name: p.type for p in f.params + (f.return_params or []) if p.space == ".reg"}
        ctx = Context(t, v, None, f, address_size=asize)
        local_vars, tables = _declarations(f.body)
        symbols = module_symbols | {p.name for p in f.params + (f.return_params or [])} \
            | {x.name for x in local_vars}
        spaces = dict(module_spaces)
        spaces.update({p.name: ".param" for p in f.params + (f.return_params or [])})
        spaces.update({x.name: x.space for x in local_vars})
        _check_block(f.body, ctx, out, None, symbols, RegisterTable((), params), None, asize,
                     spaces, tables)
        _cta_group_rule(f, out)
    out.sort(key=lambda d: (d.loc.line or 0, d.loc.col or 0))
    return out


def _declarations(body: Block):
    """The variables declared in a function body, and the labels naming a .branchtargets list
    (one pass over the non-instruction statements)."""
    found, tables = [], set()

    def walk(block):
        prev = None
        for st in block.statements:
            if type(st) is not Instruction:
                if isinstance(st, Variable):
                    found.append(st)
                elif isinstance(st, Block):
                    walk(st)
                elif isinstance(st, Directive) and st.name == ".branchtargets" \
                        and isinstance(prev, LabelDef):
                    tables.add(prev.name)
            prev = st
    walk(body)
    return found, tables


def _check_block(block: Block, ctx: Context, out: list, visible_outer: set | None, symbols: set,
                 outer: RegisterTable | None, parent: ScopedRegisters | None, asize: int,
                 spaces: dict | None = None, tables: set | None = None,
                 env_outer: generic._Env | None = None) -> None:
    """One `{ }` scope: its own .reg declarations (duplicates are errors, shadowing an outer
    name is not), then its statements with the registers visible here. A nested block that
    declares no register and no label sees exactly what its enclosing block sees and is checked
    with the same tables (nvcc wraps each inline-asm statement in `{ }`: ~10^4 blocks in
    CUTLASS's FMHA module)."""
    decls, labels = [], []
    for s in block.statements:
        if isinstance(s, RegDecl):
            decls.append(s)
        elif isinstance(s, LabelDef):
            labels.append(s.name)
    if not decls and not labels and outer is None and env_outer is not None:
        # nothing of its own: the enclosing block's tables (the name caches of _check_names
        # are keyed by the register table, so a block with labels gets its own below)
        regs, visible, env = parent, visible_outer, env_outer
    else:
        own = outer if outer is not None else RegisterTable()
        for d in decls:
            if d.type not in REG_TYPES:
                out.append(Diagnostic("error", f".reg {d.type}: not a register type (registers "
                                      f"are {', '.join(sorted(REG_TYPES))})", d.loc))
            elif d.vector and d.type == ".pred":
                out.append(Diagnostic("error", ".reg .pred cannot be a vector (predicates are "
                                      "scalar registers only)", d.loc))
            for name, count in d.items:
                dup = own.conflict(name, count)
                if dup is not None:
                    shown = name if count is None else f"{name}<{count}>"
                    out.append(Diagnostic("error", f"duplicate definition of register {shown} "
                                          f"(already declared as {dup} in this scope)", d.loc))
            own.add(d)
        regs = ScopedRegisters(own, parent)
        visible = (visible_outer or set()) | set(labels) if labels or visible_outer is None \
            else visible_outer
        ctx = Context(ctx.target, ctx.ptx, regs, ctx.function, ctx.state, ctx.address_size)
        env = generic._Env(regs, symbols, visible, asize, spaces, tables)
    for s in block.statements:
        if isinstance(s, Instruction):
            check_instruction(s, ctx, out, env)
            _check_names(s, ctx, out, visible, symbols, spaces)
        elif isinstance(s, Block):
            _check_block(s, ctx, out, visible, symbols, None, regs, asize, spaces, tables, env)


def _check_names(inst: Instruction, ctx: Context, out: list, labels: set, symbols: set,
                 spaces: dict | None = None) -> None:
    """Registers must be declared (.reg) in an enclosing scope; branch targets must be labels in
    an enclosing scope; a guard must be a predicate."""
    family = inst.opcode in RULES
    if inst.opcode == "setmaxnreg" and inst.qualifiers and inst.qualifiers[0] not in (".inc", ".dec"):
        # ptxas 13.5 knows the instruction names setmaxnreg.inc / setmaxnreg.dec only
        out.append(Diagnostic("error", "setmaxnreg: .inc or .dec must directly follow the opcode",
                              inst.loc, inst.opcode))
    if inst.opcode in _SIMD_VIDEO:
        for k in (1, 2):
            if k < len(inst.operands) and isinstance(inst.operands[k], Immediate):
                # ptxas 13.5: "Incorrect video selector for operand 1"
                out.append(Diagnostic("error", f"{inst.opcode}: operand {k + 1} of a SIMD video "
                                      "instruction must be a register", inst.loc, inst.opcode))
    memo = _MEMO.get(id(ctx.regtypes))
    if memo is None or memo[0] is not ctx.regtypes:
        memo = _MEMO[id(ctx.regtypes)] = (ctx.regtypes, {})
        if len(_MEMO) > 64:
            _MEMO.clear()
            _MEMO[id(ctx.regtypes)] = memo
    cache = memo[1]
    for k, op in enumerate(inst.operands):
        found = cache.get(id(op))              # by identity, as generic.check does
        if found is None or found[0] is not op:
            found = cache[id(op)] = (op, _operand_names(op, ctx, labels, symbols))
        found = found[1]
        for kind, msg in found:
            if kind == "label" and (inst.opcode in ("call", "brx") or (k == 0 and inst.opcode == "bra")):
                continue
            if kind == "sreg" and not family:
                continue
            out.append(Diagnostic("error", msg if kind != "sreg" else f"{inst.opcode}: {msg}",
                                  inst.loc, inst.opcode))
        if not family:
            continue
        if family and isinstance(op, Address) and op.base is None and inst.opcode in _TMEM_ADDRESSED:
            out.append(Diagnostic("error", f"{inst.opcode}: a Tensor Memory address is a register, "
                                  f"not the constant {op}", inst.loc, inst.opcode))
        if family and isinstance(op, Address) and op.base and op.base in (spaces or {}) \
                and inst.opcode in ("tcgen05.alloc", "tcgen05.commit") \
                and not spaces[op.base].startswith(".shared"):
            out.append(Diagnostic("error", f"{inst.opcode}: {op.base} is a {spaces[op.base]} "
                                  "variable; this address is in shared memory", inst.loc,
                                  inst.opcode))
        if family and isinstance(op, Address) and op.base:
            bt = ctx.regtypes.get(op.base)
            tmem = inst.opcode in _TMEM_ADDRESSED
            small_ok = inst.opcode in ("ldmatrix", "stmatrix")      # ptxas takes [%rs1] there
            if bt is not None and (bt not in _ADDRESS_TYPES
                                   or (bt[2:] not in ("32", "64") and not small_ok)
                                   or (tmem and bt not in (".b32", ".u32"))):
                out.append(Diagnostic("error", f"{inst.opcode}: {op.base} is a {bt[1:]} register; "
                                      "this address must be " +
                                      ("a 32-bit Tensor Memory address" if tmem else
                                       "an integer register"), inst.loc, inst.opcode))
            elif bt is None and not op.base.startswith("%"):
                if op.base not in symbols:
                    out.append(Diagnostic("error", f"unknown symbol '{op.base}'", inst.loc, inst.opcode))
                elif tmem:
                    out.append(Diagnostic("error", f"{inst.opcode}: a Tensor Memory address is a "
                                          f"register, not the variable {op.base}", inst.loc,
                                          inst.opcode))
    if inst.opcode == "wgmma.mma_async" and len(inst.operands) > 3:
        # scale-d is a predicate (9.7.15.5.2; ptxas 13.5: "Arguments mismatch" otherwise)
        op = inst.operands[3]
        pt = ctx.regtypes.get(op.name) if isinstance(op, Register) else None
        if pt is not None and pt != ".pred":
            out.append(Diagnostic("error", f"wgmma.mma_async: scale-d ({op.name}) must be a "
                                  f"predicate, not a {pt[1:]} register", inst.loc, inst.opcode))
    if inst.predicate:
        pt = ctx.regtypes.get(inst.predicate.name)
        if pt is None:
            out.append(Diagnostic("error", f"predicate '{inst.predicate.name}' is not declared",
                                  inst.loc, inst.opcode))
        elif pt != ".pred":
            out.append(Diagnostic("error", f"guard {inst.predicate.name} is a {pt[1:]} register, "
                                  "not a predicate", inst.loc, inst.opcode))
    if inst.opcode == "bra" and inst.operands and isinstance(inst.operands[0], Label):
        name = inst.operands[0].name
        if name not in labels:
            out.append(Diagnostic("error", f"branch target '{name}' is not a label in scope", inst.loc, inst.opcode))


_MEMO: dict = {}


def _operand_names(op, ctx, labels, symbols) -> tuple:
    """What one operand alone breaks in its scope: undeclared registers, unknown symbols,
    constants wider than 64 bits, special registers (reported for the family instructions)."""
    if type(op) is Register:                          # the common case, as below
        if op.name != "_" and op.name not in ctx.regtypes:
            return (("reg", f"register '{op.name}' is not declared in this scope"),)
        return ()
    out = []
    for e in _leaves(op):
        if isinstance(e, Immediate):
            if not e.is_float and not -(1 << 63) <= e.value < (1 << 64):
                out.append(("const", f"the constant {e.text} does not fit in 64 bits"))
        elif isinstance(e, SpecialRegister):
            out.append(("sreg", f"a special register ({e.name}) is not allowed as an operand"))
        elif isinstance(e, Register):
            if e.name != "_" and e.name not in ctx.regtypes:
                out.append(("reg", f"register '{e.name}' is not declared in this scope"))
        elif isinstance(e, Label):
            if e.name != "_" and e.name not in symbols and e.name not in labels:
                out.append(("label", f"unknown symbol '{e.name}'"))
    if isinstance(op, Address) and op.base and op.base.startswith("%") \
            and op.base not in ctx.regtypes and op.base not in symbols:
        out.append(("reg", f"register '{op.base}' is not declared in this scope"))
    return tuple(out)


_SIMD_VIDEO = frozenset(f"{op}{n}" for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax",
                                                "vset") for n in (2, 4))
# tcgen05 instructions whose address operands are Tensor Memory addresses (32-bit registers)
_TMEM_ADDRESSED = frozenset({"tcgen05.ld", "tcgen05.st", "tcgen05.cp", "tcgen05.shift",
                             "tcgen05.mma"})
_ADDRESS_TYPES = frozenset(".b8 .u8 .s8 .b16 .u16 .s16 .b32 .u32 .s32 .b64 .u64 .s64".split())


def _leaves(op):
    if isinstance(op, (Vector, Group)):
        for e in op.elements:
            yield from _leaves(e)
    elif isinstance(op, Address):
        if op.vector is not None:
            yield from _leaves(op.vector)
    elif isinstance(op, RegisterPair):
        yield op.first
        yield op.second
    else:
        yield op


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
