"""Kept worker processes for `workers=N` on this machine (`keep_workers=True`, the default).

A worker forked for one launch pays, besides the fork, a page fault for every page it writes:
its heap is the driver's, shared copy-on-write, and while it lives the driver's writes fault
too. On the 2-wave Triton GEMM of benchmarks/workers.py that is ~100,000 faults and ~0.2 s of
each part's ~1.15 s, on both sides. A kept worker is forked once, at the first launch that needs
it, and serves the launches after it: from its second launch on its heap is its own and warm.

What a kept worker is sent, since it was forked before the launch existed: the launch's inputs
(PTX text, kernel, geometry, arguments, options: what `ptxsim.distributed.launch` records for a
Ray task), pickled with protocol 5 so that every array's bytes go into a shared memory area of
that worker's rather than through the pipe; the worker rebuilds the launch from them (the parsed
module is cached there from its first launch), checks that its global buffers lie where the
driver's do, runs its part and puts its changed bytes back into the same area (parts._to_area).

Launches a kept worker cannot take run with workers forked for them as before (local.py): PTX
given as a parsed Module, arguments that do not pickle, a random schedule, or inputs larger than
the area. A kept worker is a copy of the process as it was when forked: `close_pool()` after
changing anything ptxsim reads at run time other than the numerics backend and its thread count
(both sent with every launch). Kept workers end with the driver (their pipe closes) or at
`close_pool()`."""
from __future__ import annotations

import atexit
import mmap
import os
import pickle
import threading
from dataclasses import dataclass
from multiprocessing.connection import wait

from ptxsim.distributed.parts import (ErrorRecord, Part, PartResult, _from_area, _to_area,
                                      run_part, start_session)
from ptxsim.errors import WorkerError

_ALIGN = 64
# an area's size in address space (an anonymous shared mapping: only the pages written take
# memory); after a launch whose data touched more than _KEEP_TOUCHED bytes of it, the pages beyond
# what the next launch needs are given back
_AREA_CAP = 32 << 30
_KEEP_TOUCHED = 256 << 20


def _area_bytes() -> int:
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 4 << 30
    return max(64 << 20, min(_AREA_CAP, phys // 2)) & ~(mmap.PAGESIZE - 1)


def _up(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


@dataclass
class Job:
    payload: bytes              # the pickled spec, its arrays' bytes out of band in the area
    places: list                # (offset, size) of each out-of-band buffer in the area
    out: int                    # where the changed bytes go in the area
    layout: list                # the driver's global buffers: (base, size)
    part: Part
    numerics: str               # ptxsim.numerics.backend: the active backend, thread count
    threads: int


class _Worker:
    def __init__(self, ctx, new_session: bool):
        self.area = mmap.mmap(-1, _area_bytes())
        self.touched = 0                 # bytes of the area written by the latest launch
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child, self.conn, self.area, new_session),
                                name="ptxsim-kept-worker", daemon=True)
        self.proc.start()
        child.close()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.is_alive() and not self.conn.closed

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(("stop", None))
        except OSError:
            pass
        self.proc.join(timeout=2)
        self.kill()

    def put(self, buffers, need_out: int):
        """Copy the out-of-band buffers into the area: -> (places, out offset), or None when
        they and the changed bytes cannot fit."""
        import numpy as np
        places, off = [], 0
        sizes = [b.raw().nbytes for b in buffers]
        end = _up(sum(_up(s) for s in sizes)) + need_out
        if end > len(self.area):
            return None
        if self.touched > _KEEP_TOUCHED and self.touched > end:
            lo = (end + mmap.PAGESIZE - 1) & ~(mmap.PAGESIZE - 1)
            if hasattr(mmap, "MADV_REMOVE") and lo < self.touched:
                self.area.madvise(mmap.MADV_REMOVE, lo, len(self.area) - lo)
        for b, s in zip(buffers, sizes):
            np.frombuffer(self.area, np.uint8, s, off)[:] = np.frombuffer(b.raw(), np.uint8)
            places.append((off, s))
            off += _up(s)
        self.touched = end
        return places, _up(off)


class _Pool:
    def __init__(self):
        self.workers: dict[bool, list[_Worker]] = {True: [], False: []}
        self.lock = threading.Lock()

    def take(self, ctx, n: int, new_session: bool) -> list[_Worker]:
        have = self.workers[new_session]
        for w in [w for w in have if not w.alive()]:      # ended since (killed, crashed)
            self.drop(w)
        while len(have) < n:
            have.append(_Worker(ctx, new_session))
        return have[:n]

    def drop(self, w: _Worker) -> None:
        w.kill()
        for have in self.workers.values():
            if w in have:
                have.remove(w)

    def close(self) -> None:
        for have in self.workers.values():
            for w in have:
                w.stop()
            have.clear()


_POOL = _Pool()


def _forget_in_child() -> None:
    """A forked process (a worker of any kind, a farm task) starts with no kept workers: the
    driver's are the driver's. Its copies of their pipes are closed, so that a kept worker
    still sees its pipe close when the driver ends."""
    global _POOL
    for have in _POOL.workers.values():
        for w in have:
            try:
                w.conn.close()
            except OSError:
                pass
    _POOL = _Pool()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(lambda: _POOL.close())


def close_pool() -> None:
    """End this process's kept workers (the next launch with workers forks new ones)."""
    _POOL.close()


def kept_pids() -> list[int]:
    return [w.pid for have in _POOL.workers.values() for w in have if w.alive()]


# ---------------------------------------------------------------------------------------------
# the worker
# ---------------------------------------------------------------------------------------------
def _serve(conn, driver_end, area, new_session: bool) -> None:
    driver_end.close()                  # the driver's death closes the pipe: the loop ends
    _keep_heap()
    start_session(new_session)
    while True:
        try:
            kind, job = conn.recv()
        except (EOFError, OSError):
            return
        if kind == "stop":
            return
        try:
            _run_job(conn, area, job)
        except Exception as exc:        # noqa: BLE001 - sent back, raised by the driver
            conn.send(("failed", ErrorRecord.of(exc)))


def _keep_heap() -> None:
    """glibc gives the top of the heap back to the system once more than 128 KB of it is free
    (M_TRIM_THRESHOLD), so a process that frees a launch's arrays and then runs the next one
    faults every page in again (~67,000 faults of a kept worker's ~0.95 s part on the Triton
    GEMM). A kept worker runs one launch after another: it keeps its heap."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(ctypes.c_int(-1), ctypes.c_int(1 << 30))      # M_TRIM_THRESHOLD
    except (OSError, AttributeError):   # not glibc
        pass


def _run_job(conn, area, job: Job) -> None:
    from ptxsim.machine.executor import Launch
    from ptxsim.numerics import backend
    backend.select(job.numerics)
    backend.set_threads(job.threads)
    view = memoryview(area)
    try:
        spec = pickle.loads(job.payload, buffers=[view[o:o + n] for o, n in job.places])
        spec["args"] = list(spec["args"])
        launch = Launch(spec["ptx"], spec["kernel"], spec["grid"], spec["block"], spec["cluster"],
                        spec["args"], **spec["options"])
        layout = _layout(launch)
        if layout != job.layout:
            conn.send(("mismatch", layout))
            return
        conn.send(("ready", None))
        result = run_part(launch, job.part, on_wave=lambda i, n: conn.send(("wave", n)))
        result.kept = True
        _to_area(result, area, job.out)
        conn.send(("done", result))
    finally:
        # the arrays over the area go with this launch (the area itself is never unmapped
        # while the worker lives, so a view left anywhere stays valid)
        spec = launch = view = None     # noqa: F841


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------
def _layout(launch) -> list:
    """Where a launch's global buffers lie: the merge writes a worker's bytes by address."""
    return [(b.base, int(b.u8.size)) for b in launch.gmem.buffers]


def usable(spec) -> bool:
    """Whether a launch of `spec` can go to kept workers (else: workers forked for it)."""
    return (spec is not None and isinstance(spec.get("ptx"), str)
            and spec["options"].get("schedule") in (None, "default"))


def run_kept(ctx, launch, spec: dict, parts: list[Part], *, new_session: bool, threads: int,
             need_out: int, on_ctas=None, run_driver_part=None):
    """Parts 1.. on kept workers, part 0 by `run_driver_part()` in the driver; -> the results in
    part order, or None when this launch cannot go to kept workers (nothing has run then)."""
    from ptxsim.numerics import backend
    if not _POOL.lock.acquire(blocking=False):      # another thread's launch has them
        return None
    try:
        buffers: list = []
        try:
            payload = pickle.dumps(spec, protocol=5, buffer_callback=buffers.append)
        except Exception:               # noqa: BLE001 - an argument that does not pickle
            return None
        layout = _layout(launch)
        try:
            workers = _POOL.take(ctx, len(parts) - 1, new_session)
        except (OSError, ValueError):   # no room for an area (strict overcommit): forked
            return None
        jobs = {}
        for w, part in zip(workers, parts[1:]):
            got = w.put(buffers, need_out)
            if got is None:
                return None
            jobs[w] = Job(payload, got[0], got[1], layout, part, backend.active(), threads)
        busy: dict = {}                 # conn -> (worker, part)
        try:
            refused = False
            for w, job in jobs.items():
                try:
                    w.conn.send(("run", job))
                except OSError:         # it ended while idle: this launch forks its workers
                    _POOL.drop(w)
                    refused = True
                    continue
                busy[w.conn] = (w, job.part)
            # every worker rebuilt the launch the driver's way before anything runs; one that
            # could not (or ended meanwhile) sends this launch to forked workers instead
            waiting = dict(busy)
            while waiting:
                for c in wait(list(waiting)):
                    w, part = waiting.pop(c)
                    try:
                        kind, payload_ = c.recv()
                    except (EOFError, OSError):
                        kind = "ended"
                    if kind != "ready":
                        busy.pop(c)
                        refused = True
                        if kind != "mismatch":
                            _POOL.drop(w)
            if refused:
                for c, (w, part) in busy.items():       # the others: taken back
                    _POOL.drop(w)
                return None
            results: dict[int, PartResult] = {0: run_driver_part()}
            while busy:
                for c in wait(list(busy)):
                    w, part = busy[c]
                    kind, payload_ = _recv(w, part)
                    if kind == "wave":
                        if on_ctas is not None:
                            on_ctas(payload_)
                    elif kind == "done":
                        _from_area(payload_, w.area)
                        results[part.index] = payload_
                        del busy[c]
                    else:
                        raise WorkerError(f"{part.describe()}: the kept worker failed outside "
                                          f"the kernel: {payload_.module}.{payload_.qualname}: "
                                          f"{payload_.message}")
            return [results[p.index] for p in parts]
        except BaseException:
            for w, _ in busy.values():  # mid-launch: their state is this launch's, not reusable
                _POOL.drop(w)
            raise
    finally:
        _POOL.lock.release()


def _recv(w: _Worker, part: Part):
    try:
        return w.conn.recv()
    except (EOFError, OSError):
        w.proc.join(timeout=5)
        code = w.proc.exitcode
        _POOL.drop(w)
        raise WorkerError(f"{part.describe()} ended without a result (a kept worker, exit code "
                          f"{code}; a negative code is the signal that ended it)") from None
