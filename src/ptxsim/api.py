"""The public entry points: `ptxsim.launch(ptx, kernel, grid, block, ...)` runs a whole kernel
(`ptxsim.machine.executor`), `ptxsim.execute(text, registers, target=..., warps=...)` one
instruction.

`execute` goes through the executor's dispatch: an opcode whose family registers in
`ptxsim.isa.registry` (mma / mma.sp, misc, tcgen05.mma with a given CTA state) keeps that path
(uint32 registers, as below); every other instruction the executor implements (base arithmetic,
cvt, setp, shfl / vote / elect, ...) runs as a one-instruction kernel over 32*W threads with the
caller's registers: 64-bit registers as uint64 arrays, predicates as bool (or 0/1) arrays.

Registers are raw bits: each register name of the instruction text maps to a uint32 array of
shape (32*W,), thread t of warp w at index 32*w + t. The result maps the instruction's output
registers the same way. Dispatch goes through `ptxsim.isa.registry`, so every instruction family
that registers a handler is reachable here.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ptxsim.errors import OperandError, UndefinedBehavior
from ptxsim.isa import registry
from ptxsim.isa.regs import RegisterFile  # noqa: F401 (re-exported: ptxsim.api.RegisterFile)

LANES = 32


def _parse(instruction_text):
    if not isinstance(instruction_text, str):
        return instruction_text                  # already a parsed Instruction
    from ptxsim.ptx import parse_instruction      # the front end (ptxsim.ptx)
    return parse_instruction(instruction_text)


def execute(instruction_text, registers: Mapping[str, object], *, target: str | None = None,
            warps: int | None = None, state=None) -> dict[str, np.ndarray]:
    """Execute one PTX instruction for W warps and return its output registers.

    instruction_text: PTX text of one instruction (or a parsed `ptxsim.ptx.Instruction`).
    registers: register name as written in the text -> uint32 array (32*W,).
    target: the `.target` the instruction is assembled for (legality and arithmetic profile);
        by default sm_100a for the tcgen05 instructions (they exist only from sm_100a) and
        sm_90a for everything else (the H200 the recorded vectors come from).
    warps: W; by default taken from the register arrays.
    state: per-CTA state for instructions with effects beyond registers (e.g. a
        `ptxsim.isa.misc.MiscState` collecting brkpt / nanosleep / pmevent / setmaxnreg events,
        or a `ptxsim.isa.cta.CtaState` whose shared and Tensor Memory tcgen05.ld / st / alloc /
        cp / shift and ld.shared / st.shared act on); a fresh one is made when omitted, so the
        effects are then visible only as raised errors.
    """
    if not isinstance(instruction_text, str) and not all(
            hasattr(instruction_text, a) for a in ("opcode", "qualifiers", "operands")):
        raise OperandError(f"execute: instruction_text must be PTX text (str) or a parsed "
                           f"Instruction, not {type(instruction_text).__name__}")
    if not isinstance(registers, Mapping):
        raise OperandError(f"execute: registers must be a mapping of register name -> array, not "
                           f"{type(registers).__name__}")
    bad = [k for k in registers if not isinstance(k, str)]
    if bad:
        raise OperandError(f"execute: register names must be strings, got {bad[0]!r}")
    inst = _parse(instruction_text)
    if target is None:
        target = "sm_100a" if inst.opcode.startswith("tcgen05.") else "sm_90a"
    else:
        from ptxsim.machine.inputs import check_target
        target = check_target(target, "execute: target")
    where = f"'{getattr(inst, 'text', '') or instruction_text}'"
    registry._load()
    from ptxsim.ptx.instruction import Instruction
    if inst.opcode not in registry.HANDLERS and isinstance(inst, Instruction):
        from ptxsim.machine.single import execute_one
        return execute_one(inst, registers, target=target, warps=warps, where=where, state=state)
    if warps is not None and (not isinstance(warps, (int, np.integer)) or warps < 1):
        raise OperandError(f"warps must be a positive integer, got {warps!r}")
    regs = RegisterFile(registers, warps, where)
    if regs.warps is None:
        raise OperandError(f"{where}: no registers given and no warps= count")
    handler = registry.handler_for(inst.opcode)
    guard, wants_state = registry.mode_of(inst.opcode)
    if wants_state:
        handler = _with_state(handler, inst.opcode, state, regs.warps)
    pred = getattr(inst, "predicate", None)
    if pred is None or guard == "handler":
        return handler(inst, regs, target)
    if guard == "thread":
        p = (regs.read(pred.name) != 0) ^ bool(pred.negated)
        out = handler(inst, regs, target)
        return {name: np.where(p, bits, regs.read(name) if name in regs else 0).astype(np.uint32)
                for name, bits in out.items()}
    # Guarded warp-synchronous instruction: the guard must agree within each warp.
    p = (regs.read(pred.name).reshape(-1, LANES) != 0) ^ bool(pred.negated)
    if not (p.all(axis=1) | ~p.any(axis=1)).all():
        raise UndefinedBehavior(f"{where}: guard {pred} differs between threads of a warp; the "
                                ".aligned instruction then has undefined behaviour")
    if p.all():
        return handler(inst, regs, target)
    active = p.all(axis=1)
    out = handler(inst, regs.subset(active), target) if active.any() else {}
    result = {}
    for name in out or _output_names(inst):      # guard-false warps keep the old values
        merged = regs.read(name).reshape(-1, LANES).copy()
        if name in out:
            merged[active] = out[name].reshape(-1, LANES)
        result[name] = merged.reshape(-1)
    return result


def _output_names(inst) -> list[str]:
    """Register names of the destination operand (the first), for guard-false warps."""
    first = inst.operands[0]
    elements = getattr(first, "elements", (first,))
    return [e.name for e in elements if hasattr(e, "name")]


def _with_state(handler, opcode: str, state, warps: int):
    """Bind the per-CTA state a stateful handler needs (a fresh one when the caller gave none)."""
    if state is None:
        from ptxsim.isa import misc
        if opcode in misc.OPCODES:
            state = misc.MiscState(warps=warps)

    def bound(inst, regs, target):
        return handler(inst, regs, target, state=state)
    return bound


def launch(ptx, kernel: str, grid, block, cluster=None, args=(), target: str | None = None,
           dynamic_shared: int = 0, *, workers=None, **options):
    """Run kernel `kernel` of a PTX module (text or parsed) over `grid` x `block` threads
    (`cluster`: CTAs per cluster, default the kernel's .reqnctapercluster or 1). `args` follow the
    kernel's parameters: numpy arrays / CPU torch tensors (global buffers; results land in them),
    scalars, `ptxsim.machine.tensormap.TensorMap` for CUtensorMap parameters. Options:
    `step_limit`, `progress` (a rich progress bar), `max_resident_ctas`, the sanitizer's
    `sanitize`, `trace`, `trace_ctas`, `schedule` (docs/sanitizer.md). `target` defaults to the
    module's .target (else sm_100a). Returns the finished
    launch (`.steps`). Raises DeadlockError when every live warp waits forever.

    `workers`: split the grid's waves across N processes on this machine (`workers=N`, or True
    for one per core) or a Ray cluster (`workers="ray"`, `"ray:ADDRESS"`, or the `ray` module);
    the result is the one-process result or a named MergeConflict (option
    `allow_order_dependent`). docs/distributed.md, `ptxsim.distributed.launch`.

    Every argument is checked first (ptxsim.machine.inputs: the arguments against the kernel's
    .param list, the geometry against its directives), and a module `ptxsim check` refuses is
    not run."""
    from ptxsim.machine.executor import _parsed
    from ptxsim.machine.executor import launch as _launch
    from ptxsim.machine.inputs import check_launch
    from ptxsim.ptx.module import Module
    distributed = workers is not None and workers is not False and not (
        isinstance(workers, int) and not isinstance(workers, bool) and workers == 1)
    known = _LAUNCH_OPTIONS | (_DISTRIBUTED_OPTIONS if distributed else frozenset())
    unknown = set(options) - known - _DISTRIBUTED_OPTIONS
    if unknown:
        raise OperandError(f"launch option '{sorted(unknown)[0]}' is not known to this ptxsim "
                           f"(known: {', '.join(sorted(known | {'workers'}))})")
    if isinstance(ptx, Module):
        module = ptx
    elif isinstance(ptx, str):
        module = _parsed(ptx)
    else:
        raise OperandError(f"launch: ptx must be PTX text (str) or a parsed Module, not "
                           f"{type(ptx).__name__}")
    if not isinstance(kernel, str):
        raise OperandError(f"launch: kernel must be the name of an .entry (str), not "
                           f"{type(kernel).__name__}")
    fn = next((f for f in module.functions if f.name == kernel and f.body is not None), None)
    if fn is None or not fn.is_entry:
        names = ", ".join(f.name for f in module.entries if f.body is not None) or "none"
        raise OperandError(f"launch: no kernel (.entry with a body) named '{kernel}' in the module "
                           f"(kernels: {names})")
    if target is None:                 # the module's own .target (its problems: _refuse_invalid)
        from ptxsim.isa.targets import PTXAS_TARGETS
        target = module.target if module.target in PTXAS_TARGETS else "sm_100a"
    grid, block, cluster, args, target, dynamic_shared = check_launch(
        fn, grid, block, cluster, args, target, dynamic_shared, options)
    _refuse_invalid(module)
    if distributed:
        from ptxsim.distributed.launch import launch as _distributed
        return _distributed(ptx if isinstance(ptx, str) else module, kernel, grid, block, cluster,
                            args, target, dynamic_shared,
                            workers=workers, **options)
    options.pop("allow_order_dependent", None)      # no merge in one process
    options.pop("new_session", None)
    options.pop("keep_workers", None)
    return _launch(module, kernel, grid, block, cluster, args, target, dynamic_shared, **options)


_LAUNCH_OPTIONS = frozenset({"step_limit", "progress", "max_resident_ctas",
                             "sanitize", "trace", "trace_ctas", "schedule"})   # docs/sanitizer.md
_DISTRIBUTED_OPTIONS = frozenset({"allow_order_dependent", "new_session", "keep_workers"})


def _refuse_invalid(module) -> None:
    """A module `ptxsim check` refuses is not run (ptxas would not have assembled it); the
    verdict is kept on the module object."""
    errs = getattr(module, "_check_errors", None)
    if errs is None:
        from ptxsim.ptx import errors_of, validate
        errs = errors_of(validate(module))
        try:
            module._check_errors = errs
        except AttributeError:
            pass
    if errs:
        from ptxsim.errors import PtxValidationError
        # the first problem in the code itself, else the first of the module's directives
        first = next((d for d in errs if d.opcode is not None), errs[0])
        others = [d for d in errs if d is not first][:3]
        more = "".join(f"; also line {d.loc.line}: {d.message}" for d in others)
        if len(errs) > 4:
            more += f" (and {len(errs) - 4} more; `ptxsim check` lists them all)"
        raise PtxValidationError(f"the module does not assemble: {first.message}{more}",
                                 first.loc.line, first.loc.col, first.loc.file)
