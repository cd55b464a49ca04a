"""Synchronisation: bar / barrier (.sync / .arrive, thread counts), bar.red, bar.warp.sync,
barrier.cluster (arrive / wait, phases per thread) and the mbarrier instructions through
`machine.mbarrier.Mbarriers`; a thread that would wait is suspended (`Wave.block_on_mbarrier`,
the wait kinds of `machine.watchdog`).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError, UndefinedBehavior, UnsupportedFeature
from ptxsim.machine.handlers.common import shared_target, type_of
from ptxsim.machine.mbarrier import decode as mbar_decode
from ptxsim.machine.mbarrier import pending_count
from ptxsim.machine.watchdog import BLOCKED, EXITED, NO_WAIT, RUN, WAIT_CLUSTER
from ptxsim.ptx.instruction import Address


def _bar(wave, inst):
    """bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b; bar.red
    (9.7.13.1)."""
    if inst.has(".red"):
        return _bar_red(wave, inst)
    wait = not inst.has(".arrive")
    ops = inst.operands
    line = inst.loc.line

    def run(idx):
        ids = wave.read(ops[0], idx, 32).astype(np.int64) if ops else np.zeros(idx.size, np.int64)
        if (ids < 0).any() or (ids > 15).any():
            raise UndefinedBehavior(f"line {line}: barrier id outside 0..15")
        counts = (wave.read(ops[1], idx, 32).astype(np.int64) if len(ops) > 1
                  else np.full(idx.size, -1, np.int64))
        wave.bar_arrive(idx, ids, counts, wait, line)
    return run


BAR_RED_OPS = {".popc": ".u32", ".and": ".pred", ".or": ".pred"}   # 9.7.13.1


def _bar_red(wave, inst):
    """bar{.cta}.red.popc.u32 d, a{, b}, {!}c / bar{.cta}.red.{and,or}.pred p, a{, b}, {!}c
    (and barrier{.cta}.red...{.aligned}): a bar.sync on barrier a whose participating threads
    also reduce predicate c — popc counts the threads with c true, .and / .or combine them —
    and every participant receives the result. The contributions of the barrier's current
    phase are kept per (CTA, barrier); each arrival writes the reduction so far to every
    waiting participant, so the value they read once released is over all of them (also when
    the barrier completes because other threads exited)."""
    op = next((q for q in inst.qualifiers if q in BAR_RED_OPS), None)
    if op is None:
        raise OperandError("bar.red needs .popc, .and or .or (9.7.13.1)")
    t = type_of(inst)
    if t != BAR_RED_OPS[op]:
        raise OperandError(f"bar.red{op} takes type {BAR_RED_OPS[op]}, not {t} (9.7.13.1)")
    ops = inst.operands
    if len(ops) not in (3, 4):
        raise OperandError("bar.red takes d, a{, b}, {!}c")
    dst, a, c = ops[0], ops[1], ops[-1]
    b = ops[2] if len(ops) == 4 else None
    line = inst.loc.line
    acc = wave.__dict__.setdefault("bar_red", {})        # (cta, id) -> [threads, values]

    def run(idx):
        ids = wave.read(a, idx, 32).astype(np.int64)
        if (ids < 0).any() or (ids > 15).any():
            raise UndefinedBehavior(f"line {line}: barrier id outside 0..15")
        counts = (wave.read(b, idx, 32).astype(np.int64) if b is not None
                  else np.full(idx.size, -1, np.int64))
        pred = wave.read(c, idx, 1)
        pred = pred.astype(bool) if pred.dtype != np.bool_ else pred
        keys = wave.cta_of[idx] * 64 + ids
        for k in np.unique(keys):
            sel = keys == k
            key = (int(k) // 64, int(k) % 64)
            if key not in wave.bars or key not in acc:   # a new phase of this barrier
                acc[key] = [np.zeros(0, np.int64), np.zeros(0, bool), op]
            entry = acc[key]
            if entry[2] != op:
                raise UndefinedBehavior(f"line {line}: barrier {key[1]} reduces with {op} and "
                                        f"{entry[2]} in one phase")
            threads = np.concatenate([entry[0], idx[sel]])
            vals = np.concatenate([entry[1], pred[sel]])
            acc[key] = [threads, vals, op]
            if op == ".popc":
                res = np.full(threads.size, int(vals.sum()), np.uint32)
            elif op == ".and":
                res = np.full(threads.size, bool(vals.all()))
            else:
                res = np.full(threads.size, bool(vals.any()))
            wave.write(dst, threads, res)
            wave.bar_arrive(idx[sel], ids[sel], counts[sel], True, line)
    return run


def _cluster_bar(wave, inst):
    """barrier.cluster.arrive{.relaxed} / barrier.cluster.wait (9.7.13.3): a phase of the
    cluster barrier completes when every non-exited thread of the cluster has arrived; the k-th
    wait of a thread returns once k phases completed."""
    is_wait = inst.has(".wait")
    cs = wave.launch.geometry.cluster_size
    san = wave.san
    release = not inst.has(".relaxed")

    def run(idx):
        wave.advance(idx)
        if not is_wait:
            if san is not None:
                for c in np.unique(wave.cta_of[idx] // cs).tolist():
                    san.cluster_arrive(idx[wave.cta_of[idx] // cs == c], c, release)
            wave.cl_arrive[idx] += 1
            cluster_update(wave, np.unique(wave.cta_of[idx] // cs))
            return
        wave.cl_wait[idx] += 1
        c = wave.cta_of[idx] // cs
        blocked = wave.cl_wait[idx] > wave.cl_done[c]
        if san is not None and (~blocked).any():
            for cc in np.unique(c[~blocked]).tolist():
                m = ~blocked & (c == cc)
                san.cluster_acquire(idx[m], cc, wave.cl_wait[idx[m]])
        sel = idx[blocked]
        wave.status[sel] = BLOCKED
        wave.wait_kind[sel] = WAIT_CLUSTER
        wave.wait_cta[sel] = c[blocked]
    return run


def cluster_update(wave, clusters) -> None:
    cs = wave.launch.geometry.cluster_size
    for c in clusters:
        c = int(c)
        lo, hi = c * cs * wave.P, (c + 1) * cs * wave.P
        st = wave.status[lo:hi]
        live = st != EXITED
        if not live.any():
            continue
        old = int(wave.cl_done[c])
        wave.cl_done[c] = max(wave.cl_done[c], int(wave.cl_arrive[lo:hi][live].min()))
        waiting = np.flatnonzero((st == BLOCKED) & (wave.cl_wait[lo:hi] <= wave.cl_done[c])) + lo
        waiting = waiting[wave.wait_kind[waiting] == WAIT_CLUSTER]
        if wave.san is not None:
            for k in range(old + 1, int(wave.cl_done[c]) + 1):
                wave.san.cluster_phase_done(c, k)
            if waiting.size:
                wave.san.cluster_acquire(waiting, c, wave.cl_wait[waiting])
        wave.wait_kind[waiting] = NO_WAIT
        wave.status[waiting] = RUN


MBARRIER_OPS = ("mbarrier.init", "mbarrier.inval", "mbarrier.arrive", "mbarrier.arrive_drop",
                "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.test_wait",
                "mbarrier.try_wait", "mbarrier.pending_count")      # 9.7.13.15


def _mbarrier(wave, inst):
    op = inst.opcode
    ops = inst.operands
    mb = wave.mbar
    san = wave.san
    relaxed = inst.has(".relaxed")
    if op == "mbarrier.init":
        def init(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            mb.init(cta, off, wave.read(ops[1], idx, 32).astype(np.int64))
            wave.mbar_live = True          # plain ld / st now check its bytes (memory.py)
            if san is not None:
                san.mb_init(cta, off)
            wave.advance(idx)
        return init
    if op == "mbarrier.inval":
        def inval(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            mb.inval(cta, off)
            wave.advance(idx)
        return inval
    if op in ("mbarrier.arrive", "mbarrier.arrive_drop"):
        drop = op == "mbarrier.arrive_drop"
        etx = inst.has(".expect_tx")
        nocomp = inst.has(".noComplete")
        # forms: state, [addr]{, count} / state, [addr], txCount{, ...} / [addr] (remote, no
        # state) — the address is the first Address operand
        ai = next(i for i, o in enumerate(ops) if isinstance(o, Address))
        dst = ops[0] if ai == 1 else None
        rest = ops[ai + 1:]

        def arrive(idx):
            cta, off = shared_target(wave, inst, ops[ai], idx)
            tx = 0
            count = 1
            if etx:
                tx = wave.read(rest[0], idx, 32).astype(np.int64)
                if len(rest) > 1:
                    count = wave.read(rest[1], idx, 32).astype(np.int64)
            elif rest:
                count = wave.read(rest[0], idx, 32).astype(np.int64)
            if san is not None:
                san.mb_arrive(cta, off, idx, release=not relaxed, count=count, inst=inst)
            tok = mb.arrive(cta, off, count, expect_tx=tx, drop=drop, no_complete=nocomp)
            if san is not None:
                san.mb_sync(cta, off)
            if dst is not None:
                wave.write(dst, idx, tok)
            wave.advance(idx)
        return arrive
    if op in ("mbarrier.expect_tx", "mbarrier.complete_tx"):
        def tx(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            n = wave.read(ops[1], idx, 32).astype(np.int64)
            if san is not None and op == "mbarrier.complete_tx":
                san.mb_arrive(cta, off, idx, release=not relaxed)
            (mb.expect_tx if op == "mbarrier.expect_tx" else mb.complete_tx)(cta, off, n)
            if san is not None:
                san.mb_sync(cta, off)
            wave.advance(idx)
        return tx
    if op in ("mbarrier.test_wait", "mbarrier.try_wait"):
        parity = inst.has(".parity")

        def wait(idx):
            cta, off = shared_target(wave, inst, ops[1], idx)
            v = wave.read(ops[2], idx, 64)
            if parity:
                ok = mb.test_wait_parity(cta, off, v.astype(np.int64))
            else:
                ok = mb.test_wait(cta, off, v.astype(np.uint64))
            done = idx[ok]
            if done.size:
                if san is not None:
                    par = v[ok].astype(np.int64) if parity else \
                        mbar_decode(v[ok].astype(np.uint64))[0]
                    san.mb_acquire(inst, cta[ok], off[ok], par, done)
                wave.write(ops[0], done, np.ones(done.size, bool))
                wave.advance(done)
            if (~ok).any():
                # suspend until the phase completes (a try_wait whose time limit never
                # expires; test_wait spins are folded into the same wait)
                nd = ~ok
                if san is not None:
                    # the sanitizer's adversarial schedule: a thread's first test of an
                    # incomplete phase returns false at once (the time limit expired), so a
                    # "peek" (a try_wait whose result skips the real wait) cannot hide a
                    # missing wait; a second test of the same phase waits as above
                    first = san.wait_first_fail(idx[nd], cta[nd], off[nd],
                                                v[nd].astype(np.int64), parity)
                    if first.any():
                        f = idx[nd][first]
                        wave.write(ops[0], f, np.zeros(f.size, bool))
                        wave.advance(f)
                        keep = np.flatnonzero(nd)[~first]
                        nd = np.zeros(idx.size, bool)
                        nd[keep] = True
                        if not nd.any():
                            return
                wave.block_on_mbarrier(idx[nd], cta[nd], off[nd], v[nd].astype(np.int64),
                                       v[nd].astype(np.uint64), parity)
        return wait
    if op == "mbarrier.pending_count":

        def pend(idx):
            wave.write(ops[0], idx, pending_count(wave.read(ops[1], idx, 64).astype(np.uint64)))
            wave.advance(idx)
        return pend
    raise UnsupportedFeature(f"'{inst.mnemonic}' is not modelled")
