"""Warp-collective instructions (PTX ISA 9.7.9.6 shfl.sync, 9.7.13.x vote.sync, match.sync,
redux.sync, elect.sync, activemask) over a (warps, 32) view of per-thread registers.

Every function takes `active`: a (warps, 32) bool array of the threads that execute this
instruction now (default: all). The membermask rules of the ISA become errors:
- an executing thread whose own lane is not in its membermask: "behaviour is undefined";
- a lane named in an executing thread's membermask that does not execute the instruction with it
  (the .sync would wait for a thread that never arrives): undefined / a hang on hardware;
- shfl.sync sourcing a register from a thread that does not execute it: "results are undefined".
All three raise UndefinedBehavior naming the warp and lane.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError, UndefinedBehavior
from ptxsim.isa import regs
from ptxsim.isa.floating import F32, decode, is_nan
from ptxsim.isa.regs import check_choice, out

SHFL_MODES = ("up", "down", "bfly", "idx")
VOTE_MODES = ("all", "any", "uni", "ballot")
MATCH_MODES = ("any", "all")
MATCH_TYPES = ("b32", "b64")
REDUX_INT = {"add": ("u32", "s32"), "min": ("u32", "s32"), "max": ("u32", "s32"),
             "and": ("b32",), "or": ("b32",), "xor": ("b32",)}
LANES = np.arange(32, dtype=np.uint64)


def _warp(x, width: int, name: str, shape=None) -> np.ndarray:
    """Register bits as a (warps, 32) uint64 array (scalars and (32,) broadcast)."""
    u = regs.bits(x, width, name)
    if u.ndim == 1 and u.shape[0] == 32:
        u = u[None, :]
    if u.shape[-1] not in (1, 32) or u.ndim > 2:
        raise OperandError(f"{name}: expected shape (warps, 32) or (32,), got {u.shape}")
    if shape is not None:
        u = np.broadcast_to(u.reshape((-1, u.shape[-1])) if u.ndim == 2 else u, shape)
    return u


def _active(active, shape) -> np.ndarray:
    if active is None:
        return np.ones(shape, bool)
    a = regs.pred(active, "active")
    if a.ndim == 1:
        a = a[None, :]
    return np.broadcast_to(a, shape)


def _shape(*xs) -> tuple[int, int]:
    w = 1
    for x in xs:
        a = np.asarray(x)
        if a.ndim == 2:
            w = a.shape[0]
    return (w, 32)


def _check_membership(instr: str, mask: np.ndarray, active: np.ndarray) -> np.ndarray:
    """mask: (W, 32) uint64 membermask per thread. Returns the (W, 32, 32) member matrix."""
    member = ((mask[..., None] >> LANES) & np.uint64(1)) != 0          # [w, thread, lane]
    own = member[:, np.arange(32), np.arange(32)]
    bad = active & ~own
    if bad.any():
        w, t = map(int, np.argwhere(bad)[0])
        raise UndefinedBehavior(f"{instr}: thread {t} of warp {w} is not in its membermask "
                                f"{int(mask[w, t]):#010x} (undefined behaviour)")
    absent = active[..., None] & member & ~active[:, None, :]
    if absent.any():
        w, t, lane = map(int, np.argwhere(absent)[0])
        raise UndefinedBehavior(f"{instr}: lane {lane} of warp {w} is in the membermask of thread "
                                f"{t} but does not execute the instruction (undefined: it would "
                                "wait forever)")
    return member


def shfl_sync(a, b, c, membermask, *, mode: str, active=None):
    """`shfl.sync.mode.b32 d[|p], a, b, c, membermask` -> (d, p), both (warps, 32).

    c packs the clamp value c[4:0] and the segment mask c[12:8] (9.7.9.6 pseudocode)."""
    check_choice("shfl.sync", "mode", mode, SHFL_MODES)
    shape = _shape(a, b, c, membermask, active)
    src = _warp(a, 32, "a", shape)
    bval = _warp(b, 32, "b", shape).astype(np.int64) & 31
    cc = _warp(c, 32, "c", shape).astype(np.int64)
    mask = _warp(membermask, 32, "membermask", shape)
    act = _active(active, shape)
    _check_membership("shfl.sync", mask, act)
    lane = np.broadcast_to(np.arange(32, dtype=np.int64), shape)
    cval, seg = cc & 31, (cc >> 8) & 31
    max_lane = (lane & seg) | (cval & ~seg & 31)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval
        pval = j >= max_lane
    elif mode == "down":
        j = lane + bval
        pval = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        pval = j <= max_lane
    else:
        j = min_lane | (bval & ~seg & 31)
        pval = j <= max_lane
    j = np.where(pval, j, lane)
    bad = act & ~np.take_along_axis(act, j, 1)
    if bad.any():
        w, t = map(int, np.argwhere(bad)[0])
        raise UndefinedBehavior(f"shfl.sync: thread {t} of warp {w} reads lane {int(j[w, t])}, "
                                "which does not execute the shfl (undefined result)")
    d = np.take_along_axis(src, j, 1)
    return out(d, 32), pval & act


def vote_sync(a, membermask, *, mode: str, active=None):
    """`vote.sync.{all,any,uni}.pred d, {!}a, membermask` -> bool (warps, 32);
    `vote.sync.ballot.b32 d, {!}a, membermask` -> uint32 (warps, 32): bit i = a of lane i for the
    lanes in membermask. (Pass `~a` for `!a`.)"""
    check_choice("vote.sync", "mode", mode, VOTE_MODES)
    shape = _shape(a, membermask, active)
    p = regs.pred(a, "a")
    p = np.broadcast_to(p[None, :] if p.ndim == 1 else p, shape)
    mask = _warp(membermask, 32, "membermask", shape)
    act = _active(active, shape)
    member = _check_membership("vote.sync", mask, act)            # [w, t, lane]
    votes = member & p[:, None, :]
    if mode == "ballot":
        d = (votes.astype(np.uint64) << LANES).sum(-1, dtype=np.uint64)
        return np.where(act, d, 0).astype(np.uint32)
    n_true = votes.sum(-1)
    n = member.sum(-1)
    r = {"all": n_true == n, "any": n_true > 0, "uni": (n_true == 0) | (n_true == n)}[mode]
    return r & act


def match_sync(a, membermask, *, mode: str, type: str, active=None):
    """`match.any.sync.type d, a, membermask` -> d; `match.all.sync.type d[|p], a, membermask` ->
    (d, p). d: mask of the member lanes whose a equals this thread's a (.any), or the membermask
    when all members agree and 0 otherwise (.all)."""
    check_choice("match.sync", "mode", mode, MATCH_MODES)
    check_choice("match.sync", "type", type, MATCH_TYPES)
    shape = _shape(a, membermask, active)
    v = _warp(a, 64 if type == "b64" else 32, "a", shape)
    mask = _warp(membermask, 32, "membermask", shape)
    act = _active(active, shape)
    member = _check_membership("match.sync", mask, act)
    same = member & (v[:, :, None] == v[:, None, :])
    eq_mask = (same.astype(np.uint64) << LANES).sum(-1, dtype=np.uint64)
    if mode == "any":
        return np.where(act, eq_mask, 0).astype(np.uint32)
    allsame = eq_mask == mask
    d = np.where(act & allsame, mask, np.uint64(0)).astype(np.uint32)
    return d, allsame & act


def redux_sync(src, membermask, *, op: str, type: str, abs: bool = False,  # noqa: A002
               nan: bool = False, active=None):
    """`redux.sync.op.type dst, src, membermask` over the member lanes.

    .add wraps to 32 bits; .min/.max compare as .u32/.s32; .and/.or/.xor on .b32.
    `redux.sync.{min,max}{.abs}{.NaN}.f32`: +0 > -0; NaN inputs are ignored unless .NaN (any NaN ->
    canonical NaN); all-NaN -> canonical NaN."""
    if type == "f32":
        check_choice("redux.sync", "op", op, ("min", "max"))
    else:
        check_choice("redux.sync", "op", op, REDUX_INT)
        check_choice("redux.sync", "type", type, REDUX_INT[op])
        if abs or nan:
            raise regs.illegal("redux.sync", ".abs and .NaN apply only to .f32")
    shape = _shape(src, membermask, active)
    v = _warp(src, 32, "src", shape)
    mask = _warp(membermask, 32, "membermask", shape)
    act = _active(active, shape)
    member = _check_membership("redux.sync", mask, act)
    if type == "f32":
        return _redux_f32(v, member, act, op, abs, nan)
    if op in ("and", "or", "xor"):
        ident = {"and": np.uint64(0xFFFFFFFF), "or": np.uint64(0), "xor": np.uint64(0)}[op]
        x = np.where(member, v[:, None, :], ident)
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        r = f.reduce(x, axis=-1)
    elif op == "add":
        r = np.where(member, v[:, None, :], 0).sum(-1, dtype=np.uint64)
    else:
        val = regs.signed(v, 32) if type == "s32" else v.astype(np.int64)
        big = np.iinfo(np.int64).max if op == "min" else np.iinfo(np.int64).min
        x = np.where(member, val[:, None, :], big)
        r = regs.from_value(x.min(-1) if op == "min" else x.max(-1), 32)
    return np.where(act, out(r, 32), 0).astype(np.uint32)


def _redux_f32(v, member, act, op, use_abs, nan):
    if use_abs:
        v = v & np.uint64(0x7FFFFFFF)
    x = decode(v, F32)
    # order key: -0 below +0
    key = x + 0.0
    key = np.where((x == 0) & np.signbit(x), -np.finfo(np.float64).tiny * 0.5, key)
    isn = is_nan(v, F32)
    valid = member & ~isn[:, None, :]
    fill = np.inf if op == "min" else -np.inf
    k = np.where(valid, key[:, None, :], fill)
    idx = k.argmin(-1) if op == "min" else k.argmax(-1)
    r = np.take_along_axis(np.broadcast_to(v[:, None, :], member.shape), idx[..., None],
                           -1)[..., 0]
    none_valid = ~valid.any(-1)
    any_nan = (member & isn[:, None, :]).any(-1)
    r = np.where(none_valid | (nan & any_nan), np.uint64(F32.qnan), r)
    return np.where(act, out(r, 32), 0).astype(np.uint32)


def elect_sync(membermask, *, active=None):
    """`elect.sync d|p, membermask` -> (d, p): d = laneid of the leader in every member thread,
    p true only in the leader. ptxsim elects the lowest-numbered member lane (the ISA says only
    that the choice is deterministic; needs hardware confirmation)."""
    shape = _shape(membermask, active)
    mask = _warp(membermask, 32, "membermask", shape)
    act = _active(active, shape)
    _check_membership("elect.sync", mask, act)
    low = regs.bits(mask, 32) & (np.uint64(0) - mask) & np.uint64(0xFFFFFFFF)   # lowest set bit
    leader = np.zeros(shape, np.int64)
    for s in (16, 8, 4, 2, 1):
        hi = (low >> np.uint64(s)) != 0
        leader += np.where(hi, s, 0)
        low = np.where(hi, low >> np.uint64(s), low)
    lane = np.arange(32)
    return np.where(act, leader, 0).astype(np.uint32), act & (leader == lane)


def activemask(*, active) -> np.ndarray:
    """`activemask.b32 d` -> uint32 (warps, 32): the mask of executing lanes, in every executing
    thread."""
    a = regs.pred(active, "active")
    a = a[None, :] if a.ndim == 1 else a
    m = (a.astype(np.uint64) << LANES).sum(-1, dtype=np.uint64)
    return np.where(a, m[:, None], 0).astype(np.uint32)


# --- executor fast paths ------------------------------------------------------------------------
# `base.semantics` runs these when every operand is a (warps, 32) array of the exact dtype, every
# thread is active and every membermask is 0xFFFFFFFF: the membership rules then hold trivially
# (no UndefinedBehavior is possible) and what is left is the lane arithmetic of the functions
# above on int32, without the (warps, 32, 32) member matrix. Bit-identity with the general
# functions: tests/isa/test_fast_paths_warp.py.
_LANE32 = np.arange(32, dtype=np.int32)


def _fast_shfl(mode):
    if mode not in SHFL_MODES:
        return None
    i31 = np.int32(31)

    def kernel(a, b, c, membermask):
        bval = b.view(np.int32) & i31
        cc = c.view(np.int32)
        cval, seg = cc & i31, (cc >> np.int32(8)) & i31
        lane = _LANE32
        min_lane = lane & seg
        max_lane = min_lane | (cval & ~seg & i31)
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg & i31)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        return np.take_along_axis(a, j, 1), pval
    return kernel, (np.uint32, np.uint32, np.uint32, np.uint32)


def _fast_vote(mode):
    if mode not in VOTE_MODES:
        return None

    def kernel(a, membermask):
        if mode == "ballot":
            d = np.packbits(a, axis=1, bitorder="little").view("<u4").astype(np.uint32)
            return np.repeat(d, 32, axis=1)
        n_true = np.count_nonzero(a, axis=1)[:, None]
        r = {"all": n_true == 32, "any": n_true > 0,
             "uni": (n_true == 0) | (n_true == 32)}[mode]
        return np.repeat(r, 32, axis=1)
    return kernel, (np.bool_, np.uint32)


def _fast_elect():
    """Full membermask, every lane executing: lane 0 leads every warp (the lowest member lane,
    as `elect_sync` chooses); d = 0 everywhere."""
    def kernel(membermask):
        return (np.zeros(membermask.shape, np.uint32),
                np.broadcast_to(_LANE32 == 0, membermask.shape).copy())
    return kernel, (np.uint32,)


FAST_PATHS = {shfl_sync: _fast_shfl, vote_sync: _fast_vote, elect_sync: _fast_elect}
