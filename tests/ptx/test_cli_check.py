"""`ptxsim check`: compiler-style diagnostics and exit status."""
from pathlib import Path

from ptxsim.cli import main

BAD = """.version 9.0
.target sm_100a
.address_size 64
.visible .entry k()
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<2>;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 48;
\tmma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r0, %r1, %r2, %r3}, {%r0, %r1}, {%r0, %r1}, {%r0, %r1, %r2, %r3}, %r0, 0;
\tret;
}
"""


def test_check_reports_errors_and_warnings(tmp_path, capsys):
    f = tmp_path / "bad.ptx"
    f.write_text(BAD)
    assert main(["check", str(f)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{f}:8:2: error: nCols = 48 of tcgen05.alloc must be a power of 2 (9.7.16.7.1)"
    assert err[1].startswith(f"{f}:9:2: warning: mma.sp may have substantially reduced performance")


def test_check_clean_file_and_warnings_only(tmp_path, capsys):
    f = tmp_path / "warn.ptx"
    f.write_text(BAD.replace("], 48;", "], 64;"))
    assert main(["check", str(f)]) == 0                 # a warning alone does not fail
    assert "warning:" in capsys.readouterr().err
    assert main(["check", "--no-warnings", str(f)]) == 0
    assert capsys.readouterr().err == ""


def test_check_syntax_error_and_target(tmp_path, capsys):
    f = tmp_path / "syn.ptx"
    f.write_text(".version 9.0\n.target sm_100a\n.entry k() {\n  add.s32 %r1, ;\n}\n")
    assert main(["check", str(f)]) == 1
    assert capsys.readouterr().err.startswith(f"{f}:4:16: error: unexpected ';'")
    g = tmp_path / "ok.ptx"
    g.write_text(BAD.replace("], 48;", "], 64;").replace("mma.sp.", "mma.sp::ordered_metadata."))
    assert main(["check", str(g)]) == 0
    assert main(["check", "--target", "sm_120a", str(g)]) == 1
    assert "cannot be compiled for sm_120a" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.ptx")]) == 1
