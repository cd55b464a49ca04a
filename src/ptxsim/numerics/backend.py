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
