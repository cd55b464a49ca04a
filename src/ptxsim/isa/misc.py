"""Miscellaneous instructions (PTX ISA 9.7.19): brkpt, nanosleep, pmevent, trap, setmaxnreg.

Each instruction is a plain function over a per-CTA `MiscState` (event log, performance-monitor
counters, per-warp register budgets, the CTA register pool). None of them is a silent no-op:

  brkpt       -> a `Breakpoint` event; then, as the hardware does with no debugger attached, the
                 kernel aborts with `BreakpointTrap` naming the threads (`breakpoints="resume"`
                 makes ptxsim act as a debugger that logs and resumes)
  nanosleep   -> a `Sleep` event (requested, bound and modelled duration per thread) and the
                 state's per-thread `slept_ns`
  pmevent     -> a `PerfEvent` event and `pm_counters` (16 events, +1 per executing warp)
  trap        -> a `Trap` event, then `TrapExecuted` naming the threads
  setmaxnreg  -> a `RegisterChange` event; per-warp budgets and the CTA pool move; every case the
                 spec calls undefined raises `UndefinedBehavior`; a request the pool can never
                 satisfy raises `DeadlockError`

Threads are numbered as in `ptxsim.execute`: thread `lane` of warp `w` is index 32*w + lane.
`active` selects the threads that execute the instruction (guard true, not exited): None (all), a
bool mask (32*W,), or an array of thread indices.

Measured facts used here (H200, sm_90a; programs and outputs in docs/misc.md):
  * trap and brkpt both assemble to BPT.TRAP 0x1; either aborts the launch ('unspecified launch
    failure') when no debugger is attached.
  * `pmevent a` assembles to PMTRIG (1 << a); `pmevent.mask m` to PMTRIG m.
  * nanosleep immediates are taken modulo 2^32 (4294967296 -> RZ, -2 -> 0xfffffffe).
  * a warp whose lanes request different delays wakes together, at about the shortest one.
  * setmaxnreg.inc takes registers only from what setmaxnreg.dec released to the CTA pool: the
    pool starts empty, registers of exited warps never return to it, and a warpgroup's request is
    granted whole or not at all; .inc to fewer registers than held faults (illegal instruction).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ptxsim.isa import registry as _registry
from ptxsim.isa.legality import ANY, Form, Imm, Operand, Slot, check_form
from ptxsim.isa.targets import Arch, AtLeast, Family, Req
from ptxsim.errors import (BreakpointTrap, DeadlockError, OperandError, PtxValidationError,
                           SetmaxnregIgnored, TrapExecuted, UndefinedBehavior)

LANES = 32
WARPGROUP_WARPS = 4          # a warpgroup: four contiguous warps, the first a multiple of 4
DEFAULT_TARGET = "sm_100a"

PM_EVENTS = 16               # 9.7.19.3 Notes: "sixteen performance monitor events, 0 through 15"
NANOSLEEP_MAX_NS = 1_000_000  # 9.7.19.2: "The maximum sleep duration is 1 millisecond."
SETMAXNREG_RANGE = (24, 256)  # 9.7.19.5: "in the range 24 to 256 (both inclusive)"
SETMAXNREG_STEP = 8           # 9.7.19.5: "and must be a multiple of 8"


# ----------------------------------------------------------------------- legality, as data
# The one table of 9.7.19: the isa check below and the front-end validator
# (ptx/legality/stack_misc.py) both read these rows (vocabulary: ptxsim.isa.legality).
# setmaxnreg, 9.7.19.5 Target ISA Notes. sm_101a/f were renamed sm_110a/f in PTX ISA 9.0.
SETMAXNREG_TARGETS = (
    Arch("sm_90a"), Arch("sm_100a"), Arch("sm_101a"), Arch("sm_110a", (9, 0)), Arch("sm_120a"),
    Family("sm_100f", (8, 8)), Family("sm_101f", (8, 8)), Family("sm_120f", (8, 8)),
    Family("sm_110f", (9, 0)),
)

FORMS: dict[str, Form] = {f.name: f for f in [
    # 9.7.19.1 "brkpt;"  PTX ISA 1.0, sm_11 or higher.
    Form("brkpt", "brkpt", (), (), (1, 0), Req(AtLeast(11)), "9.7.19.1"),
    # 9.7.19.2 "nanosleep.u32 t;"  t a register or an immediate; PTX ISA 6.3, sm_70 or higher.
    # ptxas 13.0 takes any 64-bit integer literal and keeps its low 32 bits (SASS measured:
    # 4294967296 -> RZ, -2 -> 0xfffffffe).
    Form("nanosleep", "nanosleep", (Slot.of(".type", ".u32", True),),
         (Operand("t", "r32|imm", Imm(-(1 << 63), (1 << 64) - 1)),),
         (6, 3), Req(AtLeast(70)), "9.7.19.2"),
    # 9.7.19.3 "pmevent a;" a in 0..15 ("sixteen performance monitor events"), PTX ISA 1.4,
    # all targets.
    Form("pmevent", "pmevent", (), (Operand("a", "imm", Imm(0, PM_EVENTS - 1, what="event index")),),
         (1, 4), ANY, "9.7.19.3"),
    # 9.7.19.3 "pmevent.mask a;" a 16-bit mask, PTX ISA 3.0, sm_20 or higher.
    Form("pmevent.mask", "pmevent", (Slot.of(".mask", ".mask", True),),
         (Operand("a", "imm", Imm(0, 0xFFFF, what="16-bit event mask")),),
         (3, 0), Req(AtLeast(20)), "9.7.19.3"),
    # 9.7.19.4 "trap;"  PTX ISA 1.0, all targets.
    Form("trap", "trap", (), (), (1, 0), ANY, "9.7.19.4"),
    # 9.7.19.5 "setmaxnreg.action.sync.aligned.u32 imm-reg-count;"  .action = { .inc, .dec };
    # imm-reg-count "in the range 24 to 256 (both inclusive) and must be a multiple of 8";
    # PTX ISA 8.0. Deviation: ptxas 13.0 also accepts .s32 (and rejects .b32/.u64/none,
    # tests/isa/test_misc.py VERDICTS); ptxsim follows ptxas.
    Form("setmaxnreg", "setmaxnreg",
         (Slot.of(".action", ".inc .dec", True), Slot.of(".sync", ".sync", True),
          Slot.of(".aligned", ".aligned", True), Slot.of(".type", ".u32 .s32", True)),
         (Operand("imm-reg-count", "imm", Imm(*SETMAXNREG_RANGE, SETMAXNREG_STEP)),),
         (8, 0), Req(*SETMAXNREG_TARGETS), "9.7.19.5"),
]}


def form_of(opcode: str, qualifiers=()) -> Form:
    """The 9.7.19 form an opcode and its qualifiers name (`pmevent` + `.mask` -> pmevent.mask)."""
    if opcode == "pmevent" and ".mask" in qualifiers:
        return FORMS["pmevent.mask"]
    if opcode not in FORMS:
        raise PtxValidationError(f"'{opcode}' is not a miscellaneous instruction of 9.7.19 "
                                 f"(known: brkpt, nanosleep, pmevent, trap, setmaxnreg)")
    return FORMS[opcode]


def check(opcode: str, qualifiers=(), operands=(), target: str = DEFAULT_TARGET,
          ptx_version=None) -> Form:
    """Raise PtxValidationError unless `opcode qualifiers operands` is legal for `target` and
    `ptx_version` (None: the newest), per the FORMS table. Operands: int for an immediate, str
    for a register name. Returns the form."""
    f = form_of(opcode, qualifiers)
    check_form(f, tuple(qualifiers), tuple(operands), target, ptx_version)
    return f


# --------------------------------------------------------------------------------- events
@dataclass(frozen=True, eq=False, repr=False)
class Event:
    """Something an instruction did; `threads` are the executing threads (32*warp + lane)."""
    threads: np.ndarray

    @property
    def warps(self) -> np.ndarray:
        return np.unique(self.threads // LANES)

    def __repr__(self) -> str:
        extra = [f"{k}={v.tolist() if isinstance(v, np.ndarray) and v.size <= 8 else v!r}"
                 for k, v in vars(self).items() if k != "threads"
                 and not (isinstance(v, np.ndarray) and v.size > 8)]
        return (f"{type(self).__name__}({describe_threads(self.threads)}"
                + "".join(", " + e for e in extra) + ")")


@dataclass(frozen=True, eq=False, repr=False)
class Breakpoint(Event):
    """brkpt (9.7.19.1): 'Suspends execution.'"""


@dataclass(frozen=True, eq=False, repr=False)
class Trap(Event):
    """trap (9.7.19.4): 'Abort execution and generate an interrupt to the host CPU.'"""


@dataclass(frozen=True, eq=False, repr=False)
class Sleep(Event):
    """nanosleep (9.7.19.2), per executing thread: the requested delay t, the spec's bound on the
    actual sleep (min(2t, 1 ms)) and ptxsim's modelled duration (the warp wakes together, at the
    shortest min(t, 1 ms) of its sleeping threads; every thread's duration lies in its bound)."""
    requested_ns: np.ndarray
    bound_ns: np.ndarray
    duration_ns: np.ndarray


@dataclass(frozen=True, eq=False, repr=False)
class PerfEvent(Event):
    """pmevent / pmevent.mask (9.7.19.3): `mask` has bit i set for each event i triggered."""
    mask: int

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(i for i in range(PM_EVENTS) if self.mask >> i & 1)


@dataclass(frozen=True, eq=False, repr=False)
class RegisterChange(Event):
    """setmaxnreg (9.7.19.5). `warp_ids` the executing warps, `before`/`after` their per-thread
    register budgets, `blocked` the warps whose .inc waits for the pool (budgets unchanged),
    `effective` False when the kernel's register count at entry is unknown (no effect)."""
    action: str
    count: int
    warp_ids: np.ndarray
    before: np.ndarray
    after: np.ndarray
    blocked: np.ndarray
    effective: bool = True


# --------------------------------------------------------------------------------- state
MAXNREG_LIMIT = 255          # ptxas 13.0: '.maxnreg 256' -> "Too many maxnreg ..., will be ignored"
REGISTER_GRANULE = 8         # per-thread registers are held in steps of 8 (measured, below)


def entry_budget(maxnreg: int | None) -> int:
    """Per-thread registers a warp holds at entry for a kernel of register count `maxnreg`:
    at least 24 (ptxas: "adjusting per thread register count of 20 to lower bound of 24"),
    rounded up to a multiple of 8 (H200, .maxnreg 100: setmaxnreg.inc 104 needs no register from
    the pool and .dec 24 releases (104 - 24) * 128). 0 when unknown."""
    if maxnreg is None:
        return 0
    return -(-max(int(maxnreg), SETMAXNREG_RANGE[0]) // REGISTER_GRANULE) * REGISTER_GRANULE


@dataclass(eq=False)
class MiscState:
    """Per-CTA state of the miscellaneous instructions.

    warps: warps in the CTA. maxnreg: per-thread register count at kernel entry (the `.maxnreg`
    directive, ptxas --maxrregcount, or the count ptxas derives from .maxntid/.minnctapersm);
    None when unknown, and then setmaxnreg has no effect (9.7.19.5; ptxas info C7508). Each
    warp starts holding `entry_budget(maxnreg)` registers per thread (`nreg`).
    pool: registers (32-bit, whole warp) free in the CTA pool; the hardware starts it empty.
    breakpoints: "trap" (no debugger: brkpt aborts like trap, as measured) or "resume" (a
    debugger that logs the breakpoint and resumes).
    """
    warps: int
    maxnreg: int | None = None
    pool: int = 0
    breakpoints: str = "trap"
    events: list = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.warps, (int, np.integer)) or self.warps < 1:
            raise OperandError(f"MiscState: warps must be a positive integer, got {self.warps!r}")
        if self.maxnreg is not None and not (isinstance(self.maxnreg, (int, np.integer))
                                             and 1 <= self.maxnreg <= MAXNREG_LIMIT):
            raise OperandError(f"MiscState: maxnreg = {self.maxnreg!r} is not a per-thread "
                               f"register count in 1..{MAXNREG_LIMIT} (ptxas ignores a larger "
                               ".maxnreg)")
        if not isinstance(self.pool, (int, np.integer)) or self.pool < 0:
            raise OperandError(f"MiscState: pool = {self.pool!r} must be a non-negative number "
                               "of registers")
        if self.breakpoints not in ("trap", "resume"):
            raise OperandError(f"MiscState: breakpoints = {self.breakpoints!r}; expected 'trap' "
                               "or 'resume'")
        self.pm_counters = np.zeros(PM_EVENTS, np.int64)     # per event index, +1 per warp
        self.slept_ns = np.zeros(self.threads, np.int64)      # modelled sleep per thread
        self.nreg = np.full(self.warps, entry_budget(self.maxnreg), np.int64)  # per thread
        self._since_sync = np.zeros(self.warps, bool)  # executed setmaxnreg since last wg sync
        self._pending: dict[int, tuple[str, int]] = {}  # warpgroup -> (action, count)

    @property
    def threads(self) -> int:
        return LANES * int(self.warps)

    def warpgroup_sync(self, warpgroups=None) -> None:
        """Record an explicit synchronisation of `warpgroups` (all by default), e.g. a bar.sync
        their threads took part in. Raises UndefinedBehavior when only some warps of a
        warpgroup executed the setmaxnreg since the last synchronisation (9.7.19.5)."""
        n_wg = -(-int(self.warps) // WARPGROUP_WARPS)
        wgs = range(n_wg) if warpgroups is None else np.atleast_1d(warpgroups)
        for wg in wgs:
            wg = int(wg)
            if not 0 <= wg < n_wg:
                raise OperandError(f"warpgroup {wg} does not exist (CTA of {self.warps} warps)")
            _require_whole_warpgroup(self, wg, "before the warpgroup synchronised")
            self._since_sync[wg * WARPGROUP_WARPS:(wg + 1) * WARPGROUP_WARPS] = False
            self._pending.pop(wg, None)

    def finish(self) -> None:
        """Kernel exit: a setmaxnreg executed by only some warps of a warpgroup is undefined."""
        for wg in sorted(self._pending):
            _require_whole_warpgroup(self, wg, "before the kernel exited")


def _require_whole_warpgroup(state: MiscState, wg: int, when: str) -> None:
    if wg not in state._pending:
        return
    ws = np.arange(wg * WARPGROUP_WARPS, (wg + 1) * WARPGROUP_WARPS)
    done = np.zeros(WARPGROUP_WARPS, bool)
    inside = ws < state.warps
    done[inside] = state._since_sync[ws[inside]]
    if not done.all():
        action, count = state._pending[wg]
        raise UndefinedBehavior(
            f"setmaxnreg{action}.sync.aligned.u32 {count} was executed by warp(s) "
            f"{_join(ws[done])} of warpgroup {wg} but not by warp(s) {_join(ws[~done])} {when}; "
            "all warps of a warpgroup must execute the same setmaxnreg (9.7.19.5)")


# --------------------------------------------------------------------------------- helpers
def _join(xs) -> str:
    return ", ".join(str(int(x)) for x in xs)


def _ranges(xs: np.ndarray) -> str:
    """[0 1 2 3 7] -> '0-3, 7'."""
    if xs.size == 0:
        return ""
    breaks = np.flatnonzero(np.diff(xs) != 1)
    starts = np.r_[xs[0], xs[breaks + 1]]
    ends = np.r_[xs[breaks], xs[-1]]
    return ", ".join(f"{s}" if s == e else f"{s}-{e}" for s, e in zip(starts, ends))


def describe_threads(threads, limit: int = 6) -> str:
    """'warp 0 lanes 0-31; warp 2 lane 5' for thread indices 32*warp + lane."""
    threads = np.unique(np.asarray(threads, np.int64))
    warps, starts = np.unique(threads // LANES, return_index=True)
    parts = []
    for w, lanes in zip(warps[:limit], np.split(threads % LANES, starts[1:])[:limit]):
        parts.append(f"warp {w} lane{'s' if lanes.size > 1 else ''} {_ranges(lanes)}")
    more = f"; and {warps.size - limit} more warps" if warps.size > limit else ""
    return "; ".join(parts) + more


def active_mask(state: MiscState, active=None) -> np.ndarray:
    """`active` as a bool mask (32*W,): None -> all threads; a bool array (32*W,); or an array
    of thread indices."""
    n = state.threads
    if active is None:
        return np.ones(n, bool)
    a = np.asarray(active)
    if a.size == 0 and a.ndim == 1:
        return np.zeros(n, bool)
    if a.dtype == bool:
        if a.shape != (n,):
            raise OperandError(f"active mask has shape {a.shape}; expected ({n},) = 32 threads x "
                               f"{state.warps} warps")
        return a
    if not np.issubdtype(a.dtype, np.integer) or a.ndim != 1:
        raise OperandError(f"active must be a bool mask ({n},) or a 1-D array of thread indices, "
                           f"got dtype {a.dtype} shape {a.shape}")
    if a.size and (a.min() < 0 or a.max() >= n):
        raise OperandError(f"active thread index {int(a.max() if a.max() >= n else a.min())} "
                           f"outside 0..{n - 1} ({state.warps} warps)")
    mask = np.zeros(n, bool)
    mask[a] = True
    return mask


def _warp_uniform_or_raise(mask: np.ndarray, what: str) -> np.ndarray:
    """Per-warp 'executes' flags of an .aligned instruction; a partly active warp is undefined."""
    m = mask.reshape(-1, LANES)
    executing = m.any(axis=1)
    partial = executing & ~m.all(axis=1)
    if partial.any():
        w = int(np.flatnonzero(partial)[0])
        raise UndefinedBehavior(
            f"{what}: only lanes {_ranges(np.flatnonzero(m[w]))} of warp {w} execute it; the "
            ".sync.aligned instruction must be executed by all threads of the warp (and of its "
            "warpgroup), otherwise the behaviour is undefined (9.7.19.5)")
    return executing


# ---------------------------------------------------------------------------- instructions
def brkpt(state: MiscState, active=None, *, target: str = DEFAULT_TARGET,
          ptx_version=None) -> Breakpoint | None:
    """brkpt (9.7.19.1). Records a Breakpoint; with `state.breakpoints == "trap"` (the default,
    the hardware with no debugger attached) raises BreakpointTrap naming the threads."""
    check("brkpt", (), (), target, ptx_version)
    threads = np.flatnonzero(active_mask(state, active))
    if threads.size == 0:
        return None
    ev = Breakpoint(threads)
    state.events.append(ev)
    if state.breakpoints == "trap":
        raise BreakpointTrap(f"brkpt executed by {describe_threads(threads)} with no debugger "
                             "attached: the kernel aborts as for trap (unspecified launch "
                             "failure)", threads)
    return ev


def trap(state: MiscState, active=None, *, target: str = DEFAULT_TARGET,
         ptx_version=None) -> None:
    """trap (9.7.19.4): records a Trap and raises TrapExecuted naming the threads."""
    check("trap", (), (), target, ptx_version)
    threads = np.flatnonzero(active_mask(state, active))
    if threads.size == 0:
        return None
    state.events.append(Trap(threads))
    raise TrapExecuted(f"trap executed by {describe_threads(threads)}: execution aborted and the "
                       "host interrupted (9.7.19.4)", threads)


def nanosleep(state: MiscState, t, active=None, *, target: str = DEFAULT_TARGET,
              ptx_version=None) -> Sleep | None:
    """nanosleep.u32 t (9.7.19.2). `t`: an immediate (int) or the register's bits, uint32 (32*W,).
    Each executing thread sleeps a duration in [0, min(2t, 1 ms)]; ptxsim's model: every sleeping
    thread of a warp wakes at the warp's shortest min(t, 1 ms)."""
    mask = active_mask(state, active)
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        check("nanosleep", (".u32",), (int(t),), target, ptx_version)
        req = np.full(state.threads, int(t) & 0xFFFFFFFF, np.int64)   # low 32 bits (ptxas)
    else:
        check("nanosleep", (".u32",), ("t",), target, ptx_version)
        arr = np.asarray(t)
        if arr.shape != (state.threads,):
            raise OperandError(f"nanosleep: register t has shape {arr.shape}; expected "
                               f"({state.threads},)")
        if arr.dtype in (np.int32, np.float32):
            arr = arr.view(np.uint32)
        elif not np.issubdtype(arr.dtype, np.integer) or (
                arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF)):
            raise OperandError("nanosleep: register t must hold 32-bit register bits (uint32)")
        req = arr.astype(np.int64)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return None
    capped = np.where(mask, np.minimum(req, NANOSLEEP_MAX_NS), np.iinfo(np.int64).max)
    wake = capped.reshape(-1, LANES).min(axis=1)            # the warp wakes together
    duration = np.repeat(wake, LANES)[threads]
    bound = np.minimum(2 * req[threads], NANOSLEEP_MAX_NS)
    ev = Sleep(threads, req[threads].astype(np.uint32), bound, duration)
    state.slept_ns[threads] += duration
    state.events.append(ev)
    return ev


def pmevent(state: MiscState, a: int, active=None, *, mask: bool = False,
            target: str = DEFAULT_TARGET, ptx_version=None) -> PerfEvent | None:
    """pmevent a / pmevent.mask a (9.7.19.3). Each triggered event's counter goes up by one per
    executing warp (CUDA __prof_trigger / prof_trigger_0x: 'increments per warp')."""
    check("pmevent", (".mask",) if mask else (), (a,), target, ptx_version)
    bits = int(a) if mask else 1 << int(a)        # pmevent a == PMTRIG (1 << a), measured
    m = active_mask(state, active)
    threads = np.flatnonzero(m)
    if threads.size == 0:
        return None
    n_warps = int(m.reshape(-1, LANES).any(axis=1).sum())
    sel = (bits >> np.arange(PM_EVENTS)) & 1
    state.pm_counters += sel * n_warps
    ev = PerfEvent(threads, bits)
    state.events.append(ev)
    return ev


def setmaxnreg(state: MiscState, action: str, imm_reg_count: int, active=None, *,
               type: str = ".u32", complete: bool = True, target: str = DEFAULT_TARGET,
               ptx_version=None) -> RegisterChange | None:
    """setmaxnreg.action.sync.aligned.u32 imm-reg-count (9.7.19.5).

    `action` ".inc" or ".dec". `complete=True` (single-instruction use): this call is the whole
    warpgroup's execution, so every warpgroup touched must execute it with all four warps, and an
    .inc the pool cannot satisfy blocks forever (DeadlockError). `complete=False` (the kernel
    executor): warps may arrive one at a time; blocked warps come back in `.blocked` to be
    retried, and whole-warpgroup execution is checked at `state.warpgroup_sync()` / `finish()`.
    """
    action = action if action.startswith(".") else "." + action
    check("setmaxnreg", (action, ".sync", ".aligned", type), (imm_reg_count,), target,
          ptx_version)
    count = int(imm_reg_count)
    what = f"setmaxnreg{action}.sync.aligned{type} {count}"
    executing = _warp_uniform_or_raise(active_mask(state, active), what)
    if not executing.any():
        return None
    warp_ids = np.flatnonzero(executing)
    wgs = np.unique(warp_ids // WARPGROUP_WARPS)
    threads = (warp_ids[:, None] * LANES + np.arange(LANES)).reshape(-1)

    again = executing & state._since_sync
    if again.any():
        raise UndefinedBehavior(
            f"{what}: warp(s) {_join(np.flatnonzero(again))} already executed a setmaxnreg and "
            "their warpgroup has not synchronised since; all warps of the warpgroup must "
            "synchronise explicitly before the next setmaxnreg (9.7.19.5)")
    for wg in wgs:
        prior = state._pending.get(int(wg))
        if prior is not None and prior != (action, count):
            raise UndefinedBehavior(
                f"{what}: other warps of warpgroup {wg} executed setmaxnreg{prior[0]} {prior[1]}; "
                "all warps of a warpgroup must execute the same setmaxnreg (9.7.19.5)")
    if complete:
        for wg in wgs:
            ws = np.arange(wg * WARPGROUP_WARPS, (wg + 1) * WARPGROUP_WARPS)
            missing = ws[(ws >= state.warps) | ~executing[np.minimum(ws, state.warps - 1)]]
            if missing.size:
                raise UndefinedBehavior(
                    f"{what}: executed by warp(s) {_join(ws[~np.isin(ws, missing)])} of "
                    f"warpgroup {wg} but not by warp(s) {_join(missing)}; if setmaxnreg is not "
                    "executed by all warps in the warpgroup the behaviour is undefined (9.7.19.5)")

    empty = np.zeros(0, np.int64)
    if state.maxnreg is None:
        warnings.warn(SetmaxnregIgnored(
            f"{what}: the kernel's register count at entry is unknown (no .maxnreg, "
            "--maxrregcount or launch bounds), so setmaxnreg has no effect (9.7.19.5; ptxas "
            "C7508 'setmaxnreg ignored')"), stacklevel=2)
        ev = RegisterChange(threads, action, count, warp_ids, empty, empty, empty, effective=False)
        state.events.append(ev)
        return ev

    before = state.nreg[warp_ids].copy()
    wrong = before < count if action == ".dec" else before > count
    if wrong.any():
        w = int(warp_ids[np.flatnonzero(wrong)[0]])
        rel = "smaller" if action == ".dec" else "larger"
        raise UndefinedBehavior(
            f"{what}: warp {w} holds {int(state.nreg[w])} registers per thread, {rel} than "
            f"imm-reg-count; {action} with such a count is undefined (9.7.19.5; the H200 faults "
            "with an illegal instruction on .inc below the current count)")

    granted = np.ones(warp_ids.size, bool)
    pool = state.pool
    if action == ".dec":
        pool += int(((before - count) * LANES).sum())
    else:
        # A warpgroup's increase is granted whole or not at all (measured): each warp's .inc
        # proceeds only when the pool holds what every warp of its warpgroup still needs.
        wg_of = warp_ids // WARPGROUP_WARPS
        for wg in wgs:                                   # at most 8 warpgroups per CTA
            ws = np.arange(wg * WARPGROUP_WARPS, min((wg + 1) * WARPGROUP_WARPS, state.warps))
            need_wg = int((np.maximum(count - state.nreg[ws], 0) * LANES).sum())
            if need_wg > pool:
                granted[wg_of == wg] = False
                continue
            pool -= int(((count - before[wg_of == wg]) * LANES).sum())
        if complete and not granted.all():
            wg = int(wg_of[~granted][0])
            ws = np.arange(wg * WARPGROUP_WARPS, (wg + 1) * WARPGROUP_WARPS)
            need = int((np.maximum(count - state.nreg[ws], 0) * LANES).sum())
            raise DeadlockError(
                f"{what}: warpgroup {wg} needs {need} more registers but the CTA pool holds "
                f"{pool}, and only setmaxnreg.dec returns registers to the pool, so the "
                ".inc blocks forever (9.7.19.5; measured on H200: the pool starts empty)")
    state.pool = pool
    done = warp_ids[granted]
    state.nreg[done] = count
    state._since_sync[done] = True
    for wg in np.unique(done // WARPGROUP_WARPS):
        state._pending[int(wg)] = (action, count)
    ev = RegisterChange(threads, action, count, warp_ids, before, state.nreg[warp_ids].copy(),
                        warp_ids[~granted])
    state.events.append(ev)
    return ev


# ------------------------------------------------------------------------ executor adapter
HANDLERS = {"brkpt": brkpt, "nanosleep": nanosleep, "pmevent": pmevent, "trap": trap,
            "setmaxnreg": setmaxnreg}


def handle_instruction(inst, regs, target: str = DEFAULT_TARGET, *, state: MiscState,
                       active=None, ptx_version=None, complete: bool = True) -> dict:
    """Execute a parsed misc instruction (duck type of `ptxsim.ptx.Instruction`: `opcode`,
    `qualifiers`, `operands` with `.value` for immediates and `.name` for registers, `predicate`)
    against `regs` (`.read(name)` -> uint32 (32*W,)). The guard is applied per thread here
    (brkpt, trap, nanosleep and pmevent are not .aligned). Returns {} (no destination registers);
    the effects land in `state`."""
    opcode, quals = inst.opcode, tuple(inst.qualifiers)
    ops = []
    for op in inst.operands:
        if hasattr(op, "value") and isinstance(op.value, (int, np.integer)):
            ops.append(int(op.value))
        elif hasattr(op, "name"):
            ops.append(op.name)
        else:
            raise PtxValidationError(f"'{inst}': operand {op} is neither a register nor an "
                                     "integer immediate")
    mask = active_mask(state, active)
    pred = getattr(inst, "predicate", None)
    if pred is not None:
        mask = mask & ((np.asarray(regs.read(pred.name)) != 0) ^ bool(pred.negated))
    f = check(opcode, quals, tuple(ops), target, ptx_version)
    kw = dict(target=target, ptx_version=ptx_version)
    if f.name in ("brkpt", "trap"):
        HANDLERS[f.name](state, mask, **kw)
    elif f.name == "nanosleep":
        t = ops[0] if isinstance(ops[0], int) else regs.read(ops[0])
        nanosleep(state, t, mask, **kw)
    elif f.opcode == "pmevent":
        pmevent(state, ops[0], mask, mask=f.name == "pmevent.mask", **kw)
    else:
        action = next(q for q in quals if q in (".inc", ".dec"))
        typ = next(q for q in quals if q in (".u32", ".s32"))
        setmaxnreg(state, action, ops[0], mask, type=typ, complete=complete, **kw)
    return {}


# --- ptxsim.execute / executor dispatch (isa/registry.py) ------------------------------------
OPCODES = ("brkpt", "trap", "nanosleep", "pmevent", "setmaxnreg")
for _opcode in OPCODES:
    _registry.register(_opcode, handle_instruction, guard="handler", state=True)
