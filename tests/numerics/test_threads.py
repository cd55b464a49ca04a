"""The compiled MMA arithmetic on a thread pool (numerics.backend.run_parallel): a large
mma_batch is split into whole MMAs or row blocks that run on the pool's threads (the compiled
loop releases the GIL); every entry's bits must equal `mma` on that entry alone (the documented
contract of mma_batch), for both kinds of split, and a forked child must get a working pool."""
import multiprocessing

import ml_dtypes
import numpy as np
import pytest

from ptxsim.numerics import backend, engine, mma, mma_batch

pytestmark = pytest.mark.skipif(backend.c_module() is None, reason="compiled loop not built")

KW = dict(arch="sm_100", kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")


def _operands(T, M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    bits = lambda *s: rng.standard_normal(s).astype(ml_dtypes.bfloat16).view(np.uint16)  # noqa
    c = rng.standard_normal((T, M, N)).astype(np.float32).view(np.uint32)
    return bits(T, M, K), bits(T, K, N), c


@pytest.fixture
def two_threads():
    old = backend.set_threads(2)
    yield
    backend.set_threads(old)


@pytest.mark.parametrize("T,M,N,K", [(16, 128, 128, 16),      # whole MMAs per thread
                                     (1, 1024, 128, 32)])     # row blocks of one MMA
def test_split_batches_give_the_bits_of_each_mma_alone(two_threads, T, M, N, K):
    a, b, c = _operands(T, M, N, K, seed=T)
    parts = engine._split(T, M, N, K)
    assert len(parts) == 2                      # it is split (else nothing is tested)
    got = mma_batch(a, b, c, **KW)
    for t in range(T):
        assert np.array_equal(got[t], mma(a[t], b[t], c[t], **KW))


def test_small_batches_and_one_thread_are_not_split(two_threads):
    assert len(engine._split(2, 128, 128, 16)) == 1            # below PARALLEL_MACS
    backend.set_threads(1)
    assert len(engine._split(64, 128, 128, 16)) == 1


def test_set_threads_refuses_nonsense():
    from ptxsim.errors import PtxsimError
    with pytest.raises(PtxsimError):
        backend.set_threads(0)


def _child(q):
    a, b, c = _operands(16, 128, 128, 16, seed=3)
    q.put(mma_batch(a, b, c, **KW).sum(dtype=np.uint64))


def test_forked_child_gets_a_fresh_pool(two_threads):
    a, b, c = _operands(16, 128, 128, 16, seed=3)
    want = mma_batch(a, b, c, **KW).sum(dtype=np.uint64)     # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    got = q.get(timeout=120)                                  # a stale pool would hang here
    p.join(timeout=60)
    assert got == want
