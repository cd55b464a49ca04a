"""The bad-input corpus: every way we found to hand ptxsim something it cannot use, through the
CLI and the Python API, each case asserting the named error class and a phrase of its message.
Nothing may end in a raw traceback, hang, or run with a silently different value.

Cases are (id, call, error class, phrase). The expected phrases are the documented contract of
each check (ptxsim.machine.inputs, ptxsim.cli._inputs, the front end); the PTX legality cases
are ptxas 13.5's verdicts (every one also refused by ptxas, see test_mutation_corpus.py for the
measured agreement)."""
from __future__ import annotations

import numpy as np
import pytest

import ptxsim
from ptxsim.cli import main
from ptxsim.errors import (InputError, LaunchConfigError, OperandError, PtxSyntaxError,
                           PtxValidationError, TargetError)

VADD = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry vadd(.param .u64 .ptr .align 1 a, .param .u64 .ptr .align 1 b,
                     .param .u64 .ptr .align 1 c, .param .u32 n)
.maxntid 256, 1, 1
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<11>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [c];
	ld.param.u32 %r2, [n];
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.s32 %r1, %r3, %r4, %r5;
	setp.ge.s32 %p1, %r1, %r2;
	@%p1 bra $L__BB0_2;
	cvta.to.global.u64 %rd4, %rd1;
	mul.wide.s32 %rd5, %r1, 4;
	add.s64 %rd6, %rd4, %rd5;
	cvta.to.global.u64 %rd7, %rd2;
	add.s64 %rd8, %rd7, %rd5;
	ld.global.f32 %f1, [%rd8];
	ld.global.f32 %f2, [%rd6];
	add.f32 %f3, %f2, %f1;
	cvta.to.global.u64 %rd9, %rd3;
	add.s64 %rd10, %rd9, %rd5;
	st.global.f32 [%rd10], %f3;
$L__BB0_2:
	ret;
}
"""
SCALARS = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry s(.param .u32 u, .param .s32 i, .param .f32 f, .param .u64 p,
                  .param .align 8 .b8 agg[16], .param .u16 h, .param .s64 l, .param .f64 d,
                  .param .b32 bits, .param .bf16 bf)
.reqntid 32, 1, 1
{
	ret;
}
"""
CLUSTER = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry k()
.reqnctapercluster 2, 1, 1
{
	ret;
}
"""


def _arrays():
    return [np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)]


def vadd(*, args=None, **kw):
    base = dict(grid=1, block=32)
    base.update(kw)
    a = _arrays() + [64] if args is None else args
    return lambda: ptxsim.launch(VADD, "vadd", args=a, **base)


GOOD_S = [1, -1, 1.5, np.zeros(4, np.uint8), b"\0" * 16, 7, -7, 2.5, 0xFFFFFFFF, 1.0]


def scalars(k, v, **kw):
    args = list(GOOD_S)
    args[k] = v
    return lambda: ptxsim.launch(SCALARS, "s", 1, 32, args=args, **kw)


CASES: list = []


def case(id_, fn, err, phrase):
    CASES.append(pytest.param(fn, err, phrase, id=id_))


# ---------------------------------------------------------------------- launch: the module
for k, v in enumerate([None, 5, 2.5, b".version 8.7", ["x"], {"a": 1}]):
    case(f"launch-ptx-type-{k}", lambda v=v: ptxsim.launch(v, "k", 1, 32), OperandError,
         "ptx must be PTX text")
for k, v in enumerate([None, 5, b"vadd", ["vadd"]]):
    case(f"launch-kernel-type-{k}", lambda v=v: ptxsim.launch(VADD, v, 1, 32), OperandError,
         "kernel must be the name")
for k, v in enumerate(["nosuch", "VADD", "vadd ", ""]):
    case(f"launch-kernel-missing-{k}", lambda v=v: ptxsim.launch(VADD, v, 1, 32), OperandError,
         "no kernel")
# ---------------------------------------------------------------------- launch: geometry
GEOMETRY = [(2.5, "integer"), ("4", "integer"), (None, "integer"), (True, "integer"),
            ((1.0,), "integer"), ([2, 0.5], "integer"), ((0,), "at least 1"),
            ((1, 2, 3, 4), "1 to 3 dimensions"), ((), "1 to 3 dimensions"), (-1, "at least 1"),
            ((1, -2), "at least 1"), (object(), "integer"), ({"x": 1}, "integer"),
            (np.float32(2.0), "integer")]
for k, (v, phrase) in enumerate(GEOMETRY):
    case(f"launch-grid-{k}", vadd(grid=v), LaunchConfigError, phrase)
    case(f"launch-block-{k}", vadd(block=v), LaunchConfigError, phrase)
for k, v in enumerate([2.5, "2", (0, 1, 1), (3,)]):
    phrase = "integer" if k < 2 else "at least 1" if k == 2 else "not a multiple"
    case(f"launch-cluster-{k}", vadd(cluster=v, grid=4), LaunchConfigError, phrase)
case("launch-block-too-many-threads", vadd(block=(32, 32, 2)), LaunchConfigError, "threads")
case("launch-block-x-limit", lambda: ptxsim.launch(CLUSTER, "k", 1, 2048), LaunchConfigError,
     "exceeds")
case("launch-grid-y-limit", vadd(grid=(1, 70000)), LaunchConfigError, "exceeds")
case("launch-maxntid", vadd(block=512), LaunchConfigError, ".maxntid")
case("launch-reqntid", scalars(0, 1, ) if False else
     (lambda: ptxsim.launch(SCALARS, "s", 1, 64, args=GOOD_S)), LaunchConfigError, ".reqntid")
case("launch-reqnctapercluster", lambda: ptxsim.launch(CLUSTER, "k", 4, 32, cluster=4),
     LaunchConfigError, ".reqnctapercluster")
case("launch-cluster-too-big", lambda: ptxsim.launch(CLUSTER, "k", 32, 32, cluster=(4, 4)),
     LaunchConfigError, ".reqnctapercluster")
# ---------------------------------------------------------------------- launch: target, options
for k, v in enumerate(["sm_bogus", "sm_1", "sm_91", "sm_80a", "sm_90f", "gfx90a", "", "sm 100a",
                       "SM_100A", "sm_100x"]):
    case(f"launch-target-{k}", vadd(target=v), TargetError, "target")
for k, v in enumerate([90, 100.0, ["sm_100a"], b"sm_100a"]):
    case(f"launch-target-type-{k}", vadd(target=v), TargetError, "target name")
for k, v in enumerate([-1, -4096, 232449, 10**9]):
    case(f"launch-dynamic-shared-{k}", vadd(dynamic_shared=v), InputError, "dynamic_shared")
for k, v in enumerate([2.5, "128", None, True]):
    case(f"launch-dynamic-shared-type-{k}", vadd(dynamic_shared=v), InputError, "integer")
for k, v in enumerate([0, -5]):
    case(f"launch-step-limit-{k}", vadd(step_limit=v), InputError, "at least 1")
for k, v in enumerate([2.5, "10", None if False else "x"]):
    case(f"launch-step-limit-type-{k}", vadd(step_limit=v), InputError, "integer")
for k, v in enumerate([0, -1]):
    case(f"launch-max-resident-{k}", vadd(max_resident_ctas=v), InputError, "at least 1")
for k, v in enumerate(["yes", 1, None]):
    case(f"launch-progress-{k}", vadd(progress=v), InputError, "True or False")
for k, name in enumerate(["foo", "steps", "workers_", "stepLimit"]):
    case(f"launch-unknown-option-{k}", vadd(**{name: 1}), OperandError, "is not known")
# ---------------------------------------------------------------------- launch: arguments
for k, n in enumerate([0, 1, 2, 3, 5, 8]):
    case(f"launch-arg-count-{k}", vadd(args=(_arrays() + [64, 1, 2, 3, 4])[:n]), OperandError,
         "takes 4 arguments")
for k, v in enumerate([5, "abc", 2.5, object()]):
    case(f"launch-args-type-{k}", vadd(args=v), OperandError, "args must be a list")
for k, v in enumerate([{"a": 1}, np.zeros(3), (1,)]):
    case(f"launch-args-len-{k}", vadd(args=v), OperandError, "takes 4 arguments")
BAD_ARRAYS = [
    ("object", np.array([1, "a", None], dtype=object), "Python objects"),
    ("big-endian-f32", np.zeros(64, ">f4"), "big-endian"),
    ("big-endian-i32", np.zeros(64, ">i4"), "big-endian"),
    ("empty", np.zeros(0, np.float32), "empty array"),
    ("read-only", np.zeros(64, np.float32), "read-only"),
    ("non-contiguous", np.zeros((64, 2), np.float32)[:, 0], "non-contiguous"),
    ("fortran", np.asfortranarray(np.zeros((8, 8), np.float32)), "non-contiguous"),
    ("structured-big-endian", np.zeros(4, dtype=[("x", ">f4")]), "big-endian"),
]
BAD_ARRAYS[4][1].setflags(write=False)
for name, arr, phrase in BAD_ARRAYS:
    for pos in range(3):
        args = _arrays() + [64]
        args[pos] = arr
        case(f"launch-array-{name}-arg{pos}", vadd(args=args), OperandError, phrase)
for k, v in enumerate([None, "ptr", 1.5, [1, 2], {"a": 1}, object(), b"12345678"]):
    args = _arrays() + [64]
    args[0] = v
    phrase = "cannot pass" if not isinstance(v, bytes) else None
    if isinstance(v, bytes):
        continue
    case(f"launch-pointer-param-{k}", vadd(args=args), OperandError,
         "cannot pass" if not isinstance(v, float) else "floating-point")
for k, v in enumerate([-1, 2**32, 2**32 + 100, 2**40, -2**31, 1.5, 64.0, np.float32(64),
                       "64", None, np.zeros(2, np.uint32), [64]]):
    args = _arrays() + [v]
    phrase = ("does not fit" if isinstance(v, int) else
              "floating-point" if isinstance(v, (float, np.floating)) else
              "an array is passed as a 64-bit pointer" if isinstance(v, np.ndarray) else
              "cannot pass")
    case(f"launch-u32-param-{k}", vadd(args=args), OperandError, phrase)
SCALAR_BAD = [
    (0, -1, "does not fit"), (0, 2**32, "does not fit"), (0, 2**32 + 100, "does not fit"),
    (0, 0.5, "floating-point"), (0, float("nan"), "floating-point"), (0, "1", "cannot pass"),
    (1, 2**31, "does not fit"), (1, -2**31 - 1, "does not fit"), (1, 2.0, "floating-point"),
    (2, 1e39, "overflows"), (2, -1e39, "overflows"), (2, "1.5", "cannot pass"),
    (2, None, "cannot pass"), (2, [1.5], "cannot pass"),
    (3, 3.5, "floating-point"), (3, -1, "does not fit"), (3, 2**64, "does not fit"),
    (4, b"\0" * 8, "8 bytes given for a 16-byte"), (4, b"\0" * 17, "17 bytes given"),
    (4, 5, "aggregate"), (4, 1.5, "aggregate"), (4, np.zeros(4, np.uint8), "64-bit pointer"),
    (5, 65536, "does not fit"), (5, -1, "does not fit"), (5, 1.5, "floating-point"),
    (6, 2**63, "does not fit"), (6, -2**63 - 1, "does not fit"),
    (7, 1e309 * 0 + 1e308 * 10, None), (7, "x", "cannot pass"),
    (8, 2**32, "does not fit"), (8, -2**31 - 1, "does not fit"), (8, 0.5, "floating-point"),
    (9, 1e39, "overflows"), (9, "bf", "cannot pass"),
]
for k, (pos, v, phrase) in enumerate(SCALAR_BAD):
    if phrase is None:
        continue
    case(f"launch-scalar-{k}", scalars(pos, v), OperandError, phrase)
case("launch-tensormap-on-small-param", scalars(3, ptxsim.TensorMap.__new__(ptxsim.TensorMap)),
     OperandError, "tensor map needs a 128-byte")
# ---------------------------------------------------------------------- launch: PTX that does not assemble
BODIES = [
    ("unknown-opcode", "frobnicate.u32 %r1, %r2;", "not a PTX instruction"),
    ("typo-opcode", "tcgen05.mmma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %p1;",
     "tcgen05.mmma"),
    ("operand-count-add", "add.u32 %r1, %r2;", "takes 3 operands"),
    ("operand-count-mov", "mov.u32 %r1;", "takes 2 operands"),
    ("operand-count-ld", "ld.global.u32 %r1;", "takes 2 operands"),
    ("operand-count-setp", "setp.lt.s32 %p1, %r1;", "takes 3"),
    ("wrong-reg-type-add", "add.u32 %r1, %r2, %rd1;", "does not fit type .u32"),
    ("wrong-reg-type-f32", "add.f32 %f1, %f2, %rd1;", "does not fit type .f32"),
    ("float-reg-int-op", "add.u32 %r1, %r2, %f1;", "does not fit type .u32"),
    ("pred-for-int", "add.u32 %r1, %r2, %p1;", "does not fit type .u32"),
    ("int-imm-for-float", "mov.f32 %f1, 1;", "not a .f32 value"),
    ("float-imm-for-int", "mov.u32 %r1, 1.5;", "not a .u32 value"),
    ("96-bit-imm", "mov.b64 %rd1, 79228162514264337593543950336;", "64 bits"),
    ("undeclared-reg", "add.u32 %r1, %r2, %zz9;", "not declared"),
    ("bad-qualifier", "add.frob.u32 %r1, %r2, %r3;", "'.frob' is not a qualifier"),
    ("missing-type", "add %r1, %r2, %r3;", "no form of add"),
    ("bad-label", "bra NOWHERE;", "not a label in scope"),
    ("guard-not-pred", "@%r1 bra $L__BB0_2;", "not a predicate"),
    ("sreg-in-add", "add.u32 %r1, %tid.x, 1;", "special register"),
    ("vector-size", "ld.global.v4.u32 {%r1, %r2}, [%rd1];", "vector of 4"),
    ("32bit-global-address", "ld.global.u32 %r1, [%r1];", "32 bits"),
    ("imm-global-address", "ld.global.u32 %r1, [16];", "absolute address"),
    ("cvt-no-rounding", "cvt.f32.f64 %f1, %rd1;", "rounding"),
    ("atom-type", "atom.global.and.u32 %r1, [%rd1], 1;", "no form of atom"),
    ("setp-cmp-type", "setp.gt.b32 %p1, %r1, 1;", "no form of setp"),
    ("shfl-no-sync", "shfl.idx.b32 %r1, %r2, %r3, %r4;", "without .sync"),
    ("wgmma-on-sm100", "wgmma.fence.sync.aligned;", "not supported on .target sm_100a"),
    ("dup-reg", ".reg .b32 %r5;\n.reg .b32 %r5;", "duplicate definition"),
    ("bf16-reg", ".reg .bf16 %bh;", "not a register type"),
    ("pred-vector-reg", ".reg .v2 .pred %pv;", "scalar"),
]
for name, body, phrase in BODIES:
    text = VADD.replace("\t\tret;", "").replace("$L__BB0_2:\n\tret;", f"\t{body}\n$L__BB0_2:\n\tret;")
    case(f"launch-ptx-{name}", lambda t=text: ptxsim.launch(t, "vadd", 1, 32, args=_arrays() + [64]),
         PtxValidationError, phrase)
MODULES = [
    ("target-sm_1", VADD.replace(".target sm_100a", ".target sm_1"), "unsupported .target"),
    ("target-bogus", VADD.replace(".target sm_100a", ".target sm_bogus"), "unsupported .target"),
    ("version-1.0", VADD.replace(".version 8.7", ".version 1.0"), "unsupported .version"),
    ("version-10.0", VADD.replace(".version 8.7", ".version 10.0"), "unsupported .version"),
    ("version-too-old", VADD.replace(".version 8.7", ".version 8.0"), "requires PTX ISA version"),
    ("address-size", VADD.replace(".address_size 64", ".address_size 16"), ".address_size"),
]
for name, text, phrase in MODULES:
    case(f"launch-module-{name}", lambda t=text: ptxsim.launch(t, "vadd", 1, 32, args=_arrays() + [64]),
         PtxValidationError, phrase)
SYNTAX = [
    ("unclosed-brace", VADD.rstrip().rstrip("}"), "end of input"),
    ("missing-semicolon", VADD.replace("ld.param.u64 %rd1, [a];", "ld.param.u64 %rd1, [a]"),
     "unexpected"),
    ("bad-char", VADD.replace("mov.u32 %r3, %ctaid.x;", "mov.u32 %r3, #3;"), "unexpected"),
    ("empty-operand", VADD.replace("add.f32 %f3, %f2, %f1;", "add.f32 %f3, , %f1;"), "unexpected"),
    ("bad-directive", VADD.replace(".address_size 64", ".adress_size 64"), "unexpected"),
    ("stray-brace", VADD + "}", "unexpected"),
    ("bad-hexfloat", VADD.replace("ret;", "mov.f32 %f1, 0f3F80;\n\tret;"), "unexpected"),
    ("unterminated-comment", VADD + "/* open", "unexpected"),
]
for name, text, phrase in SYNTAX:
    case(f"launch-syntax-{name}", lambda t=text: ptxsim.launch(t, "vadd", 1, 32, args=_arrays() + [64]),
         PtxSyntaxError, phrase)
# ---------------------------------------------------------------------- execute
R = {"%r1": np.zeros(32, np.uint32), "%r2": np.ones(32, np.uint32)}
for k, v in enumerate([None, 5, 2.5, b"add.u32 %r1, %r2, %r2;", ["add"], {"x": 1}]):
    case(f"execute-text-type-{k}", lambda v=v: ptxsim.execute(v, R), OperandError,
         "instruction_text must be")
for k, v in enumerate([None, [1, 2], "regs", 5, (("%r1", 1),)]):
    case(f"execute-registers-type-{k}", lambda v=v: ptxsim.execute("add.u32 %r1, %r2, %r2;", v),
         OperandError, "registers must be a mapping")
case("execute-register-name-type", lambda: ptxsim.execute("add.u32 %r1, %r2, %r2;", {1: R["%r1"]}),
     OperandError, "register names must be strings")
for k, t in enumerate(["sm_bogus", "sm_1", 90, "", "sm_91"]):
    case(f"execute-target-{k}", lambda t=t: ptxsim.execute("add.u32 %r1, %r2, %r2;", R, target=t),
         TargetError, "target")
EXEC_BAD = [
    ("object", {"%r2": np.array([object()] * 32)}, OperandError, "dtype object"),
    ("shape2d", {"%r2": np.zeros((32, 2), np.uint32)}, OperandError, "1-D array"),
    ("threads", {"%r2": np.zeros(33, np.uint32)}, OperandError, "threads"),
    ("mismatch", {"%r1": np.zeros(32, np.uint32), "%r2": np.zeros(64, np.uint32)},
     OperandError, "threads"),
    # a 64-bit register (float64 bits) for add.u32: refused as ptxas refuses .b64 there
    ("float64", {"%r2": np.zeros(32, np.float64)}, PtxValidationError, "does not fit"),
    ("uint64", {"%r2": np.zeros(32, np.uint64)}, PtxValidationError, "does not fit"),
    ("complex", {"%r2": np.zeros(32, np.complex64)}, OperandError, "dtype complex64"),
    ("missing", {"%r1": np.zeros(32, np.uint32)}, OperandError, "not given"),
]
for name, regs, err, phrase in EXEC_BAD:
    case(f"execute-registers-{name}", lambda r=regs: ptxsim.execute("add.u32 %r1, %r2, %r2;", r),
         err, phrase)
EXEC_PTX = [("frobnicate.u32 %r1, %r2;", "not a PTX instruction"),
            ("add.u32 %r1, %r2;", "takes 3 operands"), ("add.f32 %r1, %r2, 1;", "not a .f32"),
            ("add.u32.frob %r1, %r2, %r2;", "not a qualifier"),
            ("mov.u32 %r1, %tid;", "component")]
for k, (text, phrase) in enumerate(EXEC_PTX):
    case(f"execute-ptx-{k}", lambda t=text: ptxsim.execute(t, R), PtxValidationError, phrase)
for k, w in enumerate([0, -1, 2.5, "2"]):
    case(f"execute-warps-{k}", lambda w=w: ptxsim.execute("vadd.u32.u32.u32 %r1, %r2, %r2;",
                                                        {"%r2": R["%r2"]}, warps=w),
         OperandError, "warps")
for k, text in enumerate(["add.u32 %r1, , %r2;", "add.u32 %r1 %r2;", "", "   ", "@ add",
                          "add.u32 %r1, [%r2;", "add.u32 %r1, {%r2;", "mov.b32 %r1, 0f12;"]):
    case(f"execute-syntax-{k}", lambda t=text: ptxsim.execute(t, R), PtxSyntaxError, "")


TEMPLATES = [
    "add.s32 %r1, %r2, %r3;", "sub.s32 %r1, %r2, %r3;", "mul.lo.s32 %r1, %r2, %r3;",
    "mad.lo.s32 %r1, %r2, %r3, %r4;", "and.b32 %r1, %r2, %r3;", "shl.b32 %r1, %r2, 3;",
    "min.s32 %r1, %r2, %r3;", "selp.b32 %r1, %r2, %r3, %p1;", "add.f32 %f1, %f2, %f3;",
    "fma.rn.f32 %f1, %f2, %f3, %f1;", "mov.u32 %r1, %r2;", "cvt.rn.f32.s32 %f1, %r3;",
    "setp.lt.s32 %p1, %r2, %r3;", "ld.global.f32 %f1, [%rd1];", "st.global.f32 [%rd1], %f1;",
    "neg.s32 %r1, %r2;", "not.b32 %r1, %r2;", "prmt.b32 %r1, %r2, %r3, %r4;",
    "bfe.u32 %r1, %r2, %r3, %r4;", "popc.b32 %r1, %r2;",
]
for k, t in enumerate(TEMPLATES):
    op, _, rest = t.rstrip(";").partition(" ")
    ops = [o.strip() for o in rest.split(",")]
    fewer = f"{op} {', '.join(ops[:-1])};"
    more = f"{op} {', '.join(ops + ['%r5'])};"
    wide = t.replace("%r2", "%rd2").replace("%f2", "%rd2")
    for kind, body, phrase in (("fewer", fewer, "takes"), ("more", more, "takes"),
                               ("width", wide, "does not fit")):
        if kind == "width" and wide == t:
            continue
        text = VADD.replace("$L__BB0_2:\n\tret;", f"\t{body}\n$L__BB0_2:\n\tret;")
        case(f"launch-ptx-{kind}-{op}-{k}",
             lambda t=text: ptxsim.launch(t, "vadd", 1, 32, args=_arrays() + [64]),
             PtxValidationError, phrase)


@pytest.mark.parametrize("call, err, phrase", CASES)
def test_api_bad_input(call, err, phrase):
    with pytest.raises(err) as e:
        call()
    assert phrase.lower() in str(e.value).lower(), str(e.value)


# ---------------------------------------------------------------------- CLI
CLI: list = []


def cli(id_, argv, phrase, err="InputError"):
    CLI.append(pytest.param(argv, phrase, err, id=id_))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.ptx").write_text(VADD)
    (tmp_path / "latin1.ptx").write_bytes(VADD.encode() + b"// caf\xe9\n")
    (tmp_path / "bin.ptx").write_bytes(b"\x00\xff\xfe" * 10)
    (tmp_path / "dir.ptx").mkdir()
    (tmp_path / "two.ptx").write_text(VADD + VADD.split(".address_size 64", 1)[1].replace(
        "vadd", "vadd2"))
    np.save(tmp_path / "a.npy", np.zeros(64, np.float32))
    np.save(tmp_path / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(tmp_path / "empty.npy", np.zeros(0, np.float32))
    np.save(tmp_path / "c64.npy", np.zeros(4, np.complex64))
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY garbage")
    (tmp_path / "text.npy").write_text("not numpy")
    (tmp_path / "outfile").write_text("existing results")
    return tmp_path


RUN = ["run", "{d}/k.ptx", "--kernel", "vadd"]
OK_ARGS = ["--arg", "zeros:float32:64", "--arg", "zeros:float32:64", "--arg",
           "zeros:float32:64", "--arg", "u32:64"]
for k, path in enumerate(["{d}/missing.ptx", "{d}/dir.ptx", "{d}/latin1.ptx", "{d}/bin.ptx"]):
    phrase = ["no such file", "is a directory", "not UTF-8", "not UTF-8"][k]
    cli(f"run-file-{k}", ["run", path] + OK_ARGS, phrase)
    cli(f"check-file-{k}", ["check", path], phrase, err=None)
for k, g in enumerate(["2.5", "0", "-1", "a", "1,2,3,4", "", "1,,2", "1x0", " ", "1e3"]):
    cli(f"run-grid-{k}", RUN + ["--grid", g] + OK_ARGS, "--grid", err="LaunchConfigError")
    cli(f"run-block-{k}", RUN + ["--block", g] + OK_ARGS, "--block", err="LaunchConfigError")
for k, c in enumerate(["2.5", "0", "x"]):
    cli(f"run-cluster-{k}", RUN + ["--cluster", c] + OK_ARGS, "--cluster", err="LaunchConfigError")
for k, d in enumerate(["-1", "-4096"]):
    cli(f"run-dynamic-shared-{k}", RUN + ["--dynamic-shared", d] + OK_ARGS, "--dynamic-shared")
cli("run-dynamic-shared-huge", RUN + ["--dynamic-shared", "1000000"] + OK_ARGS, "dynamic_shared")
SPECS = [
    ("zeros:float32:-5", "shape"), ("zeros:float32:0", "at least 1"), ("zeros:float32:", "shape"),
    ("zeros:float32", "expected zeros:DTYPE"), ("zeros:object:4", "no device representation"),
    ("zeros:U8:4", "no device representation"), ("zeros:nosuch:4", "not a numpy dtype"),
    ("zeros:complex64:4", "no device representation"), ("rand:float32:2x-1", "shape"),
    ("zeros:float32:99999999999", "GiB"), ("zeros:float32:4xx4", "shape"),
    ("u32:-1", "outside the range"), ("u32:4294967296", "outside the range"),
    ("i8:300", "outside the range"), ("i8:-129", "outside the range"),
    ("u64:-5", "outside the range"), ("i64:9223372036854775808", "outside the range"),
    ("u32:abc", "not an integer"), ("u32:1.5", "not an integer"), ("u32:", "not an integer"),
    ("f16:1e6", "overflows"), ("f32:1e39", "overflows"), ("f32:abc", "not a number"),
    ("f64:", "not a number"), ("bytes:0", "positive byte count"), ("bytes:-1", "positive"),
    ("bytes:x", "positive"), ("bytes:99999999", "MiB"), ("q99:1", "not a .npy file"),
    ("", "empty"), ("float32:4", "not a .npy file"), ("{d}/missing.npy", "no such file"),
    ("{d}/corrupt.npy", "not a valid .npy"), ("{d}/text.npy", "not a valid .npy"),
    ("{d}/obj.npy", "Python objects"), ("{d}/empty.npy", "empty"),
    ("{d}/c64.npy", "no device representation"),
]
for k, (spec, phrase) in enumerate(SPECS):
    cli(f"run-arg-{k}", RUN + ["--arg", spec] + OK_ARGS[2:], phrase)
cli("run-out-existing-file", RUN + OK_ARGS + ["--out", "{d}/outfile"], "not a directory")
cli("run-out-under-file", RUN + OK_ARGS + ["--out", "{d}/outfile/sub"], "--out")
cli("run-kernel-missing", RUN[:2] + ["--kernel", "nosuch"] + OK_ARGS, "not a kernel")
cli("run-kernel-ambiguous", ["run", "{d}/two.ptx"] + OK_ARGS, "choose one of the kernels")
for k, t in enumerate(["sm_bogus", "sm_1", "sm_91", "x"]):
    cli(f"run-target-{k}", RUN + ["--target", t] + OK_ARGS, "--target", err="TargetError")
cli("run-seed-negative", RUN + ["--seed", "-1"] + OK_ARGS, "--seed")
for k, s in enumerate(["0", "-3"]):
    cli(f"run-step-limit-{k}", RUN + ["--step-limit", s] + OK_ARGS, "--step-limit")
cli("run-arg-count", RUN + OK_ARGS[:4], "takes 4 arguments", err="OperandError")
cli("run-float-for-u32", RUN + OK_ARGS[:6] + ["--arg", "f32:64"], "floating-point",
    err="OperandError")
cli("run-array-for-u32", RUN + OK_ARGS[:6] + ["--arg", "zeros:uint32:4"], "64-bit pointer",
    err="OperandError")
cli("run-scalar-for-pointer", RUN + ["--arg", "u64:5"] + OK_ARGS[2:], "cannot pass",
    err="OperandError") if False else None
cli("run-maxntid", RUN + ["--block", "512"] + OK_ARGS, ".maxntid", err="LaunchConfigError")
# `ptxsim check` on the PTX cases above (diagnostics, exit status 1)
for name, body, phrase in BODIES:
    text = VADD.replace("$L__BB0_2:\n\tret;", f"\t{body}\n$L__BB0_2:\n\tret;")
    cli(f"check-ptx-{name}", ["check", ("text", text)], phrase, err=None)
for name, text, phrase in MODULES + SYNTAX:
    cli(f"check-module-{name}", ["check", ("text", text)], phrase, err=None)
cli("check-target-bogus", ["check", ("text", VADD), "--target", "sm_bogus"], "sm_bogus", err=None)
cli("check-target-incompatible", ["check", ("text", VADD), "--target", "sm_90a"],
    "cannot be compiled", err=None)
cli("check-ptx-version-bad", ["check", ("text", VADD), "--ptx-version", "x.y"], "version",
    err=None)


@pytest.mark.parametrize("argv, phrase, err", CLI)
def test_cli_bad_input(argv, phrase, err, files, capsys):
    out = []
    for k, a in enumerate(argv):
        if isinstance(a, tuple):                     # ("text", PTX): written to a file
            path = files / f"case{k}.ptx"
            path.write_text(a[1])
            a = str(path)
        out.append(a.replace("{d}", str(files)))
    argv = out
    rc = main(argv)
    msg = capsys.readouterr().err
    assert rc == 1, msg
    if err is not None:
        assert f"ptxsim: {err}:" in msg, msg
    assert phrase.lower() in msg.lower(), msg
    assert "Traceback" not in msg


def test_out_is_checked_before_the_run_and_results_are_kept(files, capsys):
    """--out on an existing file fails before the kernel runs (nothing computed is lost), and a
    good --out receives every array atomically (no temporary files left)."""
    import time
    t = time.perf_counter()
    assert main(["run", str(files / "k.ptx"), "--kernel", "vadd"] + OK_ARGS
                + ["--out", str(files / "outfile")]) == 1
    assert "scheduler steps" not in capsys.readouterr().out        # the kernel did not run
    assert (files / "outfile").read_text() == "existing results"
    assert main(["run", str(files / "k.ptx"), "--kernel", "vadd", "--grid", "2",
                 "--arg", str(files / "a.npy"),
                 "--arg", "rand:float32:64", "--arg", "zeros:float32:64", "--arg", "u32:64",
                 "--out", str(files / "res")]) == 0
    names = sorted(p.name for p in (files / "res").iterdir())
    assert names == ["arg0.npy", "arg1.npy", "arg2.npy"]
    b = np.load(files / "res" / "arg1.npy")
    assert np.array_equal(np.load(files / "res" / "arg2.npy"), b)     # 0 + b
    assert time.perf_counter() - t < 60


def test_corpus_size():
    assert len(CASES) + len(CLI) >= 400
