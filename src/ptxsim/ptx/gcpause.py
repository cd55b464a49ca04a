"""`paused()`: the cyclic garbage collector off while a front-end pass builds or walks a module.

Parsing a large module allocates ~10^6 objects that all stay alive (instructions, operands,
locations); with the collector on, its generation-2 collections rescan that growing heap again
and again, which doubled `parse_module`'s time on CUTLASS's FMHA module (4.8 s -> 2.2 s CPU,
benchmarks/frontend.py). The passes make no reference cycles of their own worth collecting
early: anything cyclic is collected at the next collection after the pass. Nesting is fine; the
collector is re-enabled only if it was on before.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
