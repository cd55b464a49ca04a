"""encode()/decode() against cvt results recorded on an NVIDIA H200 (sm_90), 2026-11-21.

tests/data/hardware/cvt/cvt_sm90.npz holds a subset (every ±0, ±Inf, 200 NaNs, 20 000 random picks) of
625 308 f32 inputs and 408 436 f64 inputs -- random bit patterns, every bf16 and f16 value with its
rounding midpoints and their f32 neighbours, and k * 2^j (|k| < 512, -30 <= j <= 18) with
neighbours -- and the hardware's outputs for each cvt form below. The capture program is
hardware/cvt/cvt_sm90_capture.py (CuPy, run through the device tool). On the full set every
form matched encode() bit for bit, except the f64-source NaN payloads noted below.
"""
from pathlib import Path

import numpy as np
import pytest

from ptxsim.types import decode, encode

DATA = np.load(Path(__file__).resolve().parents[1] / "data" / "hardware" / "cvt" / "cvt_sm90.npz")
X32 = DATA["x_f32_bits"].view(np.float32)
X64 = DATA["x_f64"]
FORMS = [k for k in DATA.files if k.split(".")[0] in ("f16", "bf16", "tf32", "e4m3", "e5m2")]


@pytest.mark.parametrize("form", FORMS)
def test_cvt_form_matches_hardware(form):
    fmt, rnd, *mods = form.split(".")
    hw = DATA[form].astype(np.uint64)
    if fmt in ("e4m3", "e5m2"):
        # captured as cvt...x2.f32 d, x, 0.5: x lands in the upper byte, 0.5 in the lower
        assert np.all((hw & 0xFF) == {"e4m3": 0x30, "e5m2": 0x38}[fmt])
        hw = hw >> 8
    src = X64 if "f64" in mods else X32
    got = encode(src, fmt, rnd, satfinite="satfinite" in mods, relu="relu" in mods).astype(np.uint64)
    if "f64" in mods:
        # cvt.{f16,bf16}.f64 keeps a NaN's payload (quiet bit set, top fraction bits kept);
        # encode() gives the canonical NaN of the f32-source forms. Only NaNs may differ.
        nan = np.isnan(src)
        assert np.all(np.isnan(decode(hw[nan].astype(np.uint16), fmt)))
        hw, got = hw[~nan], got[~nan]
    bad = np.nonzero(got != hw)[0]
    assert bad.size == 0, [(float(src[i]), hex(int(hw[i])), hex(int(got[i]))) for i in bad[:5]]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_decode_matches_hardware_widening(fmt):
    # cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a for every 16-bit a: upper byte -> upper f16
    hw = DATA[f"dec.{fmt}"]
    a = np.arange(1 << 16)
    for half, codes in ((hw & 0xFFFF, a & 0xFF), (hw >> 16, a >> 8)):
        ref = half.astype(np.uint16).view(np.float16).astype(np.float64)
        got = decode(codes, fmt)
        assert np.array_equal(got, ref, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(ref))       # NaN comes back as +NaN


def test_relu_of_negative_zero_is_positive_zero():
    i = np.nonzero((X32 == 0) & np.signbit(X32))[0]
    assert i.size and np.all(DATA["f16.rn.relu"][i] == 0) and np.all(DATA["f16.rn"][i] == 0x8000)
