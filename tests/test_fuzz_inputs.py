"""Fuzzing the front doors: random (mostly wrong) inputs to `ptxsim.launch`, `ptxsim.execute`
and the `ptxsim run` / `ptxsim check` command lines. Whatever the input, the outcome is a result
or an exception of `ptxsim.errors` -- never another exception (a raw traceback). The CI-sized
runs use hypothesis with a few hundred examples each; `-m slow` runs the long ones."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptxsim
from ptxsim.cli import main
from ptxsim.errors import PtxsimError

from tests.test_bad_inputs import SCALARS, VADD

FAST = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))

# ------------------------------------------------------------------------------ values
small_dim = st.one_of(st.integers(-2, 8), st.floats(allow_nan=True), st.text(max_size=3),
                      st.none(), st.booleans(),
                      st.tuples(st.integers(-1, 4), st.integers(-1, 4)),
                      st.lists(st.integers(0, 3), max_size=4))
dtypes = st.sampled_from(["float32", "float64", "int32", "uint8", ">f4", ">i8", "object",
                          "complex64", "bool", "float16", "<u2", "U3"])


@st.composite
def arrays(draw):
    dt = draw(dtypes)
    n = draw(st.integers(0, 70))
    try:
        a = np.zeros(n, dtype=dt)
    except TypeError:
        a = np.zeros(n, np.float32)
    if draw(st.booleans()) and a.size:
        a = a[::2]
    if draw(st.booleans()):
        a.setflags(write=False)
    return a


values = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=4), st.none(), st.binary(max_size=20), arrays(),
                   st.booleans(), st.lists(st.integers(0, 3), max_size=3))
targets = st.one_of(st.sampled_from(["sm_100a", "sm_90a", "sm_bogus", "sm_1", "", "sm_120f",
                                     "sm_100"]), st.integers(), st.none())


def _ok(fn):
    try:
        fn()
    except PtxsimError:
        pass


@FAST
@given(grid=small_dim, block=small_dim, dyn=st.one_of(st.integers(-10, 300000), st.floats()),
       target=targets, args=st.lists(values, max_size=6))
def test_launch_fuzz(grid, block, dyn, target, args):
    _ok(lambda: ptxsim.launch(VADD, "vadd", grid, block, args=args, target=target,
                              dynamic_shared=dyn, step_limit=200_000))


@FAST
@given(args=st.lists(values, min_size=10, max_size=10))
def test_launch_scalar_params_fuzz(args):
    _ok(lambda: ptxsim.launch(SCALARS, "s", 1, 32, args=args, step_limit=10_000))


CORPUS = Path(__file__).parent / "data/ptx/ptxas_corpus.json"
LINES = [c["instruction"] for c in json.loads(CORPUS.read_text())["cases"]][::7] + [
    "add.u32 %r1, %r2, %r3;", "mov.b32 %r1, 0f3F800000;", "setp.lt.s32 %p1, %r1, %r2;",
    "cvt.rn.f32.s32 %r1, %r2;", "shfl.sync.idx.b32 %r1, %r2, %r3, %r4, %r5;"]


@st.composite
def mutated_line(draw):
    t = draw(st.sampled_from(LINES))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(t)))
        t = t[:i] + draw(st.sampled_from(["", ".", ",", "%r1", "[", "{", "1", " ", ".f32", "!",
                                          "::", "}", "-"])) + t[i + draw(st.integers(0, 3)):]
    return t


registers = st.dictionaries(st.sampled_from(["%r1", "%r2", "%r3", "%r4", "%r5", "%p1", "%rd1"]),
                            st.one_of(arrays(), st.integers(), st.none()), max_size=5)


@FAST
@given(text=st.one_of(mutated_line(), st.none(), st.integers(), st.binary(max_size=8)),
       regs=st.one_of(registers, st.none(), st.lists(st.integers(), max_size=2)),
       target=targets, warps=st.one_of(st.none(), st.integers(-1, 3), st.floats()))
def test_execute_fuzz(text, regs, target, warps):
    _ok(lambda: ptxsim.execute(text, regs, target=target, warps=warps))


OPTIONS = ["--grid", "--block", "--cluster", "--arg", "--dynamic-shared", "--target", "--out",
           "--seed", "--step-limit", "--kernel"]
OPTION_VALUES = ["1", "2", "0", "-1", "2.5", "x", "1,2", "sm_100a", "sm_bogus", "zeros:float32:64",
                 "u32:64", "f32:1.5", "u32:-1", "rand:int8:3", "bytes:4", "zeros:object:2",
                 "vadd", "nosuch", "", "99999999999999999999"]


@st.composite
def argv(draw, ptx_path):
    cmd = draw(st.sampled_from(["run", "check"]))
    out = [cmd, draw(st.sampled_from([ptx_path, ptx_path + ".missing", "/", ""]))]
    for _ in range(draw(st.integers(0, 8))):
        out += [draw(st.sampled_from(OPTIONS)), draw(st.sampled_from(OPTION_VALUES))]
    return out


def _run_cli(args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(args)
        except SystemExit as exc:            # argparse: a usage error, printed as such
            rc = exc.code
    assert isinstance(rc, int), (args, buf.getvalue())
    assert "Traceback" not in buf.getvalue()


_TMP = Path("/tmp") / "ptxsim_cli_fuzz"
_TMP.mkdir(exist_ok=True)
(_TMP / "k.ptx").write_text(VADD)


@FAST
@given(args=argv(str(_TMP / "k.ptx")))
def test_cli_fuzz(args):
    args = [a.replace("--out", "--out") for a in args]
    if "--out" in args:
        i = args.index("--out")
        if i + 1 < len(args):
            args[i + 1] = str(_TMP / "out")
    _run_cli(args)


@pytest.mark.slow
@LONG
@given(grid=small_dim, block=small_dim, target=targets, args=st.lists(values, max_size=6))
def test_launch_fuzz_long(grid, block, target, args):
    _ok(lambda: ptxsim.launch(VADD, "vadd", grid, block, args=args, target=target,
                              step_limit=200_000))


@pytest.mark.slow
@LONG
@given(text=mutated_line(), regs=registers, target=targets)
def test_execute_fuzz_long(text, regs, target):
    _ok(lambda: ptxsim.execute(text, regs, target=target))


@pytest.mark.slow
@LONG
@given(args=argv(str(_TMP / "k.ptx")))
def test_cli_fuzz_long(args):
    test_cli_fuzz.hypothesis.inner_test(args)
