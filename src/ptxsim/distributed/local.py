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

import multiprocessing as mp
import os
from multiprocessing.connection import wait

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


def _child(launch, part: Part, conn, new_session: bool, threads: int | None = None) -> None:
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
    conn.send(("done", result))
    conn.close()


def run_local(launch, parts: list[Part], *, new_session: bool = True,
              on_ctas=None) -> list[PartResult]:
    """Run each part in its own forked process; `on_ctas(n)` as waves of n CTAs finish."""
    ctx = fork_context()
    from ptxsim.numerics import backend
    threads = max(1, backend.threads() // max(1, len(parts)))
    procs, conns = {}, {}
    try:
        for part in parts:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_child, args=(launch, part, send, new_session, threads),
                            name=f"ptxsim-worker-{part.index}", daemon=True)
            p.start()
            send.close()
            procs[part.index], conns[recv] = p, part
        results: dict[int, PartResult] = {}
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
                    results[part.index] = payload
        return [results[p.index] for p in parts]
    finally:
        for p in procs.values():
            if p.is_alive():
                p.kill()
            p.join()
        for c in conns:
            c.close()
