"""The cvt forms of PTX ISA 9.1 / 9.2 (issue #18): .f16x2 / .bf16x2 sources for the 8/6/4-bit
pair destinations (9.1) and the .bf16x2 destination from those pairs (9.2), which Triton 3.9
emits for sm_120a dot_scaled and CuTe / FlashInfer kernels use to dequantise.

Oracles: ptxas 13.5 (tests/ptxas135.py) for which spellings exist and from which .version;
ml_dtypes for the values (every code of each narrow format widened; every f16 / bf16 finite in a
format's range narrowed with round-to-nearest-even); the .satfinite / .relu rules of 9.7.9.21 by
hand. The forms ptxas accepts that ptxsim does not compute (.s2f6x2, .scaled::n2::ue8m0, .rs)
raise UnsupportedFeature naming the feature."""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import UnsupportedFeature
from ptxsim.machine.coverage import unexecutable
from ptxsim.machine.executor import launch

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

NARROW = {"e4m3x2": (ml_dtypes.float8_e4m3fn, 8), "e5m2x2": (ml_dtypes.float8_e5m2, 8),
          "e2m3x2": (ml_dtypes.float6_e2m3fn, 6), "e3m2x2": (ml_dtypes.float6_e3m2fn, 6),
          "e2m1x2": (ml_dtypes.float4_e2m1fn, 4)}
REG = {8: "%h1", 6: "%h1", 4: "%c1"}

# spelling -> the first .version ptxas 13.5 accepts it with (sm_100a)
FORMS = {**{f"cvt.rn{m}.bf16x2.{t} %r1, {REG[w]};": "9.2" for t, (_, w) in NARROW.items()
            for m in ("", ".relu", ".satfinite", ".relu.satfinite")},
         **{f"cvt.rn.satfinite{m}.{t}.{s} {REG[w]}, %r1;": "9.1"
            for t, (_, w) in NARROW.items() for s in ("bf16x2",) for m in ("", ".relu")},
         **{f"cvt.rn.satfinite.{t}.f16x2 {REG[w]}, %r1;": "9.1" for t, (_, w) in NARROW.items()
            if t not in ("e4m3x2", "e5m2x2")}}
UNMODELLED = {   # spelling -> (what ptxsim names, the first .version ptxas 13.5 accepts)
    "cvt.rn.scaled::n2::ue8m0.bf16x2.e4m3x2 %r1, %h1, %h2;": (".scaled::n2::ue8m0", "9.2"),
    "cvt.rn.bf16x2.s2f6x2 %r1, %h1;": (".s2f6x2", "9.1"),
    "cvt.rn.satfinite.s2f6x2.f32 %h1, %f1, %f2;": (".s2f6x2", "9.1"),
    "cvt.rs.satfinite.e4m3x4.f32 %r1, {%f1, %f2, %f3, %f4}, %r2;": ("stochastic rounding", "8.7"),
    "cvt.rs.relu.satfinite.bf16x2.f32 %r1, %f1, %f2, %r2;": ("stochastic rounding", "8.7"),
}
DECL = ".reg .b32 %r<4>; .reg .b16 %h<4>; .reg .b8 %c<4>; .reg .f32 %f<6>;"


def _module(body: str, version: str) -> str:
    return (f".version {version}\n.target sm_100a\n.address_size 64\n.visible .entry k()\n"
            f"{{\n{DECL}\n{body}\nret;\n}}\n")


def _previous(v: str) -> str:
    major, minor = map(int, v.split("."))
    return f"{major}.{minor - 1}"


@pytest.mark.parametrize("form", sorted(FORMS) + sorted(UNMODELLED))
def test_ptxas_accepts_from_its_version_only(form):
    first = FORMS[form] if form in FORMS else UNMODELLED[form][1]
    ok, msg = ptxas135.verdict(_module(form, first))
    assert ok, msg
    ok, _ = ptxas135.verdict(_module(form, _previous(first)))
    assert not ok, f"{form} accepted before {first}"


@pytest.mark.parametrize("form", sorted(UNMODELLED))
def test_unmodelled_forms_are_named(form):
    what = UNMODELLED[form][0]
    gaps = unexecutable(_module(form, "9.2"))
    assert len(gaps) == 1 and what in gaps[0].reason and gaps[0].line == 7
    with pytest.raises(UnsupportedFeature, match=what.replace(".", r"\.")):
        ptxsim.execute(form, {r: np.zeros(32, np.uint32 if r.startswith("%r") else
                                          np.uint16 if r.startswith("%h") else np.float32)
                              for r in ("%h1", "%h2", "%f1", "%f2", "%f3", "%f4", "%r2")
                              if r in form.split(",", 1)[1]})


def _bf16_bits(x):
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint32)


@pytest.mark.parametrize("fmt", sorted(NARROW))
@pytest.mark.parametrize("mods", ["", ".relu", ".satfinite", ".relu.satfinite"])
def test_bf16x2_from_every_code(fmt, mods):
    dt, w = NARROW[fmt]
    codes = np.arange(1 << w, dtype=np.uint32)
    vals = codes.astype(np.uint8).view(dt).astype(np.float32)
    exp = _bf16_bits(vals)
    if ".relu" in mods:                  # negative (and -0) -> +0, NaN stays NaN
        exp = np.where(np.signbit(vals) & ~np.isnan(vals), 0, exp)
    if ".satfinite" in mods:             # +-inf -> +-largest finite bf16
        exp = np.where((exp & 0x7FFF) == 0x7F80, (exp & 0x8000) | 0x7F7F, exp)
    exp = np.where(np.isnan(vals), 0x7FFF, exp)     # ptxsim's canonical NaN; compared below
    # pairs (code i in the upper half, code i reversed in the lower half), 32 per call
    lo = codes[::-1]
    packed = (codes << w) | lo if w != 6 else (codes << 8) | lo
    got = np.concatenate([
        ptxsim.execute(f"cvt.rn{mods}.bf16x2.{fmt} %d, %a;",
                       {"%a": packed[i:i + 32].astype(np.uint8 if w == 4 else np.uint16)},
                       target="sm_100a")["%d"]
        for i in range(0, packed.size, 32)]) if codes.size >= 32 else \
        ptxsim.execute(f"cvt.rn{mods}.bf16x2.{fmt} %d, %a;",
                       {"%a": np.resize(packed, 32).astype(np.uint8)},
                       target="sm_100a")["%d"][:codes.size]
    for half, want in ((got >> 16, exp), (got & 0xFFFF, exp[::-1])):
        nan = np.isnan(vals) if want is exp else np.isnan(vals[::-1])
        assert np.array_equal(half[~nan], want[~nan])
        assert ((half[nan] & 0x7F80) == 0x7F80).all() and (half[nan] & 0x7F).all()


@pytest.mark.parametrize("fmt", sorted(NARROW))
@pytest.mark.parametrize("src", ["f16x2", "bf16x2"])
def test_narrowing_from_halves(fmt, src):
    dt, w = NARROW[fmt]
    half = np.float16 if src == "f16x2" else ml_dtypes.bfloat16
    big = float(ml_dtypes.finfo(dt).max)
    rng = np.random.default_rng(w)
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(4096) * big / 2).astype(half)
        specials = np.array([big * 4, -big * 4, np.inf, -np.inf] * 16, half)
    x = x[np.abs(x.astype(np.float64)) <= big]           # in range: plain RNE
    x = np.concatenate([x[: (x.size // 64) * 64], specials])
    pairs = x.view(np.uint16).astype(np.uint32)
    a = (pairs[0::2] << 16) | pairs[1::2]
    out = np.concatenate([ptxsim.execute(f"cvt.rn.satfinite.{fmt}.{src} %d, %a;",
                                         {"%a": a[i:i + 32]})["%d"] for i in range(0, a.size,
                                                                                    32)])
    hi, lo = (out >> (w if w == 4 else 8)) & ((1 << w) - 1), out & ((1 << w) - 1)
    got = np.empty(x.size, np.uint32)
    got[0::2], got[1::2] = hi, lo
    vals = x.astype(np.float32)
    sat = np.clip(vals, -big, big)                        # .satfinite: |x| > max -> +-max
    want = sat.astype(dt).view(np.uint8).astype(np.uint32) & ((1 << w) - 1)
    assert np.array_equal(got, want)


KERNEL = """.version 9.2
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 in)
{
    .reg .b32 %r<6>;
    .reg .b16 %h<2>;
    .reg .b8 %c<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 2;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u16 %h1, [%rd4];
    cvt.rn.bf16x2.e4m3x2 %r2, %h1;
    ld.global.u8 %c1, [%rd4];
    cvt.rn.relu.bf16x2.e2m1x2 %r3, %c1;
    cvt.rn.satfinite.e2m3x2.bf16x2 %h1, %r2;
    cvt.u32.u16 %r4, %h1;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd5, %rd1, %rd3;
    st.global.v2.u32 [%rd5], {%r2, %r3};
    st.global.u32 [%rd5+8], %r4;
    ret;
}
"""


def test_kernel_path_and_ptxas():
    ok, msg = ptxas135.verdict(KERNEL)
    assert ok, msg
    src = np.arange(0, 64 * 256, 256 + 3, dtype=np.uint32)[:64].astype(np.uint16)
    out = np.zeros((64, 4), np.uint32)
    launch(KERNEL, "k", 1, 64, args=[out, src])
    e4 = src.view(np.uint8).reshape(64, 2).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    want = (_bf16_bits(e4[:, 1]) << 16) | _bf16_bits(e4[:, 0])
    assert np.array_equal(out[:, 0], want)
    b = (src & 0xFF).astype(np.uint8)
    e2 = np.stack([(b >> 4) & 0xF, b & 0xF], 1).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)
    e2 = np.maximum(e2.astype(np.float32), 0) + 0.0                   # .relu, -0 -> +0
    assert np.array_equal(out[:, 1], (_bf16_bits(e2[:, 0]) << 16) | _bf16_bits(e2[:, 1]))
    v = np.clip(e4, -7.5, 7.5).astype(ml_dtypes.float6_e2m3fn).view(np.uint8).astype(np.uint32)
    nan = np.isnan(e4).any(1)
    assert np.array_equal(out[~nan, 2], ((v[:, 1] << 8) | v[:, 0])[~nan])
