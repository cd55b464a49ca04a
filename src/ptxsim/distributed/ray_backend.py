"""Workers on Ray (`workers="ray"`, `workers="ray:ADDRESS"`, or the `ray` module itself): one Ray
task per part. The launch's inputs (PTX, arguments: every array once) go to Ray's object store in
one `ray.put`, so each node fetches them once however many parts it runs; a task rebuilds the
launch from them, runs its part and returns only the bytes it changed.

What crosses the network in a multi-node run: the arguments (once per node), each part's changed
bytes (once), and small task descriptions. Ray is an optional dependency (`pip install
'ptxsim[ray]'`); nothing here imports it before a Ray run is asked for.
"""
from __future__ import annotations

import copy
import time

from ptxsim.distributed.parts import Part, PartResult, run_part
from ptxsim.errors import OperandError, UnsupportedFeature, WorkerError


def import_ray():
    try:
        import ray
    except ImportError:
        raise UnsupportedFeature("a Ray run needs the ray package: pip install 'ptxsim[ray]' "
                                 "(or use workers=N for processes on this machine)") from None
    return ray


def connect(address: str | None = None, **init_options):
    """The `ray` module, initialised: an existing connection is kept; else `ray.init(address)`
    (None: a local Ray on this machine; "auto": the cluster `ray start` made here; "HOST:PORT" or
    "ray://HOST:PORT": that cluster). Returns (ray, seconds spent starting/connecting)."""
    ray = import_ray()
    t = time.perf_counter()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, **init_options)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise OperandError(f"workers='ray:{address}': cannot connect to a Ray cluster "
                               f"there ({exc})") from None
    return ray, time.perf_counter() - t


def cluster_cpus(ray) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _remote_part(spec: dict, part: Part) -> PartResult:
    """In a Ray worker: rebuild the launch from its inputs and run one part. The arguments come
    out of the object store read-only; one deep copy of the whole list makes them writable and
    keeps arrays that appear twice (a tensor map's array and the array itself) one buffer."""
    from ptxsim.machine.executor import Launch
    args = copy.deepcopy(spec["args"])
    launch = Launch(spec["ptx"], spec["kernel"], spec["grid"], spec["block"], spec["cluster"],
                    args, **spec["options"])
    return run_part(launch, part)


_REMOTE = {}


def remote(ray, fn, **options):
    """`ray.remote` of a module-level function, made once per process."""
    key = (fn, tuple(sorted(options.items())))
    if key not in _REMOTE:
        _REMOTE[key] = ray.remote(**options)(fn)
    return _REMOTE[key]


def run_ray(ray, spec: dict, parts: list[Part], *, on_ctas=None) -> list[PartResult]:
    ref = ray.put(spec)
    # a part whose worker process died runs once more (its result is the same bits)
    task = remote(ray, _remote_part, num_cpus=1, max_retries=1)
    futures = {task.remote(ref, part): part for part in parts}
    results: dict[int, PartResult] = {}
    pending = list(futures)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for f in done:
            part = futures[f]
            try:
                results[part.index] = ray.get(f)
            except Exception as exc:   # noqa: BLE001 - a Ray system error: the task died
                for g in pending:
                    ray.cancel(g, force=True)
                raise WorkerError(f"{part.describe()} on Ray ended without a result: "
                                  f"{type(exc).__name__}: {exc}") from None
            if on_ctas is not None:
                on_ctas(part.n_ctas)
    return [results[p.index] for p in parts]
