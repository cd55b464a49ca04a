"""Worker processes on this machine (`workers=N`). A launch that ptxsim.distributed.launch built
goes to kept workers (pool.py: forked once, reused by later launches). Otherwise the workers are
forked from the driver after the launch is built, so each starts with the driver's parsed
program and every global buffer shared copy-on-write (nothing is copied or sent to start a
worker); each sends back only the bytes its part changed, through a shared memory area.

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

from ptxsim.distributed import pool
from ptxsim.distributed.parts import (Part, PartResult, _from_area, _to_area, run_part,
                                      start_session)
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


def _out_bytes(launch) -> int:
    """Room for one worker's changed bytes: the size of every global buffer plus its packed
    mask (0: the launch has no global memory)."""
    bufs = list(getattr(getattr(launch, "gmem", None), "buffers", ()))
    total = sum(int(b.u8.size) for b in bufs)
    return total + total // 8 + 16 * len(bufs) + 4096 if total else 0


def _area_for(launch):
    """A shared memory area (anonymous, MAP_SHARED: the driver sees what a forked worker
    writes) for one worker's changed bytes. Only the pages written take memory. None when the
    launch has no global memory."""
    n = _out_bytes(launch)
    return mmap.mmap(-1, n) if n else None


def _child(launch, part: Part, conn, new_session: bool, threads: int | None = None,
           area=None) -> None:
    start_session(new_session)
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
              on_ctas=None, in_driver: bool = True, spec: dict | None = None,
              keep_workers: bool = True) -> list[PartResult]:
    """Run the parts on this machine; `on_ctas(n)` as waves of n CTAs finish.

    The first part runs in the driver itself (`in_driver`), in place in the caller's buffers,
    after the processes of the others are forked (so they start from the bytes before the
    launch, copy-on-write): N parts cost N - 1 forks, and the first part's changed bytes need
    no trip through a pipe (on 2 cores, a 2-wave Triton GEMM: ~0.05-0.1 s of ~1.3 s).
    in_driver=False forks every part.

    With `spec` (what the launch is rebuilt from: ptxsim.distributed.launch records it) and
    `keep_workers`, the other parts go to kept workers (distributed/pool.py), forked once and
    reused by later launches; a launch they cannot take forks its workers as above."""
    ctx = fork_context()
    from ptxsim.numerics import backend
    threads = max(1, backend.threads() // max(1, len(parts)))

    def driver_part():
        old = backend.set_threads(threads)
        try:
            return run_part(launch, parts[0], in_place=True,
                            on_wave=None if on_ctas is None else (lambda i, n: on_ctas(n)))
        finally:
            backend.set_threads(old)
    if keep_workers and in_driver and len(parts) > 1 and pool.usable(spec):
        got = pool.run_kept(ctx, launch, spec, parts, new_session=new_session, threads=threads,
                            need_out=_out_bytes(launch), on_ctas=on_ctas,
                            run_driver_part=driver_part)
        if got is not None:
            return got
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
            results[parts[0].index] = driver_part()
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
