"""`ptxsim.execute` for the instructions the kernel executor implements itself: the instruction
runs as a one-instruction kernel over 32*W threads (one CTA of W warps), registers given by the
caller, through the same handler the executor uses for whole kernels."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ptxsim.errors import OperandError, PoisonValueError
from ptxsim.isa.cta import CtaState
from ptxsim.isa.stack import Stack
from ptxsim.machine import poison
from ptxsim.machine.executor import Launch, Wave
from ptxsim.machine.grid import LaunchGeometry
from ptxsim.machine.handlers import attach_stack
from ptxsim.machine.mbarrier import Mbarriers
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.program import TYPE_BYTES, Program
from ptxsim.machine.watchdog import StepGuard
from ptxsim.ptx.instruction import Register, RegisterPair, Vector
from ptxsim.ptx.module import RegisterTable

_TYPE_OF = {np.dtype(np.bool_): ".pred", np.dtype(np.uint8): ".b8", np.dtype(np.uint16): ".b16",
            np.dtype(np.uint32): ".b32", np.dtype(np.uint64): ".b64",
            np.dtype(np.int32): ".b32", np.dtype(np.int64): ".b64", np.dtype(np.int16): ".b16",
            np.dtype(np.float32): ".b32", np.dtype(np.float64): ".b64",
            np.dtype(np.float16): ".b16"}


def _dest_names(inst) -> list[str]:
    if not inst.operands:
        return []
    d = inst.operands[0]
    els = (d.first, d.second) if isinstance(d, RegisterPair) else \
        d.elements if isinstance(d, Vector) else (d,)
    return [e.name for e in els if isinstance(e, Register) and e.name != "_"]


def _operand_names(inst) -> list[str]:
    out = []
    for o in inst.operands:
        els = (o.first, o.second) if isinstance(o, RegisterPair) else \
            o.elements if isinstance(o, Vector) else (o,)
        out += [e.name for e in els if isinstance(e, Register) and type(e) is Register]
        if getattr(o, "base", None):
            out.append(o.base)
    if inst.predicate is not None:
        out.append(inst.predicate.name)
    return out


def execute_one(inst, registers: Mapping[str, object], *, target: str, warps, where: str,
                state=None):
    regs, types = {}, {}
    n = None
    for name, value in registers.items():
        a = np.asarray(value)
        if a.ndim != 1:
            raise OperandError(f"{where}: register {name} must be a 1-D array over threads")
        if a.dtype not in _TYPE_OF:
            raise OperandError(f"{where}: register {name} has dtype {a.dtype}; use uint16/32/64 "
                               "bits or bool predicates")
        t = _TYPE_OF[a.dtype]
        if a.dtype.kind in "iu" and a.dtype.itemsize == 1 and set(np.unique(a)) <= {0, 1}:
            t = ".b8"
        types[name] = t
        if a.dtype.kind == "f":
            a = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
        elif a.dtype.kind == "i":
            a = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
        regs[name] = a
        n = a.shape[0] if n is None else n
        if a.shape[0] != n:
            raise OperandError(f"{where}: register {name} has {a.shape[0]} threads, others {n}")
    if warps is None:
        if n is None:
            raise OperandError(f"{where}: no registers given and no warps= count")
        if n % 32:
            raise OperandError(f"{where}: {n} threads is not a whole number of warps (32 each)")
        warps = n // 32
    elif n is not None and n != 32 * warps:
        raise OperandError(f"{where}: registers have {n} threads; warps={warps} needs "
                           f"{32 * warps}")
    given = dict(types)                   # the caller's registers (validated below)
    # destinations the caller did not give take the width the instruction names
    dest = _dest_names(inst)
    # the destination's type: cvt / set / slct name it first (slct.dtype.ctype, 9.7.8.2),
    # cvt.pack writes a 32-bit d whatever it packs (9.7.9.21); other instructions name it last
    itype = (".b32" if inst.opcode == "cvt" and inst.has(".pack") else
             inst.types[0] if inst.opcode in ("cvt", "set", "slct") and inst.types else
             inst.types[-1] if inst.types else ".b32")
    for name in dest:
        if name not in types:
            types[name] = ".pred" if (inst.opcode in ("setp", "vote") and itype != ".b32") or \
                (isinstance(inst.operands[0], RegisterPair) and
                 name == inst.operands[0].second.name) else _container(itype, inst)
    for name in _operand_names(inst):
        if name not in types:
            raise OperandError(f"{where}: register {name} is read but not given in `registers`")
    # the instruction with the registers' widths as ptxas would judge it (`add.u32 %r1, %r2, %r2`
    # with a 64-bit %r2 is refused, not computed on half of its bits)
    from ptxsim.errors import PtxValidationError
    from ptxsim.ptx import errors_of, validate
    # (target and PTX-version notes stay the handlers' business: they name an unmodelled form
    # as UnsupportedFeature, for example)
    from ptxsim.ptx.legality.common import is_note
    errs = [d for d in errors_of(validate(inst, target=target, registers=given or None))
            if not is_note(d)]
    if errs:
        raise PtxValidationError(f"{where}: {errs[0].message}")
    prog = Program(None, None, [inst], {}, RegisterTable((), extra=types), [])
    launch = Launch.__new__(Launch)
    launch.program, launch.target = prog, target
    launch.ptx_version = None        # one instruction, no module: the newest PTX ISA
    launch.geometry = LaunchGeometry.make(1, 32 * warps)
    launch.dynamic_shared, launch.static_shared, launch.local_bytes = 0, 0, 0
    launch.param_image, launch.const_image = b"", b""
    launch.gmem, launch.symbols, launch.steps = GlobalMemory(), {}, 0
    launch.guard = StepGuard()
    wave = Wave(launch, np.array([0]))
    if isinstance(state, CtaState):
        # the caller's CTA: its shared memory bytes and Tensor Memory
        sh = wave.memory.shared
        sh.data = state.smem.reshape(1, -1)
        sh.size = sh.static_bytes = state.smem.size
        sh.dynamic_bytes = 0
        wave.mbar = Mbarriers(sh)
        wave.tstate[0] = state
    elif isinstance(state, Stack):
        # the caller's per-thread stacks: stacksave / alloca / stackrestore and ld / st.local
        # act on them, so a sequence of execute calls shares one stack
        if state.threads != 32 * warps:
            raise OperandError(f"{where}: the Stack has {state.threads} threads; this call runs "
                               f"{32 * warps}")
        attach_stack(wave, state)
    elif state is not None:
        raise OperandError(f"{where}: state must be a ptxsim.isa.cta.CtaState or a "
                           f"ptxsim.isa.stack.Stack for this instruction, got "
                           f"{type(state).__name__}")
    for name, a in regs.items():
        wave.regs[name] = a.astype(wave.reg(name).dtype, copy=True)
    idx = np.arange(32 * warps)
    wave.compile(0)(idx)
    while wave.proxy.progress():          # asynchronous effects (tcgen05.cp / shift, copies)
        pass
    for name in dest:                     # a returned value is a use (machine/poison.py)
        a = wave.poison.get(name)
        if a is not None and (a >= 0).any():
            t = int(np.argmax(a >= 0))
            pinst, why = poison.chain(wave, int(a[t]))[0]
            e = PoisonValueError(f"{where}: {pinst}: {why} (thread {t}); the value returned in "
                                 f"{name} is unspecified", produced_line=pinst.loc.line,
                                 produced=str(pinst), used=str(pinst),
                                 use="the value returned to the caller", thread=t)
            # the bits ptxsim computed, and which threads' are unspecified, for a caller that
            # wants them anyway (e.g. to compare with a hardware record)
            e.values = {n: wave.regs[n] for n in dest if n in wave.regs}
            e.poison = {n: wave.poison[n] >= 0 for n in dest if n in wave.poison}
            raise e
    return {name: wave.regs[name] for name in dest if name in wave.regs}


def _container(t: str, inst) -> str:
    if inst.opcode in ("mul", "mad") and inst.has(".wide"):
        return {2: ".b32", 4: ".b64"}.get(TYPE_BYTES.get(t, 4), ".b64")
    return {1: ".b16", 2: ".b16", 4: ".b32", 8: ".b64"}.get(TYPE_BYTES.get(t, 4), ".b32")
