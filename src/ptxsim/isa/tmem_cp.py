"""tcgen05.cp (shared memory -> Tensor Memory), its optional decompression, and tcgen05.shift.

PTX ISA 9.7.16.9 (tcgen05-cp-shift.md), shapes in 9.7.16.2.3.

Source rows: a shared-memory matrix described by a shared-memory descriptor. This module takes
the rows *already gathered* (uint8 array rows x bytes, row r = the r-th 128/256-bit row of the
shape); `cp_rows_from_smem` is the integration point that gathers them from shared memory.

Where each source row lands (the multicast figures are not in the text; the maps below are the
ones CuTe's SM100_UTCCP_* copy traits encode, include/cute/atom/copy_traits_sm100.hpp):

  .128x256b, .128x128b             row r -> lane r
  .4x256b                          row r -> lane 32*r          (one lane per 32-lane quarter)
  .64x128b.warpx2::02_13           row r -> lanes r, r+64      (warps 0,2 get rows 0-31; 1,3 32-63)
  .64x128b.warpx2::01_23           row r -> lanes (r%32)+64*(r/32) + {0, 32}
                                            (warps 0,1 get rows 0-31; warps 2,3 rows 32-63)
  .32x128b.warpx4                  row r -> lanes r, r+32, r+64, r+96

all relative to the lane of taddr; bytes 4c..4c+3 of a row fill column taddr.column + c
(little-endian). With .cta_group::2 the copy is done into both CTAs of the pair, each from its
own rows (pass a (2, rows, bytes) array; a (rows, bytes) array is used for both).

Decompression (9.7.16.9.1), per 16-byte chunk of a row:
  .b8x16.b4x16_p64   16 x 4-bit elements in bytes 0-7 (element i at bits [4i, 4i+4) of the
                     little-endian 64-bit word), bytes 8-15 padding -> 16 bytes, element i in
                     byte i at bits [5:2] (the f8f6f4 container of 9.7.16.10.4.3)
  .b8x16.b6x16_p32   16 x 6-bit elements in bytes 0-11 (element i at bits [6i, 6i+6) of the
                     little-endian 96-bit word), bytes 12-15 padding -> byte i, bits [5:0]
The container positions come from FACTS.md section 2 and the spec's 9.7.16.10.4.3; see
docs/tmem.md for the one piece of counter-evidence (sm_120 ldmatrix puts e2m1 in bits [3:0]).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import (LayoutError, OperandError, PtxValidationError, TmemAccessError,  # noqa: F401
                           UndefinedBehavior)
from ptxsim.isa.legality import Form, Operand, Slot, check_form, check_notes
from ptxsim.isa.targets import ARCH_SPECIFIC_10X_11X, TCGEN05
from ptxsim.isa.tmem import (CTA_GROUP, N_COLUMNS, N_LANES, TCGEN05_SINCE, CtaPair,
                             TensorMemory, cells_of, split_address)

# ----------------------------------------------------------------------- legality, as data
# The one table of tcgen05.cp (9.7.16.9.2) and tcgen05.shift (9.7.16.9.3): read by the functions
# below and by the front-end validator (ptx/legality/tcgen05.py); vocabulary ptxsim.isa.legality.
# 9.7.16.9.2 syntax: .shape -> (rows, bits per row); which .multicast each shape takes ("Some of
# the .shape qualifiers require certain .multicast qualifiers", the ** / *** marks; None: none).
CP_SHAPES = {"128x256b": (128, 256), "4x256b": (4, 256), "128x128b": (128, 128),
             "64x128b": (64, 128), "32x128b": (32, 128)}
CP_MULTICAST = {"128x256b": (None,), "4x256b": (None,), "128x128b": (None,),
                "64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}
DECOMPRESS = ("b8x16.b6x16_p32", "b8x16.b4x16_p64")   # .dst_fmt.src_fmt, written in this order
# tcgen05.shift Target ISA notes: the architecture-specific targets only (sm_100a, sm_101a =
# sm_110a, sm_103a); the other tcgen05 instructions have TCGEN05.
SHIFT_TARGETS = ARCH_SPECIFIC_10X_11X


def _dotted(values) -> tuple:
    return tuple(dict.fromkeys("." + v for v in values if v))


FORMS: dict[str, Form] = {f.name: f for f in [
    # tcgen05.cp.cta_group.shape{.multicast}{.dst_fmt.src_fmt} [taddr], s-desc;
    Form("tcgen05.cp", "tcgen05.cp",
         (CTA_GROUP, Slot.of(".shape", _dotted(CP_SHAPES), True),
          Slot.of(".multicast", _dotted(m for ms in CP_MULTICAST.values() for m in ms)),
          Slot.of(".dst_fmt", _dotted(d.split(".")[0] for d in DECOMPRESS)),
          Slot.of(".src_fmt", _dotted(d.split(".")[1] for d in DECOMPRESS))),
         (Operand("taddr", "addr"), Operand("s-desc", "r64|imm")), TCGEN05_SINCE, TCGEN05,
         "9.7.16.9.2"),
    # tcgen05.shift.cta_group.down [taddr];
    Form("tcgen05.shift", "tcgen05.shift", (CTA_GROUP, Slot.of(".down", ".down", True)),
         (Operand("taddr", "addr"),), TCGEN05_SINCE, SHIFT_TARGETS, "9.7.16.9.3"),
]}


def multicast_problem(shape: str, multicast: str | None) -> str | None:
    """The shape x multicast rule (dots left out): "requires" when the shape needs a multicast
    it was not given, "not allowed" for a multicast the shape does not take, else None."""
    allowed = CP_MULTICAST[shape]
    if multicast in allowed:
        return None
    return "requires" if None not in allowed else "not allowed"


def check(opcode: str, qualifiers=(), operands=(), target: str | None = None,
          ptx_version=None) -> Form:
    """Raise PtxValidationError unless the instruction is legal per FORMS and the cp rules
    (shape x multicast, .dst_fmt.src_fmt together and in that order), and, when given, on
    `target` with `ptx_version`. Operands as isa.legality.check_form takes them."""
    if opcode not in FORMS:
        raise PtxValidationError(f"'{opcode}' is not tcgen05.cp or tcgen05.shift (9.7.16.9)")
    f = FORMS[opcode]
    got = check_form(f, tuple(qualifiers), tuple(operands), None, None)
    where = f"'{opcode}{''.join(qualifiers)}' ({f.source})"
    if opcode == "tcgen05.cp":
        dst, src = got[".dst_fmt"], got[".src_fmt"]
        if bool(dst) != bool(src):
            raise PtxValidationError(f"{where}: decompression needs both .dst_fmt and .src_fmt")
        q = list(qualifiers)
        if dst and (q.index(dst) + 1 >= len(q) or q[q.index(dst) + 1] != src):
            raise PtxValidationError(f"{where}: decompression is written .dst_fmt.src_fmt "
                                     f"({dst}{src})")
        try:
            check_cp(got[".shape"][1:], got[".multicast"] and got[".multicast"][1:],
                     dst and (dst + src)[1:])
        except OperandError as e:
            raise PtxValidationError(f"{where}: {e}") from None
    check_notes(f, target, ptx_version, where)
    return f


# Bit position of a decompressed element inside its byte (see module docstring).
E2M1_CONTAINER_SHIFT = 2     # e2m1 in bits [5:2]
FP6_CONTAINER_SHIFT = 0      # e3m2 / e2m3 in bits [5:0]


def destination_lanes(shape: str, multicast: str | None) -> np.ndarray:
    """(rows, copies) lane offsets from taddr's lane receiving each source row."""
    check_cp(shape, multicast, None)
    rows = np.arange(CP_SHAPES[shape][0])[:, None]
    if shape in ("128x256b", "128x128b"):
        return rows
    if shape == "4x256b":
        return 32 * rows
    if multicast == "warpx2::02_13":
        return rows + 64 * np.arange(2)[None]
    if multicast == "warpx2::01_23":
        return rows % 32 + 64 * (rows // 32) + 32 * np.arange(2)[None]
    return rows + 32 * np.arange(4)[None]          # .32x128b.warpx4


def check_cp(shape: str, multicast: str | None, decompress: str | None) -> None:
    what = f"tcgen05.cp.{shape}"
    if shape not in CP_SHAPES:
        raise OperandError(f"tcgen05.cp: shape '.{shape}' is not one of "
                           f"{', '.join('.' + s for s in CP_SHAPES)} (9.7.16.9.2)")
    if multicast_problem(shape, multicast):
        need = " or ".join("." + m if m else "no multicast" for m in CP_MULTICAST[shape])
        raise OperandError(f"{what}: multicast '{multicast}' not allowed; .{shape} takes {need} "
                           "(9.7.16.9.2)")
    if decompress is not None and decompress not in DECOMPRESS:
        raise OperandError(f"{what}: decompression '.{decompress}' is not one of "
                           f"{', '.join('.' + d for d in DECOMPRESS)} (9.7.16.9.2)")


# --------------------------------------------------------------------------------------------
# decompression, 9.7.16.9.1
# --------------------------------------------------------------------------------------------

def decompress_b4x16_p64(chunks: np.ndarray) -> np.ndarray:
    """(..., 16) uint8 chunks of 16 packed 4-bit elements + 8 padding bytes -> (..., 16) bytes."""
    c = _chunks(chunks, "b4x16_p64")
    packed = c[..., :8]
    nib = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(c.shape[:-1] + (16,))
    return (nib << E2M1_CONTAINER_SHIFT).astype(np.uint8)


def decompress_b6x16_p32(chunks: np.ndarray) -> np.ndarray:
    """(..., 16) uint8 chunks of 16 packed 6-bit elements + 4 padding bytes -> (..., 16) bytes."""
    c = _chunks(chunks, "b6x16_p32").astype(np.uint32)
    # every 3 bytes hold 4 elements: 24 little-endian bits
    tri = c[..., :12].reshape(c.shape[:-1] + (4, 3))
    word = tri[..., 0] | (tri[..., 1] << 8) | (tri[..., 2] << 16)
    six = (word[..., None] >> (6 * np.arange(4))) & 0x3F
    return (six.reshape(c.shape[:-1] + (16,)) << FP6_CONTAINER_SHIFT).astype(np.uint8)


def _chunks(chunks, what: str) -> np.ndarray:
    c = np.asarray(chunks)
    if c.dtype != np.uint8 or c.ndim == 0 or c.shape[-1] != 16:
        raise OperandError(f"decompression .{what}: input must be uint8 chunks of 16 bytes, got "
                           f"{c.dtype} {c.shape}")
    return c


def decompress(rows: np.ndarray, fmt: str) -> np.ndarray:
    """Apply .b8x16.<src_fmt> to every 16-byte chunk of every row."""
    r = np.asarray(rows)
    chunks = r.reshape(r.shape[:-1] + (r.shape[-1] // 16, 16))
    fn = decompress_b4x16_p64 if fmt.endswith("b4x16_p64") else decompress_b6x16_p32
    return fn(chunks).reshape(r.shape)


# --------------------------------------------------------------------------------------------
# tcgen05.cp
# --------------------------------------------------------------------------------------------

def _targets(tmem, cta_group: int, what: str) -> list:
    targets = _targets_of(tmem, cta_group, what)
    for t in targets:
        if isinstance(t, TensorMemory):      # one .cta_group per kernel (9.7.16.9.2 / .9.3)
            t._use_cta_group(cta_group, what)
    return targets


def _targets_of(tmem, cta_group: int, what: str) -> list:
    if cta_group == 1:
        if isinstance(tmem, CtaPair):
            raise OperandError(f"{what}.cta_group::1: give one CTA's Tensor Memory, not a pair")
        return [tmem]
    if cta_group == 2:
        if isinstance(tmem, CtaPair):
            if tmem.even_exited or tmem.odd_exited:
                raise UndefinedBehavior(f"{what}.cta_group::2: the peer CTA has exited "
                                        "(9.7.16.5, Table 46)")
            return list(tmem.ctas)
        if isinstance(tmem, (tuple, list)) and len(tmem) == 2:
            return list(tmem)
        raise OperandError(f"{what}.cta_group::2: give a CtaPair (or two Tensor Memories)")
    raise OperandError(f"{what}: .cta_group::{cta_group} is not ::1 or ::2")


def tcgen05_cp(tmem, shape: str, taddr: int, rows, multicast: str | None = None,
               decompress_fmt: str | None = None, cta_group: int = 1,
               target: str | None = None, ptx_version=None) -> None:
    """tcgen05.cp.cta_group::<g>.<shape>{.<multicast>}{.b8x16.<src_fmt>} [taddr], s-desc.

    rows: uint8 (R, B) with R, B from the shape (B = 32 for 256b, 16 for 128b), or
    (2, R, B) for .cta_group::2 (one set of rows per CTA of the pair).
    With `target` / `ptx_version`: first the notes of FORMS["tcgen05.cp"] (PtxValidationError).
    """
    what = "tcgen05.cp"
    check_notes(FORMS[what], target, ptx_version)
    check_cp(shape, multicast, decompress_fmt)
    nrows, bits = CP_SHAPES[shape]
    targets = _targets(tmem, cta_group, what)
    src = np.asarray(rows)
    if src.dtype != np.uint8:
        raise OperandError(f"{what}.{shape}: source rows must be uint8 bytes, got {src.dtype}")
    if src.shape == (nrows, bits // 8):
        src = np.broadcast_to(src, (len(targets),) + src.shape)
    if src.shape != (len(targets), nrows, bits // 8):
        raise OperandError(f"{what}.{shape}: source must be ({nrows}, {bits // 8}) bytes"
                           + (" or (2, ...) for .cta_group::2" if cta_group == 2 else "")
                           + f"; got {np.asarray(rows).shape}")
    if decompress_fmt is not None:
        src = decompress(src, decompress_fmt)
    words = np.ascontiguousarray(src).view("<u4").astype(np.uint32)   # (T, R, B/4)
    lane0, col0 = split_address(int(taddr))
    lanes = lane0 + destination_lanes(shape, multicast)               # (R, copies)
    cols = col0 + np.arange(bits // 32)
    if lanes.max() >= N_LANES:
        raise TmemAccessError(f"{what}.{shape}: rows reach lane {int(lanes.max())} from taddr "
                              f"lane {lane0}; Tensor Memory has {N_LANES} lanes",
                              lane=int(lanes.max()), column=col0)
    if cols[-1] >= N_COLUMNS:
        raise TmemAccessError(f"{what}.{shape}: columns reach {int(cols[-1])} beyond "
                              f"{N_COLUMNS}", lane=lane0, column=int(cols[-1]))
    L = np.broadcast_to(lanes[:, :, None], lanes.shape + cols.shape)
    C = np.broadcast_to(cols[None, None, :], L.shape)
    for t, w in zip(targets, words):
        if isinstance(t, TensorMemory):
            t.check_allocated(L, C, f"{what}.{shape}")
        cells_of(t)[L, C] = np.broadcast_to(w[:, None, :], L.shape)


# --------------------------------------------------------------------------------------------
# tcgen05.shift, 9.7.16.9.3
# --------------------------------------------------------------------------------------------

SHIFT_ROWS = 32          # one warp's quarter; 9.7.16.2.3: .31x256b (implicit) rows move
SHIFT_COLUMNS = 256 // 32


def tcgen05_shift_down(tmem, taddr: int, cta_group: int = 1, target: str | None = None,
                       ptx_version=None, times: int = 1) -> None:
    """tcgen05.shift.cta_group::<g>.down [taddr].

    The 32-byte (8-column) element of each of the rows lane..lane+30 moves one row down
    (lane+1..lane+31); the last row's old value is overwritten and the first row keeps its
    value (the spec shifts "all the rows, except the last"). The lane of taddr must be a
    multiple of 32. With `target` / `ptx_version`: first the notes of FORMS["tcgen05.shift"].
    times: the same shift issued that many times in a row (row i then holds old row
    max(i - times, 0), by induction on the one-row shift).
    """
    what = "tcgen05.shift.down"
    check_notes(FORMS["tcgen05.shift"], target, ptx_version)
    lane0, col0 = split_address(int(taddr))
    if lane0 % 32:
        raise TmemAccessError(f"{what}: taddr lane {lane0} is not aligned to 32 (9.7.16.9.3)",
                              lane=lane0, column=col0)
    if lane0 >= N_LANES or col0 + SHIFT_COLUMNS > N_COLUMNS:
        raise TmemAccessError(f"{what}: the 32 x 256b block at lane {lane0}, column {col0} is "
                              "outside Tensor Memory", lane=lane0, column=col0)
    for t in _targets(tmem, cta_group, what):
        if isinstance(t, TensorMemory):
            L = np.arange(lane0, lane0 + SHIFT_ROWS)[:, None].repeat(SHIFT_COLUMNS, 1)
            C = np.broadcast_to(np.arange(col0, col0 + SHIFT_COLUMNS), L.shape)
            t.check_allocated(L, C, what)
        cells = cells_of(t)
        if times < 1:
            continue
        src = lane0 + np.maximum(np.arange(SHIFT_ROWS) - int(times), 0)
        cells[lane0:lane0 + SHIFT_ROWS, col0:col0 + SHIFT_COLUMNS] = \
            cells[src, col0:col0 + SHIFT_COLUMNS]


# --------------------------------------------------------------------------------------------
# integration point: gather the source rows from shared memory
# --------------------------------------------------------------------------------------------

def cp_footprint(taddr: int, sdesc, shape: str, multicast: str | None = None):
    """What one tcgen05.cp touches, for the sanitizer: ((lanes, columns) of the Tensor Memory
    cells written, as tcgen05_cp writes them; the sorted shared-memory byte addresses of the
    source, as cp_rows_from_smem reads them)."""
    from ptxsim.isa.descriptors import SmemDescriptor
    from ptxsim.isa.smem_layout import element_locations, smem_packing
    nrows, bits = CP_SHAPES[shape]
    lane0, col0 = split_address(int(taddr))
    lanes = lane0 + destination_lanes(shape, multicast)
    cols = col0 + np.arange(bits // 32)
    L = np.broadcast_to(lanes[:, :, None], lanes.shape + cols.shape)
    C = np.broadcast_to(cols[None, None, :], L.shape)
    desc = sdesc if isinstance(sdesc, SmemDescriptor) else SmemDescriptor.decode(int(sdesc))
    addr, _ = element_locations(desc, smem_packing("u8"), nrows, bits // 8, "K")
    return (L, C), np.unique(addr)


def cp_rows_from_smem(smem: np.ndarray, sdesc, shape: str) -> np.ndarray:
    """Gather the rows of a tcgen05.cp source from shared memory.

    The source is a K-major matrix of `rows` x (bits/8) bytes in the canonical layout the
    shared-memory descriptor describes (9.7.16.9.2; 9.7.16.3.3), with any of its swizzles; the
    addressing is ptxsim.isa.smem_layout's, so tcgen05.cp and tcgen05.mma read shared memory the
    same way.
    """
    from ptxsim.isa.descriptors import SmemDescriptor
    from ptxsim.isa.smem_layout import smem_to_matrix
    if shape not in CP_SHAPES:
        check_cp(shape, None, None)
    nrows, bits = CP_SHAPES[shape]
    return smem_to_matrix(np.asarray(smem), sdesc if isinstance(sdesc, SmemDescriptor)
                          else SmemDescriptor.decode(int(sdesc)), "u8", nrows, bits // 8, "K")
