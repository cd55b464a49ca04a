"""Warp-level matrix movement: `ldmatrix`, `stmatrix`, `movmatrix` (PTX ISA 9.7.9.x / 9.7.14.5.15-17).

    ldmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16   r, [p];    shared -> registers
    stmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16   [p], r;    registers -> shared
    movmatrix.sync.aligned.m8n8.trans.b16             d, a;      transpose in registers

An 8x8 matrix of 16-bit elements: row r of matrix j starts at the address given by lane 8j + r
(16 bytes, naturally aligned; lanes beyond 8*num give none). In registers, lane l holds row l/4,
columns 2(l%4) and 2(l%4)+1 (lower half first) -- the mma A/C fragment; with .trans, the same
fragment of the transposed matrix. Measured on the H200 for every sm_90a form
(tests/isa/test_matrix_hw.py).

The pure functions return shared-memory byte addresses (the machine reads and writes memory);
nothing here touches memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import PtxValidationError, UndefinedBehavior, UnsupportedFeature
from ptxsim.isa.registry import register
from ptxsim.isa.targets import AtLeast, Req, parse_target, parse_version

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

    @property
    def text(self) -> str:
        if self.op == "movmatrix":
            return "movmatrix.sync.aligned.m8n8.trans.b16"
        return (f"{self.op}.sync.aligned.{self.shape}.x{self.num}{'.trans' if self.trans else ''}"
                f"{self.space}.{self.type}")


# (op, shape, type) -> (PTX ISA version, target requirement); the .b16 m8n8 forms are the ones
# every target runs; the sub-byte / 8-bit shapes need sm_100a-class targets (not modelled).
NOTES = {
    ("ldmatrix", "m8n8", "b16"): ((6, 5), Req(AtLeast(75))),
    ("stmatrix", "m8n8", "b16"): ((7, 8), Req(AtLeast(90))),
    ("movmatrix", "m8n8", "b16"): ((7, 8), Req(AtLeast(75))),
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
    rest = "".join(quals)
    if shape != "m8n8" or rest != ".b16":
        raise UnsupportedFeature(f"{op}.{shape} with {rest or 'no type'}: only the .m8n8 .b16 "
                                 "forms are modelled (the 8-bit and 4/6-bit shapes of sm_100a+ "
                                 "have no figures in the spec texts ptxsim has)")
    return MatrixForm(op, shape, int(nums[0][2]), trans, space)


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
    """Registers (num, W, 32) uint32 loaded from `smem` (uint8, indexed by address) at the lanes'
    addresses `addr` (W, 32)."""
    ea = element_addresses(form, addr)
    s16 = lambda a: smem[a].astype(np.uint32) | (smem[a + 1].astype(np.uint32) << 8)
    return pack_halves(s16(ea[..., 0]), s16(ea[..., 1]))


def stmatrix(form: MatrixForm, smem: np.ndarray, addr: np.ndarray, regs: np.ndarray) -> None:
    """Store registers (num, W, 32) into `smem` (uint8, in place)."""
    ea = element_addresses(form, addr)
    regs = np.asarray(regs, np.uint32)
    for h in (0, 1):
        v = (regs >> np.uint32(16 * h)) & np.uint32(0xFFFF)
        smem[ea[..., h]] = (v & 0xFF).astype(np.uint8)
        smem[ea[..., h] + 1] = (v >> 8).astype(np.uint8)


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
