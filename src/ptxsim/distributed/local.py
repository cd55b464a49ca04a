"""Worker processes on this machine (`workers=N`): forked from the driver after the launch is
built, so each worker starts with the driver's parsed program and every global buffer shared
copy-on-write (nothing is copied or sent to start a worker); each sends back only the bytes its
part changed, over a pipe.

Each worker starts a new session (`os.setsid`) by default. On a Linux kernel with
`sched_autogroup_enabled=1` (the default of most desktop and many server distributions) the
scheduler gives each session one fair share of the CPUs when they are contended, so workers left
in the driver's session would split that one share between them instead of each getting its own
(benchmarks/workers.py measures both).
"""
from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import threading
from multiprocessing.connection import wait

import numpy as np

from ptxsim.distributed.parts import Part, PartResult, run_part
from ptxsim.errors import UnsupportedFeature, WorkerError


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:            # not Linux
        return os.cpu_count() or 1


def fork_context():
    if "fork" not in mp.get_all_start_methods():
        raise UnsupportedFeature("local worker processes need fork (Linux / macOS); run with "
                                 "workers=1 or workers='ray'")
    return mp.get_context("fork")


def _area_for(launch):
    """A shared memory area (anonymous, MAP_SHARED: the driver sees what a forked worker
    writes) for one worker's changed bytes: the size of every global buffer plus its packed
    mask. Only the pages written take memory. None when the launch has no global memory."""
    bufs = list(getattr(getattr(launch, "gmem", None), "buffers", ()))
    total = sum(int(b.u8.size) for b in bufs)
    if total == 0:
        return None
    return mmap.mmap(-1, total + total // 8 + 16 * len(bufs) + 4096)


def _to_area(result: PartResult, area) -> None:
    """Move the worker's diffs' bits and data into `area`, so the pipe carries only their
    places (a 10 MB output over a pipe: pickled, copied through the 64 KB pipe buffer and
    unpickled, ~0.03-0.05 s); what does not fit (a buffer mapped during the run) is pickled."""
    off = 0
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


def _child(launch, part: Part, conn, new_session: bool, threads: int | None = None,
           area=None) -> None:
    if new_session:
        try:
            os.setsid()
        except OSError:
            pass
    if threads is not None:
        # the driver's core count shared among the workers: N workers each splitting their
        # MMA batches over all cores would run N x cores arithmetic threads on the cores
        from ptxsim.numerics import backend
        backend.set_threads(threads)
    result = run_part(launch, part, on_wave=lambda i, n: conn.send(("wave", n)))
    if area is not None:
        _to_area(result, area)
    conn.send(("done", result))
    conn.close()


def run_local(launch, parts: list[Part], *, new_session: bool = True,
              on_ctas=None, in_driver: bool = True) -> list[PartResult]:
    """Run the parts on this machine; `on_ctas(n)` as waves of n CTAs finish.

    The first part runs in the driver itself (`in_driver`), in place in the caller's buffers,
    after the processes of the others are forked (so they start from the bytes before the
    launch, copy-on-write): N parts cost N - 1 forks, and the first part's changed bytes need
    no trip through a pipe (on 2 cores, a 2-wave Triton GEMM: ~0.05-0.1 s of ~1.3 s).
    in_driver=False forks every part."""
    ctx = fork_context()
    from ptxsim.numerics import backend
    threads = max(1, backend.threads() // max(1, len(parts)))
    procs, conns, areas = {}, {}, {}
    done: list = []                             # processes that sent their result
    forked = parts[1:] if in_driver else parts
    try:
        for part in forked:
            recv, send = ctx.Pipe(duplex=False)
            area = areas[part.index] = _area_for(launch)
            p = ctx.Process(target=_child, args=(launch, part, send, new_session, threads, area),
                            name=f"ptxsim-worker-{part.index}", daemon=True)
            p.start()
            send.close()
            procs[part.index], conns[recv] = p, part
        results: dict[int, PartResult] = {}
        if in_driver:
            old = backend.set_threads(threads)
            try:
                results[parts[0].index] = run_part(
                    launch, parts[0], in_place=True,
                    on_wave=None if on_ctas is None else (lambda i, n: on_ctas(n)))
            finally:
                backend.set_threads(old)
        while conns:
            for c in wait(list(conns)):
                part = conns[c]
                try:
                    kind, payload = c.recv()
                except EOFError:
                    del conns[c]
                    p = procs[part.index]
                    p.join()
                    if part.index not in results:
                        raise WorkerError(f"{part.describe()} ended without a result (exit code "
                                          f"{p.exitcode}; a negative code is the signal that "
                                          "ended it)") from None
                    continue
                if kind == "wave":
                    if on_ctas is not None:
                        on_ctas(payload)
                else:
                    if areas.get(part.index) is not None:
                        _from_area(payload, areas[part.index])
                    results[part.index] = payload
                    # its result is all the driver needs: no wait for the process to end (the
                    # exit of a forked copy of a large driver takes ~0.03-0.1 s)
                    del conns[c]
                    c.close()
                    done.append(procs.pop(part.index))
        return [results[p.index] for p in parts]
    finally:
        for p in procs.values():                # failed or interrupted: stopped now
            if p.is_alive():
                p.kill()
            p.join()
        for c in conns:
            c.close()
        if done:                                # reaped while the driver merges
            threading.Thread(target=_reap, args=(done,), daemon=True,
                             name="ptxsim-worker-reaper").start()


def _reap(procs) -> None:
    for p in procs:
        p.join()
