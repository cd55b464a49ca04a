"""Control flow: bra, brx.idx, call / ret (a per-thread call stack, the argument and return
`.param` copies, per-depth frames of recursive functions; the extern `vprintf` and
`__assertfail` go to `handlers.printf`) and trap.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError, TrapExecuted, UndefinedBehavior, UnsupportedFeature
from ptxsim.machine.handlers import printf
from ptxsim.machine.handlers.common import callparam
from ptxsim.machine.program import _callee_name
from ptxsim.ptx.instruction import Address, Group


# ---------------------------------------------------------------------------- control flow
def _bra(wave, pc, inst):
    target = wave.program.branch_target[pc]
    pcs = wave.pc

    def run(idx):
        pcs[wave._span if idx is wave._span_idx else idx] = target
    return run


def _brx(wave, pc, inst):
    """brx.idx index, tlist (9.7.8.2): jump to the index-th label of the .branchtargets list;
    an index outside the list is undefined behaviour."""
    table = np.asarray(wave.program.brx_targets[pc], np.int64)

    def run(idx):
        i = wave.read(inst.operands[0], idx, 32).astype(np.int64)
        if ((i < 0) | (i >= table.size)).any():
            raise UndefinedBehavior(f"line {inst.loc.line}: brx.idx index "
                                    f"{int(i[(i < 0) | (i >= table.size)][0])} outside the "
                                    f"{table.size}-entry .branchtargets list")
        wave.pc[idx] = table[i]
    return run


MAX_CALL_DEPTH = 64


def _call(wave, pc, inst):
    """call{.uni} (ret), func, (args) (9.7.8.4): the actual .param bytes are copied into the
    callee's formal parameters, the call site is pushed on the thread's stack."""
    callee = wave.program.functions[_callee_name(inst)]
    groups = [o for o in inst.operands if isinstance(o, Group)]
    has_ret = isinstance(inst.operands[0], Group)
    args = groups[1] if has_ret else (groups[0] if groups else None)
    actual = [e.name for e in args.elements] if args is not None else []
    if callee.entry < 0:                              # extern system call (program.py)
        if callee.name == "__assertfail":
            return printf.assertfail_handler(wave, inst, actual)
        return printf.vprintf_handler(wave, inst, actual,
                                      inst.operands[0].elements[0].name if has_ret else None)
    if len(actual) != len(callee.params):
        raise OperandError(f"call of {callee.name} with {len(actual)} arguments; it declares "
                           f"{len(callee.params)} parameters")

    def run(idx):
        if (wave.sp[idx] >= MAX_CALL_DEPTH).any():
            raise UnsupportedFeature(f"line {inst.loc.line}: call depth beyond {MAX_CALL_DEPTH} "
                                     "(ptxsim's call stack; the GPU's 1024-byte stack would "
                                     "overflow at a smaller depth for most frames)")
        args = []
        for formal, act in zip(callee.params, actual):
            src = callparam(wave, Address(act))
            args.append(src[idx].copy())
        if callee.recursive:
            # the callee's registers and .params are per activation: save the live ones at
            # this depth (restored by ret); the arguments were read before
            _save_frame(wave, callee.name, idx)
        for formal, a in zip(callee.params, args):
            dst = callparam(wave, Address(formal))
            n = min(a.shape[1], dst.shape[1])
            dst[idx, :n] = a[:, :n]
        wave.stack[idx, wave.sp[idx]] = pc
        wave.sp[idx] += 1
        wave.pc[idx] = callee.entry
    return run


def _frame_names(wave, func: str):
    prefix = func + "::"
    regs = [n for n in wave.regs if n.startswith(prefix)]
    params = [n for n in wave.program.call_params if n.startswith(prefix)]
    return regs, params


def _save_frame(wave, func: str, idx) -> None:
    """Save the registers and call .params of `func` ("func::name") of the threads idx at
    their current call depth (before the call pushes)."""
    frames = wave.__dict__.setdefault("frames", {})
    depth = wave.sp[idx]
    regs, params = _frame_names(wave, func)
    for kind, names in (("reg", regs), ("param", params)):
        for n in names:
            cur = wave.regs[n] if kind == "reg" else callparam(wave, Address(n))
            store = frames.get((kind, n))
            if store is None:
                store = frames[(kind, n)] = np.zeros((MAX_CALL_DEPTH,) + cur.shape, cur.dtype)
            store[depth, idx] = cur[idx]


def _restore_frame(wave, func: str, sel) -> None:
    """ret of `func`: its registers and .params of the threads sel (whose depth was already
    popped) get the values saved at the call."""
    frames = wave.__dict__.get("frames", {})
    depth = wave.sp[sel]
    for (kind, n), store in frames.items():
        if not n.startswith(func + "::"):
            continue
        cur = wave.regs.get(n) if kind == "reg" else callparam(wave, Address(n))
        if cur is not None:
            cur[sel] = store[depth, sel]


def _ret(wave):
    """ret: back to the call site (copying the formal return parameters into the call's
    return .param), or exit in the kernel itself."""

    def run(idx):
        top = wave.sp[idx] == 0
        if top.any():
            wave.exit_threads(idx[top])
        rest = idx[~top]
        if not rest.size:
            return
        wave.sp[rest] -= 1
        sites = wave.stack[rest, wave.sp[rest]]
        for site in np.unique(sites):
            sel = rest[sites == site]
            call = wave.program.instructions[int(site)]
            callee = wave.program.functions[_callee_name(call)]
            rets = []
            if isinstance(call.operands[0], Group):
                rets = [(e.name, callparam(wave, Address(formal))[sel].copy())
                        for formal, e in zip(callee.returns, call.operands[0].elements)]
            if callee.recursive:
                _restore_frame(wave, callee.name, sel)
            for name, v in rets:
                dst = callparam(wave, Address(name))
                n = min(v.shape[1], dst.shape[1])
                dst[sel, :n] = v[:, :n]
            wave.pc[sel] = int(site) + 1
    return run


def _trap(wave, inst):
    """trap (9.7.19.4): stops the launch with TrapExecuted naming the line and a thread."""
    def trap(idx):
        raise TrapExecuted(f"line {inst.loc.line}: {inst}: trap executed by thread {int(idx[0])}")
    return trap
