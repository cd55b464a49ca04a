"""`ptxsim.launch(..., workers=...)`: one launch split by waves across worker processes on this
machine or across a Ray cluster, merged into the bits one process gives (or a named error)."""
from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass, field

from ptxsim.distributed.local import available_cores, run_local
from ptxsim.distributed.parts import Part, merge, serial_reason, split
from ptxsim.errors import OneWorkerWarning, OperandError

WORKERS_HELP = ("workers: None or 1 (one process), N >= 2 (N processes on this machine), True or "
                "'auto' (one per available core), 'ray' or the ray module (a local Ray, or the "
                "one already initialised), 'ray:ADDRESS' (the Ray cluster at ADDRESS, e.g. "
                "'ray:auto' or 'ray:ray://head:10001')")


@dataclass
class Distribution:
    """How a launch was split (`Launch.distribution`) and what the split cost."""
    backend: str                    # "one process", "local" or "ray"
    workers: int                    # parts that ran
    reason: str | None = None       # why it ran in one process
    parts: list[Part] = field(default_factory=list)
    part_seconds: list[float] = field(default_factory=list)   # each part's run, in its worker
    part_cpu_seconds: list[float] = field(default_factory=list)   # CPU time of those runs
    worker_overhead_seconds: list[float] = field(default_factory=list)  # snapshot + diff (CPU)
    connect_seconds: float = 0.0    # Ray: start or connect (0 when already connected)
    wall_seconds: float = 0.0       # the driver, from building the parts to the merged result
    merge_seconds: float = 0.0      # the driver's merge (wall)
    merge_cpu_seconds: float = 0.0  # the driver's merge (CPU time)
    returned_bytes: int = 0         # changed bytes the workers sent back
    part_pids: list[int] = field(default_factory=list)   # the process of each part (local:
    #                                 the first is the driver's own, local.run_local)
    kept_workers: bool = False      # local: the other parts ran in kept workers (pool.py)


def resolve_workers(workers):
    """-> (backend, count or None, Ray address or None); OperandError for anything else."""
    if workers is None or workers is False or (isinstance(workers, int) and not
                                               isinstance(workers, bool) and workers == 1):
        return "one process", 1, None
    if workers is True or workers == "auto":
        return "local", available_cores(), None
    if isinstance(workers, int):
        if workers < 1:
            raise OperandError(f"workers={workers}: at least 1. {WORKERS_HELP}")
        return "local", workers, None
    if getattr(workers, "__name__", None) == "ray" and hasattr(workers, "remote"):
        return "ray", None, None
    if isinstance(workers, str):
        if workers == "ray":
            return "ray", None, None
        if workers.startswith("ray:"):
            return "ray", None, workers[4:] or None
        if workers.isdigit():
            return resolve_workers(int(workers))
    raise OperandError(f"workers={workers!r} is not understood. {WORKERS_HELP}")


def launch(ptx, kernel: str, grid, block, cluster=None, args=(), target: str | None = None,
           dynamic_shared: int = 0, *, workers=None, allow_order_dependent: bool = False,
           new_session: bool = True, keep_workers: bool = True, **options):
    """`ptxsim.launch` over `workers` (see WORKERS_HELP). The grid's waves are cut into one
    contiguous run per worker; each worker runs its waves on its own copy of global memory and
    returns the bytes they changed; the merge writes them into the caller's arrays. Raises
    MergeConflict where the parts' results are not one process's (two workers changed a byte
    to different values, or atomics on one address in two workers) unless
    `allow_order_dependent` (then the later wave's bytes win). Kernels that use
    clusterlaunchcontrol or read %clock / %globaltimer run in one worker (OneWorkerWarning).
    `new_session`: local workers start their own session (see ptxsim.distributed.local).
    `keep_workers`: local workers are kept for later launches (ptxsim.distributed.pool;
    `ptxsim.distributed.close_pool()` ends them); False forks them for this launch only."""
    from ptxsim.machine.executor import Launch
    backend, n, address = resolve_workers(workers)
    known = set(inspect.signature(Launch.__init__).parameters) - {"self", "ptx", "kernel", "grid",
                                                                   "block", "cluster", "args"}
    known |= {"workers", "allow_order_dependent", "new_session", "keep_workers"}
    for k in options:
        if k not in known:
            raise OperandError(f"launch option '{k}' is not known to this ptxsim (known: "
                               f"{', '.join(sorted(known))})")
    run = Launch(ptx, kernel, grid, block, cluster, args, target=target,
                 dynamic_shared=dynamic_shared, **options)
    spec = None
    if backend in ("ray", "local"):
        spec = {"ptx": ptx, "kernel": kernel, "grid": grid, "block": block, "cluster": cluster,
                "args": list(args), "options": {"target": target, "dynamic_shared": dynamic_shared,
                                                **{k: v for k, v in options.items()
                                                   if k != "progress"}}}
    return run_launch(run, backend, n, address=address, spec=spec,
                      allow_order_dependent=allow_order_dependent, new_session=new_session,
                      keep_workers=keep_workers)


def run_launch(run, backend: str = "local", n: int | None = None, *, address=None, spec=None,
               allow_order_dependent: bool = False, new_session: bool = True,
               keep_workers: bool = True):
    """Run a built, not yet run `machine.executor.Launch` over workers (a front door that builds
    its own Launch calls this). `spec`: what a Ray task or a kept local worker rebuilds the
    launch from (ptx, kernel, grid, block, cluster, args, options); without it local workers are
    forked for this launch."""
    waves = run.wave_plan()
    reason = serial_reason(run.program)
    if reason is None and getattr(getattr(run, "sanitizer", None), "tracer", None) is not None:
        reason = "the sanitizer's trace (trace=) is one process's timeline"
    ray = None
    connect_s = 0.0
    if backend == "ray":
        from ptxsim.distributed.ray_backend import cluster_cpus, connect
        ray, connect_s = connect(address)
        n = cluster_cpus(ray) if n is None else n
        if spec is None:
            raise OperandError("a Ray run of a built launch needs the spec to rebuild it from "
                               "(ptxsim.distributed.launch makes it)")
    if reason is not None and n > 1 and len(waves) > 1:
        warnings.warn(OneWorkerWarning(f"this launch runs in one worker: {reason}"),
                      stacklevel=3)
    if backend == "one process" or n <= 1 or len(waves) < 2 or reason is not None:
        run.run()
        why = reason or ("the grid has one wave" if len(waves) < 2 else None)
        run.distribution = Distribution("one process", 1, why)
        return run
    parts = split(waves, n)
    bar = _bar(run.geometry.n_ctas) if run.progress else None
    t0 = time.perf_counter()
    try:
        tick = None
        if bar:
            done = [0]

            def tick(k):
                done[0] += k
                bar[1](done[0])
        if backend == "local":
            results = run_local(run, parts, new_session=new_session, on_ctas=tick, spec=spec,
                                keep_workers=keep_workers)
        else:
            from ptxsim.distributed.ray_backend import run_ray
            results = run_ray(ray, spec, parts, on_ctas=tick)
    finally:
        if bar:
            bar[0].stop()
    t1, c1 = time.perf_counter(), time.process_time()
    dist = Distribution(backend, len(parts), None, parts, [r.seconds for r in results],
                        [r.cpu_seconds for r in results], [r.diff_seconds for r in results],
                        connect_s,
                        returned_bytes=sum(int(d.data.size + d.bits.size) for r in results
                                           if not r.in_place for d in r.diffs),
                        part_pids=[r.pid for r in results],
                        kept_workers=any(r.kept for r in results))
    run.distribution = dist
    try:
        merge(run, results, allow_order_dependent=allow_order_dependent)
    finally:
        dist.merge_seconds = time.perf_counter() - t1
        dist.merge_cpu_seconds = time.process_time() - c1
        dist.wall_seconds = time.perf_counter() - t0
    return run


def _bar(total: int):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    p = Progress(TextColumn("ptxsim launch"), BarColumn(),
                 TextColumn("{task.completed:.0f}/{task.total} CTAs"), TimeElapsedColumn())
    task = p.add_task("launch", total=total)
    p.start()
    return p, lambda n: p.update(task, completed=n)
