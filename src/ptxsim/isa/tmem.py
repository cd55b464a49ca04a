"""Tensor Memory: the per-CTA state and its allocator (PTX ISA 9.7.16.1, 9.7.16.5, 9.7.16.7).

Tensor Memory is 128 lanes x 512 columns of 32-bit cells per CTA (9.7.16.1). A 32-bit Tensor
Memory address holds the lane in bits [31:16] and the column in bits [15:0] (9.7.16.1.1).

Allocation is by columns, all 128 lanes at once, in powers of two within [32, 512] (9.7.16.1.2,
9.7.16.7.1). `tcgen05.alloc` writes the address of the allocation to shared memory; it *blocks*
while the columns are not available, so a request that can never be satisfied is a deadlock
(`TmemAllocBlocked` here; the kernel executor may instead retry after another warp deallocates).
Every misuse the spec names is an error:

- nCols not a power of two or outside [32, 512]                       -> TmemAllocError
- alloc after tcgen05.relinquish_alloc_permit                         -> TmemAllocError
- nCols larger than the previous allocation ("should not increase")  -> TmemAllocError
- dealloc of something that is not a live allocation (double free,
  foreign range, size mismatch, lane bits set)                        -> TmemAllocError
- mixing .cta_group::1 and ::2 in one kernel (also cp / shift)       -> CtaGroupMismatch
- threads of the warp giving different nCols                          -> UndefinedBehavior
- columns still allocated at kernel exit                              -> TmemLeakError

Where the hardware places an allocation is not specified; ptxsim uses the lowest free column
that is a multiple of nCols (a buddy allocator). Programs must use the address written to shared
memory, never assume one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import (CtaGroupMismatch, PtxValidationError, TmemAccessError,
                           TmemAllocBlocked, TmemAllocError, TmemLeakError, UndefinedBehavior)
from ptxsim.isa.legality import Form, Imm, Operand, Slot, check_form, check_notes
from ptxsim.isa.targets import TCGEN05

N_LANES = 128          # 9.7.16.1
N_COLUMNS = 512        # 9.7.16.1 (sm_100a / sm_100f)
LANES_PER_WARP = 32    # 9.7.16.8.1, Access restrictions table
ALLOC_MIN_COLUMNS = 32   # 9.7.16.7.1: "The unit of allocation ... is 32 columns"
ALLOC_MAX_COLUMNS = 512  # 9.7.16.7.1: "nCols must be within the range [32, 512]"

LANE_SHIFT = 16        # 9.7.16.1.1: lane index in bits [31:16]
COLUMN_MASK = 0xFFFF   # 9.7.16.1.1: column index in bits [15:0]


# ----------------------------------------------------------------------- legality, as data
# The one table of the Tensor Memory instructions without data movement (alloc / dealloc /
# relinquish_alloc_permit 9.7.16.7.1, fence 9.7.16.11.1, commit 9.7.16.12.1); tcgen05.ld/st/
# ld.red/wait are in tmem_ldst.FORMS, tcgen05.cp/shift in tmem_cp.FORMS. The isa functions below
# and the front-end validator (ptx/legality/tcgen05.py) read the same rows (ptxsim.isa.legality).
# Every tcgen05 instruction: PTX ISA 8.6; Target ISA notes TCGEN05 (ptxsim.isa.targets).
TCGEN05_SINCE = (8, 6)
CTA_GROUP = Slot.of(".cta_group", ".cta_group::1 .cta_group::2", True)
SYNC = Slot.of(".sync", ".sync", True)
ALIGNED = Slot.of(".aligned", ".aligned", True)
B32 = Slot.of("type", ".b32", True)
# 9.7.16.7.1: "The operand nCols must be within the range [32, 512] ... must be power of 2."
NCOLS = Imm(ALLOC_MIN_COLUMNS, ALLOC_MAX_COLUMNS, pow2=True, what="nCols")
# 9.7.16.12.1: ctaMask, a 16-bit register, exactly with .multicast::cluster
COMMIT_MULTICAST = Slot.of(".multicast", ".multicast::cluster")


def _tcgen05(name: str, slots, operands, section: str) -> Form:
    return Form(name, name, tuple(slots), tuple(operands), TCGEN05_SINCE, TCGEN05, section)


FORMS: dict[str, Form] = {f.name: f for f in [
    # tcgen05.alloc.cta_group.sync.aligned{.shared::cta}.b32 [dst], nCols;
    _tcgen05("tcgen05.alloc", (CTA_GROUP, SYNC, ALIGNED, Slot.of(".shared::cta", ".shared::cta"), B32),
             (Operand("dst", "addr"), Operand("nCols", "r32|imm", NCOLS)), "9.7.16.7.1"),
    # tcgen05.dealloc.cta_group.sync.aligned.b32 taddr, nCols;
    _tcgen05("tcgen05.dealloc", (CTA_GROUP, SYNC, ALIGNED, B32),
             (Operand("taddr", "r32|imm"), Operand("nCols", "r32|imm", NCOLS)), "9.7.16.7.1"),
    # tcgen05.relinquish_alloc_permit.cta_group.sync.aligned;
    _tcgen05("tcgen05.relinquish_alloc_permit", (CTA_GROUP, SYNC, ALIGNED), (), "9.7.16.7.1"),
    # tcgen05.fence::before_thread_sync / ::after_thread_sync;
    _tcgen05("tcgen05.fence",
             (Slot.of("::kind", "::before_thread_sync ::after_thread_sync", True),), (),
             "9.7.16.11.1"),
    # tcgen05.commit.cta_group.completion_mechanism{.shared::cluster}{.multicast}.b64 [mbar]
    #   {, ctaMask};  .completion_mechanism = { .mbarrier::arrive::one }
    _tcgen05("tcgen05.commit",
             (CTA_GROUP, Slot.of(".completion_mechanism", ".mbarrier::arrive::one", True),
              Slot.of(".shared::cluster", ".shared::cluster"), COMMIT_MULTICAST,
              Slot.of("type", ".b64", True)),
             (Operand("mbar", "addr"), Operand("ctaMask", "r16|imm", optional=True)), "9.7.16.12.1"),
]}
# the cross-field rule of tcgen05.commit: ctaMask is given exactly with .multicast::cluster
COMMIT_COUNT_RULE = "ctaMask is given exactly with .multicast::cluster"


def commit_operand_count(multicast: bool) -> int:
    """Operands of tcgen05.commit: [mbar], plus ctaMask with .multicast::cluster (9.7.16.12.1)."""
    return 2 if multicast else 1


def check(opcode: str, qualifiers=(), operands=(), target: str | None = None,
          ptx_version=None) -> Form:
    """Raise PtxValidationError unless `opcode qualifiers operands` is legal per FORMS (and, when
    given, on `target` with PTX ISA `ptx_version`). Operands: int for an immediate, str for a
    register name ("[%r1]" for an address). Returns the form."""
    if opcode not in FORMS:
        raise PtxValidationError(f"'{opcode}' is not one of {', '.join(FORMS)} (9.7.16.7, "
                                 "9.7.16.11-12)")
    f = FORMS[opcode]
    got = check_form(f, tuple(qualifiers), tuple(operands), target, ptx_version)
    if opcode == "tcgen05.commit":
        n = commit_operand_count(got[".multicast"] is not None)
        if len(operands) != n:
            raise PtxValidationError(f"'{opcode}{''.join(qualifiers)}' (9.7.16.12.1): takes {n} "
                                     f"operand{'s' if n > 1 else ''} ({COMMIT_COUNT_RULE}), got "
                                     f"{len(operands)}")
    return f


def check_target(opcode: str, target: str | None = None, ptx_version=None) -> None:
    """The PTX ISA / Target ISA notes of `opcode` (a key of FORMS) at `target` and
    `ptx_version` (None: not checked); PtxValidationError when not available."""
    check_notes(FORMS[opcode], target, ptx_version)


def tmem_address(lane, column):
    """Pack (lane, column) into a 32-bit Tensor Memory address (9.7.16.1.1). Vectorised."""
    lane = np.asarray(lane, dtype=np.int64)
    column = np.asarray(column, dtype=np.int64)
    out = ((lane << LANE_SHIFT) | (column & COLUMN_MASK)).astype(np.uint32)
    return int(out) if out.ndim == 0 else out


def split_address(taddr):
    """Unpack a 32-bit Tensor Memory address into (lane, column) (9.7.16.1.1). Vectorised."""
    t = np.asarray(taddr, dtype=np.int64) & 0xFFFFFFFF
    lane, column = t >> LANE_SHIFT, t & COLUMN_MASK
    if lane.ndim == 0:
        return int(lane), int(column)
    return lane, column


def warp_lane_range(warp: int) -> tuple[int, int]:
    """Lanes [lo, hi) that warp `warp` of the CTA may reach with tcgen05.ld/st (9.7.16.8.1)."""
    q = int(warp) % 4
    return LANES_PER_WARP * q, LANES_PER_WARP * (q + 1)


def _check_ncols(ncols, what: str) -> int:
    """9.7.16.7.1: nCols is a power of two in [32, 512]; all threads of the warp agree."""
    arr = np.asarray(ncols)
    if arr.ndim > 0:
        if arr.size == 0:
            raise TmemAllocError(f"{what}: nCols is empty")
        if np.any(arr != arr.flat[0]):
            raise UndefinedBehavior(f"{what}: threads of the warp gave different nCols "
                                    f"{sorted(set(int(x) for x in arr.flat))}; 9.7.16.7.1 calls "
                                    "this undefined")
        arr = arr.flat[0]
    n = int(arr)
    if not NCOLS.ok(n):
        raise TmemAllocError(f"{what}: nCols = {n} must be a power of two in "
                             f"[{ALLOC_MIN_COLUMNS}, {ALLOC_MAX_COLUMNS}] (9.7.16.7.1)")
    return n


@dataclass
class TensorMemory:
    """One CTA's Tensor Memory: `cells` (128 x 512 uint32) plus the allocator state.

    `strict=True` makes tcgen05.ld/st/cp/shift refuse columns that are not allocated
    (TmemAccessError); the hardware result of such an access is not specified.
    """

    cells: np.ndarray = field(default_factory=lambda: np.zeros((N_LANES, N_COLUMNS), np.uint32))
    strict: bool = True
    cta_rank: int = 0
    allocations: dict = field(default_factory=dict)   # start column -> nCols
    permit_relinquished: bool = False
    last_alloc_ncols: int | None = None
    cta_group: int | None = None                      # first .cta_group used by this kernel
    freed: dict = field(default_factory=dict)         # start column -> nCols, for messages

    def __post_init__(self):
        if self.cells.shape != (N_LANES, N_COLUMNS) or self.cells.dtype != np.uint32:
            raise TmemAccessError(f"Tensor Memory cells must be uint32 {N_LANES}x{N_COLUMNS}, "
                                  f"got {self.cells.dtype} {self.cells.shape}")

    # -- allocation state -------------------------------------------------------------------
    @property
    def allocated_mask(self) -> np.ndarray:
        """Boolean (512,) column mask of live allocations."""
        mask = np.zeros(N_COLUMNS, bool)
        for start, n in self.allocations.items():
            mask[start:start + n] = True
        return mask

    def _use_cta_group(self, cta_group: int, what: str) -> None:
        if cta_group not in (1, 2):
            raise TmemAllocError(f"{what}: .cta_group::{cta_group} is not one of ::1, ::2")
        if self.cta_group is None:
            self.cta_group = cta_group
        elif self.cta_group != cta_group:
            raise CtaGroupMismatch(f"{what}: .cta_group::{cta_group} after .cta_group::"
                                 f"{self.cta_group} in the same kernel; all tcgen05 instructions "
                                 "of a kernel must use the same .cta_group (9.7.16.7.1)")

    def _free_start(self, ncols: int) -> int | None:
        mask = self.allocated_mask
        for start in range(0, N_COLUMNS, ncols):
            if not mask[start:start + ncols].any():
                return start
        return None

    def _check_can_alloc(self, ncols, what: str) -> int:
        n = _check_ncols(ncols, what)
        if self.permit_relinquished:
            raise TmemAllocError(f"{what}: this CTA executed tcgen05.relinquish_alloc_permit; "
                                 "allocating afterwards is illegal (9.7.16.7.1)")
        if self.last_alloc_ncols is not None and n > self.last_alloc_ncols:
            raise TmemAllocError(f"{what}: nCols = {n} is larger than the previous allocation "
                                 f"({self.last_alloc_ncols}); the number of columns should not "
                                 "increase between two allocations of a CTA (9.7.16.7.1)")
        return n

    def _commit_alloc(self, start: int, n: int) -> int:
        self.allocations[start] = n
        self.freed.pop(start, None)
        self.last_alloc_ncols = n
        return tmem_address(0, start)

    def try_alloc(self, ncols, cta_group: int = 1, target: str | None = None,
                  ptx_version=None) -> int | None:
        """tcgen05.alloc.cta_group::1: the address, or None while the instruction would block.
        With `target` / `ptx_version`, first the notes of FORMS (PtxValidationError)."""
        what = "tcgen05.alloc"
        check_target(what, target, ptx_version)
        self._use_cta_group(cta_group, what)
        n = self._check_can_alloc(ncols, what)
        start = self._free_start(n)
        return None if start is None else self._commit_alloc(start, n)

    def alloc(self, ncols, smem: np.ndarray | None = None, dst: int | None = None,
              cta_group: int = 1, target: str | None = None, ptx_version=None) -> int:
        """tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], nCols.

        Returns the allocated address; with `smem` (a uint8 shared-memory array) and `dst`
        also stores it there as a little-endian .b32, like the instruction.
        """
        taddr = self.try_alloc(ncols, cta_group, target, ptx_version)
        if taddr is None:
            raise TmemAllocBlocked(
                f"tcgen05.alloc: no {_check_ncols(ncols, 'tcgen05.alloc')} contiguous free "
                f"columns (live allocations {self.describe()}); the instruction blocks until "
                "another warp deallocates (9.7.16.7.1), which never happens here")
        if smem is not None:
            write_address(smem, dst, taddr)
        return taddr

    def dealloc(self, taddr, ncols, cta_group: int = 1, target: str | None = None,
                ptx_version=None) -> None:
        """tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, nCols."""
        what = "tcgen05.dealloc"
        check_target(what, target, ptx_version)
        self._use_cta_group(cta_group, what)
        n = _check_ncols(ncols, what)
        t = np.asarray(taddr)
        if t.ndim > 0:
            if np.any(t != t.flat[0]):
                raise UndefinedBehavior(f"{what}: threads of the warp gave different taddr")
            t = t.flat[0]
        lane, column = split_address(int(t))
        start = self._check_dealloc(lane, column, n, what)
        del self.allocations[start]
        self.freed[start] = n

    def _check_dealloc(self, lane: int, column: int, n: int, what: str) -> int:
        if lane != 0:
            raise TmemAllocError(f"{what}: taddr has lane {lane}; an allocation address has "
                                 "lane 0 (allocations span all 128 lanes, 9.7.16.1.2)")
        if column in self.allocations:
            if self.allocations[column] != n:
                raise TmemAllocError(f"{what}: nCols = {n} but the allocation at column {column} "
                                     f"has {self.allocations[column]} columns")
            return column
        if column in self.freed:
            raise TmemAllocError(f"{what}: column {column} ({self.freed[column]} columns) was "
                                 "already deallocated (double free)")
        raise TmemAllocError(f"{what}: column {column} is not the start of a live allocation "
                             f"(live: {self.describe()}); taddr must point to a previous "
                             "allocation (9.7.16.7.1)")

    def relinquish_alloc_permit(self, cta_group: int = 1, target: str | None = None,
                                ptx_version=None) -> None:
        """tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned."""
        check_target("tcgen05.relinquish_alloc_permit", target, ptx_version)
        self._use_cta_group(cta_group, "tcgen05.relinquish_alloc_permit")
        self.permit_relinquished = True

    def leaks(self) -> list[tuple[int, int]]:
        """Live allocations as (start column, nCols)."""
        return sorted(self.allocations.items())

    def check_exit(self) -> None:
        """Kernel exit: everything allocated must have been deallocated (9.7.16.7.1)."""
        if self.allocations:
            raise TmemLeakError(f"CTA {self.cta_rank}: Tensor Memory still allocated at kernel "
                                f"exit: {self.describe()}; all of it must be deallocated with "
                                "tcgen05.dealloc before the kernel exits (9.7.16.7.1)",
                                leaks=self.leaks(), cta=self.cta_rank)

    def describe(self) -> str:
        return ", ".join(f"columns [{s}, {s + n})" for s, n in self.leaks()) or "none"

    # -- access checks used by ld / st / cp / shift -------------------------------------------
    def columns_allocated(self, first: int, stop: int) -> bool:
        """Are all columns first .. stop-1 allocated (or the checks off, strict=False)?"""
        if not self.strict:
            return True
        first, stop = int(first), min(int(stop), N_COLUMNS)
        if first < 0:
            return bool(self.allocated_mask[first:stop].all())
        # walk the live allocations in column order (they never overlap): no mask built
        pos = first
        for start, n in sorted(self.allocations.items()):
            if pos >= stop:
                break
            if start <= pos < start + n:
                pos = start + n
        return pos >= stop

    def check_allocated(self, lanes: np.ndarray, columns: np.ndarray, what: str,
                        warps: np.ndarray | None = None) -> None:
        if not self.strict:
            return
        ok = self.allocated_mask[columns]
        if not ok.all():
            i = np.flatnonzero(~ok.ravel())[0]
            raise TmemAccessError(f"{what}: column {int(columns.ravel()[i])} is not allocated "
                                  f"(live: {self.describe()})",
                                  warp=None if warps is None else int(warps.ravel()[i]),
                                  lane=int(lanes.ravel()[i]), column=int(columns.ravel()[i]))


def cells_of(tmem) -> np.ndarray:
    """The uint32 (128, 512) array behind a TensorMemory or a bare array (checked)."""
    cells = tmem.cells if isinstance(tmem, TensorMemory) else tmem
    if not isinstance(cells, np.ndarray) or cells.shape != (N_LANES, N_COLUMNS) \
            or cells.dtype != np.uint32:
        raise TmemAccessError(f"Tensor Memory must be a TensorMemory or a uint32 "
                              f"{N_LANES}x{N_COLUMNS} array")
    return cells


def write_address(smem: np.ndarray, dst: int | None, taddr: int) -> None:
    """The .b32 store of tcgen05.alloc into shared memory (little-endian, 4-byte aligned)."""
    if dst is None:
        raise TmemAllocError("tcgen05.alloc: shared-memory array given without a dst offset")
    if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1:
        raise TmemAllocError("tcgen05.alloc: shared memory must be a 1-D uint8 array")
    if dst % 4 or not 0 <= dst <= smem.size - 4:
        raise TmemAllocError(f"tcgen05.alloc: dst = {dst:#x} is not a 4-byte aligned address "
                             f"inside shared memory of {smem.size} bytes")
    smem[dst:dst + 4] = np.frombuffer(np.uint32(taddr).tobytes(), np.uint8)


@dataclass
class CtaPair:
    """The two CTAs of a CTA pair (9.7.16.5.1): `even` (%cluster_ctarank bit 0 = 0) and `odd`.

    The .cta_group::2 forms of alloc / dealloc / relinquish act on both Tensor Memories: the
    two issuing warps (one per CTA) collectively get the same columns in each.
    """

    even: TensorMemory = field(default_factory=lambda: TensorMemory(cta_rank=0))
    odd: TensorMemory = field(default_factory=lambda: TensorMemory(cta_rank=1))
    odd_exited: bool = False
    even_exited: bool = False

    @property
    def ctas(self) -> tuple[TensorMemory, TensorMemory]:
        return self.even, self.odd

    def _check_peer(self, what: str) -> None:
        # Table 46: "the peer CTA should be active and should not have exited"
        if self.even_exited or self.odd_exited:
            raise UndefinedBehavior(f"{what}.cta_group::2: a CTA of the pair has exited; the "
                                    "peer CTA must be active (9.7.16.5, Table 46)")

    def alloc(self, ncols, smem: tuple | None = None, dst: int | None = None,
              target: str | None = None, ptx_version=None) -> int:
        what = "tcgen05.alloc"
        check_target(what, target, ptx_version)
        self._check_peer(what)
        for t in self.ctas:
            t._use_cta_group(2, what)
        n = max(t._check_can_alloc(ncols, what) for t in self.ctas)
        both = self.even.allocated_mask | self.odd.allocated_mask
        start = next((s for s in range(0, N_COLUMNS, n) if not both[s:s + n].any()), None)
        if start is None:
            raise TmemAllocBlocked(f"{what}.cta_group::2: no {n} contiguous columns free in both "
                                   f"CTAs (even: {self.even.describe()}; odd: "
                                   f"{self.odd.describe()}); the instruction blocks forever")
        taddr = 0
        for i, t in enumerate(self.ctas):
            taddr = t._commit_alloc(start, n)
            if smem is not None:
                write_address(smem[i], dst, taddr)
        return taddr

    def dealloc(self, taddr, ncols, target: str | None = None, ptx_version=None) -> None:
        what = "tcgen05.dealloc"
        check_target(what, target, ptx_version)
        self._check_peer(what)
        n = _check_ncols(ncols, what)
        lane, column = split_address(int(np.asarray(taddr).flat[0]))
        for t in self.ctas:
            t._use_cta_group(2, what)
            t._check_dealloc(lane, column, n, f"{what}.cta_group::2 (CTA {t.cta_rank})")
        for t in self.ctas:
            del t.allocations[column]
            t.freed[column] = n

    def relinquish_alloc_permit(self, target: str | None = None, ptx_version=None) -> None:
        check_target("tcgen05.relinquish_alloc_permit", target, ptx_version)
        self._check_peer("tcgen05.relinquish_alloc_permit")
        for t in self.ctas:
            t.relinquish_alloc_permit(cta_group=2)

    def check_exit(self) -> None:
        for t in self.ctas:
            t.check_exit()
