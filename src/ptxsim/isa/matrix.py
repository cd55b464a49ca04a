"""Warp-level matrix movement: `ldmatrix`, `stmatrix`, `movmatrix` (PTX ISA 9.7.9.x / 9.7.14.5.15-17).

    ldmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16   r, [p];    shared -> registers
    stmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16   [p], r;    registers -> shared
    movmatrix.sync.aligned.m8n8.trans.b16             d, a;      transpose in registers
    ldmatrix.sync.aligned.m16n16.num.trans{.ss}.b8               r, [p];   (sm_100a+, 8-bit)
    ldmatrix.sync.aligned.m16n16.num.trans{.ss}.b8x16.src_fmt    r, [p];   (4/6-bit widened)
    ldmatrix.sync.aligned.m8n16.num{.ss}.b8x16.src_fmt           r, [p];
    stmatrix.sync.aligned.m16n8.num.trans{.ss}.b8                [p], r;

An 8x8 matrix of 16-bit elements: row r of matrix j starts at the address given by lane 8j + r
(16 bytes, naturally aligned; lanes beyond 8*num give none). In registers, lane l holds row l/4,
columns 2(l%4) and 2(l%4)+1 (lower half first) -- the mma A/C fragment; with .trans, the same
fragment of the transposed matrix. Measured on the H200 for every sm_90a form
(tests/isa/test_matrix_hw.py).

The pure functions return shared-memory byte addresses (the machine reads and writes memory);
nothing here touches memory.

The 8-bit shapes (9.7.14.5.15-16; the fragment figures 105-107 are not in the spec texts ptxsim
has, so the layout is the one the text describes, made exact by CUTLASS's
cute/atom/copy_traits_sm100.hpp SM100_U8x8_LDSM_T / SM100_SU4_DU8x16_*_LDSM_N /
SM100_U8x4_STSM_T thread-value layouts; docs/reach.md):
- every addressed row is 16 bytes, naturally aligned;
- .m16n16 (.trans mandatory): lanes 16j + i give row i of matrix j (a stored column of the
  16x16 logical matrix); lane l, register 2j + r, byte k holds logical row l/4 + 8r, column
  4(l%4) + k, i.e. stored row 4(l%4) + k, byte l/4 + 8r ("4 consecutive columns across 2 rows",
  the mma m16n8k32 8-bit A fragment);
- .m8n16 (no .trans): lanes 8j + i give row i of matrix j; lane l, register j, byte k holds
  row l/4, column 4(l%4) + k ("4 consecutive columns");
- .b8x16.b4x16_p64 / .b6x16_p32: each row is 16 packed 4-bit (6-bit) elements, element e at bits
  [4e, 4e+4) ([6e, 6e+6)) of the little-endian row, then 64 (32) bits of padding; element e
  becomes byte e, in its low bits (CUTLASS mma_traits_sm120.hpp: "ld.matrix b4x16_p64 places FP4
  data at the first four bits in each eight-bit container"), the other bits 0;
- stmatrix .m16n8 (.trans mandatory): lanes 8j + i give row i of matrix j (a column of the 16x8
  logical matrix, 16 bytes); lane l's register j holds e0..e3 (LSB first) = logical
  (l/4, 2(l%4)), (l/4, 2(l%4)+1), (l/4+8, 2(l%4)), (l/4+8, 2(l%4)+1): byte k goes to stored row
  2(l%4) + (k&1), byte l/4 + 8(k>>1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import PtxValidationError, UndefinedBehavior, UnsupportedFeature
from ptxsim.isa.registry import register
from ptxsim.isa.targets import Arch, AtLeast, Family, Req, parse_target, parse_version

LANES = 32
_lane = np.arange(LANES)
G, T = _lane >> 2, _lane % 4

# ------------------------------------------------------------------------------ legality table
# Syntax of 9.7.9.x ldmatrix / stmatrix / movmatrix and their notes, checked against ptxas 13.5
# (tests/isa/test_matrix_legality.py, tests/data/ptx/matrix_ptxas.json).
NUMS = (1, 2, 4)
SPACES = ("", ".shared", ".shared::cta")


@dataclass(frozen=True)
class MatrixForm:
    op: str                      # ldmatrix / stmatrix / movmatrix
    shape: str = "m8n8"
    num: int = 1
    trans: bool = False
    space: str = ""
    type: str = "b16"
    src: str = ""                # .b8x16 forms: b6x16_p32 / b4x16_p64

    @property
    def text(self) -> str:
        if self.op == "movmatrix":
            return "movmatrix.sync.aligned.m8n8.trans.b16"
        return (f"{self.op}.sync.aligned.{self.shape}.x{self.num}{'.trans' if self.trans else ''}"
                f"{self.space}.{self.type}{'.' + self.src if self.src else ''}")

    @property
    def nregs(self) -> int:
        """32-bit registers per lane (the vector operand's length)."""
        return 2 * self.num if self.shape == "m16n16" else self.num

    @property
    def rows(self) -> int:
        """Row addresses per matrix (16 bytes each for the 8-bit shapes)."""
        return 16 if self.shape == "m16n16" else 8


# (op, shape, type) -> (PTX ISA version, target requirement); the .b16 m8n8 forms are the ones
# every target runs; the sub-byte / 8-bit shapes need sm_100a-class targets (not modelled).
# The 8-bit shapes: PTX ISA 8.6, sm_100a/f, sm_110a/f, sm_120a/f (ptxas 13.5 takes them on those
# and refuses sm_90a; tests/data/ptx/wgmma_matrix_ptxas.json).
SM100_120 = Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_103a"), Arch("sm_110a"),
                Arch("sm_120a"), Arch("sm_121a"), Family("sm_100f"), Family("sm_110f", (9, 0)),
                Family("sm_120f"))
NOTES = {
    ("ldmatrix", "m8n8", "b16"): ((6, 5), Req(AtLeast(75))),
    ("stmatrix", "m8n8", "b16"): ((7, 8), Req(AtLeast(90))),
    ("movmatrix", "m8n8", "b16"): ((7, 8), Req(AtLeast(75))),
    ("ldmatrix", "m16n16", "b8"): ((8, 6), SM100_120),
    ("ldmatrix", "m16n16", "b8x16"): ((8, 6), SM100_120),
    ("ldmatrix", "m8n16", "b8x16"): ((8, 6), SM100_120),
    ("stmatrix", "m16n8", "b8"): ((8, 6), SM100_120),
}
SRC_FORMATS = (".b6x16_p32", ".b4x16_p64")
# (op, shape, type) -> (.trans rule: True mandatory / False forbidden / None optional, nums)
_SHAPES = {
    ("ldmatrix", "m8n8", ".b16"): (None, (1, 2, 4)),
    ("stmatrix", "m8n8", ".b16"): (None, (1, 2, 4)),
    ("ldmatrix", "m16n16", ".b8"): (True, (1, 2)),
    ("ldmatrix", "m16n16", ".b8x16"): (True, (1, 2)),
    ("ldmatrix", "m8n16", ".b8x16"): (False, (1, 2, 4)),
    ("stmatrix", "m16n8", ".b8"): (True, (1, 2, 4)),
}


def form_of(instruction) -> MatrixForm:
    op = instruction.opcode
    quals = list(instruction.qualifiers)
    for flag in (".sync", ".aligned"):
        if flag not in quals:
            raise PtxValidationError(f"{op} requires the {flag} qualifier")
        quals.remove(flag)
    shape = next((q[1:] for q in quals if q in (".m8n8", ".m16n16", ".m8n16", ".m16n8")), None)
    if shape is None:
        raise PtxValidationError(f"{op} needs a .shape qualifier (.m8n8, ...)")
    quals.remove("." + shape)
    trans = ".trans" in quals
    if trans:
        quals.remove(".trans")
    if op == "movmatrix":
        if quals != [".b16"] or not trans or shape != "m8n8":
            raise PtxValidationError("movmatrix is movmatrix.sync.aligned.m8n8.trans.b16 "
                                     "(PTX ISA 9.7.14.5.17)")
        return MatrixForm(op, shape, 1, True)
    nums = [q for q in quals if q in (".x1", ".x2", ".x4")]
    if len(nums) != 1:
        raise PtxValidationError(f"{op} needs one of .x1 / .x2 / .x4")
    quals.remove(nums[0])
    space = next((q for q in quals if q in (".shared", ".shared::cta")), "")
    if space:
        quals.remove(space)
    src = next((q for q in quals if q in SRC_FORMATS), "")
    if src:
        quals.remove(src)
    rest = "".join(quals)
    rule = _SHAPES.get((op, shape, rest))
    num = int(nums[0][2])
    if rule is None or (src != "") != (rest == ".b8x16"):
        raise PtxValidationError(f"{op}.{shape} with {rest + src or 'no type'} does not exist "
                                 "(PTX ISA 9.7.14.5.15-16)")
    if rule[0] is not None and rule[0] != trans:
        raise PtxValidationError(f"{op}.{shape}.{rest[1:]} {'requires' if rule[0] else 'takes no'}"
                                 " .trans (PTX ISA 9.7.14.5.15-16)")
    if num not in rule[1]:
        raise PtxValidationError(f"{op}.{shape} takes .num "
                                 f"{' / '.join('.x%d' % n for n in rule[1])}, not .x{num}")
    return MatrixForm(op, shape, num, trans, space, rest[1:], src[1:])


def check(form: MatrixForm, target: str, ptx_version=None) -> None:
    since, req = NOTES[(form.op, form.shape, form.type)]
    if not req.ok(parse_target(target)):
        raise PtxValidationError(f"{form.text} requires {req}, not {target}")
    if ptx_version is not None and parse_version(ptx_version) < since:
        raise PtxValidationError(f"{form.text} requires PTX ISA {since[0]}.{since[1]} or later")


# ----------------------------------------------------------------------------- semantics
def row_addresses(form: MatrixForm, addr: np.ndarray) -> np.ndarray:
    """addr (W, 32) per-lane addresses -> (num, W, 8) start address of row r of matrix j
    (lane 8j + r). Raises UndefinedBehavior for a row start that is not 16-byte aligned."""
    addr = np.asarray(addr, np.int64)
    rows = addr[:, :8 * form.num].reshape(addr.shape[0], form.num, 8).transpose(1, 0, 2)
    bad = rows % 16 != 0
    if bad.any():
        j, w, r = (int(x[0]) for x in np.nonzero(bad))
        raise UndefinedBehavior(f"{form.text}: row {r} of matrix {j} (lane {8 * j + r} of warp "
                                f"{w}) starts at 0x{int(rows[j, w, r]):x}, not 16-byte aligned "
                                "(the rows must be naturally aligned)")
    return rows


def element_addresses(form: MatrixForm, addr: np.ndarray) -> np.ndarray:
    """(num, W, 32, 2): the shared-memory byte address of the low and high 16-bit half of each
    lane's register j (ldmatrix reads them, stmatrix writes them)."""
    rows = row_addresses(form, addr)                              # (num, W, 8)
    half = np.arange(2)
    if not form.trans:
        r = np.broadcast_to(G[:, None], (LANES, 2))                # row l/4
        c = 2 * T[:, None] + half                                 # cols 2(l%4) + h
    else:
        r = 2 * T[:, None] + half                                 # transposed
        c = np.broadcast_to(G[:, None], (LANES, 2))
    return rows[:, :, r] + 2 * c                                  # (num, W, 32, 2)


def pack_halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (lo.astype(np.uint32) & 0xFFFF) | (hi.astype(np.uint32) << 16)


def ldmatrix(form: MatrixForm, smem: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Registers (nregs, W, 32) uint32 loaded from `smem` (uint8, indexed by address) at the
    lanes' addresses `addr` (W, 32)."""
    if is_byte_form(form):
        rows = byte_row_addresses(form, addr)
        return gather_bytes(form, np.asarray(smem, np.uint8)[rows[..., None] + np.arange(16)])
    ea = element_addresses(form, addr)
    s16 = lambda a: smem[a].astype(np.uint32) | (smem[a + 1].astype(np.uint32) << 8)
    return pack_halves(s16(ea[..., 0]), s16(ea[..., 1]))


def stmatrix(form: MatrixForm, smem: np.ndarray, addr: np.ndarray, regs: np.ndarray) -> None:
    """Store registers (num, W, 32) into `smem` (uint8, in place)."""
    if is_byte_form(form):
        rows = byte_row_addresses(form, addr)
        smem[rows[..., None] + np.arange(16)] = scatter_bytes(form, regs)
        return
    ea = element_addresses(form, addr)
    regs = np.asarray(regs, np.uint32)
    for h in (0, 1):
        v = (regs >> np.uint32(16 * h)) & np.uint32(0xFFFF)
        smem[ea[..., h]] = (v & 0xFF).astype(np.uint8)
        smem[ea[..., h] + 1] = (v >> 8).astype(np.uint8)


# ------------------------------------------------------------------ 8-bit shapes (sm_100a+)
def is_byte_form(form: MatrixForm) -> bool:
    return form.type != "b16"


def byte_map(form: MatrixForm) -> tuple[np.ndarray, np.ndarray]:
    """(nregs, 32, 4) stored row (the lane that addresses it) and byte (0-15) within that row of
    byte k of each lane's register (module doc)."""
    lane, k = _lane[:, None], np.arange(4)[None, :]
    rows, cols = [], []
    for reg in range(form.nregs):
        if form.shape == "m16n16":
            j, r = divmod(reg, 2)
            row, col = 16 * j + 4 * (lane % 4) + k, lane // 4 + 8 * r + 0 * k
        elif form.shape == "m8n16":
            row, col = 8 * reg + lane // 4 + 0 * k, 4 * (lane % 4) + k
        else:                                                     # stmatrix m16n8
            row, col = 8 * reg + 2 * (lane % 4) + (k & 1), lane // 4 + 8 * (k >> 1)
        rows.append(row)
        cols.append(col)
    return np.stack(rows), np.stack(cols)


def byte_row_addresses(form: MatrixForm, addr: np.ndarray) -> np.ndarray:
    """addr (W, 32) per-lane addresses -> (W, R) the 16-byte rows' start addresses, R = rows x
    num (lane i gives row i). UndefinedBehavior for a row that is not 16-byte aligned."""
    addr = np.asarray(addr, np.int64)
    n = form.rows * form.num
    rows = addr[:, :n]
    bad = rows % 16 != 0
    if bad.any():
        w, i = (int(x[0]) for x in np.nonzero(bad))
        raise UndefinedBehavior(f"{form.text}: the row address of lane {i} of warp {w} is "
                                f"0x{int(rows[w, i]):x}, not 16-byte aligned (the rows must be "
                                "naturally aligned)")
    return rows


def widen(rows: np.ndarray, src: str) -> np.ndarray:
    """(..., 16) uint8 stored rows -> (..., 16) bytes: .b4x16_p64 / .b6x16_p32 elements in the
    low bits of their byte (module doc); the padding is not read into any byte."""
    r = np.asarray(rows, np.uint8)
    if not src:
        return r
    if src == "b4x16_p64":
        p = r[..., :8]
        return np.stack([p & 0x0F, p >> 4], axis=-1).reshape(r.shape)
    w = r[..., :12].astype(np.uint32).reshape(r.shape[:-1] + (4, 3))
    word = w[..., 0] | (w[..., 1] << 8) | (w[..., 2] << 16)       # 4 elements per 3 bytes
    return ((word[..., None] >> (6 * np.arange(4, dtype=np.uint32))) & 0x3F) \
        .reshape(r.shape).astype(np.uint8)


def gather_bytes(form: MatrixForm, rows: np.ndarray) -> np.ndarray:
    """ldmatrix of an 8-bit shape: (W, R, 16) stored rows -> registers (nregs, W, 32) uint32."""
    data = widen(rows, form.src)
    ri, ci = byte_map(form)                                       # (nregs, 32, 4)
    b = data[:, ri, ci].astype(np.uint32)                         # (W, nregs, 32, 4)
    val = b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16) | (b[..., 3] << 24)
    return val.transpose(1, 0, 2)


def scatter_bytes(form: MatrixForm, regs: np.ndarray) -> np.ndarray:
    """stmatrix .m16n8: registers (num, W, 32) -> (W, R, 16) stored rows (every byte written)."""
    regs = np.asarray(regs, np.uint32)
    W = regs.shape[1]
    ri, ci = byte_map(form)
    out = np.zeros((W, form.rows * form.num, 16), np.uint8)
    b = (regs[..., None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF  # (num, W, 32, 4)
    out[:, ri, ci] = b.transpose(1, 0, 2, 3).astype(np.uint8)
    return out


def movmatrix(a: np.ndarray) -> np.ndarray:
    """a (W, 32) uint32 fragments of an 8x8 b16 matrix -> the fragments of its transpose."""
    a = np.asarray(a, np.uint32)
    half = np.arange(2)
    # element (row 2(l%4)+h, col l/4) of the input sits in lane 4*row + col/2, half col%2
    src_row = 2 * T[:, None] + half                              # (32, 2)
    src_lane = 4 * src_row + (G[:, None] >> 1)
    src_half = G[:, None] & 1
    v = (a[:, src_lane] >> (16 * src_half).astype(np.uint32)) & np.uint32(0xFFFF)
    return pack_halves(v[..., 0], v[..., 1])


# ------------------------------------------------------------------------------ registry
def execute_movmatrix(instruction, regs, target: str) -> dict[str, np.ndarray]:
    """Handler of movmatrix (registers only; ldmatrix / stmatrix need memory: the executor's
    machine/handlers/matrix.py)."""
    form = form_of(instruction)
    check(form, target)
    d, a = instruction.operands
    for what, op in (("d", d), ("a", a)):
        if getattr(op, "name", None) is None:
            raise PtxValidationError(f"movmatrix operand {what} must be a .b32 register, got '{op}'")
    out = movmatrix(np.asarray(regs.read(a.name), np.uint32).reshape(-1, LANES))
    return {d.name: out.reshape(-1)}


register("movmatrix", execute_movmatrix, guard="warp")
