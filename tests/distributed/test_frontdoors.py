"""The front doors' launches split over workers: a CuTe DSL kernel compiled with `cute.compile`
and launched through ptxsim.cuda (`cuda.configure(..., workers=2)`), equal to one process and to
torch."""
import pytest

cutlass = pytest.importorskip("cutlass")
torch = pytest.importorskip("torch")
pytest.importorskip("cuda.bindings.driver")

import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

from ptxsim import cuda  # noqa: E402
from ptxsim.cuda import dsl  # noqa: E402
from ptxsim.errors import CudaError, MergeConflict  # noqa: E402


@cute.kernel
def axpb_kernel(gX: cute.Tensor, gY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    m, n = gX.shape
    gY[i // n, i % n] = a * gX[i // n, i % n] + b


@cute.jit
def axpb(mX: cute.Tensor, mY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32,
         rows: cutlass.Constexpr):
    m, n = mX.shape
    axpb_kernel(mX, mY, a, b).launch(grid=((rows * n) // 64, 1, 1), block=(64, 1, 1))


@cute.kernel
def last_wins_kernel(gY: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    gY[0] = cutlass.Float32(bidx)            # every CTA writes element 0: a race


@cute.jit
def last_wins(mY: cute.Tensor):
    last_wins_kernel(mY).launch(grid=(8, 1, 1), block=(32, 1, 1))


def _run(workers, x):
    cuda.configure(["b200"], workers=workers, max_resident_ctas=4)
    dsl.install()
    try:
        y = torch.zeros(8, 128)
        X, Y = from_dlpack(x), from_dlpack(y)
        cute.compile(axpb, X, Y, cutlass.Float32(3.0), cutlass.Float32(0.25), 8)(
            X, Y, cutlass.Float32(3.0), cutlass.Float32(0.25))
        return y, cuda.state().last_launch
    finally:
        dsl.uninstall()
        cuda.configure(["b200"])


def test_a_cute_dsl_kernel_over_two_workers_equals_one_process_and_torch():
    x = torch.randn(8, 128)
    one, _ = _run(None, x)
    two, launch = _run(2, x)                     # 16 CTAs, 4 waves of 4
    assert launch.distribution.workers == 2 and launch.distribution.backend == "local"
    assert not launch.distribution.kept_workers  # the CUDA model's memory: forked per launch
    assert torch.equal(two, one)
    # 3 * x + 0.25, fused or not: one rounding of the exact value (float64 holds it)
    assert torch.equal(two, (3.0 * x.double() + 0.25).float())


def test_a_race_through_the_cuda_front_door_is_a_merge_conflict():
    cuda.configure(["b200"], workers=2, max_resident_ctas=4)
    dsl.install()
    try:
        y = torch.zeros(4)
        Y = from_dlpack(y)
        with pytest.raises(Exception) as e:
            cute.compile(last_wins, Y)(Y)
        cause = e.value if isinstance(e.value, CudaError) else e.value.__cause__
        assert isinstance(cause, CudaError) and isinstance(cause.finding, MergeConflict)
    finally:
        dsl.uninstall()
        cuda.configure(["b200"])


@pytest.mark.slow
def test_upstream_cute_dense_gemm_over_two_workers_passes_its_own_check():
    """CUTLASS's CuTe DSL dense_gemm.py, unmodified, through `ptxsim cute --workers 2` (8 CTAs in
    4 waves of 2): the example's own torch reference check prints PASS. Needs the upstream cache
    (python scripts/fetch_upstream.py cutlass)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
    from fetch_upstream import cache_dir
    base = cache_dir("cutlass")
    if base is None:
        pytest.skip("CUTLASS's CuTe DSL examples are not cached "
                    "(python scripts/fetch_upstream.py cutlass)")
    path = base / "examples/python/CuTeDSL/cute/blackwell/kernel/dense_gemm/dense_gemm.py"
    r = subprocess.run([sys.executable, "-m", "ptxsim", "cute", "--workers", "2",
                        "--max-resident-ctas", "2", str(path), "--mnkl", "256,512,128,1",
                        "--ab_dtype", "Float16", "--c_dtype", "Float16"], cwd=path.parent,
                       capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert r.returncode == 0 and "PASS" in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
