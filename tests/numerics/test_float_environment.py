"""The engine refuses to compute in a thread that flushes subnormals (x86 MXCSR FTZ / DAZ): both
backends would otherwise lose subnormal results without a word.  Expected behaviour derived by
hand: f16 A = 2^-24 (0x0001), B = 1.0, K = 16, C = 0 sums to 16 * 2^-24 = 2^-20 exactly
(0x35800000), which needs no subnormal; the point is the refusal, not the value."""
import numpy as np
import pytest

from ptxsim.errors import FloatEnvironmentError
from ptxsim.numerics import backend, mma, mma_batch, mma_sparse

KW = dict(arch="sm_100", kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
A = np.full((4, 16), 0x0001, np.uint16)
B = np.full((16, 4), 0x3C00, np.uint16)
C = np.zeros((4, 4), np.uint32)

needs_hook = pytest.mark.skipif(backend.compiled is None or
                                not hasattr(backend.compiled, "_set_flush"),
                                reason="needs the compiled module's x86 MXCSR test hook")


def test_normal_environment_computes():
    assert (mma(A, B, C, **KW) == 0x35800000).all()


@needs_hook
@pytest.mark.parametrize("name", ["c", "numpy"])
def test_flush_to_zero_thread_is_refused(name):
    calls = [lambda: mma(A, B, C, **KW),
             lambda: mma_batch(A[None], B[None], C[None], **KW),
             lambda: mma_sparse(A, np.broadcast_to(B, (4, 16, 4)), C, **KW)]
    with backend.use(name):
        old = backend.compiled._set_flush(True)
        try:
            assert not backend.compiled.subnormals_ok()
            for call in calls:
                with pytest.raises(FloatEnvironmentError, match="flushes subnormals"):
                    call()
        finally:
            backend.compiled._set_flush(bool(old & 0x8040))
    assert backend.compiled.subnormals_ok()
    assert (mma(A, B, C, **KW) == 0x35800000).all()
