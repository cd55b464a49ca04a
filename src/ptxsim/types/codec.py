"""Bits <-> values for every element format, with PTX `cvt` rounding and saturation.

`decode(bits, fmt)` gives float64 values (exact: every format here fits in float64).
`encode(values, fmt, rounding, satfinite, relu)` rounds float64 values *directly* to the format,
on integer bit patterns (no detour through float32, so no double rounding), and applies the PTX
`cvt` rules of section 9.7.9.21 (see rules.py for which forms exist):

* overflow without .satfinite: IEEE-754 7.4 -- to Inf where the rounding direction points away
  from zero (rn, rna, rp for +, rm for -), otherwise to MAX_NORM; e4m3 (no Inf) overflows to NaN;
* `.satfinite`: |x| > MAX_NORM (Inf included) -> sign-preserved MAX_NORM; NaN -> canonical NaN,
  or +MAX_NORM for the formats without NaN (e2m1, e2m3, e3m2);
* `.relu`: a negative result becomes +0; NaN stays (canonical) NaN;
* NaN results are NVIDIA's canonical NaN (positive, all magnitude bits set: 0x7FFF, 0x7F, ...).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import FormatError
from ptxsim.types.formats import Format, get_format
from ptxsim.types.rules import check_cvt

_U64 = np.uint64


def _fmt(fmt) -> Format:
    return fmt if isinstance(fmt, Format) else get_format(fmt)


def storage_dtype(fmt) -> np.dtype:
    """The unsigned numpy dtype that holds one element's bits."""
    n = _fmt(fmt).storage_bits
    return np.dtype(np.uint8 if n <= 8 else np.uint16 if n <= 16 else np.uint32)


# ---------------------------------------------------------------------------------------- decode
def _as_bits(bits, f: Format) -> np.ndarray:
    a = np.asarray(bits)
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise FormatError(f"bits for .{f.name} must be an integer array, got dtype {a.dtype}")
    width = 32 if f.name == "tf32" else f.bits      # tf32 lives in a b32 register
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= 1 << width:
            bad = lo if lo < 0 else hi
            raise FormatError(f"bit pattern {bad:#x} does not fit the {width}-bit .{f.name} "
                              f"element (valid 0..{(1 << width) - 1:#x})")
    return a.astype(np.int64 if width < 32 else np.uint32, copy=False)


def _decode_table(f: Format) -> np.ndarray:
    """Value of every code of a format of at most 16 bits (built once, from the format row)."""
    cached = _TABLES.get(f.name)
    if cached is not None:
        return cached
    code = np.arange(1 << f.bits, dtype=np.int64)
    if f.kind == "sint":
        val = np.where(code >= 1 << (f.bits - 1), code - (1 << f.bits), code).astype(np.float64)
    elif f.kind == "uint":
        val = code.astype(np.float64)
    elif f.name == "ue8m0":                          # 2^(b-127); 0xFF NaN; no zero
        val = np.ldexp(1.0, (code - 127).astype(np.int32))
        val[0xFF] = np.nan
    else:
        mag = code & ((1 << f.magnitude_bits) - 1)
        e = mag >> f.mbits
        m = mag & ((1 << f.mbits) - 1)
        # subnormal: m * 2^(emin - mbits); normal: (2^mbits + m) * 2^(e - bias - mbits)
        sig = np.where(e == 0, m, m + (1 << f.mbits)).astype(np.float64)
        exp = (np.maximum(e, 1) - f.bias - f.mbits).astype(np.int32)
        val = np.ldexp(sig, exp)
        if f.nan == "ieee":
            top = e == (1 << f.ebits) - 1
            val = np.where(top & (m == 0), np.inf, val)
            is_nan = top & (m != 0)
        else:
            is_nan = mag == (1 << f.magnitude_bits) - 1 if f.nan == "all_ones" else mag < 0
        if f.signed:
            val = np.where(code & f.sign_mask, -val, val)
        # every NaN reads as +NaN, as the hardware's widening cvt gives it (canonical 0x7FFF)
        val = np.where(is_nan, np.nan, val)
    val.setflags(write=False)
    _TABLES[f.name] = val
    return val


_TABLES: dict[str, np.ndarray] = {}


def decode(bits, fmt) -> np.ndarray:
    """Values (float64 ndarray, same shape) of element bit patterns of format `fmt`.

    tf32 takes the b32 register image and, like the tensor core, ignores its low 13 bits."""
    f = _fmt(fmt)
    a = _as_bits(bits, f)
    if f.storage_bits == 32:
        u = a.astype(np.uint32, copy=False)
        if f.name == "tf32":
            u = u & np.uint32(0xFFFFE000)
        if f.kind == "float":
            with np.errstate(invalid="ignore"):         # signalling NaNs widen quietly
                return u.view(np.float32).astype(np.float64)
        return (u.view(np.int32) if f.kind == "sint" else u).astype(np.float64)
    return _decode_table(f)[a]


# ---------------------------------------------------------------------------------------- encode
def _as_values(values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype == np.bool_ or a.dtype.kind not in "fiu":
        raise FormatError(f"values to encode must be a real numeric array, got dtype {a.dtype}")
    with np.errstate(invalid="ignore"):
        return a.astype(np.float64)


def _increment(kept, rem, half, sign, rounding: str):
    """Whether to add one unit in the last place, from the bits shifted out (rem vs half)."""
    if rounding == "rn":
        return (rem > half) | ((rem == half) & ((kept & _U64(1)) == _U64(1)))
    if rounding == "rna":
        return rem >= half
    if rounding == "rz":
        return np.zeros(rem.shape, dtype=bool)
    if rounding == "rp":
        return (rem != 0) & ~sign
    if rounding == "rm":
        return (rem != 0) & sign
    raise FormatError(f"unknown rounding '{rounding}'")     # pragma: no cover - checked earlier


def _round_magnitude(x: np.ndarray, ebits: int, mbits: int, bias: int, rounding: str):
    """Round |x| (finite float64) to a binary format with `mbits` fraction bits and minimum normal
    exponent 1-bias, with subnormals. Returns the unsigned magnitude code as int64, unbounded
    above (a code past MAX_NORM means overflow), and the sign as bool.

    Normal results: the float64 bit pattern itself is shifted right by 52 - mbits; the carry of
    the increment runs into the exponent field, and re-biasing the exponent gives the code.
    Subnormal results (|x| < 2^emin) shift the significand further, one element at a time."""
    bits = x.view(_U64)
    sign = (bits >> _U64(63)).astype(bool)
    mag = bits & _U64((1 << 63) - 1)
    s = 52 - mbits
    kept = mag >> _U64(s)
    rem = mag & _U64((1 << s) - 1)
    inc = _increment(kept, rem, _U64(1 << (s - 1)), sign, rounding)
    code = kept.view(np.int64) + inc - ((1023 - bias) << mbits)
    emin = 1 - bias
    small = mag < _U64((emin + 1023) << 52)                # |x| < 2^emin: subnormal or zero
    if small.any():
        idx = np.nonzero(small)
        m = mag[idx]
        E = (m >> _U64(52)).astype(np.int64)
        sig = np.where(E == 0, m, (m & _U64((1 << 52) - 1)) | _U64(1 << 52))
        e = np.where(E == 0, -1074, E - 1075)                 # |x| = sig * 2^e
        shift = np.minimum((emin - mbits) - e, 60).astype(_U64)   # > 52 - mbits; 60 > 53 bits
        k = sig >> shift
        r = sig & ((_U64(1) << shift) - _U64(1))
        code[idx] = k.astype(np.int64) + _increment(k, r, _U64(1) << (shift - _U64(1)),
                                                    sign[idx], rounding)
    return code, sign


def _away_from_zero(rounding: str, sign: np.ndarray) -> np.ndarray:
    """Whether overflow goes to Inf (IEEE 754-2019 7.4) rather than to MAX_NORM."""
    if rounding in ("rn", "rna"):
        return np.ones_like(sign)
    if rounding == "rz":
        return np.zeros_like(sign)
    return ~sign if rounding == "rp" else sign


def _encode_float(x: np.ndarray, f: Format, rounding: str, satfinite: bool, relu: bool):
    special = ~np.isfinite(x)
    any_special = bool(special.any())
    nan_in = np.isnan(x) if any_special else np.zeros(x.shape, dtype=bool)
    inf_in = special & ~nan_in
    finite = np.where(special, np.copysign(0.0, x), x) if any_special else x  # -Inf keeps its sign
    code, sign = _round_magnitude(finite, f.ebits, f.mbits, f.bias, rounding)
    maxc = f.max_finite_code
    nan_code = f.nan_code if f.nan else maxc        # formats without NaN: .satfinite -> +MAX_NORM
    over = (code > maxc) | inf_in
    ocp_nan = np.zeros(x.shape, dtype=bool)
    if over.any():
        if satfinite:
            code = np.where(over, maxc, code)
        elif f.has_inf:
            to_inf = over & (inf_in | _away_from_zero(rounding, sign))
            code = np.where(to_inf, f.inf_code, np.where(over, maxc, code))
        else:                                       # e4m3 without .satfinite (OCP): NaN, signed
            code = np.where(over, nan_code, code)
            ocp_nan = over
    neg = sign
    if any_special:
        code = np.where(nan_in, nan_code, code)     # NaN in -> canonical (positive) NaN
        neg = sign & ~nan_in
    if relu:                                        # negative results -> +0; NaN stays NaN
        clear = neg & ~ocp_nan
        code = np.where(clear, 0, code)
        neg = neg & ~clear
    if f.signed:
        code = code | (neg.astype(np.int64) << (f.bits - 1))
    elif np.any(neg & (code != 0)):
        i = int(np.argmax(neg & (code != 0)))
        raise FormatError(f"value {x.flat[i]!r} at flat index {i} is negative; .{f.name} is "
                          f"unsigned (pass relu=True to clamp negatives to +0)")
    return code


def _encode_ue8m0(x: np.ndarray, rounding: str, satfinite: bool):
    """cvt.{rz,rp}{.satfinite}.ue8m0x2.f32: 2^floor(log2|x|) / 2^ceil(log2|x|), clamped below
    at 2^-127 (code 0; zero gives code 0 too), NaN -> 0xFF, overflow -> 0xFF or, with
    .satfinite, 0xFE. The sign is ignored. The spec says nothing on zero and negative inputs;
    this follows NVIDIA's host emulation in cuda_fp8.hpp (__nv_cvt_bfloat16raw_to_e8m0)."""
    nan_in = np.isnan(x)
    a = np.abs(np.where(nan_in, 0.0, x))
    m, e = np.frexp(a)                                  # a = m * 2^e, m in [0.5, 1)
    floor_log2 = e.astype(np.int64) - 1
    exact = m == 0.5
    up = (rounding == "rp") & ~exact
    code = floor_log2 + 127 + up
    code = np.where(a == 0, 0, np.maximum(code, 0))
    code = np.where(np.isinf(a) | (code > 0xFE), 0xFE if satfinite else 0xFF, code)
    return np.where(nan_in, 0xFF, code)


def _encode_int(x: np.ndarray, f: Format, rounding: str):
    """cvt.{rni,rzi,rmi,rpi}.{s,u}N.f32: round to integer, clamp to the range, NaN -> 0."""
    r = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}[rounding](x)
    lo, hi = (-(1 << (f.bits - 1)), (1 << (f.bits - 1)) - 1) if f.kind == "sint" else (0, (1 << f.bits) - 1)
    r = np.clip(np.where(np.isnan(r), 0.0, r), lo, hi).astype(np.int64)
    return r & ((1 << f.bits) - 1)


def _tf32_rna_nan(values, x: np.ndarray, code: np.ndarray, satfinite: bool) -> np.ndarray:
    """cvt.rna.tf32.f32 does not make NaNs canonical: it keeps the f32 NaN with its low 13 bits
    cleared (so 0x7F800001 becomes +Inf), and with .satfinite then lowers any all-ones-exponent
    magnitude by one tf32 ulp (0x7F800001 -> 0x7F7FE000 = MAX_NORM). Measured on an H200 (sm_90),
    tests/data/hardware/cvt/cvt_sm90.npz. The f32 NaN bits come from float32 input as given; a float64
    NaN is narrowed to float32 first (payload truncated, as numpy and cvt.rn.f32.f64 do)."""
    nan_in = np.isnan(x)
    if not nan_in.any():
        return code
    src = np.asarray(values)
    f32 = src if src.dtype == np.float32 else x.astype(np.float32)
    raw = f32.view(np.uint32).astype(np.int64) & 0xFFFFE000
    if satfinite:
        raw = np.where((raw & 0x7FFFFFFF) >= 0x7F800000, raw - 0x2000, raw)
    return np.where(nan_in, raw, code)


def encode(values, fmt, rounding: str = "rn", satfinite: bool = False, relu: bool = False) -> np.ndarray:
    """Bit patterns (unsigned ndarray, see storage_dtype) of `values` converted to `fmt` by PTX
    `cvt` rules. Illegal (format, rounding, modifier) combinations raise FormatError.

    tf32 returns the b32 register image (the 19 significant bits at [31:13], low 13 bits 0)."""
    f = _fmt(fmt)
    check_cvt(f.name, rounding, satfinite, relu)
    x = _as_values(values)
    shape = x.shape
    x = x.reshape(-1)
    if f.kind in ("sint", "uint"):
        code = _encode_int(x, f, rounding)
    elif f.name == "ue8m0":
        code = _encode_ue8m0(x, rounding, satfinite)
    elif f.name == "tf32":
        code = _encode_float(x, f, rounding, satfinite, relu) << 13
        if rounding == "rna":
            code = _tf32_rna_nan(np.asarray(values).reshape(-1), x, code, satfinite)
    else:
        code = _encode_float(x, f, rounding, satfinite, relu)
    return np.asarray(code).astype(storage_dtype(f)).reshape(shape)
