"""What the sanitizer reports: one `Finding` per distinct bug (kind, PTX line, the earlier
conflicting access), each with its severity, the CTA / warp / lane that hit it and the address
or Tensor Memory cell; `Findings` collects them during a launch (repeats of one finding are
counted, not listed again) and prints them as a table or JSON.

Every kind is one row of `KINDS` (docs/sanitizer.md lists them with the test that makes each
fire): the compute-sanitizer tool it corresponds to, its severity and a one-line summary.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

ERROR, WARNING = "error", "warning"

# kind -> (tool, severity, summary). Tools: the compute-sanitizer names where one applies
# (racecheck / initcheck / synccheck / memcheck), else the protocol the check belongs to.
KINDS: dict[str, tuple[str, str, str]] = {
    # racecheck: generic accesses of two warps with no happens-before between them
    "race-shared": ("racecheck", ERROR,
                    "two warps access a shared-memory byte, one writes, no synchronisation "
                    "orders them"),
    "race-global": ("racecheck", ERROR,
                    "two warps (of any CTAs) access a global-memory byte, one writes, no "
                    "synchronisation orders them"),
    # the asynchronous proxy against the generic proxy (PTX ISA 9.7.16.6.5, 9.7.9.25)
    "async-read-before-complete": ("racecheck", ERROR,
                                   "shared memory read before the asynchronous copy (TMA, bulk, "
                                   "cp.async) that writes it is known to have completed"),
    "async-source-overwritten": ("racecheck", ERROR,
                                 "shared memory written while an asynchronous operation "
                                 "(tcgen05.mma / tcgen05.cp operand, TMA or bulk store source) "
                                 "may still read it"),
    "async-dest-overwritten": ("racecheck", ERROR,
                               "shared memory written while an asynchronous copy into it is in "
                               "flight"),
    "async-overwrites-unread": ("racecheck", ERROR,
                                "an asynchronous copy writes shared memory that a warp (or an "
                                "earlier asynchronous operation) may still be reading or "
                                "writing"),
    "missing-proxy-fence": ("racecheck", ERROR,
                            "generic-proxy writes read by the asynchronous proxy with no "
                            "fence.proxy.async between the write and the synchronisation"),
    # tcgen05 / Tensor Memory protocol (9.7.16.6)
    "tmem-read-before-complete": ("tcgen05", ERROR,
                                  "Tensor Memory read before the tcgen05 operation that writes "
                                  "it is known to have completed (tcgen05.commit + mbarrier "
                                  "wait, or tcgen05.wait::st)"),
    "tmem-overwrite-in-flight": ("tcgen05", ERROR,
                                 "Tensor Memory written while an earlier tcgen05 operation may "
                                 "still read or write it (a missing tcgen05.wait::ld, or an "
                                 "MMA not yet known to be complete)"),
    "tmem-dealloc-in-flight": ("tcgen05", ERROR,
                               "tcgen05.dealloc of columns a tcgen05 operation may still "
                               "access"),
    "tcgen05-missing-fence-before": ("tcgen05", WARNING,
                                     "tcgen05 operations ordered across threads with no "
                                     "tcgen05.fence::before_thread_sync before the "
                                     "synchronisation (9.7.16.6.4)"),
    "tcgen05-not-pipelined": ("tcgen05", WARNING,
                              "two tcgen05 operations of one thread on the same Tensor Memory "
                              "that the PTX ISA does not pipeline (9.7.16.6.2), e.g. "
                              "tcgen05.mma -> tcgen05.cp"),
    "tcgen05-missing-fence-after": ("tcgen05", WARNING,
                                    "tcgen05 operations ordered across threads with no "
                                    "tcgen05.fence::after_thread_sync after the "
                                    "synchronisation (9.7.16.6.4)"),
    # initcheck
    "uninit-shared": ("initcheck", ERROR, "a read of shared memory no one wrote"),
    "uninit-tmem": ("initcheck", ERROR,
                    "a read of Tensor Memory no tcgen05 operation wrote since its allocation"),
    "uninit-register": ("initcheck", WARNING, "a register read before any write to it"),
    # synccheck
    "divergent-aligned": ("synccheck", ERROR,
                          "a .aligned instruction executed by part of a warp while its other "
                          "threads are elsewhere"),
    # mbarrier
    "mbarrier-overflow": ("synccheck", ERROR,
                          "one instruction's arrivals on an mbarrier exceed its pending count "
                          "(they complete the phase and run into the next)"),
    # poison values (machine/poison.py)
    "poison-address": ("poison", WARNING,
                       "a load read memory through an address computed from a value the PTX "
                       "ISA leaves unspecified (an integer division by zero, ...); every byte "
                       "was in bounds, so it ran with the hardware's bits, and the data it read "
                       "is unspecified in turn (ptxsim follows it and stops where it is used)"),
    "mbarrier-phase-skipped": ("mbarrier", WARNING,
                               "a parity wait returned for a phase two or more phases after "
                               "the one this warp last waited for: the phases between were "
                               "never waited for (a phase-parity confusion)"),
}


@dataclass
class Access:
    """The earlier access a finding conflicts with."""
    line: int | None
    instruction: str
    what: str                         # "write by warp 1 of CTA (0, 0, 0)", "tcgen05.mma", ...
    file: str | None = None


@dataclass
class Finding:
    kind: str
    message: str
    line: int | None
    instruction: str
    file: str | None = None
    cta: tuple | None = None          # %ctaid of the offending thread
    warp: int | None = None           # warp in its CTA
    lane: int | None = None
    where: str = ""                   # "shared::cta 0x1a0", "TMEM lane 33 column 64", ...
    earlier: Access | None = None
    count: int = 1                    # how many times the same finding was hit

    @property
    def severity(self) -> str:
        return KINDS[self.kind][1]

    @property
    def tool(self) -> str:
        return KINDS[self.kind][0]

    def location(self) -> str:
        return f"{self.file or '<ptx>'}:{self.line}"

    def __str__(self) -> str:
        who = ", ".join(f"{k} {v}" for k, v in (("CTA", self.cta), ("warp", self.warp),
                                                ("lane", self.lane)) if v is not None)
        s = (f"{self.location()}: {self.severity}: [{self.kind}] {self.message} "
             f"({who}{'; ' + self.where if self.where else ''})\n    {self.instruction}")
        if self.earlier is not None:
            s += (f"\n    earlier: line {self.earlier.line}: {self.earlier.instruction} "
                  f"({self.earlier.what})")
        if self.count > 1:
            s += f"\n    ({self.count} times)"
        return s

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        """The Finding `as_dict` wrote (e.g. read back from a JSON report)."""
        e = d.get("earlier")
        return cls(d["kind"], d["message"], d.get("line"), d.get("instruction", ""),
                   d.get("file"), tuple(d["cta"]) if d.get("cta") is not None else None,
                   d.get("warp"), d.get("lane"), d.get("where", ""),
                   Access(**e) if e else None, d.get("count", 1))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = self.severity
        d["tool"] = self.tool
        d["cta"] = list(self.cta) if self.cta is not None else None
        return d


@dataclass
class Findings:
    """The findings of one launch, in the order first seen; a repeat of (kind, line, earlier
    line) adds to the first one's count."""
    items: list[Finding] = field(default_factory=list)
    limit: int = 1000
    _index: dict = field(default_factory=dict, repr=False)

    def add(self, f: Finding) -> Finding:
        key = (f.kind, f.line, f.instruction,
               f.earlier.line if f.earlier is not None else None)
        old = self._index.get(key)
        if old is not None:
            old.count += f.count
            return old
        if len(self.items) < self.limit:
            self.items.append(f)
            self._index[key] = f
        return f

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.items if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.items if f.severity == WARNING]

    def kinds(self) -> list[str]:
        return [f.kind for f in self.items]

    def to_json(self) -> str:
        return json.dumps([f.as_dict() for f in self.items], indent=2)

    def table(self):
        """A rich Table of the findings (cell text is literal, not rich markup)."""
        from rich.table import Table
        from rich.text import Text
        t = Table(title=f"ptxsim sanitizer: {len(self.errors)} error(s), "
                        f"{len(self.warnings)} warning(s)")
        for col in ("severity", "kind", "PTX line", "CTA / warp / lane", "finding",
                    "earlier access", "count"):
            t.add_column(col, overflow="fold")
        for f in self.items:
            earlier = (f"line {f.earlier.line}: {f.earlier.instruction}\n({f.earlier.what})"
                       if f.earlier else "")
            t.add_row(Text(f.severity, style="red" if f.severity == ERROR else "yellow"),
                      Text(f.kind), Text(f.location()), Text(f"{f.cta} / {f.warp} / {f.lane}"),
                      Text(f"{f.instruction}\n{f.message}" + (f"\n{f.where}" if f.where
                                                                 else "")),
                      Text(earlier), Text(str(f.count)))
        return t

    def __str__(self) -> str:
        if not self.items:
            return "no findings"
        return "\n".join(str(f) for f in self.items)


def report_launch(kernel: str, findings, file) -> None:
    """A front door's report of one launch's findings (ptxsim exec / ptxsim cute, to stderr):
    a header line, then each finding as `Finding.__str__` writes it (PTX file:line, severity,
    kind, message, CTA / warp / lane, the earlier access), indented."""
    items = list(findings)
    if not items:
        return
    n_err = sum(f.severity == ERROR for f in items)
    print(f"ptxsim sanitizer: {kernel}: {n_err} error(s), {len(items) - n_err} warning(s)",
          file=file)
    for f in items:
        print("  " + str(f).replace("\n", "\n  "), file=file)
