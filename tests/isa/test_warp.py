"""Warp collectives against the ISA's per-lane pseudocode, written out here lane by lane."""
import numpy as np
import pytest

from ptxsim.errors import PtxValidationError, UndefinedBehavior
from ptxsim.isa import warp as W

RNG = np.random.default_rng(11)
FULL = 0xFFFFFFFF


def shfl_ref(vals, lane, b, c, mode):
    """9.7.9.6 pseudocode for one thread."""
    bval, cval, mask = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & mask) | (cval & ~mask & 31)
    min_lane = lane & mask
    if mode == "up":
        j = lane - bval
        p = j >= max_lane
    elif mode == "down":
        j = lane + bval
        p = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        p = j <= max_lane
    else:
        j = min_lane | (bval & ~mask & 31)
        p = j <= max_lane
    if not p:
        j = lane
    return vals[j], p


@pytest.mark.parametrize("mode", W.SHFL_MODES)
def test_shfl_matches_pseudocode(mode):
    vals = RNG.integers(0, 1 << 32, (3, 32), dtype=np.int64).astype(np.uint32)
    for b in (0, 1, 3, 16, 31, 37):
        # the common c encodings: full warp (0x1f / 0), 8-lane segments (CUDA width 8), random
        for c in (0x1F, 0x0, 0x181F & 0x1FFF, (32 - 8) << 8 | 0x1F, (32 - 8) << 8,
                  int(RNG.integers(0, 1 << 13))):
            d, p = W.shfl_sync(vals, b, c, FULL, mode=mode)
            for w in range(3):
                ref = [shfl_ref(list(vals[w]), lane, b, c, mode) for lane in range(32)]
                assert list(d[w]) == [r[0] for r in ref], (b, hex(c))
                assert list(p[w]) == [r[1] for r in ref]


def test_shfl_cuda_idioms():
    vals = np.arange(32, dtype=np.uint32) * 10
    # __shfl_down_sync(FULL, v, 1): lane i gets lane i+1, the last lane keeps its own value
    d, p = W.shfl_sync(vals, 1, 0x1F, FULL, mode="down")
    assert list(d[0]) == [10 * (i + 1) for i in range(31)] + [310] and not p[0, 31]
    # __shfl_xor_sync(FULL, v, 16)
    d, _ = W.shfl_sync(vals, 16, 0x1F, FULL, mode="bfly")
    assert list(d[0]) == [10 * (i ^ 16) for i in range(32)]
    # __shfl_sync(FULL, v, 0, width=8): c = ((32 - 8) << 8) | 0x1f; each 8-lane group reads
    # its first lane
    d, _ = W.shfl_sync(vals, 0, (24 << 8) | 0x1F, FULL, mode="idx")
    assert list(d[0]) == [10 * (i & ~7) for i in range(32)]


def test_shfl_undefined_cases():
    vals = np.arange(32, dtype=np.uint32)
    active = np.ones(32, bool)
    active[5] = False
    with pytest.raises(UndefinedBehavior, match="lane 5"):
        W.shfl_sync(vals, 1, 0x1F, FULL, mode="down", active=active)  # 5 is in membermask
    mask = FULL & ~(1 << 5)
    with pytest.raises(UndefinedBehavior, match="reads lane 5"):
        W.shfl_sync(vals, 1, 0x1F, mask, mode="down", active=active)  # lane 4 reads lane 5
    with pytest.raises(UndefinedBehavior, match="not in its membermask"):
        W.shfl_sync(vals, 0, 0x1F, 0x1, mode="idx")
    with pytest.raises(PtxValidationError):
        W.shfl_sync(vals, 0, 0x1F, FULL, mode="xor")


def test_vote():
    p = np.zeros((2, 32), bool)
    p[0, [1, 4, 31]] = True
    p[1, :] = True
    ballot = W.vote_sync(p, FULL, mode="ballot")
    assert ballot[0, 0] == (1 << 1) | (1 << 4) | (1 << 31) and ballot[1, 7] == FULL
    assert not W.vote_sync(p, FULL, mode="all")[0].any() and W.vote_sync(p, FULL, mode="all")[1].all()
    assert W.vote_sync(p, FULL, mode="any")[0].all()
    assert list(W.vote_sync(p, FULL, mode="uni")[:, 0]) == [False, True]
    # a half-warp membermask only sees its own half
    lo, hi = 0x0000FFFF, 0xFFFF0000
    mask = np.array([lo] * 16 + [hi] * 16, np.uint32)
    q = np.array([True] * 16 + [False] + [True] * 15)
    r = W.vote_sync(q, mask, mode="all")
    assert r[0, :16].all() and not r[0, 16:].any()
    b = W.vote_sync(q, mask, mode="ballot")
    assert b[0, 0] == 0xFFFF and b[0, 20] == 0xFFFE0000


def test_match():
    v = np.array([7, 7, 3, 7] + [3] * 28, np.uint32)
    d = W.match_sync(v, FULL, mode="any", type="b32")
    sevens = (1 << 0) | (1 << 1) | (1 << 3)
    assert d[0, 0] == sevens and d[0, 2] == FULL & ~sevens
    d, p = W.match_sync(v, FULL, mode="all", type="b32")
    assert not p.any() and not d.any()
    d, p = W.match_sync(np.full(32, 5, np.uint64) << np.uint64(40), 0xF0F0F0F0, mode="all",
                        type="b64", active=np.array([(i // 4) % 2 == 1 for i in range(32)]))
    assert d[0, 4] == 0xF0F0F0F0 and p[0, 4] and not p[0, 0]


def test_redux_integer():
    v = RNG.integers(0, 1 << 32, 32, dtype=np.int64)
    u = v.astype(np.uint32)
    s = [x - (1 << 32) if x >> 31 else x for x in map(int, u)]
    assert W.redux_sync(u, FULL, op="add", type="u32")[0, 0] == sum(map(int, u)) & FULL
    assert W.redux_sync(u, FULL, op="min", type="u32")[0, 3] == min(map(int, u))
    assert W.redux_sync(u, FULL, op="max", type="s32")[0, 3] == max(s) & FULL
    assert W.redux_sync(u, FULL, op="min", type="s32")[0, 3] == min(s) & FULL
    x = 0
    for e in map(int, u):
        x ^= e
    assert W.redux_sync(u, FULL, op="xor", type="b32")[0, 9] == x
    a = FULL
    for e in map(int, u[:16]):
        a &= e
    got = W.redux_sync(u, np.array([0xFFFF] * 16 + [0xFFFF0000] * 16, np.uint32), op="and",
                       type="b32")
    assert got[0, 0] == a
    with pytest.raises(PtxValidationError):
        W.redux_sync(u, FULL, op="add", type="b32")


def test_redux_f32():
    f = np.array([1.5, -2.0, np.nan, 0.0, -0.0] + [3.0] * 27, np.float32)
    u = f.view(np.uint32)
    assert W.redux_sync(u, FULL, op="min", type="f32")[0, 0] == np.float32(-2).view(np.uint32)
    assert W.redux_sync(u, FULL, op="max", type="f32")[0, 0] == np.float32(3).view(np.uint32)
    assert W.redux_sync(u, FULL, op="min", type="f32", nan=True)[0, 0] == 0x7FFFFFFF
    assert W.redux_sync(u, FULL, op="min", type="f32", abs=True)[0, 0] == 0   # |−0| = +0
    z = np.array([0.0, -0.0] * 16, np.float32).view(np.uint32)
    assert W.redux_sync(z, FULL, op="min", type="f32")[0, 0] == 0x80000000   # -0 < +0
    assert W.redux_sync(z, FULL, op="max", type="f32")[0, 0] == 0
    allnan = np.full(32, 0x7FC00000, np.uint32)
    assert W.redux_sync(allnan, FULL, op="max", type="f32")[0, 0] == 0x7FFFFFFF


def test_elect_and_activemask():
    with pytest.raises(UndefinedBehavior):
        W.elect_sync(0xFFFFFFF0)                 # lanes 0..3 execute but are not members
    # two groups: lanes 0..3 with mask 0xF, lanes 4..31 with mask 0xFFFFFFF0
    mask = np.array([0xF] * 4 + [0xFFFFFFF0] * 28, np.uint32)
    d, p = W.elect_sync(mask)
    assert d[0, 10] == 4 and d[0, 2] == 0
    assert p[0, 4] and p[0, 0] and p.sum() == 2
    act = np.zeros(32, bool)
    act[[3, 9]] = True
    m = W.activemask(active=act)
    assert m[0, 3] == (1 << 3) | (1 << 9) and m[0, 0] == 0
