"""Element bits -> exact values and the exponents the fused dot-product unit aligns on.

Decoded field by field from the format table (ptxsim.types.FORMATS) by `decode`; formats up to
16 bits go through a 2^w-entry table of `decode`'s results, f32/tf32 through numpy's IEEE view.
For every element:

* ``value``  float64, exact (every supported format, and every product of two, fits a double);
  +-inf / nan for the special encodings;
* ``exp``    the normalised exponent the hardware aligns on: floor(log2|x|) for normal numbers,
  the format's emin for subnormals (FACTS section 1 step 1: subnormals are kept, not flushed);
  ``ZERO_EXP`` for zeros and specials, so they never win a max;
* ``zero``   True for +-0.

Inputs are raw bits, one element per array entry, in the low bits of the entry (f6/f4: the low
6/4 bits; tf32: the f32 container, whose low 13 bits the tensor core ignores).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.types.formats import FORMATS

ZERO_EXP = -4000          # below every real exponent; two of them still fit int16
NO_LSB = 4000            # "lowest set bit" of a zero / special: above every real exponent


@dataclass
class Unpacked:
    value: np.ndarray     # float64
    exp: np.ndarray       # int32
    zero: np.ndarray      # bool
    special: np.ndarray   # bool: inf or nan
    lsb_: np.ndarray | None = None

    @property
    def lsb(self) -> np.ndarray:
        """Exponent of the lowest set bit of each element (NO_LSB for zero / special)."""
        if self.lsb_ is None:
            self.lsb_ = lsb_exponent(self.value)
        return self.lsb_


class _Gathered(Unpacked):
    """An Unpacked read from a decode table on first use of each field (most callers need only
    some of them)."""

    def __init__(self, table: Unpacked, index: np.ndarray):       # noqa: D107
        self._t, self._i = table, index

    def __getattr__(self, name):
        if name in ("value", "exp", "zero", "special"):
            field = getattr(self._t, name)[self._i]
            setattr(self, name, field)
            return field
        raise AttributeError(name)

    @property
    def lsb(self) -> np.ndarray:
        if "_lsb" not in self.__dict__:
            self._lsb = self._t.lsb[self._i]
        return self._lsb


def lsb_exponent(value: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of exact float64 values; NO_LSB for 0, inf, nan."""
    finite = np.isfinite(value) & (value != 0)
    m, e = np.frexp(np.where(finite, value, 1.0))
    sig = np.abs(np.ldexp(m, 53)).astype(np.int64)          # 53-bit integer significand
    low = sig & -sig                                          # its lowest set bit, a power of 2
    _, le = np.frexp(low.astype(np.float64))
    return np.where(finite, e - 53 + le - 1, NO_LSB).astype(np.int32)


def raw_bits(x, fmt_name: str, what: str) -> np.ndarray:
    """Check that `x` holds raw bits of `fmt_name`; return them as an unsigned integer array."""
    fmt = FORMATS[fmt_name]
    x = np.asarray(x)
    if x.dtype.kind not in "ui":
        raise OperandError(f"{what}: expected raw bits in an integer array, got dtype {x.dtype}")
    if x.dtype.kind == "i":                       # two's complement view of the same bits
        x = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    width = 8 if fmt_name == "ue4m3" else fmt.storage_bits
    if 8 * x.dtype.itemsize > width and (x >> width).any():
        bad = int(x[(x >> width) != 0].flat[0])
        raise OperandError(f"{what}: value {bad:#x} has bits above the {width}-bit {fmt_name} "
                           "element (pass one element per entry, in the low bits)")
    if fmt_name == "ue4m3":
        x = x & 0x7F        # ue4m3 sign bit ignored (FACTS section 2; MMA-Sim masks 0x7F)
    return x


_TABLES: dict[str, Unpacked] = {}


def unpack(bits: np.ndarray, fmt_name: str) -> Unpacked:
    """Decode raw bits (uint32 array from `raw_bits`) of a floating-point format.

    Formats up to 16 bits decode through a table built once by `decode` (a cache, nothing
    more); f32 / tf32 go through the IEEE float view, which numpy decodes exactly."""
    if fmt_name in ("f32", "tf32"):
        b = bits.astype(np.uint32, copy=False)
        if fmt_name == "tf32":
            b = b & np.uint32(0xFFFFE000)         # the tensor core ignores the low 13 bits
        with np.errstate(invalid="ignore"):      # signalling-NaN patterns are fine here
            value = b.view(np.float32).astype(np.float64)
        efield = ((b >> 23) & 0xFF).astype(np.int32)
        special = efield == 255
        zero = (b & 0x7FFFFFFF) == 0
        exp = np.maximum(efield, 1) - 127
        exp[zero | special] = ZERO_EXP
        return Unpacked(value, exp, zero, special)
    t = _TABLES.get(fmt_name)
    if t is None:
        width = 8 if fmt_name == "ue4m3" else FORMATS[fmt_name].storage_bits
        t = _TABLES[fmt_name] = decode(np.arange(1 << width, dtype=np.uint32), fmt_name)
    return _Gathered(t, bits.astype(np.intp))


def decode(bits: np.ndarray, fmt_name: str) -> Unpacked:
    """Decode raw bits field by field from the format table (sign, exponent, fraction)."""
    fmt = FORMATS[fmt_name]
    b = bits.astype(np.int64)
    if fmt_name == "tf32":
        b = b >> 13                       # 19-bit tf32 from the f32 container
    eb, mb = fmt.ebits, fmt.mbits
    sign = (b >> (eb + mb)) & 1 if fmt.signed else np.zeros_like(b)
    efield = (b >> mb) & ((1 << eb) - 1)
    mfield = b & ((1 << mb) - 1)
    if fmt_name == "ue8m0":              # 2^(b-127), no zero, 0xFF NaN
        sig = np.ones_like(b)
        exp = efield - fmt.bias
    else:
        normal = efield != 0
        sig = np.where(normal, mfield | (1 << mb), mfield)
        exp = np.where(normal, efield, 1) - fmt.bias
    emax_field = (1 << eb) - 1
    if fmt.nan == "ieee":
        allones = efield == emax_field
        nan = allones & (mfield != 0)
        inf = allones & (mfield == 0) if fmt.has_inf else np.zeros_like(allones)
    elif fmt.nan == "all_ones":
        nan = (efield == emax_field) & (mfield == (1 << mb) - 1)
        inf = np.zeros_like(nan)
    else:
        nan = inf = np.zeros(b.shape, bool)
    value = np.ldexp(sig.astype(np.float64), (exp - mb).astype(np.int32))
    value = np.where(sign == 1, -value, value)
    value = np.where(inf, np.where(sign == 1, -np.inf, np.inf), value)
    value = np.where(nan, np.nan, value)
    zero = sig == 0
    special = nan | inf
    exp = np.where(zero | special, ZERO_EXP, exp).astype(np.int32)
    return Unpacked(value, exp, zero & ~special, special)


def unpack_int(bits: np.ndarray, fmt_name: str) -> np.ndarray:
    """Raw bits of an integer format -> int64 values (two's complement for signed)."""
    fmt = FORMATS[fmt_name]
    b = bits.astype(np.int64)
    if fmt.bits == 32:
        b = b & 0xFFFFFFFF
    if fmt.kind == "sint":
        b = np.where(b >> (fmt.bits - 1) & 1, b - (1 << fmt.bits), b)
    return b
