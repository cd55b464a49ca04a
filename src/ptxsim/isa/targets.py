"""Target architectures, PTX ISA versions and the "Target ISA Notes" language: the one place that
parses a target name and knows the family / arch-specific compatibility rules.

Every other module (the isa/ instruction families, the ptx/ validator, the CLI) calls this one;
feature tables may live next to their instruction family, written in this module's vocabulary.

Target names (PTX ISA 5.x ".target", and the `--gpu-name` rules of `ptxas --help`):
  * `sm_100`   baseline: runs on sm_100 and later GPUs of any family;
  * `sm_100f`  family-specific: the features of the sm_10x family, runs on sm_100/sm_103;
  * `sm_100a`  arch-specific: every sm_100 feature, runs on sm_100 only.
Family = sm // 10, except sm_101 which was renamed sm_110 in PTX ISA 9.0 (family 11).

The spec's Target ISA notes come in three shapes, transcribed as data:
  * `sm_100a`                                  -> Arch("sm_100a")          (that target only)
  * `sm_100f or higher in the same family`     -> Family("sm_100f", ptx)   (sm_100f/a, sm_103f/a)
  * `requires sm_80 or higher`                 -> AtLeast(80)              (any suffix)
plus `AnyOfFamily(12)` for ptxas's reading of a bare `requires sm_120` (any sm_12x, any suffix).
A requirement (`Req`) is satisfied when any alternative is; an alternative may carry the PTX ISA
version from which it holds ("... from PTX ISA version 8.8"). A PTX version of None means "not
known": only the target is checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ptxsim.errors import TargetError

# ------------------------------------------------------------------------------ target names
# The PTX ISA version each .target needs (PTX ISA ".target", release notes of each version).
TARGET_MIN_PTX = {
    "sm_90a": (8, 0), "sm_100a": (8, 6), "sm_101a": (8, 6), "sm_120a": (8, 7),
    "sm_100f": (8, 8), "sm_101f": (8, 8), "sm_103": (8, 8), "sm_103a": (8, 8), "sm_103f": (8, 8),
    "sm_120f": (8, 8), "sm_121": (8, 8), "sm_121a": (8, 8), "sm_121f": (8, 8),
    "sm_110": (9, 0), "sm_110a": (9, 0), "sm_110f": (9, 0),
    "sm_100": (8, 6), "sm_101": (8, 6), "sm_120": (8, 7), "sm_90": (7, 8), "sm_89": (7, 8),
    "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (9, 0), "sm_75": (6, 3),
}
# every other .target ptxas 13.5 knows, with the lowest .version it assembles it with
PTXAS_TARGET_MIN_PTX = {
    **TARGET_MIN_PTX, "sm_107": (9, 4), "sm_107a": (9, 4), "sm_107f": (9, 4),
    # older targets: the lowest .version ptxas 13.5 assembles them with (it knows no version
    # below 2.3)
    "sm_10": (2, 3), "sm_11": (2, 3), "sm_12": (2, 3), "sm_13": (2, 3), "sm_20": (2, 3),
    "sm_21": (2, 3), "sm_30": (3, 0), "sm_32": (4, 0), "sm_35": (3, 1), "sm_37": (4, 1),
    "sm_50": (4, 0), "sm_52": (4, 1), "sm_53": (4, 2), "sm_60": (5, 0), "sm_61": (5, 0),
    "sm_62": (5, 0), "sm_70": (5, 1), "sm_72": (6, 1),
}
# Every `.target` ptxas 13.5 knows (`Unsupported .target` for anything else, e.g. sm_1, sm_91,
# sm_80a, sm_90f), and every `.version` it knows (`Unsupported .version`): measured.
PTXAS_TARGETS = frozenset(PTXAS_TARGET_MIN_PTX)
PTXAS_VERSIONS = frozenset([(2, 3), (3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2), (4, 3),
                            (5, 0), (5, 1)] + [(6, m) for m in range(6)]
                           + [(7, m) for m in range(9)] + [(8, m) for m in range(9)]
                           + [(9, m) for m in range(6)])
PTXAS_LATEST = (9, 5)
# `.target` options besides the SM name (PTX ISA 11.1.2 ".target")
TARGET_OPTIONS = frozenset({"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"})
# sm_101* was renamed sm_110* in PTX ISA 9.0 (Target ISA notes of every tcgen05 instruction).
RENAMED = {"sm_101": "sm_110", "sm_101a": "sm_110a", "sm_101f": "sm_110f"}
LATEST_PTX = (9, 1)            # the newest version the spec texts mention (mma.sp, 9.1)


def family_of(sm: int) -> int:
    """sm_100/sm_103 -> 10, sm_110 (and sm_101, renamed) -> 11, sm_120/sm_121 -> 12."""
    return 11 if sm == 101 else sm // 10


@dataclass(frozen=True)
class Target:
    name: str          # "sm_100a"
    sm: int            # 100
    suffix: str        # "", "a", "f"

    @property
    def family(self) -> int:
        return family_of(self.sm)

    @property
    def canonical(self) -> "Target":
        """The PTX ISA 9.0 name (sm_101a -> sm_110a); itself for every other target."""
        return parse_target(RENAMED[self.name]) if self.name in RENAMED else self

    def __str__(self) -> str:
        return self.name


_TARGET_RE = re.compile(r"(?:sm|compute)_(\d+)([af]?)")


def parse_target(name) -> Target:
    """'sm_100a' -> Target('sm_100a', 100, 'a'). A Target is returned as is. Raises TargetError
    (a PtxValidationError and an OperandError) for anything else."""
    if isinstance(name, Target):
        return name
    m = _TARGET_RE.fullmatch(str(name).strip())
    if not m:
        raise TargetError(f"unknown target '{name}' (expected sm_<NN>[a|f], e.g. sm_90a, sm_100a, "
                          "sm_100f, sm_120a)")
    return Target("sm_" + m.group(1) + m.group(2), int(m.group(1)), m.group(2))


def parse_version(v) -> tuple[int, int]:
    """'8.7' or (8, 7) -> (8, 7)."""
    if isinstance(v, tuple) and len(v) == 2:
        return int(v[0]), int(v[1])
    m = re.fullmatch(r"(\d+)\.(\d+)", str(v).strip())
    if not m:
        raise TargetError(f"malformed PTX ISA version {v!r} (expected MAJOR.MINOR, e.g. '8.7' or (8, 7))")
    return int(m.group(1)), int(m.group(2))


def vstr(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def compatible(ptx_target, arch) -> bool:
    """Can PTX written for `ptx_target` be compiled for GPU `arch`? As ptxas 13.0 decides
    (tests/isa/test_targets.py COMPATIBLE, measured): sm_XY -> any arch numbered >= XY;
    sm_XYf -> any arch (plain, a or f) of the same family numbered >= XY; sm_XYa -> sm_XYa only
    (sm_101a and sm_110a being one target)."""
    p, a = parse_target(ptx_target), parse_target(arch)
    if p.suffix == "a":
        return a.canonical.name == p.canonical.name
    if p.suffix == "f":
        return a.family == p.family and a.sm >= p.sm
    return a.sm >= p.sm


# ------------------------------------------------------------------------- requirement language
@dataclass(frozen=True)
class Arch:
    """Exactly this architecture-specific target (`sm_100a`; sm_101a and sm_110a are one)."""
    name: str
    ptx: tuple[int, int] | None = None

    def ok(self, t: Target, v=None) -> bool:
        return parse_target(t).canonical.name == parse_target(self.name).canonical.name

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Family:
    """`sm_100f or higher in the same family`: same family, sm >= base, suffix f or a."""
    name: str
    ptx: tuple[int, int] | None = (8, 8)

    def ok(self, t: Target, v=None) -> bool:
        base, tn = parse_target(self.name).canonical, parse_target(t).canonical
        return tn.suffix in ("a", "f") and tn.family == base.family and tn.sm >= base.sm

    def __str__(self) -> str:
        return f"{self.name} or higher in the same family"


@dataclass(frozen=True)
class AtLeast:
    """`sm_80 or higher` (any suffix)."""
    sm: int
    ptx: tuple[int, int] | None = None

    def ok(self, t: Target, v=None) -> bool:
        return parse_target(t).sm >= self.sm

    def __str__(self) -> str:
        return f"sm_{self.sm} or higher"


@dataclass(frozen=True)
class AnyOfFamily:
    """Every target of one family, whatever its suffix (ptxas 13.0's reading of a bare
    `requires sm_120`: sm_120, sm_120a, sm_121f ... all pass)."""
    family: int
    ptx: tuple[int, int] | None = None

    def ok(self, t: Target, v=None) -> bool:
        return parse_target(t).family == self.family

    def __str__(self) -> str:
        return f"sm_{self.family}0 family"


@dataclass(frozen=True)
class Req:
    """Alternatives; satisfied when any alternative holds at this target and PTX version."""
    alternatives: tuple

    def __init__(self, *alts):
        object.__setattr__(self, "alternatives", tuple(alts))

    def ok(self, t, v=None) -> bool:
        """`t` a Target or a name; `v` the PTX ISA version, None to check the target only."""
        t = parse_target(t)
        v = None if v is None else parse_version(v)
        return any(a.ok(t, v) and (a.ptx is None or v is None or v >= a.ptx)
                   for a in self.alternatives)

    def targets(self, names=None) -> frozenset[str]:
        """The target names (default: every name of TARGET_MIN_PTX) that satisfy this, at any
        PTX version."""
        return frozenset(n for n in (TARGET_MIN_PTX if names is None else names) if self.ok(n))

    def __str__(self) -> str:
        return ", ".join(str(a) + (f" (PTX ISA {vstr(a.ptx)}+)" if a.ptx else "")
                         for a in self.alternatives)


ANY = Req(AtLeast(0))

# ------------------------------------------------------------------------ tcgen05 target notes
# The note repeated on every tcgen05 instruction (9.7.16.7.1 ... 9.7.16.12.1):
#   sm_100a; sm_101a (renamed sm_110a in 9.0); from PTX ISA 8.8 sm_100f+ and sm_101f+ families;
#   sm_110f+ family.
TCGEN05 = Req(Arch("sm_100a"), Arch("sm_101a"), Family("sm_100f"), Family("sm_101f"),
              Family("sm_110f", (9, 0)))
# `.kind::i8` (9.7.16.10.9.1-4): sm_100a, sm_101a, sm_110a only.
TCGEN05_I8 = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_110a"))
# tcgen05.mma.sp with .kind::mxf4 / mxf4nvf4 (9.7.16.10.9.2): arch-specific targets only;
# ptxas 13.0 agrees (tests/isa/test_descriptors.py). .scale_vec::1X/2X/4X (9.7.16.10.9.1,
# "requires sm_100a"; ptxas 13.0 rejects them on every 'f' target) has the same list.
ARCH_SPECIFIC_10X_11X = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_103a"), Arch("sm_110a"))
# "Argument scale-input-d requires sm_100a and is supported on sm_100f or higher in the same
# family" (9.7.16.10.9.1; ptxas 13.0 rejects it on sm_110a/f).
SCALE_INPUT_D = Req(Arch("sm_100a"), Family("sm_100f"))
# ".block16/.block32 requires sm_100f or sm_110f" (9.7.16.10.9.1).
BLOCK_N = Req(Family("sm_100f"), Family("sm_110f", (9, 0)))
# K = 96 (instruction-descriptor bit 31, 9.7.16.2.1.1) and the absolute-address LBO mode
# (shared-memory descriptor bit 52, 9.7.16.4.1.1): sm_103a only.
SM103A = Req(Arch("sm_103a"))

# Targets the tcgen05 descriptor tools (ptxsim decode / encode) accept.
KNOWN_TARGETS: tuple[str, ...] = (
    "sm_90", "sm_90a",
    "sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f",
)


@dataclass(frozen=True)
class Feature:
    name: str
    req: Req
    source: str

    @property
    def targets(self) -> frozenset[str]:
        """The known target names that have this feature (for messages and the CLI)."""
        return self.req.targets()


FEATURES: dict[str, Feature] = {f.name: f for f in [
    Feature("tcgen05", TCGEN05, "9.7.16.10.9.1 Target ISA Notes"),
    Feature("tcgen05.mma.kind::i8", TCGEN05_I8, "9.7.16.10.9.1 Target ISA Notes"),
    Feature("tcgen05.mma.sp.kind::mxf4", ARCH_SPECIFIC_10X_11X, "9.7.16.10.9.2 Target ISA Notes"),
    Feature("tcgen05.mma.scale_vec::NX", ARCH_SPECIFIC_10X_11X, "9.7.16.10.9.1 Target ISA Notes"),
    Feature("tcgen05.mma.scale_input_d", SCALE_INPUT_D, "9.7.16.10.9.1 Target ISA Notes"),
    Feature("tcgen05.mma.k96", SM103A, "9.7.16.2.1.1 Target ISA Note"),
    Feature("smem_desc.lbo_absolute", SM103A, "9.7.16.4.1.1 Target ISA Note"),
]}


def check_target(target: str) -> str:
    """`target` if it is one of KNOWN_TARGETS (the descriptor tools' list), else TargetError."""
    if target not in KNOWN_TARGETS:
        raise TargetError(f"unknown target '{target}'; known: {', '.join(KNOWN_TARGETS)}")
    return target


def supports(target: str, feature: str, ptx_version=None) -> bool:
    """True when `target` (one of KNOWN_TARGETS) supports `feature` (a key of FEATURES)."""
    check_target(target)
    return FEATURES[feature].req.ok(target, ptx_version)


__all__ = ["TARGET_MIN_PTX", "PTXAS_TARGET_MIN_PTX", "PTXAS_TARGETS", "PTXAS_VERSIONS", "PTXAS_LATEST", "TARGET_OPTIONS", "RENAMED", "LATEST_PTX", "family_of", "Target", "parse_target",
           "parse_version", "vstr", "compatible", "Arch", "Family", "AtLeast", "AnyOfFamily", "Req",
           "ANY", "TCGEN05", "TCGEN05_I8", "ARCH_SPECIFIC_10X_11X", "SCALE_INPUT_D", "BLOCK_N",
           "SM103A", "KNOWN_TARGETS", "Feature", "FEATURES", "check_target", "supports"]
