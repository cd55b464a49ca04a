"""Which instructions of a module the executor cannot run, without running it.

Every instruction's handler is built the way a launch builds it (`machine.handlers.handler`,
for a one-CTA wave of each `.entry` and the `.func`s it calls): a builder decides at that point
what the instruction is (opcode, qualifiers, operand kinds) and refuses what ptxsim has no
semantics for — `ExecutionError` "no semantics", `UnsupportedFeature`, or an isa table that
does not know the form. Errors that depend on the launch (operand values, buffers, the target a
launch picks) are not coverage gaps and are not reported.

    unexecutable(module_or_text, target=None) -> [Gap(line, instruction, reason)]

`ptxsim check` warns with each gap's line (UnexecutableInstructionWarning);
`scripts/ptx_coverage.py` reports them for every PTX file of the test data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import (ExecutionError, PtxsimError, PtxValidationError, UnsupportedFeature)
from ptxsim.machine.executor import Launch, Wave, param_decls
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.handlers import PURE_OPS, handler
from ptxsim.machine.params import param_offsets
from ptxsim.ptx import parse_module
from ptxsim.ptx.gcpause import paused
from ptxsim.ptx.instruction import (Address, Group, Label, Register, RegisterPair,
                                    SpecialRegister, Vector)
from ptxsim.ptx.module import Module


@dataclass(frozen=True)
class Gap:
    line: int
    instruction: str
    reason: str
    file: str | None = None
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file or '<ptx>'}:{self.line}: {self.instruction}  -- {self.reason}"


def _gap_reason(e: Exception) -> str | None:
    """The reason an instruction cannot run, or None when the error is not a coverage gap."""
    msg = getattr(e, "message", None) or str(e)
    if isinstance(e, UnsupportedFeature):
        return msg
    if isinstance(e, ExecutionError) and "no semantics" in msg:
        return "no semantics in ptxsim"
    if isinstance(e, PtxValidationError) and ("unknown or misplaced qualifier" in msg or
                                              "does not exist" in msg or
                                              "no packed conversion" in msg or
                                              "unknown opcode" in msg.lower()):
        return msg
    return None


def _strip(msg: str) -> str:
    # handlers prefix "line N: <instruction>: " to their errors; the gap names both already
    while msg.startswith("line ") and ": " in msg:
        head, _, rest = msg.partition(": ")
        if not head[5:].isdigit():
            break
        _, _, msg = rest.partition(": ") if rest.count(": ") else ("", "", rest)
    return msg


def unexecutable(ptx, target: str | None = None) -> list[Gap]:
    module = ptx if isinstance(ptx, Module) else parse_module(ptx)
    with paused():          # the programs built here stay alive to the end (ptx/gcpause.py)
        return _unexecutable(module, target)


def _unexecutable(module: Module, target: str | None) -> list[Gap]:
    target = target or module.target or "sm_100a"
    gaps: dict[tuple, Gap] = {}
    # Instructions of one form are built once: a builder decides from the opcode, the
    # qualifiers and the operands' kinds and declared types (`_Shapes`), so a form that built
    # is not built again (CUTLASS's FMHA example, nvcc 13.0: 1,759 forms in 240,421
    # instructions of 44 kernels).
    # Forms that failed are built at every occurrence, each with its own message.
    built: set = set()
    forms: dict = {}
    gmem, module_globals = GlobalMemory(), None
    for fn in module.functions:
        if fn.kind != ".entry":
            continue
        try:
            _, size = param_offsets(param_decls(fn))
            # the module's .global variables are laid out (and their initializers converted)
            # by the first launch only; later ones get their addresses
            launch = Launch(module, fn.name, 1, 32, target=target, param_image=bytes(size),
                            gmem=gmem, module_globals=module_globals)
            wave = Wave(launch, np.array([0]))
        except PtxsimError:
            continue                              # a launch-level problem, not coverage
        if module_globals is None:
            names = {v.name for v in module.variables if v.space == ".global"}
            module_globals = {n: s.address for n, s in launch.symbols.items() if n in names}
        shape = _Shapes(launch.program.registers, forms)
        for pc, inst in enumerate(launch.program.instructions):
            key = shape.of(inst)
            if key in built:
                continue
            try:
                run = handler(wave, pc, inst)
                if inst.opcode in PURE_OPS:
                    # register-to-register: some isa functions decide the form when called;
                    # a call over no thread has no effect and raises what a launch would
                    run(np.zeros(0, np.int64))
            except Exception as e:                # noqa: BLE001 (classified below)
                why = _gap_reason(e)
                if why is None:
                    continue
                where = (inst.loc.file, inst.loc.line, str(inst))
                gaps.setdefault(where, Gap(inst.loc.line, str(inst).strip(), _strip(why),
                                         inst.loc.file, inst.loc.col or 1))
            else:
                built.add(key)
    return sorted(gaps.values(), key=lambda g: (g.file or "", g.line))


class _Shapes:
    """The form of an instruction as a handler builder sees it: opcode, qualifiers, guard, and
    each operand with its registers replaced by their declared type (and vector size) in the
    kernel; constants, symbols, labels and special registers as written, except the target of
    `bra` (its builder reads the resolved target from the program). Operand forms are numbered
    (`ids`, shared by the kernels of a module), so that a form is a flat tuple to hash."""

    def __init__(self, registers, ids: dict):
        self.registers = registers
        self.memo: dict = {}                      # id(operand) -> (operand, its form's number)
        self.types: dict = {}                     # register name -> form
        self.ids = ids                            # operand form -> number

    def of(self, inst) -> tuple:
        memo, ops = self.memo, []
        for op in inst.operands:
            f = memo.get(id(op))
            if f is None:
                form = self.operand(op)
                k = self.ids.get(form)
                if k is None:
                    k = self.ids[form] = len(self.ids)
                f = memo[id(op)] = (op, k)
            ops.append(f[1])
        if inst.opcode == "bra" and ops and isinstance(inst.operands[0], Label):
            ops[0] = -1                           # any label
        p = inst.predicate
        return (inst.opcode, inst.qualifiers, tuple(ops),
                None if p is None else (self.reg(p.name), p.negated))

    def reg(self, name: str):
        f = self.types.get(name)
        if f is None:
            t = self.registers.get(name)
            f = self.types[name] = name if t is None or name == "_" else \
                (t, self.registers.vector(name))
        return f

    def operand(self, op):
        t = type(op)
        if t is Register:
            return ("r", self.reg(op.name), op.selector, op.negated, op.minus)
        if t is SpecialRegister:
            return ("s", op.name, op.selector)
        if t is Address:
            base = op.base if op.base is None else self.reg(op.base)
            return ("a", base, op.offset, None if op.vector is None else self.operand(op.vector))
        if isinstance(op, SpecialRegister):
            return ("s", op.name, op.selector)
        if isinstance(op, Register):
            return ("r", self.reg(op.name), op.selector, op.negated, op.minus)
        if isinstance(op, Address):
            base = op.base if op.base is None else self.reg(op.base)
            return ("a", base, op.offset, None if op.vector is None else self.operand(op.vector))
        if isinstance(op, (Vector, Group)):
            return (type(op).__name__, tuple(self.operand(e) for e in op.elements))
        if isinstance(op, RegisterPair):
            return ("p", self.operand(op.first), self.operand(op.second))
        return op                                 # Immediate, Label: as written
