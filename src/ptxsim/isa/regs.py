"""Register values as numpy arrays: the shared plumbing of the base-instruction modules.

A PTX register of `.b16/.b32/.b64` (any integer or float type of that width) is held as an
unsigned numpy array (uint16 / uint32 / uint64) of shape (threads,) -- raw bits. A `.pred` is a
bool array. The semantics functions take and return those; signed or float values exist only
inside a function.

Inputs are forgiving in one way only: a Python int / list / signed numpy array is accepted when
every value fits the register width as an unsigned *or* a two's-complement number (so `-1` is a
valid immediate for a `.s32` or `.b32` operand). Anything wider is an OperandError, never masked.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import OperandError, PtxValidationError

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
M32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class IntType:
    """A PTX integer / bit-size type: `.s32` -> IntType('s32', 32, signed=True)."""
    name: str
    width: int
    signed: bool

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def min(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else self.mask


INT_TYPES: dict[str, IntType] = {
    n: IntType(n, int(n[1:]), n[0] == "s")
    for n in ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64")
}


def illegal(instr: str, why: str) -> PtxValidationError:
    """The error for a qualifier / type combination the PTX ISA does not define."""
    return PtxValidationError(f"{instr}: {why}")


def check_choice(instr: str, field: str, value, allowed) -> None:
    """Raise PtxValidationError unless `value` is one of `allowed` (a table row of the spec)."""
    if value not in allowed:
        shown = ", ".join(str(a) for a in sorted(allowed, key=str))
        raise illegal(instr, f"{field} '{value}' is not legal here; legal: {shown}")


def int_type(instr: str, name: str, allowed) -> IntType:
    check_choice(instr, "type", name, allowed)
    return INT_TYPES[name]


def bits(x, width: int, name: str = "operand") -> np.ndarray:
    """Raw bits of a `width`-bit register operand as a uint64 array (at least 1-d)."""
    a = np.atleast_1d(np.asarray(x))
    if a.dtype == object:
        try:
            if any(int(v) < -(1 << (width - 1)) or int(v) >= (1 << width) for v in a.ravel()):
                raise OperandError(f"{name}: a value does not fit in {width} bits")
            a = np.array([int(v) & ((1 << width) - 1) for v in a.ravel()],
                         dtype=np.uint64).reshape(a.shape)
            return a
        except TypeError:
            raise OperandError(f"{name}: expected integer register bits, got objects") from None
    if a.dtype.kind not in "iu":
        raise OperandError(f"{name}: expected an integer array of register bits, got dtype "
                           f"{a.dtype} (floats must be passed as their bit patterns)")
    if a.dtype.itemsize * 8 > width or (a.dtype.kind == "i" and width < 64):
        if a.dtype.kind == "u":
            bad = a > np.uint64((1 << width) - 1)
        else:
            wide = a.astype(np.int64)
            bad = (wide < -(1 << (width - 1))) | (
                (wide >= (1 << width)) if width < 63 else np.zeros(wide.shape, bool))
        if np.any(bad):
            raise OperandError(f"{name}: value {a[bad].ravel()[0]} does not fit in a "
                               f"{width}-bit register")
    if a.dtype.kind == "i":
        a = a.astype(np.int64).view(np.uint64)
    a = a.astype(np.uint64)
    if width < 64:
        a = a & np.uint64((1 << width) - 1)
    return a


def pred(x, name: str = "predicate") -> np.ndarray:
    a = np.atleast_1d(np.asarray(x))
    if a.dtype != np.bool_:
        if a.dtype.kind in "iu" and np.all((a == 0) | (a == 1)):
            return a.astype(bool)
        raise OperandError(f"{name}: expected a bool predicate array, got dtype {a.dtype}")
    return a


def out(u: np.ndarray, width: int) -> np.ndarray:
    """uint64 working bits -> the register container of `width` bits."""
    return (np.asarray(u, dtype=np.uint64) & np.uint64((1 << width) - 1 if width < 64 else
                                                          0xFFFFFFFFFFFFFFFF)).astype(UINT[width])


def signed(u: np.ndarray, width: int) -> np.ndarray:
    """Two's-complement value of `width`-bit patterns (uint64) as int64."""
    if width == 64:
        return u.view(np.int64) if u.dtype == np.uint64 else u.astype(np.uint64).view(np.int64)
    sh = np.uint64(64 - width)
    return (u << sh).view(np.int64) >> np.int64(64 - width)


def value(u: np.ndarray, t: IntType) -> np.ndarray:
    """Integer value (int64 for signed and for unsigned < 64 bits; uint64 for u64/b64)."""
    if t.signed:
        return signed(u, t.width)
    return u if t.width == 64 else u.astype(np.int64)


def from_value(v: np.ndarray, width: int) -> np.ndarray:
    """int64 / uint64 values -> `width`-bit pattern as uint64 (wraps)."""
    v = np.asarray(v)
    if v.dtype.kind == "i":
        v = v.astype(np.int64).view(np.uint64)
    v = v.astype(np.uint64)
    return v & np.uint64((1 << width) - 1) if width < 64 else v


def umul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Full 128-bit product of two uint64 arrays as (hi, lo), via 32-bit limbs."""
    a0, a1, b0, b1 = a & M32, a >> np.uint64(32), b & M32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & M32) + (p10 & M32)
    lo = (p00 & M32) | (mid << np.uint64(32))
    hi = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    return hi, lo


def smul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Full 128-bit two's-complement product of two 64-bit patterns (uint64) as (hi, lo)."""
    hi, lo = umul128(a, b)
    top = np.uint64(1 << 63)
    hi = hi - np.where((a & top) != 0, b, np.uint64(0)) - np.where((b & top) != 0, a,
                                                                     np.uint64(0))
    return hi, lo


# ---------------------------------------------------------------- a caller's register file
LANES = 32


class RegisterFile:
    """Read-only view of the caller's registers, validated once: every array has the same
    shape (32*W,), holds uint32 bits (uint64 / float64 arrays: 64-bit registers, kept as uint64,
    e.g. the .f64 operands of mma; other integer arrays must fit 32 bits), and a missing name
    is an OperandError naming it."""

    def __init__(self, registers: Mapping[str, object], warps: int | None, where: str):
        self.where = where
        self._regs: dict[str, np.ndarray] = {}
        self.warps = warps
        for name, value in registers.items():
            arr = self._bits(name, value)
            if self.warps is None:
                if arr.shape[0] % LANES or arr.shape[0] == 0:
                    raise OperandError(f"{where}: register {name} has {arr.shape[0]} threads; "
                                       f"expected a multiple of {LANES} (32 per warp)")
                self.warps = arr.shape[0] // LANES
            if arr.shape != (LANES * self.warps,):
                raise OperandError(f"{where}: register {name} has shape {arr.shape}; expected "
                                   f"({LANES * self.warps},) = 32 threads x {self.warps} warps")
            self._regs[name] = arr

    @staticmethod
    def _bits(name: str, value) -> np.ndarray:
        arr = np.asarray(value)
        if arr.ndim != 1:
            raise OperandError(f"register {name}: expected a 1-D array of per-thread bits, got "
                               f"shape {arr.shape}")
        if arr.dtype == np.uint32 or arr.dtype == np.uint64:
            return arr
        if arr.dtype == np.int32 or arr.dtype == np.float32:
            return arr.view(np.uint32)
        if arr.dtype == np.float64:
            return arr.view(np.uint64)
        if np.issubdtype(arr.dtype, np.integer):
            if arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF):
                raise OperandError(f"register {name}: values outside 0..2**32-1 are not 32-bit "
                                   "register bits")
            return arr.astype(np.uint32)
        raise OperandError(f"register {name}: dtype {arr.dtype} is not raw register bits "
                           "(use uint32, int32 or float32; uint64 or float64 for 64-bit registers)")

    def subset(self, warp_mask: np.ndarray) -> "RegisterFile":
        """The registers of the warps where `warp_mask` (W,) is true."""
        sub = {n: a.reshape(-1, LANES)[warp_mask].reshape(-1) for n, a in self._regs.items()}
        return RegisterFile(sub, int(np.count_nonzero(warp_mask)), self.where)

    def __contains__(self, name: str) -> bool:
        return name in self._regs

    def read(self, name: str) -> np.ndarray:
        try:
            return self._regs[name]
        except KeyError:
            raise OperandError(f"{self.where}: register {name} is read but not given in "
                               "`registers`") from None
