"""Which implementation runs the fused dot-product loops of fdpa.py.

* ``"c"``     -- the compiled inner loop ``_fdpa_c`` (src/ptxsim/numerics/_fdpa.c), built at
  install time when a C compiler is present;
* ``"numpy"`` -- fdpa.py itself: the readable specification, and the fallback.

Both compute the same arithmetic and give identical bits (tests/numerics/test_backend.py runs
every model through both).  The compiled one is what makes the engine fast enough for whole
kernels (benchmarks/mma_vs_mmasim.py).  ``PTXSIM_NUMERICS=numpy`` in the environment,
``select("numpy")`` or ``with use("numpy"):`` select numpy even where the extension exists.
"""
from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from ptxsim.errors import FloatEnvironmentError, PtxsimError

try:
    from ptxsim.numerics import _fdpa_c as compiled
except ImportError:          # built without a C compiler: numpy only
    compiled = None

BACKENDS = ("c", "numpy")
_active = "c" if compiled is not None and os.environ.get("PTXSIM_NUMERICS") != "numpy" \
    else "numpy"


def active() -> str:
    """The backend in use: "c" or "numpy"."""
    return _active


def available() -> tuple[str, ...]:
    """The backends this installation has."""
    return BACKENDS if compiled is not None else ("numpy",)


def c_module():
    """The compiled module when it is the active backend, else None."""
    return compiled if _active == "c" else None


def select(name: str) -> str:
    """Make `name` ("c" or "numpy") the active backend; returns the previous one."""
    global _active
    if name not in BACKENDS:
        raise PtxsimError(f"unknown numerics backend {name!r}; known: {', '.join(BACKENDS)}")
    if name not in available():
        raise PtxsimError(f"numerics backend {name!r} is not built in this installation (no C "
                          "compiler at install time?); available: " + ", ".join(available()))
    old, _active = _active, name
    return old


@contextlib.contextmanager
def use(name: str):
    """Run a block with the given backend (tests, benchmarks)."""
    old = select(name)
    try:
        yield
    finally:
        select(old)


_TINY = np.float32(2.0 ** -140)


def check_float_environment() -> None:
    """Raise FloatEnvironmentError if this thread flushes subnormals (x86 MXCSR FTZ / DAZ,
    typically set by a library built with -ffast-math when it is loaded): both backends would
    then lose subnormal results silently.  Cheap (a few float operations); run per MMA call."""
    if compiled is not None:
        ok = compiled.subnormals_ok()
    else:
        half = _TINY * np.float32(0.5)
        ok = half != 0 and half * np.float32(2.0) == _TINY
    if not ok:
        raise FloatEnvironmentError(
            "this thread's floating-point unit flushes subnormals to zero (x86 MXCSR FTZ/DAZ, "
            "typically set by a library built with -ffast-math); ptxsim's tensor-core arithmetic "
            "would silently lose subnormal results. Clear FTZ/DAZ, or find the library that sets "
            "them.")


# ---- a thread pool for the compiled arithmetic (it releases the GIL while it computes) --------
def _default_threads() -> int:
    env = os.environ.get("PTXSIM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise PtxsimError(f"PTXSIM_THREADS={env!r} is not a number of threads") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_threads = _default_threads()
_pool = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a fresh pool when needed."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def threads() -> int:
    """How many threads a large batch of compiled arithmetic is split over (default: the CPUs
    this process may run on; PTXSIM_THREADS or `set_threads` change it, 1 = no pool)."""
    return _threads


def set_threads(n: int) -> int:
    """Use `n` threads for the compiled arithmetic; returns the previous count."""
    global _threads, _pool
    if int(n) < 1:
        raise PtxsimError(f"threads must be at least 1, got {n}")
    old, _threads = _threads, int(n)
    with _pool_lock:
        if _pool is not None and _pool._max_workers != _threads:
            _pool.shutdown(wait=True)
            _pool = None
    return old


def run_parallel(fn, parts: list) -> list:
    """[fn(*p) for p in parts], the parts run on the pool's threads (the first in the caller's
    thread). Every worker checks its own float environment first (MXCSR is per thread)."""
    global _pool
    if len(parts) <= 1 or _threads <= 1:
        return [fn(*p) for p in parts]
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor
            _pool = ThreadPoolExecutor(max_workers=_threads, thread_name_prefix="ptxsim-mma")
        pool = _pool

    def task(p):
        check_float_environment()
        return fn(*p)
    futures = [pool.submit(task, p) for p in parts[1:]]
    first = fn(*parts[0])
    return [first] + [f.result() for f in futures]
