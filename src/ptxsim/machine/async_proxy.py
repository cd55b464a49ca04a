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
from dataclasses import dataclass, field
from typing import Callable

from ptxsim.errors import AsyncProxyError, OperandError

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


@dataclass
class _Groups:
    uncommitted: list = field(default_factory=list)   # ops not yet in a group
    committed: deque = field(default_factory=deque)   # (group number, [ops]) oldest first
    counter: int = 0


class AsyncProxy:
    def __init__(self, *, eager: bool = False):
        self.eager = eager
        self.queue: deque[AsyncOp] = deque()
        self._seq = 0
        self._groups: dict[tuple[object, str], _Groups] = {}
        self.completed = 0
        # each issuer's operations in issue order (completed ones dropped lazily from the
        # front): what `wait` / `wait_group` complete, found without scanning the whole queue
        self._by_issuer: dict[object, deque[AsyncOp]] = {}

    # -- issuing ---------------------------------------------------------------------------------
    def issue(self, issuer, kind: str, perform=None, *, signal=None, cta_group: int | None = None,
              what: str = "") -> AsyncOp:
        """Issue one asynchronous operation. `perform` is its effect, `signal` its mbarrier
        signalling (complete-tx), both run at completion."""
        if kind not in KINDS:
            raise OperandError(f"unknown asynchronous operation kind '{kind}'")
        if kind in TCGEN05_MBARRIER_TRACKED + ("commit",) and cta_group not in (1, 2):
            raise OperandError(f"tcgen05 {kind} needs .cta_group 1 or 2")
        op = AsyncOp(self._seq, kind, issuer, perform, signal, cta_group, None, what)
        self._seq += 1
        self.queue.append(op)
        mine = self._by_issuer.get(issuer)
        if mine is None:
            mine = self._by_issuer[issuer] = deque()
        mine.append(op)
        if kind in GROUP_FAMILIES and signal is None:
            self._family(issuer, kind).uncommitted.append(op)
        if self.eager:
            self.progress()
        return op

    def commit(self, issuer, cta_group: int, signal, what: str = "tcgen05.commit") -> AsyncOp:
        """tcgen05.commit: `signal` (the mbarrier arrive-on, possibly multicast) runs once every
        prior mma / cp / shift of `issuer` with this .cta_group has completed."""
        return self.issue(issuer, "commit", None, signal=signal, cta_group=cta_group, what=what)

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
        if perform is not None:
            perform()
        if signal is not None:
            signal()

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
        if len(issuers) > 1:
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
    def _family(self, issuer, family: str) -> _Groups:
        if family not in GROUP_FAMILIES:
            raise OperandError(f"unknown async-group family '{family}'")
        return self._groups.setdefault((issuer, family), _Groups())

    def commit_group(self, issuer, family: str) -> int:
        """Batch the issuer's uncommitted ops of `family` into a new group (possibly empty)."""
        g = self._family(issuer, family)
        n = g.counter
        g.counter += 1
        for op in g.uncommitted:
            op.group = n
        g.committed.append((n, g.uncommitted))
        g.uncommitted = []
        return n

    def wait_group(self, issuer, family: str, n: int) -> int:
        """Wait until at most `n` of the issuer's most recent groups are pending: complete the
        older ones now. Returns how many operations completed."""
        if n < 0:
            raise OperandError(f"wait_group {n}: the group count must be a non-negative constant")
        g = self._family(issuer, family)
        done = 0
        while len(g.committed) > n:
            _, ops = g.committed.popleft()
            # the group's pending operations (every one of them is in the queue)
            done += self._complete_targets(list({id(op): op for op in ops
                                                 if not op.done}.values()))
        # drop groups whose operations already completed through progress()
        while g.committed and all(op.done for op in g.committed[0][1]):
            g.committed.popleft()
        return done

    # -- inspection --------------------------------------------------------------------------------
    def pending(self, issuer=None, kinds=None) -> list[AsyncOp]:
        return [op for op in self.queue if not op.done
                and (issuer is None or op.issuer == issuer)
                and (kinds is None or op.kind in kinds)]

    def uncommitted(self, issuer, family: str) -> list[AsyncOp]:
        return list(self._family(issuer, family).uncommitted)

    def check_exit(self, issuers, *, reads_shared=("bulk",)) -> None:
        """A CTA exits: its shared memory goes away. Pending operations of its threads that still
        read or write that shared memory would touch freed memory: undefined."""
        issuers = set(issuers)
        left = [op for op in self.queue if not op.done and op.issuer in issuers
                and op.kind in reads_shared + TCGEN05_MBARRIER_TRACKED]
        if left:
            raise AsyncProxyError(
                f"{len(left)} asynchronous operation(s) still in flight when their CTA exits, "
                f"e.g. {left[0].what or left[0].kind} (seq {left[0].seq}); wait for them "
                "(cp.async.bulk.wait_group / mbarrier) before exit")

    def __len__(self) -> int:
        return sum(1 for op in self.queue if not op.done)
