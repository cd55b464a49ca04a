"""tcgen05.ld / tcgen05.st / tcgen05.ld.red / tcgen05.wait (PTX ISA 9.7.16.2.3, 9.7.16.8).

A warp moves a fragment between its registers and Tensor Memory. The fragment of each shape is a
fixed map (thread t, register j) -> (lane offset, column offset) from the base address taddr;
`.num` repeats the base shape along the columns (Table 47). The maps (the spec's Figures 183-187,
missing from our copy of the text) are transcribed from CuTe's copy traits
(include/cute/atom/copy_traits_sm100.hpp, SM100_TMEM_LOAD_*; see docs/tmem.md):

  .32x32b    lane t,                     column j
  .16x64b    lane t/4 + 8*(t%2),         column (t/2)%2 + 2*j
  .16x128b   lane t/4 + 8*(j%2),         column t%4 + 4*(j/2)
  .16x256b   lane t/4 + 8*((j/2)%2),     column 2*(t%4) + j%2 + 8*(j/4)
  .16x32bx2  lane t%16,                  column j, plus immHalfSplitoff for t >= 16

With .pack::16b (ld) / .unpack::16b (st) a register holds the low 16 bits of two adjacent
columns: the logical column c above becomes Tensor Memory columns 2c (register bits [15:0]) and
2c+1 (bits [31:16]) (9.7.16.8.2; CuTe's *_16b traits). The split offset of .16x32bx2 is added
after that doubling.

Access rule (9.7.16.8.1): warp w of the CTA may reach only lanes 32*(w%4) .. 32*(w%4)+31.
All threads of a warp must give the same taddr (undefined otherwise).

Every function is vectorised over all threads of all warps: one gather / scatter with index
tables built once per (shape, num, pack).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ptxsim.errors import (OperandError, PtxValidationError, SpecDeviationWarning, TmemAccessError,
                           UndefinedBehavior)
from ptxsim.isa.legality import Form, Operand, Slot, check_form, check_notes, match_slots
from ptxsim.isa.targets import TCGEN05, Arch, Family, Req
from ptxsim.isa.tmem import (ALIGNED, B32, COLUMN_MASK, LANE_SHIFT, LANES_PER_WARP,
                             N_COLUMNS, N_LANES, SYNC, TCGEN05_SINCE,
                             TensorMemory, cells_of, split_address)

WARP = 32

# ----------------------------------------------------------------------- legality, as data
# The one table of tcgen05.ld / st / ld.red / wait (9.7.16.8.3-5): read by the functions below
# and by the front-end validator (ptx/legality/tcgen05.py), vocabulary ptxsim.isa.legality.
# 9.7.16.8.3 Table 47 (= Table 48 for st): registers of each .shape at .x1; .num repeats them,
# and a (.shape, .num) that would need more than MAX_REGISTERS registers is "NA".
REGS_AT_X1 = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}
MAX_REGISTERS = 128
SHAPES = tuple(REGS_AT_X1)
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_NUM = {s: max(n for n in NUMS if n * r <= MAX_REGISTERS) for s, r in REGS_AT_X1.items()}
LANES_OF_SHAPE = {"32x32b": 32, "16x64b": 16, "16x128b": 16, "16x256b": 16, "16x32bx2": 16}
# "[taddr]{, immHalfSplitoff}": the immediate is given exactly with .16x32bx2 (9.7.16.8.3)
SPLIT_SHAPE = "16x32bx2"

# 9.7.16.8.3: tcgen05.ld.red shapes, operators and types; .num at least .x2; .abs and .NaN
# only with .f32. PTX ISA 8.8; Target ISA notes LD_RED_TARGETS (sm_110f from PTX ISA 9.0).
RED_SHAPES = ("32x32b", "16x32bx2")
RED_OPS = ("min", "max")
RED_TYPES = ("f32", "u32", "s32")
RED_MIN_NUM = 2
RED_FLOAT_ONLY = ("abs", "NaN")
LD_RED_TARGETS = Req(Arch("sm_101a"), Family("sm_101f"), Family("sm_103f"),
                     Family("sm_110f", (9, 0)))


def _dotted(values) -> tuple:
    return tuple("." + v for v in values)


SHAPE_SLOT = Slot.of(".shape", _dotted(SHAPES), True)
NUM_SLOT = Slot.of(".num", tuple(f".x{n}" for n in NUMS), True)
_R, _TADDR = Operand("r", "vec"), Operand("taddr", "addr")
_SPLIT = Operand("immHalfSplitoff", "imm", optional=True)

FORMS: dict[str, Form] = {f.name: f for f in [
    # tcgen05.ld.sync.aligned.shape.num{.pack::16b}.b32 r, [taddr]{, immHalfSplitoff};
    Form("tcgen05.ld", "tcgen05.ld",
         (SYNC, ALIGNED, SHAPE_SLOT, NUM_SLOT, Slot.of(".pack", ".pack::16b"), B32),
         (_R, _TADDR, _SPLIT), TCGEN05_SINCE, TCGEN05, "9.7.16.8.3"),
    # tcgen05.ld.red.sync.aligned.shape.num.redOp{.abs}{.NaN}.type r, redval, [taddr]{, imm};
    Form("tcgen05.ld.red", "tcgen05.ld",
         (Slot.of(".red", ".red", True), SYNC, ALIGNED, Slot.of(".shape", _dotted(RED_SHAPES), True),
          NUM_SLOT, Slot.of(".redOp", _dotted(RED_OPS), True), Slot.of(".abs", ".abs"),
          Slot.of(".NaN", ".NaN"), Slot.of(".type", _dotted(RED_TYPES), True)),
         (_R, Operand("redval", "r32"), _TADDR, _SPLIT), (8, 8), LD_RED_TARGETS, "9.7.16.8.3"),
    # tcgen05.st.sync.aligned.shape.num{.unpack::16b}.b32 [taddr]{, immHalfSplitoff}, r;
    Form("tcgen05.st", "tcgen05.st",
         (SYNC, ALIGNED, SHAPE_SLOT, NUM_SLOT, Slot.of(".unpack", ".unpack::16b"), B32),
         (_TADDR, _SPLIT, _R), TCGEN05_SINCE, TCGEN05, "9.7.16.8.4"),
    # tcgen05.wait_operation.sync.aligned;  .wait_operation = { .wait::ld, .wait::st }
    Form("tcgen05.wait", "tcgen05.wait",
         (Slot.of(".wait_operation", "::ld ::st", True), SYNC, ALIGNED), (), TCGEN05_SINCE,
         TCGEN05, "9.7.16.8.5"),
]}


def form_of(opcode: str, qualifiers=()) -> Form:
    """The row of FORMS an opcode and its qualifiers name (tcgen05.ld + .red -> tcgen05.ld.red)."""
    name = opcode + (".red" if opcode == "tcgen05.ld" and ".red" in qualifiers else "")
    if name not in FORMS:
        raise PtxValidationError(f"'{opcode}' is not one of tcgen05.ld, tcgen05.st, "
                                 "tcgen05.wait (9.7.16.8)")
    return FORMS[name]


def with_shape(form: Form, shape: str | None) -> Form:
    """The row with its operand list fixed by the shape: immHalfSplitoff is required with
    .16x32bx2 and absent otherwise (9.7.16.8.3-4)."""
    if not any(o is _SPLIT for o in form.operands):
        return form
    split = shape in (SPLIT_SHAPE, "." + SPLIT_SHAPE)
    ops = tuple(replace(o, optional=False) if o is _SPLIT else o for o in form.operands
                if split or o is not _SPLIT)
    return replace(form, operands=ops)


def registers_of(shape: str, num: int) -> int | None:
    """Table 47 / 48: the register-vector length of (shape, num); None where the table says NA
    (more than MAX_REGISTERS). Shape and num without dots: ("16x128b", 64)."""
    n = REGS_AT_X1[shape] * num
    return n if n <= MAX_REGISTERS else None


def check(opcode: str, qualifiers=(), operands=(), target: str | None = None,
          ptx_version=None) -> Form:
    """Raise PtxValidationError unless the instruction is legal per FORMS, the shape x num rule
    of Tables 47/48 and the .red rules (and, when given, on `target` with `ptx_version`).
    Operands as isa.legality.check_form takes them. Returns the row."""
    f = form_of(opcode, qualifiers)
    got, _ = match_slots(f.slots, qualifiers)
    shape = got[".shape"][1:] if got.get(".shape") else None
    num = int(got[".num"][2:]) if got.get(".num") else None
    where = f"'{opcode}{''.join(qualifiers)}' ({f.source})"
    check_form(with_shape(f, shape), tuple(qualifiers), tuple(operands), None, None)
    if f.name == "tcgen05.ld.red":
        try:
            check_ld_red(shape, num, got[".redOp"][1:], got[".type"][1:], bool(got[".abs"]),
                         bool(got[".NaN"]))
        except OperandError as e:
            raise PtxValidationError(f"{where}: {e}") from None
    elif shape is not None and registers_of(shape, num) is None:        # not tcgen05.wait
        raise PtxValidationError(f"{where}: .{shape} with .x{num} needs more than "
                                 f"{MAX_REGISTERS} registers (Table 47/48)")
    check_notes(f, target, ptx_version, where)
    return f


CANONICAL_NAN_F32 = np.uint32(0x7FFFFFFF)


def legal_nums(shape: str) -> tuple[int, ...]:
    """The .num values Table 47 allows for `shape`."""
    check_shape(shape)
    return tuple(n for n in NUMS if n <= MAX_NUM[shape])


def num_registers(shape: str, num: int) -> int:
    """Length of the register vector for (shape, num) (Table 47); the same with .pack."""
    check_shape_num(shape, num)
    return REGS_AT_X1[shape] * num


def check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise OperandError(f"tcgen05.ld/st: shape '.{shape}' is not one of "
                           f"{', '.join('.' + s for s in SHAPES)} (9.7.16.2.3)")


def check_shape_num(shape: str, num: int) -> None:
    check_shape(shape)
    if num not in NUMS or registers_of(shape, num) is None:
        raise OperandError(f"tcgen05.ld/st: '.x{num}' is not legal with '.{shape}'; Table 47 "
                           f"allows {', '.join(f'.x{n}' for n in NUMS if n <= MAX_NUM[shape])}")


@dataclass(frozen=True)
class FragmentMap:
    """(thread, register) -> (lane offset, column offset) of one (shape, num, pack).

    `lane`, `column`: int arrays (32, R) for unpacked; for packed the column array is
    (32, R, 2): [..., 0] feeds register bits [15:0], [..., 1] bits [31:16].
    `second_half`: bool (32, R), the .16x32bx2 threads whose column gets immHalfSplitoff.
    """

    shape: str
    num: int
    pack: bool
    lane: np.ndarray
    column: np.ndarray
    second_half: np.ndarray

    @property
    def nregs(self) -> int:
        return self.lane.shape[1]

    def columns_spanned(self) -> int:
        """Columns touched from taddr, not counting the .16x32bx2 split offset."""
        return int(self.column.max()) + 1


def _logical_map(shape: str, num: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(WARP)[:, None]
    j = np.arange(REGS_AT_X1[shape] * num)[None, :]
    t, j = np.broadcast_arrays(t, j)
    second = np.zeros(t.shape, bool)
    if shape == "32x32b":        # Figure 183
        lane, col = t, j
    elif shape == "16x64b":      # Figure 184
        lane, col = t // 4 + 8 * (t % 2), (t // 2) % 2 + 2 * j
    elif shape == "16x128b":     # Figure 185
        lane, col = t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)
    elif shape == "16x256b":     # Figure 186
        lane, col = t // 4 + 8 * ((j // 2) % 2), 2 * (t % 4) + j % 2 + 8 * (j // 4)
    else:                        # .16x32bx2, Figure 187: two .16x32b accesses
        lane, col, second = t % 16, j, t >= 16
    return lane.astype(np.int64), col.astype(np.int64), second


@lru_cache(maxsize=None)
def fragment_map(shape: str, num: int, pack: bool = False) -> FragmentMap:
    """The fragment of `tcgen05.{ld,st}.<shape>.x<num>{.pack::16b}`; computed once, cached."""
    check_shape_num(shape, num)
    lane, col, second = _logical_map(shape, num)
    if pack:
        col = np.stack([2 * col, 2 * col + 1], axis=-1)
    for a in (lane, col, second):
        a.setflags(write=False)
    return FragmentMap(shape, num, bool(pack), lane, col, second)


# --------------------------------------------------------------------------------------------
# address resolution, shared by ld / st / ld.red
# --------------------------------------------------------------------------------------------

def _per_warp(value, nwarps: int, what: str, name: str) -> np.ndarray:
    """One value per warp from a scalar, a per-warp (W,) or per-thread (32W,) operand."""
    a = np.asarray(value, dtype=np.int64)
    if a.ndim == 0:
        return np.full(nwarps, int(a), np.int64)
    if a.shape == (WARP * nwarps,):
        a = a.reshape(nwarps, WARP)
        bad = np.flatnonzero(np.any(a != a[:, :1], axis=1))
        if bad.size:
            w = int(bad[0])
            raise UndefinedBehavior(f"{what}: threads of warp {w} gave different {name} values "
                                    f"{sorted(set(int(x) for x in a[w]))[:4]}...; all threads "
                                    "must give the same base address (9.7.16.8.3)")
        return a[:, 0]
    if a.shape == (nwarps,):
        return a
    raise OperandError(f"{what}: {name} must be a scalar, one value per warp ({nwarps},) or one "
                       f"per thread ({WARP * nwarps},); got shape {a.shape}")


def _warps(warp_ids, nwarps_hint: int | None) -> np.ndarray:
    if warp_ids is None:
        return np.arange(nwarps_hint or 1, dtype=np.int64)
    w = np.atleast_1d(np.asarray(warp_ids, dtype=np.int64))
    if w.ndim != 1 or np.any(w < 0):
        raise OperandError(f"tcgen05.ld/st: warp ids must be non-negative integers, got {warp_ids}")
    return w


def resolve(tmem, fmap: FragmentMap, taddr, warps: np.ndarray, split, what: str):
    """Absolute (lane, column) index arrays (W, 32, R[, 2]) with every access rule checked."""
    nw = warps.size
    base = _per_warp(taddr, nw, what, "taddr")
    base_lane, base_col = split_address(base)
    base_lane, base_col = np.atleast_1d(base_lane), np.atleast_1d(base_col)
    if fmap.shape == "16x32bx2":
        if split is None:
            raise OperandError(f"{what}: .16x32bx2 needs the immediate immHalfSplitoff")
        # ptxas 13.0 accepts any 32-bit immediate (even -1); where the second half lands is
        # checked below like every other column.
        split = int(split)
    elif split is not None:
        raise OperandError(f"{what}: immHalfSplitoff is only allowed with .16x32bx2, "
                           f"not .{fmap.shape}")
    lanes = base_lane[:, None, None] + fmap.lane[None]
    col = fmap.column
    if fmap.shape == "16x32bx2":
        second = fmap.second_half[..., None] if fmap.pack else fmap.second_half
        col = col + split * second
    cols = base_col[:, None, None, *([None] if fmap.pack else [])] + col[None]
    if fmap.pack:
        lanes = np.broadcast_to(lanes[..., None], cols.shape)

    # 9.7.16.8.1: warp w%4 reaches lanes 32*(w%4) .. +31 only.
    lo = (LANES_PER_WARP * (warps % 4)).reshape((nw,) + (1,) * (lanes.ndim - 1))
    bad = (lanes < lo) | (lanes >= lo + LANES_PER_WARP)
    if bad.any():
        lanes = _own_quarter(lanes, lo, bad, nw, what)
        bad = (lanes < lo) | (lanes >= lo + LANES_PER_WARP)
    if bad.any():
        w, *rest = np.unravel_index(np.flatnonzero(bad)[0], bad.shape)
        raise TmemAccessError(
            f"{what}: warp {int(warps[w])} (warp {int(warps[w]) % 4} of its warpgroup) may access "
            f"only lanes {int(lo.ravel()[w])}-{int(lo.ravel()[w]) + 31} (9.7.16.8.1); "
            f".{fmap.shape} from taddr lane {int(base_lane[w])} reaches outside",
            warp=int(warps[w]), lane=int(lanes[(w, *rest)]), column=int(cols[(w, *rest)]))
    over = (cols >= N_COLUMNS) | (cols < 0)
    if over.any():
        w, *rest = np.unravel_index(np.flatnonzero(over)[0], over.shape)
        raise TmemAccessError(f"{what}: column outside the {N_COLUMNS} columns of Tensor Memory",
                              warp=int(warps[w]), lane=int(lanes[(w, *rest)]),
                              column=int(cols[(w, *rest)]))
    if isinstance(tmem, TensorMemory):
        wgrid = np.broadcast_to(warps.reshape((nw,) + (1,) * (lanes.ndim - 1)), lanes.shape)
        tmem.check_allocated(lanes, cols, what, warps=wgrid)
    return lanes, cols


def _own_quarter(lanes, lo, bad, nw: int, what: str):
    """A warp whose taddr names lanes of another warp's quarter, all inside that one quarter:
    undefined in the PTX ISA (9.7.16.8.1), but DeepGEMM's sm100 epilogues issue tcgen05.ld with
    lane 0 from every warp of a warpgroup and give correct results on B200: the hardware takes
    the lane quarter from the warp. ptxsim does the same, with a SpecDeviationWarning. An access
    that crosses a quarter boundary stays a TmemAccessError."""
    flat = lanes.reshape(nw, -1)
    quarter = flat // LANES_PER_WARP
    one = (quarter == quarter[:, :1]).all(axis=1)
    fix = bad.reshape(nw, -1).any(axis=1) & one
    if not fix.any():
        return lanes
    first = int(flat[fix][0, 0])
    warnings.warn(SpecDeviationWarning(
        f"{what}: taddr lane {first} names lanes of another warp's quarter (undefined, "
        "9.7.16.8.1); "
        "the warp's own quarter is used, as the hardware does (DeepGEMM relies on it)"),
        stacklevel=3)
    out = flat.copy()
    lo_flat = lo.reshape(nw, -1)[:, :1]
    out[fix] = lo_flat[fix] + out[fix] % LANES_PER_WARP
    return out.reshape(lanes.shape)


def _nwarps_from(taddr) -> int | None:
    """Warps implied by a taddr operand: (32W,) per thread, else (W,) per warp."""
    a = np.asarray(taddr)
    if a.ndim == 1 and a.size:
        return a.size // WARP if a.size % WARP == 0 else a.size
    return None


def _name(op: str, shape: str, num: int, pack: str | None) -> str:
    return f"tcgen05.{op}.sync.aligned.{shape}.x{num}" + (f".{pack}" if pack else "")


# --------------------------------------------------------------------------------------------
# the instructions
# --------------------------------------------------------------------------------------------

def tcgen05_ld(tmem, shape: str, num: int, taddr, warp_ids=None, pack: bool = False,
               split: int | None = None, target: str | None = None,
               ptx_version=None, where: str = "") -> np.ndarray:
    """tcgen05.ld.sync.aligned.<shape>.x<num>{.pack::16b}.b32 r, [taddr]{, immHalfSplitoff}.

    tmem: TensorMemory (allocation-checked) or a uint32 (128, 512) array.
    taddr: scalar, per warp (W,) or per thread (32W,); warp_ids: the warps' ids in the CTA.
    Returns uint32 registers (32W, R), row = thread (warp-major), column = register index.
    With `target` / `ptx_version`: first the notes of FORMS["tcgen05.ld"] (PtxValidationError).
    """
    what = where + _name("ld", shape, num, "pack::16b" if pack else None)
    check_notes(FORMS["tcgen05.ld"], target, ptx_version)
    fmap = fragment_map(shape, num, pack)
    warps = _warps(warp_ids, _nwarps_from(taddr))
    lanes, cols = resolve(tmem, fmap, taddr, warps, split, what)
    cells = cells_of(tmem)
    got = cells[lanes, cols]
    if pack:
        got = (got[..., 0] & 0xFFFF) | ((got[..., 1] & 0xFFFF) << 16)
    return got.reshape(warps.size * WARP, fmap.nregs).astype(np.uint32)


def tcgen05_st(tmem, shape: str, num: int, taddr, regs, warp_ids=None, unpack: bool = False,
               split: int | None = None, target: str | None = None, ptx_version=None,
               where: str = "") -> None:
    """tcgen05.st.sync.aligned.<shape>.x<num>{.unpack::16b}.b32 [taddr]{, imm}, r.

    regs: uint32 (32W, R). With .unpack::16b, bits [15:0] go to column 2c and [31:16] to 2c+1,
    each into the low half of the 32-bit cell; ptxsim writes zero to the upper half (the spec's
    Figure 193 is missing; 9.7.16.10.4.1 puts a 16-bit element in the low half of its cell).
    """
    what = where + _name("st", shape, num, "unpack::16b" if unpack else None)
    check_notes(FORMS["tcgen05.st"], target, ptx_version)
    fmap = fragment_map(shape, num, unpack)
    r = np.asarray(regs)
    if r.ndim != 2 or r.shape[1] != fmap.nregs or r.shape[0] % WARP or r.shape[0] == 0:
        raise OperandError(f"{what}: registers must have shape (32*warps, {fmap.nregs}) "
                           f"(Table 48); got {r.shape}")
    if r.dtype.kind not in "ui":
        raise OperandError(f"{what}: registers must be integer .b32 bits, got dtype {r.dtype}")
    r = r.astype(np.int64) & 0xFFFFFFFF
    warps = _warps(warp_ids, r.shape[0] // WARP)
    if warps.size * WARP != r.shape[0]:
        raise OperandError(f"{what}: {warps.size} warp ids for {r.shape[0] // WARP} warps of "
                           "registers")
    lanes, cols = resolve(tmem, fmap, taddr, warps, split, what)
    vals = r.reshape(warps.size, WARP, fmap.nregs)
    if unpack:
        vals = np.stack([vals & 0xFFFF, vals >> 16], axis=-1)
    if len(set((warps % 4).tolist())) < warps.size:
        _check_no_conflicting_writes(lanes, cols, vals, what)
    cells = cells_of(tmem)
    cells[lanes, cols] = vals.astype(np.uint32)


def _ctas_plan(tmems, cells, which, shape, num, taddr, warp_ids, pack, split, what):
    """(lanes, cols, row of each warp in cells) for warps of several CTAs (tcgen05_ld_ctas /
    tcgen05_st_ctas), every rule of `resolve` checked; None when a CTA's allocation check
    would fail (the per-CTA path then raises it, naming the cell)."""
    fmap = fragment_map(shape, num, pack)
    warps = np.asarray(warp_ids, np.int64)
    rect = _rect_plan(tmems, fmap, taddr, warps, which, split)
    if rect is not None:
        return fmap, rect
    lanes, cols = resolve(cells[0], fmap, taddr, warps, split, what)    # no allocation check
    which = np.asarray(which, np.int64)
    u, inv = np.unique(which, return_inverse=True)
    at = (-1,) + (1,) * (cols.ndim - 1)
    if any(tm.strict for tm in tmems):
        mask = np.stack([tm.allocated_mask if tm.strict else np.ones(N_COLUMNS, bool)
                         for tm in tmems])
        if not np.take(mask.reshape(-1), inv.reshape(at) * N_COLUMNS + cols).all():
            return None
    # one flat index per cell (a single-index gather / scatter is the fast one)
    flat = (which.reshape(at) * N_LANES + lanes) * N_COLUMNS + cols
    return fmap, flat


_WARP_LANES = np.arange(WARP, dtype=np.int64)


def _rect_plan(tmems, fmap: FragmentMap, taddr, warps: np.ndarray, which, split):
    """The common case of `_ctas_plan` without per-cell index arrays: .32x32b (Figure 183:
    thread t reaches lane base + t, register j column base + j), no split, every warp at lane
    32 * (warp % 4) of its quarter and at one column base, all in range and allocated. Then
    warp w's cells are the rectangle cells[which[w], base_lane[w] + 0..31, col : col + R];
    returns (index of cells, the shape it selects), the index (CTA rows (W, 1), lanes (W, 32),
    column slice) or, when each CTA's four warps come in quarter order, (CTA rows or their
    slice, all lanes, column slice); or None for the general path (which checks, and raises,
    cell by cell)."""
    if fmap.shape != "32x32b" or fmap.pack or split is not None:
        return None
    base = np.asarray(taddr, np.int64)
    if base.shape != warps.shape:
        return None
    base = base & 0xFFFFFFFF
    lane0, col = base >> LANE_SHIFT, base & COLUMN_MASK
    c0 = int(col[0])
    if (col != c0).any() or c0 + fmap.nregs > N_COLUMNS or \
            (lane0 != LANES_PER_WARP * (warps % 4)).any():
        return None
    which = np.asarray(which, np.int64)
    if any(tm.strict for tm in tmems):
        u = np.unique(which)
        if u.size != len(tmems):
            return None
        for tm in tmems:
            if tm.strict and not tm.allocated_mask[c0:c0 + fmap.nregs].all():
                return None
    cs = slice(c0, c0 + fmap.nregs)
    W = warps.size
    if W % 4 == 0:
        w4, q4 = which.reshape(-1, 4), (warps % 4).reshape(-1, 4)
        if (q4 == np.arange(4)).all() and (w4 == w4[:, :1]).all():
            # each CTA's four warps in quarter order: all 128 lanes of its rows
            u = w4[:, 0]
            if (np.diff(u) == 1).all():
                u = slice(int(u[0]), int(u[-1]) + 1)
            return (u, slice(None), cs), (W // 4, N_LANES, fmap.nregs)
    return (which[:, None], lane0[:, None] + _WARP_LANES, cs), (W, WARP, fmap.nregs)


def tcgen05_ld_ctas(tmems, cells, which, shape: str, num: int, taddr, warp_ids,
                    pack: bool = False, split: int | None = None):
    """`tcgen05_ld` for warps of several CTAs in one gather: cells (n, 128, 512) the Tensor
    Memory of n CTAs, which (W,) each warp's CTA row, tmems the TensorMemory of each distinct
    row in sorted order (their allocation checks), taddr / warp_ids per warp (warp ids within
    the CTA). Returns (32W, R) registers, warps in order; or None when an allocation check
    fails (then `tcgen05_ld` per CTA raises it)."""
    what = _name("ld", shape, num, "pack::16b" if pack else None)
    plan = _ctas_plan(tmems, cells, which, shape, num, taddr, warp_ids, pack, split, what)
    if plan is None:
        return None
    fmap, flat = plan
    if isinstance(flat, tuple):                     # _rect_plan: by slicing
        got = cells[flat[0]]
        return got.reshape(-1, fmap.nregs).astype(np.uint32, copy=False)
    got = np.take(cells.reshape(-1), flat)
    if pack:
        got = (got[..., 0] & 0xFFFF) | ((got[..., 1] & 0xFFFF) << 16)
    return got.reshape(flat.shape[0] * WARP, fmap.nregs).astype(np.uint32, copy=False)


def tcgen05_st_ctas(tmems, cells, which, shape: str, num: int, taddr, regs, warp_ids,
                    unpack: bool = False, split: int | None = None) -> bool:
    """`tcgen05_st` for warps of several CTAs in one scatter (arguments as tcgen05_ld_ctas;
    regs (32W, R)). Returns False, having written nothing, when an allocation check fails or
    two warps of one CTA share a lane quarter (then `tcgen05_st` per CTA decides)."""
    what = _name("st", shape, num, "unpack::16b" if unpack else None)
    warps = np.asarray(warp_ids, np.int64)
    which_a = np.asarray(which, np.int64)
    if np.unique(which_a * 4 + warps % 4).size < warps.size:
        return False
    plan = _ctas_plan(tmems, cells, which, shape, num, taddr, warp_ids, unpack, split, what)
    if plan is None:
        return False
    fmap, flat = plan
    vals = np.asarray(regs).astype(np.uint32, copy=False).reshape(warps.size, WARP, fmap.nregs)
    if isinstance(flat, tuple):                     # _rect_plan: by slicing
        cells[flat[0]] = vals.reshape(flat[1])
        return True
    if unpack:
        vals = np.stack([vals & np.uint32(0xFFFF), vals >> np.uint32(16)], axis=-1)
    cells.reshape(-1)[flat] = vals
    return True


def _check_no_conflicting_writes(lanes, cols, vals, what: str) -> None:
    """Two warps of the same lane quarter storing different bits to one cell: a race."""
    flat = (lanes * N_COLUMNS + cols).ravel()
    order = np.argsort(flat, kind="stable")
    f, v = flat[order], vals.ravel()[order]
    dup = (f[1:] == f[:-1]) & (v[1:] != v[:-1])
    if dup.any():
        k = int(f[1:][dup][0])
        raise UndefinedBehavior(f"{what}: two warps store different values to lane "
                                f"{k // N_COLUMNS}, column {k % N_COLUMNS} in one step; the "
                                "order of their stores is undefined")


def _f32_key(bits: np.ndarray) -> np.ndarray:
    """Monotone integer key of f32 bit patterns: -inf < ... < -0 < +0 < ... < +inf."""
    b = bits.astype(np.int64)
    return np.where(b & 0x80000000, 0xFFFFFFFF - b, b | 0x80000000)


def _key_to_f32(key: np.ndarray) -> np.ndarray:
    return np.where(key & 0x80000000, key & 0x7FFFFFFF, 0xFFFFFFFF - key)


def check_ld_red(shape: str, num: int, op: str, dtype: str, abs: bool = False,
                 nan: bool = False) -> None:
    """The qualifier rules of tcgen05.ld.red (9.7.16.8.3), as OperandError."""
    what = f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{op}"
    if shape not in RED_SHAPES:
        raise OperandError(f"{what}: .red needs shape .32x32b or .16x32bx2 (9.7.16.8.3)")
    if op not in RED_OPS:
        raise OperandError(f"{what}: reduction '.{op}' is not .min or .max (9.7.16.8.3)")
    if dtype not in RED_TYPES:
        raise OperandError(f"{what}: type '.{dtype}' is not .f32, .u32 or .s32 (9.7.16.8.3)")
    if dtype != "f32" and (abs or nan):                  # RED_FLOAT_ONLY
        raise OperandError(f"{what}: .abs and .NaN exist only for .f32 (9.7.16.8.3)")
    check_shape_num(shape, num)
    if num < RED_MIN_NUM:
        raise OperandError(f"{what}: with .red, .num must be at least .x2 (9.7.16.8.3)")


def tcgen05_ld_red(tmem, shape: str, num: int, op: str, dtype: str, taddr, warp_ids=None,
                   abs: bool = False, nan: bool = False, split: int | None = None,
                   target: str | None = None, ptx_version=None, where: str = ""):
    """tcgen05.ld.red.sync.aligned.<shape>.x<num>.<op>{.abs}{.NaN}.<type> r, redval, [taddr].

    Returns (regs (32W, num) uint32, redval (32W,) uint32). The reduction runs over the columns
    each thread loads (its `num` registers, all from one lane). f32 follows PTX min/max: -0 is
    below +0; NaN inputs are ignored unless .NaN is given, then any NaN gives the canonical NaN
    0x7FFFFFFF; all-NaN gives the canonical NaN. .abs reduces |x| (registers keep the raw bits).
    """
    check_notes(FORMS["tcgen05.ld.red"], target, ptx_version)
    check_ld_red(shape, num, op, dtype, abs, nan)
    regs = tcgen05_ld(tmem, shape, num, taddr, warp_ids, split=split, where=where)
    r = regs.astype(np.int64)
    if dtype == "u32":
        red = r.min(axis=1) if op == "min" else r.max(axis=1)
    elif dtype == "s32":
        s = np.where(r & 0x80000000, r - (1 << 32), r)
        red = (s.min(axis=1) if op == "min" else s.max(axis=1)) & 0xFFFFFFFF
    else:
        x = r & 0x7FFFFFFF if abs else r
        isnan = (x & 0x7FFFFFFF) > 0x7F800000
        key = _f32_key(x)
        fill = np.int64(0xFFFFFFFF) if op == "min" else np.int64(0)
        key = np.where(isnan, fill, key)
        k = key.min(axis=1) if op == "min" else key.max(axis=1)
        red = _key_to_f32(k)
        poison = isnan.all(axis=1) | (isnan.any(axis=1) if nan else False)
        red = np.where(poison, np.int64(CANONICAL_NAN_F32), red)
    return regs, red.astype(np.uint32)


WAIT_KINDS = tuple(v[2:] for v in FORMS["tcgen05.wait"].slots[0].values)   # ("ld", "st")


def tcgen05_wait(kind: str, target: str | None = None, ptx_version=None) -> None:
    """tcgen05.wait::ld / wait::st (9.7.16.8.5).

    tcgen05.ld / st complete when they are issued, here and in the kernel executor, so the wait
    has nothing left to order. A register a tcgen05.ld wrote may be read before the wait: a true
    register dependency is respected (9.7.16.6.4.5); the hazards the wait exists for (memory
    ordering, anti-dependencies on Tensor Memory) are not checked (docs/STATUS.md).
    """
    check_notes(FORMS["tcgen05.wait"], target, ptx_version)
    if kind not in WAIT_KINDS:
        raise OperandError(f"tcgen05.wait::{kind}: the operation must be ::ld or ::st (9.7.16.8.5)")
