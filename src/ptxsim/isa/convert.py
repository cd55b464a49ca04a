"""PTX data conversion and movement: `cvt` (9.7.9.21), `cvt.pack` (9.7.9.22) and the vector
forms of `mov` (9.7.9.1: `mov.b64 {a, b}, c` etc.).

Element encodings of the narrow formats (f16/bf16 with .relu/.satfinite, tf32, e4m3, e5m2, e2m3,
e3m2, e2m1, ue8m0) come from `ptxsim.types.encode / decode` (types/ owns their rounding rules);
this module adds the instruction layer: which (dtype, atype, modifier) combinations exist, the
packing of x2 results, integer conversions, float <-> int and IEEE float <-> float conversions.

The legality table CVT_FORMS below was transcribed from the ISA's cvt syntax and notes and then
checked against ptxas 13.0 form by form (tests/isa/test_convert.py::test_cvt_legality_ptxas).
"""
from __future__ import annotations

import numpy as np

from ptxsim import types as T
from ptxsim.errors import FormatError, OperandError
from ptxsim.isa import regs
from ptxsim.isa.floating import (BF16, F16, F32, F64, FMTS, ROUNDINGS, _directed_f64, _finish,
                                 _round, _tiny, decode, is_nan, sign_bit)
from ptxsim.isa.regs import INT_TYPES, bits, check_choice, illegal, out

INT_CVT = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
FLOAT_CVT = ("f16", "bf16", "f32", "f64")
IRND = ("rni", "rzi", "rmi", "rpi")
FRND = ROUNDINGS


def _int_range(t: str) -> tuple[int, int]:
    it = INT_TYPES[t]
    return it.min, it.max


def cvt_form(dtype: str, atype: str) -> dict:
    """The legal modifiers of the scalar form `cvt{.rnd}{.ftz}{.sat}.dtype.atype` (9.7.9.21):
    {"rnd": allowed roundings (None = no modifier), "ftz": bool, "sat": bool}.

    - int <- int: no rounding; .sat only where the source range exceeds the destination's.
    - int <- float: an integer rounding .rni/.rzi/.rmi/.rpi is required.
    - float <- int: a float rounding .rn/.rz/.rm/.rp is required.
    - float <- float: same type: none or an integer rounding; a narrowing: a float rounding is
      required; a widening: none (f32/f64 <- bf16 and f16 <-> bf16 also take a float rounding).
    - .ftz exists when .f32 is the source or the destination; .sat for every float
      destination / source except .bf16.
    - ptxas 13.0 has no cvt between .bf16 and 8-bit integers.
    """
    check_choice("cvt", "dtype", dtype, INT_CVT + FLOAT_CVT)
    check_choice("cvt", "atype", atype, INT_CVT + FLOAT_CVT)
    di, ai = dtype in INT_CVT, atype in INT_CVT
    if "bf16" in (dtype, atype) and (dtype in ("u8", "s8") or atype in ("u8", "s8")):
        raise illegal("cvt", f"there is no cvt between .{dtype} and .{atype}")
    ftz = "f32" in (dtype, atype)
    sat_float = "bf16" not in (dtype, atype)
    if di and ai:
        (dlo, dhi), (alo, ahi) = _int_range(dtype), _int_range(atype)
        return {"rnd": (None,), "ftz": False, "sat": alo < dlo or ahi > dhi}
    if di:
        return {"rnd": IRND, "ftz": ftz, "sat": sat_float}
    if ai:
        return {"rnd": FRND, "ftz": ftz, "sat": sat_float}
    if dtype == atype:
        return {"rnd": (None,) + IRND, "ftz": ftz, "sat": sat_float}
    wd, wa = FMTS[dtype], FMTS[atype]
    if "bf16" in (dtype, atype) and wd.width >= wa.width and dtype != "f16" or \
            {dtype, atype} == {"f16", "bf16"}:
        return {"rnd": (None,) + FRND, "ftz": ftz, "sat": sat_float}
    if wd.width > wa.width:
        return {"rnd": (None,), "ftz": ftz, "sat": sat_float}
    return {"rnd": FRND, "ftz": ftz, "sat": sat_float}


# forms with .relu / .satfinite (f16, bf16, tf32 from f32), CVT_RULES of types/ decides details
SPECIAL_DTYPES = ("f16", "bf16", "tf32")


def cvt(a, *, dtype: str, atype: str, rnd: str | None = None, ftz: bool = False,
        sat: bool = False, relu: bool = False, satfinite: bool = False) -> np.ndarray:
    """`cvt{.rnd}{.ftz}{.sat}.dtype.atype d, a` and `cvt.rnd{.relu}{.satfinite}.{f16,bf16,tf32}.f32`.

    Returns the destination register bits (uint8 for 8-bit integers, uint16/32/64 otherwise;
    .tf32 is a b32 register with the low 13 bits zero)."""
    if relu or satfinite or dtype == "tf32":
        return _cvt_special(a, dtype, atype, rnd, relu, satfinite, ftz, sat)
    form = cvt_form(dtype, atype)
    check_choice("cvt", "rounding", rnd, form["rnd"])
    if ftz and not form["ftz"]:
        raise illegal("cvt", f".ftz needs .f32 as source or destination (cvt.{dtype}.{atype})")
    if sat and not form["sat"]:
        raise illegal("cvt", f".sat is not defined for cvt.{dtype}.{atype}")
    if atype in INT_CVT:
        it = INT_TYPES[atype]
        u = bits(a, it.width, "a")
        if dtype in INT_CVT:
            return _int_to_int(u, it, INT_TYPES[dtype], sat)
        return _int_to_float(u, it, FMTS[dtype], rnd, ftz, sat)
    fa = FMTS[atype]
    u = bits(a, fa.width, "a")
    # .ftz does not flush an f32 input converted to f16 (H200, base_sm90.npz:
    # cvt.rp.ftz.f16.f32 0x00000001 -> 0x0001, cvt.rm.ftz.f16.f32 0x807fffff -> 0x8001)
    x = decode(u, fa, ftz and fa is F32 and dtype != "f16")
    if dtype in INT_CVT:
        return _float_to_int(x, INT_TYPES[dtype], rnd, from_f64=fa is F64)
    fd = FMTS[dtype]
    rounding = rnd
    if rnd in IRND:   # round to an integral value in the same format
        with np.errstate(invalid="ignore"):
            y = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](x)
        rnd = "rn"    # exact: an integral value of the format is representable
    else:
        y = x
    nan_r = _cvt_nan(u, fa, fd, move=rounding is None and fd is fa and not ftz and not sat,
                     ftz=ftz)
    if fd is F64:
        r = np.where(np.isnan(y), nan_r, np.asarray(y, np.float64).view(np.uint64))
        return out(_finish(r, F64, False, sat), 64)
    r = _round(y, np.zeros(1), fd, rnd or "rn")
    if nan_r is not None:
        r = np.where(np.isnan(y), nan_r, r)
    flush = ftz and fd is F32
    return out(_finish(r, fd, flush, sat, _tiny(y, np.zeros(1), fd, rnd or "rn") if flush
                       else None), fd.width)


# The NaN a float -> float cvt returns (9.7.9.21 says only that a NaN stays a NaN), as the H200
# gives it (probes in docs/base-instructions.md and the sweep, tests/data/hardware/base_sweep/base_sm90.npz).
# (source, destination) -> rule; pairs not listed give the destination's canonical NaN
# (cvt.rn.f16.f32 0xffc00001 -> 0x7fff, cvt.f32.f16 0x7d01 -> 0x7fffffff, cvt.f16.f16
# 0x7c01 -> 0x7fff).
#   widen:  sign and payload kept, shifted up, quieted (cvt.f64.f32 0xff800001 ->
#           0xfff8000020000000; f64 -> f64 with .rni etc. is the f64 NaN rule, shift 0)
#   narrow: sign and the payload's top bits kept, quieted (cvt.rn.f32.f64 0xfff4000000000123 ->
#           0xffe00000, cvt.rn.f16.f64 -> 0xff00, cvt.rn.bf16.f64 0x7ff4000000000001 -> 0x7fe0)
#   shift:  a plain bit shift, not quieted (cvt.f32.bf16 0xff81 -> 0xff810000)
CVT_NAN = {(F32, F64): "widen", (F16, F64): "widen", (BF16, F64): "widen", (F64, F64): "widen",
           (F64, F32): "narrow", (F64, F16): "narrow", (F64, BF16): "narrow",
           (BF16, F32): "shift"}
# with .ftz these give the canonical f32 NaN instead (cvt.ftz.f32.bf16 0xff81 -> 0x7fffffff,
# cvt.ftz.f64.f32 0xff800001 -> 0x7fffffffe0000000)
CVT_NAN_FTZ_CANONICAL = {(BF16, F32): 0x7FFFFFFF, (F32, F64): 0x7FFFFFFFE0000000}


def _cvt_nan(u, fa, fd, move: bool, ftz: bool):
    """The result bits of cvt.<fd>.<fa> where the input `u` is a NaN (CVT_NAN), or None for the
    canonical NaN that rounding gives.  `move`: cvt.f32.f32 / cvt.f64.f64 with no rounding,
    .ftz or .sat, which passes every NaN unchanged, signalling ones too (0x7f800001 ->
    0x7f800001, 0x7ff0000000000015 -> 0x7ff0000000000015)."""
    if move and fd in (F32, F64):
        return u
    if ftz and (fa, fd) in CVT_NAN_FTZ_CANONICAL:
        return np.uint64(CVT_NAN_FTZ_CANONICAL[fa, fd])
    rule = CVT_NAN.get((fa, fd))
    if rule == "widen":
        return (u & sign_bit(fa)) << np.uint64(64 - fa.width) | np.uint64(0x7FF8 << 48) | (
            (u & np.uint64((1 << fa.mbits) - 1)) << np.uint64(52 - fa.mbits))
    if rule == "narrow":
        return ((u >> np.uint64(64 - fd.width)) & sign_bit(fd)) | np.uint64(fd.inf) | \
            np.uint64(1 << (fd.mbits - 1)) | \
            ((u >> np.uint64(52 - fd.mbits)) & np.uint64((1 << fd.mbits) - 1))
    if rule == "shift":
        return u << np.uint64(fd.width - fa.width)
    return None


def _int_to_int(u, src, dst, sat):
    """Sign/zero extension or truncation; .sat clamps the value to the destination range."""
    if not sat:
        return out(regs.from_value(regs.value(u, src), 64), dst.width)
    if src.width == 64 and not src.signed:              # u64 values do not fit int64
        return out(np.minimum(u, np.uint64(dst.max)), dst.width)
    v = np.clip(regs.value(u, src), dst.min, min(dst.max, np.iinfo(np.int64).max))
    return out(regs.from_value(v, 64), dst.width)


def _int_to_float(u, src, fd, rnd, ftz, sat):
    """Exact integer v -> float. v = vh + vl with vh = v with its low 32 bits cleared and
    vl = v - vh in [0, 2^32): both are exact float64 values, hi = RN64(v), and
    lo = (vh - hi) + vl is exact (integers below 2^34), so hi + lo == v for `_round`."""
    if src.signed:
        v = regs.value(u, src)
        vh = ((v >> np.int64(32)) << np.int64(32)).astype(np.float64)
        vl = (v & np.int64(0xFFFFFFFF)).astype(np.float64)
        hi = v.astype(np.float64)
    else:
        vh = (u & ~regs.M32).astype(np.float64)
        vl = (u & regs.M32).astype(np.float64)
        hi = u.astype(np.float64)
    lo = (vh - hi) + vl
    if fd is F64:
        r = _directed_f64(hi, lo, rnd)
        return out(_finish(r.view(np.uint64), F64, False, sat), 64)
    r = _round(hi, lo, fd, rnd)
    return out(_finish(r, fd, ftz and fd is F32, sat), fd.width)


def _float_to_int(x, dst, rnd, from_f64=False):
    """Round to an integer and clamp to the destination range (always, 9.7.9.21); NaN -> 0 for
    the 8..32-bit destinations of f16 / bf16 / f32, but the destination's sign bit alone
    (0x80, 0x8000, 0x80000000, 0x8000000000000000) from an f64 source or into a 64-bit
    destination -- the H200's F2I.F64 / F2I.64 result, measured for every such form
    (tests/data/hardware/base_sweep/base_sm90.npz: cvt.rni.u32.f64 0x7ff8000000000000 -> 0x80000000,
    cvt.rni.u8.f64 -> 0x80, cvt.rzi.u64.f32 0x7fc00000 -> 0x8000000000000000); the spec says
    only that NaN converts to 0 (9.7.9.21), so this follows the hardware."""
    r = _float_to_int_nan0(x, dst, rnd)
    if from_f64 or dst.width == 64:
        r = np.where(np.isnan(x), np.asarray(1 << (dst.width - 1), r.dtype), r)
    return r


def _float_to_int_nan0(x, dst, rnd):
    with np.errstate(invalid="ignore"):
        y = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](x)
    y = np.where(np.isnan(y), 0.0, y)
    w = dst.width
    if dst.signed:
        over, under = y >= 2.0 ** (w - 1), y < -(2.0 ** (w - 1))
        yy = np.where(over | under, 0.0, y).astype(np.int64)
        r = np.where(over, np.int64(dst.max), np.where(under, np.int64(dst.min), yy))
        return out(regs.from_value(r, 64), w)
    over, under = y >= 2.0 ** w, y < 0
    yy = np.where(over | under, 0.0, y).astype(np.uint64)
    r = np.where(over, np.uint64(dst.max), np.where(under, np.uint64(0), yy))
    return out(r, w)


def _cvt_special(a, dtype, atype, rnd, relu, satfinite, ftz, sat):
    if atype != "f32" or dtype not in SPECIAL_DTYPES:
        raise illegal("cvt", f".relu/.satfinite forms exist only for .f16/.bf16/.tf32 <- .f32, "
                      f"not cvt.{dtype}.{atype}")
    if ftz or sat:
        raise illegal("cvt", ".ftz/.sat do not combine with .relu/.satfinite/.tf32 forms")
    if rnd is None:
        raise illegal("cvt", f"cvt.{dtype}.f32 needs a rounding modifier")
    x = decode(bits(a, 32, "a"), F32)
    try:
        r = T.encode(x, dtype, rnd, satfinite=satfinite, relu=relu)
    except FormatError as e:
        raise illegal("cvt", str(e)) from None
    if dtype == "tf32" and rnd == "rna" and satfinite:
        # a signalling NaN whose payload lies in the 13 dropped bits becomes +-MAX_NORM
        # (0x7f7fe000) -- rounded to Inf, then saturated (H200, base_sm90.npz:
        # cvt.rna.satfinite.tf32.f32 0xff800001 -> 0xff7fe000, 0x7f800015 -> 0x7f7fe000)
        u = bits(a, 32, "a")
        lost = is_nan(u, F32) & ((u & np.uint64(0x007FE000)) == 0)
        r = np.where(lost, (u & np.uint64(0x80000000)) | np.uint64(0x7F7FE000), r)
    if dtype == "tf32" and rnd == "rna" and not satfinite:
        # cvt.rna.tf32.f32 keeps a NaN's sign and upper payload (types/ rule): work from the bits
        u = bits(a, 32, "a")
        r = np.where(is_nan(u, F32), u & np.uint64(0xFFFFE000), r)
    return out(np.asarray(r, np.uint64), 32 if dtype == "tf32" else 16)


# --- packed x2 forms ---------------------------------------------------------------------------------
X2_NARROW = {"e4m3x2": ("e4m3", 8), "e5m2x2": ("e5m2", 8), "e2m3x2": ("e2m3", 8),
             "e3m2x2": ("e3m2", 8), "e2m1x2": ("e2m1", 4), "ue8m0x2": ("ue8m0", 8)}
X2_HALF = {"f16x2": ("f16", 16), "bf16x2": ("bf16", 16)}


def cvt_x2(a, b=None, *, dtype: str, atype: str, rnd: str, relu: bool = False,
           satfinite: bool = False, ptx_9_2: bool = False) -> np.ndarray:
    """The packed conversions; the value from a (or from the upper part of a packed a) lands in
    the upper part of d (9.7.9.21 semantics):

    - `cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b`           -> uint32
    - `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2,e2m3x2,e3m2x2}.f32 d, a, b`   -> uint16
    - `cvt.rn.satfinite{.relu}.e2m1x2.f32 d, a, b`                          -> uint8
    - `cvt.{rz,rp}{.satfinite}.ue8m0x2.f32 d, a, b`                         -> uint16
    - `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2,e2m3x2,e3m2x2}.{f16x2,bf16x2} d, a` -> uint16,
      `.e2m1x2.{f16x2,bf16x2}` -> uint8
    - `cvt.{rz,rp}{.satfinite}.ue8m0x2.bf16x2 d, a`                         -> uint16
    - `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2,e2m3x2,e3m2x2,e2m1x2} d, a`       -> uint32
    - `cvt.rn{.relu}{.satfinite}.bf16x2.{e4m3x2,e5m2x2,e2m3x2,e3m2x2,e2m1x2} d, a` -> uint32
    - `cvt.rn.bf16x2.ue8m0x2 d, a`                                          -> uint32

    ptx_9_2: the module is PTX ISA 9.2 or newer for an sm_100a / sm_100f-or-newer target, which
    adds `cvt.rn{.relu}.bf16x2.{e4m3x2,...,e2m1x2}` (ptxas 13.5; ptxas 13.0 and older versions
    refuse them).
    """
    if dtype in X2_HALF and atype == "f32":
        fmt, w = X2_HALF[dtype]
        check_choice("cvt", "rounding", rnd, ("rn", "rz"))
        hi, lo = _enc(a, fmt, rnd, satfinite, relu), _enc(b, fmt, rnd, satfinite, relu)
        return out((hi << np.uint64(16)) | lo, 32)
    if dtype in X2_NARROW and atype in ("f32", "f16x2", "bf16x2"):
        fmt, w = X2_NARROW[dtype]
        if fmt == "ue8m0":
            check_choice("cvt", "rounding", rnd, ("rz", "rp"))
            if relu:
                raise illegal("cvt", ".relu is not defined for .ue8m0x2")
            if atype not in ("f32", "bf16x2"):
                raise illegal("cvt", f"cvt.ue8m0x2.{atype} does not exist")
        else:
            check_choice("cvt", "rounding", rnd, ("rn",))
            if not satfinite:
                raise illegal("cvt", f"cvt to .{dtype} requires .satfinite")
            # .f16x2 / .bf16x2 sources for every 8/6/4-bit destination: PTX ISA 9.1
            # (sm_100f / sm_110f / sm_120f; ptxas 13.5, tests/isa/test_cvt_new_forms.py);
            # .f16x2 -> .e4m3x2 / .e5m2x2 since 8.1
        if atype == "f32":
            xa, xb = decode(bits(a, 32, "a"), F32), decode(bits(b, 32, "b"), F32)
        else:
            if b is not None:
                raise OperandError(f"cvt.{dtype}.{atype} takes one source register")
            half = F16 if atype == "f16x2" else BF16
            u = bits(a, 32, "a")
            xa = decode(u >> np.uint64(16), half)
            xb = decode(u & np.uint64(0xFFFF), half)
        try:
            ca = np.asarray(T.encode(xa, fmt, rnd, satfinite=satfinite, relu=relu), np.uint64)
            cb = np.asarray(T.encode(xb, fmt, rnd, satfinite=satfinite, relu=relu), np.uint64)
        except FormatError as e:
            raise illegal("cvt", str(e)) from None
        return out((ca << np.uint64(w)) | cb, 2 * w if w == 4 else 16)
    if atype in X2_NARROW and dtype in ("f16x2", "bf16x2"):
        fmt, w = X2_NARROW[atype]
        check_choice("cvt", "rounding", rnd, ("rn",))
        if fmt == "ue8m0" and dtype != "bf16x2":
            raise illegal("cvt", f"cvt.{dtype}.{atype} does not exist")
        if fmt != "ue8m0" and dtype == "bf16x2" and not ptx_9_2:
            # the PTX ISA 9.2 forms (Triton 3.9 emits them for sm_120a dot_scaled,
            # tests/machine/test_exec_triton_sm90_sm120.py); exact widening as to .f16x2, with
            # .relu and .satfinite (ptxas 13.5 accepts both; tests/isa/test_cvt_new_forms.py)
            raise illegal("cvt", f"cvt.{dtype}.{atype} needs PTX ISA 9.2 and an sm_100a / "
                          "sm_100f-or-newer target")
        if (satfinite and dtype != "bf16x2") or (fmt == "ue8m0" and (relu or satfinite)):
            raise illegal("cvt", f"modifier not defined for cvt.{dtype}.{atype}")
        u = bits(a, 2 * w if w == 4 else 16, "a")
        m = np.uint64((1 << w) - 1)
        if fmt in ("e2m3", "e3m2") and np.any((u & np.uint64(0xC0C0)) != 0):
            raise OperandError(f"cvt.{dtype}.{atype}: the 2 padding bits of each byte must be 0")
        target = BF16 if dtype == "bf16x2" else F16
        parts = []
        for sh in (w, 0):
            v = T.decode((u >> np.uint64(sh)) & m, fmt)
            r = _round(np.asarray(v, np.float64), np.zeros(1), target, "rn")  # exact widening
            if relu:
                r = np.where(((r & sign_bit(target)) != 0) & ~is_nan(r, target), np.uint64(0), r)
            if satfinite:        # 9.7.9.21 .satfinite: an infinity becomes the largest finite
                inf = (r & ~sign_bit(target)) == np.uint64(0x7F80)
                r = np.where(inf, (r & sign_bit(target)) | np.uint64(0x7F7F), r)
            parts.append(r)
        return out((parts[0] << np.uint64(16)) | parts[1], 32)
    raise illegal("cvt", f"no packed conversion cvt.{dtype}.{atype}")


def _enc(x, fmt, rnd, satfinite, relu):
    v = decode(bits(x, 32, "a/b"), F32)
    try:
        return np.asarray(T.encode(v, fmt, rnd, satfinite=satfinite, relu=relu), np.uint64)
    except FormatError as e:
        raise illegal("cvt", str(e)) from None


# --- cvt.pack ----------------------------------------------------------------------------------------
PACK_TYPES = {"u16": (16, False), "s16": (16, True), "u8": (8, False), "s8": (8, True),
              "u4": (4, False), "s4": (4, True), "u2": (2, False), "s2": (2, True)}


def cvt_pack(a, b, c=None, *, dtype: str) -> np.ndarray:
    """`cvt.pack.sat.{u16,s16}.s32 d, a, b` and `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b,
    c`: a and b (s32) clamped to dtype, b in the low `size` bits, a above it, and for the
    four-operand form the low bits of c above that: d = c << 2size | a' << size | b'."""
    check_choice("cvt.pack", "convertType", dtype, PACK_TYPES)
    size, signed_ = PACK_TYPES[dtype]
    lo, hi = (-(1 << (size - 1)), (1 << (size - 1)) - 1) if signed_ else (0, (1 << size) - 1)
    ta = np.clip(regs.signed(bits(a, 32, "a"), 32), lo, hi)
    tb = np.clip(regs.signed(bits(b, 32, "b"), 32), lo, hi)
    m = np.uint64((1 << size) - 1)
    d = ((regs.from_value(ta, 64) & m) << np.uint64(size)) | (regs.from_value(tb, 64) & m)
    if size == 16:
        if c is not None:
            raise illegal("cvt.pack", f".{dtype} takes no c operand")
        return out(d, 32)
    if c is None:
        raise illegal("cvt.pack", f".{dtype} needs the .b32 operand c")
    return out(d | (bits(c, 32, "c") << np.uint64(2 * size)), 32)


# --- mov vector forms -------------------------------------------------------------------------------
MOV_VECTORS = {"b32": (16, 2), "b64": (32, 2), "b128": (64, 2)}
MOV_VECTORS_4 = {"b64": (16, 4), "b128": (32, 4)}


def mov_pack(parts, *, type: str) -> np.ndarray:
    """`mov.type d, {a, b[, c, e]}`: parts low element first. b128 returns (..., 2) uint64
    [low, high]."""
    n = len(parts)
    table = MOV_VECTORS if n == 2 else MOV_VECTORS_4 if n == 4 else None
    if table is None or type not in table:
        raise illegal("mov", f"no vector mov.{type} with {n} elements")
    w, _ = table[type]
    us = [bits(p, w, f"part {i}") for i, p in enumerate(parts)]
    if type == "b128":
        per = 64 // w
        words = []
        for k in range(2):
            v = np.zeros(np.broadcast(*us).shape, np.uint64)
            for i in range(per):
                v |= us[k * per + i] << np.uint64(w * i)
            words.append(v)
        return np.stack(words, -1)
    v = np.zeros(np.broadcast(*us).shape, np.uint64)
    for i, p in enumerate(us):
        v |= p << np.uint64(w * i)
    return out(v, w * n)


def mov_unpack(x, *, type: str, n: int = 2) -> list[np.ndarray]:
    """`mov.type {a, b[, c, e]}, x`: the elements of x, low first. For b128 pass (..., 2) uint64."""
    table = MOV_VECTORS if n == 2 else MOV_VECTORS_4 if n == 4 else None
    if table is None or type not in table:
        raise illegal("mov", f"no vector mov.{type} with {n} elements")
    w, _ = table[type]
    m = np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if type == "b128":
        arr = np.asarray(x)
        if arr.shape[-1:] != (2,):
            raise OperandError("mov.b128: pass the register as (..., 2) uint64 [low, high]")
        lo, hi = bits(arr[..., 0], 64, "low"), bits(arr[..., 1], 64, "high")
        per = 64 // w
        return [out((word >> np.uint64(w * i)) & m, w) for word in (lo, hi) for i in range(per)]
    u = bits(x, w * n, "x")
    return [out((u >> np.uint64(w * i)) & m, w) for i in range(n)]


# --- executor fast paths ------------------------------------------------------------------------
# Kernels `base.semantics` runs when the operand is a 1-d array of the exact container dtype,
# (kernel, operand dtypes) or None; they give the bits of `cvt` / `cvt_x2` above (differential
# tests: tests/isa/test_fast_paths_float.py):
# - f16 <- f32 .rn: numpy's float32 -> float16 cast rounds to nearest-even, subnormals and
#   overflow included; f32 <- f16 is exact. A NaN becomes the canonical NaN (as above).
# - bf16 <- f32 .rn: round-to-nearest-even on the bits (add 0x7FFF + the kept lsb, drop 16 bits;
#   bf16 has f32's exponent range, so subnormals and the carry into Inf need nothing else).
# - f32 <- bf16: a 16-bit shift (the general path's rule, NaNs included).
# - f32 <- s32 / u32 .rn: exact in float64, one rounding by the float64 -> float32 cast.
# - s32 / u32 <- f32 with an integer rounding: numpy's float32 rint / trunc / floor / ceil are
#   exact, then the clamp and NaN -> 0 of `_float_to_int`.
# - int <- int without .sat: sign / zero extension or truncation by numpy's casts.
_FU = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_FS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_IROUND32 = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
_MAG32 = np.uint32(0x7FFFFFFF)
_INF32 = np.uint32(0x7F800000)


def _nan_to(r, u, mag, inf, qnan):
    nan = (u & mag) > inf
    if nan.any():
        r[nan] = qnan
    return r


def _f16_from_f32(a):
    with np.errstate(all="ignore"):
        r = a.view(np.float32).astype(np.float16).view(np.uint16)
    return _nan_to(r, a, _MAG32, _INF32, np.uint16(0x7FFF))


def _f32_from_f16(a):
    r = a.view(np.float16).astype(np.float32).view(np.uint32)
    return _nan_to(r, a, np.uint16(0x7FFF), np.uint16(0x7C00), np.uint32(0x7FFFFFFF))


def _bf16_from_f32(a):
    r = ((a + (np.uint32(0x7FFF) + ((a >> np.uint32(16)) & np.uint32(1)))) >>
         np.uint32(16)).astype(np.uint16)
    return _nan_to(r, a, _MAG32, _INF32, np.uint16(0x7FFF))


def _int_from_f32(dst, rnd):
    w = dst.width
    lo, hi = np.float32(dst.min), np.float32(2.0 ** (w - 1) if dst.signed else 2.0 ** w)
    it, ut = (_FS if dst.signed else _FU)[w], _FU[w]
    top, bottom = it(dst.max), it(dst.min)
    f = _IROUND32[rnd]

    def kernel(a):
        with np.errstate(invalid="ignore"):
            y = f(a.view(np.float32))
            inside = (y >= lo) & (y < hi)         # False for NaN
            r = y.astype(it)
            if not inside.all():                  # the clamp and NaN -> 0 of `_float_to_int`
                r[~inside] = np.where(y[~inside] >= hi, top, np.where(y[~inside] < lo, bottom,
                                                                        it(0)))
        return r.view(ut)
    return kernel


def _fast_cvt(dtype, atype, rnd=None, ftz=False, sat=False, relu=False, satfinite=False):
    if ftz or sat or relu or satfinite:
        return None
    key = (dtype, atype, rnd)
    if key == ("f16", "f32", "rn"):
        return _f16_from_f32, (np.uint32,)
    if key == ("f32", "f16", None):
        return _f32_from_f16, (np.uint16,)
    if key == ("bf16", "f32", "rn"):
        return _bf16_from_f32, (np.uint32,)
    if key == ("f32", "bf16", None):
        return (lambda a: a.astype(np.uint32) << np.uint32(16)), (np.uint16,)
    if key in (("f32", "s32", "rn"), ("f32", "u32", "rn")):
        src = np.int32 if atype == "s32" else np.uint32
        return (lambda a: a.view(src).astype(np.float64).astype(np.float32).view(np.uint32)), \
            (np.uint32,)
    if atype == "f32" and dtype in ("s32", "u32") and rnd in IRND:
        return _int_from_f32(INT_TYPES[dtype], rnd), (np.uint32,)
    if atype in INT_CVT and dtype in INT_CVT and rnd is None:
        src, dst = INT_TYPES[atype], INT_TYPES[dtype]
        if "bf16" in (dtype, atype):
            return None
        du = _FU[dst.width]
        if src.signed:
            si, di = _FS[src.width], _FS[dst.width]
            return (lambda a: a.view(si).astype(di).view(du)), (_FU[src.width],)
        return (lambda a: a.astype(du)), (_FU[src.width],)
    return None


def _fast_cvt_x2(dtype, atype, rnd, relu=False, satfinite=False, ptx_9_2=False):
    """cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a in the upper half."""
    if atype != "f32" or rnd != "rn" or relu or satfinite or dtype not in ("f16x2", "bf16x2"):
        return None
    half = _f16_from_f32 if dtype == "f16x2" else _bf16_from_f32
    return (lambda a, b: (half(a).astype(np.uint32) << np.uint32(16)) | half(b)), \
        (np.uint32, np.uint32)


FAST_PATHS = {cvt: _fast_cvt, cvt_x2: _fast_cvt_x2}
