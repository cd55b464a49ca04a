"""Structured sparsity of tcgen05.mma.sp: granularity, metadata, decompression (9.7.16.10.8).

A sparse MMA of shape M x N x K stores A compressed, M x K/2; the metadata says where the stored
elements sit in each chunk of a row (9.7.16.10.8 table):

  kind                        granularity   chunk  stored  metadata per chunk
  tf32                        1:2            2      1       4-bit index, 0b0100 / 0b1110
  f16, f8f6f4, mxf8f6f4, i8   2:4            4      2       two 2-bit indices idx0 | idx1 << 2
  mxf4, mxf4nvf4              4:8 in pairs   8      4       two 2-bit pair indices

Only the index values the spec lists are "meaningful" (9.7.16.10.8.1-3); any other value is
undefined behaviour -> SparsityMetadataError. For 2:4 the list is 0b0100, 0b1000, 0b1100, 0b1001,
0b1101, 0b0110, 0b1110, i.e. the six increasing index pairs plus (idx0, idx1) = (2, 1).
Stored element i of a chunk lands at position idx_i; the other positions are zero (FACTS.md
section 1: pruned products are zero terms -- the hypothesis the dense model is applied under).

Metadata in Tensor Memory: one 4-bit value per chunk, chunk j of row m in bits [4j, 4j+4) of that
row's metadata bit stream (f16: 1 bit per logical K element, tf32: 2, 8-bit kinds: 1, fp4: 1/2).
Where stream bit b of row m lives comes from `datapath.metadata_position` (CuTe tmem_e_frg, FACTS
section 4; M = 128 per CTA -- layout D, and layout A (M = 256), whose CuTe 2x1SM sparse traits
hand tmem_e_frg 128 rows per CTA -- and the .ws M = 64 / 32 copies of CuTe tmem_e_frg_ws; all
checked against the transcribed atoms in tests/isa/test_layouts_cute.py). The selector
picks the column for f16 and tf32 (CuTe passes the metadata column's LSB as the selector and
clears it from the address, so the selector is a column offset); it must be 0 for i8 / f8f6f4
and is assumed 0 for the block-scaled kinds (9.7.16.10.8.4.5-6).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import (LayoutError, OperandError, SparsityMetadataError, SpecDeviationWarning,
                           UndefinedBehavior)
from ptxsim.isa.datapath import metadata_position


@dataclass(frozen=True)
class Granularity:
    name: str
    chunk: int            # logical elements per chunk
    unit: int             # elements per index step (2 for fp4 pairs)
    meta_bits_per_k: float  # metadata stream bits per logical K element


# 9.7.16.10.8, the granularity table (+ 9.7.16.10.8.1-3)
GRANULARITY: dict[str, Granularity] = {
    "tf32": Granularity("1:2", 2, 1, 2.0),
    "f16": Granularity("2:4", 4, 1, 1.0),
    "f8f6f4": Granularity("2:4", 4, 1, 1.0),
    "mxf8f6f4": Granularity("2:4", 4, 1, 1.0),
    "i8": Granularity("2:4", 4, 1, 1.0),
    "mxf4": Granularity("4:8 (pairs)", 8, 2, 0.5),
    "mxf4nvf4": Granularity("4:8 (pairs)", 8, 2, 0.5),
}
# 9.7.16.10.8.2 / .3: the only meaningful 2:4 (and pair) metadata values
MEANINGFUL_2OF4 = (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b0110, 0b1110)
# 9.7.16.10.8.1: tf32 index -> position of the non-zero element in the two-wide chunk
MEANINGFUL_TF32 = {0b0100: 0, 0b1110: 1}
# selector rule per kind (9.7.16.10.8.4.5-6): "column" = column offset, "zero" = must be 0,
# "ignored" = assumed 0
SELECTOR_RULE = {"f16": "column", "tf32": "column", "i8": "zero", "f8f6f4": "zero",
                 "mxf8f6f4": "ignored", "mxf4": "ignored", "mxf4nvf4": "ignored"}


def granularity(kind: str) -> Granularity:
    try:
        return GRANULARITY[kind]
    except KeyError:
        raise OperandError(f"unknown MMA kind '{kind}' for tcgen05.mma.sp; one of "
                           f"{', '.join(GRANULARITY)}") from None


def _legal_table(kind: str) -> np.ndarray:
    """(16,) bool: which 4-bit metadata values are meaningful for `kind`."""
    legal = np.zeros(16, bool)
    legal[list(MEANINGFUL_TF32 if kind == "tf32" else MEANINGFUL_2OF4)] = True
    return legal


def check_metadata(nibbles: np.ndarray, kind: str, row_offset: int = 0,
                   stored: np.ndarray | None = None) -> None:
    """Raise SparsityMetadataError at the first meaningless metadata value.

    With `stored` (the compressed raw bits, (M, K/2)): a meaningless value in a chunk whose stored
    elements are all zero bits (or -0 for the f16 / bf16 / tf32 kinds) is run with a
    SpecDeviationWarning instead. Whatever the hardware makes of the repeated index, both stored
    values are zero, so the chunk adds nothing; CUTLASS's structured-sparse compressor
    (SM90StructuredSparseCompressor, used by its example 83) writes 0b0000 for a chunk of four
    zeros."""
    bad = ~_legal_table(kind)[np.asarray(nibbles, np.int64) & 0xF]
    if not bad.any():
        return
    if stored is not None:
        a = np.asarray(stored)
        M, nchunks = bad.shape
        raw = a.reshape(M, nchunks, -1).astype(np.uint64)
        zero = raw == 0
        width = {"f16": 16, "tf32": 32}.get(kind)
        if width is not None:
            zero |= raw == np.uint64(1 << (width - 1))
        excused = bad & zero.all(axis=2)
        if excused.any():
            import warnings
            # no row / chunk in the text: a launch reports each distinct text once, and a
            # CUTLASS sparse GEMM meets such chunks in most of its MMAs
            r, j = (int(x) for x in np.argwhere(excused)[0])
            warnings.warn(SpecDeviationWarning(
                f"tcgen05.mma.sp .kind::{kind}: metadata value {int(nibbles[r, j]):#06b} is "
                "undefined (9.7.16.10.8), but both stored values of the chunks it is given for "
                "are zero, so they add nothing whatever index the hardware takes (for finite "
                "B; CUTLASS's compressor writes 0b0000 for a chunk of four zeros)"), stacklevel=2)
        bad = bad & ~excused
        if not bad.any():
            return
    r, j = (int(x) for x in np.argwhere(bad)[0])
    v = int(nibbles[r, j])
    allowed = ", ".join(f"{x:#06b}" for x in (MEANINGFUL_TF32 if kind == "tf32"
                                              else MEANINGFUL_2OF4))
    raise SparsityMetadataError(f"tcgen05.mma.sp .kind::{kind}: metadata value {v:#06b} is "
                                f"not one of the meaningful values {allowed}; the rest are "
                                "undefined (9.7.16.10.8)", row=r + row_offset, chunk=j)


def decompress(compressed: np.ndarray, nibbles: np.ndarray, kind: str,
               row_offset: int = 0) -> np.ndarray:
    """The logical M x K matrix A from its compressed M x K/2 form and the per-chunk metadata.

    compressed: raw element bits (M, K/2); nibbles: (M, K/chunk) 4-bit metadata values.
    Positions not named by the metadata are zero bits. Vectorised.
    """
    g = granularity(kind)
    a = np.asarray(compressed)
    nib = np.asarray(nibbles, np.int64) & 0xF
    M, half = a.shape
    nchunks = 2 * half // g.chunk
    if nib.shape != (M, nchunks):
        raise OperandError(f"sparse .kind::{kind}: {M} x {2 * half} A needs ({M}, {nchunks}) "
                           f"metadata values, got {nib.shape}")
    check_metadata(nib, kind, row_offset, a)
    out = np.zeros((M, nchunks, g.chunk), a.dtype)
    rows = np.arange(M)[:, None]
    chunks = np.arange(nchunks)[None, :]
    if kind == "tf32":
        pos = np.where(nib == 0b0100, 0, 1)
        out[rows, chunks, pos] = a.reshape(M, nchunks)
    else:
        stored = a.reshape(M, nchunks, 2, g.unit)
        for i, idx in enumerate((nib & 3, nib >> 2)):
            for t in range(g.unit):
                out[rows, chunks, g.unit * idx + t] = stored[:, :, i, t]
    return out.reshape(M, nchunks * g.chunk)


def stored_positions(nibbles: np.ndarray, kind: str) -> np.ndarray:
    """(M, K/2): the logical column (within its row) of every stored element of a sparse A, as
    the metadata names it: stored element i of chunk j sits at column chunk * j + idx_i (fp4
    kinds: pair idx_i, both of its elements; tf32: 0b0100 -> 0, else 1), as `decompress`
    places it. No legality check: callers run `check_metadata` (via `decompress`) on the
    stored values themselves, so that a value the ISA leaves undefined over a chunk of zeros
    is excused exactly as there."""
    g = granularity(kind)
    nib = np.asarray(nibbles, np.int64) & 0xF
    M, nchunks = nib.shape
    base = (g.chunk * np.arange(nchunks))[None, :, None]
    if kind == "tf32":
        pos = np.where(nib == 0b0100, 0, 1)[..., None]
    else:
        idx = np.stack((nib & 3, nib >> 2), axis=-1)[..., None]          # (M, nchunks, 2, 1)
        pos = (g.unit * idx + np.arange(g.unit)).reshape(M, nchunks, -1)
    return (base + pos).reshape(M, -1)


def compress(dense: np.ndarray, kind: str, *, is_zero=None) -> tuple[np.ndarray, np.ndarray]:
    """(compressed M x K/2, metadata (M, K/chunk)) of a structured-sparse logical A.

    Keeps the non-zero elements of each chunk (by default: raw bits != 0), filling up with the
    lowest zero positions, in increasing position order (so the metadata is always meaningful).
    Raises OperandError if a chunk has too many non-zero elements (or a non-zero fp4 pair
    partner of a pruned one)."""
    g = granularity(kind)
    a = np.asarray(dense)
    M, K = a.shape
    if K % g.chunk:
        raise OperandError(f"K = {K} is not a multiple of the {g.chunk}-element chunk")
    nz = (a != 0) if is_zero is None else ~np.asarray(is_zero)
    nchunks = K // g.chunk
    units = g.chunk // g.unit
    keep = units // 2
    unz = nz.reshape(M, nchunks, units, g.unit).any(axis=-1)
    if (unz.sum(axis=-1) > keep).any():
        r, j = (int(x) for x in np.argwhere(unz.sum(axis=-1) > keep)[0])
        raise OperandError(f".kind::{kind} is {g.name} sparse: row {r}, chunk {j} has more than "
                           f"{keep} non-zero {'pairs' if g.unit == 2 else 'elements'}")
    pos = np.arange(units)
    order = np.argsort(np.where(unz, pos, pos + units), axis=-1, kind="stable")[..., :keep]
    order = np.sort(order, axis=-1)                                    # (M, nchunks, keep)
    units_arr = a.reshape(M, nchunks, units, g.unit)
    picked = np.take_along_axis(units_arr, order[..., None], axis=2)   # (M, nchunks, keep, unit)
    if kind == "tf32":
        nib = np.where(order[..., 0] == 0, 0b0100, 0b1110)
    else:
        nib = order[..., 0] | (order[..., 1] << 2)
    return picked.reshape(M, K // 2), nib.astype(np.uint8)


# --------------------------------------------------------------------------------------------
# metadata in Tensor Memory
# --------------------------------------------------------------------------------------------
def metadata_stream_bits(kind: str, K: int) -> int:
    """Bits of metadata per row for a sparse MMA with logical K."""
    return int(K * granularity(kind).meta_bits_per_k)


# .ws with M = 64 / 32 (CuTe tmem_e_frg_ws): the M = 128 placement of rows 0..M-1, repeated in
# every lane group of the data path (layout E: +64; layout G: +32, +64, +96), since each group
# computes a column slice of D for all M rows.
WS_METADATA_COPIES = {128: (0,), 64: (0, 64), 32: (0, 32, 64, 96)}


def metadata_copies(M: int, ws: bool) -> tuple[int, ...]:
    """Lane offsets of the copies of the metadata of an M-row (per CTA) sparse MMA."""
    if M == 128:
        return (0,)
    if ws and M in WS_METADATA_COPIES:
        return WS_METADATA_COPIES[M]
    raise LayoutError(f"sparsity metadata placement for M = {M} rows per CTA without .ws "
                      "(layouts C, F) is not established: Figures 262/264/266 are missing, CuTe "
                      "tmem_e_frg static_asserts M_MMA == 128 and CUTLASS's sm100 sparse "
                      "collective 'only support[s] MmaShape=128' (docs/layouts.md)")


def metadata_cells(kind: str, K: int, M: int = 128, ws: bool = False):
    """(lane, column, bit) arrays, each (copies, M, bits per row): where stream bit b of row m
    lives, relative to the metadata address (before the selector's column offset)."""
    copies = np.asarray(metadata_copies(M, ws))[:, None, None]
    nbits = metadata_stream_bits(kind, K)
    m = np.arange(M)[:, None]
    b = np.arange(nbits)[None, :]
    if kind == "tf32":              # two bits per element: element b//2, bit b%2 of its pair
        lane, col, bit = metadata_position(m, b // 2, kind)
        bit = bit + b % 2
    elif kind in ("mxf4", "mxf4nvf4"):
        lane, col, bit = metadata_position(m, 2 * b, kind)
    else:
        lane, col, bit = metadata_position(m, b, kind)
    return np.broadcast_arrays(lane + copies, col + 0 * copies, bit + 0 * copies)


def selector_column(kind: str, selector: int) -> int:
    """Column offset the sparsity selector adds (9.7.16.10.8.4; see module doc)."""
    rule = SELECTOR_RULE[kind]
    if rule == "zero" and selector:
        raise OperandError(f"the sparsity selector must be 0 for .kind::{kind} "
                           f"(9.7.16.10.8.4.5/6), got {selector}")
    return selector if rule == "column" else 0


def _placed(cells, lane0, col0, kind, K, M, selector, ws):
    lane, col, bit = metadata_cells(kind, K, M, ws)
    col = col + col0 + selector_column(kind, selector)
    lane = lane + lane0
    if lane.max() >= cells.shape[0] or col.max() >= cells.shape[1]:
        raise LayoutError(f"sparsity metadata at lane {lane0}, column {col0} runs past Tensor "
                          "Memory (128 lanes x 512 columns)")
    return lane, col, bit


def read_metadata(cells: np.ndarray, lane0: int, col0: int, kind: str, K: int, M: int = 128,
                  selector: int = 0, ws: bool = False) -> np.ndarray:
    """The (M, K/chunk) metadata values of a sparse MMA from Tensor Memory cells (128 x 512).
    With several copies (.ws, M < 128) they must agree (UndefinedBehavior otherwise)."""
    lane, col, bit = _placed(cells, lane0, col0, kind, K, M, selector, ws)
    stream = (cells[lane, col] >> bit.astype(np.uint32)) & 1           # (copies, M, nbits)
    if (stream != stream[:1]).any():
        c, r, b = (int(x) for x in np.argwhere(stream != stream[:1])[0])
        raise UndefinedBehavior(f"sparsity metadata of row {r} differs between its copies at "
                                f"lanes {int(lane[0, r, b])} and {int(lane[c, r, b])}; every "
                                "lane group of the .ws data path reads its own copy (CuTe "
                                "tmem_e_frg_ws duplicates it)")
    nib = stream[0].reshape(M, -1, 4).astype(np.uint8)
    return nib[..., 0] | nib[..., 1] << 1 | nib[..., 2] << 2 | nib[..., 3] << 3


def write_metadata(cells: np.ndarray, lane0: int, col0: int, nibbles: np.ndarray, kind: str,
                   M: int = 128, selector: int = 0, ws: bool = False) -> None:
    """Place (M, K/chunk) metadata values into Tensor Memory cells, every copy (the inverse of
    read_metadata; what a kernel does with tcgen05.cp / tcgen05.st)."""
    nib = np.asarray(nibbles, np.uint32)
    K = nib.shape[1] * granularity(kind).chunk
    lane, col, bit = _placed(cells, lane0, col0, kind, K, M, selector, ws)
    stream = ((nib[..., None] >> np.arange(4, dtype=np.uint32)) & 1).reshape(M, -1)
    stream = np.broadcast_to(stream, lane.shape)
    lane, col, bit, stream = (x.ravel() for x in (lane, col, bit, stream))
    np.bitwise_and.at(cells, (lane, col), ~(np.uint32(1) << bit.astype(np.uint32)))
    np.bitwise_or.at(cells, (lane, col), (stream << bit.astype(np.uint32)).astype(np.uint32))
