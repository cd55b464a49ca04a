"""`ptxsim decode` / `ptxsim encode` / `ptxsim layout smem`: the script interface (JSON keys and
values, exit codes) and the human one (every spec field name shown, reasons when invalid)."""
import json

import pytest

from ptxsim.cli import main


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_decode_idesc_json_keys_and_values(capsys):
    rc, out, _ = run(capsys, "decode", "idesc", "0x08400490", "--kind", "f16", "--json")
    d = json.loads(out)
    assert rc == 0 and d["valid"] is True and d["errors"] == []
    assert {k: d[k] for k in ("m", "n", "dtype", "atype", "btype", "sparse", "selector", "negate_a",
                              "negate_b", "transpose_a", "transpose_b")} == {
        "m": 128, "n": 256, "dtype": "f32", "atype": "bf16", "btype": "bf16", "sparse": False,
        "selector": 0, "negate_a": False, "negate_b": False, "transpose_a": False,
        "transpose_b": False}


def test_decode_idesc_table_shows_every_spec_field(capsys):
    rc, out, _ = run(capsys, "decode", "idesc", "08400490", "--kind", "f16")
    assert rc == 0
    for name in ("Sparsity selector", "Sparsity", "Saturate for integer types", "dtype (Matrix D type)",
                 "atype (Matrix A type)", "btype (Matrix B type)", "Negate A Matrix", "Negate B Matrix",
                 "Transpose A Matrix", "Transpose B Matrix", "Dimension of Matrix B",
                 "Dimension of Matrix A", "Maximum shift", "Reserved"):
        assert name in out, name
    assert "M=128 N=256 K=16" in out and "valid" in out


def test_decode_invalid_idesc_prints_fields_and_reasons_exit_1(capsys):
    # tcgen05.mma.sp kind::mxf4 with an idesc saying M=64 (FACTS §5: ptxas accepts it)
    v = (4 << 24) | (16 << 17) | (1 << 23) | (1 << 10) | (1 << 7) | (1 << 2)
    rc, out, _ = run(capsys, "decode", "idesc", hex(v), "--kind", "mxf4", "--sp")
    assert rc == 1
    assert "Scale Matrix Type" in out and "Matrix A Scale Factor Data ID" in out
    assert "INVALID" in out and "Table 44" in out and "M = 64" in out
    rc, out, _ = run(capsys, "decode", "idesc", hex(v), "--kind", "mxf4", "--sp", "--json")
    d = json.loads(out)
    assert rc == 1 and d["valid"] is False and any("reserved" in e for e in d["errors"])
    assert d["m"] == 0 and d["n"] == 128 and d["sparse"] is True


def test_decode_smem_desc_json(capsys):
    v = 0x40 | 1 << 16 | 64 << 32 | 1 << 46 | 2 << 61
    rc, out, _ = run(capsys, "decode", "smem-desc", hex(v), "--json")
    d = json.loads(out)
    assert rc == 0 and d["valid"]
    assert (d["start_address"], d["lbo"], d["sbo"], d["base_offset"], d["lbo_mode"], d["swizzle"]) == \
        (0x400, 16, 1024, 0, "relative", "128B")


@pytest.mark.parametrize("code,name", [(0, "none"), (1, "128B_base32B"), (2, "128B"), (4, "64B"),
                                       (6, "32B")])
def test_decode_smem_swizzle_names(capsys, code, name):
    rc, out, _ = run(capsys, "decode", "smem-desc", hex(1 << 46 | code << 61), "--json")
    assert json.loads(out)["swizzle"] == name and rc == 0


def test_decode_smem_desc_invalid(capsys):
    # Hopper-style (no bit 46) with swizzle code 5
    rc, out, _ = run(capsys, "decode", "smem-desc", hex(5 << 61 | 64 << 32))
    assert rc == 1
    for name in ("Matrix start address", "Leading dimension", "Stride dimension", "Fixed constant",
                 "Matrix base offset", "Leading dimension stride mode", "Swizzling mode"):
        assert name in out
    assert "fixed_46" in out and "swizzle" in out and "Table 40" in out


def test_decode_zcol_mask_spec_example2(capsys):
    # Example 2 of 9.7.16.4.3: nzm 1, skip field 2, use field 3 -> 0b...111 0000 111 0000
    v = 1 << 39 | 2 << 40 | 3 << 48
    rc, out, _ = run(capsys, "decode", "zcol-mask", hex(v), "--n", "16", "--json")
    d = json.loads(out)
    assert rc == 0 and d["valid"]
    bits = int(d["mask"], 16)
    assert [bits >> i & 1 for i in range(14)] == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1]
    rc, out, _ = run(capsys, "decode", "zcol-mask", hex(v), "--n", "16")
    assert "Skip Span" in out and "Use Span" in out and "Column Shift" in out and rc == 0


def test_encode_idesc_prints_hex(capsys):
    rc, out, err = run(capsys, "encode", "idesc", "--kind", "f16", "--m", "128", "--n", "256",
                       "--atype", "bf16", "--btype", "bf16", "--dtype", "f32")
    assert rc == 0 and out.strip() == "0x08400490" and err == ""


def test_encode_idesc_invalid_still_prints_hex_exit_1(capsys):
    rc, out, err = run(capsys, "encode", "idesc", "--kind", "f16", "--m", "64", "--n", "8",
                       "--atype", "f16", "--btype", "f16", "--cta-group", "2")
    assert rc == 1 and out.strip().startswith("0x") and "Table 39" in err


def test_encode_idesc_unencodable_is_a_named_error(capsys):
    rc, out, err = run(capsys, "encode", "idesc", "--kind", "mxf4", "--m", "64", "--n", "64",
                       "--atype", "e2m1", "--btype", "e2m1")
    assert rc == 1 and "DescriptorError" in err and "'m'" in err


def test_encode_decode_round_trip_sparse(capsys):
    rc, out, _ = run(capsys, "encode", "idesc", "--kind", "f16", "--m", "128", "--n", "64",
                     "--atype", "f16", "--btype", "f16", "--sparse", "--selector", "2",
                     "--negate-a", "--transpose-b")
    assert rc == 0
    rc, out, _ = run(capsys, "decode", "idesc", out.strip(), "--kind", "f16", "--sp", "--json")
    d = json.loads(out)
    assert (d["sparse"], d["selector"], d["negate_a"], d["transpose_b"], d["k"]) == (True, 2, True, True, 32)


def test_encode_smem_desc(capsys):
    rc, out, _ = run(capsys, "encode", "smem-desc", "--start", "0x400", "--lbo", "16", "--sbo", "1024",
                     "--swizzle", "128B")
    assert rc == 0 and out.strip() == "0x4000404000010040"
    rc, out, err = run(capsys, "encode", "smem-desc", "--start", "0", "--lbo", "0x400", "--sbo", "1024",
                       "--swizzle", "64B", "--lbo-mode", "absolute")
    assert rc == 1 and "sm_103a" in err and "9.7.16.3.1.2.1" in err


def test_encode_zcol_mask_spec_example4(capsys):
    rc, out, _ = run(capsys, "encode", "zcol-mask", "--start-count", "0,1,2,1", "--first-span", "1,1,0,0",
                     "--skip", "3", "--use", "4", "--shift", "2", "--m", "32", "--n", "128")
    v = int(out, 16)
    # sc = 0,1,2,1 -> 0x01020100; fs = 1,1,0,0 -> 0b0011 << 32; nzm; skip-1 = 2; use-1 = 3; shift 2
    assert rc == 0 and v == 0x01020100 | 0b0011 << 32 | 1 << 39 | 2 << 40 | 3 << 48 | 2 << 56


def test_layout_smem_text(capsys):
    rc, out, _ = run(capsys, "layout", "smem", "--major", "K", "--swizzle", "128B", "--dtype", "bf16",
                     "--rows", "8", "--cols", "64")
    lines = out.splitlines()
    assert rc == 0 and "descriptor 0x" in lines[0]
    # row 1 of a 128B-swizzled K-major bf16 tile: chunks 0 and 1 swapped (bit 7 -> bit 4)
    assert lines[2].split(": ", 1)[1].split(" | ")[0].strip() == "m1 k8-15"
    assert lines[2].split(": ", 1)[1].split(" | ")[1].strip() == "m1 k0-7"


def test_layout_smem_picture(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out_file = tmp_path / "sw.svg"
    rc, out, _ = run(capsys, "layout", "smem", "--major", "MN", "--swizzle", "64B", "--dtype", "e4m3",
                     "--rows", "64", "--cols", "8", "-o", str(out_file))
    assert rc == 0 and out_file.stat().st_size > 1000 and "<svg" in out_file.read_text()[:400]
