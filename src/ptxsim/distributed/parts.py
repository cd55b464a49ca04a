"""One launch cut into parts: which waves each worker runs, what a worker sends back, and how the
driver merges the parts into the one-process result.

A part is a contiguous run of the launch's waves (`Launch.wave_plan()`, whole clusters), so the
CTAs of a wave keep their wave-mates and their %smid, and launch order across parts is part order.
A worker runs its part on its own copy of global memory, starting from the bytes before the launch,
and sends back the bytes that changed (`BufferDiff`: runs of changed bytes per buffer) and the
global addresses it used atomically. The driver writes the parts into its buffers in part order
and refuses (`MergeConflict`) a byte that two parts changed to different values, and an address
used atomically in one part and changed or used atomically in another: a single process would
have let the later CTA see the earlier one's result, separate workers cannot.
"""
from __future__ import annotations

import importlib
import os
import pickle
import re
import socket
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import MergeConflict, WorkerError

# kernels that run in one worker whatever `workers` says, and why
_CLOCKS = re.compile(r"%(clock64|clock_hi|clock|globaltimer_lo|globaltimer_hi|globaltimer)\b")


def serial_reason(program) -> str | None:
    """Why this kernel cannot be split between workers (None: it can).

    - clusterlaunchcontrol.try_cancel cancels clusters that have not started (9.7.9.x): which
      ones depends on every cluster before it, so the grid's order must be one process's.
    - %clock / %clock64 / %globaltimer count the instructions issued by the launch so far
      (machine/grid.py), including those of every earlier wave."""
    for inst in program.instructions:
        if inst.opcode.startswith("clusterlaunchcontrol."):
            return (f"line {inst.loc.line}: {inst.opcode} schedules clusters dynamically (which "
                    "cluster it cancels depends on every earlier one)")
        m = _CLOCKS.search(inst.text or repr(inst.operands))
        if m:
            return (f"line {inst.loc.line}: reads {m.group(0)}, which counts the instructions of "
                    "every earlier wave")
    return None


def start_session(new_session: bool) -> None:
    """In a worker process: start a session of its own (`os.setsid`) when asked, so that
    sched_autogroup gives it its own share of the CPUs (distributed/local.py)."""
    if new_session:
        try:
            os.setsid()
        except OSError:             # already a session leader
            pass


@dataclass(frozen=True)
class Part:
    index: int                  # position in launch order
    waves: tuple[int, ...]      # wave indices (contiguous)
    n_ctas: int

    def describe(self) -> str:
        w = self.waves
        span = f"wave {w[0]}" if len(w) == 1 else f"waves {w[0]}-{w[-1]}"
        return f"worker {self.index} ({span}, {self.n_ctas} CTAs)"


def split(waves: list, n: int) -> list[Part]:
    """`n` (at most one per wave) contiguous parts of the waves, balanced by CTA count."""
    sizes = np.array([int(np.asarray(w).size) for w in waves], np.int64)
    n = max(1, min(int(n), len(waves)))
    cum = np.cumsum(sizes)
    total = int(cum[-1]) if cum.size else 0
    bounds = [0]
    for k in range(1, n):
        # first wave whose cumulative CTA count reaches k/n of the grid, keeping parts non-empty
        b = int(np.searchsorted(cum, total * k / n, side="left")) + 1
        b = min(max(b, bounds[-1] + 1), len(waves) - (n - k))
        bounds.append(b)
    bounds.append(len(waves))
    return [Part(i, tuple(range(a, b)), int(sizes[a:b].sum()))
            for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]


# ---------------------------------------------------------------------------------------------
# what a worker sends back
# ---------------------------------------------------------------------------------------------
@dataclass
class BufferDiff:
    """The bytes of one global buffer that a part changed: within the span [lo, lo + span), a
    packed bit per byte (numpy.packbits order) says which changed, and `data` holds their new
    values in order. Bits rather than byte offsets: an eighth of the span, however scattered
    the changes (an output whose bytes partly keep their old values is the usual case)."""
    base: int
    name: str
    nbytes: int
    lo: int
    span: int
    bits: np.ndarray            # uint8, packbits of the span's changed mask
    data: np.ndarray            # uint8
    area: tuple | None = None   # in transit: (bits offset, bits size, data offset, data size) in
    #                             the shared memory area bits and data were moved to (local.py)

    def mask(self) -> np.ndarray:
        return np.unpackbits(self.bits, count=self.span).view(bool)

    def covers(self, offsets: np.ndarray) -> np.ndarray:
        """Which of `offsets` this part changed."""
        offsets = np.asarray(offsets, np.int64)
        rel = offsets - self.lo
        inside = (rel >= 0) & (rel < self.span)
        r = np.where(inside, rel, 0)
        bit = (self.bits[r >> 3] >> (7 - (r & 7)).astype(np.uint8)) & 1 if self.span else 0
        return inside & (bit == 1)


_BLOCK = 1 << 20          # byte_diff's block: its temporaries stay in cache, no page faults


def byte_diff(before: np.ndarray, after: np.ndarray, base: int, name: str) -> BufferDiff | None:
    """The bytes of `after` that differ from `before`, block by block (one whole-buffer mask of
    a 16 MB output cost 15-80 ms in a fresh worker, mostly page faults of the temporaries;
    by 1 MB blocks ~10 ms)."""
    n = int(after.size)
    if not n:
        return None
    buf = np.empty(min(n, _BLOCK), bool)

    def changed(s, e):
        m = buf[:e - s]
        np.not_equal(before[s:e], after[s:e], out=m)
        return m
    lo = hi = None
    for s in range(0, n, _BLOCK):
        m = changed(s, min(n, s + _BLOCK))
        k = int(np.argmax(m))
        if m[k]:
            lo = s + k
            break
    if lo is None:
        return None
    for e in range(n, lo, -_BLOCK):
        s = max(lo, e - _BLOCK)
        m = changed(s, e)[::-1]
        k = int(np.argmax(m))
        if m[k]:
            hi = e - k
            break
    bits, data = [], []
    for s in range(lo, hi, _BLOCK):          # blocks of a multiple of 8 bytes from lo: their
        m = changed(s, min(hi, s + _BLOCK))  # packbits concatenate to the span's
        bits.append(np.packbits(m))
        data.append(after[s:s + m.size][m])
    return BufferDiff(base, name, n, lo, hi - lo,
                      bits[0] if len(bits) == 1 else np.concatenate(bits),
                      data[0] if len(data) == 1 else np.concatenate(data))


class Snapshot:
    """The bytes of every global buffer before a part runs (also of a buffer a front door maps
    during the run, e.g. on a miss), to diff against afterwards."""

    def __init__(self, gmem):
        self.gmem = gmem
        self.before = {b.base: b.u8.copy() for b in gmem.buffers}
        plain_map = gmem.map

        def map_and_keep(*a, **k):
            base = plain_map(*a, **k)
            for b in gmem.buffers:
                if b.base == base:
                    self.before.setdefault(base, b.u8.copy())
            return base
        gmem.map = map_and_keep
        self._plain_map = plain_map

    def close(self) -> None:
        """Stop keeping the bytes of buffers mapped from now on (the driver's part)."""
        self.gmem.map = self._plain_map

    def diffs(self) -> list[BufferDiff]:
        out = []
        for b in self.gmem.buffers:
            d = byte_diff(self.before[b.base], b.u8, b.base, b.name)
            if d is not None:
                out.append(d)
        return out


@dataclass
class ErrorRecord:
    """An exception raised in a worker, in a form that crosses processes for any ptxsim error
    (some take keyword fields their pickled form loses)."""
    module: str
    qualname: str
    message: str
    fields: dict
    trace: str

    @classmethod
    def of(cls, exc: BaseException) -> "ErrorRecord":
        fields = {}
        for k, v in vars(exc).items():
            try:
                pickle.dumps(v)
            except Exception:          # noqa: BLE001 - an unpicklable field is left behind
                continue
            fields[k] = v
        return cls(type(exc).__module__, type(exc).__qualname__, str(exc), fields,
                   "".join(traceback.format_exception(exc)))

    def rebuild(self, where: str) -> BaseException:
        try:
            cls = importlib.import_module(self.module)
            for part in self.qualname.split("."):
                cls = getattr(cls, part)
            exc = cls.__new__(cls)
            BaseException.__init__(exc, self.message)
            vars(exc).update(self.fields)
        except Exception:              # noqa: BLE001 - a class the driver cannot import
            exc = WorkerError(f"{self.module}.{self.qualname}: {self.message}")
        exc.add_note(f"raised in {where}; the worker's traceback:\n{self.trace}")
        return exc


@dataclass
class PartResult:
    part: Part
    diffs: list[BufferDiff] = field(default_factory=list)
    atomics: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    steps: int = 0
    printf: list = field(default_factory=list)
    error: ErrorRecord | None = None
    findings: list = field(default_factory=list)    # the sanitizer's (machine/sanitizer)
    seconds: float = 0.0        # the part's run, in the worker (wall)
    cpu_seconds: float = 0.0    # the part's run, in the worker (CPU time of its process)
    diff_seconds: float = 0.0   # snapshot + diff, in the worker (CPU time)
    host: str = ""
    pid: int = 0
    in_place: bool = False      # ran in the driver: its bytes and findings are already there
    exception: BaseException | None = field(default=None, repr=False)   # (in place only)
    before: dict | None = field(default=None, repr=False)   # in place: base -> bytes before
    kept: bool = False          # ran in a kept worker (distributed/pool.py)
    numerics: str = ""          # the numerics backend it ran with (ptxsim.numerics.backend)

    def undo(self, gmem) -> None:
        """An in-place part: put back the bytes its buffers had before it ran."""
        for b in gmem.buffers:
            old = (self.before or {}).get(b.base)
            if old is not None and old.size == b.u8.size:
                b.u8[:] = old


def run_part(launch, part: Part, on_wave=None, in_place: bool = False) -> PartResult:
    """Run `part` of a launch that has not run (in a worker) and collect what it changed.
    in_place: in the driver's own process (`local.run_local`): the launch's memory, findings
    and error are the caller's; the diff is still taken (the merge checks the other parts
    against it)."""
    c0 = time.process_time()
    launch.progress = False
    snap = Snapshot(launch.gmem)
    old_log, launch.gmem.atomic_log = launch.gmem.atomic_log, []
    t1, c1 = time.perf_counter(), time.process_time()
    error = exception = None
    try:
        launch.run(only=set(part.waves), on_wave=on_wave)
    except Exception as exc:           # noqa: BLE001 - sent back, raised by the driver
        error = ErrorRecord.of(exc)
        exception = exc if in_place else None
    t2, c2 = time.perf_counter(), time.process_time()
    diffs = snap.diffs()
    snap.close()
    log = launch.gmem.atomic_log
    launch.gmem.atomic_log = old_log
    atomics = (np.unique(np.concatenate([a[:, None] + np.arange(size, dtype=np.uint64)
                                         for a, size in log], axis=None))
               if log else np.zeros(0, np.uint64))
    c3 = time.process_time()
    from ptxsim.numerics import backend
    return PartResult(part, diffs, atomics, launch.steps, list(launch.printf), error,
                      list(launch.findings), t2 - t1, c2 - c1, (c1 - c0) + (c3 - c2),
                      socket.gethostname(), os.getpid(), in_place, exception,
                      snap.before if in_place else None, numerics=backend.active())


def _to_area(result: PartResult, area, start: int = 0) -> None:
    """Move the worker's diffs' bits and data into `area` from offset `start`, so the pipe
    carries only their places (a 10 MB output over a pipe: pickled, copied through the 64 KB
    pipe buffer and unpickled, ~0.03-0.05 s); what does not fit (a buffer mapped during the
    run) is pickled."""
    off = start
    for d in result.diffs:
        nb, nd = int(d.bits.size), int(d.data.size)
        if off + nb + nd > len(area):
            break
        np.frombuffer(area, np.uint8, nb, off)[:] = d.bits
        np.frombuffer(area, np.uint8, nd, off + nb)[:] = d.data
        d.area = (off, nb, off + nb, nd)
        d.bits = d.data = None
        off += nb + nd


def _from_area(result: PartResult, area) -> None:
    for d in result.diffs:
        if d.area is not None:
            ob, nb, od, nd = d.area
            d.bits = np.frombuffer(area, np.uint8, nb, ob)
            d.data = np.frombuffer(area, np.uint8, nd, od)
            d.area = None


# ---------------------------------------------------------------------------------------------
# the driver's merge
# ---------------------------------------------------------------------------------------------
def merge(launch, results: list[PartResult], *, allow_order_dependent: bool = False) -> None:
    """Write the parts' changed bytes into the driver's global memory, in launch order, and
    total their steps, printf lines and sanitizer findings. Raises the first part's error (in
    launch order) after merging the parts before it and that part's writes up to its error, as
    one process would leave memory; raises MergeConflict where the parts' results cannot be one
    process's."""
    results = sorted(results, key=lambda r: r.part.index)
    failed = next((r for r in results if r.error is not None), None)
    if failed is not None:
        results = [r for r in results if r.part.index <= failed.part.index]
    gmem = launch.gmem
    by_base = {b.base: b for b in gmem.buffers}
    if not allow_order_dependent:
        try:
            _check_atomics(gmem, results)
        except MergeConflict:
            for r in results:           # nothing merged: the driver's own part taken back
                if r.in_place:
                    r.undo(gmem)
            raise
    written: dict[int, list] = {}         # base -> the diffs merged into it so far
    for r in results:
        for d in r.diffs:
            buf = by_base.get(d.base)
            # a buffer a worker mapped during its run (a front door's resolver mapping host
            # memory a kernel touched first): the driver maps it the same way
            if buf is None and getattr(gmem, "resolver", None) is not None \
                    and gmem.resolver(d.base, 1):
                by_base = {b.base: b for b in gmem.buffers}
                buf = by_base.get(d.base)
            if buf is None or buf.nbytes != d.nbytes:
                raise WorkerError(f"{r.part.describe()} changed global buffer '{d.name}' at "
                                  f"{d.base:#x} ({d.nbytes} bytes), which the driver does not "
                                  "have mapped")
            seg = buf.u8[d.lo:d.lo + d.span]
            earlier = written.setdefault(d.base, [])
            if not r.in_place and not allow_order_dependent:
                # bytes an earlier part changed too, where the spans meet, by blocks (the
                # waves of a grid rarely change the same bytes, but their spans often
                # interleave: a grouped tile order)
                hits = [h for e in earlier
                        if (h := _meet(d, e)) is not None]
                if hits:
                    off = np.unique(np.concatenate(hits))          # in d's span
                    rank = np.cumsum(d.mask())[off] - 1            # their places in d.data
                    differ = seg[off] != d.data[rank]
                    if differ.any():
                        k = int(np.argmax(differ))
                        _write_conflict(results, r, d, buf, d.lo + int(off[k]),
                                        int(d.data[rank[k]]))
            if not r.in_place:      # (the driver's own part, run_local: its bytes are there)
                _apply(seg, d)
            earlier.append(d)
    launch.steps = sum(r.steps for r in results)
    launch.printf = [line for r in results for line in r.printf]
    san = getattr(launch, "sanitizer", None)
    if san is not None:
        for r in results:
            if not r.in_place:                      # (the driver's part found into san)
                for f in r.findings:
                    san.findings.add(f)
    if failed is not None:
        exc = failed.exception if failed.exception is not None else \
            failed.error.rebuild(failed.part.describe())
        if san is not None:
            exc.findings = san.findings
        raise exc


def _mask_range(d: BufferDiff, i: int, j: int) -> np.ndarray:
    """d's changed-byte mask over [i, j) of its span."""
    u = np.unpackbits(d.bits[i >> 3:(j + 7) >> 3]).view(bool)
    return u[i & 7:(i & 7) + (j - i)]


def _meet(d: BufferDiff, e: BufferDiff):
    """Offsets in d's span of the bytes both d and e changed (None: none)."""
    a, b = max(d.lo, e.lo), min(d.lo + d.span, e.lo + e.span)
    hits = []
    for s in range(a, b, _BLOCK):
        t = min(b, s + _BLOCK)
        both = _mask_range(d, s - d.lo, t - d.lo) & _mask_range(e, s - e.lo, t - e.lo)
        if both.any():
            hits.append(np.flatnonzero(both) + (s - d.lo))
    return np.concatenate(hits) if hits else None


def _apply(seg: np.ndarray, d: BufferDiff) -> None:
    """seg[d.mask()] = d.data, by blocks of the span (temporaries in cache)."""
    pos = 0
    for s in range(0, d.span, _BLOCK):
        e = min(d.span, s + _BLOCK)
        m = _mask_range(d, s, e)
        k = int(np.count_nonzero(m))
        seg[s:e][m] = d.data[pos:pos + k]
        pos += k


def _write_conflict(results, r, d, buf, off, value):
    earlier = next(e for e in results if e.part.index < r.part.index
                   and any(x.base == d.base and x.covers(np.array([off]))[0] for x in e.diffs))
    old = int(buf.u8[off])
    raise MergeConflict(
        f"{earlier.part.describe()} and {r.part.describe()} both wrote byte {off} of global "
        f"buffer '{buf.name}' (address {buf.base + off:#x}), with {old:#04x} and {value:#04x}: "
        "a write race between CTAs, whose one-process result is the later wave's value. Pass "
        "allow_order_dependent=True to take that (the later wave wins), or run in one worker",
        buffer=buf.name, offset=off, address=buf.base + off,
        workers=(earlier.part.index, r.part.index))


def _check_atomics(gmem, results) -> None:
    users = [r for r in results if r.atomics.size]
    if not users:
        return
    for r in users:
        for other in results:
            if other is r:
                continue
            if other.atomics.size and other.part.index > r.part.index:
                both = np.intersect1d(r.atomics, other.atomics)
                if both.size:
                    _atomic_conflict(gmem, r, other, int(both[0]), "used atomics on")
            for d in other.diffs:
                inside = (r.atomics >= np.uint64(d.base)) & \
                         (r.atomics < np.uint64(d.base + d.nbytes))
                if not inside.any():
                    continue
                offs = (r.atomics[inside] - np.uint64(d.base)).astype(np.int64)
                hit = d.covers(offs)
                if hit.any():
                    _atomic_conflict(gmem, r, other, d.base + int(offs[np.argmax(hit)]),
                                     "wrote")


def _atomic_conflict(gmem, r, other, address, what):
    try:
        where = gmem.describe(address)
    except Exception:                  # noqa: BLE001
        where = f"address {address:#x}"
    first, second = sorted((r, other), key=lambda x: x.part.index)
    raise MergeConflict(
        f"{r.part.describe()} used global atomics on address {address:#x} ({where}) and "
        f"{other.part.describe()} {what} it too: one process serialises these on the same "
        "memory, separate workers each start from the bytes before the launch. Run this kernel "
        "in one worker, or pass allow_order_dependent=True to take the later wave's bytes (not "
        "a result one process gives)", address=address,
        workers=(first.part.index, second.part.index))
