"""The executor fast paths of shfl.sync, vote.sync and elect.sync (all threads active, full membermask) give
the general functions' results, and every other case (a partial mask, inactive threads -- with
their UndefinedBehavior -- or other dtypes) goes to the general functions."""
import numpy as np
import pytest
from fast_path_kit import check_same

from ptxsim.errors import UndefinedBehavior
from ptxsim.isa.base import semantics

RNG = np.random.default_rng(321)
W = 64
FULL = np.full((W, 32), 0xFFFFFFFF, np.uint32)
ACTIVE = np.ones((W, 32), bool)


def _check(opcode, *args):
    f = semantics(opcode)
    fast = f(*args, active=ACTIVE)
    direct = f.kernel(*args)                   # the kernel itself, not only the guard
    ref = f.general(*args, active=ACTIVE)
    fast = fast if isinstance(fast, tuple) else (fast,)
    direct = direct if isinstance(direct, tuple) else (direct,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for x, z, y in zip(fast, direct, ref):
        np.testing.assert_array_equal(z, y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_fast_path_every_b_and_c(mode):
    a = RNG.integers(0, 2**32, (W, 32), np.uint64).astype(np.uint32)
    for bv in list(range(0, 34)) + [0xFFFFFFFF]:
        b = np.full((W, 32), bv, np.uint32)
        # clamp values and segment masks of the common shapes, plus random c words
        cs = [0x1F, 0x0, 0x101F, 0x181F, 0x1C1F, 0x1E1F, 0x1F1F, 0x7, 0x1807]
        c = np.array(cs * (W * 32 // len(cs) + 1), np.uint32)[:W * 32].reshape(W, 32)
        c[::3] = RNG.integers(0, 2**32, (c[::3].shape), np.uint64).astype(np.uint32)
        # c is uniform per warp in real code, but the semantics are per thread: test both
        _check(f"shfl.sync.{mode}.b32", a, b, c, FULL)
        _check(f"shfl.sync.{mode}.b32", a, b, np.repeat(c[:, :1], 32, 1), FULL)
    b = RNG.integers(0, 2**32, (W, 32), np.uint64).astype(np.uint32)
    _check(f"shfl.sync.{mode}.b32", a, b, np.full((W, 32), 0x1F, np.uint32), FULL)


def test_shfl_down_by_hand():
    a = np.arange(32, dtype=np.uint32)[None, :] + np.uint32(100)
    d, p = semantics("shfl.sync.down.b32")(a, np.full((1, 32), 4, np.uint32),
                                           np.full((1, 32), 0x1F, np.uint32),
                                           np.full((1, 32), 0xFFFFFFFF, np.uint32),
                                           active=np.ones((1, 32), bool))
    assert d[0].tolist() == [104 + i for i in range(28)] + [128, 129, 130, 131]
    assert p[0].tolist() == [True] * 28 + [False] * 4


@pytest.mark.parametrize("mode", ["all", "any", "uni", "ballot"])
def test_vote_fast_path(mode):
    a = RNG.random((W, 32)) < np.linspace(0, 1, W)[:, None]
    a[0], a[1] = True, False
    _check(f"vote.sync.{mode}." + ("b32" if mode == "ballot" else "pred"), a, FULL)


def test_vote_ballot_by_hand():
    a = np.zeros((1, 32), bool)
    a[0, [0, 5, 31]] = True
    d = semantics("vote.sync.ballot.b32")(a, np.full((1, 32), 0xFFFFFFFF, np.uint32),
                                          active=np.ones((1, 32), bool))
    assert d.dtype == np.uint32 and d[0].tolist() == [(1 | 1 << 5 | 1 << 31)] * 32


def test_elect_fast_path():
    _check("elect.sync", FULL)
    d, p = semantics("elect.sync")(FULL, active=ACTIVE)
    assert d.dtype == np.uint32 and not d.any()                       # the leader's lane: 0
    assert p.sum() == W and p[:, 0].all()                             # lane 0 of every warp
    half = np.full((1, 32), 0xFFFF0000, np.uint32)                    # a partial mask: general
    act = np.zeros((1, 32), bool)
    act[0, 16:] = True
    d, p = semantics("elect.sync")(half, active=act)
    assert d[0, 16:].tolist() == [16] * 16 and np.flatnonzero(p[0]).tolist() == [16]


def test_partial_warps_keep_the_general_rules():
    f = semantics("shfl.sync.idx.b32")
    a = np.zeros((1, 32), np.uint32)
    act = np.ones((1, 32), bool)
    act[0, 3] = False
    with pytest.raises(UndefinedBehavior):          # lane 3 is in the mask but does not execute
        f(a, np.zeros((1, 32), np.uint32), np.full((1, 32), 0x1F, np.uint32),
          np.full((1, 32), 0xFFFFFFFF, np.uint32), active=act)
    mask = np.full((1, 32), 0x0000FFFF, np.uint32)
    act = np.zeros((1, 32), bool)
    act[0, :16] = True
    d, p = f(a + np.arange(32, dtype=np.uint32), np.full((1, 32), 2, np.uint32),
             np.full((1, 32), 0x1F, np.uint32), mask, active=act)
    assert d[0, :16].tolist() == [2] * 16
