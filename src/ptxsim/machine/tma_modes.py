"""The tensor and bulk operations beyond the tile copy of machine/tensormap.py:

- `cp.reduce.async.bulk` (9.7.9.25.4.2): `size` bytes of shared::cta combined element by element
  into global or (integer types only) shared::cluster memory with the reduction operation;
- `cp.reduce.async.bulk.tensor` `.tile` (9.7.9.25.5.2): the same on a tile box, elements of
  the tensor map's type, out-of-bound elements skipped (as a tile store);
- `.tile::gather4` loads / `.tile::scatter4` stores (5.5.3.4, sm_100a / sm_100f): a 2-D map whose
  box is one row (boxDim[1] = 1); the instruction names one dimension-0 coordinate and four rows,
  which form a four-row box in shared memory (laid out and swizzled as a tile box of four rows);
- `.im2col` loads (5.5.4): Pixels-per-Column pixels of Channels-per-Pixel channels each. The
  spatial (DHW) coordinates name the filter base inside the bounding box (lower corner .. size
  - 1 + upper corner in each spatial dimension, walked with the traversal stride); pixel p is the
  p-th position after it in that walk (W fastest, then H, then D, then the next N), and its
  element is read at that position plus the instruction's im2col offsets. Channels start at the
  dimension-0 coordinate. Elements outside the tensor read as the OOB fill. In shared memory the
  box is Pixels-per-Column rows of Channels-per-Pixel elements (rows padded to the swizzle span,
  as a tile box of (Channels-per-Pixel, Pixels-per-Column)).

The packed sub-byte tensor-map types go through tensormap's byte views here too (gather4 /
scatter4 / im2col; a tensor reduction refuses them, 9.7.9.25.5.1 restriction 1).

Reductions (the element types of the instruction or of the tensor map): .add (integers modulo
2^n; floats round to nearest even: .f32 keeps subnormals except through a FLOAT32_FTZ tensor map,
which flushes them, .f16 / .bf16 as `.noftz`), .min / .max (signed for .s32 / .s64 and int32 /
int64 maps; float min / max of 9.7.3), .inc / .dec (atom's wrap-around rules), .and / .or / .xor.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ptxsim.errors import (IllegalInstructionError, MemoryAccessError, OperandError,
                           UnsupportedFeature)
from ptxsim.isa import base as isa_base
from ptxsim.machine.memory import ATOMIC_OPS, GlobalMemory
from ptxsim.machine.tensormap import (OOB_NAN_PATTERN, TensorMap, _check_smem_window,
                                      _chunk_index, _chunks, _compress, _expand, _gather_index,
                                      _global_coords, _row_plan, _views, check_packed_copy)

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
# the tensor map element types a tensor reduction combines, as instruction types
MAP_TYPES = {"uint32": "u32", "int32": "s32", "uint64": "u64", "int64": "s64",
             "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float32_ftz": "f32.ftz",
             "float64": "f64"}


# map element types whose .min / .max the hardware refuses at run time (measured: .min f32, .max
# f32-FTZ, .min f64)
FLOAT_MINMAX_FAULTS = ("f32", "f32.ftz", "f64")


def reducer(op: str, type_: str):
    """(element bytes, function (old bits, new bits) -> bits) for redOp `op` on `type_`
    ("u32", "s64", "f16", "f32.ftz", "b32", ...)."""
    ftz = type_.endswith(".ftz")
    t = type_.split(".")[0]
    size = int("".join(ch for ch in t if ch.isdigit())) // 8
    if op not in REDUCE_OPS:
        raise OperandError(f"reduction operation .{op} does not exist ({', '.join(REDUCE_OPS)})")
    if t.startswith(("f", "bf")):
        if op == "add":
            f = isa_base.semantics(f"add.rn{'.ftz' if ftz else ''}.{t}")
        elif op in ("min", "max"):
            f = isa_base.semantics(f"{op}{'.ftz' if ftz and t == 'f32' else ''}.{t}")
        else:
            raise UnsupportedFeature(f"reduction .{op} on .{t}")
        dt = _UINT[size]
        return size, lambda old, new: np.asarray(f(old, new)).astype(dt)
    if op in ("min", "max"):
        fn = ATOMIC_OPS[f"{op}.{'s' if t.startswith('s') else 'u'}"]
    else:
        fn = ATOMIC_OPS[op]
    dt = _UINT[size]
    return size, lambda old, new: np.asarray(fn(old.astype(dt), new.astype(dt))).astype(dt)


def _combine(old: np.ndarray, new: np.ndarray, size: int, fn) -> np.ndarray:
    """old / new: uint8 bytes (any shape, last axis a multiple of `size`) -> combined bytes."""
    dt = _UINT[size]
    o = np.ascontiguousarray(old).view(dt)
    n = np.ascontiguousarray(new).view(dt)
    return np.asarray(fn(o, n), dt).view(np.uint8).reshape(old.shape)


# ---------------------------------------------------------------------- cp.reduce.async.bulk
def _bulk_reduce_checks(size: int, esize: int, *addrs):
    # 9.7.9.25.4.2: size a multiple of 16; addresses 16-byte aligned
    if size <= 0 or size % 16:
        raise OperandError(f"cp.reduce.async.bulk size {size} must be a positive multiple of 16")
    for a in addrs:
        if a % 16:
            raise MemoryAccessError("cp.reduce.async.bulk address not 16-byte aligned", address=a)


def reduce_shared_to_global(smem: np.ndarray, src: int, gmem: GlobalMemory, dst: int, size: int,
                            op: str, type_: str) -> int:
    esize, fn = reducer(op, type_)
    _bulk_reduce_checks(size, esize, src, dst)
    _check_smem_window(smem, src, size, 16, "cp.reduce.async.bulk")
    old = gmem.read_block(dst, size)
    gmem.write_block(dst, _combine(old, smem[src:src + size], esize, fn))
    return size


def reduce_shared_to_shared(src_smem: np.ndarray, src: int, dst_smem: np.ndarray, dst: int,
                            size: int, op: str, type_: str) -> int:
    esize, fn = reducer(op, type_)
    _bulk_reduce_checks(size, esize, src, dst)
    _check_smem_window(src_smem, src, size, 16, "cp.reduce.async.bulk")
    _check_smem_window(dst_smem, dst, size, 16, "cp.reduce.async.bulk")
    dst_smem[dst:dst + size] = _combine(dst_smem[dst:dst + size], src_smem[src:src + size],
                                        esize, fn)
    return size


# ----------------------------------------------------------------- cp.reduce.async.bulk.tensor
def reduce_tensor_tile(tmap: TensorMap, coords, gmem: GlobalMemory, smem: np.ndarray, src: int,
                       op: str) -> int:
    """The tile box at `coords` combined into global memory (out-of-bound elements skipped)."""
    check_packed_copy(tmap, reduce=True)       # no packed sub-byte type (9.7.9.25.5.1)
    t = MAP_TYPES.get(tmap.dtype)
    if t is None:
        raise UnsupportedFeature(f"cp.reduce.async.bulk.tensor on a {tmap.dtype} tensor map")
    if op in ("min", "max") and t in FLOAT_MINMAX_FAULTS:
        # The H200 stops .min on FLOAT32 and FLOAT64 maps and .max on a FLOAT32_FTZ map with an
        # illegal-instruction fault (hardware/sincos_2pi, tma_modes README); ptxas 13.5
        # refuses the same pairs in cp.reduce.async.bulk ("Incorrect type '.f32' for operation
        # '.min'"), whose type comes from the instruction instead of the map.
        raise IllegalInstructionError(
            f"cp.reduce.async.bulk.tensor.{op} on a {tmap.dtype} tensor map: .min / .max do not "
            "take f32 / f64 elements (the GPU stops the kernel with an illegal-instruction "
            "fault; cp.reduce.async.bulk refuses .min.f32 / .max.f64 at assembly)")
    esize, fn = reducer(op, t)
    _check_smem_window(smem, src, tmap.smem_footprint, 128, "cp.reduce.async.bulk.tensor")
    valid, off, buf, inner_bytes = _row_plan(tmap, coords, gmem)
    e = tmap.element_bytes
    rows, n0 = valid.shape
    data = _chunks(smem)[_chunk_index(tmap, src, rows)].reshape(rows, n0, e)
    idx = _gather_index(off, inner_bytes, e)
    for b in np.unique(buf[valid.any(axis=1)]):
        sel = (buf == b)[:, None] & valid
        u8 = gmem.buffers[b].u8
        u8[idx[sel]] = _combine(u8[idx[sel]], data[sel], esize, fn)
    return tmap.box_bytes


# ----------------------------------------------------------------- .tile::gather4 / ::scatter4
def _four_rows(tmap: TensorMap) -> TensorMap:
    if tmap.rank != 2:
        raise OperandError(f".tile::gather4 / .tile::scatter4 need a 2-D tensor map (rank "
                           f"{tmap.rank})")
    if tmap.box_dim[1] != 1:
        raise OperandError(f".tile::gather4 / .tile::scatter4: boxDim[1] must be 1 "
                           f"(is {tmap.box_dim[1]}; 5.5.3.4.1)")
    if tmap.interleave != "none":
        raise OperandError(".tile::gather4 / .tile::scatter4 do not support interleave (5.5.3.4)")
    return dataclasses.replace(tmap, box_dim=(tmap.box_dim[0], 4),
                               global_dim=(tmap.global_dim[0], 1 << 31))


def gather4_load(tmap: TensorMap, coords, gmem: GlobalMemory, smem: np.ndarray, dst: int) -> int:
    """coords = (dimension-0 coordinate, row0, row1, row2, row3). Returns complete-tx bytes.
    The packed sub-byte types copy through byte views (tensormap._views), as tile boxes do."""
    col, rows = int(coords[0]), [int(r) for r in coords[1:5]]
    box = _four_rows(tmap)
    check_packed_copy(tmap, [[col, r] for r in rows])
    g, _ = _views(tmap)
    _, sv = _views(box)
    _check_smem_window(smem, dst, sv.smem_footprint, 128, "cp.async.bulk.tensor")
    gcol = int(_global_coords(tmap, [col, 0])[0])
    e = g.element_bytes
    n0 = g.box_elements[0]
    data = np.zeros((4, n0 * e), np.uint8)
    for k, r in enumerate(rows):
        valid, off, buf, inner_bytes = _row_plan(g, (gcol, r), gmem)
        idx = _gather_index(off, inner_bytes, e)[0]          # (n0, e)
        row = np.empty((n0, e), np.uint8)
        v = valid[0]
        if v.any():
            row[v] = gmem.buffers[int(buf[0])].u8[idx[v]]
        row[~v] = (np.resize(OOB_NAN_PATTERN, e) if tmap.oob_fill == "nan_request_zero_fma"
                   else 0)
        data[k] = row.reshape(-1)
    _chunks(smem)[_chunk_index(sv, dst, 4)] = _expand(tmap, data).reshape(4, -1, 16)
    return 4 * tmap.box_elements[0] * tmap.element_bits // 8


def scatter4_store(tmap: TensorMap, coords, gmem: GlobalMemory, smem: np.ndarray,
                   src: int) -> int:
    col, rows = int(coords[0]), [int(r) for r in coords[1:5]]
    box = _four_rows(tmap)
    check_packed_copy(tmap, [[col, r] for r in rows], store=True)
    g, _ = _views(tmap)
    _, sv = _views(box)
    _check_smem_window(smem, src, sv.smem_footprint, 128, "cp.async.bulk.tensor")
    gcol = int(_global_coords(tmap, [col, 0])[0])
    e = g.element_bytes
    n0 = g.box_elements[0]
    data = _compress(tmap, _chunks(smem)[_chunk_index(sv, src, 4)].reshape(4, -1))
    data = data.reshape(4, n0, e)
    for k, r in enumerate(rows):
        valid, off, buf, inner_bytes = _row_plan(g, (gcol, r), gmem)
        idx = _gather_index(off, inner_bytes, e)[0]
        v = valid[0]
        if v.any():
            gmem.buffers[int(buf[0])].u8[idx[v]] = data[k][v]
    return 4 * tmap.box_elements[0] * tmap.element_bits // 8


# ------------------------------------------------------------------------------------- im2col
def im2col_coordinates(tmap: TensorMap, coords, offsets) -> np.ndarray:
    """(rank, pixels) coordinates of each pixel's first channel (dimension 0 = the channel
    coordinate), in the pixel order of the shared-memory rows (5.5.4)."""
    r = tmap.rank
    c = [int(x) for x in coords]
    if len(c) != r:
        raise OperandError(f"{len(c)} tensor coordinates for a rank-{r} tensor map")
    offs = [int(x) for x in offsets]
    if len(offs) != r - 2:
        raise OperandError(f"im2col needs {r - 2} im2col offsets for a rank-{r} tensor map "
                           f"(got {len(offs)})")
    es = tmap.element_strides
    lo = [tmap.lower_corner[i] for i in range(r - 2)]
    hi = [tmap.global_dim[1 + i] - 1 + tmap.upper_corner[i] for i in range(r - 2)]
    steps = [int(es[1 + i]) for i in range(r - 2)]
    counts = [max(0, (hi[i] - lo[i]) // steps[i] + 1) for i in range(r - 2)]
    # the filter base's place in the walk of the bounding box, then the pixels after it
    k0 = [(c[1 + i] - lo[i]) // steps[i] for i in range(r - 2)]
    lin0 = c[r - 1]
    for i in reversed(range(r - 2)):
        lin0 = lin0 * counts[i] + k0[i]
    lin = lin0 + np.arange(tmap.pixels_per_column, dtype=np.int64)
    out = np.empty((r, lin.size), np.int64)
    out[0] = c[0]
    rest = lin
    for i in range(r - 2):
        k = rest % counts[i]
        rest = rest // counts[i]
        out[1 + i] = lo[i] + k * steps[i] + offs[i]
    out[r - 1] = rest
    return out


def im2col_load(tmap: TensorMap, coords, offsets, gmem: GlobalMemory, smem: np.ndarray,
                dst: int) -> int:
    if tmap.interleave != "none":
        raise UnsupportedFeature(f"im2col tensor maps with interleave {tmap.interleave}")
    if not isinstance(tmap.global_address, (int, np.integer)):
        raise OperandError("tensor map not bound to global memory")
    if len(coords) == tmap.rank:
        check_packed_copy(tmap, [coords])
    g, sv = _views(tmap)                 # packed types: channels counted in bytes
    e = g.element_bytes
    cpp, ppc = g.channels_per_pixel, g.pixels_per_column
    box = dataclasses.replace(sv, mode="tiled",
                              box_dim=(sv.channels_per_pixel, ppc) + (1,) * (tmap.rank - 2))
    _check_smem_window(smem, dst, ppc * box.smem_row_pitch, 128, "cp.async.bulk.tensor")
    pix = im2col_coordinates(g, _global_coords(tmap, coords), offsets)   # (rank, ppc)
    ch = pix[0][:, None] + np.arange(cpp, dtype=np.int64)[None, :]  # (ppc, cpp)
    dims = np.array(g.global_dim, np.int64)
    ok_pix = ((pix[1:] >= 0) & (pix[1:] < dims[1:, None])).all(axis=0)
    valid = ok_pix[:, None] & (ch >= 0) & (ch < dims[0])
    strides = np.array(tmap.global_strides, np.int64)
    addr = int(tmap.global_address) + (pix[1:] * strides[:, None]).sum(axis=0)[:, None] + ch * e
    data = np.empty((ppc, cpp, e), np.uint8)
    data[~valid] = (np.resize(OOB_NAN_PATTERN, e) if tmap.oob_fill == "nan_request_zero_fma"
                    else 0)
    if valid.any():
        data[valid] = gmem.read(addr[valid].astype(np.uint64), e)
    data = _expand(tmap, data.reshape(ppc, -1))
    _chunks(smem)[_chunk_index(box, dst, ppc)] = data.reshape(ppc, -1, 16)
    return ppc * tmap.channels_per_pixel * tmap.element_bits // 8
