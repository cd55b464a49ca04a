"""`vop d, a, b, c` with neither .op2 nor d.dsel (ptxas 13.0 accepts it; no syntax line of
9.7.18.1.1 has it): recorded on an NVIDIA H200 (tests/data/hardware/video/video_c_sm90.npz, made by
hardware/video/video_c.py: 12 variants x 1024 operand sets, each run with c and without c into a destination
pre-loaded with d). The GPU ignores c (the SASS loads only a and b: hardware/video/video_c_sass.txt);
ptxsim must give the recorded bits for both forms and warn about the ignored c."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import VideoOperandIgnored
from ptxsim.isa import video
from ptxsim.testing.video_inputs import video_operands, video_operands_checksum

DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "video" / "video_c_sm90.npz"


@pytest.fixture(scope="module")
def rec():
    z = np.load(DATA)
    ops = video_operands(1024)
    # the inputs are regenerated: the checksum of the array sent to the GPU (hardware/video/video_c.py)
    assert video_operands_checksum(ops) == "88642aa3f6a0345f"
    return z, ops


def test_recorded_on_h200(rec):
    z, _ = rec
    assert "H200" in str(z["device"])
    assert z["out"].shape == (12, 2, 1024)


def test_hardware_ignores_c(rec):
    z, _ = rec
    out = z["out"]
    assert (out[:, 0] == out[:, 1]).all()


def test_ptxsim_matches_recorded_bits_and_warns(rec):
    z, ops = rec
    for k, form in enumerate(z["variants"]):
        form = str(form)
        with pytest.warns(VideoOperandIgnored):
            ins = video.parse(form.format(d="d", c=", c").replace("%", ""))
        three = video.parse(form.format(d="d", c="").replace("%", ""))
        got = video.evaluate(ins, ops["a"], ops["b"], ops["c"], ops["d"])
        ref = video.evaluate(three, ops["a"], ops["b"], None, ops["d"])
        assert (got == z["out"][k, 0]).all(), form
        assert (ref == z["out"][k, 1]).all(), form


def test_execute_and_validator_follow_the_hardware():
    """Through ptxsim.execute: 5 + 7 = 12 whatever c holds; the validator warns, no error."""
    regs = {"%r2": np.full(32, 5, np.uint32), "%r3": np.full(32, 7, np.uint32),
            "%r4": np.arange(32, dtype=np.uint32) * 1000}
    with pytest.warns(VideoOperandIgnored):
        r = ptxsim.execute("vadd.u32.u32.u32 %r1, %r2, %r3, %r4;", regs)
    assert r["%r1"].tolist() == [12] * 32
    from ptxsim.ptx import parse_module
    from ptxsim.ptx.validator import validate
    src = (".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
           ".reg .b32 %r<5>;\nvadd.u32.u32.u32 %r1, %r2, %r3, %r4;\nret;\n}\n")
    diags = validate(parse_module(src))
    msgs = [str(getattr(d, "message", d)) for d in diags]
    assert any("ignores c" in m for m in msgs), msgs
    assert all(getattr(d, "severity", "warning") != "error" for d in diags), msgs
