"""PTX ISA 9.2's SIMD integer forms (sm_120f, RTX Blackwell): add / sub {.sat} .u8x4 / .s8x4,
min / max {.relu} .u8x4 / .s8x4, neg.s8x4, add.sat .u16x2 / .s16x2 / .u32.

Oracles: ptxas 13.5 for which spellings exist (sm_120f, .version 9.2; each is refused at 9.1);
the values against numpy over the byte / half-word lanes, each lane computed like the existing
.u16x2 / .s16x2 lanes (9.7.1.1: wrap-around; .sat clamps to the lane type's range; .relu
clamps a negative result to 0). Not measured on hardware (no sm_120 here)."""
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import PtxValidationError
from ptxsim.machine.executor import launch

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

OPS = ("add", "sub", "min", "max")
MODS = ("", ".sat", ".relu")
TYPES = ("u8x4", "s8x4", "u16x2", "s16x2", "u32", "s32")


def _module(lines, version="9.2"):
    body = "\n".join(lines)
    return (f".version {version}\n.target sm_120f\n.address_size 64\n.visible .entry k()\n{{\n"
            f".reg .b32 %r<4>;\n{body}\nret;\n}}\n")


def _ptxas_rejects(lines):
    import re
    import subprocess
    import tempfile
    exe = ptxas135.need()
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.ptx"
        f.write_text(_module(lines))
        r = subprocess.run([exe, "-arch=sm_120f", str(f), "-o", "/dev/null"],
                           capture_output=True, text=True)
    return {int(m.group(1)) - 7 for m in re.finditer(r"line (\d+); error", r.stderr)}


def _py_rejects(text):
    try:
        ptxsim.execute(text, {"%a": np.zeros(32, np.uint32), "%b": np.zeros(32, np.uint32)},
                       target="sm_120f")
    except PtxValidationError:
        return True
    return False


def test_legality_agrees_with_ptxas():
    forms = [f"{op}{m}.{t}" for op, m, t in itertools.product(OPS, MODS, TYPES)]
    forms += [f"{op}.{t}" for op in ("neg", "abs") for t in ("s8x4", "u8x4", "s16x2")]
    lines = [f"{f} %r1, %r2, %r3;" if f.split(".")[0] in OPS else f"{f} %r1, %r2;"
             for f in forms]
    bad = _ptxas_rejects(lines)
    texts = [f"{f} %d, %a, %b;" if f.split(".")[0] in OPS else f"{f} %d, %a;" for f in forms]
    mism = [f for i, (f, t) in enumerate(zip(forms, texts)) if (i in bad) != _py_rejects(t)]
    assert not mism, mism
    assert len(forms) - len(bad) == 38


def test_new_forms_need_ptx_9_2_and_sm_120f():
    ok, msg = ptxas135.verdict(_module(["add.sat.s8x4 %r1, %r2, %r3;"], "9.1"), "sm_120f")
    assert not ok and "9.2" in msg
    ok, msg = ptxas135.verdict(_module(["add.sat.s8x4 %r1, %r2, %r3;"]).replace(
        "sm_120f", "sm_100a"), "sm_100a")
    assert not ok and "not supported on .target" in msg
    # ptxsim: the same refusals when a kernel (or execute) names the target / version
    with pytest.raises(PtxValidationError, match="sm_120f"):
        ptxsim.execute("add.sat.s8x4 %d, %a, %b;", {"%a": A, "%b": B}, target="sm_100a")
    with pytest.raises(PtxValidationError, match="9.2"):
        launch(KERNEL.replace(".version 9.2", ".version 9.1"), "k", 1, 1,
               args=[np.zeros(4, np.uint32), 1, 2], target="sm_120f")


rng = np.random.default_rng(8)
A = rng.integers(0, 2**32, 64, np.uint64).astype(np.uint32)
B = rng.integers(0, 2**32, 64, np.uint64).astype(np.uint32)
A[:8] = [0x7F7F8080, 0xFFFF0000, 0x80007F01, 0x01020304, 0xFFFFFFFF, 0, 0x7FFF8000, 0x80008000]
B[:8] = [0x01FF80FF, 0x0101FFFF, 0x80017F7F, 0xFFFFFFFF, 0x00000001, 0x80808080, 0x00018000,
         0x80008000]


def _lanes(x, t):
    dt = {"u8x4": np.uint8, "s8x4": np.int8, "u16x2": np.uint16, "s16x2": np.int16}[t]
    return x.view(dt).reshape(x.size, -1).astype(np.int64)


def _pack(v, t):
    dt = {"u8x4": np.uint8, "s8x4": np.int8, "u16x2": np.uint16, "s16x2": np.int16}[t]
    info = np.iinfo(dt)
    return (v & (2 ** (8 * np.dtype(dt).itemsize) - 1)).astype(
        np.dtype(dt).str.replace("i", "u")).reshape(-1).view(np.uint32)


@pytest.mark.parametrize("op,mod,t", [(o, m, t) for o in OPS for m in MODS
                                      for t in ("u8x4", "s8x4", "u16x2", "s16x2")
                                      if not _py_rejects(f"{o}{m}.{t} %d, %a, %b;")])
def test_lanes(op, mod, t):
    a, b = _lanes(A, t), _lanes(B, t)
    dt = {"u8x4": np.uint8, "s8x4": np.int8, "u16x2": np.uint16, "s16x2": np.int16}[t]
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    r = {"add": a + b, "sub": a - b, "min": np.minimum(a, b), "max": np.maximum(a, b)}[op]
    if mod == ".sat":
        r = np.clip(r, lo, hi)
    if mod == ".relu":
        r = np.maximum(r, 0)
    got = ptxsim.execute(f"{op}{mod}.{t} %d, %a, %b;", {"%a": A, "%b": B}, target="sm_120f")["%d"]
    assert np.array_equal(got.astype(np.uint32), _pack(r, t))


def test_neg_s8x4_and_add_sat_u32():
    got = ptxsim.execute("neg.s8x4 %d, %a;", {"%a": A}, target="sm_120f")["%d"].astype(np.uint32)
    assert np.array_equal(got, _pack(-_lanes(A, "s8x4"), "s8x4"))       # -(-128) wraps to -128
    got = ptxsim.execute("add.sat.u32 %d, %a, %b;", {"%a": A, "%b": B}, target="sm_120f")["%d"]
    want = np.minimum(A.astype(np.uint64) + B.astype(np.uint64), 0xFFFFFFFF)
    assert np.array_equal(got.astype(np.uint64), want)


KERNEL = """.version 9.2
.target sm_120f
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 a, .param .u32 b)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    add.sat.s8x4 %r3, %r1, %r2;
    max.relu.s8x4 %r4, %r1, %r2;
    add.sat.u16x2 %r5, %r1, %r2;
    neg.s8x4 %r6, %r1;
    st.global.v4.u32 [%rd1], {%r3, %r4, %r5, %r6};
    ret;
}
"""


def test_kernel_on_sm_120f():
    ok, msg = ptxas135.verdict(KERNEL, "sm_120f")
    assert ok, msg
    out = np.zeros(4, np.uint32)
    launch(KERNEL, "k", 1, 1, args=[out, 0x7F80FF01, 0x7F80FF01], target="sm_120f")
    # bytes (hi..lo) 7f 80 ff 01 + itself: s8 sat 7f 80 fe 02; max.relu 7f 00 00 01;
    # u16 halves 7f80 + 7f80 = ff00, ff01 + ff01 saturates to ffff; neg 81 80 01 ff
    assert [hex(x) for x in out] == ["0x7f80fe02", "0x7f000001", "0xff00ffff", "0x818001ff"]
