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
from ptxsim.machine.handlers import PURE_OPS, handler
from ptxsim.machine.params import param_offsets
from ptxsim.ptx import parse_module
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
    target = target or module.target or "sm_100a"
    gaps: dict[tuple, Gap] = {}
    for fn in module.functions:
        if fn.kind != ".entry":
            continue
        try:
            _, size = param_offsets(param_decls(fn))
            launch = Launch(module, fn.name, 1, 32, target=target, param_image=bytes(size))
            wave = Wave(launch, np.array([0]))
        except PtxsimError:
            continue                              # a launch-level problem, not coverage
        for pc, inst in enumerate(launch.program.instructions):
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
                key = (inst.loc.file, inst.loc.line, str(inst))
                gaps.setdefault(key, Gap(inst.loc.line, str(inst).strip(), _strip(why),
                                         inst.loc.file, inst.loc.col or 1))
    return sorted(gaps.values(), key=lambda g: (g.file or "", g.line))
