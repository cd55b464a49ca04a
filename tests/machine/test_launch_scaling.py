"""Launch bookkeeping is linear in the number of CTAs (issue #20): the per-CTA cost of a vector
add does not grow with the grid. The wave plan, the not-yet-started clusters that
clusterlaunchcontrol.try_cancel may cancel (a cursor, not a list rebuilt per wave) and the
canceled set are all O(CTAs). Expected sums are exact: 1 + 1 = 2 in every element."""
import time

import numpy as np
import pytest

import ptxsim
from tests.test_bad_inputs import VADD


def _vadd(n_ctas: int) -> float:
    n = n_ctas * 32
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    t = time.process_time()
    ptxsim.launch(VADD, "vadd", n_ctas, 32, args=[a, b, c, n])
    dt = time.process_time() - t
    assert c.min() == 2.0 and c.max() == 2.0
    return dt / n_ctas


def test_per_cta_cost_does_not_grow_with_the_grid():
    _vadd(1)                                   # parse and check once (the module is cached)
    small, large = _vadd(500), _vadd(5000)
    assert large < 2 * small, (small, large)


@pytest.mark.slow
def test_a_million_ctas_finish_at_the_per_cta_cost_of_ten_thousand():
    _vadd(1)
    small = _vadd(10_000)
    large = _vadd(1_000_000)
    print(f"per CTA: {small * 1e6:.1f} us at 10^4 CTAs, {large * 1e6:.1f} us at 10^6")
    assert large < 2 * small
