"""`ptxsim demo` and `ptxsim run` (CLI), and the bundled demo kernels."""
from pathlib import Path

import numpy as np

from ptxsim.cli import main
from ptxsim.machine import demos

BASIC = Path(__file__).parent / "machine" / "data" / "exec" / "basic.ptx"


def test_every_demo_kernel_is_bit_exact():
    # each demo compares against ptxsim.numerics stepped over K on the logical matrices and
    # against a float64 numpy matmul of the decoded (scaled) operands
    for r in demos.run_demos():
        assert r.bit_exact, r.name
        assert r.max_rel_err < 1e-5, r.name


def test_demo_command(capsys):
    assert main(["demo", "sparse"]) == 0
    out = capsys.readouterr().out
    assert "sparse_f16_gemm" in out and "all checks passed" in out


def test_demo_ptx_is_the_compiled_source():
    # the shipped .ptx is nvcc's output for the shipped .cu (kernel names and tcgen05 forms)
    ptx = demos.kernel_ptx()
    for name in ("dense_bf16_gemm", "sparse_f16_gemm", "mxf8_gemm"):
        assert f".entry {name}(" in ptx
    assert "tcgen05.mma.sp.cta_group::1.kind::f16" in ptx
    assert "kind::mxf8f6f4.block_scale.block32" in ptx
    assert (demos.KERNELS / "tcgen05_demo.cu").exists()


def test_run_command_with_generated_and_npy_arguments(tmp_path, capsys):
    a = np.arange(100, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    rc = main(["run", str(BASIC), "--kernel", "vadd", "--grid", "2", "--block", "64",
               "--arg", str(tmp_path / "a.npy"), "--arg", "rand:float32:100",
               "--arg", "zeros:float32:100", "--arg", "i32:100", "--out", str(tmp_path / "o"),
               "--seed", "3"])
    assert rc == 0
    b = np.load(tmp_path / "o" / "arg1.npy")
    c = np.load(tmp_path / "o" / "arg2.npy")
    assert np.array_equal(c, a + b)
    assert "vadd" in capsys.readouterr().out


def test_run_command_reports_bad_argument(capsys):
    rc = main(["run", str(BASIC), "--kernel", "vadd", "--arg", "q99:1"])
    assert rc == 1
    assert "InputError" in capsys.readouterr().err
