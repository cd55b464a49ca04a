"""Target architectures and PTX ISA versions, and the "Target ISA Notes" requirement language.

The spec's notes come in three shapes, transcribed as data:
  * `sm_100a`                                  -> Arch("sm_100a")          (that target only)
  * `sm_100f or higher in the same family`     -> Family("sm_100f", ptx)   (sm_100f/a, sm_103f/a)
  * `requires sm_80 or higher`                 -> AtLeast(80)              (any suffix)
A requirement (`Req`) is satisfied when any alternative is; an alternative may carry the PTX ISA
version from which it holds ("... from PTX ISA version 8.8").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ptxsim.errors import PtxValidationError

# The PTX ISA version each .target needs (PTX ISA 11.? ".target", release notes of each version).
TARGET_MIN_PTX = {
    "sm_90a": (8, 0), "sm_100a": (8, 6), "sm_101a": (8, 6), "sm_120a": (8, 7),
    "sm_100f": (8, 8), "sm_101f": (8, 8), "sm_103": (8, 8), "sm_103a": (8, 8), "sm_103f": (8, 8),
    "sm_120f": (8, 8), "sm_121": (8, 8), "sm_121a": (8, 8), "sm_121f": (8, 8),
    "sm_110": (9, 0), "sm_110a": (9, 0), "sm_110f": (9, 0),
    "sm_100": (8, 6), "sm_101": (8, 6), "sm_120": (8, 7), "sm_90": (7, 8), "sm_89": (7, 8),
    "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (9, 0), "sm_75": (6, 3),
}
# sm_101* was renamed sm_110* in PTX ISA 9.0 (Target ISA notes of every tcgen05 instruction).
RENAMED = {"sm_101": "sm_110", "sm_101a": "sm_110a", "sm_101f": "sm_110f"}
LATEST_PTX = (9, 1)            # the newest version the spec texts mention (mma.sp, 9.1)


def family_of(sm: int) -> int:
    """sm_100/sm_103 -> 10, sm_110 (and sm_101, renamed) -> 11, sm_120/sm_121 -> 12."""
    if sm == 101:
        return 11
    return sm // 10


@dataclass(frozen=True)
class Target:
    name: str          # "sm_100a"
    sm: int            # 100
    suffix: str        # "", "a", "f"

    @property
    def family(self) -> int:
        return family_of(self.sm)

    def __str__(self) -> str:
        return self.name


_TARGET_RE = re.compile(r"(?:sm|compute)_(\d+)([af]?)")


def parse_target(name: str) -> Target:
    m = _TARGET_RE.fullmatch(name.strip())
    if not m:
        raise PtxValidationError(f"unknown target '{name}' (expected e.g. sm_100a, sm_90a, sm_120f)")
    return Target("sm_" + m.group(1) + m.group(2), int(m.group(1)), m.group(2))


def parse_version(v) -> tuple[int, int]:
    if isinstance(v, tuple):
        return v
    m = re.fullmatch(r"(\d+)\.(\d+)", str(v).strip())
    if not m:
        raise PtxValidationError(f"malformed PTX ISA version '{v}' (expected MAJOR.MINOR, e.g. 8.7)")
    return int(m.group(1)), int(m.group(2))


def vstr(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


# ------------------------------------------------------------------------- requirement language
@dataclass(frozen=True)
class Arch:
    """Exactly this architecture-specific target (`sm_100a`)."""
    name: str
    ptx: tuple[int, int] | None = None

    def ok(self, t: Target, v) -> bool:
        names = {self.name, RENAMED.get(self.name, self.name)}
        return t.name in names or RENAMED.get(t.name) in names

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Family:
    """`sm_100f or higher in the same family`: same family, sm >= base, suffix f or a."""
    name: str
    ptx: tuple[int, int] | None = (8, 8)

    def ok(self, t: Target, v) -> bool:
        base = parse_target(RENAMED.get(self.name, self.name))
        tn = parse_target(RENAMED.get(t.name, t.name))
        return tn.suffix in ("a", "f") and tn.family == base.family and tn.sm >= base.sm

    def __str__(self) -> str:
        return f"{self.name} or higher in the same family"


@dataclass(frozen=True)
class AtLeast:
    """`sm_80 or higher` (any suffix)."""
    sm: int
    ptx: tuple[int, int] | None = None

    def ok(self, t: Target, v) -> bool:
        return t.sm >= self.sm

    def __str__(self) -> str:
        return f"sm_{self.sm} or higher"


@dataclass(frozen=True)
class Req:
    """Alternatives; satisfied when any alternative holds at this target and PTX version."""
    alternatives: tuple

    def __init__(self, *alts):
        object.__setattr__(self, "alternatives", tuple(alts))

    def ok(self, t: Target, v: tuple[int, int]) -> bool:
        return any(a.ok(t, v) and (a.ptx is None or v >= a.ptx) for a in self.alternatives)

    def __str__(self) -> str:
        return ", ".join(str(a) + (f" (PTX ISA {vstr(a.ptx)}+)" if a.ptx else "")
                         for a in self.alternatives)


ANY = Req(AtLeast(0))

# The note repeated on every tcgen05 instruction (9.7.16.7.1 ... 9.7.16.12.1):
#   sm_100a; sm_101a (renamed sm_110a in 9.0); from PTX ISA 8.8 sm_100f+ and sm_101f+ families;
#   sm_110f+ family.
TCGEN05 = Req(Arch("sm_100a"), Arch("sm_101a"), Family("sm_100f"), Family("sm_101f"),
              Family("sm_110f", (9, 0)))
# `.kind::i8` (9.7.16.10.9.1-4): sm_100a, sm_101a, sm_110a only.
TCGEN05_I8 = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_110a"))
