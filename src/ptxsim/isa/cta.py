"""The state one tcgen05.mma reads and writes: a CTA (or the two CTAs of a CTA pair).

A CTA here is what the tensor core sees of it (PTX ISA 9.7.16.10): its shared memory (bytes,
indexed by shared-memory address), its Tensor Memory (`tmem.TensorMemory`), and the collector
buffers of its tensor core -- one for A (`.collector::a::*`, activation-stationary MMAs) and four
for B (`.collector::b0..b3::*`, weight-stationary `.ws` MMAs), 9.7.16.10 "collector buffer".

A CTA pair (9.7.16.5.1) is two such CTAs whose %cluster_ctarank differs in the last bit; the
.cta_group::2 MMA reads A, B, scale factors and metadata from both and writes D into both.

The kernel executor holds one `CtaState` per CTA and hands the pair to `tcgen05_mma` for
.cta_group::2; the single-instruction API builds one directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import OperandError, UndefinedBehavior
from ptxsim.isa.tmem import CtaPair, TensorMemory

SMEM_BYTES_DEFAULT = 228 * 1024          # sm_100: 228 KB of shared memory per SM


@dataclass
class CollectorBuffer:
    """One collector buffer: whether a fill is live, which operand it holds, and its bits.

    The spec lets the tensor core reuse the buffer *or* reload from memory ("reuse is
    opportunistic"), so a program is only correct if both give the same result: ptxsim keeps
    the filled bits and refuses a `use` whose operand differs from them (CollectorBufferError).
    """
    valid: bool = False
    source: tuple | None = None        # ("smem", descriptor) or ("tmem", address)
    bits: np.ndarray | None = None     # the operand matrix as filled

    def fill(self, source: tuple, bits: np.ndarray) -> None:
        self.valid, self.source, self.bits = True, source, np.array(bits, copy=True)

    def discard(self) -> None:
        self.valid, self.source, self.bits = False, None, None


def _smem_array(smem, size: int | None) -> np.ndarray:
    if smem is None:
        return np.zeros(size or SMEM_BYTES_DEFAULT, np.uint8)
    if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1:
        raise OperandError("shared memory must be a 1-D uint8 numpy array (byte address -> byte)")
    return smem


@dataclass
class CtaState:
    """One CTA as the tensor core sees it: shared memory, Tensor Memory, collector buffers."""
    smem: np.ndarray = None
    tmem: TensorMemory = None
    rank: int = 0                                   # %cluster_ctarank (its last bit: even/odd)
    exited: bool = False
    collector_a: CollectorBuffer = field(default_factory=CollectorBuffer)
    collector_b: tuple = field(default_factory=lambda: tuple(CollectorBuffer() for _ in range(4)))

    def __post_init__(self):
        self.smem = _smem_array(self.smem, None)
        if self.tmem is None:
            self.tmem = TensorMemory(cta_rank=self.rank)
        if not isinstance(self.tmem, TensorMemory):
            raise OperandError("tmem must be a ptxsim.isa.tmem.TensorMemory")

    @classmethod
    def new(cls, smem_bytes: int = SMEM_BYTES_DEFAULT, rank: int = 0, strict: bool = True):
        return cls(smem=np.zeros(smem_bytes, np.uint8),
                   tmem=TensorMemory(strict=strict, cta_rank=rank), rank=rank)

    def collector(self, buffer: str) -> CollectorBuffer:
        """The buffer named by a .collector qualifier: 'a', 'b0', 'b1', 'b2', 'b3'."""
        if buffer == "a":
            return self.collector_a
        if buffer in ("b0", "b1", "b2", "b3"):
            return self.collector_b[int(buffer[1])]
        raise OperandError(f"collector buffer '{buffer}' is not one of a, b0, b1, b2, b3 "
                           "(9.7.16.10.9.1, 9.7.16.10.9.3)")


@dataclass
class CtaPairState:
    """The two CTAs of a CTA pair (9.7.16.5.1): `even` (rank bit 0 = 0) and `odd`."""
    even: CtaState = None
    odd: CtaState = None

    def __post_init__(self):
        if self.even is None:
            self.even = CtaState.new(rank=0)
        if self.odd is None:
            self.odd = CtaState.new(rank=1)
        if self.even.rank % 2 != 0 or self.odd.rank != self.even.rank + 1:
            raise OperandError(f"a CTA pair is two CTAs whose %cluster_ctarank differs only in "
                               f"the last bit, even first; got ranks {self.even.rank}, "
                               f"{self.odd.rank} (9.7.16.5.1)")

    @classmethod
    def new(cls, smem_bytes: int = SMEM_BYTES_DEFAULT, strict: bool = True):
        return cls(CtaState.new(smem_bytes, 0, strict), CtaState.new(smem_bytes, 1, strict))

    @property
    def ctas(self) -> tuple[CtaState, CtaState]:
        return self.even, self.odd

    @property
    def tmem_pair(self) -> CtaPair:
        """The two Tensor Memories as a tmem.CtaPair (for tcgen05.alloc/cp/ld .cta_group::2)."""
        return CtaPair(even=self.even.tmem, odd=self.odd.tmem, even_exited=self.even.exited,
                       odd_exited=self.odd.exited)

    def check_active(self, what: str) -> None:
        # Table 46: "the peer CTA should be active and should not have exited"
        for c in self.ctas:
            if c.exited:
                raise UndefinedBehavior(f"{what}: CTA {c.rank} of the CTA pair has exited; with "
                                        ".cta_group::2 the peer CTA must be active (9.7.16.5, "
                                        "Table 46)")


def ctas_of(state, cta_group: int, what: str) -> tuple[CtaState, ...]:
    """The CTAs an instruction with `.cta_group::cta_group` touches, in rank order."""
    if cta_group == 1:
        if isinstance(state, CtaPairState):
            raise OperandError(f"{what}: .cta_group::1 acts on one CTA; pass that CtaState, not "
                               "the CtaPairState")
        if not isinstance(state, CtaState):
            raise OperandError(f"{what}: state must be a ptxsim.isa.cta.CtaState")
        if state.exited:
            raise UndefinedBehavior(f"{what}: issued by CTA {state.rank}, which has exited")
        return (state,)
    if cta_group == 2:
        if not isinstance(state, CtaPairState):
            raise OperandError(f"{what}: .cta_group::2 acts on a CTA pair; pass a CtaPairState "
                               "(9.7.16.5.1)")
        state.check_active(what)
        return state.ctas
    raise OperandError(f"{what}: .cta_group::{cta_group} is not ::1 or ::2")
