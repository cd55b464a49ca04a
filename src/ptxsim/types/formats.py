"""The element formats the tensor-core instructions consume: one row of parameters each.

This table is the single source of truth for widths, exponent/mantissa split, bias and special
encodings; decode/encode and the numerics engine read it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ptxsim.errors import FormatError


@dataclass(frozen=True)
class Format:
    name: str
    bits: int            # significant bits of one element (tf32: 19, ue4m3: 7)
    kind: str            # "float" | "sint" | "uint"
    ebits: int = 0       # exponent bits (floats)
    mbits: int = 0       # explicit mantissa (fraction) bits (floats)
    bias: int = 0
    signed: bool = True
    has_inf: bool = False
    # NaN encodings: "ieee" (all-ones exponent, nonzero fraction), "all_ones" (S.1111.111 for
    # e4m3, 0x7F for ue4m3, 0xFF for ue8m0), or None (format has no NaN)
    nan: str | None = None
    container_bits: int = 0  # storage width when larger than `bits` (tf32 in b32)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def storage_bits(self) -> int:
        return self.container_bits or self.bits

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (unbiased)."""
        return 1 - self.bias

    @property
    def has_zero(self) -> bool:
        return self.name != "ue8m0"

    # ---- derived encodings (all on the `bits`-wide code, sign included where there is one) ----
    @property
    def magnitude_bits(self) -> int:
        """Bits below the sign bit (all bits for an unsigned format)."""
        return self.bits - 1 if self.signed else self.bits

    @property
    def sign_mask(self) -> int:
        return 1 << (self.bits - 1) if self.signed else 0

    @property
    def max_finite_code(self) -> int:
        """Magnitude code of MAX_NORM, the largest finite value (floats only)."""
        if self.name == "ue8m0":
            return 0xFE                       # 2^127; 0xFF is NaN
        if self.nan == "ieee":                # all-ones exponent is Inf / NaN
            return ((1 << self.ebits) - 2) << self.mbits | ((1 << self.mbits) - 1)
        if self.nan == "all_ones":            # only the all-ones magnitude is NaN (e4m3, ue4m3)
            return (1 << self.magnitude_bits) - 2
        return (1 << self.magnitude_bits) - 1  # no NaN, no Inf (e2m3, e3m2, e2m1)

    @property
    def inf_code(self) -> int | None:
        return ((1 << self.ebits) - 1) << self.mbits if self.has_inf else None

    @property
    def nan_code(self) -> int | None:
        """The canonical NaN NVIDIA produces: positive, all magnitude bits set
        (0x7FFF for f16/bf16, 0x7FFFFFFF for f32, 0x7F for e4m3/e5m2, 0xFF for ue8m0)."""
        return (1 << self.magnitude_bits) - 1 if self.nan else None

    @property
    def max_finite(self) -> float:
        """MAX_NORM as a number: 2^(e - bias) * (1 + m / 2^mbits) of `max_finite_code` (a normal
        number in every format; ue8m0: 2^127)."""
        code = self.max_finite_code
        e, m = code >> self.mbits, code & ((1 << self.mbits) - 1)
        return math.ldexp(1.0 + m / (1 << self.mbits), e - self.bias)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value (ue8m0: 2^-127, it has no zero and no subnormals)."""
        if self.name == "ue8m0":
            return 2.0 ** -127
        return 2.0 ** (self.emin - self.mbits)


FORMATS: dict[str, Format] = {f.name: f for f in [
    # IEEE-754 binary formats
    Format("f32", 32, "float", 8, 23, 127, has_inf=True, nan="ieee"),
    Format("f16", 16, "float", 5, 10, 15, has_inf=True, nan="ieee"),
    Format("bf16", 16, "float", 8, 7, 127, has_inf=True, nan="ieee"),
    # tf32: f32 container, the low 13 fraction bits are ignored by the tensor core
    Format("tf32", 19, "float", 8, 10, 127, has_inf=True, nan="ieee", container_bits=32),
    # OCP 8-bit formats (PTX .e4m3 is E4M3FN: no Inf, S.1111.111 is NaN; .e5m2 IEEE-like)
    Format("e4m3", 8, "float", 4, 3, 7, nan="all_ones"),
    Format("e5m2", 8, "float", 5, 2, 15, has_inf=True, nan="ieee"),
    # OCP MX 6-bit and 4-bit formats: no Inf, no NaN
    Format("e2m3", 6, "float", 2, 3, 1),
    Format("e3m2", 6, "float", 3, 2, 3),
    Format("e2m1", 4, "float", 2, 1, 1),
    # scale-factor formats: ue8m0 = 2^(b-127), 0xFF NaN, no zero; ue4m3 = unsigned e4m3, 0x7F NaN
    Format("ue8m0", 8, "float", 8, 0, 127, signed=False, nan="all_ones"),
    Format("ue4m3", 7, "float", 4, 3, 7, signed=False, nan="all_ones", container_bits=8),
    # integers
    Format("s32", 32, "sint"),
    Format("u32", 32, "uint", signed=False),
    Format("s8", 8, "sint"),
    Format("u8", 8, "uint", signed=False),
    Format("s4", 4, "sint"),
    Format("u4", 4, "uint", signed=False),
]}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown element format '{name}'; known: {', '.join(FORMATS)}") from None
