"""Per-thread fragment layouts of the warp-level MMA: dense `mma` (PTX ISA 9.7.14.5.x) and sparse
`mma.sp` (9.7.14.6.2).

A warp holds each matrix of `mma.sp` as a vector of 32-bit registers per thread. A `Fragment`
answers, for register r, lane l and sub-element s (the s-th `bits`-wide field from the LSB), which
element (row, col) of the matrix it is. The tables are built once per form (numpy, no per-thread
Python) and applied with fancy indexing to all warps at once.

Sources:
- A (compressed), B, C, D: the row/col formulas of 9.7.14.6.2.1-8 (`groupID = %laneid >> 2`,
  `threadID_in_group = %laneid % 4`) and, where those point to the dense `mma` fragments, the
  dense formulas of 9.7.14.5.x. They agree with CuTe's `mma_traits_sm80.hpp` /
  `mma_traits_sm120_sparse.hpp` ALayout/BLayout/CLayout (tests/isa/test_mma_sp_layout.py).
- Metadata: the spec's figures are missing. CuTe's sparse ELayouts (sm90 GMMA `ELayout_64x32`,
  `ELayout_64x16`, `ELayout_64x64`, whose figures the spec shares with the warp-level ones, and
  sm120 `SM120_SPARSE_16x8x64/128` `ELayout`) give the f16/bf16 m16n8k32, tf32 m16n8k16, 8-bit
  m16n8k64 and fp4 m16n8k128 layouts. The other shapes follow the same two patterns (see
  `METADATA_SPLIT`); hardware vectors (tests/isa/test_mma_sp_hw.py) settle them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

LANES = 32
M, N = 16, 8                      # every warp-level mma.sp shape is m16n8kK

_lane = np.arange(LANES)
GROUP_ID = _lane >> 2             # groupID
THREAD_IN_GROUP = _lane % 4       # threadID_in_group


@dataclass(frozen=True, eq=False)
class Fragment:
    """Register r / lane l / sub-element s  <->  matrix element (row[r,l,s], col[r,l,s]).

    `bits` 64 (f64): registers are uint64, one element each. `group` (same shape as row/col, or
    None): the independent product each element belongs to -- m8n8k4 .f16, where each of the four
    quad-pairs of a warp computes its own 8x8x4 MMA (9.7.14.5.1); unpack/pack then see W*4
    matrices, product g of warp w at index 4w + g."""
    name: str
    shape: tuple[int, int]        # (rows, cols) of the matrix the fragments tile
    bits: int                     # width of one sub-element inside the register
    row: np.ndarray               # (nregs, 32, reg_bits // bits)
    col: np.ndarray
    group: np.ndarray | None = None
    groups: int = 1

    @property
    def nregs(self) -> int:
        return self.row.shape[0]

    @property
    def per_reg(self) -> int:
        return self.row.shape[2]

    @property
    def dtype(self):
        return np.uint64 if self.bits == 64 else np.uint32

    def _index(self):
        g = self.group if self.group is not None else 0
        return g, self.row, self.col

    def unpack(self, regs: np.ndarray) -> np.ndarray:
        """regs (nregs, W, 32) -> element bits (W * groups, rows, cols), uint32 (uint64 for
        64-bit elements)."""
        regs = np.asarray(regs, dtype=self.dtype)
        shifts = (np.arange(self.per_reg) * self.bits).astype(self.dtype)
        mask = self.dtype((1 << self.bits) - 1)
        fields = (regs[:, :, :, None] >> shifts) & mask            # (nregs, W, 32, per_reg)
        w = regs.shape[1]
        out = np.zeros((w, self.groups) + self.shape, dtype=self.dtype)
        g, r, c = self._index()
        out[:, g, r, c] = np.moveaxis(fields, 1, 0)                # fields -> (W, nregs, 32, s)
        return out.reshape((w * self.groups,) + self.shape)

    def pack(self, matrix: np.ndarray) -> np.ndarray:
        """element bits (W * groups, rows, cols) -> regs (nregs, W, 32)."""
        matrix = np.asarray(matrix, dtype=self.dtype)
        matrix = matrix.reshape((-1, self.groups) + self.shape)
        mask = self.dtype((1 << self.bits) - 1)
        g, r, c = self._index()
        fields = matrix[:, g, r, c] & mask                          # (W, nregs, 32, per_reg)
        shifts = (np.arange(self.per_reg) * self.bits).astype(self.dtype)
        regs = np.bitwise_or.reduce(fields << shifts, axis=-1)      # (W, nregs, 32)
        return np.ascontiguousarray(np.moveaxis(regs, 0, 1))

    def where(self, row: int, col: int, group: int = 0) -> tuple[int, int, int]:
        """(register, lane, sub-element) holding element (row, col) of product `group`."""
        hit = (self.row == row) & (self.col == col)
        if self.group is not None:
            hit &= self.group == group
        r, l, s = np.nonzero(hit)
        return int(r[0]), int(l[0]), int(s[0])


def _grid(nregs: int, per_reg: int):
    r = np.arange(nregs)[:, None, None]
    s = np.arange(per_reg)[None, None, :]
    g = GROUP_ID[None, :, None]
    t = THREAD_IN_GROUP[None, :, None]
    shape = (nregs, LANES, per_reg)
    return [np.broadcast_to(x, shape) for x in (r, s, g, t)]


@lru_cache(maxsize=None)
def dense_a(m: int, k: int, bits: int) -> Fragment:
    """A of a dense mMn8kK mma (m 16 or 8), K columns of `bits`-bit elements (9.7.14.5.x
    "Multiplicand A"): register r holds 32/bits consecutive elements (one when 64-bit) of row
    groupID + 8*(r % (m/8)), from column threadID_in_group*(32/bits) + 4*(32/bits)*(r // (m/8)).
    (f16 m16n8k16: a0,a1 row g cols 2t,2t+1; a2,a3 row g+8; a4..a7 the same 8 columns on.)"""
    per = max(1, 32 // bits)
    blocks = m // 8
    nregs = m * k // (LANES * per)
    r, s, g, t = _grid(nregs, per)
    row = g + 8 * (r % blocks)
    col = t * per + s + 4 * per * (r // blocks)
    return Fragment(f"A(m{m}k{k},{bits}b)", (m, k), bits, row, col)


@lru_cache(maxsize=None)
def dense_b(k: int, bits: int) -> Fragment:
    """B, K x 8 (9.7.14.5.x "Multiplicand B"): register r holds 32/bits consecutive rows
    starting at threadID_in_group*(32/bits) + 4*(32/bits)*r, column groupID."""
    per = max(1, 32 // bits)
    nregs = k * N // (LANES * per)
    r, s, g, t = _grid(nregs, per)
    row = t * per + s + 4 * per * r
    col = g
    return Fragment(f"B(k{k},{bits}b)", (k, N), bits, row, col)


@lru_cache(maxsize=None)
def dense_c(m: int, bits: int) -> Fragment:
    """C / D, m x 8. 32- and 64-bit (f32, s32, f64): c0..c3 = (g, 2t), (g, 2t+1), (g+8, 2t),
    (g+8, 2t+1) (m = 8: c0, c1); f16: register r = row g + 8r, halves = columns 2t, 2t+1."""
    per = max(1, 32 // bits)
    nregs = m * N // (LANES * per)
    r, s, g, t = _grid(nregs, per)
    if per == 1:
        row = g + 8 * (r // 2)
        col = 2 * t + r % 2
    else:
        row = g + 8 * r
        col = 2 * t + s
    return Fragment(f"C/D(m{m},{bits}b)", (m, N), bits, row, col)


def a_fragment(k: int, bits: int) -> Fragment:
    """Compressed A of mma.sp m16n8k`k`, 16 x K/2 elements of `bits` (9.7.14.6.2.x "Multiplicand
    A"): the dense A fragment of K/2 columns -- the spec's `firstcol = threadID_in_group *
    2*(32/bits)` in dense columns (+ K/2 for the upper register pair)."""
    return dense_a(M, k // 2, bits)


def b_fragment(k: int, bits: int) -> Fragment:
    """B, K x 8 (the dense mma B fragments, 9.7.14.5.x)."""
    return dense_b(k, bits)


def c_fragment(bits: int) -> Fragment:
    """C / D, 16 x 8 (`dense_c`)."""
    return dense_c(M, bits)


# m8n8k4 with .f16 A/B (9.7.14.5.1): each quad-pair QP q = lanes 4q..4q+3 and 4q+16..4q+19
# computes its own 8x8x4 product; within it, `lo` = lane % 4 and `hi` = 4 for the upper four
# lanes. The spec's formulas agree with CuTe's SM70 traits (SM70_8x4_Row / _Col,
# SM70_8x8_16b / _32b with SM70_QuadPair = (4,2):(1,16)); the H200 settles them
# (tests/isa/test_mma_sync_hw.py).
_QP = (np.arange(LANES) >> 2) & 3
_LO = np.arange(LANES) % 4
_HI = 4 * (np.arange(LANES) >= 16)


def _qp_grid(nregs: int, per: int):
    r = np.arange(nregs)[:, None, None]
    s = np.arange(per)[None, None, :]
    i = r * per + s                                # element index a0.. / c0..
    shape = (nregs, LANES, per)
    lo, hi, qp = (np.broadcast_to(x[None, :, None], shape) for x in (_LO, _HI, _QP))
    return np.broadcast_to(i, shape), lo, hi, qp


@lru_cache(maxsize=None)
def m8n8k4_a(layout: str) -> Fragment:
    """A (8 x 4 f16 per quad-pair), a0..a3 in two f16x2 registers: .row -> (lo + hi, i);
    .col -> (i + hi, lo)."""
    i, lo, hi, qp = _qp_grid(2, 2)
    row, col = (lo + hi, i) if layout == "row" else (i + hi, lo)
    return Fragment(f"A(m8n8k4.{layout})", (8, 4), 16, row, col, qp, 4)


@lru_cache(maxsize=None)
def m8n8k4_b(layout: str) -> Fragment:
    """B (4 x 8 f16 per quad-pair), b0..b3: .col -> (k i, n lo + hi); .row -> (k lo, n i + hi)."""
    i, lo, hi, qp = _qp_grid(2, 2)
    row, col = (i, lo + hi) if layout == "col" else (lo, i + hi)
    return Fragment(f"B(m8n8k4.{layout})", (4, 8), 16, row, col, qp, 4)


@lru_cache(maxsize=None)
def m8n8k4_c(bits: int) -> Fragment:
    """C / D (8 x 8 per quad-pair): f16 c0..c7 in four f16x2 registers -> (lo + hi, i);
    f32 c0..c7 -> (lo & 1 + (i & 2) + hi, (i & 4) + (lo & 2) + (i & 1))."""
    if bits == 16:
        i, lo, hi, qp = _qp_grid(4, 2)
        row, col = lo + hi, i
    else:
        i, lo, hi, qp = _qp_grid(8, 1)
        row, col = (lo & 1) + (i & 2) + hi, (i & 4) + (lo & 2) + (i & 1)
    return Fragment(f"C/D(m8n8k4,{bits}b)", (8, 8), bits, row, col, qp, 4)


# ---------------------------------------------------------------------------------- metadata
# A metadata "unit" is what one index field positions inside its chunk:
#   "2:4"  one compressed element, 2-bit index (f16, bf16, 8-bit, f8f6f4 types)
#   "1:2"  one compressed tf32 element, 4-bit field (0b0100 -> position 0, 0b1110 -> 1)
#   "4:8"  one pair of compressed 4-bit elements, 2-bit pair index (u4/s4, mxf4* e2m1)
# How the 32-bit metadata registers of the threads of a group cover rows g and g+8 (CuTe
# ELayouts, see the module docstring):
#   "k"    each thread covers a K window of both rows: bits [0,16) row g, [16,32) row g+8;
#          thread j of the selected set takes window j (f16/bf16, tf32)
#   "row"  each thread covers one row: thread j -> row g + 8*(j%2), K window j//2 (8-bit, 4-bit)
METADATA_SPLIT = {"2:4/16": "k", "1:2": "k", "2:4/8": "row", "4:8": "row"}


@dataclass(frozen=True, eq=False)
class MetadataLayout:
    threads: int                  # threads of a group that supply metadata (1, 2 or 4)
    field_bits: int               # 2 or 4
    units: int                    # units per row of A
    row: np.ndarray               # (threads, 8 groups, fields per register)
    unit: np.ndarray

    def lanes(self, selector: int) -> np.ndarray:
        """(threads, 8): the lanes whose `e` register is read for sparsity selector `selector`."""
        j = np.arange(self.threads)[:, None]
        return 4 * np.arange(8)[None, :] + selector * self.threads + j

    def unpack(self, e: np.ndarray, selector: int) -> np.ndarray:
        """e (W, 32) uint32 -> index fields (W, 16, units) uint32."""
        e = np.asarray(e, dtype=np.uint32)
        fields = 32 // self.field_bits
        shifts = np.arange(fields, dtype=np.uint32) * self.field_bits
        vals = (e[:, self.lanes(selector), None] >> shifts) & np.uint32((1 << self.field_bits) - 1)
        out = np.zeros((e.shape[0], M, self.units), dtype=np.uint32)
        out[:, self.row, self.unit] = vals
        return out

    def pack(self, idx: np.ndarray, selector: int) -> np.ndarray:
        """index fields (W, 16, units) -> e (W, 32) uint32 (lanes that supply no metadata: 0)."""
        idx = np.asarray(idx, dtype=np.uint32)
        fields = 32 // self.field_bits
        shifts = np.arange(fields, dtype=np.uint32) * self.field_bits
        vals = idx[:, self.row, self.unit] << shifts                  # (W, threads, 8, fields)
        e = np.zeros((idx.shape[0], LANES), dtype=np.uint32)
        e[:, self.lanes(selector)] = np.bitwise_or.reduce(vals, axis=-1)
        return e

    def source_lanes(self, selector: int) -> np.ndarray:
        """(16, units): the lane whose metadata positions unit u of row m."""
        out = np.zeros((M, self.units), dtype=np.int64)
        out[self.row, self.unit] = np.broadcast_to(self.lanes(selector)[:, :, None], self.row.shape)
        return out


@lru_cache(maxsize=None)
def metadata_layout(k: int, pattern: str, abits: int) -> MetadataLayout:
    """Metadata layout of shape m16n8k`k` with sparsity `pattern` ("2:4", "1:2", "4:8")."""
    field_bits = 4 if pattern == "1:2" else 2
    units = k // 2 if pattern != "4:8" else k // 4
    fields = 32 // field_bits
    threads = M * units // (fields * 8)              # 16 rows x `units` fields over 8 groups
    key = "2:4/16" if pattern == "2:4" and abits == 16 else ("2:4/8" if pattern == "2:4" else pattern)
    j = np.arange(threads)[:, None, None]
    g = np.arange(8)[None, :, None]
    f = np.arange(fields)[None, None, :]
    shape = (threads, 8, fields)
    if METADATA_SPLIT[key] == "k":
        half = fields // 2
        row = g + 8 * (f // half)
        unit = j * half + f % half
    else:
        row = g + 8 * (j % 2)
        unit = (j // 2) * fields + f
    row, unit = (np.broadcast_to(x, shape) for x in (row, unit))
    return MetadataLayout(threads, field_bits, units, row, unit)
