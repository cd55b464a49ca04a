"""The asynchronous proxy as a small event model: tcgen05 operations, TMA / bulk copies and
cp.async, issued now, their effects performed later, at defined completion points.

PTX ISA 9.7.16.6 (memory consistency model for tcgen05):
- tcgen05.mma / cp / shift / ld / st are asynchronous (9.7.16.6.1); alloc, dealloc,
  relinquish_alloc_permit, fence, wait, commit are synchronous.
- Pipelined pairs execute in issue order (9.7.16.6.2): mma->mma, cp->mma, shift->mma,
  shift->cp.4x256b, mma->shift, all with the same .cta_group.
- tcgen05.commit makes an mbarrier track the completion of all prior mma / cp / shift of the
  executing thread with the same .cta_group, then signals arrive-on (count 1) (9.7.16.6.2.1.1,
  9.7.16.12.1); tcgen05.wait::ld / ::st completes the thread's prior ld / st (9.7.16.6.2.1.2).
Bulk copies (cp.async.bulk{.tensor}) complete either through complete-tx on an mbarrier or
through bulk async-groups (commit_group / wait_group); cp.async (non-bulk) through cp.async
groups or cp.async.mbarrier.arrive.

The model: one FIFO of pending operations in issue order. Completing an operation runs its
`perform` (the effect: write TMEM, shared or global memory) and then its `signal` (complete-tx /
arrive-on on an mbarrier). `progress()` completes the oldest operations; `wait` / `wait_group`
complete the named operations of one issuer at once. Completing in issue order satisfies every
pipelined pair and every commit (a commit is queued behind the operations it tracks), so a
correct program computes the right bits; a program that reads results before the defined point
sees the old contents, as it could on hardware ("lazy" policy, the default). `eager=True`
completes every operation at issue (for debugging). The fences (tcgen05.fence::*,
fence.proxy.async) need no action: this model orders more strongly than the spec requires
(docs/machine.md says what that cannot detect).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ptxsim.errors import CURRENT, AsyncProxyError, OperandError, PtxsimError

# operation kinds and the completion mechanism each uses
TCGEN05_MBARRIER_TRACKED = ("mma", "cp", "shift")      # 9.7.16.6.2.1.1
TCGEN05_WAIT_TRACKED = ("ld", "st")                    # 9.7.16.6.2.1.2
KINDS = TCGEN05_MBARRIER_TRACKED + TCGEN05_WAIT_TRACKED + (
    "commit",            # tcgen05.commit: its signal is the mbarrier arrive-on
    "bulk",              # cp.async.bulk{.tensor} / cp.reduce.async.bulk / prefetch
    "cp_async",          # cp.async (sm_80 non-bulk)
    "cp_async_arrive",   # cp.async.mbarrier.arrive: arrive when prior cp.async complete
)
GROUP_FAMILIES = ("bulk", "cp_async")
_STEP_KINDS = TCGEN05_MBARRIER_TRACKED + ("commit",)


@dataclass
class AsyncOp:
    seq: int
    kind: str
    issuer: object                      # usually the flat thread id (or (cta, warp))
    perform: Callable[[], None] | None
    signal: Callable[[], None] | None
    cta_group: int | None = None
    group: int | None = None            # committed async-group number (bulk / cp_async)
    what: str = ""                      # text for deadlock reports ("line 42: cp.async.bulk...")
    done: bool = False
    # the threads on whose behalf the operation runs (an int64 array): one instruction issued by
    # many threads in one scheduler step is one operation; it joins each of their async-groups
    # and their CTAs' exit checks. None: the issuer alone.
    threads: object = None


class _GroupTable:
    """The async-groups of one family (bulk or cp_async) of every thread, as arrays (no Python
    per thread). Thread t's operations are numbered by the proxy's issue sequence; its g-th
    commit_group records `bound[t, g % R]` = the sequence number at that commit, so its group g
    holds its operations with bound[g-1] <= seq < bound[g] and those at or after its last bound
    are uncommitted. wait_group N of thread t completes its operations with
    seq < bound[t, count[t] - N - 1]. The ring keeps the R most recent bounds; a wait reaching
    further back uses the oldest bound kept, a later one: it completes more than required, which
    is allowed (a copy may complete at any time before the wait)."""

    def __init__(self):
        self.count = np.zeros(0, np.int64)           # commit_group count per thread
        self.bound = np.zeros((0, 8), np.int64)      # the last R commit bounds, a ring
        self.ops: deque = deque()                    # this family's grouped ops, issue order

    def _grow(self, n: int, ring: int = 0) -> None:
        T, R = self.bound.shape
        if n > T:
            size = max(n, 2 * T)
            count = np.zeros(size, np.int64)
            count[:T] = self.count
            bound = np.zeros((size, R), np.int64)
            bound[:T] = self.bound
            self.count, self.bound = count, bound
        if ring > R:
            T = self.count.size
            old = self.bound
            new = np.zeros((T, ring), np.int64)
            # group g of each thread moves from slot g % R to slot g % ring (the last R groups)
            for back in range(1, R + 1):
                g = self.count - back
                ok = g >= 0
                new[ok, g[ok] % ring] = old[ok, g[ok] % R]
            # groups older than the R kept: their bounds are gone; the oldest kept bound stands
            # in (a later one: a wait reaching them completes more than required, never less)
            oldest = old[np.arange(T), np.maximum(self.count - R, 0) % R]
            for back in range(R + 1, ring + 1):
                g = self.count - back
                ok = g >= 0
                new[ok, g[ok] % ring] = oldest[ok]
            self.bound = new

    def commit(self, threads: np.ndarray, seq: int) -> np.ndarray:
        self._grow(int(threads.max()) + 1)
        g = self.count[threads]
        self.bound[threads, g % self.bound.shape[1]] = seq
        self.count[threads] = g + 1
        return g

    def wait_bounds(self, threads: np.ndarray, n: int) -> np.ndarray:
        """Per thread: its operations with seq below this must complete (-1: none)."""
        self._grow(int(threads.max()) + 1, n + 1)
        count = self.count[threads]
        R = self.bound.shape[1]
        g = count - n - 1                             # the newest group that must complete
        g = np.maximum(g, count - R)                  # (not kept: a later one, see above)
        out = np.full(threads.size, -1, np.int64)
        ok = count > n
        out[ok] = self.bound[threads[ok], g[ok] % R]
        return out

    def last_bound(self, t: int) -> int:
        if t >= self.count.size or self.count[t] == 0:
            return -1
        return int(self.bound[t, (self.count[t] - 1) % self.bound.shape[1]])

    def live(self) -> deque:
        while self.ops and self.ops[0].done:
            self.ops.popleft()
        return self.ops


class AsyncProxy:
    def __init__(self, *, eager: bool = False):
        self.eager = eager
        self.queue: deque[AsyncOp] = deque()
        self._seq = 0
        self._groups: dict[str, _GroupTable] = {f: _GroupTable() for f in GROUP_FAMILIES}
        self.completed = 0
        # each issuer's operations in issue order (completed ones dropped lazily from the
        # front): what `wait` / `wait_group` complete, found without scanning the whole queue
        self._by_issuer: dict[object, deque[AsyncOp]] = {}

    # -- issuing ---------------------------------------------------------------------------------
    def issue(self, issuer, kind: str, perform=None, *, signal=None, cta_group: int | None = None,
              what: str = "", threads=None) -> AsyncOp:
        """Issue one asynchronous operation. `perform` is its effect, `signal` its mbarrier
        signalling (complete-tx), both run at completion. `threads`: the thread ids an operation
        issued by several threads at once runs for (its async-groups, its CTAs' exit checks);
        default the issuer alone."""
        if kind not in KINDS:
            raise OperandError(f"unknown asynchronous operation kind '{kind}'")
        if kind in TCGEN05_MBARRIER_TRACKED + ("commit",) and cta_group not in (1, 2):
            raise OperandError(f"tcgen05 {kind} needs .cta_group 1 or 2")
        op = AsyncOp(self._seq, kind, issuer, perform, signal, cta_group, None, what)
        if threads is not None:
            op.threads = np.array(threads, np.int64).reshape(-1)
        self._seq += 1
        self.queue.append(op)
        mine = self._by_issuer.get(issuer)
        if mine is None:
            mine = self._by_issuer[issuer] = deque()
        mine.append(op)
        if kind in GROUP_FAMILIES and signal is None:
            if op.threads is None:
                op.threads = np.array([issuer], np.int64)
            self._family(kind).ops.append(op)
        if self.eager:
            self.progress()
        return op

    def commit(self, issuer, cta_group: int, signal, what: str = "tcgen05.commit",
               threads=None) -> AsyncOp:
        """tcgen05.commit: `signal` (the mbarrier arrive-on, possibly multicast) runs once every
        prior mma / cp / shift of `issuer` (of each of `threads`) with this .cta_group has
        completed."""
        return self.issue(issuer, "commit", None, signal=signal, cta_group=cta_group, what=what,
                          threads=threads)

    def arrive_when_done(self, issuer, signal, what: str = "cp.async.mbarrier.arrive") -> AsyncOp:
        """cp.async.mbarrier.arrive: arrive-on once all prior cp.async of `issuer` complete."""
        return self.issue(issuer, "cp_async_arrive", None, signal=signal, what=what)

    # -- completion ------------------------------------------------------------------------------
    def _complete(self, op: AsyncOp) -> None:
        if op.done:
            return
        op.done = True
        self.completed += 1
        perform, signal = op.perform, op.signal
        # a completed operation keeps no closure (its data may be large; _by_issuer may hold
        # the operation a while longer)
        op.perform = op.signal = None
        before = CURRENT[0]
        if op.what.startswith("line "):   # a warning given while it completes names its line
            CURRENT[0] = op.what
        try:
            if perform is not None:
                perform()
            if signal is not None:
                signal()
        except PtxsimError as e:
            # an error found when the operation completes names the instruction that issued it
            if op.what and op.what.startswith("line ") and not str(e).startswith(op.what):
                e.args = (f"{op.what}: {e}",) + tuple(e.args[1:])
                e.ptx_line = int(op.what[5:].split(":", 1)[0]) \
                    if op.what[5:].split(":", 1)[0].isdigit() else None
            raise
        finally:
            CURRENT[0] = before

    def _sweep(self) -> None:
        while self.queue and self.queue[0].done:
            self.queue.popleft()

    def progress(self, max_ops: int | None = None) -> int:
        """Complete up to `max_ops` (all if None) of the oldest pending operations, in issue
        order. Returns how many completed."""
        n = 0
        while self.queue and (max_ops is None or n < max_ops):
            op = self.queue.popleft()
            if not op.done:
                self._complete(op)
                n += 1
        return n

    def progress_round(self, group_of) -> int:
        """Complete, in issue order, the oldest pending operation of each group of issuers
        (`group_of(issuer)`, e.g. the issuer's CTA): the sanitizer's "latest point" policy,
        one completion per CTA each time no thread can run. Returns how many completed."""
        seen, n = set(), 0
        for op in list(self.queue):
            if op.done:
                continue
            g = group_of(op.issuer)
            if g in seen:
                continue
            seen.add(g)
            self._complete(op)
            n += 1
        self._sweep()
        return n

    def progress_random(self, rng) -> int:
        """Complete the oldest pending operation of a pseudo-randomly chosen issuer (each
        issuer's operations still complete in issue order: every pipelined pair and commit
        holds). Returns how many completed (0 or 1)."""
        firsts = {}
        for op in self.queue:
            if not op.done and op.issuer not in firsts:
                firsts[op.issuer] = op
        if not firsts:
            return 0
        ops = list(firsts.values())
        op = ops[int(rng.integers(len(ops)))]
        # the chosen op's own issuer-order predecessors are complete (it is its issuer's first)
        self._complete(op)
        self._sweep()
        return 1

    def _complete_where(self, pred) -> int:
        """Complete, in issue order, every pending op satisfying `pred` and every earlier op of
        the same issuer that it is pipelined behind (all earlier ops of that issuer: stronger than
        needed, never weaker)."""
        targets = [op for op in self.queue if not op.done and pred(op)]
        if not targets:
            return 0
        last = targets[-1].seq
        issuers = {op.issuer for op in targets}
        n = 0
        for op in list(self.queue):
            if op.seq > last:
                break
            if not op.done and (pred(op) or op.issuer in issuers):
                self._complete(op)
                n += 1
        self._sweep()
        return n

    def _pending_of(self, issuer) -> deque:
        mine = self._by_issuer.get(issuer)
        if mine is None:
            return deque()
        while mine and mine[0].done:
            mine.popleft()
        return mine

    def _complete_targets(self, targets) -> int:
        """`_complete_where` for a predicate that holds exactly for `targets` (pending ops):
        the same operations, completed in the same (issue) order, found through the issuers'
        own lists instead of a scan of the whole queue."""
        if not targets:
            return 0
        last = max(op.seq for op in targets)
        issuers = list(dict.fromkeys(op.issuer for op in targets))
        todo = []
        for who in issuers:
            for op in self._pending_of(who):
                if op.seq > last:
                    break
                if not op.done:
                    todo.append(op)
        if any(op.threads is not None and op.kind in _STEP_KINDS for op in todo):
            # a tcgen05 mma / cp / shift / commit issued by the threads of one step is ordered
            # behind whatever those threads issued before (the same D, the commit's tracking):
            # everything queued before the last target completes first, in issue order (never
            # weaker than needed)
            todo = [op for op in self.queue if op.seq <= last and not op.done]
        elif len(issuers) > 1:
            todo.sort(key=lambda op: op.seq)
        n = 0
        for op in todo:
            if not op.done:
                self._complete(op)
                n += 1
        self._sweep()
        return n

    def wait(self, issuer, kind: str) -> int:
        """tcgen05.wait::ld / ::st: complete the issuer's prior tcgen05.ld / st."""
        if kind not in TCGEN05_WAIT_TRACKED:
            raise OperandError(f"tcgen05.wait::{kind}: only ::ld and ::st exist")
        return self._complete_targets([op for op in self._pending_of(issuer)
                                       if not op.done and op.issuer == issuer and
                                       op.kind == kind])

    # -- async-groups: cp.async.bulk.commit_group / wait_group, cp.async.commit_group / wait_group
    # Vectorised over the executing threads (thread ids: ints); the scalar forms take one.
    def _family(self, family: str) -> _GroupTable:
        if family not in GROUP_FAMILIES:
            raise OperandError(f"unknown async-group family '{family}'")
        return self._groups[family]

    def commit_groups(self, threads, family: str) -> np.ndarray:
        """Batch each thread's uncommitted ops of `family` into a new group (possibly empty);
        returns each thread's group number."""
        threads = np.asarray(threads, np.int64).reshape(-1)
        g = self._family(family)
        if not threads.size:
            return np.zeros(0, np.int64)
        return g.commit(threads, self._seq)

    def wait_groups(self, threads, family: str, n: int) -> int:
        """Each thread waits until at most `n` of its most recent groups are pending: the older
        ones complete now (with the operations they are pipelined behind). Returns how many
        operations completed."""
        if n < 0:
            raise OperandError(f"wait_group {n}: the group count must be a non-negative constant")
        threads = np.asarray(threads, np.int64).reshape(-1)
        g = self._family(family)
        if not threads.size:
            return 0
        bounds = g.wait_bounds(threads, n)
        top = int(bounds.max())
        if top < 0:
            return 0
        need = np.full(g.count.size, -1, np.int64)     # per thread id: seq bound, -1 none
        np.maximum.at(need, threads, bounds)
        targets = []
        for op in g.live():
            if op.seq >= top:
                break
            if not op.done and (need[op.threads[op.threads < need.size]] > op.seq).any():
                targets.append(op)
        # in issue order, each with the earlier operations of its own issuer
        return sum(self._complete_targets([op]) for op in targets)

    def complete_family(self, threads, family: str) -> int:
        """Complete every pending op of `family` that runs for one of `threads`
        (cp.async.mbarrier.arrive: all prior cp.async of the executing threads)."""
        threads = np.asarray(threads, np.int64).reshape(-1)
        g = self._family(family)
        ops = [op for op in g.live() if not op.done]
        if not ops or not threads.size:
            return 0
        top = max(int(threads.max()), max(int(op.threads.max()) for op in ops)) + 1
        mine = np.zeros(top, bool)
        mine[threads] = True
        return sum(self._complete_targets([op]) for op in ops if mine[op.threads].any())

    def commit_group(self, issuer, family: str) -> int:
        """`commit_groups` for one thread."""
        return int(self.commit_groups([issuer], family)[0])

    def wait_group(self, issuer, family: str, n: int) -> int:
        """`wait_groups` for one thread."""
        return self.wait_groups([issuer], family, n)

    # -- inspection --------------------------------------------------------------------------------
    def pending(self, issuer=None, kinds=None) -> list[AsyncOp]:
        return [op for op in self.queue if not op.done
                and (issuer is None or op.issuer == issuer)
                and (kinds is None or op.kind in kinds)]

    def uncommitted(self, issuer, family: str) -> list[AsyncOp]:
        """The issuer's pending operations of `family` not yet in a group."""
        g = self._family(family)
        b = g.last_bound(int(issuer))
        return [op for op in g.live() if not op.done and op.seq >= b
                and (op.threads == issuer).any()]

    def check_exit(self, issuers, *, reads_shared=("bulk",)) -> None:
        """A CTA exits: its shared memory goes away. Pending operations of its threads that still
        read or write that shared memory would touch freed memory: undefined."""
        mine = issuers.__contains__ if isinstance(issuers, range) else set(issuers).__contains__
        left = [op for op in self.queue if not op.done
                and op.kind in reads_shared + TCGEN05_MBARRIER_TRACKED
                and (mine(op.issuer) if op.threads is None else
                     any(mine(int(t)) for t in _ends(op.threads, issuers)))]
        if left:
            raise AsyncProxyError(
                f"{len(left)} asynchronous operation(s) still in flight when their CTA exits, "
                f"e.g. {left[0].what or left[0].kind} (seq {left[0].seq}); wait for them "
                "(cp.async.bulk.wait_group / mbarrier) before exit")

    def __len__(self) -> int:
        return sum(1 for op in self.queue if not op.done)


def _ends(threads, issuers):
    """The threads of an operation worth testing for membership in `issuers`: for a range, the
    ones inside it (at most one is needed), found without a loop over the threads."""
    if isinstance(issuers, range) and issuers.step == 1:
        inside = threads[(threads >= issuers.start) & (threads < issuers.stop)]
        return inside[:1].tolist()
    return threads.tolist()
