"""What the executor cannot run, found without running (machine/coverage.py), reported by
`ptxsim check` with the line and by scripts/ptx_coverage.py for the test data (issue #18)."""
import subprocess
import sys
from pathlib import Path

import pytest

from ptxsim.machine.coverage import unexecutable

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

ROOT = Path(__file__).parents[2]
GAPS = """.version 9.1
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .b16 %h<4>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [p];
    multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd1];
    cvt.rn.satfinite.s2f6x2.f32 %h1, %f1, %f2;
    add.u32 %r2, %r1, 1;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def test_gaps_are_found_with_their_lines_and_reasons():
    gaps = unexecutable(GAPS)
    assert [(g.line, g.instruction.split()[0]) for g in gaps] == [
        (11, "multimem.ld_reduce.relaxed.sys.global.add.u32"),
        (12, "cvt.rn.satfinite.s2f6x2.f32")]
    assert gaps[0].reason == "no semantics in ptxsim"
    assert ".s2f6x2 type" in gaps[1].reason and gaps[1].col == 5
    ok, msg = ptxas135.verdict(GAPS)
    assert ok, msg


def test_check_warns_at_each_gap(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(GAPS)
    r = subprocess.run([sys.executable, "-m", "ptxsim", "check", str(f)], capture_output=True,
                       text=True)
    assert r.returncode == 0                      # valid PTX: warnings, not errors
    lines = [l for l in r.stderr.splitlines() if "cannot execute" in l]
    assert [l.split(": warning")[0] for l in lines] == [f"{f}:11:5", f"{f}:12:5"]
    r = subprocess.run([sys.executable, "-m", "ptxsim", "check", "-W", str(f)],
                       capture_output=True, text=True)
    assert "cannot execute" not in r.stderr


def test_every_ptx_file_of_the_test_data_is_executable(capsys):
    # the report over tests/**/*.ptx{,.xz} (Triton / CuTe / nvcc output, hand-written kernels)
    sys.path.insert(0, str(ROOT / "scripts"))
    import ptx_coverage
    assert ptx_coverage.main(["--fail", str(ROOT / "tests")]) == 0
    out = capsys.readouterr().out
    assert "0 instructions the executor cannot run, 0 modules not parsed" in out


def test_a_form_is_reported_at_every_occurrence():
    # forms that build are built once per module; a form that does not is reported at each of
    # its lines, in every kernel: line 15 (the multimem form again in the first kernel, after
    # forms that built) and lines 25 and 26 (the second kernel, k2, starts at line 18)
    second = GAPS.split(".visible", 1)[1].replace("entry k(", "entry k2(")
    text = GAPS.replace("    ret;\n}\n", "    multimem.ld_reduce.relaxed.sys.global.add.u32 %r3, [%rd1];\n"
                        "    ret;\n}\n") + ".visible" + second
    gaps = unexecutable(text)
    assert [g.line for g in gaps] == [11, 12, 15, 25, 26]
    lines = text.splitlines()
    assert lines[17].startswith(".visible .entry k2") and lines[24].strip().startswith(
        "multimem.ld_reduce") and lines[25].strip().startswith("cvt.rn.satfinite.s2f6x2")
    ok, msg = ptxas135.verdict(text)
    assert ok, msg
