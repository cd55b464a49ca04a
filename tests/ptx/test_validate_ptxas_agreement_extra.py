"""Validator cases settled by ptxas 13.0 beyond the generated corpus (verdicts recorded by hand on
2026-11-21 with `ptxas -arch=sm_90a`, re-checked live when ptxas is on the PATH)."""
import shutil
import subprocess

import pytest

from ptxsim.ptx import errors_of, parse_module, validate

CASES = [  # (instruction, ptxas 13.0 accepts)
    ("setmaxnreg.inc.sync.aligned.u32 240;", True),
    ("setmaxnreg.inc.sync.aligned.s32 240;", True),     # not in the spec's syntax; ptxas takes it
    ("setmaxnreg.dec.sync.aligned.u32 20;", False),     # below 24
    ("setmaxnreg.inc.sync.aligned.u32 250;", False),    # not a multiple of 8
]


def _module(inst: str) -> str:
    return (".version 8.7\n.target sm_90a\n.address_size 64\n"
            f".visible .entry k() .maxnreg 128\n{{\n {inst}\n ret;\n}}\n")


@pytest.mark.parametrize("inst,accepted", CASES)
def test_validator_agrees_with_recorded_ptxas(inst, accepted):
    assert (not errors_of(validate(parse_module(_module(inst)), target="sm_90a"))) == accepted


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
@pytest.mark.parametrize("inst,accepted", CASES)
def test_recorded_verdicts_still_hold(inst, accepted, tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(_module(inst))
    r = subprocess.run(["ptxas", "-arch=sm_90a", str(f), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert (r.returncode == 0) == accepted, r.stderr
