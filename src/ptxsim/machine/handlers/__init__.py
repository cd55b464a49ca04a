"""The kernel executor's instruction handlers, one module per family, and the dispatch table.

`handler(wave, pc, inst)` returns a function of the active thread indices that performs the
instruction for all of them at once (one numpy operation over threads, warps and CTAs) and
moves their program counters. The handlers reach the machine through the wave (`Wave.read /
write / reader / writer / addr`, `wave.memory`, `wave.mbar`, `wave.proxy`) and the semantics
through `ptxsim.isa`; they never import the executor (docs/ARCHITECTURE.md).

module        opcodes
arith         the base arithmetic / logic / compare / convert set (BASE_OPS), shfl / vote /
              match / redux / elect / activemask, mov, the video instructions
memory        ld, ldu, st, atom, red, cvta, isspacep, mapa, getctarank
control       bra, brx, call (vprintf -> printf), ret, trap  (exit: Wave.exit_threads)
stack         stacksave, stackrestore, alloca
sync          bar / barrier (.sync, .arrive, .red; bar.warp.sync), barrier.cluster, mbarrier.*
tcgen05       tcgen05.alloc / dealloc / relinquish_alloc_permit / ld / st / wait / mma /
              commit / cp / shift
tma           cp.async.bulk.tensor (.tile), cp.async.bulk, cp.async, the commit_group / wait_group /
              wait_all of both families, cp.async.mbarrier.arrive, tensormap.replace, tensormap.cp_fenceproxy
tma_modes     cp.reduce.async.bulk{.tensor}; the .tile::gather4 / .tile::scatter4 / .im2col modes
              of cp.async.bulk.tensor
matrix        ldmatrix, stmatrix (movmatrix: registered)
wgmma         wgmma.fence / mma_async / commit_group / wait_group
clc           clusterlaunchcontrol.try_cancel / query_cancel
printf        the vprintf system call (device printf)
registered    every family of `ptxsim.isa.registry` not above (mma, mma.sp, brkpt, pmevent, ...)
(no effect)   NO_OPS: fences, membar, prefetch, nanosleep, setmaxnreg, ...

A new instruction: its semantics in `ptxsim.isa`, a builder `_name(wave, inst)` in the module of
its family, and one row in `TABLE` below (docs/ARCHITECTURE.md, "Adding an instruction").
"""
from __future__ import annotations

from ptxsim.errors import ExecutionError, OperandError, PtxValidationError, UnsupportedFeature, \
    UndefinedBehavior
from ptxsim.isa import registry
from ptxsim.machine import poison
from ptxsim.machine.handlers import (arith, clc, control, matrix, memory, registered, stack, sync,
                                     tcgen05, tma, tma_modes, wgmma)
from ptxsim.machine.handlers.stack import attach_stack  # noqa: F401 (ptxsim.execute state=Stack)
from ptxsim.machine.handlers.sync import cluster_update  # noqa: F401 (Wave.exit_threads)

# instructions accepted with no effect on results (docs/executor.md)
NO_OPS = {"fence", "membar", "prefetch", "prefetchu", "nanosleep", "griddepcontrol",
          "setmaxnreg", "fence.proxy", "cp.async.bulk.prefetch",
          "cp.async.bulk.prefetch.tensor", "applypriority", "discard", "createpolicy",
          "tcgen05.fence"}


def _noop(wave, pc, inst):
    san = wave.san
    if san is None or not san.enabled:
        return wave.advance
    if inst.opcode == "fence.proxy" and inst.has(".async"):
        def proxy_fence(idx):              # generic -> async proxy (sanitizer, 9.7.16.6.5)
            san.proxy_fence(idx)
            wave.advance(idx)
        return proxy_fence
    if inst.opcode == "tcgen05.fence":
        before = inst.has("::before_thread_sync")

        def tc_fence(idx):                 # tcgen05 thread-sync fences (sanitizer, full mode)
            san.tc_fence(idx, before)
            wave.advance(idx)
        return tc_fence
    return wave.advance


def _exit(wave, pc, inst):
    return wave.exit_threads


def _bar(wave, pc, inst):
    if inst.has(".warp"):                 # bar.warp.sync membermask (9.7.13.2)
        return wave.advance
    if inst.has(".cluster"):
        return None
    return sync._bar(wave, inst)


def _w(build):
    """A builder of (wave, inst) as a table entry of (wave, pc, inst)."""
    return lambda wave, pc, inst: build(wave, inst)


TABLE = {}
TABLE.update({op: _w(arith._base) for op in arith.BASE_OPS})
TABLE.update({op: _w(arith._warp) for op in arith.WARP_OPS})
TABLE["mov"] = _w(arith._mov)
TABLE.update({op: _w(arith._video) for op in arith.VIDEO_OPS})
TABLE.update({"ld": _w(memory._ld), "ldu": _w(memory._ld), "st": _w(memory._st),
              "atom": _w(memory._atom), "red": _w(memory._atom), "cvta": _w(memory._cvta),
              "isspacep": _w(memory._isspacep), "mapa": _w(memory._mapa),
              "getctarank": _w(memory._mapa)})
TABLE.update({"bra": control._bra, "brx": control._brx, "call": control._call,
              "ret": lambda wave, pc, inst: control._ret(wave), "exit": _exit,
              "trap": _w(control._trap)})
TABLE.update({op: _w(stack._stack_op) for op in stack.STACK_OPS})
TABLE.update({"bar": _bar, "barrier": _bar, "barrier.cluster": _w(sync._cluster_bar)})
TABLE.update({op: _w(sync._mbarrier) for op in sync.MBARRIER_OPS})
TABLE.update({op: _noop for op in NO_OPS})
TABLE.update({op: _w(tcgen05.BUILDERS[op]) for op in tcgen05.BUILDERS})
TABLE.update({"cp.async.bulk.tensor": _w(tma._tma), "cp.async.bulk": _w(tma._bulk),
              "cp.async.bulk.commit_group": _w(tma._commit_group),
              "cp.async.commit_group": _w(tma._commit_group),
              "cp.async.bulk.wait_group": _w(tma._wait_group),
              "cp.async.wait_group": _w(tma._wait_group),
              "cp.async.wait_all": _w(tma._wait_group),
              "cp.async": _w(tma._cp_async),
              "cp.async.mbarrier.arrive": _w(tma._cp_async_arrive),
              "tensormap.replace": _w(tma._tensormap_replace),
              "tensormap.cp_fenceproxy": _w(tma._tensormap_cp_fenceproxy),
              "cp.reduce.async.bulk": _w(tma_modes.reduce_bulk),
              "cp.reduce.async.bulk.tensor": _w(tma._reduce_tensor)})
TABLE.update({"ldmatrix": _w(matrix._ldmatrix), "stmatrix": _w(matrix._stmatrix)})
TABLE.update({op: _w(b) for op, b in wgmma.BUILDERS.items()})
TABLE.update({"clusterlaunchcontrol.try_cancel": _w(clc._clc_try_cancel),
              "clusterlaunchcontrol.query_cancel": _w(clc._clc_query)})


# Poison values (machine/poison.py): the opcodes through which an unspecified value flows from
# sources to destinations without an effect outside the registers (the hints of NO_OPS have
# none on results; `discard` makes memory undefined, so it is not one of them); the cross-lane
# ones pass it to every lane of the warp (warp-level mma: a lane's D holds products of other
# lanes' A / B fragments); every other opcode that reads a poison register raises
# PoisonValueError (the loads pass an unspecified address on to their data: poison.py).
PURE_OPS = frozenset(arith.BASE_OPS | {"mov", "cvta", "mapa", "getctarank", "isspacep"} |
                     set(arith.VIDEO_OPS) | (NO_OPS - {"discard"}))
CROSS_LANE_OPS = frozenset({"shfl", "vote", "match", "redux", "mma", "movmatrix"})


def poison_kind(op: str) -> str:
    """How a poison source of opcode `op` is treated (machine/poison.py)."""
    if op in PURE_OPS:
        return poison.PURE
    if op in CROSS_LANE_OPS:
        return poison.CROSS_LANE
    return poison.EFFECT


def handler(wave, pc: int, inst):
    """The function performing `inst` (at `pc`) for the active threads of `wave`."""
    op = inst.opcode

    def loc():                         # the error prefix, made only for an error
        return f"line {inst.loc.line}: {inst}"
    try:
        build = TABLE.get(op)
        if build is None and op.startswith("mbarrier."):
            build = _w(sync._mbarrier)           # names the mbarrier form it does not model
        if build is not None:
            h = build(wave, pc, inst)
            if h is not None:
                return h
        registry._load()
        if op in registry.HANDLERS:
            return registered._registered(wave, inst)
    except (OperandError, UnsupportedFeature, ExecutionError, UndefinedBehavior) as e:
        raise type(e)(f"{loc()}: {e}") from None
    except PtxValidationError as e:      # an isa legality check (target / PTX version notes)
        if e.line is not None:
            raise
        raise type(e)(f"{e.message} ({inst})", line=inst.loc.line, col=inst.loc.col,
                      file=inst.loc.file) from None
    raise ExecutionError(f"{loc()}: ptxsim has no semantics for '{inst.mnemonic}'")
