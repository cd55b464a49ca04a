"""`workers=N` (issue #21): one launch of >= 2 waves in 1 process vs 2 worker processes, measured
in the same run, interleaved, repeated; the load average is printed with every row because this
machine is shared.

Part 1 checks the scheduler claim the worker design rests on: with `sched_autogroup_enabled=1`,
processes of one session share one fair slot of the CPUs when the CPUs are contended, so 2
processes forked in the same session do no more work per second than 1; 2 processes that each
start a new session (`os.setsid`, what ptxsim's workers do by default) get a slot each. The
probe is a pure-Python loop (no ptxsim), run 1x, 2x in the session, 2x in new sessions.

Part 2: the Triton 3.9 bf16 matmul (tests/data/ptx/triton/matmul_bf16.ptx), 2048 x 2048 x K,
256 CTAs of 128 threads = 2 default waves of 128 CTAs: `workers=None` (one process) against
`workers=2` (kept workers, ptxsim.distributed.pool: forked for the first launch, reused after),
`workers=2, keep_workers=False` (forked for each launch) and that in the driver's session
(`new_session=False`). The first launch with workers, which forks the kept worker, is reported
on its own line. Bits are compared every time.
Reported: wall-clock ratio; and the CPU-time ratio one process's CPU seconds / the slower
worker's (its run + snapshot/diff + the driver's merge), which is the speed-up on 2 idle cores
(it leaves out the fork and the other helpers' load).

    python benchmarks/workers.py [--reps 5] [--k 128]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import ptxsim

ROOT = Path(__file__).resolve().parents[1]


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _spin(n: int, setsid: bool, q) -> None:
    if setsid:
        os.setsid()
    t = time.perf_counter()
    s = 0
    for i in range(n):
        s += i * i
    q.put(time.perf_counter() - t)


def spin(k: int, setsid: bool, n: int) -> float:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    t = time.perf_counter()
    ps = [ctx.Process(target=_spin, args=(n, setsid, q)) for _ in range(k)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    return time.perf_counter() - t


def part1(reps: int, n: int) -> None:
    print(f"sched_autogroup_enabled = "
          f"{Path('/proc/sys/kernel/sched_autogroup_enabled').read_text().strip()}, cores "
          f"{len(os.sched_getaffinity(0))}")
    print("pure-Python loop: work per second of 2 processes / of 1 process")
    same, own = [], []
    for r in range(reps):
        t1 = spin(1, False, n)
        t2 = spin(2, False, n)
        t2s = spin(2, True, n)
        same.append(2 * t1 / t2)
        own.append(2 * t1 / t2s)
        print(f"  rep {r}: 1 proc {t1:.2f} s | 2 in the session {t2:.2f} s -> x{same[-1]:.2f} | "
              f"2 in own sessions {t2s:.2f} s -> x{own[-1]:.2f}   (load {load():.1f})")
    print(f"  median: same session x{statistics.median(same):.2f}, own sessions "
          f"x{statistics.median(own):.2f}")


def gemm(K: int, sanitize: str = "none"):
    text = (ROOT / "tests/data/ptx/triton/matmul_bf16.ptx").read_text()
    M = N = 2048
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16).view(np.uint16)

    def go(**kw):
        c = np.zeros((M, N), np.float32)
        t, cpu = time.perf_counter(), time.process_time()
        run = ptxsim.launch(text, "matmul_kernel", (M // 128, N // 128), 128,
                            args=[a, b, c, M, N, K, K, 1, N, 1, N, 1, np.zeros(64, np.uint8),
                                  np.zeros(64, np.uint8)], dynamic_shared=160 * 1024, sanitize=sanitize, **kw)
        return time.perf_counter() - t, time.process_time() - cpu, run, c
    return go


def part2(reps: int, K: int, sanitize: str = "none", same_session: bool = True) -> None:
    from ptxsim.distributed import close_pool
    go = gemm(K, sanitize)
    go(max_resident_ctas=1)                  # parse + first compile, outside the timings
    from ptxsim.numerics import backend
    print(f"Triton bf16 matmul 2048x2048x{K}: 256 CTAs, 2 waves of 128; sanitize={sanitize!r}; "
          f"{backend.threads()} arithmetic threads in one process, "
          f"{max(1, backend.threads() // 2)} per worker")
    # the first launch with workers: the kept worker is forked for it (what a process's first
    # distributed launch pays), then serves the reps below
    close_pool()
    t1, c1, _, ref = go()
    t0, _, first, c = go(workers=2)
    assert np.array_equal(c.view(np.uint32), ref.view(np.uint32)) and \
        first.distribution.kept_workers
    print(f"  first launch with workers (the kept worker forked for it): 1 process {t1:.2f} s | "
          f"2 workers {t0:.2f} s -> x{t1 / t0:.2f}   (load {load():.1f})")
    wall_kept, wall_fork, wall_same, cpu_ratio = [], [], [], []
    for r in range(reps):
        t1, c1, one, ref = go()
        t2, _, two, c = go(workers=2)
        assert np.array_equal(c.view(np.uint32), ref.view(np.uint32))
        assert two.distribution.kept_workers
        t4, _, four, c4 = go(workers=2, keep_workers=False)
        assert np.array_equal(c4.view(np.uint32), ref.view(np.uint32))
        t3 = float("nan")
        if same_session:
            t3, _, three, c3 = go(workers=2, new_session=False, keep_workers=False)
            assert np.array_equal(c3.view(np.uint32), ref.view(np.uint32))
        d = two.distribution
        slow = max(s + o for s, o in zip(d.part_cpu_seconds, d.worker_overhead_seconds))
        wall_kept.append(t1 / t2)
        wall_fork.append(t1 / t4)
        wall_same.append(t1 / t3)
        cpu_ratio.append(c1 / (slow + d.merge_cpu_seconds))
        print(f"  rep {r}: 1 process {t1:.2f} s (CPU {c1:.2f} s) | 2 kept workers {t2:.2f} s "
              f"-> x{wall_kept[-1]:.2f} (part CPU "
              f"{', '.join(f'{x:.2f}' for x in d.part_cpu_seconds)} s, snapshot+diff CPU "
              f"{max(d.worker_overhead_seconds):.2f} s, merge CPU {d.merge_cpu_seconds:.2f} s, "
              f"{d.returned_bytes / 1e6:.1f} MB back; CPU ratio x{cpu_ratio[-1]:.2f}) | "
              f"2 workers forked for the launch {t4:.2f} s -> x{wall_fork[-1]:.2f} | "
              f"same session {t3:.2f} s -> x{wall_same[-1]:.2f}   (load {load():.1f})")
    print(f"  median wall ratio: kept workers x{statistics.median(wall_kept):.2f}, forked for "
          f"the launch x{statistics.median(wall_fork):.2f}, forked in the same session "
          f"x{statistics.median(wall_same):.2f}; median CPU-time ratio (kept) "
          f"x{statistics.median(cpu_ratio):.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--k", type=int, default=128)
    ap.add_argument("--spin", type=int, default=20_000_000)
    ap.add_argument("--skip-spin", action="store_true")
    ap.add_argument("--sanitize", default="none", choices=["none", "default", "full"],
                    help="the launches' sanitizer mode (default none: the executor alone)")
    ap.add_argument("--no-same-session", action="store_true",
                    help="leave out the workers=2, new_session=False runs")
    args = ap.parse_args()
    if not args.skip_spin:
        part1(args.reps, args.spin)
    part2(args.reps, args.k, args.sanitize, not args.no_same_session)
