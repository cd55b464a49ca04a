"""sin / cos .approx.ftz.2pi.f32 (PTX ISA 9.5: the input in revolutions) against the H200
(hardware/sincos_2pi: ptxas 13.5 cubin for sm_90a; SASS = MUFU.SIN / MUFU.COS of the operand
itself, results/sass.txt). The recorded 65,536 inputs replay bit for bit through isa.floating and
through the executor running the capture kernel; the capture's exhaustive check (all 2^32 inputs
against the model, evaluated on the GPU from the quarter-turn table) found 0 mismatches, and the
checker kernel itself is run here on slices, with a corrupted table as the negative control."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ptxsim.errors import PtxsimError
from ptxsim.isa import floating as fl
from ptxsim.machine.executor import launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ptxas135 as p135  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    """hardware/sincos_2pi/<name>.py under a unique module name (other tests import other
    hardware folders' `kernels`)."""
    spec = importlib.util.spec_from_file_location(f"sincos_2pi_{name}",
                                                  ROOT / "hardware" / "sincos_2pi" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


inputs = _load("inputs")
kernels = _load("kernels")

REC = np.load(ROOT / "tests" / "data" / "hardware" / "sincos_2pi" / "sincos_2pi_sm90.npz")


def test_record_provenance_and_exhaustive_check():
    meta = json.loads(str(REC["meta"]))
    assert "H200" in meta["machine"] and meta["arch"] == "sm_90a" and "13.5" in meta["cubin"]
    assert REC["check_counts"].tolist() == [0, 0, 2 ** 32]
    assert REC["check_first_bad"].tolist() == [0xFFFFFFFF, 0xFFFFFFFF]


@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_recorded_inputs_bit_exact(fn):
    x = inputs.sample()
    got = np.asarray(getattr(fl, fn)(x, ftz=True, twopi=True), np.uint32)
    bad = np.flatnonzero(got != REC[fn])
    assert not bad.size, (f"{bad.size} differ, e.g. in {x[bad[:3]]} ptxsim {got[bad[:3]]} "
                          f"H200 {REC[fn][bad[:3]]}")


def test_capture_kernel_runs_in_the_executor():
    x = inputs.sample()[:4096]
    s, c = np.zeros_like(x), np.zeros_like(x)
    launch(kernels.module(), "sample", x.size // 256, 256, args=[x, s, c, np.uint32(x.size)],
           target="sm_90a")
    assert np.array_equal(s, REC["sin"][:4096]) and np.array_equal(c, REC["cos"][:4096])


@pytest.mark.parametrize("start", [0x3E800000, 0xBF7FF000, 0x7F7FF800])
def test_the_gpu_checker_agrees_here_and_catches_a_wrong_table(start):
    q = fl._sin_quarter_table().astype(np.uint32)
    res, bad = np.zeros(3, np.uint64), np.full(2, 0xFFFFFFFF, np.uint32)
    launch(kernels.module(), "check", 1, 128, args=[q, res, bad, np.uint32(start)],
           target="sm_90a")
    assert res.tolist() == [0, 0, 2048]
    q[::3] ^= 1
    res[:] = 0
    launch(kernels.module(), "check", 1, 128, args=[q, res, bad, np.uint32(start)],
           target="sm_90a")
    assert res[0] > 0 or res[1] > 0


def test_2pi_quarter_turns_by_hand():
    """sin(2 pi a): a = 1/4 -> 1, 1/8 -> sqrt(1/2) within the MUFU's error, 3/4 -> -1;
    cos(2 pi 1/2) = -1; +-Inf / NaN -> NaN (0x7FFFFFFF, as sin.approx)."""
    a = np.array([0.25, 0.125, 0.75, -0.25], np.float32).view(np.uint32)
    s = np.asarray(fl.sin(a, ftz=True, twopi=True), np.uint32).view(np.float32)
    assert s[0] == 1 and s[2] == -1 and s[3] == -1 and abs(s[1] - 0.5 ** 0.5) < 2e-6
    c = np.asarray(fl.cos(np.float32(0.5).view(np.uint32)[None], ftz=True, twopi=True),
                   np.uint32).view(np.float32)
    assert c[0] == -1
    nan = np.array([0x7F800000, 0xFF800000, 0x7FC00000], np.uint32)
    assert (np.asarray(fl.sin(nan, ftz=True, twopi=True)) == 0x7FFFFFFF).all()


def test_2pi_without_ftz_is_refused():
    with pytest.raises(PtxsimError, match="requires .ftz"):
        fl.sin(np.zeros(1, np.uint32), twopi=True)


def _module(inst: str, version: str, target: str) -> str:
    return (f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k(.param "
            ".u64 a)\n{\n  .reg .f32 %f<2>;\n  .reg .b64 %rd1;\n  ld.param.u64 %rd1, [a];\n"
            f"  ld.global.f32 %f1, [%rd1];\n  {inst}\n  st.global.f32 [%rd1], %f0;\n  ret;\n}}\n")


def test_ptxsim_check_agrees_with_ptxas():
    p135.need()
    from ptxsim.machine.coverage import unexecutable
    from ptxsim.ptx import parse_module, validate
    wrong = []
    for op in ("sin", "cos"):
        for q in (".approx.ftz.2pi", ".approx.2pi.ftz", ".approx.2pi", ".2pi.ftz", ".approx.ftz"):
            for version, target in (("9.5", "sm_90a"), ("9.4", "sm_90a"), ("9.5", "sm_100a"),
                                    ("9.5", "sm_75")):
                ptx = _module(f"{op}{q}.f32 %f0, %f1;", version, target)
                ok, msg = p135.verdict(ptx, target)
                m = parse_module(ptx)
                mine = not any(d.severity == "error" for d in validate(m))
                if ok != mine or (ok and unexecutable(m)):
                    wrong.append((op + q, version, target, ok, mine, msg[:60]))
    assert not wrong, wrong
