"""The legality tables of the base instructions against ptxas 13.5 (the oracle for PTX legality,
tests/ptxas135.py) at `.version 9.5`, the newest it knows (the isa functions judge a form by the
newest PTX ISA): every (instruction, type, qualifier) combination enumerated here is written as
one PTX line, and the lines ptxas rejects must be exactly the combinations the Python API rejects
with PtxValidationError."""
import itertools
import re
import subprocess
import sys
import tempfile

import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import compare as C
from ptxsim.isa import floating as F
from ptxsim.isa import integer as I
from ptxsim.isa import logic as L

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
import ptxas135  # noqa: E402

PTXAS = ptxas135.find()
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas 13.5 not found (tests/ptxas135.py)")

REG = {16: "h1", 32: "r1", 64: "l1", "pred": "p1"}
WIDTH = {"u16": 16, "s16": 16, "b16": 16, "f16": 16, "bf16": 16, "u32": 32, "s32": 32,
         "b32": 32, "f32": 32, "u16x2": 32, "s16x2": 32, "f16x2": 32, "bf16x2": 32,
         "u64": 64, "s64": 64, "b64": 64, "f64": 64, "f32x2": 64, "u8": 16, "s8": 16}


def r(type):
    return REG[WIDTH[type]]


def ptxas_rejects(lines):
    """Indices of the lines ptxas reports an error for (one instruction per line)."""
    head = [".version 9.5", ".target sm_100a", ".address_size 64", ".visible .entry k() {",
            ".reg .b16 h<4>;", ".reg .b32 r<4>;", ".reg .b64 l<4>;", ".reg .pred p<4>;",
            ".reg .b8 b<4>;", ".reg .b128 q<4>;"]
    text = "\n".join(head + lines + ["ret;", "}"]) + "\n"
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(text)
    res = subprocess.run([PTXAS, "-arch=sm_100a", f.name, "-o", "/dev/null"],
                         capture_output=True, text=True)
    bad = set()
    for m in re.finditer(r"line (\d+); error", res.stderr):
        bad.add(int(m.group(1)) - len(head) - 1)
    return bad


def py_rejects(call):
    try:
        call()
    except PtxValidationError:
        return True
    return False


# Forms ptxas assembles although the ISA's syntax tables do not list them. ptxsim follows
# the ISA for these (the semantics of a 16-bit carry chain are not documented).
PTXAS_ONLY = {"addc.u16 h1, h1, h1;", "addc.s16 h1, h1, h1;", "subc.u16 h1, h1, h1;",
              "subc.s16 h1, h1, h1;", "madc.hi.u16 h1, h1, h1, h1;",
              "madc.hi.s16 h1, h1, h1, h1;"}


# PTX ISA 9.2 forms of sm_120f only (isa.integer.SIMD_9_2): ptxas refuses them for this test's
# sm_100a target; the isa functions judge forms without a target, and the executor applies the
# target note (tests/isa/test_simd8.py). Checked here: sm_100a refuses, sm_120f accepts.
SM_120F_ONLY = {"add.sat.u32 r1, r1, r1;", "add.sat.u16x2 r1, r1, r1;",
                "add.sat.s16x2 r1, r1, r1;"}


def _accepted_on_sm_120f(line):
    text = "\n".join([".version 9.5", ".target sm_120f", ".address_size 64",
                      ".visible .entry k() {", ".reg .b32 r<4>;", line, "ret;", "}"]) + "\n"
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(text)
    return subprocess.run([PTXAS, "-arch=sm_120f", f.name, "-o", "/dev/null"],
                          capture_output=True, text=True).returncode == 0


def dispatch_rejects(line):
    """The same line through ptxsim.isa.base.semantics(opcode), with all-ones operands."""
    import numpy as np

    from ptxsim.isa.base import semantics
    opcode, _, operands = line.rstrip(";").partition(" ")
    n_src = operands.count(",") + opcode.startswith(("addc", "subc", "madc"))  # CC.CF in
    # this test's module is .version 9.5 for sm_100a: the PTX ISA 9.2 cvt forms exist there
    return py_rejects(lambda: semantics(opcode, opcode.startswith("cvt"))(
        *([np.ones(1, np.uint64)] * n_src)))


def compare_with_ptxas(cases):
    lines = [c[0] for c in cases]
    bad = ptxas_rejects(lines)
    mismatches = []
    for i, (line, call) in enumerate(cases):
        if line in PTXAS_ONLY:
            assert i not in bad and py_rejects(call), line
            continue
        if line in SM_120F_ONLY:
            assert i in bad and not py_rejects(call) and _accepted_on_sm_120f(line), line
            continue
        if not line.startswith("mov.") and (i in bad) != dispatch_rejects(line):
            mismatches.append(("ptxas rejects" if i in bad else "ptxas accepts") +
                              " (via semantics()): " + line)
        if (i in bad) != py_rejects(call):
            mismatches.append(("ptxas rejects" if i in bad else "ptxas accepts") + ": " + line)
    assert not mismatches, f"{len(mismatches)} disagreements, e.g.\n" + "\n".join(mismatches[:25])


INT_T = ("u16", "u32", "u64", "s16", "s32", "s64", "u16x2", "s16x2", "b32")


def test_integer_add_sub_mul_mad():
    cases = []
    for op, t, sat in itertools.product(("add", "sub"), INT_T, (False, True)):
        q = ".sat" if sat else ""
        fn = I.add if op == "add" else I.sub
        cases.append((f"{op}{q}.{t} {r(t)}, {r(t)}, {r(t)};",
                      lambda fn=fn, t=t, sat=sat: fn([0], [0], type=t, sat=sat)))
    for op, mode, t in itertools.product(("mul", "mad"), ("hi", "lo", "wide"), INT_T[:6]):
        w = WIDTH[t]
        dreg = REG[2 * w] if mode == "wide" and w < 64 else r(t)
        if op == "mul":
            cases.append((f"mul.{mode}.{t} {dreg}, {r(t)}, {r(t)};",
                          lambda mode=mode, t=t: I.mul([0], [0], type=t, mode=mode)))
        else:
            cases.append((f"mad.{mode}.{t} {dreg}, {r(t)}, {r(t)}, {dreg};",
                          lambda mode=mode, t=t: I.mad([0], [0], [0], type=t, mode=mode)))
            cases.append((f"mad.{mode}.sat.{t} {dreg}, {r(t)}, {r(t)}, {dreg};",
                          lambda mode=mode, t=t: I.mad([0], [0], [0], type=t, mode=mode,
                                                       sat=True)))
    for op, mode, t in itertools.product(("mul24", "mad24"), ("hi", "lo"), ("u32", "s32", "u64")):
        if op == "mul24":
            cases.append((f"mul24.{mode}.{t} {r(t)}, {r(t)}, {r(t)};",
                          lambda mode=mode, t=t: I.mul24([0], [0], type=t, mode=mode)))
        else:
            for sat in (False, True):
                cases.append((f"mad24.{mode}{'.sat' if sat else ''}.{t} r1, r1, r1, r1;",
                              lambda mode=mode, t=t, sat=sat: I.mad24([0], [0], [0], type=t,
                                                                      mode=mode, sat=sat)))
    for op, t in itertools.product(("add.cc", "addc", "addc.cc", "sub.cc", "subc", "mad.lo.cc",
                                    "madc.hi", "madc.hi.cc"), INT_T):
        fn = {"add.cc": lambda t: I.add_cc([0], [0], type=t),
              "addc": lambda t: I.addc([0], [0], [False], type=t),
              "addc.cc": lambda t: I.addc([0], [0], [False], type=t, cc=True),
              "sub.cc": lambda t: I.sub_cc([0], [0], type=t),
              "subc": lambda t: I.subc([0], [0], [False], type=t),
              "mad.lo.cc": lambda t: I.mad_cc([0], [0], [0], type=t, mode="lo"),
              "madc.hi": lambda t: I.mad_cc([0], [0], [0], type=t, mode="hi", cf=[0],
                                            carry_in=True),
              "madc.hi.cc": lambda t: I.mad_cc([0], [0], [0], type=t, mode="hi", cf=[0],
                                               carry_in=True)}[op]
        ops = ", ".join([r(t)] * (4 if "mad" in op else 3))
        cases.append((f"{op}.{t} {ops};", lambda fn=fn, t=t: fn(t)))
    compare_with_ptxas(cases)


def test_integer_misc():
    cases = []
    for op, t in itertools.product(("div", "rem", "abs", "neg", "sad"), INT_T):
        n = {"div": 2, "rem": 2, "abs": 1, "neg": 1, "sad": 3}[op]
        fn = getattr(I, op)
        cases.append((f"{op}.{t} {', '.join([r(t)] * (n + 1))};",
                      lambda fn=fn, t=t, n=n: fn(*([[1]] * n), type=t)))
    for op, t, relu in itertools.product(("min", "max"), INT_T, (False, True)):
        cases.append((f"{op}{'.relu' if relu else ''}.{t} {r(t)}, {r(t)}, {r(t)};",
                      lambda op=op, t=t, relu=relu: getattr(I, op)([0], [0], type=t, relu=relu)))
    bt = ("b32", "b64", "u32", "s32", "u64", "s64", "b16")
    for op, t in itertools.product(("popc", "clz", "brev"), bt):
        d = "r1" if op != "brev" else r(t)
        cases.append((f"{op}.{t} {d}, {r(t)};", lambda op=op, t=t: getattr(I, op)([0], type=t)))
    for t, sa in itertools.product(bt, (False, True)):
        cases.append((f"bfind{'.shiftamt' if sa else ''}.{t} r1, {r(t)};",
                      lambda t=t, sa=sa: I.bfind([0], type=t, shiftamt=sa)))
        cases.append((f"bfe.{t} {r(t)}, {r(t)}, r1, r1;", lambda t=t: I.bfe([0], [0], [0], type=t)))
        cases.append((f"bfi.{t} {r(t)}, {r(t)}, {r(t)}, r1, r1;",
                      lambda t=t: I.bfi([0], [0], [0], [0], type=t)))
    for at, btp in itertools.product(("u32", "s32", "u16"), ("u32", "s32", "b32")):
        cases.append((f"dp4a.{at}.{btp} r1, r1, r1, r1;",
                      lambda at=at, btp=btp: I.dp4a([0], [0], [0], atype=at, btype=btp)))
        cases.append((f"dp2a.lo.{at}.{btp} r1, r1, r1, r1;",
                      lambda at=at, btp=btp: I.dp2a([0], [0], [0], mode="lo", atype=at,
                                                    btype=btp)))
    for t, mode in itertools.product(("u32", "s32", "b32"), ("clamp", "wrap")):
        cases.append((f"szext.{mode}.{t} r1, r1, r1;",
                      lambda t=t, mode=mode: I.szext([0], [0], type=t, mode=mode)))
    compare_with_ptxas(cases)


def test_logic_shift():
    cases = []
    for op, t in itertools.product(("and", "or", "xor", "not", "cnot"),
                                   ("pred", "b16", "b32", "b64", "u32", "s32")):
        n = 1 if op in ("not", "cnot") else 2
        reg = REG["pred"] if t == "pred" else r(t)
        fn = {"and": L.and_, "or": L.or_, "xor": L.xor, "not": L.not_, "cnot": L.cnot}[op]
        arg = [True] if t == "pred" else [0]
        cases.append((f"{op}.{t} {', '.join([reg] * (n + 1))};",
                      lambda fn=fn, t=t, n=n, arg=arg: fn(*([arg] * n), type=t)))
    for op, t in itertools.product(("shl", "shr"), ("b16", "b32", "b64", "u16", "u32", "u64",
                                                    "s16", "s32", "s64")):
        fn = L.shl if op == "shl" else L.shr
        cases.append((f"{op}.{t} {r(t)}, {r(t)}, r1;", lambda fn=fn, t=t: fn([0], [0], type=t)))
    for mode in (None, "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
        cases.append((f"prmt.b32{'.' + mode if mode else ''} r1, r1, r1, r1;",
                      lambda mode=mode: L.prmt([0], [0], [0], mode=mode)))
    compare_with_ptxas(cases)


CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
       "gtu", "geu", "num", "nan")


def test_setp_set():
    cases = []
    types = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64", "f16",
             "bf16")
    for cmp, t, ftz in itertools.product(CMP, types, (False, True)):
        q = ".ftz" if ftz else ""
        dst = "p1" if t in ("f16", "bf16") else "p1|p2"   # scalar half forms have no q
        cases.append((f"setp.{cmp}{q}.{t} {dst}, {r(t)}, {r(t)};",
                      lambda cmp=cmp, t=t, ftz=ftz: C.setp([0], [0], cmp=cmp, type=t, ftz=ftz)))
    for cmp, t, ftz in itertools.product(("lt", "equ", "lo"), ("f16x2", "bf16x2"), (False, True)):
        q = ".ftz" if ftz else ""
        cases.append((f"setp.{cmp}.and{q}.{t} p1|p2, r1, r1, p3;",
                      lambda cmp=cmp, t=t, ftz=ftz: C.setp([0], [0], cmp=cmp, type=t, ftz=ftz,
                                                           bool_op="and", c=[True])))
    dtypes = ("u32", "s32", "f32", "u16", "s16", "f16", "bf16", "f16x2", "bf16x2")
    stypes = ("u32", "s64", "b16", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2")
    for dt, st in itertools.product(dtypes, stypes):
        cases.append((f"set.lt.{dt}.{st} {r(dt)}, {r(st)}, {r(st)};",
                      lambda dt=dt, st=st: C.set([0], [0], cmp="lt", dtype=dt, stype=st)))
    for t in ("b32", "u64", "f32", "f64", "s16", "pred", "f16"):
        reg = "p1" if t == "pred" else r(t)
        cases.append((f"selp.{t} {reg}, {reg}, {reg}, p1;",
                      lambda t=t: C.selp([0], [0], [True], type=t)))
        for ct in ("s32", "f32", "u32"):
            cases.append((f"slct.{t}.{ct} {reg}, {reg}, {reg}, r1;",
                          lambda t=t, ct=ct: C.slct([0], [0], [0], dtype=t, ctype=ct)))
    compare_with_ptxas(cases)


FTYPES = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2", "f32x2")
RNDS = (None, "rn", "rz", "rm", "rp")


def test_float_arith():
    cases = []
    for op, t, rnd, ftz, sat in itertools.product(("add", "mul", "fma"), FTYPES, RNDS,
                                                  (False, True), (False, True)):
        q = "".join(x for x in (f".{rnd}" if rnd else "", ".ftz" if ftz else "",
                                ".sat" if sat else ""))
        n = 3 if op == "fma" else 2
        fn = getattr(F, op)
        cases.append((f"{op}{q}.{t} {', '.join([r(t)] * (n + 1))};",
                      lambda fn=fn, t=t, rnd=rnd, ftz=ftz, sat=sat, n=n:
                      fn(*([[0]] * n), type=t, rnd=rnd, ftz=ftz, sat=sat)))
    for t in FTYPES:
        cases.append((f"fma.rn.relu.{t} {', '.join([r(t)] * 4)};",
                      lambda t=t: F.fma([0], [0], [0], type=t, rnd="rn", relu=True)))
    compare_with_ptxas(cases)


def test_float_minmax_abs_neg():
    cases = []
    for op, t, ftz, nan, xs in itertools.product(("min", "max"), FTYPES[:6], (False, True),
                                                 (False, True), (False, True)):
        q = "".join(x for x in (".ftz" if ftz else "", ".NaN" if nan else "",
                                ".xorsign.abs" if xs else ""))
        cases.append((f"{op}{q}.{t} {r(t)}, {r(t)}, {r(t)};",
                      lambda op=op, t=t, ftz=ftz, nan=nan, xs=xs:
                      getattr(F, op)([0], [0], type=t, ftz=ftz, nan=nan, xorsign_abs=xs)))
    for op, t, ftz in itertools.product(("abs", "neg"), FTYPES[:6], (False, True)):
        cases.append((f"{op}{'.ftz' if ftz else ''}.{t} {r(t)}, {r(t)};",
                      lambda op=op, t=t, ftz=ftz: getattr(F, op)([0], type=t, ftz=ftz)))
    for op, t in itertools.product(("copysign",), ("f32", "f64", "f16")):
        cases.append((f"copysign.{t} {r(t)}, {r(t)}, {r(t)};",
                      lambda t=t: F.copysign([0], [0], type=t)))
    for op, t in itertools.product(F.TESTP_OPS, ("f32", "f64", "f16")):
        cases.append((f"testp.{op}.{t} p1, {r(t)};", lambda op=op, t=t: F.testp([0], op=op,
                                                                                type=t)))
    compare_with_ptxas(cases)


def test_float_div_rcp_sqrt_approx():
    cases = []
    for op, t, kind, ftz in itertools.product(("div", "rcp", "sqrt"), ("f32", "f64", "f16"),
                                              (None, "rn", "rz", "approx", "full"),
                                              (False, True)):
        q = (f".{kind}" if kind else "") + (".ftz" if ftz else "")
        n = 2 if op == "div" else 1
        kw = dict(type=t, ftz=ftz)
        if kind in ("rn", "rz"):
            kw["rnd"] = kind
        elif kind == "approx":
            kw["approx"] = True
        elif kind == "full":
            if op != "div":
                continue  # no python keyword for rcp.full / sqrt.full (ptxas rejects them too)
            kw["full"] = True
        cases.append((f"{op}{q}.{t} {', '.join([r(t)] * (n + 1))};",
                      lambda op=op, n=n, kw=kw: getattr(F, op)(*([[0]] * n), **kw)))
    for op, t, ftz in itertools.product(("ex2", "lg2", "sin", "cos", "tanh", "rsqrt"),
                                        ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
                                        (False, True)):
        q = ".approx" + (".ftz" if ftz else "")
        kw = {} if op in ("lg2", "sin", "cos") and t == "f32" else {"type": t}
        if op in ("lg2", "sin", "cos") and t != "f32":
            continue  # f32-only functions take no type argument
        if op != "tanh":
            kw["ftz"] = ftz
        elif ftz:
            cases.append((f"tanh{q}.{t} {r(t)}, {r(t)};", lambda: F.tanh([0], type="bogus")))
            continue
        cases.append((f"{op}{q}.{t} {r(t)}, {r(t)};",
                      lambda op=op, kw=kw: getattr(F, op)([0], **kw)))
    compare_with_ptxas(cases)


CVT_T = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "bf16", "f32", "f64")
CVT_RND = (None, "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")


def test_cvt_scalar_forms():
    from ptxsim.isa import convert as V
    cases = []
    for d, a, rnd, ftz, sat in itertools.product(CVT_T, CVT_T, CVT_RND, (False, True),
                                                 (False, True)):
        q = "".join(x for x in (f".{rnd}" if rnd else "", ".ftz" if ftz else "",
                                ".sat" if sat else ""))
        cases.append((f"cvt{q}.{d}.{a} {r(d)}, {r(a)};",
                      lambda d=d, a=a, rnd=rnd, ftz=ftz, sat=sat:
                      V.cvt([0], dtype=d, atype=a, rnd=rnd, ftz=ftz, sat=sat)))
    for d, rnd, relu, satf in itertools.product(("f16", "bf16", "tf32"), ("rn", "rz", "rna", "rm"),
                                                (False, True), (False, True)):
        q = f".{rnd}" + (".relu" if relu else "") + (".satfinite" if satf else "")
        dreg = "r1" if d == "tf32" else "h1"
        cases.append((f"cvt{q}.{d}.f32 {dreg}, r1;",
                      lambda d=d, rnd=rnd, relu=relu, satf=satf:
                      V.cvt([0], dtype=d, atype="f32", rnd=rnd, relu=relu, satfinite=satf)))
    compare_with_ptxas(cases)


def test_cvt_packed_forms():
    from ptxsim.isa import convert as V
    cases = []
    narrow = ("e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2", "ue8m0x2")
    dreg = {"e4m3x2": "h1", "e5m2x2": "h1", "e2m3x2": "h1", "e3m2x2": "h1", "e2m1x2": "b1",
            "ue8m0x2": "h1", "f16x2": "r1", "bf16x2": "r1"}
    for d, rnd, relu, satf in itertools.product(narrow + ("f16x2", "bf16x2"), ("rn", "rz", "rp"),
                                                (False, True), (False, True)):
        q = f".{rnd}" + (".satfinite" if satf else "") + (".relu" if relu else "")
        cases.append((f"cvt{q}.{d}.f32 {dreg[d]}, r1, r1;",
                      lambda d=d, rnd=rnd, relu=relu, satf=satf:
                      V.cvt_x2([0], [0], dtype=d, atype="f32", rnd=rnd, relu=relu,
                               satfinite=satf)))
        for src in ("f16x2", "bf16x2"):
            if d in narrow:
                cases.append((f"cvt{q}.{d}.{src} {dreg[d]}, r1;",
                              lambda d=d, src=src, rnd=rnd, relu=relu, satf=satf:
                              V.cvt_x2([0], dtype=d, atype=src, rnd=rnd, relu=relu,
                                       satfinite=satf)))
    for s, dd, relu in itertools.product(narrow, ("f16x2", "bf16x2"), (False, True)):
        q = ".rn" + (".relu" if relu else "")
        cases.append((f"cvt{q}.{dd}.{s} r1, {dreg[s]};",
                      lambda s=s, dd=dd, relu=relu: V.cvt_x2([0], dtype=dd, atype=s, rnd="rn",
                                                             relu=relu, ptx_9_2=True)))
    for t in ("u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2", "u32"):
        cases.append((f"cvt.pack.sat.{t}.s32 r1, r1, r1;",
                      lambda t=t: V.cvt_pack([0], [0], dtype=t)))
        cases.append((f"cvt.pack.sat.{t}.s32.b32 r1, r1, r1, r1;",
                      lambda t=t: V.cvt_pack([0], [0], [0], dtype=t)))
    for t, n in itertools.product(("b16", "b32", "b64", "b128"), (2, 4)):
        w = {"b16": 8, "b32": 16, "b64": 32, "b128": 64}[t] if n == 2 else \
            {"b16": 4, "b32": 8, "b64": 16, "b128": 32}[t]
        part = {4: None, 8: None, 16: "h1", 32: "r1", 64: "l1"}[w]
        if part is None:
            continue
        dst = {"b32": "r1", "b64": "l1", "b128": "q1", "b16": "h1"}[t]
        cases.append((f"mov.{t} {dst}, {{{', '.join([part] * n)}}};",
                      lambda t=t, n=n: V.mov_pack([[0]] * n, type=t)))
    compare_with_ptxas(cases)


def test_mixed_precision_and_three_operand_forms():
    cases = []
    for op, at, rnd, sat in itertools.product(("add", "sub", "fma"), ("f16", "bf16", "f32"),
                                              (None, "rn", "rz", "rm", "rp"), (False, True)):
        q = (f".{rnd}" if rnd else "") + (".sat" if sat else "")
        if op == "fma":
            cases.append((f"fma{q}.f32.{at} r1, {r(at)}, {r(at)}, r1;",
                          lambda at=at, rnd=rnd, sat=sat: F.fma_mixed([0], [0], [0], abtype=at,
                                                                      rnd=rnd, sat=sat)))
        else:
            fn = F.add_mixed if op == "add" else F.sub_mixed
            cases.append((f"{op}{q}.f32.{at} r1, {r(at)}, r1;",
                          lambda fn=fn, at=at, rnd=rnd, sat=sat: fn([0], [0], atype=at, rnd=rnd,
                                                                    sat=sat)))
    for op, t, ftz, nan, ab in itertools.product(("min", "max"), ("f32", "f16", "f64"),
                                                 (False, True), (False, True), (False, True)):
        q = (".ftz" if ftz else "") + (".NaN" if nan else "") + (".abs" if ab else "")
        cases.append((f"{op}{q}.{t} {', '.join([r(t)] * 4)};",
                      lambda op=op, t=t, ftz=ftz, nan=nan, ab=ab:
                      getattr(F, op)([0], [0], [0], type=t, ftz=ftz, nan=nan, abs=ab)))
    compare_with_ptxas(cases)
