"""A wave that ran to its end is freed by reference counting (Wave.dispose): its compiled
closures, sanitizer and proxy point back at it, and a wave of 128 Triton CTAs holds ~150 MB that
would otherwise wait for a full cyclic collection."""
import gc
import weakref
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine import executor

BASIC = Path(__file__).parent / "data" / "exec" / "basic.ptx"


@pytest.mark.parametrize("sanitize", ["none", "default"])
def test_finished_waves_are_freed_without_the_cyclic_collector(monkeypatch, sanitize):
    refs = []
    real = executor.Wave.run

    def run(self):
        refs.append(weakref.ref(self))
        return real(self)
    monkeypatch.setattr(executor.Wave, "run", run)
    x = np.arange(3000, dtype=np.int32)
    out = np.zeros(1, np.int32)
    was = gc.isenabled()
    gc.disable()
    try:
        executor.launch(BASIC.read_text(), "block_sum", 12, 256, args=[x, out, 3000],
                        max_resident_ctas=4, sanitize=sanitize)
        assert len(refs) == 3
        assert [r() is None for r in refs] == [True] * 3
    finally:
        if was:
            gc.enable()
    assert out[0] == x.sum()
