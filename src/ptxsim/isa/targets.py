"""Which target architecture allows what: data, not if-chains.

Each feature lists the `.target` names that support it, with the spec note it comes from. A
family target (`sm_100f`) also covers the later members of its family (`sm_103f`); the tables
below list them explicitly so that a reader checks one line against the PDF.
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.errors import PtxValidationError

# Targets that can run tcgen05 at all (9.7.16.7.1 .. 9.7.16.10.9, "Target ISA Notes").
# sm_101a was renamed sm_110a in PTX ISA 9.0; both spellings are accepted.
KNOWN_TARGETS: tuple[str, ...] = (
    "sm_90", "sm_90a",
    "sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f",
)


@dataclass(frozen=True)
class Feature:
    name: str
    targets: frozenset[str]
    source: str


_TCGEN05 = frozenset({"sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f",
                      "sm_110a", "sm_110f"})

FEATURES: dict[str, Feature] = {f.name: f for f in [
    Feature("tcgen05", _TCGEN05, "9.7.16.10.9.1 Target ISA Notes"),
    # .kind::i8 is arch-specific only: not on the family targets.
    Feature("tcgen05.mma.kind::i8", frozenset({"sm_100a", "sm_101a", "sm_110a"}),
            "9.7.16.10.9.1 Target ISA Notes"),
    # tcgen05.mma.sp with .kind::mxf4 / mxf4nvf4 is arch-specific only (sparse .kind::i8 follows
    # the .kind::i8 row above). ptxas 13.0 agrees (tests/isa/test_descriptors.py).
    Feature("tcgen05.mma.sp.kind::mxf4", frozenset({"sm_100a", "sm_101a", "sm_103a", "sm_110a"}),
            "9.7.16.10.9.2 Target ISA Notes"),
    # K = 96 (.kind::mxf4 / mxf4nvf4, instruction-descriptor bit 31).
    Feature("tcgen05.mma.k96", frozenset({"sm_103a"}), "9.7.16.2.1.1 Target ISA Note"),
    # Absolute-address mode of the leading-dimension stride (shared-memory descriptor bit 52).
    Feature("smem_desc.lbo_absolute", frozenset({"sm_103a"}), "9.7.16.4.1.1 Target ISA Note"),
]}


def check_target(target: str) -> str:
    if target not in KNOWN_TARGETS:
        raise PtxValidationError(f"unknown target '{target}'; known: {', '.join(KNOWN_TARGETS)}")
    return target


def supports(target: str, feature: str) -> bool:
    """True when `target` supports `feature` (a key of FEATURES)."""
    check_target(target)
    return target in FEATURES[feature].targets
