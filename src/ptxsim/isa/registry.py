"""Opcode -> semantics dispatch of the instruction families that register themselves (mma.sp,
misc, tcgen05.mma, ...). The kernel executor (`ptxsim.machine.handlers`) implements the base,
memory, control-flow and asynchronous instructions itself and falls back to these handlers for
the rest; `ptxsim.execute` uses them directly for registered opcodes and the executor otherwise.

A handler is `handler(instruction, regs, target) -> {register name: uint32 array (32*W,)}` where
`instruction` is a parsed `ptxsim.ptx.Instruction` and `regs` a `RegisterFile` (read-only view of
the caller's registers; `regs.read(name)` raises OperandError naming a missing register).

How a guard predicate `@p` applies is part of the registration (`guard=`):
- "warp": the instruction is .aligned / warp-synchronous: the guard must agree within a warp
  (else UndefinedBehavior) and guard-false warps keep their destination registers (mma, mma.sp);
- "thread": a per-thread instruction with no side effect: the handler computes every thread and
  guard-false threads keep their destination registers (video, integer, ...);
- "handler": the handler applies the guard itself (side effects: trap, nanosleep, pmevent, ...).
A handler registered with `state=True` is also given the caller's per-CTA state object
(`state=` keyword), e.g. the misc instructions' event log.

Instruction families register themselves with `@register("opcode")` in their own module. On the
first lookup every module of the `ptxsim.isa` package is imported (so a family under isa/ needs
nothing else); modules elsewhere that register handlers are listed in `PROVIDERS`.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from ptxsim.errors import ExecutionError

Handler = Callable[..., dict]
HANDLERS: dict[str, Handler] = {}
GUARDS = ("warp", "thread", "handler")
# opcode -> (guard mode, handler takes state=)
MODES: dict[str, tuple[str, bool]] = {}

# modules outside ptxsim.isa whose import registers handlers (imported on the first lookup)
PROVIDERS: tuple[str, ...] = ()
_loaded = False


def register(opcode: str, handler: Handler | None = None, *, guard: str = "warp",
             state: bool = False):
    """Register `handler` for `opcode` (usable as a decorator); see the module doc for `guard`
    and `state`."""
    if guard not in GUARDS:
        raise ValueError(f"guard must be one of {GUARDS}, got {guard!r}")

    def put(fn: Handler) -> Handler:
        if HANDLERS.get(opcode, fn) is not fn:
            raise ValueError(f"opcode '{opcode}' already has a handler: {HANDLERS[opcode]}")
        HANDLERS[opcode] = fn
        MODES[opcode] = (guard, state)
        return fn
    return put(handler) if handler is not None else put


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import ptxsim.isa as isa
    names = [f"{isa.__name__}.{m.name}" for m in pkgutil.iter_modules(isa.__path__)]
    for name in names + list(PROVIDERS):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:      # a family not merged yet
            if exc.name != name:
                raise


def handler_for(opcode: str) -> Handler:
    _load()
    try:
        return HANDLERS[opcode]
    except KeyError:
        raise ExecutionError(f"ptxsim has no semantics for opcode '{opcode}' (implemented: "
                             f"{', '.join(sorted(HANDLERS)) or 'none'})") from None


def mode_of(opcode: str) -> tuple[str, bool]:
    """(guard mode, takes state) of a registered opcode."""
    handler_for(opcode)
    return MODES[opcode]
