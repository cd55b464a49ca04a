"""The sanitizer behind ptxsim.cuda: `cuda.configure(..., sanitize=...)` is the mode of every
launch, and the driver's last launch carries its findings. The kernel is CuTe DSL, compiled with
`cute.compile` and launched through the driver model (docs/cuda.md)."""
import pytest

cutlass = pytest.importorskip("cutlass")
torch = pytest.importorskip("torch")
pytest.importorskip("cuda.bindings.driver")

import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

from ptxsim import cuda  # noqa: E402
from ptxsim.cuda import dsl  # noqa: E402


@cute.kernel
def last_wins_kernel(gY: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    gY[0] = cutlass.Float32(bidx)            # every CTA writes element 0: a race


@cute.jit
def last_wins(mY: cute.Tensor):
    last_wins_kernel(mY).launch(grid=(4, 1, 1), block=(32, 1, 1))


def _findings(mode):
    cuda.configure(["b200"], sanitize=mode)
    dsl.install()
    try:
        Y = from_dlpack(torch.zeros(4))
        cute.compile(last_wins, Y)(Y)
        launch = cuda.state().last_launch
        return launch.sanitizer is None, [f.kind for f in launch.findings]
    finally:
        dsl.uninstall()
        cuda.configure(["b200"])


def test_the_driver_passes_the_sanitize_mode_to_its_launches():
    # CTAs writing one global word with no synchronisation: full mode's global race check
    off, kinds = _findings("full")
    assert not off and "race-global" in kinds
    assert _findings("default") == (False, [])        # global races are full mode's
    assert _findings("none") == (True, [])
