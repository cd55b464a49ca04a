"""Deadlock reports and the step guard of the kernel executor (issue 10: "when every live warp
waits, stop and report each warp's PTX line and what it waits on"; "a step guard for runaway
loops").

The scheduler records, for each blocked warp, a `Wait`: where it stands and a one-line reason
(`Mbarriers.describe`, `NamedBarriers.describe`, ...). When no warp can run and the
asynchronous proxy has nothing left to complete, `deadlock_error` turns them into one
`DeadlockError` whose message lists every waiter, grouped by what it waits on.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ptxsim.errors import DeadlockError, OperandError, StepLimitExceeded

# thread status in the scheduler (Wave.status) and why a BLOCKED thread waits (Wave.wait_kind);
# the details of each wait live in per-thread arrays of the wave
RUN, BLOCKED, EXITED = 0, 1, 2
NO_WAIT, WAIT_MBAR, WAIT_BAR, WAIT_CLUSTER, WAIT_TMEM, WAIT_PEER = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Wait:
    cta: int
    warp: int
    line: int | None          # PTX source line of the waiting instruction
    instruction: str          # its text, e.g. "mbarrier.try_wait.parity.b64 p, [%r5], 0;"
    reason: str               # e.g. Mbarriers.describe(...) / NamedBarriers.describe(...)

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "line ?"
        return f"CTA {self.cta} warp {self.warp}, {where}: {self.instruction}  <- {self.reason}"


def deadlock_error(waits, *, live_warps: int | None = None, pending_async=(),
                   max_lines: int = 64) -> DeadlockError:
    """A DeadlockError listing every waiting warp (first `max_lines`), grouped by reason."""
    waits = list(waits)
    if not waits:
        raise OperandError("deadlock_error needs at least one waiting warp")
    by_reason: dict[str, list[Wait]] = {}
    for w in waits:
        by_reason.setdefault(w.reason, []).append(w)
    lines = [f"deadlock: all {live_warps if live_warps is not None else len(waits)} live warps "
             f"wait and nothing can wake them ({len(by_reason)} distinct wait reason(s))"]
    shown = 0
    for reason, ws in by_reason.items():
        lines.append(f"  waiting on {reason}:")
        for w in ws:
            if shown >= max_lines:
                break
            where = f"line {w.line}" if w.line is not None else "line ?"
            lines.append(f"    CTA {w.cta} warp {w.warp}, {where}: {w.instruction}")
            shown += 1
    if shown < len(waits):
        lines.append(f"  ... and {len(waits) - shown} more waiting warps")
    if pending_async:
        lines.append(f"  asynchronous operations still queued: {len(pending_async)}")
    err = DeadlockError("\n".join(lines))
    err.waits = waits
    return err


class StepGuard:
    """Counts warp-instruction steps; past `limit` raises StepLimitExceeded naming the PTX lines
    executed most often (where a runaway loop spins)."""

    def __init__(self, limit: int = 50_000_000):
        if limit <= 0:
            raise OperandError(f"step limit {limit} must be positive")
        self.limit, self.steps = limit, 0
        self.lines: Counter = Counter()

    def tick(self, n: int = 1, line: int | None = None) -> None:
        self.steps += n
        if line is not None:
            self.lines[line] += n
        if self.steps > self.limit:
            hot = ", ".join(f"line {ln} ({c} steps)" for ln, c in self.lines.most_common(3))
            raise StepLimitExceeded(f"more than {self.limit} warp-instruction steps; most "
                                    f"executed: {hot or 'unknown lines'} (raise the limit if the "
                                    "kernel is just long)")
