"""The families that register their semantics in `ptxsim.isa.registry` (warp-level mma / mma.sp,
misc brkpt / pmevent, ...), called per CTA on whole-warp uint32 register views, as
`ptxsim.execute` calls them.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ptxsim.errors import UnsupportedFeature
from ptxsim.isa import misc, registry
from ptxsim.isa import mma_sp, mma_sync
from ptxsim.isa.regs import RegisterFile
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.ptx.instruction import Register, RegisterPair, SpecialRegister, Vector


# ------------------------------------------------------------ families of ptxsim.isa.registry
def _registered(wave, inst):
    """Instructions whose semantics register in `ptxsim.isa.registry` (warp-level mma / mma.sp,
    video, misc brkpt / pmevent, ...): called per CTA on whole-warp register views (uint32
    bits, as `ptxsim.execute` passes them); only the executing lanes' outputs are written."""

    op = inst.opcode
    h = registry.handler_for(op)
    guard, wants_state = registry.mode_of(op)
    if op == "mma":
        # PTX ISA notes of 9.7.14.6.3 / 9.7.14.5.14 against the module's .version (the
        # handler's own checks take the target)
        sparse = any(q.startswith(".sp") for q in inst.qualifiers)
        (mma_sp if sparse else mma_sync).form_of(inst).check_version(
            getattr(wave.launch, "ptx_version", None))
    bare = dataclasses.replace(inst, predicate=None)
    names = set()
    for o in inst.operands:
        for e in (o.elements if isinstance(o, Vector) else
                  (o.first, o.second) if isinstance(o, RegisterPair) else (o,)):
            if isinstance(e, Register) and not isinstance(e, SpecialRegister) and \
                    wave.program.registers.get(e.name) is not None:
                names.add(e.name)
    where = f"line {inst.loc.line}: {inst}"
    states = {}

    def run(idx):
        ctas = wave.cta_of[idx]
        for cta in np.unique(ctas):
            sel = idx[ctas == cta]
            warps = np.unique(sel // WARP_SIZE)
            full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
            regs = {}
            for n in names:
                v = wave.reg(n)[full]
                regs[n] = v.astype(np.uint32) if v.dtype != np.uint64 else v
            rf = RegisterFile(regs, warps.size, where)
            kw = {}
            if wants_state:
                if op in misc.OPCODES:
                    st = states.get(int(cta))
                    if st is None:
                        st = states[int(cta)] = misc.MiscState(warps=wave.wpc)
                    kw["state"] = st
                    active = np.zeros(wave.wpc * WARP_SIZE, bool)
                    active[sel - int(cta) * wave.P] = True
                    kw["active"] = active
                    rf = _cta_regs(wave, names, int(cta), where)
                else:
                    raise UnsupportedFeature(f"{where}: stateful family '{op}' is not wired "
                                             "into the executor")
            out = h(bare, rf, wave.launch.target, **kw)
            if not out:
                continue
            if op in misc.OPCODES:
                base = int(cta) * wave.P
                pos = sel - base
            else:
                pos = np.searchsorted(full, sel)
            for name, bits in out.items():
                wave.write(Register(name), sel, np.asarray(bits)[pos])
        wave.advance(idx)
    return run


def _cta_regs(wave, names, cta, where):
    sl = slice(cta * wave.P, (cta + 1) * wave.P)
    regs = {n: wave.reg(n)[sl].astype(np.uint32) for n in names
            if wave.reg(n).dtype != np.uint64}
    return RegisterFile(regs, wave.wpc, where)
