"""`ptxsim formats`: output carries the right numbers; bad input ends in a one-line FormatError."""
import pytest

from ptxsim.cli import main


def run(capsys, *argv):
    rc = main(["formats", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_summary_lists_every_format(capsys):
    rc, out, _ = run(capsys)
    assert rc == 0
    for name in ("f16", "bf16", "tf32", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "ue8m0", "ue4m3", "s4"):
        assert f" {name} " in out
    assert "65504" in out and "448" in out          # f16 and e4m3 MAX_NORM


def test_all_codes_of_e2m1(capsys):
    rc, out, _ = run(capsys, "e2m1", "--all")
    assert rc == 0
    # OCP MX v1.0 Table 5 (E2M1): 0111 = 6.0, 1001 = -0.5
    assert "0111 │     6" in out and "1001 │  -0.5" in out


def test_encode_and_decode(capsys):
    rc, out, _ = run(capsys, "e4m3", "--encode", "500", "-0.001", "nan", "--satfinite")
    assert rc == 0 and "0x7e  = 448" in out and "0x81" in out and "0x7f  = NaN" in out
    rc, out, _ = run(capsys, "ue8m0", "--encode", "3", "--rounding", "rp")
    assert "0x81  = 4" in out
    rc, out, _ = run(capsys, "bf16", "--decode", "0x3f80", "49024")
    assert "0x3f80  1" in out and "0xbf80  -1" in out


@pytest.mark.parametrize("argv,msg", [
    (("e9m9",), "unknown element format 'e9m9'"),
    (("e2m1", "--decode", "0x10"), "does not fit the 4-bit .e2m1"),
    (("e2m1", "--decode", "zz"), "not an integer bit pattern"),
    (("f16", "--all"), "at most 8 bits"),
    (("e2m1", "--encode", "1.0"), "requires .satfinite"),
    (("e4m3", "--encode", "x", "--satfinite"), "not a number"),
    (("--all",), "need a format NAME"),
])
def test_bad_input_is_one_line_format_error(capsys, argv, msg):
    rc, out, err = run(capsys, *argv)
    assert rc == 1
    assert err.startswith("ptxsim: FormatError: ") and msg in err and err.count("\n") == 1
