"""A kernel whose tcgen05.mma.sp meets CUTLASS's metadata for a chunk of zeros (0b0000: both
indices 0, a value 9.7.16.10.8.2 does not list; isa/sparsity.check_metadata) runs with a
SpecDeviationWarning that names the PTX line of the instruction, like every other finding of a
launch. The kernel is the bundled demo's nvcc-compiled sparse_f16_gemm (one CTA, 128 x 64 x 64,
two tcgen05.mma.sp of K = 32)."""
import re
import warnings

import numpy as np

from ptxsim.api import launch
from ptxsim.errors import SpecDeviationWarning
from ptxsim.isa import sparsity
from ptxsim.machine import demos

K = 64


def _metadata_words(nib):
    """Tensor Memory metadata words per lane, one column per 32-K instruction (as the demo)."""
    lane, _, bit = sparsity.metadata_cells("f16", 32)
    E = np.zeros((128, K // 32), np.uint32)
    for s in range(K // 32):
        n = nib[:, 8 * s:8 * s + 8].astype(np.uint64)
        stream = ((n[:, :, None] >> np.arange(4, dtype=np.uint64)) & np.uint64(1)).reshape(128, 32)
        np.bitwise_or.at(E[:, s], lane[0].ravel(),
                         (stream.ravel() << bit[0].ravel().astype(np.uint64)).astype(np.uint32))
    return E.ravel()


def _run(ptx, Ac, nib, B):
    D = np.zeros((128, 64), np.float32)
    launch(ptx, "sparse_f16_gemm", 1, 128,
           args=[Ac.astype(np.uint16), B.view(np.uint16), _metadata_words(nib), D],
           dynamic_shared=128 * K + 64 * K * 2 + 16)
    return D


def test_the_zero_chunk_warning_names_the_line_of_the_mma():
    rng = np.random.default_rng(11)
    A = rng.standard_normal((128, K)).astype(np.float16)
    keep = np.zeros((128, K), bool)
    pick = np.argsort(rng.random((128, K // 4, 4)), axis=2)[:, :, :2]
    np.put_along_axis(keep.reshape(128, K // 4, 4), pick, True, axis=2)
    A[~keep] = 0
    A[5, 12:16] = 0                                   # row 5, chunk 3 (first instruction)
    Ac, nib = sparsity.compress(A.view(np.uint16), "f16")
    assert not Ac[5, 6:8].any()                       # its stored pair: two zeros
    B = rng.standard_normal((64, K)).astype(np.float16)
    ptx = demos.kernel_ptx()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecDeviationWarning)
        legal = _run(ptx, Ac, nib, B)                 # the compressor's own (listed) value
    cutlass = nib.copy()
    cutlass[5, 3] = 0b0000                            # CUTLASS's value for a chunk of zeros
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(ptx, Ac, cutlass, B)
    msgs = [str(w.message) for w in caught if issubclass(w.category, SpecDeviationWarning)]
    assert len(msgs) == 1, msgs
    lines = [i + 1 for i, t in enumerate(ptx.splitlines()) if "tcgen05.mma.sp" in t]
    m = re.match(r"line (\d+): tcgen05\.mma\.sp\.cta_group::1\.kind::f16 ", msgs[0])
    assert m and int(m.group(1)) == lines[0], (msgs[0], lines)
    assert "metadata value 0b0000 is undefined (9.7.16.10.8)" in msgs[0]
    # both stored values are zero: the chunk adds nothing, whatever index it names
    assert np.array_equal(got.view(np.uint32), legal.view(np.uint32))
