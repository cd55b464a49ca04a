"""ThunderKittens' bf16_b200 GEMM and DeepGEMM's sm100 bf16 GEMM, their kernels unchanged, under
`ptxsim exec` (slow). ptxsim's own harnesses (tests/cuda/data/harness_*.cu) launch each at
256x256x256 and compare D with a float64 host product (bf16 tolerance); the libraries are
fetched at pinned commits by scripts/build_gemm_harnesses.py, or taken from checkouts named by
PTXSIM_TK_SRC / PTXSIM_DEEPGEMM_SRC (skipped, saying why, without nvcc, the toolchain headers or
the network)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxsim import cuda

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_gemm_harnesses",
                                               ROOT / "scripts" / "build_gemm_harnesses.py")
bgh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bgh)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(cuda.native_path("cudart") is None,
                                 reason="ptxsim's CUDA stand-ins were not built")]


@pytest.mark.parametrize("name", sorted(bgh.HARNESSES))
def test_outside_gemm_kernel_matches_the_host_reference(name):
    try:
        nvcc = bgh.bce.find_nvcc()
        bgh.bce.include_flags(nvcc)
        lib, repo, commit, _, _ = bgh.HARNESSES[name]
        given = os.environ.get("PTXSIM_TK_SRC" if lib == "thunderkittens" else
                               "PTXSIM_DEEPGEMM_SRC")
        tree = Path(given) if given else bgh.fetch_library(lib, repo, commit)
        cutlass = bgh.bce.fetch_source() if lib == "deepgemm" else None
    except bgh.BuildError as e:
        pytest.skip(str(e))
    exe = bgh.build(name, tree, bgh.default_out(), nvcc, cutlass)
    r = subprocess.run([sys.executable, "-m", "ptxsim", "exec", str(exe)], capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "0 of 65536 outside bf16 tolerance: PASSED" in r.stdout, r.stdout[-2000:]
    assert "sanitizer: 0 error(s)" in r.stderr, r.stderr[-3000:]
