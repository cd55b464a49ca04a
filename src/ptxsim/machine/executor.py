"""The kernel executor: runs one `.entry` of a parsed PTX module over a grid of CTAs.

Scheduling model (documented choice, docs/executor.md):
- The CTAs of one *wave* (whole clusters, `LaunchGeometry.waves`) run in step. Every thread of
  the wave has its own program counter; each step executes the instruction at the LOWEST pc held
  by any runnable thread, for all runnable threads at that pc at once (across warps and CTAs) in
  one numpy operation. Threads that diverge reconverge naturally: the ones behind run first and
  catch up at the join point (a thread that never reaches it simply keeps its pc).
- A thread waiting at a barrier (bar.sync, barrier.cluster.wait) or on an mbarrier phase
  (mbarrier.try_wait / test_wait that would return false) is suspended and leaves the set of
  runnable threads; it is released when its condition holds. When no thread can run, the
  asynchronous proxy completes queued operations (TMA, tcgen05.mma / cp / commit); if nothing is
  queued either, the launch stops with a `DeadlockError` naming every warp's line and reason.
- Registers are arrays over all threads of the wave, typed by their `.reg` declaration
  (uint8/16/32/64 bits, bool predicates).
"""
from __future__ import annotations

import gc
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import (CURRENT, AsyncProxyError, DeadlockError, OperandError, PtxsimError,
                           PtxValidationError, UndefinedBehavior, UnsupportedFeature)
from ptxsim.machine.async_proxy import AsyncProxy
from ptxsim.machine.grid import WARP_SIZE, LaunchGeometry
from ptxsim.machine import poison
from ptxsim.machine.handlers import cluster_update, handler, poison_kind
from ptxsim.machine.handlers import tcgen05 as tcgen05_handlers
from ptxsim.machine.mbarrier import Mbarriers
from ptxsim.machine.memory import CLUSTER_RANK_SHIFT, GlobalMemory, Memory
from ptxsim.machine.params import pack_params, param_offsets
from ptxsim.machine import sanitizer as _sanitizer
from ptxsim.machine.program import TYPE_BYTES, UINT, Program
from ptxsim.machine.program import reg_dtype as _reg_dtype
from ptxsim.machine.watchdog import (BLOCKED, EXITED, NO_WAIT, RUN, WAIT_BAR, WAIT_CLUSTER,
                                     WAIT_MBAR, WAIT_PEER, WAIT_TMEM, StepGuard, Wait,
                                     deadlock_error)
from ptxsim.ptx import parse_module
from ptxsim.ptx.instruction import (Address, Immediate, Label, Register, RegisterPair,
                                    SpecialRegister)
from ptxsim.ptx.module import Module

DEFAULT_WAVE_THREADS = 16384


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _var_bytes(v) -> int:
    n = TYPE_BYTES.get(v.type or ".b8", 1)
    for a in v.attrs:
        if a.startswith(".v") and a[2:].isdigit():
            n *= int(a[2:])
    for d in v.dims:
        if d is None:
            return 0
        n *= int(d)
    return n


@dataclass
class Symbol:
    space: str          # "shared::cta", "global", "param", "local", "const"
    address: int


class Wave:
    """The resident CTAs of one wave and all their threads' state."""

    def __init__(self, launch: "Launch", ctas: np.ndarray):
        self.launch = launch
        self.program = launch.program
        geo = launch.geometry
        self.ctas = np.asarray(ctas, np.int64)
        self.n_ctas = self.ctas.size
        self.wpc = geo.warps_per_cta
        self.P = self.wpc * WARP_SIZE                   # thread slots per CTA (padded to warps)
        self.N = self.n_ctas * self.P
        self.memory = Memory(n_ctas=self.n_ctas, threads_per_cta=self.P,
                             cluster_size=geo.cluster_size, static_shared=launch.static_shared,
                             dynamic_shared=launch.dynamic_shared, local_bytes=launch.local_bytes,
                             param=launch.param_image, const=launch.const_image,
                             global_memory=launch.gmem)
        self.mbar = Mbarriers(self.memory.shared)
        self.proxy = AsyncProxy()
        T = geo.threads_per_cta
        real = (np.arange(self.N) % self.P) < T
        self.real = real
        self.pc = np.zeros(self.N, np.int64)
        self.status = np.where(real, RUN, EXITED).astype(np.int8)
        self.regs: dict[str, np.ndarray] = {}
        self.cc = np.zeros(self.N, bool)                  # CC.CF of add.cc / addc ...
        sregs = geo.special_registers(self.ctas, dynamic_smem=launch.dynamic_shared,
                                      total_smem=launch.static_shared + launch.dynamic_shared)
        slot = np.flatnonzero(real)
        self.sregs = {}
        for k, v in sregs.items():
            full = np.zeros(self.N, v.dtype)
            full[slot] = v
            self.sregs[k] = full
        # why each blocked thread waits (vectorised; one entry per thread of the wave):
        # WAIT_MBAR: mbarrier (wait_cta, wait_off) phase parity wait_par / token wait_tok
        # (wait_is_par says which); WAIT_BAR: barrier key wait_cta * 64 + id in wait_bar;
        # WAIT_CLUSTER: the cluster index in wait_cta; WAIT_TMEM: a tcgen05.alloc of wait_par
        # columns in CTA wait_cta, retried once tmem_frees differs from wait_tok; WAIT_PEER: a
        # .cta_group::2 alloc / dealloc of CTA wait_cta waiting for the peer CTA's warp (the
        # peer's issue releases it: handlers/tcgen05.py)
        self.wait_kind = np.zeros(self.N, np.int8)
        self.wait_cta = np.zeros(self.N, np.int64)
        self.wait_off = np.zeros(self.N, np.int64)
        self.wait_par = np.zeros(self.N, np.int64)
        self.wait_tok = np.zeros(self.N, np.uint64)
        self.wait_is_par = np.zeros(self.N, bool)
        self.wait_bar = np.zeros(self.N, np.int64)
        self.bars: dict[tuple, dict] = {}                 # (cta, id) -> waiters / arrived
        ncl = max(1, self.n_ctas // geo.cluster_size)
        self.cl_arrive = np.zeros(self.N, np.int64)      # barrier.cluster arrivals per thread
        self.cl_wait = np.zeros(self.N, np.int64)
        self.cl_done = np.zeros(ncl, np.int64)           # completed phases per cluster
        self.compiled: dict[int, object] = {}
        self.cta_of = np.arange(self.N) // self.P
        # a shared variable's address carries the CTA's rank in the cluster in bits 24+
        # (machine/memory.py): per thread, None without a cluster (rank 0, plain offsets)
        cs = geo.cluster_size
        self.smem_rank = None if cs == 1 else \
            ((self.cta_of % cs).astype(np.uint64) << np.uint64(CLUSTER_RANK_SHIFT))
        self.tstate = {}                                  # per-CTA tcgen05 state (lazy)
        self.on_progress = None                           # (fraction of threads done, steps)
        self.callparams: dict[str, np.ndarray] = {}       # per-thread call .param bytes
        self.stack = np.zeros((self.N, 64), np.int64)     # call sites
        self.sp = np.zeros(self.N, np.int64)
        # the thread indices of the current step when they are one run of consecutive threads
        # (the usual case: a converged wave), and that run as a slice: per-thread arrays are
        # then indexed by the slice (a view) instead of a gather / scatter. Recognised by
        # identity (`_at`), so a subset or any other array takes the general path.
        self._span_idx: np.ndarray | None = None
        self._span = slice(0, 0)
        self._declared: dict = {}                         # Wave.declared
        self.exited_ctas: set[int] = set()                # CTAs whose every thread exited
        self.mbar_live = False                            # an mbarrier.init has run (sync.py)
        self.tmem_frees = 0                               # tcgen05.dealloc count (WAIT_TMEM)
        self.poison: dict[str, np.ndarray] = {}          # machine/poison.py
        self.poison_origins: list = []
        # the sanitizer's state for this wave (machine/sanitizer), None when it is off
        san = getattr(launch, "sanitizer", None)
        self.san = san.wave(self) if san is not None else None

    def _at(self, idx):
        """`idx`, or the equivalent slice when `idx` is the current step's consecutive run."""
        return self._span if idx is self._span_idx else idx

    def advance(self, idx) -> None:
        """pc += 1 for the threads `idx`."""
        self.pc[self._span if idx is self._span_idx else idx] += 1

    # ------------------------------------------------------------------ registers / operands
    def reg(self, name: str) -> np.ndarray:
        r = self.regs.get(name)
        if r is None:
            t = self.program.registers.get(name)
            if t == ".b128":                              # (N, 2) uint64: [low, high]
                r = self.regs[name] = np.zeros((self.N, 2), np.uint64)
                return r
            dt = _reg_dtype(t)
            if dt is None:
                raise OperandError(f"register {name} is not declared with .reg (or has an "
                                   f"unsupported type {t})")
            r = self.regs[name] = np.zeros(self.N, dt)
        return r

    def sreg(self, op) -> np.ndarray:
        key = op.name + (op.selector or "")
        if key in ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%clock_hi",
                   "%globaltimer_hi"):
            c = np.uint64(self.launch.steps)
            v = {"%clock": c & np.uint64(0xFFFFFFFF), "%clock_hi": c >> np.uint64(32),
                 "%globaltimer_lo": c & np.uint64(0xFFFFFFFF),
                 "%globaltimer_hi": c >> np.uint64(32)}.get(key, c)
            dt = np.uint64 if key in ("%clock64", "%globaltimer") else np.uint32
            return np.full(self.N, v, dt)
        try:
            return self.sregs[key]
        except KeyError:
            raise UnsupportedFeature(f"special register {key} is not modelled") from None

    def read(self, op, idx, width: int = 32, ftype: str | None = None) -> np.ndarray:
        """Operand value for the threads `idx`: register bits, predicate bools, immediates as
        `width`-bit patterns, symbols as their address."""
        if isinstance(op, SpecialRegister):
            v = self.sreg(op)[self._at(idx)]
            return v.copy() if idx is self._span_idx else v
        if isinstance(op, Register):
            sym = self.launch.symbols.get(op.name)
            if sym is not None and op.name not in self.regs and \
                    self.program.registers.get(op.name) is None:
                return self.symbol_address(sym, idx)
            if idx is self._span_idx:                    # a fresh array, as a gather gives
                v = self.reg(op.name)[self._span].copy()
            else:
                v = self.reg(op.name)[idx]
            if op.negated:
                v = ~v if v.dtype == np.bool_ else ~v
            return v
        if isinstance(op, Immediate):
            return np.full(idx.size, self.imm_bits(op, width, ftype), UINT[max(width, 8) // 8]
                           if width in (8, 16, 32, 64) else np.uint64)
        if isinstance(op, Label):
            sym = self.launch.symbols.get(op.name)
            if sym is None:
                raise OperandError(f"'{op.name}' is neither a register nor a variable")
            return self.symbol_address(sym, idx, op.offset)
        raise UnsupportedFeature(f"operand {op} ({op.kind}) is not supported here")

    def symbol_address(self, sym, idx, offset: int = 0) -> np.ndarray:
        """A variable's address (+ offset) for the threads idx: a shared variable's carries the
        executing CTA's rank in the cluster (machine/memory.py)."""
        v = np.full(idx.size, (sym.address + offset) & 0xFFFFFFFFFFFFFFFF, np.uint64)
        if self.smem_rank is not None and sym.space == "shared::cta":
            v += self.smem_rank[self._at(idx)]
        return v

    @staticmethod
    def imm_bits(op: Immediate, width: int, ftype: str | None) -> int:
        mask = (1 << width) - 1
        if not op.is_float:
            return int(op.value) & mask
        if op.width == width:
            return op.raw
        if ftype == ".f32" or width == 32:
            return int(np.array(op.value, np.float32).view(np.uint32))
        if ftype == ".f64" or width == 64:
            return int(np.array(op.value, np.float64).view(np.uint64))
        if width == 16:
            return int(np.array(op.value, np.float16).view(np.uint16))
        raise OperandError(f"float immediate {op.text} for a {width}-bit operand")

    def write(self, op, idx, value) -> None:
        if getattr(op, "name", None) == "_":          # the sink operand
            return
        if isinstance(op, Register):
            if op.name == "_":
                return
            r = self.reg(op.name)
            v = np.asarray(value)
            idx = self._at(idx)
            if r.ndim == 2:                               # .b128
                r[idx] = v.reshape(-1, 2).astype(np.uint64)
                return
            if r.dtype == np.bool_:
                r[idx] = v if v.dtype == np.bool_ else (v != 0)
            else:
                if v.dtype == np.bool_:
                    v = v.astype(r.dtype)
                if v.dtype.kind == "i":
                    v = v.astype(np.int64).view(np.uint64)
                r[idx] = v.astype(r.dtype, copy=False) if v.dtype.itemsize <= r.dtype.itemsize \
                    else (v & np.asarray((1 << 8 * r.dtype.itemsize) - 1, v.dtype)).astype(r.dtype)
            return
        if isinstance(op, RegisterPair):
            raise OperandError("a register pair needs two values")
        raise OperandError(f"cannot write to operand {op}")

    # ------------------------------------------------- compiled operands (decided once per pc)
    # `reader` / `writer` return functions equal to `read` / `write` for one operand, with the
    # operand's kind (register, special register, immediate, symbol) decided when the
    # instruction is compiled instead of at every step; docs/executor.md "Performance". Register
    # arrays are still looked up at each call (a register is created on its first use, as with
    # `read`), and anything unusual (a %clock register, an unknown name, a .b128 register, a
    # value of another dtype) takes `read` / `write` themselves, with their errors.
    _CLOCKS = ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%clock_hi",
               "%globaltimer_hi")

    def declared(self, name: str):
        """`program.registers.get(name)`, remembered per wave (the table does not change)."""
        try:
            return self._declared[name]
        except KeyError:
            t = self._declared[name] = self.program.registers.get(name)
            return t

    def reader(self, op, width: int = 32, ftype: str | None = None):
        """(function idx -> `read(op, idx, width, ftype)`, the dtype it returns or None)."""
        def general(idx, op=op, width=width, ftype=ftype):
            return self.read(op, idx, width, ftype)
        if isinstance(op, SpecialRegister):
            key = op.name + (op.selector or "")
            arr = self.sregs.get(key)
            if key in self._CLOCKS or arr is None:
                return general, None

            def sreg(idx):
                if idx is self._span_idx:
                    return arr[self._span].copy()
                return arr[idx]
            return sreg, arr.dtype
        if isinstance(op, Register):
            name = op.name
            t = self.declared(name)
            if t is None:                      # a symbol's address, or an error: `read` decides
                return general, None
            dt = _reg_dtype(t)
            if dt is None:                     # .b128 (2-d) or an unsupported type
                return general, None
            regs, neg = self.regs, op.negated

            def reg(idx):
                r = regs.get(name)
                if r is None:
                    r = self.reg(name)
                v = r[self._span].copy() if idx is self._span_idx else r[idx]
                if neg:
                    v = ~v
                return v
            return reg, np.dtype(dt)
        if isinstance(op, Immediate):
            try:
                bits = self.imm_bits(op, width, ftype)
            except OperandError:
                return general, None
            dt = np.dtype(UINT[max(width, 8) // 8] if width in (8, 16, 32, 64) else np.uint64)
            return self._constant(bits, dt), dt
        if isinstance(op, Label):
            sym = self.launch.symbols.get(op.name)
            if sym is None or (self.smem_rank is not None and sym.space == "shared::cta"):
                return general, None
            return self._constant(sym.address + op.offset, np.dtype(np.uint64)), \
                np.dtype(np.uint64)
        return general, None

    @staticmethod
    def _constant(value, dt):
        """idx -> a fresh array of `value` (dtype dt), one per thread of idx."""
        made = {}

        def const(idx):
            a = made.get(idx.size)
            if a is None:
                a = made[idx.size] = np.full(idx.size, value, dt)
            return a.copy()
        return const

    def writer(self, op):
        """function (idx, value) -> `write(op, idx, value)`."""
        def general(idx, value, op=op):
            self.write(op, idx, value)
        if getattr(op, "name", None) == "_":
            return lambda idx, value: None
        if not isinstance(op, Register):
            return general
        name = op.name
        dt = _reg_dtype(self.declared(name))
        if dt is None:
            return general
        dt = np.dtype(dt)
        regs, nd = self.regs, np.ndarray

        def reg(idx, value):
            r = regs.get(name)
            if type(value) is nd and value.dtype == dt and r is not None:
                r[self._span if idx is self._span_idx else idx] = value
            else:
                self.write(op, idx, value)
        return reg

    def addresser(self, op: Address):
        """function idx -> `addr(op, idx)`."""
        off = op.offset & 0xFFFFFFFFFFFFFFFF
        if op.base is None:
            return self._constant(off, np.dtype(np.uint64))
        name = op.base
        sym = self.launch.symbols.get(name)
        if self.declared(name) is None:
            if sym is not None and self.smem_rank is not None and sym.space == "shared::cta":
                return lambda idx: self.symbol_address(sym, idx, off)
            if sym is not None:
                return self._constant((sym.address + off) & 0xFFFFFFFFFFFFFFFF,
                                      np.dtype(np.uint64))
            return lambda idx: self.addr(op, idx)          # undeclared: `reg` names the error
        regs, u64, off64 = self.regs, np.uint64, np.uint64(off)

        def reg(idx):
            r = regs.get(name)
            if r is None:
                r = self.reg(name)
            return r[self._span if idx is self._span_idx else idx].astype(u64, copy=False) + off64
        return reg

    def addr(self, op: Address, idx) -> np.ndarray:
        """Address operand -> uint64 per thread (register value or symbol address + offset)."""
        if op.base is None:
            return np.full(idx.size, op.offset & 0xFFFFFFFFFFFFFFFF, np.uint64)
        sym = self.launch.symbols.get(op.base)
        if sym is not None and self.program.registers.get(op.base) is None:
            base = self.symbol_address(sym, idx)
        else:
            base = self.reg(op.base)[self._at(idx)].astype(np.uint64, copy=False)
        return base + np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)

    # ---------------------------------------------------------------------------- scheduler
    def run(self) -> None:
        guard = self.launch.guard
        status, pc = self.status, self.pc
        n_inst = len(self.program.instructions)
        backward = {q for q, t in self.program.branch_target.items() if t <= q}
        backward |= set(self.program.brx_targets)
        # warps that took a backward branch while other warps could run wait for their turn
        # (round-robin between warps; lanes of one warp stay lowest-pc-first)
        yielded = np.zeros(self.N, bool)
        any_yielded = False                               # == yielded.any()
        never = np.iinfo(np.int64).max                    # no pc reaches it
        all_idx = np.arange(self.N)                      # every thread: the converged step
        all_idx.setflags(write=False)
        rng = self.launch.schedule_rng                    # --schedule random:SEED
        while True:
            # every thread runnable <=> no status is nonzero (RUN == 0): one pass, no temporary
            if rng is not None:
                runnable = status == RUN
                turn = runnable & ~yielded if any_yielded else runnable
                got = self._random_step(rng, turn) if turn.any() else None
                if got is None:
                    if not runnable.any():
                        if (status == EXITED).all():
                            break
                        if self.wake():
                            continue
                        if self.proxy.progress_random(rng):
                            self.wake()
                            continue
                        raise self.deadlock()
                    yielded[:] = False
                    any_yielded = False
                    continue
                p, idx = got
            elif not any_yielded and not status.any():
                p = int(pc.min())
                idx = all_idx if p == int(pc.max()) else np.flatnonzero(pc == p)
            else:
                runnable = status == RUN
                turn = runnable & ~yielded if any_yielded else runnable
                p = int(pc.min(where=turn, initial=never))
                if p == never:                            # no thread may run in this turn
                    if not runnable.any():
                        if (status == EXITED).all():
                            break
                        if self.wake():
                            continue
                        if self.san is not None and self.san.latest:
                            # the latest point the memory model allows: one operation per CTA
                            # completes, then whoever it released runs (docs/sanitizer.md)
                            if self.proxy.progress_round(self._cta_of_issuer):
                                self.wake()
                                continue
                        elif self.proxy.progress():
                            self.wake()
                            continue
                        raise self.deadlock()
                    yielded[:] = False                    # every runnable warp had its turn
                    any_yielded = False
                    continue
                idx = np.flatnonzero((pc == p) & turn)
            idx.setflags(write=False)                     # handlers only read it (see _at)
            if int(idx[-1]) - int(idx[0]) + 1 == idx.size:   # sorted, distinct: consecutive
                self._span_idx, self._span = idx, slice(int(idx[0]), int(idx[-1]) + 1)
            else:
                self._span_idx = None
            if p >= n_inst:
                self.exit_threads(idx)
                continue
            inst_p = self.program.instructions[p]
            CURRENT[0] = inst_p              # warnings of the lower layers name its line
            fn = self.compiled.get(p)
            if fn is None:
                fn = self.compiled[p] = self.compile(p)
            guard.tick(-(-idx.size // WARP_SIZE), inst_p.loc.line)
            self.launch.steps += 1
            try:
                fn(idx)
            except PtxsimError as e:
                _located(e, self.program.instructions[p])
                self.where(e, p, idx)
                raise
            if self.san is not None and self.san.tracer is not None:
                self.san.tracer.step(self.san, p, idx)
            if self.on_progress is not None and self.launch.steps % 256 == 0:
                self.on_progress(float((status == EXITED).mean()), self.launch.steps)
            if p in backward:
                looped = idx[pc[idx] <= p]
                if looped.size:
                    w = np.zeros(self.N // WARP_SIZE, bool)
                    w[looped // WARP_SIZE] = True
                    in_w = np.repeat(w, WARP_SIZE)
                    if (~in_w & (status == RUN)).any():
                        yielded |= in_w
                        any_yielded = True
        self.finish()

    def where(self, e: PtxsimError, p: int, idx) -> None:
        """Record on an error raised at pc p where it happened, once (the innermost wins):
        `kernel`, `ptx_line`, `instruction`, and `ctaid` / `tid` of the faulting thread (the
        error's own `thread`, a thread number of this wave, else the first executing one)."""
        if getattr(e, "ptx_line", None) is not None:
            return
        inst = self.program.instructions[p]
        e.kernel, e.ptx_line, e.instruction = self.program.function.name, inst.loc.line, str(inst)
        t = getattr(e, "thread", None)
        if not isinstance(t, (int, np.integer)) or not 0 <= int(t) < self.N:
            t = int(idx[0])
        t = int(t)
        e.ctaid = tuple(int(x) for x in
                        self.launch.geometry.ctaid(int(self.ctas[int(self.cta_of[t])])))
        e.tid = tuple(int(self.sregs[f"%tid.{c}"][t]) for c in "xyz")

    def dispose(self) -> None:
        """The wave ran to its end: drop its state. Its compiled closures, sanitizer and
        asynchronous proxy refer back to it, so without this its registers, shared and Tensor
        Memory (~150 MB for a wave of 128 Triton CTAs) waited for a full cyclic collection
        (0.1-0.3 s, and a process's resident size grew by that much per launch meanwhile)."""
        self.__dict__.clear()

    def finish(self) -> None:
        # complete whatever the asynchronous proxy still holds (bulk stores, ...)
        while self.proxy.progress():
            pass
        if self.san is not None and getattr(self.san, "al_pend", None):
            self.san.aligned_leftovers()
        if self.san is not None and self.san.tracer is not None:
            self.san.tracer.wave_end(self.san)
        if self.san is not None and hasattr(self.san, "release"):
            self.san.release()

    def _random_step(self, rng, turn):
        """--schedule random: the instruction of a pseudo-randomly chosen warp that may run,
        for every warp whose lanes that may run are all at that instruction's pc (lanes of a
        warp still execute lowest-pc-first, so warps reconverge as on the default schedule)."""
        pcw = np.where(turn, self.pc, np.iinfo(np.int64).max).reshape(-1, WARP_SIZE).min(1)
        live = np.flatnonzero(pcw != np.iinfo(np.int64).max)
        if not live.size:
            return None
        p = int(pcw[live[int(rng.integers(live.size))]])
        warps = np.flatnonzero(pcw == p)
        lanes = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).ravel()
        idx = lanes[turn[lanes] & (self.pc[lanes] == p)]
        return p, idx

    def _cta_of_issuer(self, issuer) -> int:
        return int(issuer) // self.P if isinstance(issuer, (int, np.integer)) else -1

    def exit_threads(self, idx) -> None:
        self.status[idx] = EXITED
        ctas = np.unique(self.cta_of[idx])
        for cta in ctas:
            for key in [k for k in self.bars if k[0] == cta]:
                self._bar_check(key)
        cluster_update(self, np.unique(self.cta_of[idx] // self.launch.geometry.cluster_size))
        for cta in ctas.tolist():
            if cta not in self.exited_ctas and \
                    (self.status[cta * self.P:(cta + 1) * self.P] == EXITED).all():
                self._cta_exited(cta, idx)

    def _cta_exited(self, cta: int, idx) -> None:
        """The last threads of CTA `cta` (wave position) exited, at the instruction of `idx`:
        what the CTA leaves behind is checked. Its Tensor Memory must be deallocated
        (9.7.16.7.1: TmemLeakError), and no asynchronous operation it issued may still read or
        write its shared memory (tcgen05.mma / cp / shift, bulk and TMA copies: AsyncProxyError).
        Operations a correct kernel waits for are complete by now: a wait completes them."""
        self.exited_ctas.add(cta)
        p = int(self.pc[idx].min())
        where = (f"line {self.program.line(p)}: {self.program.text(p)}"
                 if p < len(self.program.instructions) else "the end of the kernel")
        tcgen05_handlers.cta_exit(self, cta, where)
        # bulk async-group stores (shared::cta -> global) still in flight complete now, reading
        # the shared memory the CTA leaves as it is: CUTLASS's sm100 TMA epilogue exits without
        # cp.async.bulk.wait_group when it loads no source tensor (the PTX of CUTLASS example
        # 70: the wait is skipped when beta == 0), and compute-sanitizer reports nothing there
        # (FACTS 9). Copies into the CTA's shared memory and tcgen05 operations stay errors.
        mine = set(range(cta * self.P, (cta + 1) * self.P))
        stores = [op for op in self.proxy.pending(kinds=("bulk",))
                  if op.signal is None and op.issuer in mine]
        if stores:
            self.proxy._complete_targets(stores)
        try:
            self.proxy.check_exit(range(cta * self.P, (cta + 1) * self.P))
        except AsyncProxyError as e:
            ctaid = tuple(int(x) for x in self.launch.geometry.ctaid(int(self.ctas[cta])))
            raise AsyncProxyError(f"{where}: CTA {ctaid} exits with {e}") from None

    def block_on_tmem(self, idx, cta: int, ncols: int) -> None:
        """Suspend the threads `idx` at their tcgen05.alloc (not advanced) until a dealloc."""
        self.status[idx] = BLOCKED
        self.wait_kind[idx] = WAIT_TMEM
        self.wait_cta[idx] = cta
        self.wait_par[idx] = ncols
        self.wait_tok[idx] = self.tmem_frees

    def wake(self) -> bool:
        """Release the threads whose mbarrier phase has completed, and the tcgen05.alloc waiters
        of a wave that deallocated since they blocked (they retry); True if any woke."""
        woke_any = False
        tm = np.flatnonzero((self.status == BLOCKED) & (self.wait_kind == WAIT_TMEM))
        if tm.size:
            retry = tm[self.wait_tok[tm] != np.uint64(self.tmem_frees)]
            self.wait_kind[retry] = NO_WAIT
            self.status[retry] = RUN
            woke_any = bool(retry.size)
        mb = np.flatnonzero((self.status == BLOCKED) & (self.wait_kind == WAIT_MBAR))
        if not mb.size:
            return woke_any
        cta, off = self.wait_cta[mb], self.wait_off[mb]
        is_par = self.wait_is_par[mb]
        ok = np.zeros(mb.size, bool)
        if is_par.any():
            ok[is_par] = self.mbar.test_wait_parity(cta[is_par], off[is_par],
                                                    self.wait_par[mb][is_par])
        if (~is_par).any():
            ok[~is_par] = self.mbar.test_wait(cta[~is_par], off[~is_par],
                                              self.wait_tok[mb][~is_par])
        woke = mb[ok]
        self.wait_kind[woke] = NO_WAIT
        self.status[woke] = RUN
        return bool(woke.size) or woke_any

    def wait_info(self, t: int) -> tuple:
        """Why thread `t` is blocked: ("mbar", cta, offset, parity, token, is_parity),
        ("bar", (cta, id)), ("cluster", cluster) or ("?",)."""
        k = int(self.wait_kind[t])
        if k == WAIT_MBAR:
            return ("mbar", int(self.wait_cta[t]), int(self.wait_off[t]), int(self.wait_par[t]),
                    int(self.wait_tok[t]), bool(self.wait_is_par[t]))
        if k == WAIT_BAR:
            return ("bar", (int(self.wait_bar[t]) // 64, int(self.wait_bar[t]) % 64))
        if k == WAIT_CLUSTER:
            return ("cluster", int(self.wait_cta[t]))
        if k == WAIT_TMEM:
            return ("tmem", int(self.wait_cta[t]), int(self.wait_par[t]))
        if k == WAIT_PEER:
            return ("peer", int(self.wait_cta[t]))
        return ("?",)

    def deadlock(self) -> DeadlockError:
        waits = []
        for w in range(self.N // WARP_SIZE):
            sl = slice(w * WARP_SIZE, (w + 1) * WARP_SIZE)
            blocked = np.flatnonzero(self.status[sl] == BLOCKED)
            if not blocked.size:
                continue
            t = w * WARP_SIZE + int(blocked[0])
            p = int(self.pc[t])
            info = self.wait_info(t)
            if info[0] == "mbar":
                reason = self.mbar.describe(int(info[1]), int(info[2]))
                p_inst = p
            elif info[0] == "bar":
                key = info[1]
                b = self.bars.get(key, {})
                reason = (f"barrier {key[1]} of CTA {self._cta_name(key[0])}: "
                          f"{b.get('arrived', 0)} of {self._bar_expected(key, b)} threads arrived")
                p_inst = p - 1
            elif info[0] == "cluster":
                reason = f"barrier.cluster of cluster {info[1]}: not every thread arrived"
                p_inst = p - 1
            elif info[0] == "tmem":
                live = tcgen05_handlers.cta_state(self, info[1]).tmem.describe()
                reason = (f"tcgen05.alloc of {info[2]} Tensor Memory columns in CTA "
                          f"{self._cta_name(info[1])} (allocated: {live}); no warp deallocates")
                p_inst = p
            elif info[0] == "peer":
                peer = info[1] ^ 1 if self.launch.geometry.cluster_size > 1 else info[1]
                reason = (f"the warp of the peer CTA {self._cta_name(peer)} to issue "
                          f"{self.program.instructions[p].opcode}.cta_group::2 too (one warp of "
                          "each CTA of the pair performs it collectively, 9.7.16.7.1)")
                p_inst = p
            else:
                reason, p_inst = "unknown", p
            cta = int(self.ctas[t // self.P])
            waits.append(Wait(cta, (t % self.P) // WARP_SIZE, self.program.line(p_inst),
                              self.program.text(p_inst), reason))
        live = int(((self.status != EXITED).reshape(-1, WARP_SIZE)).any(1).sum())
        return deadlock_error(waits, live_warps=live, pending_async=self.proxy.pending())

    def _cta_name(self, c):
        return int(self.ctas[c])

    # --------------------------------------------------------------------------- compilation
    def compile(self, pc: int):
        inst = self.program.instructions[pc]
        return poison.wrap(self, inst, self._guarded(pc, inst), poison_kind(inst.opcode))

    def _guarded(self, pc: int, inst):
        body = handler(self, pc, inst)              # machine/handlers: the dispatch table
        if self.san is not None:
            body = self.san.wrap(pc, inst, body)    # synccheck, tcgen05.ld register uses
        pred = inst.predicate
        if pred is None:
            return body
        name, neg = pred.name, pred.negated
        wave = self

        def guarded(idx):
            p = wave.reg(name)[wave._at(idx)]            # read before the body runs
            if neg:
                p = ~p
            if p.all():                                   # every thread's guard holds
                body(idx)
                return
            off = idx[~p]
            if off.size:
                wave.advance(off)
            on = idx[p]
            if on.size:
                body(on)
        return guarded

    # ------------------------------------------------------------------------------ barriers
    def _bar_expected(self, key, b):
        if b.get("expected") is not None:
            return b["expected"]
        cta = key[0]
        sl = slice(cta * self.P, (cta + 1) * self.P)
        return int((self.status[sl] != EXITED).sum())

    def bar_arrive(self, idx, ids, counts, wait: bool, pc_line: int) -> None:
        """bar.sync / bar.arrive / barrier.sync (9.7.13.1): per (CTA, barrier id) the arrival
        count; the waiters are released when it reaches the expected count (operand b, else every
        non-exited thread of the CTA)."""
        self.advance(idx)
        cta = self.cta_of[idx]
        keys = cta * 64 + ids
        if not self.bars and (counts < 0).all():
            # the usual case: no barrier has arrivals pending and every live thread of the
            # CTA arrives in this step, so each barrier completes at once (nothing blocks and
            # nothing is left): the result of the general path below, without a loop over CTAs
            uk, n = np.unique(keys, return_counts=True)
            live = (self.status.reshape(self.n_ctas, self.P) != EXITED).sum(1)
            if (n >= live[uk // 64]).all():
                if self.san is not None:
                    self.san.bar_all(idx)
                return
        # the threads of each (CTA, barrier) key in thread order: one stable sort, then slices
        order = np.argsort(keys, kind="stable")
        keys, idx, counts = keys[order], idx[order], counts[order]
        uniq, first = np.unique(keys, return_index=True)
        bounds = first.tolist() + [keys.size]
        for j, k in enumerate(uniq.tolist()):
            lo, hi = bounds[j], bounds[j + 1]
            sel = idx[lo:hi]
            key = (k // 64, k % 64)
            b = self.bars.setdefault(key, {"arrived": 0, "waiters": [], "expected": None})
            cnt = counts[lo:hi]
            if cnt is not None and cnt.size and cnt[0] >= 0:
                if b["expected"] is not None and b["expected"] != int(cnt[0]):
                    raise UndefinedBehavior(f"bar at line {pc_line}: barrier {key[1]} used with "
                                            f"thread counts {b['expected']} and {int(cnt[0])}")
                b["expected"] = int(cnt[0])
            b["arrived"] += sel.size
            if self.san is not None:
                self.san.bar_arrive(key, sel, wait)
            if wait:
                self.status[sel] = BLOCKED
                self.wait_kind[sel] = WAIT_BAR
                self.wait_bar[sel] = k
                b["waiters"].append(sel)
            self._bar_check(key)

    def _bar_check(self, key) -> None:
        b = self.bars.get(key)
        if b is None or b["arrived"] == 0:
            return
        if b["arrived"] >= self._bar_expected(key, b):
            if self.san is not None:
                self.san.bar_complete(key, b["waiters"])
            for sel in b["waiters"]:
                live = sel[self.status[sel] == BLOCKED]
                self.status[live] = RUN
                self.wait_kind[live] = NO_WAIT
            del self.bars[key]

    def block_on_mbarrier(self, idx, cta, off, parity, token, is_parity: bool) -> None:
        self.status[idx] = BLOCKED
        self.wait_kind[idx] = WAIT_MBAR
        self.wait_cta[idx] = cta
        self.wait_off[idx] = off
        self.wait_is_par[idx] = is_parity
        self.wait_par[idx] = parity if is_parity else 0
        self.wait_tok[idx] = token if not is_parity else 0


class Launch:
    """One kernel launch: program, geometry, global memory, parameter image, symbols."""

    def __init__(self, ptx, kernel: str, grid, block, cluster=None, args=(), *,
                 target: str | None = None, dynamic_shared: int = 0, step_limit: int = 50_000_000,
                 progress: bool = False, max_resident_ctas: int | None = None,
                 gmem: GlobalMemory | None = None, module_globals: dict | None = None,
                 const_image: bytes | None = None, param_image: bytes | None = None,
                 nonportable_cluster: bool = False, sanitize: str = "default", trace=None,
                 trace_ctas=(0, 1), schedule=None):
        """`gmem`, `module_globals`, `const_image` and `param_image` are the CUDA driver model's
        (ptxsim.cuda): its device memory, the addresses of the module's .global variables (which
        live there across launches), the current bytes of its .const bank, and the parameter
        bytes the host packed (cuLaunchKernel), used instead of packing `args`. `sanitize`,
        `trace`, `trace_ctas`, `schedule`: the sanitizer (machine/sanitizer, docs/sanitizer.md):
        its findings land in self.findings."""
        self.sanitizer = _sanitizer.make(sanitize, trace, trace_ctas)
        self.schedule_rng = _schedule(schedule)
        module = ptx if isinstance(ptx, Module) else _parsed(ptx)
        self.module = module
        self.program = Program.build(module, kernel)
        # what the handlers' isa checks receive (wave.launch.target / .ptx_version): the target
        # the kernel runs on (default: the module's .target, else sm_100a) and the module's
        # `.version` (None: unchecked, the newest ISA)
        if target is None:
            target = module.target or "sm_100a"
        self.target = target
        self.ptx_version = module.version
        fn = self.program.function
        cl = cluster
        if cl is None and ".reqnctapercluster" in fn.directives:
            cl = tuple(int(x) for x in fn.directives[".reqnctapercluster"])
        self.geometry = LaunchGeometry.make(grid, block, cl,
                                            nonportable_cluster=nonportable_cluster)
        self.dynamic_shared = int(dynamic_shared)
        self.gmem = gmem if gmem is not None else GlobalMemory()
        self.module_globals = module_globals or {}
        self.steps = 0
        self.printf: list = []        # PrintfLine(ctaid, tid, text) of device printf (vprintf)
        self.guard = StepGuard(step_limit)
        self.progress = progress
        self.symbols: dict[str, Symbol] = {}
        self._layout_variables()
        decls = param_decls(fn)
        self.args = list(args)
        if param_image is None:
            image, offsets = pack_params(decls, self.args, self.gmem)
        else:
            offsets, size = param_offsets(decls)
            if len(param_image) != size:
                raise OperandError(f"kernel '{kernel}' takes {size} bytes of parameters, "
                                   f"{len(param_image)} given")
            image = bytes(param_image)
        if const_image is not None:
            self.const_image = bytes(const_image)
        self.param_image = image
        for p, off in zip(fn.params, offsets):
            self.symbols[p.name] = Symbol("param", off)
        self.max_resident = max_resident_ctas
        self.canceled: set[int] = set()                  # CTAs canceled by try_cancel
        self._order, self._next_cluster, self._cluster_size = None, 0, 1   # try_cancel's cursor

    def _layout_variables(self) -> None:
        self.symbols, self.static_shared, self.local_bytes, self.const_image = \
            layout_variables(self.program, self.gmem, self.module_globals)

    @staticmethod
    def _init_bytes(v, size: int) -> bytes:
        out = bytearray(size)
        init = v.init
        if init is None:
            return bytes(out)
        vals = init if isinstance(init, (list, tuple)) else [init]
        esz = TYPE_BYTES.get(v.type or ".b8", 1)
        for i, x in enumerate(vals):
            if isinstance(x, (int, np.integer)) and (i + 1) * esz <= size:
                out[i * esz:(i + 1) * esz] = (int(x) % (1 << 8 * esz)).to_bytes(esz, "little")
            elif isinstance(x, float) and (i + 1) * esz <= size:
                fmt = {2: "<f2", 4: "<f4", 8: "<f8"}[esz]
                out[i * esz:(i + 1) * esz] = np.array(x, fmt).tobytes()
        return bytes(out)

    def wave_plan(self) -> list[np.ndarray]:
        """The launch's waves in order: arrays of CTA linear ids (whole clusters). The default
        wave holds at most one CTA per B200 SM (148) and 16,384 threads, so that register arrays
        (one entry per thread of the wave) stay small for big grids."""
        geo = self.geometry
        limit = self.max_resident or max(geo.cluster_size, min(
            148, max(1, DEFAULT_WAVE_THREADS // max(1, geo.warps_per_cta * WARP_SIZE))))
        return list(geo.waves(limit))

    def run(self, only=None, on_wave=None) -> "Launch":
        """Run the waves of `wave_plan()` in order; `only` (a set of wave indices): just those
        (a worker of a distributed launch, ptxsim.distributed); `on_wave(i, n_ctas)` after each
        wave that ran."""
        geo = self.geometry
        waves = self.wave_plan()
        bar = _progress(geo.n_ctas) if self.progress else None
        done = 0
        cs = geo.cluster_size
        # The objects that exist before the launch (the parsed module: ~10^5 instructions and
        # operands) are set aside from the cyclic garbage collector while it runs, so that its
        # full collections scan only what the launch makes (they cost ~100 ms each on the Triton
        # kernel's heap). Nothing is freed earlier or later than a collection would (objects
        # alive now stay alive during the launch); skipped when the caller froze objects itself.
        frozen = gc.isenabled() and gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        # clusters not started yet (what clusterlaunchcontrol.try_cancel may cancel) are the
        # launch order from the next wave on: a cursor into it, so that the bookkeeping of a
        # launch is linear in its CTAs (10^6-CTA grids), not quadratic in its waves
        self._order = np.concatenate(waves) if waves else np.zeros(0, np.int64)
        starts = np.cumsum([0] + [w.size for w in waves])
        try:
            for i, ctas in enumerate(waves):
                if only is not None and i not in only:
                    continue
                if self.canceled:
                    ctas = np.asarray([c for c in ctas if int(c) not in self.canceled], np.int64)
                if ctas.size == 0:
                    continue
                self._next_cluster = int(starts[i + 1])
                self._cluster_size = cs
                wave = Wave(self, ctas)
                if bar:
                    wave.on_progress = lambda f, steps, d=done, n=ctas.size: bar[1](
                        d + f * n, steps)
                try:
                    wave.run()
                except PtxsimError as e:
                    # what the sanitizer found before the error goes with it
                    if self.sanitizer is not None and not hasattr(e, "findings"):
                        e.findings = self.sanitizer.findings
                    raise
                wave.dispose()
                done += ctas.size
                if on_wave is not None:
                    on_wave(i, ctas.size)
                if bar:
                    bar[1](done, self.steps)
        finally:
            CURRENT[0] = None
            if frozen:
                gc.unfreeze()
            if bar:
                bar[0].stop()
        if self.sanitizer is not None:
            self.sanitizer.finish()
        return self

    @property
    def findings(self) -> "_sanitizer.Findings":
        """What the sanitizer found (empty with sanitize="none")."""
        return self.sanitizer.findings if self.sanitizer is not None else _sanitizer.Findings()

    @property
    def trace(self) -> dict | None:
        """The Chrome-trace / Perfetto document of a traced launch."""
        t = self.sanitizer.tracer if self.sanitizer is not None else None
        return t.document() if t is not None else None

    def try_cancel(self):
        """clusterlaunchcontrol.try_cancel: cancel the next cluster that has not started (in launch
        order); returns the %ctaid of its first CTA, or None when every cluster has started."""
        order, cs = getattr(self, "_order", None), getattr(self, "_cluster_size", 1)
        if order is None:
            return None
        while self._next_cluster < order.size:
            cl = order[self._next_cluster:self._next_cluster + cs]
            self._next_cluster += cs
            if int(cl[0]) in self.canceled:
                continue
            self.canceled.update(int(c) for c in cl)
            return tuple(int(x) for x in self.geometry.ctaid(int(cl[0])))
        return None


def layout_variables(program, gmem: GlobalMemory, module_globals: dict | None = None):
    """Where each variable of a kernel lives: ({name: Symbol}, static shared bytes, local bytes
    per thread, the bank-0 const image). `.global` variables get the address in
    `module_globals`, or are mapped into `gmem` with their initial bytes."""
    module_globals = module_globals or {}
    symbols: dict[str, Symbol] = {}
    static, local, const = 0, 0, bytearray()
    externs = []
    for v in program.variables:
        size = _var_bytes(v)
        align = v.align or TYPE_BYTES.get(v.type or ".b8", 1)
        if v.space == ".shared":
            if v.dims and v.dims[-1] is None:
                externs.append((v, align))
                continue
            static = _align(static, align)
            symbols[v.name] = Symbol("shared::cta", static)
            static += size
        elif v.space == ".local":
            local = _align(local, align)
            symbols[v.name] = Symbol("local", local)
            local += size
        elif v.space == ".const":
            off, const = _place_const(const, v, size, align)
            symbols[v.name] = Symbol("const", off)
        elif v.space == ".global":
            addr = module_globals.get(v.name)
            if addr is None:
                arr = np.frombuffer(Launch._init_bytes(v, size), np.uint8).copy()
                addr = gmem.map(arr, v.name) if size else 0
            symbols[v.name] = Symbol("global", addr)
    if externs:
        a = max(al for _, al in externs)
        static = _align(static, max(a, 16))
        for v, _ in externs:
            symbols[v.name] = Symbol("shared::cta", static)
    return symbols, static, local, bytes(const)


def param_decls(fn) -> list[tuple[int, int]]:
    """(size, alignment) of each `.param` of a kernel, in order (PTX 5.1.6.1)."""
    decls = []
    for p in fn.params:
        size = TYPE_BYTES.get(p.type or ".b8", 1)
        for d in p.dims:
            size *= int(d)
        natural = TYPE_BYTES.get(p.type or ".b8", 1)
        # `.ptr .global .align N` is the pointee's alignment, not the parameter's
        align = natural if ".ptr" in p.attrs else max(p.align or 1, natural)
        decls.append((size, align))
    return decls


def _place_const(bank: bytearray, v, size: int, align: int) -> tuple[int, bytearray]:
    """Append .const variable `v` to the bank-0 image at its alignment: (offset, bank)."""
    bank += bytes(_align(len(bank), align) - len(bank))
    off = len(bank)
    bank += Launch._init_bytes(v, size)
    return off, bank


def module_storage(module) -> tuple[dict, bytes, dict]:
    """The module-scope variables a CUDA module owns across launches (cuModuleGetGlobal):
    ({.const name: (offset in bank 0, size)}, the initial bank-0 image, {.global name: initial
    bytes}). Offsets are the ones every launch of the module uses (module variables come first
    in each kernel's layout, in declaration order)."""
    consts, bank, globals_ = {}, bytearray(), {}
    for v in module.variables:
        size = _var_bytes(v)
        align = v.align or TYPE_BYTES.get(v.type or ".b8", 1)
        if v.space == ".const":
            off, bank = _place_const(bank, v, size, align)
            consts[v.name] = (off, size)
        elif v.space == ".global":
            globals_[v.name] = Launch._init_bytes(v, size)
    return consts, bytes(bank), globals_


_MODULES: dict[str, object] = {}


def _parsed(text: str):
    """parse_module with a small cache: launching the same PTX again skips the parse (the
    executor never modifies a Module)."""
    m = _MODULES.get(text)
    if m is None:
        if len(_MODULES) >= 8:
            _MODULES.pop(next(iter(_MODULES)))
        m = _MODULES[text] = parse_module(text)
    return m


def _progress(total: int):
    """A rich progress bar over the grid's CTAs (a wave's share advances as its threads exit)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    p = Progress(TextColumn("ptxsim launch"), BarColumn(), TextColumn("{task.completed:.0f}/"
                 "{task.total} CTAs"), TextColumn("{task.fields[steps]} steps"),
                 TimeElapsedColumn())
    task = p.add_task("launch", total=total, steps=0)
    p.start()
    return p, lambda n, steps: p.update(task, completed=n, steps=steps)


def _schedule(spec):
    """None (lowest pc first, the default) or the generator of --schedule random:SEED."""
    if spec is None or spec == "default":
        return None
    if isinstance(spec, str) and spec.startswith("random:"):
        try:
            return np.random.default_rng(int(spec[7:]))
        except ValueError:
            pass
    raise OperandError(f"schedule={spec!r}: expected 'default' or 'random:SEED' (an integer "
                       "seed)")


def _located(e: PtxsimError, inst) -> PtxsimError:
    """An error raised while `inst` executes, with its PTX line and text in front of the message
    (unless it already names them, or an inner instruction's did); the same exception object,
    so its type and fields stay (Wave.where records the fields)."""
    if isinstance(e, PtxValidationError) or getattr(e, "_located", False):
        return e
    e._located = True
    line = inst.loc.line
    msg = str(e)
    if not msg.startswith(f"line {line}") and f"line {line}:" not in msg:
        file = getattr(inst.loc, "file", None)
        where = f"{file}:{line}" if file else f"line {line}"
        e.args = (f"{where}: {inst}: {msg}",) + tuple(e.args[1:])
    return e


def launch(ptx, kernel: str, grid, block, cluster=None, args=(), target: str | None = None,
           dynamic_shared: int = 0, *, step_limit: int = 50_000_000, progress: bool = False,
           max_resident_ctas: int | None = None, sanitize: str = "default", trace=None,
           trace_ctas=(0, 1), schedule=None) -> Launch:
    """Run `kernel` of the PTX module `ptx` (text or parsed Module) over `grid` x `block`
    (x `cluster`) threads. `args` in the order of the kernel's parameters: numpy arrays / CPU
    torch tensors (global buffers, results land in them), Python / numpy scalars, `TensorMap`s
    for CUtensorMap parameters. `target`: the GPU it runs on (default: the module's .target,
    else sm_100a). `sanitize`: "default", "full" or "none" (docs/sanitizer.md); `trace`: a path
    for a Chrome-trace / Perfetto JSON timeline of the CTAs `trace_ctas`; `schedule`:
    "random:SEED" runs warps and completes asynchronous operations in a seeded pseudo-random
    order (a correct kernel computes the same bits). Returns the finished `Launch` (its
    `.steps`, `.gmem`, `.findings`)."""
    return Launch(ptx, kernel, grid, block, cluster, args, target=target,
                  dynamic_shared=dynamic_shared, step_limit=step_limit, progress=progress,
                  max_resident_ctas=max_resident_ctas, sanitize=sanitize, trace=trace,
                  trace_ctas=trace_ctas, schedule=schedule).run()
