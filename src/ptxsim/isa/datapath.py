"""Data-path layouts A-G: where tcgen05.mma keeps D (and A, metadata, scale factors) in Tensor
Memory, and which warps reach them with tcgen05.ld/st (PTX ISA 9.7.16.10.5).

The selection table is transcribed from 9.7.16.10.5. The figures (205-218) are missing from our
copy of the text; the placements come from CuTe (include/cute/atom/mma_traits_sm100_frag.hpp:
tmem_frg, tmem_frg_ws, tmem_e_frg, tmem_sf_frg) and FACTS.md section 4:

  A  M=256, cta_group::2        D(m, n): CTA m/128, lane m%128, column n           (4x1)
  B  M=128, cta_group::2, dense D(m, n): CTA m/64,  lane m%64 + 64*(n / (N/2)),
                                         column n % (N/2)                           (2x2)
  C  M=128, cta_group::2, sparse D(m, n): CTA m/64, lane (m%16) + 32*((m%64)/16) + a,
                                         column n  (half data path, a = 0 or 16)    (4x1, 1/2)
  D  M=128, cta_group::1        D(m, n): lane m, column n                           (4x1)
  E  M=64,  .ws                 D(m, n): lane m + 64*(n / (N/2)), column n % (N/2)  (2x2)
  F  M=64,  not .ws             D(m, n): lane (m%16) + 32*(m/16) + a, column n      (4x1, 1/2)
  G  M=32,  .ws                 D(m, n): lane m + 32*(n / (N/4)), column n % (N/4)  (1x4)

Columns are relative to the D address; one 32-bit column per element (f16 D too,
9.7.16.10.4.1). Layout C is placed like F in each CTA of the pair: the spec table gives it the
same organisation and lane alignment as F; neither CuTe nor FACTS shows it (docs/tmem.md).

A in Tensor Memory (a_position): A, D: lane m; B, E: lanes m and m + 64, one copy per lane half
(CuTe TmemAllocMode::Duplicated; FlashMLA's .ws dual GEMM for E); C, F: the D lanes; G: unknown.
Sources and tests of every placement: docs/layouts.md.

Warp access: a lane is reachable only by warp (lane / 32) of a warpgroup (9.7.16.8.1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import LayoutError

# 9.7.16.10.5 table: (M, cta_group, sparse, ws) -> (layout, organisation, lane alignments).
# sparse / ws None = "Either" / "N/A" in the table.
DATAPATH_TABLE = (
    # M    cta  sparse  ws     id   organisation             alignment
    (32,   1,   None,   True,  "G", "1x4",                   (0,)),
    (64,   1,   None,   True,  "E", "2x3",                   (0,)),   # spec prints "2x3"; CuTe: 2x2
    (64,   1,   None,   False, "F", "4x1 (1/2 datapath)",    (0, 16)),
    (128,  1,   None,   None,  "D", "4x1",                   (0,)),
    (128,  2,   False,  None,  "B", "2x2",                   (0,)),
    (128,  2,   True,   None,  "C", "4x1 (1/2 datapath)",    (0, 16)),
    (256,  2,   None,   None,  "A", "4x1",                   (0,)),
)


@dataclass(frozen=True)
class DataPathLayout:
    id: str
    M: int
    cta_group: int
    organisation: str
    lane_alignments: tuple[int, ...]

    @property
    def m_per_cta(self) -> int:
        return self.M // self.cta_group

    def _check(self, N: int, lane_offset: int) -> None:
        if lane_offset not in self.lane_alignments:
            raise LayoutError(f"layout {self.id}: Tensor Memory lane alignment {lane_offset} is "
                              f"not one of {self.lane_alignments} (9.7.16.10.5)")
        div = {"B": 2, "E": 2, "G": 4}.get(self.id, 1)
        if N <= 0 or N % (8 * div):
            raise LayoutError(f"layout {self.id}: N = {N} does not split into {div} column "
                              "groups of whole 8-column steps")

    def d_position(self, m, n, N: int, lane_offset: int = 0):
        """(cta, lane, column) of D element (m, n) for an M x N MMA. Vectorised.

        cta is the rank within the CTA pair (always 0 for cta_group::1); column is relative to
        the D address; lane_offset is the 0/16 alignment of the half-data-path layouts C, F.
        """
        self._check(N, lane_offset)
        m, n = np.broadcast_arrays(np.asarray(m, np.int64), np.asarray(n, np.int64))
        if np.any((m < 0) | (m >= self.M) | (n < 0) | (n >= N)):
            raise LayoutError(f"layout {self.id}: element outside the {self.M} x {N} matrix D")
        cta = m // self.m_per_cta
        mm = m % self.m_per_cta
        if self.id in ("A", "D"):
            lane, col = mm, n
        elif self.id in ("B", "E"):
            lane, col = mm + 64 * (n // (N // 2)), n % (N // 2)
        elif self.id == "G":
            lane, col = mm + 32 * (n // (N // 4)), n % (N // 4)
        else:                                                  # C, F: half data path
            lane, col = mm % 16 + 32 * (mm // 16) + lane_offset, n
        return cta, lane, col

    def d_placement(self, N: int, lane_offset: int = 0):
        """Arrays (M, N): cta, lane, column and the warp (of a warpgroup) that may tcgen05.ld it."""
        m, n = np.meshgrid(np.arange(self.M), np.arange(N), indexing="ij")
        cta, lane, col = self.d_position(m, n, N, lane_offset)
        return cta, lane, col, lane // 32

    def columns_used(self, N: int) -> int:
        return {"B": N // 2, "E": N // 2, "G": N // 4}.get(self.id, N)

    def a_position(self, m, kcol, lane_offset: int = 0):
        """(cta, lanes, column) of A row m, 32-bit column kcol, when A is read from Tensor Memory.

        `lanes` has a trailing axis, one entry per copy: layout B keeps A duplicated in both
        halves of the lanes (CuTe TmemAllocMode::Duplicated: CTA c holds rows 64c..64c+63 at
        lanes m%64 and m%64 + 64). Layout E (M = 64, .ws, "2x2") likewise: row m at lanes m and
        m + 64, and lane half h, which computes D columns [h*N/2, (h+1)*N/2), reads its own copy
        (DeepSeek FlashMLA sm100 head64 kernels: SM100_MMA_F16BF16_WS_TS_NOELECT, "should be
        duplicated", whose "implicit dual gemm" copies a 128-row view of Q with tcgen05.cp
        .128x256b so that lanes 64..127 hold other K columns than lanes 0..63 -- not measured
        here). Layout G (M = 32, .ws, "1x4"): not established (LayoutError).
        """
        m, kcol = np.broadcast_arrays(np.asarray(m, np.int64), np.asarray(kcol, np.int64))
        if lane_offset not in self.lane_alignments:
            raise LayoutError(f"layout {self.id}: lane alignment {lane_offset} not in "
                              f"{self.lane_alignments}")
        cta, mm = m // self.m_per_cta, m % self.m_per_cta
        if self.id in ("A", "D"):
            lanes = mm[..., None]
        elif self.id in ("B", "E"):
            lanes = np.stack([mm, mm + 64], axis=-1)
        elif self.id in ("C", "F"):
            lanes = (mm % 16 + 32 * (mm // 16) + lane_offset)[..., None]
        else:
            raise LayoutError(f"layout {self.id}: where A lives in Tensor Memory for M = 32 "
                              ".ws (1x4) is not established (Figures 217/218 missing; no CuTe or "
                              "FlashMLA atom reads A from Tensor Memory with M = 32)")
        return cta, lanes, kcol


def datapath_layout(M: int, cta_group: int = 1, sparse: bool = False,
                    ws: bool = False) -> DataPathLayout:
    """The data-path layout of an MMA (9.7.16.10.5 table), or LayoutError if none exists."""
    for (m, g, sp, w, lid, org, align) in DATAPATH_TABLE:
        if m == M and g == cta_group and (sp is None or sp == bool(sparse)) \
                and (w is None or w == bool(ws)):
            return DataPathLayout(lid, M, cta_group, org, align)
    raise LayoutError(f"no data-path layout for M = {M}, .cta_group::{cta_group}, "
                      f"{'sparse' if sparse else 'dense'} A, {'.ws' if ws else 'not .ws'} "
                      "(9.7.16.10.5 table)")


def layout_by_id(layout_id: str) -> DataPathLayout:
    for (m, g, sp, w, lid, org, align) in DATAPATH_TABLE:
        if lid == layout_id:
            return DataPathLayout(lid, m, g, org, align)
    raise LayoutError(f"no data-path layout '{layout_id}'; layouts are A-G")


def warp_of_lane(lane):
    """The warp of a warpgroup (0-3) that may tcgen05.ld/st this lane (9.7.16.8.1)."""
    return np.asarray(lane) // 32


# --------------------------------------------------------------------------------------------
# sparsity metadata and scale factors (M = 128, 4x1 data path): FACTS.md section 4 / CuTe
# --------------------------------------------------------------------------------------------

METADATA_KINDS = ("f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")


def metadata_position(m, k, kind: str, M: int = 128):
    """(lane, column, bit) of metadata bit k of row m, relative to the metadata address.

    f16: one column per MMA, lane (m%8) + 8*((k/16)%2) + 16*(m/16), bit (k%16) + 16*((m/8)%2);
    tf32: lane (m%8) + 8*((k/8)%2) + 16*(m/16), bit 2*(k%8) + 16*((m/8)%2);
    8-bit kinds: two columns, lane m, bit k (column k/32); fp4 kinds: lane m, bit k/2.
    (CuTe tmem_e_frg; FACTS.md section 4.) Only M = 128 is established.
    """
    if M != 128:
        raise LayoutError(f"sparsity metadata placement for M = {M} rows is not established "
                          "(only 128 rows per CTA: CuTe tmem_e_frg; the .ws copies of M = 64 / 32 "
                          "are sparsity.metadata_cells)")
    m, k = np.broadcast_arrays(np.asarray(m, np.int64), np.asarray(k, np.int64))
    if kind == "f16":
        lane = m % 8 + 8 * ((k // 16) % 2) + 16 * (m // 16)
        bit = k % 16 + 16 * ((m // 8) % 2)
    elif kind == "tf32":
        lane = m % 8 + 8 * ((k // 8) % 2) + 16 * (m // 16)
        bit = 2 * (k % 8) + 16 * ((m // 8) % 2)
    elif kind in ("f8f6f4", "i8", "mxf8f6f4"):
        lane, bit = m, k
    elif kind in ("mxf4", "mxf4nvf4"):
        lane, bit = m, k // 2
    else:
        raise LayoutError(f"unknown MMA kind '{kind}' for sparsity metadata; one of "
                          f"{', '.join(METADATA_KINDS)}")
    return lane, bit // 32, bit % 32


def scale_factor_position(m, s):
    """(lanes (..., 4), column, byte) of scale factor s of row m (4x1 data path, SFA / SFB).

    Copied by tcgen05.cp .32x128b.warpx4, each row lands in all four lane quarters:
    lanes (m%32) + 32*r, column m/32, byte s (CuTe tmem_sf_frg ScaleFactorDuplicated4by1;
    FACTS.md section 4).
    """
    m, s = np.broadcast_arrays(np.asarray(m, np.int64), np.asarray(s, np.int64))
    lanes = (m % 32)[..., None] + 32 * np.arange(4)
    return lanes, m // 32, s
