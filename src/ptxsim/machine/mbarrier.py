"""mbarrier objects in shared memory, named CTA barriers and the cluster barrier.

mbarrier (PTX ISA 9.7.13.15; the section is not in /work/shared/spec, see docs/machine.md):
an 8-byte, 8-byte-aligned opaque object in shared memory holding

| component               | valid range          |
|-------------------------|----------------------|
| current phase (parity)  | 0, 1                 |
| expected arrival count  | 1 .. 2^20 - 1        |
| pending arrival count   | 0 .. 2^20 - 1        |
| tx-count                | -(2^20 - 1) .. 2^20 - 1 |

A phase completes when the pending arrival count and the tx-count are both zero; then the phase
flips and the pending count is reloaded with the expected count. arrive-on decrements pending,
expect-tx adds to tx-count, complete-tx subtracts from it, arrive_drop also lowers the expected
count. Everything the ISA calls undefined raises `MbarrierError` (an `UndefinedBehavior`).

ptxsim's encoding of the 64 bits (the hardware's is opaque; any encoding is allowed):
pending [0, 20), expected [20, 40), tx-count [40, 61) two's complement, phase parity bit 63.
The object lives in the CTA's shared-memory bytes; a side table remembers which 8-byte slots hold
a valid (initialised, not invalidated) object so misuse is caught.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import BarrierError, MbarrierError, OperandError
from ptxsim.machine.memory import SharedMemory

COUNT_MAX = (1 << 20) - 1          # expected / pending arrival count, arrive count operand
TX_MAX = (1 << 20) - 1             # |tx-count|
_PEND, _EXP, _TX, _PHASE = 0, 20, 40, 63
_M20 = np.uint64((1 << 20) - 1)
_M21 = np.uint64((1 << 21) - 1)


def encode(phase, pending, expected, tx) -> np.ndarray:
    """Fields -> 64-bit object words (uint64)."""
    u = lambda a: np.asarray(a, np.int64).astype(np.uint64)  # noqa: E731
    return ((u(pending) & _M20) | ((u(expected) & _M20) << np.uint64(_EXP))
            | ((u(tx) & _M21) << np.uint64(_TX)) | ((u(phase) & np.uint64(1)) << np.uint64(_PHASE)))


def decode(word) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """64-bit words -> (phase, pending, expected, tx) as int64 arrays."""
    w = np.asarray(word, np.uint64)
    tx = ((w >> np.uint64(_TX)) & _M21).astype(np.int64)
    tx = np.where(tx >= 1 << 20, tx - (1 << 21), tx)
    return ((w >> np.uint64(_PHASE)).astype(np.int64), (w & _M20).astype(np.int64),
            ((w >> np.uint64(_EXP)) & _M20).astype(np.int64), tx)


def _decode_int(w: int) -> tuple[int, int, int, int]:
    """Scalar `decode` on a Python int (the per-object hot path)."""
    tx = (w >> _TX) & ((1 << 21) - 1)
    tx = tx - (1 << 21) if tx >> 20 else tx
    return w >> _PHASE & 1, w & COUNT_MAX, (w >> _EXP) & COUNT_MAX, tx


def _encode_int(ph: int, pend: int, exp: int, tx: int) -> int:
    return (pend & COUNT_MAX) | (exp & COUNT_MAX) << _EXP | (tx & ((1 << 21) - 1)) << _TX \
        | (ph & 1) << _PHASE


def pending_count(state) -> np.ndarray:
    """mbarrier.pending_count.b64: the pending arrival count recorded in a state token."""
    return decode(state)[1].astype(np.uint32)


class Mbarriers:
    """All mbarrier objects of the resident CTAs, stored in `shared.data` (see module doc).
    Every method is vectorised over threads: `cta` and `offset` name each thread's object
    (resolve shared::cluster addresses with `SharedMemory.resolve_cluster` first)."""

    def __init__(self, shared: SharedMemory):
        self.shared = shared
        self.valid = np.zeros((shared.n_ctas, shared.size // 8 + 1), bool)
        # per 8-byte slot: valid in some CTA (kept with `valid` by init / inval): a plain access
        # that meets none of them needs no per-CTA look-up
        self._any_valid = np.zeros(shared.size // 8 + 1, bool)

    # -- storage ---------------------------------------------------------------------------------
    def _slots(self, cta, offset, what: str):
        cta = np.atleast_1d(np.asarray(cta, np.int64))
        off = np.atleast_1d(np.asarray(offset, np.int64))
        cta, off = np.broadcast_arrays(cta, off)
        bad = (off % 8 != 0) | (off < 0) | (off + 8 > self.shared.size)
        if bad.any():
            i = int(np.argmax(bad))
            raise MbarrierError(f"{what}: an mbarrier object must be 8-byte aligned inside the "
                                f"CTA's {self.shared.size} bytes of shared memory",
                                int(off[i]), int(cta[i]))
        return cta, off

    def _words(self, cta, off) -> np.ndarray:
        flat = self.shared.data.reshape(-1)
        idx = (cta * self.shared.size + off)[:, None] + np.arange(8)
        return flat[idx].copy().view("<u8").reshape(-1)

    def _store(self, cta, off, words) -> None:
        flat = self.shared.data.reshape(-1)
        idx = (cta * self.shared.size + off)[:, None] + np.arange(8)
        flat[idx] = np.asarray(words, "<u8").reshape(-1, 1).view(np.uint8)

    def _require_valid(self, cta, off, what: str) -> None:
        ok = self.valid[cta, off // 8]
        if not ok.all():
            i = int(np.argmax(~ok))
            raise MbarrierError(f"{what} on an mbarrier object that is not initialised (or was "
                                "invalidated); the PTX ISA leaves this undefined",
                                int(off[i]), int(cta[i]))

    def is_valid(self, cta, offset) -> np.ndarray:
        cta, off = self._slots(cta, offset, "query")
        return self.valid[cta, off // 8]

    def state(self, cta: int, offset: int) -> dict:
        """Decoded fields of one object (for deadlock reports and tests)."""
        cta_a, off = self._slots(cta, offset, "query")
        ph, pend, exp, tx = (int(x[0]) for x in decode(self._words(cta_a, off)))
        return {"valid": bool(self.valid[cta, offset // 8]), "phase": ph, "pending": pend,
                "expected": exp, "tx_count": tx}

    def describe(self, cta: int, offset: int) -> str:
        """One line for a deadlock report: what a waiter on this object is waiting for."""
        st = self.state(cta, offset)
        if not st["valid"]:
            return f"mbarrier {offset:#x} of CTA {cta}: not initialised (or invalidated)"
        done = st["expected"] - st["pending"]
        return (f"mbarrier {offset:#x} of CTA {cta}: phase {st['phase']} (parity "
                f"{st['phase'] & 1}) incomplete, {done} of {st['expected']} arrivals, "
                f"tx-count {st['tx_count']} bytes outstanding")

    def check_plain_access(self, cta, offset, size: int) -> None:
        """A generic ld/st overlapping a valid mbarrier object is undefined (9.7.13.15.x:
        the object may only be accessed through mbarrier instructions until mbarrier.inval)."""
        off = np.atleast_1d(np.asarray(offset, np.int64))
        top = self.valid.shape[1] - 1
        first = np.clip(off >> 3, 0, top)
        last = np.clip((off + (size - 1)) >> 3, 0, top)
        near = self._any_valid[first] | self._any_valid[last]
        if not near.any():
            return
        cta = np.broadcast_to(np.atleast_1d(np.asarray(cta, np.int64)), off.shape)
        hit = self.valid[cta, first] | self.valid[cta, last]
        if hit.any():
            i = int(np.argmax(hit))
            raise MbarrierError("ordinary load/store to the bytes of a valid mbarrier object; "
                                "invalidate it with mbarrier.inval first", int(off[i] & ~7),
                                int(cta[i]))

    # -- mbarrier.init / inval -------------------------------------------------------------------
    def init(self, cta, offset, count) -> None:
        cta, off = self._slots(cta, offset, "mbarrier.init")
        count = np.broadcast_to(np.asarray(count, np.int64), cta.shape)
        bad = (count < 1) | (count > COUNT_MAX)
        if bad.any():
            i = int(np.argmax(bad))
            raise MbarrierError(f"mbarrier.init count {int(count[i])} outside 1 .. 2^20-1",
                                int(off[i]), int(cta[i]))
        again = self.valid[cta, off // 8]
        if again.any():
            i = int(np.argmax(again))
            raise MbarrierError("mbarrier.init on a valid mbarrier object; invalidate it with "
                                "mbarrier.inval first", int(off[i]), int(cta[i]))
        self._store(cta, off, encode(0, count, count, 0))
        self.valid[cta, off // 8] = True
        self._any_valid[off // 8] = True

    def inval(self, cta, offset) -> None:
        cta, off = self._slots(cta, offset, "mbarrier.inval")
        self._require_valid(cta, off, "mbarrier.inval")
        self.valid[cta, off // 8] = False
        slots = np.unique(off // 8)
        self._any_valid[slots] = self.valid[:, slots].any(axis=0)

    # -- arrive-on, expect-tx, complete-tx -------------------------------------------------------
    def arrive(self, cta, offset, count=1, *, expect_tx=0, drop: bool = False,
               no_complete: bool = False, what: str = "mbarrier.arrive") -> np.ndarray:
        """arrive-on (optionally preceded by expect-tx, or as arrive_drop) by each thread, in
        thread order. Returns each thread's state token: the object word before its arrive."""
        cta, off = self._slots(cta, offset, what)
        self._require_valid(cta, off, what)
        n = cta.size
        count = np.broadcast_to(np.asarray(count, np.int64), (n,))
        etx = np.broadcast_to(np.asarray(expect_tx, np.int64), (n,))
        bad = (count < 1) | (count > COUNT_MAX)
        if bad.any():
            i = int(np.argmax(bad))
            raise MbarrierError(f"{what} count {int(count[i])} outside 1 .. 2^20-1",
                                int(off[i]), int(cta[i]))
        if ((etx < 0) | (etx > TX_MAX)).any():
            i = int(np.argmax((etx < 0) | (etx > TX_MAX)))
            raise MbarrierError(f"{what} expect_tx count {int(etx[i])} outside 0 .. 2^20-1",
                                int(off[i]), int(cta[i]))
        key = cta * (self.shared.size + 8) + off
        fast = self._arrive_all(key, cta, off, count, etx, drop, no_complete)
        if fast is not None:
            return fast
        tokens = np.zeros(n, np.uint64)
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        words = self._words(cta[first], off[first])
        for g in range(uniq.size):
            sel = np.flatnonzero(inv == g)          # this object's arrivals, thread order
            words[g], tokens[sel] = self._arrive_one(words[g], count[sel], etx[sel], drop,
                                                     no_complete, what, int(off[sel[0]]),
                                                     int(cta[sel[0]]))
        self._store(cta[first], off[first], words)
        return tokens

    def _arrive_all(self, key, cta, off, count, etx, drop, no_complete):
        """`arrive` for every object at once (array operations, no loop over objects) in the
        usual case: no object's phase completes before its last arrival of this call and
        nothing is out of range. Returns the tokens, or None (nothing changed) when some object
        needs the per-object path, which then gives the result or the error."""
        order = np.argsort(key, kind="stable")                 # each object's arrivals in order
        ks = key[order]
        start = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])  # first arrival of each object
        g = np.cumsum(np.r_[True, ks[1:] != ks[:-1]]) - 1       # object of each arrival
        cnt, ex = count[order], etx[order]
        c_in = np.cumsum(cnt)
        c_ex = c_in - cnt - (c_in - cnt)[start][g]               # earlier arrivals' counts
        t_in = np.cumsum(ex)
        t_ex = t_in - ex - (t_in - ex)[start][g]                 # earlier expect-tx
        total, etx_total = np.add.reduceat(cnt, start), np.add.reduceat(ex, start)
        oc, oo = cta[order][start], off[order][start]
        ph, pend, exp, tx = decode(self._words(oc, oo))
        if (total > pend).any() or (np.abs(tx[g] + t_ex + ex) > TX_MAX).any():
            return None
        pend2 = pend - total
        tx2 = tx + etx_total
        exp2 = exp - total if drop else exp
        done = (pend2 == 0) & (tx2 == 0)
        if (exp2 < 0).any() or (done & (no_complete | (exp2 == 0))).any():
            return None
        tok = encode(ph[g], pend[g] - c_ex, exp[g] - (c_ex if drop else 0), tx[g] + t_ex)
        words = np.where(done, encode(ph ^ 1, exp2, exp2, 0), encode(ph, pend2, exp2, tx2))
        self._store(oc, oo, words)
        tokens = np.empty(key.size, np.uint64)
        tokens[order] = tok
        return tokens

    def _arrive_one(self, word, counts, etxs, drop, no_complete, what, off, cta):
        ph, pend, exp, tx = _decode_int(int(word))
        total = int(counts.sum())
        if total <= pend:
            # fast path: the phase can complete only at the last arrival
            before_pend = pend - np.concatenate(([0], np.cumsum(counts)[:-1]))
            tx_run = tx + np.cumsum(etxs)
            self._check_tx(tx_run, what, off, cta)
            tok = encode(ph, before_pend, exp - (np.concatenate(([0], np.cumsum(counts)[:-1]))
                                                 if drop else 0),
                         np.concatenate(([tx], tx_run[:-1])))
            pend -= total
            tx = int(tx_run[-1])
            if drop:
                exp -= total
            word, _ = self._maybe_complete(ph, pend, exp, tx, no_complete, what, off, cta)
            return word, tok
        # slow path: the phase completes inside this instruction (more arrivals than pending)
        toks = np.zeros(counts.size, np.uint64)
        for j in range(counts.size):
            toks[j] = _encode_int(ph, pend, exp, tx)
            tx += int(etxs[j])
            self._check_tx(np.array([tx]), what, off, cta)
            if pend - counts[j] < 0:
                raise MbarrierError(f"{what}: {int(counts[j])} arrivals with only {pend} pending "
                                    "in a phase that cannot complete (tx-count "
                                    f"{tx}); the pending arrival count would go negative",
                                    off, cta)
            pend -= int(counts[j])
            if drop:
                exp -= int(counts[j])
            word, _ = self._maybe_complete(ph, pend, exp, tx, no_complete, what, off, cta)
            ph, pend, exp, tx = _decode_int(word)
        return word, toks

    @staticmethod
    def _check_tx(tx_run, what, off, cta):
        bad = np.abs(tx_run) > TX_MAX
        if bad.any():
            v = int(tx_run[np.argmax(bad)])
            kind = "overflow" if v > 0 else "underflow"
            raise MbarrierError(f"{what}: tx-count {kind} ({v} outside -(2^20-1) .. 2^20-1)",
                                off, cta)

    @staticmethod
    def _maybe_complete(ph, pend, exp, tx, no_complete, what, off, cta):
        if pend < 0:
            raise MbarrierError(f"{what}: pending arrival count would go negative", off, cta)
        if exp < 0:
            raise MbarrierError(f"{what}: arrive_drop lowers the expected count below zero",
                                off, cta)
        if pend == 0 and tx == 0:
            if no_complete:
                raise MbarrierError(f"{what}.noComplete completes the current phase; the PTX ISA "
                                    "leaves this undefined", off, cta)
            if exp == 0:
                raise MbarrierError(f"{what}: every participant dropped out (expected count 0); "
                                    "the next phase could never complete", off, cta)
            return _encode_int(ph ^ 1, exp, exp, 0), True
        return _encode_int(ph, pend, exp, tx), False

    def expect_tx(self, cta, offset, tx_count, what: str = "mbarrier.expect_tx") -> None:
        """expect-tx: tx-count += tx_count (per thread, in order)."""
        self._tx(cta, offset, tx_count, +1, what)

    def complete_tx(self, cta, offset, tx_count, what: str = "complete-tx") -> np.ndarray:
        """complete-tx (async copies, mbarrier.complete_tx): tx-count -= tx_count; may complete
        the phase. Returns whether each object's phase completed."""
        return self._tx(cta, offset, tx_count, -1, what)

    def _tx(self, cta, offset, amount, sign, what):
        cta, off = self._slots(cta, offset, what)
        self._require_valid(cta, off, what)
        amount = np.broadcast_to(np.asarray(amount, np.int64), cta.shape)
        if ((amount < 0) | (amount > TX_MAX)).any():
            i = int(np.argmax((amount < 0) | (amount > TX_MAX)))
            raise MbarrierError(f"{what} byte count {int(amount[i])} outside 0 .. 2^20-1",
                                int(off[i]), int(cta[i]))
        key = cta * (self.shared.size + 8) + off
        fast = self._tx_all(key, cta, off, sign * amount)
        if fast is not None:
            return fast
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        words = self._words(cta[first], off[first])
        done = np.zeros(uniq.size, bool)
        for g in range(uniq.size):
            o, c = int(off[first[g]]), int(cta[first[g]])
            amts = sign * amount[inv == g]
            ph, pend, exp, tx = _decode_int(int(words[g]))
            if pend == 0 and (tx + np.cumsum(amts)[:-1] == 0).any():
                # the phase completes part-way through: apply the rest to the next phase
                for a in amts:
                    tx += int(a)
                    self._check_tx(np.array([tx]), what, o, c)
                    words[g], fin = self._maybe_complete(ph, pend, exp, tx, False, what, o, c)
                    done[g] |= fin
                    ph, pend, exp, tx = _decode_int(int(words[g]))
                continue
            tx_run = tx + np.cumsum(amts)
            self._check_tx(tx_run, what, o, c)
            words[g], done[g] = self._maybe_complete(ph, pend, exp, int(tx_run[-1]), False,
                                                     what, o, c)
        self._store(cta[first], off[first], words)
        return done[inv]

    def _tx_all(self, key, cta, off, amts):
        """`_tx` for every object at once in the usual case (no phase completes part-way through
        an object's amounts, nothing out of range); None (nothing changed) otherwise."""
        order = np.argsort(key, kind="stable")
        ks = key[order]
        new = np.r_[True, ks[1:] != ks[:-1]]
        start = np.flatnonzero(new)
        g = np.cumsum(new) - 1
        a = amts[order]
        run = np.cumsum(a)
        run = run - (run - a)[start][g]                        # each object's running sum
        oc, oo = cta[order][start], off[order][start]
        ph, pend, exp, tx = decode(self._words(oc, oo))
        tx_run = tx[g] + run
        last = np.r_[start[1:] - 1, ks.size - 1]
        inner = np.ones(ks.size, bool)
        inner[last] = False
        if (np.abs(tx_run) > TX_MAX).any() or ((pend[g] == 0) & (tx_run == 0) & inner).any():
            return None
        tx2 = tx_run[last]
        done = (pend == 0) & (tx2 == 0)
        if (done & (exp == 0)).any():
            return None
        words = np.where(done, encode(ph ^ 1, exp, exp, 0), encode(ph, pend, exp, tx2))
        self._store(oc, oo, words)
        out = np.empty(ks.size, bool)
        out[order] = done[g]
        return out

    # -- waiting ---------------------------------------------------------------------------------
    def test_wait(self, cta, offset, state, what: str = "mbarrier.test_wait") -> np.ndarray:
        """test_wait / try_wait with a state token: true when the token's phase completed."""
        cta, offset, state = np.broadcast_arrays(np.atleast_1d(np.asarray(cta, np.int64)),
                                                 np.atleast_1d(np.asarray(offset, np.int64)),
                                                 np.atleast_1d(np.asarray(state, np.uint64)))
        cta, off = self._slots(cta, offset, what)
        self._require_valid(cta, off, what)
        cur = decode(self._words(cta, off))[0]
        return cur != decode(np.broadcast_to(np.asarray(state, np.uint64), cta.shape))[0]

    def test_wait_parity(self, cta, offset, parity,
                         what: str = "mbarrier.test_wait.parity") -> np.ndarray:
        """.parity form: true when the phase of the given parity (the current or the immediately
        preceding one) completed, i.e. the current phase's parity differs from `parity`."""
        cta, offset, parity = np.broadcast_arrays(np.atleast_1d(np.asarray(cta, np.int64)),
                                                  np.atleast_1d(np.asarray(offset, np.int64)),
                                                  np.atleast_1d(np.asarray(parity, np.int64)))
        cta, off = self._slots(cta, offset, what)
        self._require_valid(cta, off, what)
        parity = np.broadcast_to(np.asarray(parity, np.int64), cta.shape)
        if ((parity != 0) & (parity != 1)).any():
            raise OperandError(f"{what}: phaseParity must be 0 or 1")
        return decode(self._words(cta, off))[0] != parity

    try_wait = test_wait
    try_wait_parity = test_wait_parity


# -------------------------------------------------------------------------------------------------
# Named barriers: bar{.cta}.sync / arrive / red, barrier{.cta}.sync / arrive (9.7.13.1)
# -------------------------------------------------------------------------------------------------
N_NAMED_BARRIERS = 16


class NamedBarriers:
    """The 16 named barriers of each resident CTA. Arrivals count whole warps: the counter grows
    by the warp size per arriving warp, not by its active threads (9.7.13.1). Without an explicit
    thread count the barrier waits for every warp of the CTA that has not exited."""

    def __init__(self, n_ctas: int, warps_per_cta: int):
        self.warps_per_cta = warps_per_cta
        self.arrived = np.zeros((n_ctas, N_NAMED_BARRIERS), np.int64)      # threads
        self.expected = np.zeros((n_ctas, N_NAMED_BARRIERS), np.int64)     # 0 = not in use
        self.waiting: dict[tuple[int, int], list[int]] = {}
        self.red: dict[tuple[int, int], list] = {}
        self.exited = np.zeros((n_ctas, warps_per_cta), bool)

    def arrive(self, cta: int, barrier: int, warp: int, *, count: int | None = None,
               wait: bool = True, red: tuple[str, np.ndarray] | None = None):
        """One warp executes bar.sync / bar.arrive (wait=False) / bar.red on `barrier`.
        Returns None while the barrier is incomplete, else (released warps, reduction result).
        A warp that must wait stays blocked until it appears in a released list."""
        if not 0 <= barrier < N_NAMED_BARRIERS:
            raise BarrierError(f"barrier id {barrier} outside 0..15")
        if count is not None and (count <= 0 or count % 32):
            raise BarrierError(f"barrier thread count {count} must be a positive multiple of the "
                               "warp size (9.7.13.1)")
        if count is None:
            count = 32 * int((~self.exited[cta]).sum())
        if self.expected[cta, barrier] == 0:
            self.expected[cta, barrier] = count
        elif self.expected[cta, barrier] != count:
            raise BarrierError(f"barrier {barrier} of CTA {cta}: warp {warp} arrives expecting "
                               f"{count} threads, others expect {self.expected[cta, barrier]}")
        key = (cta, barrier)
        if wait:
            self.waiting.setdefault(key, []).append(warp)
        if red is not None:
            self.red.setdefault(key, []).append(red)
        self.arrived[cta, barrier] += 32
        if self.arrived[cta, barrier] < self.expected[cta, barrier]:
            return None
        released = self.waiting.pop(key, [])
        reds = self.red.pop(key, [])
        self.arrived[cta, barrier] = 0
        self.expected[cta, barrier] = 0
        result = None
        if reds:
            op = reds[0][0]
            if any(r[0] != op for r in reds):
                raise BarrierError(f"bar.red on barrier {barrier}: warps use different reductions")
            preds = np.concatenate([np.asarray(r[1], bool).ravel() for r in reds])
            result = {"popc": int(preds.sum()), "and": bool(preds.all()),
                      "or": bool(preds.any())}[op]
        return released, result

    def exit_warp(self, cta: int, warp: int):
        """A warp exited: barriers counting all non-exited warps may now complete.
        Returns [(barrier, released warps)] for barriers that completed."""
        self.exited[cta, warp] = True
        out = []
        for b in range(N_NAMED_BARRIERS):
            live = 32 * int((~self.exited[cta]).sum())
            if self.expected[cta, b] and self.arrived[cta, b] >= live and (cta, b) in self.waiting:
                released = self.waiting.pop((cta, b), [])
                self.arrived[cta, b] = self.expected[cta, b] = 0
                out.append((b, released))
        return out

    def describe(self, cta: int, barrier: int) -> str:
        return (f"bar {barrier}: {self.arrived[cta, barrier]} of {self.expected[cta, barrier]} "
                "threads arrived")


# -------------------------------------------------------------------------------------------------
# barrier.cluster.arrive / wait (9.7.13.3)
# -------------------------------------------------------------------------------------------------
class ClusterBarrier:
    """barrier.cluster: every non-exited thread of the cluster arrives, then waits for the phase
    to complete. Vectorised over threads (cluster-local thread numbers)."""

    def __init__(self, n_clusters: int, threads_per_cluster: int):
        self.phase = np.zeros(n_clusters, np.int64)
        self.arrived_in = np.full((n_clusters, threads_per_cluster), -1, np.int64)  # phase or -1
        self.exited = np.zeros((n_clusters, threads_per_cluster), bool)
        self.count = np.zeros(n_clusters, np.int64)

    def arrive(self, cluster: int, threads) -> bool:
        """Threads arrive; returns True if this completed the cluster's current phase."""
        threads = np.atleast_1d(np.asarray(threads, np.int64))
        if (self.arrived_in[cluster, threads] >= 0).any():
            t = int(threads[np.argmax(self.arrived_in[cluster, threads] >= 0)])
            raise BarrierError(f"barrier.cluster.arrive by thread {t} of cluster {cluster} "
                               "twice without barrier.cluster.wait in between")
        self.arrived_in[cluster, threads] = self.phase[cluster]
        self.count[cluster] += threads.size
        return self._maybe_complete(cluster)

    def _maybe_complete(self, cluster: int) -> bool:
        live = int((~self.exited[cluster]).sum())
        if self.count[cluster] >= live and self.count[cluster] > 0:
            self.phase[cluster] += 1
            self.count[cluster] = 0
            return True
        return False

    def wait(self, cluster: int, threads) -> np.ndarray:
        """True for threads whose arrival phase has completed (they may proceed; their
        arrival is consumed). A wait without a prior arrive is undefined."""
        threads = np.atleast_1d(np.asarray(threads, np.int64))
        ph = self.arrived_in[cluster, threads]
        if (ph < 0).any():
            t = int(threads[np.argmax(ph < 0)])
            raise BarrierError(f"barrier.cluster.wait by thread {t} of cluster {cluster} without "
                               "a prior barrier.cluster.arrive")
        done = ph < self.phase[cluster]
        self.arrived_in[cluster, threads[done]] = -1
        return done

    def exit_threads(self, cluster: int, threads) -> bool:
        self.exited[cluster, np.asarray(threads, np.int64)] = True
        return self._maybe_complete(cluster) if self.count[cluster] else False
