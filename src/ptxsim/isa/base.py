"""From a PTX opcode with its qualifiers to the semantics function: the executor's entry point
for the base instructions.

    f = semantics("add.sat.s32");  d = f(a, b)
    f = semantics("setp.ltu.and.ftz.f32");  p, q = f(a, b, c)
    f = semantics("shfl.sync.down.b32");  d, p = f(a, b, c, membermask, active=mask)

The qualifiers are sorted into types, a rounding and flags by what they are, so their order in
the opcode does not matter beyond what PTX fixes (for two types, the destination type first).
Illegal combinations surface as the PtxValidationError of the semantics function; an opcode this
module does not know is a PtxValidationError too.
"""
from __future__ import annotations

import functools

import numpy as np

from ptxsim.isa import compare, convert, floating, integer, logic, warp
from ptxsim.errors import UnsupportedFeature
from ptxsim.isa.regs import illegal

INT_T = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64",
         "b128", "u16x2", "s16x2", "u8x4", "s8x4", "pred", "u2", "s2", "u4", "s4"}
FLOAT_T = {"f16", "bf16", "f32", "f64", "f16x2", "bf16x2", "f32x2", "tf32", "e4m3x2", "e5m2x2",
           "e2m3x2", "e3m2x2", "e2m1x2", "ue8m0x2"}
FRND = {"rn", "rz", "rm", "rp", "rna"}
IRND = {"rni", "rzi", "rmi", "rpi"}
CMP = set(compare.FLOAT_OPS) | set(compare.UNSIGNED_OPS)
BOOL = {"and", "or", "xor"}


def _split(opcode: str):
    parts = opcode.split(".")
    op, quals = parts[0], parts[1:]
    types = [q for q in quals if q in INT_T or q in FLOAT_T]
    rnds = [q for q in quals if q in FRND or q in IRND]
    flags = [q for q in quals if q not in INT_T and q not in FLOAT_T and q not in FRND
             and q not in IRND]
    if len(rnds) > 1:
        raise illegal(op, f"more than one rounding modifier in '{opcode}'")
    return op, types, (rnds[0] if rnds else None), flags


def _one(items, what, opcode):
    if len(items) != 1:
        raise illegal(opcode, f"expected exactly one {what}, got {items or 'none'}")
    return items[0]


def _take(flags, allowed, opcode):
    """The flags that are in `allowed`; any other flag is an error."""
    extra = [f for f in flags if f not in allowed]
    if extra:
        raise illegal(opcode, f"unknown or misplaced qualifier(s) {', '.join('.' + e for e in extra)}")
    return set(flags)


def _is_float(t):
    return t in FLOAT_T


# Fast paths (each module's FAST_PATHS: public function -> builder of (kernel, operand dtypes) from
# the function's qualifier keywords, None for a form that keeps the general path). A kernel runs
# only when the operands are exactly what the executor passes -- 1-d numpy arrays of one shape,
# each of the kernel's container dtype -- and gives the general function's bits (differential
# tests: tests/isa/test_fast_paths_*.py); anything else goes to the general function, with its
# checks and errors.
FAST_PATHS = {**integer.FAST_PATHS, **logic.FAST_PATHS, **compare.FAST_PATHS,
              **floating.FAST_PATHS, **convert.FAST_PATHS, **warp.FAST_PATHS}
WARP_FAST = set(warp.FAST_PATHS)


def _guarded(general, kernel, dtypes):
    n = len(dtypes)
    dts = tuple(np.dtype(d) for d in dtypes)
    nd = np.ndarray

    def run(*args, **kw):
        if not kw and len(args) == n:
            a0 = args[0]
            if type(a0) is nd and a0.ndim == 1:
                shape = a0.shape
                for x, d in zip(args, dts):
                    if type(x) is not nd or x.dtype != d or x.shape != shape:
                        break
                else:
                    return kernel(*args)
        return general(*args, **kw)
    run.general, run.kernel = general, kernel
    return run


FULL_MASK = np.uint32(0xFFFFFFFF)


def _guarded_warp(general, kernel, dtypes):
    """The guard of the warp collectives: (warps, 32) operands of the kernel's dtypes, every
    thread active (`active=`), the membermask (the last operand) 0xFFFFFFFF everywhere."""
    n = len(dtypes)
    dts = tuple(np.dtype(d) for d in dtypes)
    nd = np.ndarray

    def run(*args, active=None):
        if len(args) == n and type(active) is nd and active.dtype == np.bool_ and \
                active.ndim == 2 and active.shape[1] == 32:
            shape = active.shape
            for x, d in zip(args, dts):
                if type(x) is not nd or x.dtype != d or x.shape != shape:
                    break
            else:
                if active.all() and (args[-1] == FULL_MASK).all():
                    return kernel(*args)
        return general(*args, active=active)
    run.general, run.kernel = general, kernel
    return run


def _with_fast_path(fn):
    """`fn` (a functools.partial of a module function) with its fast kernel in front, if any."""
    build = FAST_PATHS.get(getattr(fn, "func", None))
    if build is None or fn.args:
        return fn
    got = build(**fn.keywords)
    if got is None:
        return fn
    return (_guarded_warp if fn.func in WARP_FAST else _guarded)(fn, *got)


@functools.lru_cache(maxsize=4096)
def semantics(opcode: str, ptx_9_2: bool = False):
    """A callable taking the instruction's source operands in PTX order (a carry-in CC.CF last
    for addc/subc/madc; `active=` for the warp collectives) and returning its result(s).
    ptx_9_2: the module's .version / .target admit the PTX ISA 9.2 cvt forms (convert.cvt_x2)."""
    return _with_fast_path(_semantics(opcode, ptx_9_2))


def _semantics(opcode: str, ptx_9_2: bool = False):
    op, types, rnd, flags = _split(opcode)
    P = functools.partial
    if op in ("add", "sub"):
        if "cc" in flags:
            _take(flags, {"cc"}, opcode)
            return P(integer.add_cc if op == "add" else integer.sub_cc,
                     type=_one(types, "type", opcode))
        f = _take(flags, {"sat", "ftz"}, opcode)
        if len(types) == 2:
            fn = floating.add_mixed if op == "add" else floating.sub_mixed
            if types[0] != "f32":
                raise illegal(opcode, "the mixed form is .f32.{f16,bf16}")
            return P(fn, atype=types[1], rnd=rnd, sat="sat" in f)
        t = _one(types, "type", opcode)
        if _is_float(t):
            return P(getattr(floating, op), type=t, rnd=rnd, ftz="ftz" in f, sat="sat" in f)
        if rnd or "ftz" in f:
            raise illegal(opcode, "rounding / .ftz on an integer type")
        return P(getattr(integer, op), type=t, sat="sat" in f)
    if op in ("addc", "subc"):
        f = _take(flags, {"cc"}, opcode)
        return P(integer.addc if op == "addc" else integer.subc, type=_one(types, "type", opcode),
                 cc="cc" in f)
    if op in ("mul", "mad", "madc"):
        t = types[0] if types else None
        if op == "mad" and "cc" in flags or op == "madc":
            f = _take(flags, {"cc", "hi", "lo"}, opcode)
            mode = _one([m for m in ("hi", "lo") if m in f], "hi/lo", opcode)
            return P(integer.mad_cc, type=_one(types, "type", opcode), mode=mode,
                     carry_in=op == "madc")
        if t is not None and _is_float(t):
            f = _take(flags, {"ftz", "sat"}, opcode)
            return P(getattr(floating, op), type=_one(types, "type", opcode), rnd=rnd,
                     ftz="ftz" in f, sat="sat" in f)
        f = _take(flags, {"hi", "lo", "wide", "sat"}, opcode)
        mode = _one([m for m in ("hi", "lo", "wide") if m in f], "mode", opcode)
        if op == "mul":
            if "sat" in f:
                raise illegal(opcode, ".sat is not defined for integer mul")
            return P(integer.mul, type=_one(types, "type", opcode), mode=mode)
        return P(integer.mad, type=_one(types, "type", opcode), mode=mode, sat="sat" in f)
    if op == "fma":
        f = _take(flags, {"ftz", "sat", "relu"}, opcode)
        if len(types) == 2:
            return P(floating.fma_mixed, abtype=types[1], rnd=rnd, sat="sat" in f)
        return P(floating.fma, type=_one(types, "type", opcode), rnd=rnd, ftz="ftz" in f,
                 sat="sat" in f, relu="relu" in f)
    if op in ("mul24", "mad24"):
        f = _take(flags, {"hi", "lo", "sat"}, opcode)
        mode = _one([m for m in ("hi", "lo") if m in f], "hi/lo", opcode)
        kw = dict(type=_one(types, "type", opcode), mode=mode)
        if op == "mad24":
            kw["sat"] = "sat" in f
        elif "sat" in f:
            raise illegal(opcode, ".sat is not defined for mul24")
        return P(getattr(integer, op), **kw)
    if op in ("sad", "rem", "popc", "clz", "brev"):
        _take(flags, set(), opcode)
        return P(getattr(integer, op), type=_one(types, "type", opcode))
    if op == "div":
        t = _one(types, "type", opcode)
        if _is_float(t):
            f = _take(flags, {"ftz", "approx", "full"}, opcode)
            return P(floating.div, type=t, rnd=rnd, ftz="ftz" in f, approx="approx" in f,
                     full="full" in f)
        _take(flags, set(), opcode)
        return P(integer.div, type=t)
    if op in ("abs", "neg"):
        t = _one(types, "type", opcode)
        if _is_float(t):
            f = _take(flags, {"ftz"}, opcode)
            return P(getattr(floating, op), type=t, ftz="ftz" in f)
        _take(flags, set(), opcode)
        return P(getattr(integer, op), type=t)
    if op in ("min", "max"):
        t = _one(types, "type", opcode)
        if _is_float(t):
            f = _take(flags, {"ftz", "NaN", "xorsign", "abs"}, opcode)
            xs = "xorsign" in f
            if xs and "abs" not in f:
                raise illegal(opcode, ".xorsign must be followed by .abs")
            return P(getattr(floating, op), type=t, ftz="ftz" in f, nan="NaN" in f,
                     xorsign_abs=xs, abs="abs" in f and not xs)
        f = _take(flags, {"relu"}, opcode)
        return P(getattr(integer, op), type=t, relu="relu" in f)
    if op == "bfind":
        f = _take(flags, {"shiftamt"}, opcode)
        return P(integer.bfind, type=_one(types, "type", opcode), shiftamt="shiftamt" in f)
    if op in ("bfe", "bfi"):
        _take(flags, set(), opcode)
        return P(getattr(integer, op), type=_one(types, "type", opcode))
    if op == "fns":
        _take(flags, set(), opcode)
        return integer.fns
    if op == "bmsk":
        f = _take(flags, {"clamp", "wrap"}, opcode)
        return P(integer.bmsk, mode=_one(sorted(f), "mode", opcode))
    if op == "szext":
        f = _take(flags, {"clamp", "wrap"}, opcode)
        return P(integer.szext, type=_one(types, "type", opcode),
                 mode=_one(sorted(f), "mode", opcode))
    if op in ("dp4a", "dp2a"):
        if len(types) != 2:
            raise illegal(opcode, "needs .atype.btype")
        if op == "dp4a":
            _take(flags, set(), opcode)
            return P(integer.dp4a, atype=types[0], btype=types[1])
        f = _take(flags, {"hi", "lo"}, opcode)
        return P(integer.dp2a, mode=_one(sorted(f), "hi/lo", opcode), atype=types[0],
                 btype=types[1])
    if op in ("and", "or", "xor", "not", "cnot"):
        _take(flags, set(), opcode)
        fn = {"and": logic.and_, "or": logic.or_, "xor": logic.xor, "not": logic.not_,
              "cnot": logic.cnot}[op]
        return P(fn, type=_one(types, "type", opcode))
    if op == "lop3":
        f = _take(flags, {"or", "and"}, opcode)
        _one(types, "type", opcode)
        bool_op = _one(sorted(f), "BoolOp", opcode) if f else None
        if bool_op is None:
            return lambda a, b, c, imm_lut: logic.lop3(a, b, c, _imm_scalar(imm_lut))
        return lambda a, b, c, imm_lut, q: logic.lop3(a, b, c, _imm_scalar(imm_lut),
                                                      bool_op=bool_op, q=q)
    if op in ("shl", "shr"):
        _take(flags, set(), opcode)
        return P(getattr(logic, op), type=_one(types, "type", opcode))
    if op == "shf":
        f = _take(flags, {"l", "r", "clamp", "wrap"}, opcode)
        return P(logic.shf, dir=_one([d for d in ("l", "r") if d in f], "direction", opcode),
                 mode=_one([m for m in ("clamp", "wrap") if m in f], "mode", opcode))
    if op == "prmt":
        f = _take(flags, set(logic.PRMT_MODE_TABLE), opcode)
        _one(types, "type", opcode)
        return P(logic.prmt, mode=_one(sorted(f), "mode", opcode) if f else None)
    if op == "setp":
        f = _take(flags, CMP | BOOL | {"ftz"}, opcode)
        return _setp(opcode, f, _one(types, "type", opcode))
    if op == "set":
        f = _take(flags, CMP | BOOL | {"ftz"}, opcode)
        if len(types) != 2:
            raise illegal(opcode, "needs .dtype.stype")
        cmp = _cmp_of(opcode, f)
        bool_op = _bool_of(f, cmp)
        fn = P(compare.set, cmp=cmp, dtype=types[0], stype=types[1], ftz="ftz" in f,
               bool_op=bool_op)
        return fn if bool_op is None else (lambda a, b, c: fn(a, b, c=c))
    if op == "selp":
        _take(flags, set(), opcode)
        return P(compare.selp, type=_one(types, "type", opcode))
    if op == "slct":
        f = _take(flags, {"ftz"}, opcode)
        if len(types) != 2:
            raise illegal(opcode, "needs .dtype.ctype")
        return P(compare.slct, dtype=types[0], ctype=types[1], ftz="ftz" in f)
    if op in ("rcp", "sqrt"):
        f = _take(flags, {"ftz", "approx"}, opcode)
        return P(getattr(floating, op), type=_one(types, "type", opcode), rnd=rnd,
                 ftz="ftz" in f, approx="approx" in f)
    if op in ("rsqrt", "ex2", "lg2", "sin", "cos", "tanh"):
        f = _take(flags, {"ftz", "approx"} | ({"2pi"} if op in ("sin", "cos") else set()),
                  opcode)
        if "approx" not in f:
            raise illegal(opcode, f"{op} exists only as {op}.approx")
        t = _one(types, "type", opcode)
        if op in ("lg2", "sin", "cos"):
            if t != "f32":
                raise illegal(opcode, f"{op}.approx is defined for .f32 only")
            if "2pi" in f:            # PTX ISA 9.5 (ptxas 13.5): input in revolutions
                return P(getattr(floating, op), ftz="ftz" in f, twopi=True)
            return P(getattr(floating, op), ftz="ftz" in f)
        if op == "tanh":
            if "ftz" in f:
                raise illegal(opcode, ".ftz is not defined for tanh")
            return P(floating.tanh, type=t)
        return P(getattr(floating, op), type=t, ftz="ftz" in f)
    if op == "copysign":
        _take(flags, set(), opcode)
        return P(floating.copysign, type=_one(types, "type", opcode))
    if op == "testp":
        f = _take(flags, set(floating.TESTP_OPS), opcode)
        return P(floating.testp, op=_one(sorted(f), "test", opcode),
                 type=_one(types, "type", opcode))
    if op == "cvt":
        return _cvt(opcode, types, rnd, flags, ptx_9_2)
    if op in ("shfl", "vote", "match", "redux", "elect", "activemask"):
        return _warp(opcode, op, types, flags)
    raise illegal(opcode, f"'{op}' is not a base instruction ptxsim implements")


def _cmp_of(opcode, f):
    cmps = [c for c in f if c in CMP and c not in BOOL]
    return _one(cmps, "CmpOp", opcode)


def _bool_of(f, cmp):
    bools = [b for b in f if b in BOOL]
    return bools[0] if bools else None


def _setp(opcode, f, t):
    cmp = _cmp_of(opcode, f)
    bool_op = _bool_of(f, cmp)
    fn = functools.partial(compare.setp, cmp=cmp, type=t, ftz="ftz" in f, bool_op=bool_op)
    general = fn if bool_op is None else (lambda a, b, c: fn(a, b, c=c))
    got = compare._fast_setp(cmp, t, "ftz" in f, bool_op)
    return general if got is None else _guarded(general, *got)


def _imm_scalar(x):
    """An immediate operand as the executor passes it (broadcast over the threads) -> the one
    constant; an operand that differs between threads stays an array (and is refused by the
    semantics function, e.g. lop3's immLut must be a constant)."""
    a = np.asarray(x)
    if a.ndim == 1 and a.size and np.all(a == a[0]):
        return int(a[0])
    return x


_CHOP8 = {"u8", "s8"}


def _cvt_relaxed(fn, dtype, atype):
    """PTX relaxed type-checking for cvt's integer registers (measured on the H200,
    tests/data/hardware/base_sweep/base_sm90.npz): an 8-bit source in a wider register is chopped to its low
    8 bits (cvt.u32.u8 of 0xbb83 converts 0x83), and an .s8 result is sign-extended into the
    destination register (cvt.s8.u16 0x3c9 -> 0xffc9 in a .b16 register)."""
    if atype not in _CHOP8 and dtype != "s8":
        return fn

    def run(a):
        if atype in _CHOP8:
            a = np.asarray(a)
            a = a & np.asarray(0xFF, a.dtype) if a.dtype.kind in "iu" else a
        r = fn(a)
        return np.asarray(r).astype(np.uint8).view(np.int8) if dtype == "s8" else r
    return run


# cvt forms ptxas 13.5 accepts that ptxsim does not compute (tests/isa/test_cvt_new_forms.py):
# the ISA texts ptxsim has do not define the .s2f6x2 format nor the .scaled::n2::ue8m0 scale
# operand, and the random-bit alignment of .rs for each destination format is not measured (no
# B200 here). A launch that reaches one stops with UnsupportedFeature; `ptxsim check` warns.
CVT_UNMODELLED = {
    "rs": "stochastic rounding (.rs, PTX ISA 8.7, sm_100a / sm_103a)",
    "s2f6x2": "the .s2f6x2 type (PTX ISA 9.1)",
    "scaled::n2::ue8m0": "the .scaled::n2::ue8m0 scale operand (PTX ISA 9.1 / 9.2)",
    **{t: f"the .{t} type (with .rs)" for t in ("e4m3x4", "e5m2x4", "e2m3x4", "e3m2x4",
                                                "e2m1x4")},
}


def _cvt(opcode, types, rnd, flags, ptx_9_2=False):
    unmodelled = [CVT_UNMODELLED[f] for f in flags if f in CVT_UNMODELLED]
    if unmodelled:
        raise UnsupportedFeature(f"{opcode}: {', '.join(unmodelled)} is not modelled")
    if "pack" in flags:
        _take(flags, {"pack", "sat"}, opcode)
        if "sat" not in flags:
            raise illegal(opcode, "cvt.pack requires .sat")
        return functools.partial(convert.cvt_pack, dtype=types[0])
    f = _take(flags, {"ftz", "sat", "relu", "satfinite"}, opcode)
    if len(types) != 2:
        raise illegal(opcode, "cvt needs .dtype.atype")
    dtype, atype = types
    packed = {"f16x2", "bf16x2"} | set(convert.X2_NARROW)
    if dtype in packed or atype in packed:
        if "ftz" in f or "sat" in f:
            raise illegal(opcode, ".ftz/.sat are not defined for the packed conversions")
        kw = dict(ptx_9_2=True) if ptx_9_2 else {}
        return functools.partial(convert.cvt_x2, dtype=dtype, atype=atype, rnd=rnd,
                                 relu="relu" in f, satfinite="satfinite" in f, **kw)
    return _cvt_relaxed(functools.partial(convert.cvt, dtype=dtype, atype=atype, rnd=rnd,
                                          ftz="ftz" in f, sat="sat" in f, relu="relu" in f,
                                          satfinite="satfinite" in f), dtype, atype)


def _warp(opcode, op, types, flags):
    P = functools.partial
    if op == "activemask":
        _take(flags, set(), opcode)
        return lambda active: warp.activemask(active=active)
    if "sync" not in flags:
        raise illegal(opcode, f"ptxsim implements only {op}.sync (the non-.sync forms are "
                      "deprecated and undefined on sm_70+)")
    if op == "shfl":
        f = _take(flags, {"sync", "up", "down", "bfly", "idx"}, opcode)
        return P(warp.shfl_sync, mode=_one(sorted(f - {"sync"}), "mode", opcode))
    if op == "vote":
        f = _take(flags, {"sync", "all", "any", "uni", "ballot"}, opcode)
        return P(warp.vote_sync, mode=_one(sorted(f - {"sync"}), "mode", opcode))
    if op == "match":
        f = _take(flags, {"sync", "all", "any"}, opcode)
        return P(warp.match_sync, mode=_one(sorted(f - {"sync"}), "mode", opcode),
                 type=_one(types, "type", opcode))
    if op == "redux":
        f = _take(flags, {"sync", "add", "min", "max", "and", "or", "xor", "abs", "NaN"},
                  opcode)
        ops = sorted(f & {"add", "min", "max", "and", "or", "xor"})
        return P(warp.redux_sync, op=_one(ops, "operation", opcode),
                 type=_one(types, "type", opcode), abs="abs" in f, nan="NaN" in f)
    _take(flags, {"sync"}, opcode)
    return P(warp.elect_sync)
