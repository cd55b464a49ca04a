"""Candidate base-instruction forms, enumerated from ptxsim's own qualifier tables.

Every form is a dict: name, instruction (text over registers %d %p %q %a %b %c %e), regs
{name: (ptx register type, value kind)}, inputs [names], outputs [names]. ptxas (sm_90a) decides
which candidates are legal (ptxgen.legal_subset); the product is deliberately generous.
Value kinds drive the operand generator (base_inputs.py): f16/bf16/f32/f64, f16x2/bf16x2,
u16/s16/u32/s32/u64/s64, u16x2/s16x2, shift (bit positions / counts), pred, lane, clamp, e4m3x2...
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from ptxsim.isa import compare, convert, floating, integer, logic, warp  # noqa: E402

W = {"u8": 16, "s8": 16, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
     "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "u16x2": 32,
     "s16x2": 32, "tf32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64, "pred": 1,
     "e4m3x2": 16, "e5m2x2": 16, "e2m3x2": 16, "e3m2x2": 16, "ue8m0x2": 16}
RT = {16: ".b16", 32: ".b32", 64: ".b64", 1: ".pred"}
LUTS = (0x00, 0xFF, 0x96, 0xE8, 0xCA, 0xF0, 0xCC, 0xAA, 0x80, 0xFE, 0x5A, 0x1E, 0x6B, 0xB4)


def _kind(t):
    return {"b16": "u16", "b32": "u32", "b64": "u64", "u8": "u16", "s8": "s16"}.get(t, t)


def F(family, opcode, dst, srcs, extra=""):
    """dst/srcs: lists of (reg name, value type); extra: trailing immediates text."""
    regs = {}
    for n, t in list(dst) + list(srcs):
        regs[n] = (RT[W.get(t, 32)], _kind(t))
    ops = []
    for n, _ in dst:
        ops.append(n)
    dtext = "|".join(ops) if len(dst) == 2 and dst[1][1] == "pred" and dst[0][1] != "pred" \
        or (len(dst) == 2 and opcode.startswith("setp")) else ", ".join(ops)
    text = f"{opcode} {dtext}" + "".join(f", {n}" for n, _ in srcs) + (f", {extra}" if extra else "") + ";"
    ins = [n for n, _ in srcs]
    return dict(family=family, instruction=text, regs=regs, inputs=list(dict.fromkeys(ins)),
                outputs=[n for n, _ in dst])


def integer_forms():
    out = []
    wide = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}
    for t in integer.ADD_TYPES + ("u32", "s32"):
        for op in ("add", "sub"):
            for sat in ("", ".sat"):
                out.append(F("int", f"{op}{sat}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
    for t in integer.ARITH_TYPES:
        for m in integer.MUL_MODES:
            if m == "wide" and t not in wide:
                continue
            dt = wide[t] if m == "wide" else t
            out.append(F("int", f"mul.{m}.{t}", [("%d", dt)], [("%a", t), ("%b", t)]))
            for sat in ("", ".sat"):
                out.append(F("int", f"mad.{m}{sat}.{t}", [("%d", dt)], [("%a", t), ("%b", t), ("%c", dt)]))
        for op in ("div", "rem"):
            out.append(F("int", f"{op}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
        out.append(F("int", f"sad.{t}", [("%d", t)], [("%a", t), ("%b", t), ("%c", t)]))
    for t in ("u32", "s32"):
        for m in ("hi", "lo"):
            out.append(F("int", f"mul24.{m}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
            for sat in ("", ".sat"):
                out.append(F("int", f"mad24.{m}{sat}.{t}", [("%d", t)], [("%a", t), ("%b", t), ("%c", t)]))
    for t in integer.ABS_NEG_TYPES:
        for op in ("abs", "neg"):
            out.append(F("int", f"{op}.{t}", [("%d", t)], [("%a", t)]))
    for t in integer.MINMAX_TYPES + integer.MINMAX_RELU_TYPES + ("s32", "u32"):
        for op in ("min", "max"):
            for relu in ("", ".relu"):
                out.append(F("int", f"{op}{relu}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
    for t in integer.BIT_TYPES:
        for op in ("popc", "clz"):
            out.append(F("int", f"{op}.{t}", [("%d", "u32")], [("%a", t)]))
        out.append(F("int", f"brev.{t}", [("%d", t)], [("%a", t)]))
        out.append(F("int", f"bfi.{t}", [("%d", t)], [("%a", t), ("%b", t), ("%c", "shift"), ("%e", "shift")]))
    for t in integer.BFIND_BFE_TYPES:
        for sa in ("", ".shiftamt"):
            out.append(F("int", f"bfind{sa}.{t}", [("%d", "u32")], [("%a", t)]))
        out.append(F("int", f"bfe.{t}", [("%d", t)], [("%a", t), ("%b", "shift"), ("%c", "shift")]))
    out.append(F("int", "fns.b32", [("%d", "u32")], [("%a", "u32"), ("%b", "shift"), ("%c", "fnsoff")]))
    for m in integer.CLAMP_WRAP:
        out.append(F("int", f"bmsk.{m}.b32", [("%d", "u32")], [("%a", "shift"), ("%b", "shift")]))
        for t in ("u32", "s32"):
            out.append(F("int", f"szext.{m}.{t}", [("%d", t)], [("%a", t), ("%b", "shift")]))
    for at, bt in itertools.product(integer.DP_TYPES, repeat=2):
        ct = "s32" if "s32" in (at, bt) else "u32"
        out.append(F("int", f"dp4a.{at}.{bt}", [("%d", ct)], [("%a", at), ("%b", bt), ("%c", ct)]))
        for m in ("lo", "hi"):
            out.append(F("int", f"dp2a.{m}.{at}.{bt}", [("%d", ct)], [("%a", at), ("%b", bt), ("%c", ct)]))
    return out


def logic_forms():
    out = []
    for t in logic.LOGIC_TYPES:
        for op in ("and", "or", "xor"):
            out.append(F("logic", f"{op}.{t}", [("%d" if t != "pred" else "%p", t)],
                         [("%a" if t != "pred" else "%q", t), ("%b" if t != "pred" else "%r", t)]))
        out.append(F("logic", f"not.{t}", [("%d" if t != "pred" else "%p", t)],
                     [("%a" if t != "pred" else "%q", t)]))
    for t in logic.CNOT_TYPES:
        out.append(F("logic", f"cnot.{t}", [("%d", t)], [("%a", t)]))
    for lut in LUTS:
        out.append(F("logic", "lop3.b32", [("%d", "u32")], [("%a", "u32"), ("%b", "u32"), ("%c", "u32")],
                     extra=f"0x{lut:02x}"))
    for d, m in itertools.product(logic.SHF_DIRS, logic.SHF_MODES):
        for t in ("b32", "u32", "s32"):
            out.append(F("logic", f"shf.{d}.{m}.{t}", [("%d", "u32")], [("%a", "u32"), ("%b", "u32"), ("%c", "shift")]))
    for t in logic.SHL_TYPES:
        out.append(F("logic", f"shl.{t}", [("%d", t)], [("%a", t), ("%b", "shift")]))
    for t in logic.SHR_TYPES:
        out.append(F("logic", f"shr.{t}", [("%d", t)], [("%a", t), ("%b", "shift")]))
    for m in logic.PRMT_MODES:
        out.append(F("logic", "prmt.b32" + (f".{m}" if m else ""), [("%d", "u32")],
                     [("%a", "u32"), ("%b", "u32"), ("%c", "u32")]))
    return out


def compare_forms():
    out = []
    for t in compare.INT_CMP_TYPES + compare.FLOAT_CMP_TYPES:
        two = t.endswith("x2")
        dst = [("%p", "pred"), ("%q", "pred")] if two else [("%p", "pred")]
        for op in compare.cmp_ops_for(t):
            for ftz in ("", ".ftz"):
                if ftz and t not in compare.FTZ_CMP_TYPES:
                    continue
                out.append(F("setp", f"setp.{op}{ftz}.{t}", dst, [("%a", t), ("%b", t)]))
                for bop in compare.BOOL_OPS:
                    out.append(F("setp", f"setp.{op}.{bop}{ftz}.{t}", dst, [("%a", t), ("%b", t), ("%c", "pred")]))
                    if bop == "xor":
                        out.append(F("setp", f"setp.{op}.{bop}{ftz}.{t}", dst, [("%a", t), ("%b", t)], extra="!%c"))
                        out[-1]["regs"]["%c"] = (".pred", "pred")
                        out[-1]["inputs"].append("%c")
        for dt in compare.SET_TABLE.get(t, ()):
            for op in compare.cmp_ops_for(t):
                for bop in ("",) + compare.BOOL_OPS:
                    for ftz in ("", ".ftz") if t in compare.FTZ_CMP_TYPES else ("",):
                        srcs = [("%a", t), ("%b", t)] + ([("%c", "pred")] if bop else [])
                        out.append(F("set", f"set.{op}{'.' + bop if bop else ''}{ftz}.{dt}.{t}",
                                     [("%d", dt)], srcs))
    for t in compare.SELP_TYPES + ("f16", "bf16", "f16x2", "bf16x2"):
        out.append(F("selp", f"selp.{t}", [("%d", t)], [("%a", t), ("%b", t), ("%c", "pred")]))
    for t in compare.SELP_TYPES:
        out.append(F("slct", f"slct.{t}.s32", [("%d", t)], [("%a", t), ("%b", t), ("%c", "s32")]))
        for ftz in ("", ".ftz"):
            out.append(F("slct", f"slct{ftz}.{t}.f32", [("%d", t)], [("%a", t), ("%b", t), ("%c", "f32")]))
    return out


FT = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")


def float_forms():
    out = []
    for op in ("add", "sub", "mul", "fma", "mad"):
        n = 3 if op in ("fma", "mad") else 2
        for t in FT:
            for rnd, ftz, sat, relu in itertools.product(("",) + floating.ROUNDINGS, ("", ".ftz"),
                                                         ("", ".sat"), ("", ".relu")):
                srcs = [("%a", t), ("%b", t), ("%c", t)][:n]
                q = f"{rnd and '.' + rnd}{ftz}{sat}{relu}"
                out.append(F("float", f"{op}{q}.{t}", [("%d", t)], srcs))
        for at in ("f16", "bf16"):   # mixed precision (sm_100+)
            for rnd, sat in itertools.product(("",) + floating.ROUNDINGS, ("", ".sat")):
                srcs = [("%a", at), ("%b", at), ("%c", "f32")][:n] if n == 3 else [("%a", at), ("%c", "f32")]
                out.append(F("float", f"{op}{rnd and '.' + rnd}{sat}.f32.{at}", [("%d", "f32")], srcs))
    for t in ("f32", "f64", "f16", "bf16"):
        for rnd, ftz in itertools.product(floating.ROUNDINGS, ("", ".ftz")):
            out.append(F("float", f"div.{rnd}{ftz}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
    for t in FT:
        for op in ("min", "max"):
            for ftz, nan, xs in itertools.product(("", ".ftz"), ("", ".NaN"), ("", ".xorsign.abs")):
                out.append(F("float", f"{op}{ftz}{nan}{xs}.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
                if t == "f32" and not xs:
                    out.append(F("float", f"{op}{ftz}{nan}.{t}", [("%d", t)], [("%a", t), ("%b", t), ("%c", t)]))
        for op in ("abs", "neg"):
            for ftz in ("", ".ftz"):
                out.append(F("float", f"{op}{ftz}.{t}", [("%d", t)], [("%a", t)]))
        out.append(F("float", f"copysign.{t}", [("%d", t)], [("%a", t), ("%b", t)]))
        for op in floating.TESTP_OPS:
            out.append(F("float", f"testp.{op}.{t}", [("%p", "pred")], [("%a", t)]))
    return out


def cvt_forms():
    out = []
    scalar = convert.INT_CVT + convert.FLOAT_CVT
    for dt, at in itertools.product(scalar, repeat=2):
        fl = dt in convert.FLOAT_CVT or at in convert.FLOAT_CVT
        rnds = ("",) + (convert.IRND + convert.FRND + ("rna",) if fl else ())
        for rnd, ftz, sat, relu in itertools.product(rnds, ("", ".ftz"), ("", ".sat"), ("", ".relu")):
            if (ftz or relu) and not fl:
                continue
            out.append(F("cvt", f"cvt{rnd and '.' + rnd}{ftz}{sat}{relu}.{dt}.{at}", [("%d", dt)], [("%a", at)]))
        if dt in ("f16", "bf16", "f32") and at == "f32" or dt == "tf32":
            pass
    for rnd, sat in itertools.product(("rn", "rz", "rna", "rm", "rp"), ("", ".satfinite")):
        for relu in ("", ".relu"):
            out.append(F("cvt", f"cvt.{rnd}{sat}{relu}.tf32.f32", [("%d", "u32")], [("%a", "f32")]))
    for dt in ("f16x2", "bf16x2"):
        for rnd, relu, sat in itertools.product(("rn", "rz", "rm", "rp"), ("", ".relu"), ("", ".satfinite")):
            out.append(F("cvt", f"cvt.{rnd}{relu}{sat}.{dt}.f32", [("%d", dt)], [("%a", "f32"), ("%b", "f32")]))
    for dt in ("e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "ue8m0x2"):
        for rnd, relu, sat in itertools.product(("rn", "rz", "rp"), ("", ".relu"), ("", ".satfinite")):
            out.append(F("cvt", f"cvt.{rnd}{sat}{relu}.{dt}.f32", [("%d", "u16")], [("%a", "f32"), ("%b", "f32")]))
            out.append(F("cvt", f"cvt.{rnd}{sat}{relu}.{dt}.f16x2", [("%d", "u16")], [("%a", "f16x2")]))
            out.append(F("cvt", f"cvt.{rnd}{sat}{relu}.{dt}.bf16x2", [("%d", "u16")], [("%a", "bf16x2")]))
        for relu in ("", ".relu"):
            out.append(F("cvt", f"cvt.rn{relu}.f16x2.{dt}", [("%d", "f16x2")], [("%a", dt)]))
            out.append(F("cvt", f"cvt.rn{relu}.bf16x2.{dt}", [("%d", "bf16x2")], [("%a", dt)]))
    for ct, abt in itertools.product(("u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2"), ("s32",)):
        out.append(F("cvt", f"cvt.pack.sat.{ct}.{abt}", [("%d", "u32")], [("%a", "s32"), ("%b", "s32")]))
        out.append(F("cvt", f"cvt.pack.sat.{ct}.{abt}.b32", [("%d", "u32")],
                     [("%a", "s32"), ("%b", "s32"), ("%c", "u32")]))
    return out


def warp_forms():
    out = []
    for m in warp.SHFL_MODES:
        out.append(F("warp", f"shfl.sync.{m}.b32", [("%d", "u32"), ("%p", "pred")],
                     [("%a", "u32"), ("%b", "lane"), ("%c", "clamp")], extra="0xffffffff"))
        out.append(F("warp", f"shfl.sync.{m}.b32", [("%d", "u32")],
                     [("%a", "u32"), ("%b", "lane"), ("%c", "clamp")], extra="0xffffffff"))
    for m in warp.VOTE_MODES:
        if m == "ballot":
            out.append(F("warp", "vote.sync.ballot.b32", [("%d", "u32")], [("%q", "wpred")], extra="0xffffffff"))
        else:
            out.append(F("warp", f"vote.sync.{m}.pred", [("%p", "pred")], [("%q", "wpred")], extra="0xffffffff"))
    for op, ts in warp.REDUX_INT.items():
        for t in ts:
            out.append(F("warp", f"redux.sync.{op}.{t}", [("%d", "u32")], [("%a", "wval")], extra="0xffffffff"))
    for t in warp.MATCH_TYPES:
        vt = "wval" if t == "b32" else "wval64"
        out.append(F("warp", f"match.any.sync.{t}", [("%d", "u32")], [("%a", vt)], extra="0xffffffff"))
        out.append(F("warp", f"match.all.sync.{t}", [("%d", "u32"), ("%p", "pred")], [("%a", vt)], extra="0xffffffff"))
    for f in out:
        for n, (rt, k) in list(f["regs"].items()):
            if k == "wval64":
                f["regs"][n] = (".b64", "wval64")
            if k == "wpred":
                f["regs"][n] = (".pred", "wpred")
    return out


def all_forms():
    fs = integer_forms() + logic_forms() + compare_forms() + float_forms() + cvt_forms() + warp_forms()
    seen, out = set(), []
    for f in fs:
        if f["instruction"] not in seen:
            seen.add(f["instruction"])
            out.append(f)
    for i, f in enumerate(out):
        f["name"] = f"k{i}"
    return out


if __name__ == "__main__":
    fs = all_forms()
    import collections
    print(len(fs), collections.Counter(f["family"] for f in fs))
