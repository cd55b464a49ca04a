"""A farm of 200 small kernels (issue #22): sequential in one process vs a local Ray with the
machine's CPUs (and vs the local process pool), measured in the same run, with Ray's overheads
measured and the scaling per added node projected from them.

Tasks: 150 saxpy launches (tests/distributed/data/small.ptx, n = 1,000 .. 150,000 floats) and 50
Triton 3.9 bf16 matmuls (tests/data/ptx/triton/matmul_bf16.ptx, 128 x 128 x K, K = 64 .. 256):
each task's arguments are made in its worker from a seed, so a task crosses the network as a
few hundred bytes and its result as ~1 KB (digests of its outputs, no arrays).

Overheads measured:
- Ray start: `ray.init()` of a local Ray (once per session; joining a running cluster is less);
- per-task cost on the driver: 1,000 no-op Ray tasks submitted and collected, wall / 1,000
  (the serial part of a farm: it does not shrink with more nodes);
- first use of each Ray worker process: import ptxsim + parse the PTX (the farm run twice on
  the same Ray: cold, then warm).
Projection for k nodes of c cores each: T(k) = T_seq_cpu / (k c) + n d + start, with T_seq_cpu
the sequential run's CPU time, n tasks, d the per-task driver cost. It assumes the tasks spread
evenly and nodes as fast as this one; it is printed, not measured.

    python benchmarks/farm.py [--tasks 200] [--skip-pool]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from ptxsim.distributed.farm import Task, farm

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests/distributed/data/small.ptx"
TRITON = ROOT / "tests/data/ptx/triton/matmul_bf16.ptx"


def tasks(count: int) -> list[Task]:
    out = []
    for i in range(count):
        if i % 4 == 3:
            K = 64 * (1 + i % 3)
            out.append(Task(TRITON, "matmul_kernel", grid=(1, 1), block=128,
                            dynamic_shared=160 * 1024, name=f"matmul_k{K}", shape={"K": K},
                            args=[f"rand:bfloat16:128x{K}", f"rand:bfloat16:{K}x128",
                                  "zeros:float32:128x128", "i32:128", "i32:128", f"i32:{K}",
                                  f"i32:{K}", "i32:1", "i32:128", "i32:1", "i32:128", "i32:1",
                                  "zeros:uint8:64", "zeros:uint8:64"], seed=i))
        else:
            n = 1000 * (1 + (i * 37) % 150)
            out.append(Task(SMALL, "saxpy", grid=-(-n // 128), block=128, name=f"saxpy{n}",
                            shape={"n": n}, args=["f32:1.5", f"rand:float32:{n}",
                                                  f"rand:float32:{n}", f"i32:{n}"], seed=i))
    return out


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _noop(i):
    return i


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--skip-pool", action="store_true")
    args = ap.parse_args()
    ts = tasks(args.tasks)
    cores = len(os.sched_getaffinity(0))
    print(f"{len(ts)} tasks, {cores} cores")

    c0 = time.process_time()
    seq = farm(ts, workers=1, progress=False)
    seq_cpu = time.process_time() - c0
    assert not seq.failures, seq.failures[:2]
    print(f"sequential (one process): {seq.seconds:.1f} s wall, {seq_cpu:.1f} s CPU "
          f"(load {load()})")
    digests = [r.outputs for r in seq.results]

    if not args.skip_pool:
        pool = farm(ts, workers=cores, progress=False)
        assert [r.outputs for r in pool.results] == digests
        print(f"local pool, {cores} processes: {pool.seconds:.1f} s -> "
              f"x{seq.seconds / pool.seconds:.2f} (load {load()})")

    import ray
    t = time.perf_counter()
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    start = time.perf_counter() - t
    print(f"Ray start (ray.init, local, {cores} CPUs): {start:.1f} s")
    noop = ray.remote(num_cpus=1)(_noop)
    ray.get([noop.remote(i) for i in range(100)])          # workers up
    t = time.perf_counter()
    ray.get([noop.remote(i) for i in range(1000)])
    per_task = (time.perf_counter() - t) / 1000
    print(f"per-task driver cost (1,000 no-op tasks): {per_task * 1e3:.2f} ms")

    cold = farm(ts, workers=ray, progress=False)
    c0 = time.process_time()
    warm = farm(ts, workers=ray, progress=False)
    driver_cpu = (time.process_time() - c0) / len(ts)
    for what, r in (("cold", cold), ("warm", warm)):
        bad = [(x.index, x.name, x.status, x.error_type, x.error[:120])
               for x, want in zip(r.results, digests) if x.outputs != want]
        assert not bad, (what, bad[:5], len(bad))
    print(f"Ray farm, cold workers: {cold.seconds:.1f} s -> x{seq.seconds / cold.seconds:.2f}; "
          f"warm: {warm.seconds:.1f} s -> x{seq.seconds / warm.seconds:.2f}; with the Ray "
          f"start: x{seq.seconds / (warm.seconds + start):.2f} (load {load()})")
    task_cpu_seq = sum(r.cpu_seconds for r in seq.results)
    task_cpu_ray = sum(r.cpu_seconds for r in warm.results)
    task_cpu_cold = sum(r.cpu_seconds for r in cold.results)
    print(f"CPU in the tasks: sequential {task_cpu_seq:.1f} s, Ray cold {task_cpu_cold:.1f} s "
          f"(first use of each worker: import + parse), Ray warm {task_cpu_ray:.1f} s; "
          f"driver CPU per task {driver_cpu * 1e3:.2f} ms")
    ray.shutdown()

    n = len(ts)
    d = max(per_task, driver_cpu)
    print(f"projected, nodes of {cores} cores like this one, idle: T(k) = {task_cpu_ray:.1f} s / "
          f"({cores} k) + {n} x {d * 1e3:.2f} ms, + {start:.0f} s Ray start once:")
    for k in (1, 2, 4, 8, 16):
        tk = task_cpu_ray / (cores * k) + n * d
        print(f"  {k:2d} nodes: {tk:6.1f} s, x{task_cpu_seq / tk:.1f} vs sequential on an idle "
              f"core ({task_cpu_seq:.1f} s); the per-task cost caps it at "
              f"x{task_cpu_seq / (n * d):.0f}")

if __name__ == "__main__":
    main()
