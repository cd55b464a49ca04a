"""Unmodified CuTe DSL programs through `ptxsim cute`: CUTLASS's Blackwell examples at small sizes,
each passing its own reference check (the script's torch.testing.assert_close / "PASS"), with the
sanitizer (on by default) reporting nothing.

The scripts come from the upstream cache (`python scripts/fetch_upstream.py cutlass`); without
it the tests skip. Slow (tens of seconds each): `pytest -m slow tests/cuda/test_cute_examples.py`.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from fetch_upstream import cache_dir  # noqa: E402

pytestmark = pytest.mark.slow
KERNELS = "examples/python/CuTeDSL/cute/blackwell/kernel"


def run_example(script: str, *args: str, timeout: int = 1800) -> str:
    base = cache_dir("cutlass")
    if base is None:
        pytest.skip("CUTLASS's CuTe DSL examples are not cached "
                    "(python scripts/fetch_upstream.py cutlass)")
    path = base / KERNELS / script
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "ptxsim", "cute", str(path), *args],
                       cwd=path.parent, capture_output=True, text=True, timeout=timeout, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    # the sanitizer (on by default) checked every launch and found nothing
    assert "ptxsim sanitizer:" not in out, out[-4000:]
    return out


F16 = ("--ab_dtype", "Float16", "--c_dtype", "Float16")


def test_dense_gemm_1cta():
    out = run_example("dense_gemm/dense_gemm.py", "--mnkl", "256,256,128,1", *F16)
    assert "PASS" in out


def test_dense_gemm_2cta_tma_store():
    out = run_example("dense_gemm/dense_gemm.py", "--mnkl", "256,256,128,1", *F16,
                      "--mma_tiler_mn", "256,128", "--cluster_shape_mn", "2,1",
                      "--use_2cta_instrs", "--use_tma_store")
    assert "PASS" in out


def test_dense_gemm_persistent_2cta():
    out = run_example("dense_gemm/dense_gemm_persistent.py", "--mnkl", "256,256,128,1", *F16,
                      "--mma_tiler_mn", "256,128", "--cluster_shape_mn", "2,1",
                      "--use_2cta_instrs")
    assert "PASS" in out


@pytest.mark.parametrize("args", [
    (),                                                               # nvfp4 (the default)
    ("--sf_dtype", "Float8E8M0FNU", "--sf_vec_size", "32"),           # mxfp4
    ("--a_dtype", "Float8E4M3FN", "--b_dtype", "Float8E4M3FN", "--sf_dtype", "Float8E8M0FNU",
     "--sf_vec_size", "32"),                                          # mxfp8
    # .kind::mxf8f6f4 mixed precision: the narrow operand through the padded packed tensor-map
    # types (16U4_ALIGN16B / 16U6_ALIGN16B, machine/tensormap.py), 1 CTA and a 2 x 2 cluster of
    # CTA pairs (multicast)
    ("--a_dtype", "Float8E4M3FN", "--b_dtype", "Float4E2M1FN", "--sf_dtype", "Float8E8M0FNU",
     "--sf_vec_size", "32"),
    ("--a_dtype", "Float6E3M2FN", "--b_dtype", "Float6E2M3FN", "--sf_dtype", "Float8E8M0FNU",
     "--sf_vec_size", "32"),
    ("--a_dtype", "Float8E4M3FN", "--b_dtype", "Float6E2M3FN", "--sf_dtype", "Float8E8M0FNU",
     "--sf_vec_size", "32", "--mma_tiler_mn", "256,128", "--cluster_shape_mn", "2,2"),
], ids=["nvfp4", "mxfp4", "mxfp8", "mxf8f6f4-e4m3-e2m1", "mxf8f6f4-e3m2-e2m3",
        "mxf8f6f4-e4m3-e2m3-2cta"])
def test_dense_blockscaled_gemm_persistent(args):
    # nvfp4 / mxfp8 / mxf8f6f4 check against torch._scaled_mm on the host-side logical values
    # (GPU-only in torch; ptxsim.cuda.torch_cuda computes it on the CPU), mxfp4 against the
    # example's einsum reference
    out = run_example("blockscaled_gemm/dense_blockscaled_gemm_persistent.py",
                      "--mnkl", "256,256,256,1", *args)
    assert "PASS" in out


@pytest.mark.parametrize("mode", ["SMEM", "GMEM"])
def test_grouped_gemm(mode):
    # the group scheduler divides by a tile count of 0 for a tile past every group (div.s32 by
    # zero, PTX: unspecified) and never uses the quotient: a poison value (machine/poison.py)
    out = run_example("grouped_gemm/grouped_gemm.py", "--num_groups", "2",
                      "--problem_sizes_mnkl", "(128,128,64,1),(256,128,64,1)",
                      "--tensormap_update_mode", mode)
    assert "PASS" in out


def test_fmha_forward():
    out = run_example("attention/fmha/fmha.py", "--q_shape", "1,128,1,64",
                      "--k_shape", "1,128,1,64")
    assert "Results verified successfully" in out
